//! The other tools' answers on a `graph` instance (MODEL.md §4.7), decoded to
//! a node sequence with releases, which `simulate::graph_sequence` realises and
//! the checker judges:
//!
//! - **Checkmate** (`checkmate/core/utils/scheduler.py`, `schedule_from_rs`):
//!   the R and S matrices (T stages × n nodes) as JSON `{"R": [[0|1, …], …],
//!   "S": [[…], …]}` (other keys, such as Checkmate's `U` or `Free_E`, are
//!   ignored). Stage by stage: first release every held output that is neither
//!   kept into the next stage (S[t+1,i]) nor read by a node computed in this
//!   stage; then run the nodes with R[t,i] = 1 in topological order, and after
//!   each node k release each of its inputs and its own output that no later
//!   node of the stage reads and S[t+1,·] does not keep. A node recomputed while
//!   its output is held (Checkmate reuses the register) has the old copy
//!   released just before (MODEL.md §4.7 item 6).
//! - **MOCCASIN** (`src/moccasin/cp.py`, `solve`): the computation order it
//!   reports, `schedule` (nodes sorted by their intervals' starts), as a JSON
//!   list or `{"schedule": [...]}`, or the intervals themselves,
//!   `{"intervals": [{"node", "start", "end"?}]}` (present copies only),
//!   sorted by start (ties in file order, as Python's stable sort). Releases:
//!   [`Graph::releases`], as its `get_mem_from_schedule` counts memory.
//!
//! A node is named by its index (a number: the position in `nodes`, which is the
//! networkx key in every file of MOCCASIN's repository) or its name (a string).
//! Each decoder also gives the tool's own memory count of the answer: Checkmate's
//! MILP recurrence U (`gurobi_solver.py`), MOCCASIN's `get_mem_from_schedule`.
//!
//! Owns: [`checkmate_solution`], [`moccasin_solution`], [`Decoded`].
//! Must not import: schedules, semantics, the checker, solvers.

use super::graph::Graph;
use serde_json::Value;

/// Why a solution file is refused; `field` names the offending value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{field}: {message}")]
pub struct SolutionError {
    pub field: String,
    pub message: String,
}

fn field(f: impl Into<String>, m: impl Into<String>) -> SolutionError {
    SolutionError {
        field: f.into(),
        message: m.into(),
    }
}

/// A decoded answer: node runs in order, the releases `(position, node)` (the
/// copy of `node` released at the end of the run at `position`), and the
/// tool's own peak memory count of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    pub seq: Vec<usize>,
    pub releases: Vec<(usize, usize)>,
    pub tool_peak: u64,
    /// Checkmate: the stage of each run (empty for MOCCASIN).
    pub stages: Vec<usize>,
}

/// The most stages or runs a solution may have.
pub const MAX_RUNS: usize = 1 << 22;

fn bit(v: &Value, f: impl Fn() -> String) -> Result<bool, SolutionError> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Number(n) if n.as_f64() == Some(0.0) => Ok(false),
        Value::Number(n) if n.as_f64() == Some(1.0) => Ok(true),
        other => Err(field(f(), format!("expected 0 or 1, found {other}"))),
    }
}

fn matrix(v: &Value, name: &str, n: usize) -> Result<Vec<Vec<bool>>, SolutionError> {
    let rows = v
        .get(name)
        .ok_or_else(|| field(name, "missing"))?
        .as_array()
        .ok_or_else(|| field(name, "expected a list of rows"))?;
    if rows.is_empty() || rows.len() > MAX_RUNS / n.max(1) {
        return Err(field(name, format!("{} stages", rows.len())));
    }
    rows.iter()
        .enumerate()
        .map(|(t, r)| {
            let r = r
                .as_array()
                .ok_or_else(|| field(format!("{name}[{t}]"), "expected a list"))?;
            if r.len() != n {
                return Err(field(
                    format!("{name}[{t}]"),
                    format!("has {} entries, the graph has {n} nodes", r.len()),
                ));
            }
            r.iter()
                .enumerate()
                .map(|(i, x)| bit(x, || format!("{name}[{t}][{i}]")))
                .collect()
        })
        .collect()
}

/// Decode Checkmate's (R, S) (module documentation).
pub fn checkmate_solution(g: &Graph, text: &str) -> Result<Decoded, SolutionError> {
    let v: Value = serde_json::from_str(text).map_err(|e| field("(json)", e.to_string()))?;
    let n = g.n();
    let r = matrix(&v, "R", n)?;
    let s = matrix(&v, "S", n)?;
    if r.len() != s.len() {
        return Err(field("S", format!("{} stages, R has {}", s.len(), r.len())));
    }
    let topo = g
        .topological_order()
        .map_err(|e| field("(graph)", e.to_string()))?;
    let mut pos = vec![0; n];
    for (p, &v) in topo.iter().enumerate() {
        pos[v] = p;
    }
    let cons = g.consumers();
    let big_t = r.len();
    // Is u's output still needed after node i (by position) in stage t?
    let used_after = |t: usize, u: usize, i: usize| -> bool {
        (t + 1 < big_t && s[t + 1][u]) || cons[u].iter().any(|&v| r[t][v] && pos[v] > pos[i])
    };
    let mut d = Decoded {
        seq: vec![],
        releases: vec![],
        tool_peak: checkmate_u(g, &r, &s, &topo, &pos),
        stages: vec![],
    };
    let mut held = vec![false; n];
    for t in 0..big_t {
        for &i in &topo {
            if held[i] && !cons[i].iter().any(|&v| r[t][v]) && !(t + 1 < big_t && s[t + 1][i]) {
                release(&mut d, &mut held, i);
            }
        }
        for &k in &topo {
            if r[t][k] {
                if held[k] {
                    release(&mut d, &mut held, k);
                }
                d.seq.push(k);
                d.stages.push(t);
                held[k] = true;
            }
            for &u in g.nodes[k].inputs.iter().chain(std::iter::once(&k)) {
                if held[u] && !used_after(t, u, k) {
                    release(&mut d, &mut held, u);
                }
            }
        }
    }
    Ok(d)
}

/// Release `u` at the end of the last run so far (nothing is held before the
/// first run).
fn release(d: &mut Decoded, held: &mut [bool], u: usize) {
    held[u] = false;
    if let Some(p) = d.seq.len().checked_sub(1) {
        d.releases.push((p, u));
    }
}

/// Checkmate's MILP memory count (`gurobi_solver.py`): U[t,0] = R[t,0]·M_0 +
/// Σ_i S[t,i]·M_i, U[t,k+1] = U[t,k] + R[t,k+1]·M_{k+1} − Σ_{(i,k)} M_i·FREE[t,(i,k)],
/// FREE = 1 iff R[t,k] = 1, S[t+1,i] = 0 and no successor of i after k runs in
/// stage t; nodes in topological order. Its largest U.
fn checkmate_u(g: &Graph, r: &[Vec<bool>], s: &[Vec<bool>], topo: &[usize], pos: &[usize]) -> u64 {
    let cons = g.consumers();
    let big_t = r.len();
    let mut peak: i128 = 0;
    for t in 0..big_t {
        let mem = |i: usize| g.nodes[i].memory as i128;
        let mut u: i128 = (0..g.n()).filter(|&i| s[t][i]).map(mem).sum();
        for (p, &k) in topo.iter().enumerate() {
            if r[t][k] {
                u += mem(k);
            }
            peak = peak.max(u);
            if p + 1 == topo.len() || !r[t][k] {
                continue;
            }
            for &i in &g.nodes[k].inputs {
                let kept = t + 1 < big_t && s[t + 1][i];
                let later = cons[i].iter().any(|&j| r[t][j] && pos[j] > pos[k]);
                if !kept && !later {
                    u -= mem(i);
                }
            }
        }
    }
    peak.max(0) as u64
}

fn node_ref(g: &Graph, v: &Value, f: impl Fn() -> String) -> Result<usize, SolutionError> {
    match v {
        Value::Number(x) => match x.as_u64() {
            Some(i) if (i as usize) < g.n() => Ok(i as usize),
            _ => Err(field(f(), format!("no node {x} ({} nodes)", g.n()))),
        },
        Value::String(name) => g
            .nodes
            .iter()
            .position(|n| &n.name == name)
            .ok_or_else(|| field(f(), format!("no node is named `{name}`"))),
        other => Err(field(
            f(),
            format!("expected a node index or name, found {other}"),
        )),
    }
}

/// Decode MOCCASIN's answer (module documentation).
pub fn moccasin_solution(g: &Graph, text: &str) -> Result<Decoded, SolutionError> {
    let v: Value = serde_json::from_str(text).map_err(|e| field("(json)", e.to_string()))?;
    let seq = if let Some(list) = v.as_array() {
        refs(g, list, "")?
    } else if let Some(list) = v.get("schedule") {
        let list = list
            .as_array()
            .ok_or_else(|| field("schedule", "expected a list of nodes"))?;
        refs(g, list, "schedule")?
    } else if let Some(list) = v.get("intervals") {
        intervals(g, list)?
    } else {
        return Err(field(
            "(top level)",
            "expected a list of nodes, {\"schedule\": [...]} or {\"intervals\": [...]}",
        ));
    };
    let releases = g.releases(&seq);
    Ok(Decoded {
        tool_peak: g.sequence_peak(&seq),
        seq,
        releases,
        stages: vec![],
    })
}

fn refs(g: &Graph, list: &[Value], name: &str) -> Result<Vec<usize>, SolutionError> {
    if list.len() > MAX_RUNS {
        return Err(field(name, format!("more than {MAX_RUNS} runs")));
    }
    list.iter()
        .enumerate()
        .map(|(p, x)| node_ref(g, x, || format!("{name}[{p}]")))
        .collect()
}

fn intervals(g: &Graph, list: &Value) -> Result<Vec<usize>, SolutionError> {
    let list = list
        .as_array()
        .ok_or_else(|| field("intervals", "expected a list"))?;
    if list.len() > MAX_RUNS {
        return Err(field(
            "intervals",
            format!("more than {MAX_RUNS} intervals"),
        ));
    }
    let mut runs = Vec::with_capacity(list.len());
    for (j, x) in list.iter().enumerate() {
        let f = |k: &str| format!("intervals[{j}].{k}");
        let node = node_ref(g, x.get("node").unwrap_or(&Value::Null), || f("node"))?;
        let start = x
            .get("start")
            .and_then(Value::as_i64)
            .ok_or_else(|| field(f("start"), "expected an integer"))?;
        if let Some(e) = x.get("end") {
            let e = e
                .as_i64()
                .ok_or_else(|| field(f("end"), "expected an integer"))?;
            if e <= start {
                return Err(field(
                    f("end"),
                    format!("{e} is not after the start {start}"),
                ));
            }
        }
        runs.push((start, node));
    }
    runs.sort_by_key(|r| r.0);
    Ok(runs.into_iter().map(|r| r.1).collect())
}
