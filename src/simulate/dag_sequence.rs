//! A node sequence of a computation graph ([`Dag`]) as the plan its instance
//! runs, with the tightest releases, and its back-to-back realisation: the
//! decoding every graph method shares (Checkmate's MILP, the graph search,
//! the graph schedulers), so that each one's schedule is what the checker
//! then replays.
//!
//! Releases: the output of `u` is deleted at the end of its last touch (its
//! production or a read) before its next production, or before the sequence
//! ends; never after the last op (a release there saves nothing). For a fixed
//! sequence these releases are the least memory at every op start (a copy
//! kept longer only adds bytes; one released earlier is read again, R1), and
//! they make every re-production legal (R1: no copy left).
//!
//! Owns: [`plan_of`], [`schedule_of`], [`peak_of`].
//! Must not import: the checker, solvers, heuristics.

use super::chain_sequence::back_to_back;
use super::SeqPlan;
use crate::family::dag::Dag;
use crate::model::{Instance, OpId};
use crate::schedule::Schedule;

/// For each position, the nodes whose output is released at its end.
pub fn releases(dag: &Dag, seq: &[usize]) -> Vec<Vec<usize>> {
    let n = dag.len();
    let mut out = vec![Vec::new(); seq.len()];
    // last[u]: the position of u's latest touch since its latest production.
    let mut last: Vec<Option<usize>> = vec![None; n];
    for (p, &v) in seq.iter().enumerate() {
        if let Some(q) = last[v].take() {
            out[q].push(v);
        }
        for &u in &dag.preds[v] {
            last[u] = Some(p);
        }
        last[v] = Some(p);
    }
    let end = seq.len().saturating_sub(1);
    for (u, l) in last.iter().enumerate() {
        if let Some(q) = *l {
            if q != end {
                out[q].push(u);
            }
        }
    }
    out
}

/// The plan: the ops of `seq` in order and the releases of the module doc.
pub fn plan_of(dag: &Dag, seq: &[usize]) -> SeqPlan {
    let mut plan = SeqPlan {
        seq: seq.iter().map(|&v| OpId(v as u32)).collect(),
        ..SeqPlan::default()
    };
    for (p, rel) in releases(dag, seq).into_iter().enumerate() {
        for u in rel {
            plan.deletes_after.push((p, dag.out[u]));
        }
    }
    plan
}

/// The one-shot schedule that runs `seq` back to back from time 0 with the
/// plan's releases (to be replayed by the checker).
pub fn schedule_of(inst: &Instance, dag: &Dag, seq: &[usize]) -> Schedule {
    back_to_back(inst, &plan_of(dag, seq))
}

/// The highest memory at an op start (R7's checkpoints) when `seq` runs with
/// the plan's releases, or `None` when an op would lack an input (R1) or
/// produce a copy still resident.
pub fn peak_of(dag: &Dag, seq: &[usize]) -> Option<u128> {
    let rel = releases(dag, seq);
    let mut live = vec![false; dag.len()];
    let mut used: u128 = 0;
    let mut peak: u128 = 0;
    for (p, &v) in seq.iter().enumerate() {
        if live[v] || dag.preds[v].iter().any(|&u| !live[u]) {
            return None;
        }
        live[v] = true;
        used += dag.size[v] as u128;
        peak = peak.max(used + dag.temp[v] as u128);
        for &u in &rel[p] {
            live[u] = false;
            used -= dag.size[u] as u128;
        }
    }
    Some(peak)
}
