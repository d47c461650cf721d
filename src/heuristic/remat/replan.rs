//! Re-planning a `remat_chain` schedule's checkpoints and offloads (issue 23,
//! Deliver 5): rotor's persistent DP is filled once over the memory from the
//! chain's own budget up to its keep-everything peak, and read at a series of
//! *virtual* budgets M' ≥ M_GPU: the larger M', the fewer recomputations. Each
//! such sequence is then fitted into the real memory by offloading values
//! across their longest idle stretch (the value of each tensor whose reads
//! are furthest apart in compute time first: an early layer's ā, kept from
//! the forward to its backward), the fewest that make it fit. Every candidate
//! is realised by the shared simulator ([`asap_sequence`]) and **checked**;
//! the best checked schedule is kept. Before those, two candidates that
//! recompute nothing: the schedule of `proofs/REMAT-BUDGETS.md`
//! ([`super::least_memory_schedule`], valid down to the least memory) and the
//! keep-everything sequence with each block's least-footprint option, fitted
//! the same way (`keep-everything+offload`). A plan the simulator cannot
//! realise in the memory does not fit (more offloads are tried). Then
//! `heuristic::improve::retime` may move its events earlier (the caller runs
//! it).
//!
//! Owns: [`improve`], the candidate offload order [`offload_order`].
//! Must not import: exact solvers, the report, the CLI. Property
//! (`tests/it/remat_replan.rs`): every schedule it returns passes the checker
//! and is strictly better than its input.

use super::rotor::Table;
use super::{Sequence, DEFAULT_SLOTS};
use crate::check::{check, CheckOutcome, Checked};
use crate::family::remat_chain::RematChain;
use crate::heuristic::effort::{Effort, Meter};
use crate::model::{Instance, TensorId};
use crate::simulate::asap_sequence;

/// Virtual budgets tried between M_GPU and the peak (both included).
const VIRTUAL_STEPS: u64 = 64;

/// Prefetch look-aheads tried on the offload set that fits (`None`: as early
/// as memory allows).
const LOOKAHEADS: [Option<usize>; 4] = [None, Some(1), Some(2), Some(4)];

/// A strictly better checked schedule than `start` (makespan below it; with
/// no `start`, any checked schedule: where no heuristic finds one, at the
/// least memory), with its finder's name, or `None`. Stops at `target`
/// (⌈best certified bound⌉) or when `effort` is spent (one unit per candidate
/// realised and checked).
pub fn improve(
    c: &RematChain,
    inst: &Instance,
    start: Option<&Checked>,
    target: Option<i64>,
    effort: impl Into<Effort>,
) -> Option<(String, Checked)> {
    let mut meter = effort.into().start();
    let hi = c.store_all_peak()?.max(c.gpu_memory);
    let mut wide = c.clone();
    wide.gpu_memory = hi;
    let table = Table::build(&wide, DEFAULT_SLOTS);
    let mut best: Option<(String, Checked)> = None;
    let mut best_ms = start.map_or(i64::MAX, |k| k.makespan().0);
    let mut seen: Vec<Sequence> = vec![];
    // Keeping everything with each block's least-footprint option: one op at
    // a time with every transfer between ops (`least_memory_schedule`, valid
    // down to the least memory: `proofs/REMAT-BUDGETS.md`), then realised by
    // the simulator with the fewest offloads that fit.
    if let Some(s) = super::least_memory_schedule(c, inst) {
        meter.charge();
        if let CheckOutcome::Valid(k) = check(inst, &s) {
            if k.makespan().0 < best_ms {
                best_ms = k.makespan().0;
                best = Some(("least-memory".to_string(), k));
            }
        }
    }
    if let Some(least) = c.least_options() {
        let options: Vec<usize> = least.into_iter().map(|x| x.0).collect();
        let seq = super::keep_everything_with(c, &options);
        if let Some(k) = fit(inst, &seq, best_ms, &mut meter) {
            best_ms = k.makespan().0;
            best = Some(("keep-everything+offload".to_string(), k));
        }
        seen.push(seq);
    }
    // From the peak down: the fewest recomputations first.
    for i in (0..=VIRTUAL_STEPS).rev() {
        let m =
            c.gpu_memory + ((hi - c.gpu_memory) as u128 * i as u128 / VIRTUAL_STEPS as u128) as u64;
        let Some(seq) = table.sequence_within(&wide, m) else {
            continue;
        };
        if seen.contains(&seq) {
            continue;
        }
        seen.push(seq.clone());
        if let Some(k) = fit(inst, &seq, best_ms, &mut meter) {
            best_ms = k.makespan().0;
            best = Some((format!("rotor@{m}B+offload"), k));
        }
        if meter.spent() || target.is_some_and(|t| best_ms <= t) {
            break;
        }
    }
    best
}

/// The best checked schedule below `below` that `seq` gives with the fewest
/// offloads (in [`offload_order`]) that make it fit, and a few more.
fn fit(inst: &Instance, seq: &Sequence, below: i64, meter: &mut Meter) -> Option<Checked> {
    let order = offload_order(inst, seq);
    let mut best: Option<Checked> = None;
    let mut best_ms = below;
    let mut try_k = |k: usize, la: Option<usize>, meter: &mut Meter| -> Option<bool> {
        if meter.spent() {
            return None;
        }
        meter.charge();
        let mut s = seq.clone();
        s.plan.offloads = order[..k].to_vec();
        s.plan.offloads.sort_by_key(|x| x.1);
        s.plan.lookahead = la;
        // A plan the simulator cannot realise in this memory does not fit
        // (it is no reason to stop: more offloads may make it fit).
        let Ok(sched) = asap_sequence(inst, &s.plan) else {
            return Some(false);
        };
        match check(inst, &sched) {
            CheckOutcome::Valid(c) => {
                if c.makespan().0 < best_ms {
                    best_ms = c.makespan().0;
                    best = Some(c);
                }
                Some(true)
            }
            CheckOutcome::Invalid(_) => Some(false),
        }
    };
    // The least k that fits: doubling, then bisection (fitting is not
    // monotone in k, so this finds *a* small k, every try checked).
    let n = order.len();
    let mut lo = 0usize; // largest k known not to fit (or 0 untried)
    let mut hi = None;
    let mut k = 0usize;
    loop {
        match try_k(k, None, meter) {
            None => return best,
            Some(true) => {
                hi = Some(k);
                break;
            }
            Some(false) => {
                lo = k;
                if k == n {
                    break;
                }
                k = (k * 2).clamp(1, n);
            }
        }
    }
    let mut h = hi?;
    while h > lo + 1 {
        let mid = (lo + h) / 2;
        match try_k(mid, None, meter) {
            None => return best,
            Some(true) => h = mid,
            Some(false) => lo = mid,
        }
    }
    // A few more offloads may shorten a wait for memory; a later prefetch
    // may leave memory to the recomputations.
    for extra in [0usize, 1, 2, 4, 8] {
        for la in LOOKAHEADS {
            if (extra, la) == (0, None) || h + extra > n {
                continue;
            }
            if try_k(h + extra, la, meter).is_none() {
                return best;
            }
        }
    }
    best
}

/// Each transferable tensor of positive size once, at the start of the
/// longest idle stretch (in compute time) between two consecutive uses of one
/// of its values (its production or a read, then the next read), longest
/// first: `(tensor, position)` as [`crate::simulate::SeqPlan::offloads`] takes
/// them. Stretches with no op between their ends are left out.
pub fn offload_order(inst: &Instance, seq: &Sequence) -> Vec<(TensorId, usize)> {
    let ops = &seq.plan.seq;
    let nt = inst.tensors.len();
    // Per position: the compute before it (prefix sums).
    let mut prefix = vec![0i64; ops.len() + 1];
    for (p, o) in ops.iter().enumerate() {
        prefix[p + 1] = prefix[p] + inst.op(*o).duration.0;
    }
    let mut deleted = vec![vec![]; ops.len()];
    for &(p, t) in &seq.plan.deletes_after {
        if let Some(d) = deleted.get_mut(p) {
            d.push(t);
        }
    }
    // Per tensor: the position of its value's last use, and its best stretch.
    let mut last: Vec<Option<usize>> = vec![None; nt];
    let mut best: Vec<Option<(i64, usize)>> = vec![None; nt];
    for (p, o) in ops.iter().enumerate() {
        let op = inst.op(*o);
        for t in &op.reads {
            if let Some(q) = last[t.ix()] {
                let idle = prefix[p] - prefix[q + 1];
                if p > q + 1 && best[t.ix()].is_none_or(|(b, _)| idle > b) {
                    best[t.ix()] = Some((idle, q));
                }
            }
            last[t.ix()] = Some(p);
        }
        for t in op.frees.iter().chain(&deleted[p]) {
            last[t.ix()] = None;
        }
        for t in &op.produces {
            last[t.ix()] = Some(p);
        }
    }
    let mut v: Vec<(i64, TensorId, usize)> = (0..nt)
        .filter(|&i| inst.tensors[i].transferable && inst.tensors[i].size.0 > 0)
        .filter_map(|i| best[i].map(|(idle, q)| (idle, TensorId(i as u32), q)))
        .collect();
    v.sort_by_key(|&(idle, t, q)| (std::cmp::Reverse(idle), q, t));
    v.into_iter().map(|(_, t, q)| (t, q)).collect()
}
