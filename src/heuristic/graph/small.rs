//! `graph-best`'s candidate for small graphs: an A* search over op
//! sequences with deletes, capped in the states it settles, so that the
//! scheduler is complete where the graph is small (the eviction engines are
//! not: a 6-node graph where they all fail has a schedule,
//! `tests/it/graph_schedules.rs`).
//!
//! A state is (D, L): D the nodes computed at least once, L ⊆ D the nodes
//! whose output is resident. A move computes v ∉ L whose inputs are all in L
//! when Σ_{u∈L}|u| + |v| + tmp(v) fits the capacity (cost d(v)), or drops
//! u ∈ L (cost 0); the estimate of a state is Σ d over the nodes not in D
//! (each must still run once), so the first complete state taken from the
//! queue is the least total duration among the states settled. The sequence
//! goes through the shared realiser and the checker like every candidate;
//! nothing here claims optimality (the exact methods do that).
//!
//! Owns: [`sequence`], [`MAX_NODES`], [`MAX_STATES`]. Must not import: exact
//! solvers.

use crate::family::dag::Dag;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// The largest graph searched (a node set is a `u32` bit mask; 3^n states).
pub const MAX_NODES: usize = 16;

/// The most states the search settles before it gives up (deterministic).
pub const MAX_STATES: usize = 1 << 20;

type State = (u32, u32);

/// The least-duration sequence the capped search finds, or `None` (too many
/// nodes, no sequence fits, or the cap was reached first).
pub fn sequence(dag: &Dag) -> Option<Vec<usize>> {
    let n = dag.len();
    if n == 0 || n > MAX_NODES {
        return None;
    }
    let all: u32 = (1u32 << n) - 1;
    let left = |done: u32| -> i64 {
        (0..n)
            .filter(|&v| done >> v & 1 == 0)
            .map(|v| dag.duration[v].max(0))
            .sum()
    };
    let mut cost: HashMap<State, i64> = HashMap::new();
    let mut from: HashMap<State, (State, Option<usize>)> = HashMap::new();
    let mut queue = BinaryHeap::new();
    cost.insert((0, 0), 0);
    queue.push(Reverse((left(0), 0i64, 0u32, 0u32)));
    let mut settled = 0usize;
    while let Some(Reverse((_, c, done, live))) = queue.pop() {
        if cost.get(&(done, live)).is_some_and(|&k| k < c) {
            continue;
        }
        if done == all {
            return Some(unwind(&from, (done, live)));
        }
        settled += 1;
        if settled > MAX_STATES {
            return None;
        }
        let used: u128 = (0..n)
            .filter(|&u| live >> u & 1 == 1)
            .map(|u| dag.size[u] as u128)
            .sum();
        for v in 0..n {
            let bit = 1u32 << v;
            let next = if live & bit != 0 {
                ((done, live & !bit), c, None)
            } else if dag.preds[v].iter().all(|&u| live >> u & 1 == 1)
                && used + dag.size[v] as u128 + dag.temp[v] as u128 <= dag.capacity as u128
            {
                ((done | bit, live | bit), c + dag.duration[v], Some(v))
            } else {
                continue;
            };
            let (s, k, node) = next;
            if cost.get(&s).is_none_or(|&old| k < old) {
                cost.insert(s, k);
                from.insert(s, ((done, live), node));
                queue.push(Reverse((k + left(s.0), k, s.0, s.1)));
            }
        }
    }
    None
}

/// The computed nodes along the path that ends at `s`.
fn unwind(from: &HashMap<State, (State, Option<usize>)>, mut s: State) -> Vec<usize> {
    let mut seq = Vec::new();
    while let Some(&(prev, node)) = from.get(&s) {
        seq.extend(node);
        s = prev;
    }
    seq.reverse();
    seq
}
