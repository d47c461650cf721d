//! `offcert import graph` (networkx `node_link_data`, MOCCASIN's two schemas),
//! `offcert generate graph`, and the other tools' answers (`import
//! checkmate-solution`, `import moccasin-solution`), MODEL.md §4.7. MOCCASIN's
//! own files are GPL-3.0 and not bundled: every file here is generated.

use crate::common::*;
use offcert::family::graph::Graph;
use offcert::family::graph_generate::{random_layered, RandomLayered};
use offcert::family::graph_import::{parse_node_link, Schema};
use offcert::family::graph_solution::{checkmate_solution, moccasin_solution};
use offcert::family::InstanceFile;
use quickcheck::TestResult;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

fn scratch() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("offcert-graph-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn offcert(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_offcert"))
        .args(args)
        .output()
        .expect("runs offcert")
}

fn p(x: &Path) -> &str {
    x.to_str().unwrap()
}

/// `g` in the Checkmate-derived schema (`links`, or networkx ≥ 3.4's `edges`).
fn checkmate_json(g: &Graph, edges_key: &str) -> Value {
    let nodes: Vec<Value> = g
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| json!({"name": n.name, "backward": n.backward, "cost_cpu": n.duration, "cost_ram": n.memory, "id": i}))
        .collect();
    let links: Vec<Value> = g
        .nodes
        .iter()
        .enumerate()
        .flat_map(|(i, n)| {
            n.inputs
                .iter()
                .map(move |&u| json!({"source": u, "target": i}))
        })
        .collect();
    json!({"directed": true, "multigraph": false, "graph": {"name": g.name}, "nodes": nodes, edges_key: links})
}

/// `g` in the random-layered schema, node keys `key(i)`, with `graph.order`.
fn layered_json(g: &Graph, order: &[usize], key: impl Fn(usize) -> usize) -> Value {
    let nodes: Vec<Value> = g
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| json!({"out_cost": n.memory, "param_cost": 0, "duration": n.duration, "name": key(i)}))
        .collect();
    let links: Vec<Value> = g
        .nodes
        .iter()
        .enumerate()
        .flat_map(|(i, n)| {
            n.inputs
                .iter()
                .map(|&u| json!({"0": key(u), "1": key(i)}))
                .collect::<Vec<_>>()
        })
        .collect();
    let order: Vec<usize> = order.iter().map(|&i| key(i)).collect();
    json!({"directed": true, "multigraph": false, "graph": {"name": "layered", "order": order}, "nodes": nodes, "links": links})
}

/// Both schemas read back as the graph they were written from (node i = the
/// file's nodes[i], inputs as the links say, `graph.order` as the baseline).
#[test]
fn quickcheck_both_schemas_read_back() {
    fn prop(spec: Vec<(u8, u8, u8)>, edges: bool) -> TestResult {
        let g = random_graph(&spec, 12, 0);
        if g.nodes.is_empty() {
            return TestResult::discard();
        }
        let key = if edges { "edges" } else { "links" };
        let c = parse_node_link(&checkmate_json(&g, key).to_string(), None).unwrap();
        assert_eq!(c.schema, Schema::Checkmate);
        assert_eq!(c.graph.nodes, g.nodes);
        assert_eq!(c.graph.baseline, None);
        // Keys that are not positions: 100 + 7i.
        let order = g.topological_order().unwrap();
        let text = layered_json(&g, &order, |i| 100 + 7 * i);
        let l = parse_node_link(&text.to_string(), None).unwrap();
        assert_eq!(l.schema, Schema::RandomLayered);
        let mut want = g.clone();
        for (i, n) in want.nodes.iter_mut().enumerate() {
            n.name = (100 + 7 * i).to_string();
        }
        TestResult::from_bool(l.graph.nodes == want.nodes && l.graph.baseline == Some(order))
    }
    qc(60, 40).quickcheck(prop as fn(Vec<(u8, u8, u8)>, bool) -> TestResult);
}

/// networkx details: parallel links of a multigraph are one dependency, a
/// cost of 0 runs 1 tick, a repeated name gets `#key`, null `backward`.
#[test]
fn multigraph_zero_costs_and_repeated_names() {
    let text = json!({"directed": true, "multigraph": true, "graph": {},
        "nodes": [{"id": 0, "name": "x", "backward": null, "cost_cpu": 0, "cost_ram": 3},
                  {"id": 1, "name": "x", "backward": true, "cost_cpu": 2.0, "cost_ram": 1}],
        "links": [{"source": 0, "target": 1, "key": 0}, {"source": 0, "target": 1, "key": 1}]});
    let n = parse_node_link(&text.to_string(), None).unwrap();
    assert_eq!((n.edges, n.duplicate_edges, n.zero_costs), (1, 1, 1));
    let g = n.graph;
    assert_eq!((g.nodes[0].duration, g.nodes[1].duration), (1, 2));
    assert_eq!(
        (g.nodes[0].name.as_str(), g.nodes[1].name.as_str()),
        ("x", "x#1")
    );
    assert_eq!(g.nodes[1].inputs, vec![0]);
    assert!(g.nodes[1].backward && !g.nodes[0].backward);
    assert_eq!(g.name, "graph");
}

/// `import graph` at m = 0.8: B = ⌈0.8 × the checked baseline peak⌉, exactly
/// (the peak is the tools' count, `sequence_peak`), and `gap` runs on it.
#[test]
fn import_sets_moccasins_budget_exactly() {
    let d = scratch();
    let src = d.join("g.json");
    let gen = RandomLayered {
        n: 30,
        width: 0.3,
        level_variance: 0.75,
        edge_density: 0.2,
        skip_density: 0.14,
        seed: 7,
    };
    std::fs::write(&src, random_layered(&gen).unwrap().to_string()).unwrap();
    let out = d.join("i.json");
    let o = offcert(&[
        "import",
        "graph",
        p(&src),
        "-o",
        p(&out),
        "--memory-multiplier",
        "0.8",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let g = match offcert::io::load_instance(&out).unwrap().0 {
        InstanceFile::Graph(g) => g,
        f => panic!("{}", f.family()),
    };
    let peak = g.sequence_peak(&g.baseline().unwrap()) as u128;
    assert_eq!(g.gpu_memory as u128, (peak * 8).div_ceil(10));
    assert_eq!(g.nodes.len(), 30);
    // Source and sink have cost 0 in the schema: 1 tick each.
    assert!(String::from_utf8_lossy(&o.stdout).contains("2 nodes of cost 0 run 1 tick each"));
    let o = offcert(&["gap", p(&out), "--exact-max-ops", "0"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.code().is_some_and(|c| c <= 2) && !err.contains("panicked"),
        "{err}"
    );
}

/// Hostile graphs exit 2 naming the file and the field; never a panic.
#[test]
fn hostile_graph_files_exit_2_naming_the_field() {
    let d = scratch();
    let node = |id: i64, cpu: Value, ram: Value| json!({"id": id, "name": format!("n{id}"), "cost_cpu": cpu, "cost_ram": ram});
    let ok_nodes = vec![node(0, json!(1), json!(2)), node(1, json!(1), json!(2))];
    let file = |nodes: Vec<Value>, links: Value| {
        json!({"directed": true, "multigraph": false, "graph": {}, "nodes": nodes, "links": links})
            .to_string()
    };
    let cases = vec![
        (file(ok_nodes.clone(), json!([{"source": 0, "target": 1}, {"source": 1, "target": 0}])), "links: the graph has a cycle"),
        (file(ok_nodes.clone(), json!([{"source": 0, "target": 5}])), "links[0].target: no node has the key 5"),
        (file(ok_nodes.clone(), json!([{"source": 0}])), "links[0].target: missing"),
        (file(ok_nodes.clone(), json!([{"source": 1, "target": 1}])), "links[0]: a self-loop"),
        (file(vec![node(0, json!(-3), json!(2))], json!([])), "nodes[0].cost_cpu: negative cost -3"),
        (file(vec![node(0, json!(1), json!(1e300))], json!([])), "nodes[0].cost_ram"),
        (file(vec![node(0, json!(1), json!(2.5))], json!([])), "nodes[0].cost_ram: not a whole number"),
        (file(vec![node(0, json!(1), json!("big"))], json!([])), "nodes[0].cost_ram: expected a number"),
        (file(vec![json!({"id": 0, "name": "a", "cost_ram": 1})], json!([])), "nodes[0].cost_cpu: missing"),
        (file(vec![node(0, json!(1), json!(2)), node(0, json!(1), json!(2))], json!([])), "nodes[1].id: duplicate node key 0"),
        (file(vec![json!({"id": 0, "size": 1})], json!([])), "nodes[0]: neither"),
        (file(vec![], json!([])), "nodes: no nodes"),
        (json!({"directed": false, "nodes": ok_nodes.clone(), "links": []}).to_string(), "directed: an undirected graph"),
        (json!({"nodes": ok_nodes.clone()}).to_string(), "links: missing"),
        (json!({"nodes": ok_nodes.clone(), "links": [], "graph": {"order": [1, 7]}}).to_string(), "graph.order[1]: no node has the key 7"),
        (json!({"nodes": ok_nodes.clone(), "links": [{"source": 0, "target": 1}], "graph": {"order": [1, 0]}}).to_string(), "graph.order[0]: node 1 comes before its input 0"),
        ("[1, 2".to_string(), "(json)"),
    ];
    for (text, want) in cases {
        let src = d.join("bad.json");
        std::fs::write(&src, &text).unwrap();
        let o = offcert(&["import", "graph", p(&src), "-o", p(&d.join("o.json"))]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{text}: {err}");
        assert!(
            err.contains("bad.json") && err.contains(want),
            "{text}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// The generator is deterministic from its seed, writes a DAG with one source
/// and one sink whose `graph.order` is topological, and the importer reads it.
#[test]
fn generated_layered_graphs_are_deterministic_dags() {
    for seed in 0..20 {
        let gen = RandomLayered {
            n: 3 + seed as usize * 5,
            width: 0.3,
            level_variance: 0.75,
            edge_density: 0.2,
            skip_density: 0.14,
            seed,
        };
        let a = random_layered(&gen).unwrap();
        assert_eq!(a, random_layered(&gen).unwrap());
        let g = parse_node_link(&a.to_string(), None).unwrap().graph;
        assert_eq!(g.n(), gen.n);
        assert!(g.baseline.is_some());
        let readers = g.consumers();
        let sources: Vec<usize> = (0..g.n())
            .filter(|&i| g.nodes[i].inputs.is_empty())
            .collect();
        let sinks: Vec<usize> = (0..g.n()).filter(|&i| readers[i].is_empty()).collect();
        assert_eq!((sources, sinks), (vec![0], vec![1]), "seed {seed}");
    }
}

fn graph4() -> Graph {
    match offcert::io::load_instance(&repo().join("instances/fixtures/graph4.json"))
        .unwrap()
        .0
    {
        InstanceFile::Graph(g) => g,
        f => panic!("{}", f.family()),
    }
}

/// graph4 at 7 B: Checkmate's (R, S) that recomputes `a` in the last stage
/// decodes to the fixture's valid schedule; MOCCASIN's order with `a` twice too
/// (as indices, names or intervals); both orders without the recomputation
/// are refuted for memory. Through the CLI: exit 0 and 1, the file written.
#[test]
fn the_tools_answers_on_graph4() {
    let g = graph4();
    let rs = json!({"R": [[1,0,0,0],[0,1,0,0],[0,0,1,0],[1,0,0,1]],
                    "S": [[0,0,0,0],[1,0,0,0],[0,1,0,0],[0,0,1,0]], "U": "ignored"});
    let d = checkmate_solution(&g, &rs.to_string()).unwrap();
    assert_eq!(d.seq, vec![0, 1, 2, 0, 3]);
    assert_eq!(d.releases, g.releases(&d.seq));
    assert_eq!(d.stages, vec![0, 1, 2, 3, 3]);
    assert_eq!(d.tool_peak, 7);
    for text in [
        "[0, 1, 2, 0, 3]",
        r#"{"schedule": ["a", "b", "c", "a", "d"]}"#,
        r#"{"intervals": [{"node": 3, "start": 9, "end": 10}, {"node": 0, "start": 0, "end": 2},
            {"node": 2, "start": 3, "end": 9}, {"node": 1, "start": 1, "end": 3}, {"node": "a", "start": 6, "end": 10}]}"#,
    ] {
        let m = moccasin_solution(&g, text).unwrap();
        assert_eq!((m.seq, m.tool_peak), (d.seq.clone(), 7), "{text}");
    }
    let dir = scratch();
    let inst = repo().join("instances/fixtures/graph4.json");
    let run = |kind: &str, text: &str| {
        let sol = dir.join("sol.json");
        std::fs::write(&sol, text).unwrap();
        let out = dir.join("s.json");
        let o = offcert(&["import", kind, p(&sol), "--graph", p(&inst), "-o", p(&out)]);
        let again = offcert(&["check", p(&inst), p(&out)]);
        assert_eq!(again.status.code(), o.status.code());
        o
    };
    let o = run("checkmate-solution", &rs.to_string());
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(String::from_utf8_lossy(&o.stdout)
        .contains("Checkmate's own memory count (its MILP's U): 7 B"));
    let base = json!({"R": [[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],
                      "S": [[0,0,0,0],[1,0,0,0],[1,1,0,0],[1,0,1,0]]});
    assert_eq!(
        run("checkmate-solution", &base.to_string()).status.code(),
        Some(1)
    );
    assert_eq!(
        run("moccasin-solution", "[0, 1, 2, 0, 3]").status.code(),
        Some(0)
    );
    let o = run("moccasin-solution", "[0, 1, 2, 3]");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("its get_mem_from_schedule): 8 B"));
}

/// Where Checkmate's MILP count and offcert's differ (MODEL.md §4.7 item 4): a
/// terminal node `t` computed before `c` in one stage. Checkmate's code never
/// subtracts `t` within the stage (FREE is indexed by edges), so its U counts
/// a + t + c = 7 B; offcert releases `t` at its end (nothing reads it), so the
/// checker's peak is a + t = 6 B and the answer is valid at 6 B, where
/// Checkmate's own count says it does not fit.
#[test]
fn checkmate_counts_a_terminal_output_until_the_stage_ends() {
    let g: Graph = serde_json::from_value(json!({"name": "tc", "gpu_memory": 6, "nodes": [
        {"name": "a", "duration": 1, "memory": 1},
        {"name": "t", "duration": 1, "memory": 5, "inputs": [0]},
        {"name": "c", "duration": 1, "memory": 1, "inputs": [0]}]}))
    .unwrap();
    let rs = json!({"R": [[1,0,0],[0,1,1]], "S": [[0,0,0],[1,0,0]]}).to_string();
    let d = checkmate_solution(&g, &rs).unwrap();
    assert_eq!((d.seq.clone(), d.tool_peak), (vec![0, 1, 2], 7));
    assert_eq!(d.releases, vec![(1, 1), (2, 0), (2, 2)]);
    let inst = g.compile().unwrap();
    let s = offcert::simulate::chain_sequence::back_to_back(
        &inst,
        &offcert::simulate::graph_sequence::plan_with(&g, &d.seq, &d.releases),
    );
    let r = offcert::check::check(&inst, &s);
    assert!(r.valid, "{:?}", r.violations);
    assert_eq!(r.peak_memory.0, 6);
}

/// Hostile answers exit 2 naming the file and the field.
#[test]
fn hostile_answers_exit_2_naming_the_field() {
    let dir = scratch();
    let inst = repo().join("instances/fixtures/graph4.json");
    for (kind, text, want) in [
        (
            "checkmate-solution",
            r#"{"R": [[1,0,0]], "S": [[0,0,0,0]]}"#,
            "R[0]: has 3 entries",
        ),
        (
            "checkmate-solution",
            r#"{"R": [[1,0,0,2]], "S": [[0,0,0,0]]}"#,
            "R[0][3]: expected 0 or 1",
        ),
        ("checkmate-solution", r#"{"R": [[1,0,0,0]]}"#, "S: missing"),
        (
            "checkmate-solution",
            r#"{"R": [[1,0,0,0]], "S": [[0,0,0,0],[0,0,0,0]]}"#,
            "S: 2 stages",
        ),
        ("moccasin-solution", "[0, 1, 9]", "[2]: no node 9"),
        (
            "moccasin-solution",
            r#"{"schedule": ["a", "zz"]}"#,
            "schedule[1]: no node is named `zz`",
        ),
        (
            "moccasin-solution",
            r#"{"intervals": [{"node": 0, "start": 4, "end": 2}]}"#,
            "intervals[0].end",
        ),
        ("moccasin-solution", r#"{"plan": []}"#, "(top level)"),
    ] {
        let sol = dir.join("answer.json");
        std::fs::write(&sol, text).unwrap();
        let o = offcert(&[
            "import",
            kind,
            p(&sol),
            "--graph",
            p(&inst),
            "-o",
            p(&dir.join("s.json")),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{text}: {err}");
        assert!(
            err.contains("answer.json") && err.contains(want),
            "{text}: {err}"
        );
    }
}

fn load_graph(path: &Path) -> Graph {
    match offcert::io::load_instance(path).unwrap().0 {
        InstanceFile::Graph(g) => g,
        f => panic!("{}", f.family()),
    }
}

/// The bundled graphs of `instances/paper/graph/` are what their README's
/// commands make: the random layered ones regenerated from their seeds, every
/// budget ⌈m × the checked baseline peak⌉; and, where python3 exists,
/// `generate.py`'s ResNet-50 and VGG-16 graphs imported again are the files.
#[test]
fn bundled_graphs_are_what_their_commands_make() {
    let dir = repo().join("instances/paper/graph");
    let cases: [(&str, u128, Option<(usize, f64)>); 6] = [
        ("vgg16_b8_224px.m08.json", 8, None),
        ("vgg16_b8_224px.m09.json", 9, None),
        ("resnet50_b8_224px.m09.json", 9, None),
        ("layered_n20_s1.m09.json", 9, Some((20, 0.3))),
        ("layered_n100_s1.m08.json", 8, Some((100, 0.27))),
        ("layered_n100_s1.m09.json", 9, Some((100, 0.27))),
    ];
    for (file, tenths, layered) in cases {
        let g = load_graph(&dir.join(file));
        let peak = offcert::report::budget::graph_baseline_peak(&g).unwrap() as u128;
        assert_eq!(g.gpu_memory as u128, (peak * tenths).div_ceil(10), "{file}");
        if let Some((n, width)) = layered {
            let gen = RandomLayered {
                n,
                width,
                level_variance: 0.75,
                edge_density: 0.2,
                skip_density: 0.14,
                seed: 1,
            };
            let again = parse_node_link(&random_layered(&gen).unwrap().to_string(), None).unwrap();
            assert_eq!(
                (&again.graph.nodes, &again.graph.baseline),
                (&g.nodes, &g.baseline),
                "{file}"
            );
        }
    }
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        return;
    }
    let tmp = scratch();
    let o = Command::new("python3")
        .arg(dir.join("generate.py"))
        .current_dir(&tmp)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (nx, file) in [
        ("vgg16_b8_224px.nx.json", "vgg16_b8_224px.m08.json"),
        ("resnet50_b8_224px.nx.json", "resnet50_b8_224px.m09.json"),
    ] {
        let text = std::fs::read_to_string(tmp.join(nx)).unwrap();
        let again = parse_node_link(&text, None).unwrap().graph;
        assert_eq!(again.nodes, load_graph(&dir.join(file)).nodes, "{file}");
    }
}

/// MODEL.md §4.7: an (R, S) that Checkmate's constraints accept decodes to a
/// schedule the checker accepts with memory enough, whose checked peak is at
/// most Checkmate's own count (its MILP's U), so a budget Checkmate meets is
/// met under offcert's rules. R: stage t computes node t (node ids are
/// topological here) and recomputes earlier nodes at random where their inputs
/// are available (R[t,v] ≤ R[t,u] + S[t,u]); S keeps at random, and always
/// what a later stage reads (S[t+1,i] ≤ S[t,i] + R[t,i]).
#[test]
fn quickcheck_checkmate_feasible_answers_fit_under_its_own_count() {
    fn prop(spec: Vec<(u8, u8, u8)>, bits: Vec<(bool, bool)>) -> TestResult {
        let mut g = random_graph(&spec, 8, 0);
        let n = g.n();
        if n == 0 {
            return TestResult::discard();
        }
        let mut coin = bits
            .into_iter()
            .cycle()
            .chain(std::iter::repeat((false, false)));
        let mut r = vec![vec![false; n]; n];
        let mut s = vec![vec![false; n]; n];
        for t in 0..n {
            for v in 0..n {
                let avail = g.nodes[v].inputs.iter().all(|&u| r[t][u] || s[t][u]);
                let extra = coin.next().unwrap().0 && v < t;
                r[t][v] = (v == t || extra) && avail;
            }
            if t + 1 < n {
                for i in 0..n {
                    let have = s[t][i] || r[t][i];
                    let needed = g.consumers()[i].iter().any(|&c| c > t);
                    s[t + 1][i] = have && (needed || coin.next().unwrap().1);
                }
            }
        }
        let rs = json!({"R": r, "S": s}).to_string();
        let d = checkmate_solution(&g, &rs).unwrap();
        g.gpu_memory = g.nodes.iter().map(|x| x.memory).sum();
        let inst = g.compile().unwrap();
        let plan = offcert::simulate::graph_sequence::plan_with(&g, &d.seq, &d.releases);
        let sched = offcert::simulate::chain_sequence::back_to_back(&inst, &plan);
        let rep = offcert::check::check(&inst, &sched);
        if !rep.valid {
            return TestResult::error(format!("{rs}: {:?}", rep.violations));
        }
        TestResult::from_bool(rep.peak_memory.0 <= d.tool_peak)
    }
    qc(80, 50).quickcheck(prop as fn(Vec<(u8, u8, u8)>, Vec<(bool, bool)>) -> TestResult);
}
