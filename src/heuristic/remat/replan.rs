//! Re-planning a `remat_chain` schedule's checkpoints and offloads (issue 23,
//! Deliver 5): rotor's persistent DP is filled once over the memory from the
//! chain's own budget up to its keep-everything peak, and read at a series of
//! *virtual* budgets M' ≥ M_GPU: the larger M', the fewer recomputations. Each
//! such sequence is then fitted into the real memory by offloading values,
//! the fewest that make it fit, in two orders: the memory-covering order
//! ([`cover_order`]: the values away from the GPU where the sequence needs
//! more than M_GPU, with time to move them out and back) and the
//! longest-idle-stretch order ([`offload_order`]); on the shortest fits,
//! more offloads, later prefetches, and one offloaded value swapped for
//! another. Every candidate is realised by the shared simulator
//! ([`asap_sequence`]) and **checked**; the best checked schedule is kept.
//! Before those, two candidates that recompute nothing: the schedule of
//! `proofs/REMAT-BUDGETS.md` ([`super::least_memory_schedule`], valid down to
//! the least memory) and the keep-everything sequence with each block's
//! least-footprint option, fitted the same way (`keep-everything+offload`).
//! A plan the simulator cannot realise in the memory does not fit (more
//! offloads are tried). Then `heuristic::improve::retime` may move its
//! events earlier (the caller runs it). With `OFFCERT_REPLAN_TRACE` set,
//! every candidate and its outcome go to stderr (a diagnostic).
//!
//! Owns: [`improve`], its candidates ([`candidates`], [`coarse_to_fine`])
//! and offload orders ([`cover_order`], [`offload_order`]).
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
///
/// Order of the work (so that a clock that stops it early has tried the
/// likely good candidates): the least-memory schedule; then, per candidate
/// sequence (keep everything, then rotor's table at the virtual budgets in
/// coarse-to-fine order: the budget nearest M_GPU, the peak, the middle, the
/// quarters, …), the fewest offloads that fit in the memory-covering order
/// ([`cover_order`]) and in the idle-stretch order ([`offload_order`]);
/// last, a few more offloads and later prefetches on the
/// fits found, the shortest first; then, on the shortest few, one offloaded
/// tensor swapped for another. A sequence whose compute alone is not
/// below the best makespan is skipped (one GPU stream: it cannot be better).
pub fn improve(
    c: &RematChain,
    inst: &Instance,
    start: Option<&Checked>,
    target: Option<i64>,
    effort: impl Into<Effort>,
) -> Option<(String, Checked)> {
    let mut meter = effort.into().start().with_floor(CLOCK_FLOOR);
    let mut run = Run {
        best: None,
        best_ms: start.map_or(i64::MAX, |k| k.makespan().0),
        target,
    };
    // Keeping everything with each block's least-footprint option: one op at
    // a time with every transfer between ops (`least_memory_schedule`, valid
    // down to the least memory: `proofs/REMAT-BUDGETS.md`).
    if let Some(s) = super::least_memory_schedule(c, inst) {
        meter.charge();
        if let CheckOutcome::Valid(k) = check(inst, &s) {
            run.offer("least-memory", k);
        }
    }
    let cands = candidates(c);
    let mut fits: Vec<Fit> = vec![];
    // Each sequence's two offload orders, computed when it is first tried
    // (under a clock, the orders of the sequences never tried cost nothing).
    let mut orders: Vec<[Vec<(TensorId, usize)>; 2]> = vec![[vec![], vec![]]; cands.len()];
    for (ix, (name, seq)) in cands.iter().enumerate() {
        for which in 0..2 {
            if run.done(&meter) {
                return run.best;
            }
            if compute(inst, seq) >= run.best_ms {
                continue;
            }
            orders[ix][which] = match which {
                0 => cover_order(inst, seq, c.gpu_memory),
                _ => offload_order(inst, seq),
            };
            let order = &orders[ix][which];
            if which == 1 && order == &orders[ix][0] {
                continue;
            }
            trace(&format!(
                "{name}: {} ops, order {which}",
                seq.plan.seq.len()
            ));
            if let Some(f) = least_fit(inst, seq, order, &mut meter, ix, which) {
                run.offer(&format!("{name}+offload"), f.checked.clone());
                fits.push(f);
            }
        }
    }
    // A few more offloads may shorten a wait for memory; a later prefetch
    // may leave memory to the recomputations. Shortest fits first.
    fits.sort_by_key(|f| (f.checked.makespan().0, f.ix, f.which));
    for f in &fits {
        let (name, seq) = &cands[f.ix];
        for extra in [0usize, 1, 2, 4, 8] {
            for la in LOOKAHEADS {
                if (extra, la) == (0, None) || f.k + extra > orders[f.ix][f.which].len() {
                    continue;
                }
                if run.done(&meter) {
                    return run.best;
                }
                let order = &orders[f.ix][f.which];
                if let Some(Some(k)) = try_k(inst, seq, order, f.k + extra, la, &mut meter) {
                    run.offer(&format!("{name}+offload"), k);
                }
            }
        }
    }
    // Swaps on the shortest fits: one offloaded tensor for one of the next
    // in the order (a tensor whose prefetch has room before its reader).
    for f in fits.iter().take(SWAP_FITS) {
        let (name, seq) = &cands[f.ix];
        let order = &orders[f.ix][f.which];
        for j in 0..f.k {
            for alt in order.iter().skip(f.k).take(SWAP_ALTERNATIVES) {
                if run.done(&meter) {
                    return run.best;
                }
                let mut set = order[..f.k].to_vec();
                set[j] = *alt;
                if let Some(Some(k)) = try_set(inst, seq, set, None, &mut meter) {
                    run.offer(&format!("{name}+offload+swap"), k);
                }
            }
        }
    }
    run.best
}

/// Under `--time-limit`, the candidates tried even when the clock has run
/// out (on a loaded machine, rotor's table over the wide memory and the
/// least-memory schedule's check can use up the whole limit): in the order
/// of [`candidates`], enough for the sequence nearest M_GPU and the peak's.
pub const CLOCK_FLOOR: u64 = 300;

/// How many of the shortest fits get the swap moves, and how many tensors
/// further down the order each offloaded tensor is swapped for.
const SWAP_FITS: usize = 4;
const SWAP_ALTERNATIVES: usize = 16;

/// The best schedule so far and when to stop.
struct Run {
    best: Option<(String, Checked)>,
    best_ms: i64,
    target: Option<i64>,
}

impl Run {
    fn offer(&mut self, by: &str, k: Checked) {
        if k.makespan().0 < self.best_ms {
            self.best_ms = k.makespan().0;
            self.best = Some((by.to_string(), k));
        }
    }
    fn done(&self, meter: &Meter) -> bool {
        meter.spent() || self.target.is_some_and(|t| self.best_ms <= t)
    }
}

/// The fewest offloads of one order that fit one candidate sequence.
struct Fit {
    ix: usize,
    which: usize,
    k: usize,
    checked: Checked,
}

/// The candidate sequences, distinct, in the order they are tried: keeping
/// everything (each block's least-footprint option; tried second, as the
/// far end from M_GPU), and rotor's persistent table (filled once over the memory from M_GPU up to the keep-everything
/// peak) read at [`VIRTUAL_STEPS`] + 1 virtual budgets M' ≥ M_GPU, each
/// distinct sequence named by the least M' that gives it, in
/// [`coarse_to_fine`] order over them: the one nearest M_GPU first (few
/// offloads: the good ones at tight memory), then the peak's (few
/// recomputations), then those between, halving the step.
pub fn candidates(c: &RematChain) -> Vec<(String, Sequence)> {
    let mut out: Vec<(String, Sequence)> = vec![];
    if let Some(least) = c.least_options() {
        let options: Vec<usize> = least.into_iter().map(|x| x.0).collect();
        let seq = super::keep_everything_with(c, &options);
        out.push(("keep-everything".to_string(), seq));
    }
    let Some(hi) = c.store_all_peak().map(|p| p.max(c.gpu_memory)) else {
        return out;
    };
    let mut wide = c.clone();
    wide.gpu_memory = hi;
    let table = Table::build(&wide, DEFAULT_SLOTS);
    let mut rotor: Vec<(String, Sequence)> = vec![];
    for i in 0..=VIRTUAL_STEPS {
        let m =
            c.gpu_memory + ((hi - c.gpu_memory) as u128 * i as u128 / VIRTUAL_STEPS as u128) as u64;
        let Some(seq) = table.sequence_within(&wide, m) else {
            continue;
        };
        if out.iter().chain(&rotor).all(|(_, s)| *s != seq) {
            rotor.push((format!("rotor@{m}B"), seq));
        }
    }
    let mut slots: Vec<Option<(String, Sequence)>> = rotor.into_iter().map(Some).collect();
    for ix in coarse_to_fine(slots.len()) {
        out.extend(slots[ix].take());
    }
    // Keeping everything is the far end from M_GPU (no recomputation): it
    // goes second, after the sequence nearest M_GPU.
    if out.len() > 1 && out[0].0 == "keep-everything" {
        let k = out.remove(0);
        out.insert(1, k);
    }
    out
}

/// 0..n in coarse-to-fine order: 0, n−1, then the midpoint of every interval
/// between two indices already listed, breadth first.
pub fn coarse_to_fine(n: usize) -> Vec<usize> {
    let mut out: Vec<usize> = (0..n.min(2)).map(|i| i * (n - 1)).collect();
    let mut queue = std::collections::VecDeque::from([(0usize, n.saturating_sub(1))]);
    while let Some((lo, hi)) = queue.pop_front() {
        if hi <= lo + 1 {
            continue;
        }
        let mid = (lo + hi) / 2;
        out.push(mid);
        queue.push_back((lo, mid));
        queue.push_back((mid, hi));
    }
    out
}

/// The compute time of a sequence (a lower limit on its makespan: one GPU
/// stream).
fn compute(inst: &Instance, seq: &Sequence) -> i64 {
    seq.plan.seq.iter().map(|o| inst.op(*o).duration.0).sum()
}

/// Realise `seq` with the first `k` offloads of `order` and check it:
/// `None` when the effort is spent, `Some(None)` when it does not fit (the
/// simulator is stuck, or the checker rejects it).
fn try_k(
    inst: &Instance,
    seq: &Sequence,
    order: &[(TensorId, usize)],
    k: usize,
    la: Option<usize>,
    meter: &mut Meter,
) -> Option<Option<Checked>> {
    try_set(inst, seq, order[..k].to_vec(), la, meter)
}

/// [`try_k`] with any set of offloads `(tensor, position)`.
fn try_set(
    inst: &Instance,
    seq: &Sequence,
    set: Vec<(TensorId, usize)>,
    la: Option<usize>,
    meter: &mut Meter,
) -> Option<Option<Checked>> {
    if meter.spent() {
        return None;
    }
    meter.charge();
    let k = set.len();
    let mut s = seq.clone();
    s.plan.offloads = set;
    s.plan.offloads.sort_by_key(|x| x.1);
    s.plan.lookahead = la;
    // A plan the simulator cannot realise in this memory does not fit (it is
    // no reason to stop: more offloads may make it fit).
    let Ok(sched) = asap_sequence(inst, &s.plan) else {
        trace(&format!("  k={k} la={la:?}: stuck"));
        return Some(None);
    };
    match check(inst, &sched) {
        CheckOutcome::Valid(c) => {
            trace(&format!(
                "  k={k} la={la:?}: valid {} {}",
                c.makespan().0,
                idle_summary(inst, c.schedule())
            ));
            Some(Some(c))
        }
        CheckOutcome::Invalid(_) => {
            trace(&format!("  k={k} la={la:?}: invalid"));
            Some(None)
        }
    }
}

/// The fewest offloads (a prefix of `order`) that make `seq` fit: doubling,
/// then bisection (fitting is not monotone in k, so this finds *a* small k,
/// every try checked); the shortest schedule among the tries that fit.
fn least_fit(
    inst: &Instance,
    seq: &Sequence,
    order: &[(TensorId, usize)],
    meter: &mut Meter,
    ix: usize,
    which: usize,
) -> Option<Fit> {
    let n = order.len();
    let mut best: Option<Checked> = None;
    let mut keep = |k: Checked| {
        if best.as_ref().is_none_or(|b| k.makespan() < b.makespan()) {
            best = Some(k);
        }
    };
    let mut lo = 0usize; // largest k known not to fit (or 0 untried)
    let mut k = 0usize;
    let mut h = loop {
        match try_k(inst, seq, order, k, None, meter) {
            None => return None,
            Some(Some(c)) => {
                keep(c);
                break k;
            }
            Some(None) if k == n => return None,
            Some(None) => {
                lo = k;
                k = (k * 2).clamp(1, n);
            }
        }
    };
    while h > lo + 1 {
        let mid = (lo + h) / 2;
        match try_k(inst, seq, order, mid, None, meter) {
            None => break,
            Some(Some(c)) => {
                keep(c);
                h = mid;
            }
            Some(None) => lo = mid,
        }
    }
    best.map(|checked| Fit {
        ix,
        which,
        k: h,
        checked,
    })
}

/// Each transferable tensor of positive size once, chosen to cover the
/// memory the sequence needs above `memory`: the values held over the
/// sequence, position by position (no offload), give each op's excess over
/// `memory`; a tensor offloaded across the stretch between two of its uses
/// (q, r) is away from the GPU during the ops that start at least its
/// transfer time after q's end and end at least its transfer time before r's
/// start (the link's time each way, no contention); greedily, the tensor and
/// stretch that remove the most excess (bytes × ticks) come first. The
/// tensors that remove none follow in [`offload_order`]'s order. Only an
/// order of candidates: every schedule built from it is realised and checked.
pub fn cover_order(inst: &Instance, seq: &Sequence, memory: u64) -> Vec<(TensorId, usize)> {
    let ops = &seq.plan.seq;
    let n = ops.len();
    let mut prefix = vec![0i64; n + 1];
    for (p, o) in ops.iter().enumerate() {
        prefix[p + 1] = prefix[p] + inst.op(*o).duration.0;
    }
    let (live, stretches) = liveness(inst, seq);
    let mut excess: Vec<u64> = live.iter().map(|&b| b.saturating_sub(memory)).collect();
    let mut chosen: Vec<(TensorId, usize)> = vec![];
    let mut taken = vec![false; inst.tensors.len()];
    // Positions a stretch keeps its tensor away from the GPU.
    let pre = &prefix;
    let away = |t: TensorId, q: usize, r: usize| {
        let tt = crate::semantics::transfer_ticks(inst, t).0;
        (q + 1..r).filter(move |&p| pre[p] >= pre[q + 1] + tt && pre[p + 1] + tt <= pre[r])
    };
    loop {
        let mut pick: Option<(u128, TensorId, usize, usize)> = None;
        for &(t, q, r) in &stretches {
            if taken[t.ix()] {
                continue;
            }
            let size = inst.tensor(t).size.0;
            let gain: u128 = away(t, q, r)
                .map(|p| excess[p].min(size) as u128 * inst.op(ops[p]).duration.0.max(1) as u128)
                .sum();
            if gain > 0 && pick.is_none_or(|b| gain > b.0) {
                pick = Some((gain, t, q, r));
            }
        }
        let Some((_, t, q, r)) = pick else { break };
        let size = inst.tensor(t).size.0;
        for p in away(t, q, r).collect::<Vec<_>>() {
            excess[p] -= excess[p].min(size);
        }
        taken[t.ix()] = true;
        chosen.push((t, q));
    }
    let rest = offload_order(inst, seq);
    chosen.extend(rest.into_iter().filter(|(t, _)| !taken[t.ix()]));
    chosen
}

/// Per position of `seq`, the bytes of the values held while its op runs
/// (nothing offloaded: each value from its production, or the start, to its
/// last read before it is released, plus the op's scratch); and every
/// stretch `(tensor, q, r)` between two consecutive uses of a transferable
/// tensor of positive size with an op between them.
fn liveness(inst: &Instance, seq: &Sequence) -> (Vec<u64>, Vec<(TensorId, usize, usize)>) {
    let ops = &seq.plan.seq;
    let n = ops.len();
    let nt = inst.tensors.len();
    let mut deleted = vec![vec![]; n];
    for &(p, t) in &seq.plan.deletes_after {
        if let Some(d) = deleted.get_mut(p) {
            d.push(t);
        }
    }
    // Per tensor: where its current value was made (None: at the start) and
    // its last use; a held interval is closed at its last use.
    let mut open: Vec<Option<Option<usize>>> = vec![None; nt];
    let mut last: Vec<Option<usize>> = vec![None; nt];
    let mut held: Vec<(usize, usize, u64)> = vec![];
    let mut stretches = vec![];
    let movable = |t: TensorId| inst.tensor(t).transferable && inst.tensor(t).size.0 > 0;
    for (p, o) in ops.iter().enumerate() {
        let op = inst.op(*o);
        for t in op.reads.iter().chain(&op.consumes) {
            if let Some(q) = last[t.ix()] {
                if p > q + 1 && movable(*t) {
                    stretches.push((*t, q, p));
                }
            }
            if open[t.ix()].is_none() {
                open[t.ix()] = Some(None);
            }
            last[t.ix()] = Some(p);
        }
        for t in op.frees.iter().chain(&deleted[p]).chain(&op.consumes) {
            if let Some(from) = open[t.ix()].take() {
                held.push((from.unwrap_or(0), p, inst.tensor(*t).size.0));
            }
            last[t.ix()] = None;
        }
        for t in &op.produces {
            if let (Some(from), Some(l)) = (open[t.ix()].take(), last[t.ix()]) {
                held.push((from.unwrap_or(0), l, inst.tensor(*t).size.0));
            }
            open[t.ix()] = Some(Some(p));
            last[t.ix()] = Some(p);
        }
    }
    for (t, from) in open.iter().enumerate() {
        if let Some(from) = from {
            held.push((
                from.unwrap_or(0),
                n.saturating_sub(1),
                inst.tensors[t].size.0,
            ));
        }
    }
    let mut live: Vec<u64> = ops.iter().map(|o| inst.op(*o).temp.0).collect();
    for (a, b, size) in held {
        for x in &mut live[a..=b.min(n.saturating_sub(1))] {
            *x += size;
        }
    }
    (live, stretches)
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

/// Diagnostic: with `OFFCERT_REPLAN_TRACE` set, each candidate tried and its
/// outcome go to stderr.
fn trace(msg: &str) {
    if std::env::var_os("OFFCERT_REPLAN_TRACE").is_some() {
        eprintln!("replan: {msg}");
    }
}

/// Diagnostic: compute total, the GPU stream's idle stretches (longest
/// first) and the tensors moved.
fn idle_summary(inst: &Instance, s: &crate::schedule::Schedule) -> String {
    use crate::schedule::Event;
    if std::env::var_os("OFFCERT_REPLAN_TRACE").is_none() {
        return String::new();
    }
    let mut comp: Vec<(i64, i64, String)> = vec![];
    let mut moves = vec![];
    for e in &s.events {
        match e {
            Event::Compute { op, start, end } => {
                comp.push((start.0, end.0, inst.op(*op).name.clone()))
            }
            Event::Transfer {
                dir,
                tensor,
                start,
                end,
                ..
            } => moves.push(format!(
                "{}{}[{}..{}]",
                if matches!(dir, crate::model::Direction::Offload) {
                    "-"
                } else {
                    "+"
                },
                inst.tensor(*tensor).name,
                start.0,
                end.0
            )),
            _ => {}
        }
    }
    comp.sort();
    let total: i64 = comp.iter().map(|c| c.1 - c.0).sum();
    let mut gaps = vec![];
    let mut t = 0;
    for (a, b, n) in &comp {
        if *a > t {
            gaps.push((*a - t, n.clone(), *a));
        }
        t = t.max(*b);
    }
    gaps.sort_by_key(|g| std::cmp::Reverse(g.0));
    let g: Vec<String> = gaps
        .iter()
        .take(6)
        .map(|g| format!("{}@{}<{}", g.0, g.2, g.1))
        .collect();
    let ops: Vec<&str> = comp.iter().map(|c| c.2.as_str()).collect();
    format!(
        "compute {total} idle {:?} moves {} ops {}",
        g,
        moves.join(" "),
        ops.join(",")
    )
}
