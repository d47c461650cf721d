//! `graph-best`'s order search: an order that computes every node exactly
//! once within the memory, found by a depth-first search over the down-sets
//! of the DAG (after `scripts/graph_order_search.py` of branch `gbound`).
//!
//! With no recomputation an output is needed exactly while some reader is
//! not yet computed, and releasing it after its last reader is best, so the
//! memory while v runs after the down-set D is the bytes of the outputs in D
//! that a node outside D reads, plus |v| + tmp(v): v may follow D when that
//! fits the capacity. Each down-set is visited at most once; the children of
//! a state are tried in a greedy order (the most bytes freed net first, then
//! the smallest output). The search stops at a deterministic cap on the
//! down-sets visited ([`max_downsets`]: fewer on larger graphs, each visit
//! costs O(n + |E|)). A found order's makespan is Σd, the least any schedule
//! can have; it is realised and checked like every candidate.
//!
//! Owns: [`search`], [`max_downsets`]. Must not import: exact solvers.

use crate::family::dag::Dag;
use std::collections::HashSet;

/// The most work (down-sets × (n + |E|)) one search does.
const WORK: usize = 1_000_000_000;

/// The most down-sets the search visits on `dag` (at most 300 000).
pub fn max_downsets(dag: &Dag) -> usize {
    let edges: usize = dag.preds.iter().map(Vec::len).sum();
    (WORK / (dag.len() + edges).max(1)).min(300_000)
}

type Set = Box<[u64]>;

fn has(s: &[u64], v: usize) -> bool {
    s[v / 64] >> (v % 64) & 1 == 1
}

/// The children of the down-set `done` (whose outputs still read outside
/// it hold `live` bytes): (net bytes kept, |v|, v), the order they are tried
/// in last (the stack pops the last first).
fn children(dag: &Dag, done: &[u64], live: u128) -> Vec<(i128, u64, usize)> {
    let mut kids = Vec::new();
    for v in 0..dag.len() {
        if has(done, v) || dag.preds[v].iter().any(|&u| !has(done, u)) {
            continue;
        }
        if live + dag.size[v] as u128 + dag.temp[v] as u128 > dag.capacity as u128 {
            continue;
        }
        let freed: i128 = dag.preds[v]
            .iter()
            .filter(|&&u| dag.succs[u].iter().all(|&w| w == v || has(done, w)))
            .map(|&u| dag.size[u] as i128)
            .sum();
        let kept = if dag.succs[v].is_empty() {
            0
        } else {
            dag.size[v] as i128
        };
        kids.push((kept - freed, dag.size[v], v));
    }
    kids.sort_unstable_by(|a, b| b.cmp(a));
    kids
}

/// An order computing every node once within the memory, or `None` (none
/// exists, or the cap stopped the search first).
pub fn search(dag: &Dag, max: usize) -> Option<Vec<usize>> {
    let n = dag.len();
    let words = n.div_ceil(64).max(1);
    // Arena of visited down-sets: (parent index, node added).
    let mut from: Vec<(usize, usize)> = vec![(usize::MAX, usize::MAX)];
    let mut sets: Vec<Set> = vec![vec![0u64; words].into_boxed_slice()];
    let mut seen: HashSet<Set> = HashSet::new();
    seen.insert(sets[0].clone());
    let mut stack: Vec<(usize, u128, usize)> = vec![(0, 0, 0)];
    while let Some((at, live, count)) = stack.pop() {
        if count == n {
            return Some(unwind(&from, at));
        }
        for (delta, _, v) in children(dag, &sets[at], live) {
            let mut next = sets[at].clone();
            next[v / 64] |= 1 << (v % 64);
            if !seen.insert(next.clone()) {
                continue;
            }
            if seen.len() > max {
                return None;
            }
            from.push((at, v));
            sets.push(next);
            let live = (live as i128 + delta) as u128;
            stack.push((sets.len() - 1, live, count + 1));
        }
    }
    None
}

fn unwind(from: &[(usize, usize)], mut at: usize) -> Vec<usize> {
    let mut order = Vec::new();
    while from[at].0 != usize::MAX {
        order.push(from[at].1);
        at = from[at].0;
    }
    order.reverse();
    order
}
