//! The certified gap on computation graphs (issue 27 item 7): MOCCASIN's 12
//! benchmark rows (random layered n = 100, 250, 500, 1000; ResNet-50; FCN-8
//! VGG; each at m = 0.8 and 0.9, the budget ⌈m × the checked peak of the
//! baseline order⌉ as `offcert import graph --memory-multiplier m` sets it),
//! plus the bundled graphs of `instances/paper/graph` at their own budgets.
//!
//! Per row: nodes, budget, Σd; every graph heuristic's checked makespan; the
//! best checked schedule and its finder; the best certified bound and its
//! source; the certified gap (best − bound) / best, rounded up to 0.01 %; the
//! wall time of the row. On graphs of at most `OFFCERT_GRAPH_EXACT_NODES`
//! nodes (default 14) the exhaustive graph search runs too (its optimum is a
//! certified bound and a checked schedule). The best heuristic schedule is
//! then improved (`heuristic::graph::improve`, `OFFCERT_GRAPH_IMPROVE`
//! candidates, default 20 000) and offered as `<finder>+improve`.
//!
//! Run: `OFFCERT_MOCCASIN_DIR=DIR cargo bench --bench graph_gap`, DIR holding
//! MOCCASIN's `data/` files under their own names (github
//! haoming-codes/moccasin, GPL-3.0: fetch them yourself, never commit them):
//! `random_layered_n{100,250,500,1000}_*.json`,
//! `ResNet50 (MLSys)_256_(224, 224, 3)_train_nx.json`,
//! `fcn_8_vgg (MLSys)_32_(416, 608, 3)_train_nx.json`. Without the variable,
//! or with a file missing, those rows are skipped with a line that says so.
//! `OFFCERT_GRAPH_LP_SECS` (default 60) cuts the LP of `checkmate-lp`;
//! `OFFCERT_GRAPH_PARTS_SECS` (default 60) cuts the parts of `graph-parts`,
//! `OFFCERT_GRAPH_PARTS_MAX` and `OFFCERT_GRAPH_PARTS_POPS` set its largest
//! part and its states per part (defaults: `GraphParts::default()`);
//! `OFFCERT_GRAPH_FILTER` keeps the rows whose name contains one of its
//! comma-separated substrings.

use num_rational::BigRational;
use num_traits::{ToPrimitive, Zero};
use offcert::bound::graph::forced::GraphForced;
use offcert::bound::graph::parts::GraphParts;
use offcert::bound::graph::{CheckmateLp, GraphCompute};
use offcert::bound::{BoundMethod, LowerBound};
use offcert::exact::{self, Limits, Method, Status};
use offcert::family::graph_import::parse_node_link;
use offcert::family::InstanceFile;
use offcert::heuristic;
use offcert::report::budget::graph_baseline_checked;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const MOCCASIN: [&str; 6] = [
    "random_layered_n100_w0.27_nlv0.75_ed0.2_scd0.14.json",
    "random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14.json",
    "random_layered_n500_w0.36_nlv0.75_ed0.2_scd0.14.json",
    "random_layered_n1000_w0.31_nlv0.75_ed0.2_scd0.14.json",
    "ResNet50 (MLSys)_256_(224, 224, 3)_train_nx.json",
    "fcn_8_vgg (MLSys)_32_(416, 608, 3)_train_nx.json",
];

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A MOCCASIN file as a `graph` instance file at ⌈m × baseline peak⌉ (m = num/10).
fn moccasin_row(path: &Path, tenths: u64) -> Result<InstanceFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let imported =
        parse_node_link(&text, None).map_err(|e| format!("{}: {}", e.field, e.message))?;
    let mut g = imported.graph;
    let checked = graph_baseline_checked(&g)?;
    let peak = checked.report().peak_memory.0 as u128;
    g.gpu_memory =
        u64::try_from((peak * tenths as u128).div_ceil(10)).map_err(|e| e.to_string())?;
    g.name = format!("{} m={}.{}", g.name, tenths / 10, tenths % 10);
    Ok(InstanceFile::Graph(g))
}

fn pct(gap: &BigRational) -> String {
    let v = (gap * BigRational::from_integer(10_000.into())).ceil();
    format!(
        "{:.2} %",
        v.to_integer().to_f64().unwrap_or(f64::NAN) / 100.0
    )
}

fn run_row(name: &str, file: &InstanceFile) {
    let started = Instant::now();
    let inst = match file.compile() {
        Ok(i) => i,
        Err(e) => return println!("| {name} | does not compile: {e} |"),
    };
    let sum: i64 = inst.ops.iter().map(|o| o.duration.0).sum();
    let mut cells = Vec::new();
    let mut best: Option<(i64, String)> = None;
    let mut best_checked = None;
    for h in heuristic::graph::heuristics() {
        match heuristic::run(h.as_ref(), file, &inst) {
            Ok(r) => {
                let m = r.checked.makespan().0;
                cells.push(format!("{} {m}", h.name()));
                if best.as_ref().is_none_or(|(b, _)| m < *b) {
                    best = Some((m, h.name().to_string()));
                    best_checked = Some(r.checked);
                }
            }
            Err(_) => cells.push(format!("{} –", h.name())),
        }
    }
    // The checked improvement of the best schedule (`heuristic::graph::improve`).
    let effort = env("OFFCERT_GRAPH_IMPROVE")
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    if let (Some(start), Some((_, who))) = (&best_checked, &best) {
        let t = Instant::now();
        let improved = heuristic::graph::improve::improve(
            &inst,
            start,
            heuristic::effort::Effort::Candidates(effort),
        );
        if let Some(k) = improved {
            let m = k.makespan().0;
            cells.push(format!(
                "{who}+improve {m} ({:.1} s)",
                t.elapsed().as_secs_f64()
            ));
            best = Some((m, format!("{who}+improve")));
        }
    }
    let lp_secs = env("OFFCERT_GRAPH_LP_SECS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let lp = CheckmateLp {
        time_limit: Duration::from_secs(lp_secs),
        // the cap the recorded tables used (the report's default is 40 000)
        max_size: 400_000,
        ..CheckmateLp::default()
    };
    let parts_secs = env("OFFCERT_GRAPH_PARTS_SECS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let d = GraphParts::default();
    let parts = GraphParts {
        time_limit: Duration::from_secs(parts_secs),
        max_part: env("OFFCERT_GRAPH_PARTS_MAX")
            .and_then(|s| s.parse().ok())
            .unwrap_or(d.max_part),
        max_pops: env("OFFCERT_GRAPH_PARTS_POPS")
            .and_then(|s| s.parse().ok())
            .unwrap_or(d.max_pops),
        ..d
    };
    let mut bounds: Vec<LowerBound> = Vec::new();
    for b in [&GraphCompute as &dyn BoundMethod, &lp, &parts, &GraphForced] {
        let t = Instant::now();
        match b.bound(file, &inst) {
            Ok(lb) => {
                cells.push(format!(
                    "{} {} ({:.1} s)",
                    b.name(),
                    lb.display(),
                    t.elapsed().as_secs_f64()
                ));
                bounds.push(lb)
            }
            Err(e) => cells.push(format!("{}: {e}", b.name())),
        }
    }
    let exact_nodes = env("OFFCERT_GRAPH_EXACT_NODES")
        .and_then(|s| s.parse().ok())
        .unwrap_or(14);
    if inst.ops.len() <= exact_nodes {
        let o = exact::solve(Method::GraphSearch, &inst, &Limits::default());
        if let Ok(o) = o {
            if o.status == Status::Optimal {
                if let (Some(s), Some(b)) = (o.schedule, o.bound) {
                    let c = offcert::check::check(&inst, &s)
                        .into_result()
                        .expect("checked");
                    if best.as_ref().is_none_or(|(m, _)| c.makespan().0 < *m) {
                        best = Some((c.makespan().0, "graph-search".into()));
                    }
                    bounds.push(LowerBound::from_ticks(
                        b.0,
                        "graph-search",
                        offcert::bound::Strength::Certified,
                    ));
                }
            }
        }
    }
    let lb = offcert::bound::best_of(&bounds, offcert::bound::Strength::Certified).cloned();
    let (best_cell, gap_cell) = match (&best, &lb) {
        (Some((m, who)), Some(lb)) => {
            let mq = BigRational::from_integer((*m).into());
            let gap = if mq.is_zero() {
                mq.clone()
            } else {
                (&mq - &lb.value) / &mq
            };
            (
                format!("{m} ({who})"),
                format!("{} ({}) | {}", lb.display(), lb.source, pct(&gap)),
            )
        }
        (Some((m, who)), None) => (format!("{m} ({who})"), "– | –".into()),
        (None, _) => ("none".into(), "– | –".into()),
    };
    println!(
        "| {name} | {} | {} | {sum} | {best_cell} | {gap_cell} | {:.1} s | {} |",
        inst.ops.len(),
        inst.machine.gpu_capacity.0,
        started.elapsed().as_secs_f64(),
        cells.join("; ")
    );
}

fn main() {
    let filter: Vec<String> = env("OFFCERT_GRAPH_FILTER")
        .map(|f| f.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let keep = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    println!("| instance | n | budget (B) | Σd | best checked (finder) | best certified bound (source) | certified gap | time | heuristics |");
    println!("|---|---|---|---|---|---|---|---|---|");
    match env("OFFCERT_MOCCASIN_DIR") {
        None => println!("(OFFCERT_MOCCASIN_DIR unset: MOCCASIN's 12 rows skipped)"),
        Some(dir) => {
            for f in MOCCASIN {
                let path = PathBuf::from(&dir).join(f);
                if !path.exists() {
                    println!("({f} absent from {dir}: its two rows skipped)");
                    continue;
                }
                for tenths in [8, 9] {
                    let name = format!("{} m=0.{tenths}", f.trim_end_matches(".json"));
                    if !keep(&name) {
                        continue;
                    }
                    match moccasin_row(&path, tenths) {
                        Ok(file) => run_row(&name, &file),
                        Err(e) => println!("| {name} | import failed: {e} |"),
                    }
                }
            }
        }
    }
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/paper/graph");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&bundled)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "json"));
    files.sort();
    for p in files {
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        if !keep(&name) {
            continue;
        }
        match offcert::io::load_instance(&p) {
            Ok((file, _)) => run_row(&name, &file),
            Err(e) => println!("| {name} | {e} |"),
        }
    }
}
