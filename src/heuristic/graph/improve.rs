//! Checked improvement of a computation-graph schedule (the `graph` family,
//! models/MODEL.md §4.7): a local search on its computation sequence, then
//! the shared back-to-back realisation (re-timing) and the checker, as the
//! other families re-plan and then re-time.
//!
//! The schedule's sequence is its compute events in start order (a schedule
//! with transfers is left alone). Its makespan is Σ d over the sequence (one
//! stream, back to back), so a shorter sequence of the same graph is better.
//! A move drops one computation of a node that the sequence computes more
//! than once (a recomputation, or a first computation that a later one
//! replaces): the outputs then live longer between their productions and
//! reads, and the candidate is kept when its realised peak
//! (`simulate::dag_sequence::peak_of`, the tightest releases) still fits the
//! memory and every op still finds its inputs. Passes go over the sequence
//! until one drops nothing or the effort (a count of candidates, or a time)
//! is spent; the result is realised, checked, and returned only when it is
//! strictly better than the start. A dropped computation only removes
//! duration, so a schedule is never made worse.
//!
//! Owns: [`sequence_of`], [`drop_computations`], [`improve`]. Must not
//! import: exact solvers.

use crate::check::{check, Checked};
use crate::family::dag::Dag;
use crate::heuristic::effort::{Effort, Meter};
use crate::model::Instance;
use crate::schedule::{Event, Schedule};
use crate::simulate::dag_sequence::{peak_of, schedule_of};

/// The node sequence of a graph schedule (its compute events by start time),
/// or `None` when it moves a tensor or computes an op outside the graph.
pub fn sequence_of(dag: &Dag, schedule: &Schedule) -> Option<Vec<usize>> {
    let mut runs = Vec::new();
    for e in &schedule.events {
        match e {
            Event::Compute { op, start, .. } => runs.push((*start, op.0 as usize)),
            Event::Transfer { .. } => return None,
            Event::Delete { .. } => {}
        }
    }
    runs.sort();
    let seq: Vec<usize> = runs.into_iter().map(|(_, v)| v).collect();
    seq.iter().all(|&v| v < dag.len()).then_some(seq)
}

/// Does `seq` fit the memory with every input present?
fn fits(dag: &Dag, seq: &[usize]) -> bool {
    peak_of(dag, seq).is_some_and(|p| p <= dag.capacity as u128)
}

/// `seq` with computations dropped (the module doc's move), each candidate
/// charged to `meter`; `seq` itself when nothing can go.
pub fn drop_computations(dag: &Dag, seq: &[usize], meter: &mut Meter) -> Vec<usize> {
    let mut best = seq.to_vec();
    let mut runs = vec![0usize; dag.len()];
    best.iter().for_each(|&v| runs[v] += 1);
    loop {
        let mut dropped = false;
        let mut i = 0;
        while i < best.len() {
            if meter.spent() {
                return best;
            }
            let v = best[i];
            if runs[v] < 2 {
                i += 1;
                continue;
            }
            meter.charge();
            let mut cand = Vec::with_capacity(best.len() - 1);
            cand.extend_from_slice(&best[..i]);
            cand.extend_from_slice(&best[i + 1..]);
            if fits(dag, &cand) {
                best = cand;
                runs[v] -= 1;
                dropped = true;
            } else {
                i += 1;
            }
        }
        if !dropped {
            return best;
        }
    }
}

/// A strictly better checked schedule than `start` (a graph instance's
/// schedule without transfers), or `None`; with [`Effort::Candidates`] the
/// result does not depend on the machine.
pub fn improve(inst: &Instance, start: &Checked, effort: impl Into<Effort>) -> Option<Checked> {
    let dag = Dag::of(inst).ok()?;
    let seq = sequence_of(&dag, start.schedule())?;
    let mut meter = effort.into().start();
    let better = drop_computations(&dag, &seq, &mut meter);
    if better.len() == seq.len() {
        return None;
    }
    let c = check(inst, &schedule_of(inst, &dag, &better))
        .into_result()
        .ok()?;
    (c.makespan() < start.makespan()).then_some(c)
}
