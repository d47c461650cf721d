//! The exhaustive graph search: exact optima of computation-graph instances
//! (the `graph` family, models/MODEL.md §4.7) over **every** schedule that
//! moves nothing, by Dijkstra's algorithm over (computed, resident) node sets.
//!
//! One stream and no transfers: a schedule is an op sequence with deletes,
//! run back to back (waiting gains nothing), so its makespan is the sum of
//! its ops' durations. A state is (D, L): D the nodes computed at least once,
//! L ⊆ D the nodes whose output is on the GPU. Moves: compute v ∉ L with every
//! input in L (R1; no copy of v left, R1) when Σ_{u∈L}|u| + |v| + tmp(v) ≤ cap
//! (R7 at its start: inputs held until it ends, R10; output taken at its
//! start), at cost d(v); delete u ∈ L at cost 0 (R6 allows it: the next use of
//! a deleted output is its re-production, or it fails R1 and is not a move).
//! Deletes between two ops happen at the instant the first ends, before the
//! second starts (MODEL.md §2.4), so every schedule is such a path and every
//! path is a schedule: the least cost to D = all is the optimum. The path is
//! decoded to its node sequence and realised with the tightest releases
//! (`simulate::dag_sequence`), which never use more memory than the path's
//! own deletes; the checker replays it.
//!
//! Scope: [`SCOPE`] (a free order); finer limits are refused with
//! [`ExactError::Unsupported`]: an instance that is not a DAG instance, one
//! with movable outputs (offloading: transfers are not searched), an op of
//! duration 0 (its releases would come before it, §2.4), more than
//! [`MAX_NODES`] nodes. On a time limit or an interrupt the least cost not yet
//! settled is returned as the bound (Dijkstra's invariant).
//!
//! Owns: [`SCOPE`], [`solve`], [`MAX_NODES`]. Must not import: the other
//! methods, the door, the cross-check, bounds, heuristics.

use super::graph_limits::exact_dag;
use super::scope::{Feature, Scope};
use super::{ExactError, Limits, Method, Outcome, Status};
use crate::family::dag::Dag;
use crate::model::Instance;
use crate::simulate::dag_sequence::schedule_of;
use crate::units::Ticks;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// What the graph search encodes: a free compute order, directly.
pub const SCOPE: Scope = Scope {
    encodes: &[Feature::FreeOrder],
    reductions: &[],
};

/// The largest graph searched (3^n states).
pub const MAX_NODES: usize = 16;

const METHOD: Method = Method::GraphSearch;

fn unsupported(reason: impl Into<String>) -> ExactError {
    ExactError::Unsupported {
        method: METHOD,
        reason: reason.into(),
    }
}

type State = (u32, u32);

/// The search's result: the optimal node sequence, or the bound reached.
enum Found {
    Path(Vec<usize>),
    Exhausted,
    Stopped(i64),
}

fn search(dag: &Dag, limits: &Limits, start: Instant) -> Found {
    let n = dag.len();
    let all: u32 = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
    let mut dist: HashMap<State, i64> = HashMap::new();
    // parent[s] = (previous state, the node computed, if the move computed one).
    let mut parent: HashMap<State, (State, Option<usize>)> = HashMap::new();
    let mut heap = BinaryHeap::new();
    dist.insert((0, 0), 0);
    heap.push(Reverse((0i64, 0u32, 0u32)));
    let mut pops: u64 = 0;
    while let Some(Reverse((c, done, live))) = heap.pop() {
        if dist.get(&(done, live)).is_some_and(|&d| d < c) {
            continue;
        }
        pops += 1;
        if pops % 4096 == 0
            && (start.elapsed() >= limits.time_limit || limits.cancel.load(Ordering::SeqCst))
        {
            return Found::Stopped(c);
        }
        if done == all {
            return Found::Path(path_to(&parent, (done, live)));
        }
        let used: u128 = (0..n)
            .filter(|&u| live >> u & 1 == 1)
            .map(|u| dag.size[u] as u128)
            .sum();
        let mut relax = |next: State, cost: i64, node: Option<usize>| {
            if dist.get(&next).is_none_or(|&d| cost < d) {
                dist.insert(next, cost);
                parent.insert(next, ((done, live), node));
                heap.push(Reverse((cost, next.0, next.1)));
            }
        };
        for v in 0..n {
            let bit = 1u32 << v;
            if live & bit != 0 {
                relax((done, live & !bit), c, None);
                continue;
            }
            let ready = dag.preds[v].iter().all(|&u| live >> u & 1 == 1);
            let need = used + dag.size[v] as u128 + dag.temp[v] as u128;
            if ready && need <= dag.capacity as u128 {
                relax((done | bit, live | bit), c + dag.duration[v], Some(v));
            }
        }
    }
    Found::Exhausted
}

fn path_to(parent: &HashMap<State, (State, Option<usize>)>, mut s: State) -> Vec<usize> {
    let mut seq = Vec::new();
    while let Some(&(prev, node)) = parent.get(&s) {
        seq.extend(node);
        s = prev;
    }
    seq.reverse();
    seq
}

/// Solve `inst` exactly (see the module doc). The schedule is checked here;
/// the checker's makespan is the one reported.
pub fn solve(inst: &Instance, limits: &Limits) -> Result<Outcome, ExactError> {
    SCOPE.direct(METHOD, inst)?;
    let dag = exact_dag(inst, METHOD)?;
    if dag.len() > MAX_NODES {
        return Err(unsupported(format!(
            "{} nodes (the search takes at most {MAX_NODES})",
            dag.len()
        )));
    }
    let start = Instant::now();
    let mut notes = vec![format!(
        "graph search over every op sequence with deletes, no transfers ({} nodes)",
        dag.len()
    )];
    let (status, schedule, bound) = match search(&dag, limits, start) {
        Found::Path(seq) => {
            let s = schedule_of(inst, &dag, &seq);
            let c = ExactError::checked(METHOD, inst, &s)?;
            let m = c.makespan();
            notes.push(format!("{} op runs", seq.len()));
            (Status::Optimal, Some(c.into_schedule()), Some(m))
        }
        Found::Exhausted => {
            notes.push("infeasible: no op sequence fits the memory".into());
            (Status::Infeasible, None, None)
        }
        Found::Stopped(c) => (Status::Unknown, None, Some(Ticks(c))),
    };
    Ok(Outcome {
        method: METHOD,
        status,
        schedule,
        bound,
        elapsed: start.elapsed(),
        notes,
    })
}
