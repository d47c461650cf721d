//! The successors of a node, under the structural limits of
//! `proofs/SEARCH.md`: dead tensors deleted at once, op starts (a run of
//! zero-duration ops and one more), transfer starts (one per free channel),
//! and minimal delete sets of live tensors when an allocation needs the room.
//! Every successor is built by the shared transitions of
//! [`crate::semantics::State`] in the same-instant order of MODEL.md §2.4, and
//! kept only if they report no breach and memory stays within capacity.
//!
//! Owns: [`expand`] and the pieces of one step (op runs, transfer
//! combinations, delete sets, the next decision instant).
//! Must not import: the driver, the anytime search, the other exact methods,
//! heuristics.

use super::node::{push, Ctx, Flight, Node};
use crate::model::{Direction, TensorId};
use crate::schedule::Event;
use crate::semantics::{GpuCopy, State};
use crate::units::Ticks;

/// One candidate transfer start.
#[derive(Clone, Copy)]
struct Start {
    dir: Direction,
    tensor: TensorId,
}

/// Successors of a node whose completions are done: (child, Some(makespan) if
/// the child is a finished one-shot schedule). At most `mask_budget` delete
/// sets of live tensors are tried per choice of op starts and transfer starts;
/// when that budget cuts the list short, `truncated` is set (the successors
/// are then a subset of the complete list: the anytime search keeps the
/// node's estimate in its bound, `anytime.rs`).
pub(super) fn expand(
    ctx: &Ctx,
    n: &Node,
    mask_budget: usize,
    truncated: &mut bool,
) -> Vec<(Node, Option<i64>)> {
    let mut out = vec![];
    let now = Ticks(n.time);
    let mut base = n.clone();
    if let Some(ms) = finished_makespan(ctx, &base) {
        out.push((base, Some(ms)));
        return out;
    }
    if !delete_dead(ctx, &mut base, now) {
        return out;
    }
    let running = base.running.map(|(k, _)| k);
    let evictable = evictable_tensors(ctx, &base, running);
    for (run, cpu) in op_runs(ctx, &base) {
        // Transfers start after this instant's deletes and op starts (MODEL.md
        // §2.4): a tensor that a zero-duration op of the run produces can be
        // offloaded at once, and a live tensor deleted now can be prefetched
        // again at once (worth it when a zero-duration op of the run peaks in
        // between). Candidates are therefore read from the state after every
        // evictable delete and the run; `apply` validates each choice in full.
        let busy = if run > 0 && ctx.dur[base.next + run - 1] > 0 {
            Some(base.next + run - 1)
        } else {
            running
        };
        let cpu_busy = if cpu {
            Some(base.cpu_next)
        } else {
            base.cpu_running.map(|(k, _)| k)
        };
        let combos = transfer_combos(
            ctx,
            &after_ops(ctx, &base, &[], run),
            &after_ops(ctx, &base, &evictable, run),
            &base,
            (busy, cpu_busy),
        );
        for combo in &combos {
            let step = Step {
                base: &base,
                run,
                cpu,
                combo,
                evictable: &evictable,
            };
            push_delete_sets(ctx, &step, mask_budget, truncated, &mut out);
        }
    }
    out
}

/// The makespan of a finished one-shot node (every op done, none running),
/// read off its trail; None if the node still has work. No delete is needed
/// once nothing more is allocated (and a delete at this instant could precede
/// the start of a zero-duration op that produced the tensor at this very
/// instant, §2.4). A cyclic path ends only where it closes its cycle (tested
/// before expanding), so cyclic nodes are never finished here.
fn finished_makespan(ctx: &Ctx, base: &Node) -> Option<i64> {
    if ctx.cyclic || base.next != ctx.order.len() || base.running.is_some() {
        return None;
    }
    let mut ms = base.time;
    let mut cur = base.trail.clone();
    while let Some(t) = cur {
        ms = ms.max(t.event.end().0);
        cur = t.prev.clone();
    }
    Some(ms)
}

/// Dead tensors go at once: a present copy nobody reads again only takes room.
/// Under the default rule a copy still in use waits for its holder's end.
/// False when such a delete breaks a rule: the node then has no successors.
fn delete_dead(ctx: &Ctx, base: &mut Node, now: Ticks) -> bool {
    for i in 0..base.state.tensors.len() {
        let t = TensorId(i as u32);
        if ctx.inst.tensor(t).size.0 > 0
            && matches!(base.state.tensors[i].gpu, GpuCopy::Present(_))
            && !ctx.needed(t, base.next)
            && !ctx.held(base, t)
        {
            let b = base.state.delete(t, now, &ctx.future(base.next));
            if !b.is_empty() {
                return false;
            }
            push(&mut base.trail, Event::Delete { tensor: t, at: now });
        }
    }
    true
}

/// Live tensors that could be evicted: present, with a current CPU copy, not
/// modified by the running op and not held (whether an op that would start now
/// needs one is checked by the transitions themselves).
fn evictable_tensors(ctx: &Ctx, base: &Node, running: Option<usize>) -> Vec<TensorId> {
    (0..base.state.tensors.len())
        .map(|i| TensorId(i as u32))
        .filter(|t| {
            let ts = base.state.tensor(*t);
            ctx.inst.tensor(*t).size.0 > 0
                && matches!(ts.gpu, GpuCopy::Present(_))
                && ts.cpu_current()
                && !ctx.modified_by(running, *t)
                && !ctx.held(base, *t)
        })
        .collect()
}

/// Op starts: none, or a run of consecutive GPU ops (all but the last of
/// duration 0), as run lengths, each with or without the start of the next
/// CPU op (when the CPU stream is idle). Cyclic: some op starts at time 0 (a
/// rotation of any periodic schedule: the first GPU op's start, or the start
/// of a CPU op running then; proofs/SEARCH.md, "CPU ops"), so nothing at all
/// is not offered there.
fn op_runs(ctx: &Ctx, base: &Node) -> Vec<(usize, bool)> {
    let mut runs: Vec<usize> = vec![0];
    if base.running.is_none() {
        let mut k = base.next;
        while k < ctx.order.len() {
            runs.push(k + 1 - base.next);
            if ctx.dur[k] > 0 {
                break;
            }
            k += 1;
        }
    }
    let cpu_free = base.cpu_running.is_none() && base.cpu_next < ctx.cpu_order.len();
    let cpu: &[bool] = if cpu_free { &[false, true] } else { &[false] };
    let at_root = ctx.cyclic && base.time == 0 && base.next == 0 && base.cpu_next == 0;
    runs.iter()
        .flat_map(|&r| cpu.iter().map(move |&c| (r, c)))
        .filter(|&(r, c)| !(at_root && r == 0 && !c))
        .collect()
}

/// One choice of op starts and transfer starts at a node, before the deletes
/// of live tensors are chosen.
struct Step<'a> {
    base: &'a Node,
    run: usize,
    /// The next CPU op starts too.
    cpu: bool,
    combo: &'a [Option<Start>],
    evictable: &'a [TensorId],
}

/// The children of one [`Step`], one per delete set of evictable tensors.
/// Deletes of live tensors only when an allocation here needs the room, and
/// only minimal sets (a larger set can wait for a later allocation). At most
/// `mask_budget` sets are tried (and 64 times as many listed); a cut sets
/// `truncated`.
fn push_delete_sets(
    ctx: &Ctx,
    step: &Step,
    mask_budget: usize,
    truncated: &mut bool,
    out: &mut Vec<(Node, Option<i64>)>,
) {
    let allocates = step.run > 0
        || step.cpu
        || step
            .combo
            .iter()
            .flatten()
            .any(|s| s.dir == Direction::Prefetch);
    let mut accepted: Vec<u64> = vec![];
    let (mut tried, mut listed) = (0usize, 0usize);
    for mask in masks_by_size(step.evictable.len()) {
        if mask != 0 && !allocates {
            break;
        }
        if mask == u64::MAX {
            *truncated = true;
            break;
        }
        if accepted.first() == Some(&0) {
            // Every other set is a superset of the empty one.
            break;
        }
        listed += 1;
        if accepted.iter().any(|a| a & mask == *a) {
            if listed > mask_budget.saturating_mul(64) {
                *truncated = true;
                break;
            }
            continue;
        }
        if tried >= mask_budget {
            *truncated = true;
            break;
        }
        tried += 1;
        if let Some(child) = apply(ctx, step, mask) {
            accepted.push(mask);
            out.push((child, None));
        }
    }
}

/// Every subset of `m` items as a bit mask, by increasing size (Gosper's hack
/// within each size). More than 63 items cannot be listed: the iterator then
/// yields `u64::MAX` after the empty set, which [`expand`] treats as a cut.
fn masks_by_size(m: usize) -> impl Iterator<Item = u64> {
    // (size of the current subsets, the current mask); None when done.
    let mut cur: Option<(usize, u64)> = Some((0, 0));
    std::iter::from_fn(move || {
        let (size, mask) = cur?;
        cur = if m > 63 {
            // Too many to list: the empty set, then the marker.
            (mask == 0).then_some((1, u64::MAX))
        } else if mask == 0 || mask == u64::MAX {
            (size < m && mask == 0).then(|| (size + 1, (1u64 << (size + 1)) - 1))
        } else {
            let c = mask & mask.wrapping_neg();
            let r = mask + c;
            let next = (((r ^ mask) >> 2) / c) | r;
            if next < (1u64 << m) {
                Some((size, next))
            } else if size < m {
                Some((size + 1, (1u64 << (size + 1)) - 1))
            } else {
                None
            }
        };
        Some(mask)
    })
}

/// The state after deleting every tensor of `evictable` and starting the next
/// `run` ops at `n.time` (zero-duration ones also ending), with no rule or
/// memory check: only used to list transfer candidates, which [`apply`] then
/// validates in full. Deleting more only adds prefetch candidates; offload
/// candidates are read from the state with no delete (an evictable tensor has
/// a current CPU copy, but a zero-duration op of the run may modify it, and
/// then it is one).
fn after_ops(ctx: &Ctx, n: &Node, evictable: &[TensorId], run: usize) -> State {
    let mut state = n.state.clone();
    let now = Ticks(n.time);
    for t in evictable {
        let _ = state.delete(*t, now, &ctx.future(n.next));
    }
    for k in n.next..n.next + run {
        let op = ctx.order[k];
        let fut = ctx.future(k + 1);
        let _ = state.op_start(ctx.inst, op, now, Ticks(n.time + ctx.dur[k]), &fut);
        if ctx.dur[k] == 0 {
            let _ = state.op_end(ctx.inst, op, now, &fut);
        }
    }
    state
}

/// Every combination of transfer starts (at most one per free channel) that
/// the structural limits of `proofs/SEARCH.md` allow: offloads from `kept` (the
/// state after this instant's op starts), prefetches from `evicted` (the same
/// after deleting every evictable tensor first). `busy` is the op that runs
/// after this instant's starts (cyclic: what it modifies is not offloaded, the
/// copy would be stale at its end), and the CPU op that runs then (what it
/// modifies is not offloaded either).
fn transfer_combos(
    ctx: &Ctx,
    kept: &State,
    evicted: &State,
    n: &Node,
    (busy, cpu_busy): (Option<usize>, Option<usize>),
) -> Vec<Vec<Option<Start>>> {
    let mut cands: Vec<Vec<Option<Start>>> = vec![];
    for ch in 0..n.flights.len() {
        let mut v = vec![None];
        if n.flights[ch].is_none() {
            for i in 0..kept.tensors.len() {
                let t = TensorId(i as u32);
                let ten = ctx.inst.tensor(t);
                if !ten.transferable || ten.size.0 == 0 || !ctx.needed(t, n.next) {
                    continue;
                }
                for dir in [Direction::Offload, Direction::Prefetch] {
                    if ctx.channel_ix(dir) != ch {
                        continue;
                    }
                    let ok = match dir {
                        // One offload per value: never rewrite a current CPU copy.
                        Direction::Offload => {
                            let ts = kept.tensor(t);
                            matches!(ts.gpu, GpuCopy::Present(_))
                                && !ts.cpu_current()
                                && ts.cpu_incoming == 0
                                && !ctx.modified_by(busy, t)
                                && !ctx.cpu_modified_by(cpu_busy, t)
                        }
                        Direction::Prefetch => {
                            let ts = evicted.tensor(t);
                            !ts.on_gpu() && ts.cpu_current()
                        }
                    };
                    if ok {
                        v.push(Some(Start { dir, tensor: t }));
                    }
                }
            }
        }
        cands.push(v);
    }
    let mut combos: Vec<Vec<Option<Start>>> = vec![vec![]];
    for c in &cands {
        let mut nx = vec![];
        for pre in &combos {
            for x in c {
                let mut p = pre.clone();
                p.push(*x);
                nx.push(p);
            }
        }
        combos = nx;
    }
    combos
}

/// Apply the step's deletes (`mask` over its evictable tensors), its op
/// starts (the GPU run, then the CPU op) and its transfer starts at this
/// instant, in the same-instant order of MODEL.md §2.4; `None` if a
/// transition breaches a rule or memory exceeds capacity after an allocation.
fn apply(ctx: &Ctx, step: &Step, mask: u64) -> Option<Node> {
    let (base, run) = (step.base, step.run);
    let mut n = base.clone();
    apply_deletes(ctx, &mut n, step.evictable, mask)?;
    // An op start may make the next tick a decision instant: the op's inputs
    // may be deleted from then on (a delete at the start instant itself comes
    // before the start, §2.4). Under the relaxation this holds for every op;
    // under the default rule a positive op holds its inputs to its end (a
    // completion), so only the inputs of the run's zero-duration ops, which
    // hold nothing, become deletable one tick later (proofs/SEARCH.md, limit 6).
    // (A CPU op holds no GPU copy.)
    let started_any = if ctx.after_end {
        (0..run).any(|j| ctx.dur[n.next + j] == 0)
    } else {
        run > 0
    };
    apply_op_starts(ctx, &mut n, run)?;
    if step.cpu {
        apply_cpu_start(ctx, &mut n)?;
    }
    apply_transfer_starts(ctx, &mut n, step.combo)?;
    let next = next_instant(ctx, &n, started_any)?;
    n.after_start = started_any && next == n.time + 1;
    n.time = next;
    Some(n)
}

/// The next CPU op starts now (R1: its inputs' CPU copies are current); a
/// CPU capacity in reach is out of the search's scope, so no R7 here.
fn apply_cpu_start(ctx: &Ctx, n: &mut Node) -> Option<()> {
    let k = n.cpu_next;
    let end = n.time + ctx.cpu_dur[k];
    n.cpu_next = k + 1;
    start_op(ctx, n, ctx.cpu_order[k], end)?;
    n.cpu_running = Some((k, end));
    Some(())
}

/// `op` starts now and ends at `end` (the shared transition, then R7 on the
/// GPU; a CPU op allocates nothing there), written to the trail.
fn start_op(ctx: &Ctx, n: &mut Node, op: crate::model::OpId, end: i64) -> Option<()> {
    let now = Ticks(n.time);
    let fut = ctx.future(n.next);
    if !n
        .state
        .op_start(ctx.inst, op, now, Ticks(end), &fut)
        .is_empty()
        || n.state.gpu_used > ctx.cap
    {
        return None;
    }
    push(
        &mut n.trail,
        Event::Compute {
            op,
            start: now,
            end: Ticks(end),
        },
    );
    Some(())
}

/// The deletes of `mask` over `evictable` (R6).
fn apply_deletes(ctx: &Ctx, n: &mut Node, evictable: &[TensorId], mask: u64) -> Option<()> {
    let now = Ticks(n.time);
    for (j, t) in evictable.iter().enumerate() {
        if mask & (1u64 << j) != 0 {
            if !n.state.delete(*t, now, &ctx.future(n.next)).is_empty() {
                return None;
            }
            push(
                &mut n.trail,
                Event::Delete {
                    tensor: *t,
                    at: now,
                },
            );
        }
    }
    Some(())
}

/// The next `run` ops start now (zero-duration ones end at once); memory is
/// checked after each allocation (R7).
fn apply_op_starts(ctx: &Ctx, n: &mut Node, run: usize) -> Option<()> {
    let now = Ticks(n.time);
    for _ in 0..run {
        let k = n.next;
        let op = ctx.order[k];
        let end = n.time + ctx.dur[k];
        n.next = k + 1;
        start_op(ctx, n, op, end)?;
        if ctx.dur[k] == 0 {
            if !n
                .state
                .op_end(ctx.inst, op, now, &ctx.future(n.next))
                .is_empty()
            {
                return None;
            }
        } else {
            n.running = Some((k, end));
        }
    }
    Some(())
}

/// The transfer starts of `combo`, one per channel, at full bandwidth.
fn apply_transfer_starts(ctx: &Ctx, n: &mut Node, combo: &[Option<Start>]) -> Option<()> {
    let now = Ticks(n.time);
    for (ch, s) in combo.iter().enumerate() {
        let Some(s) = s else { continue };
        let end = n.time + ctx.tau[s.tensor.ix()];
        let (flight, b) =
            n.state
                .transfer_start(ctx.inst, s.dir, s.tensor, Ticks(n.time), Ticks(end));
        if !b.is_empty() || n.state.gpu_used > ctx.cap {
            return None;
        }
        push(
            &mut n.trail,
            Event::Transfer {
                dir: s.dir,
                tensor: s.tensor,
                start: now,
                end: Ticks(end),
                delete: false,
            },
        );
        n.flights[ch] = Some(Flight {
            dir: s.dir,
            tensor: s.tensor,
            end,
            flight,
        });
    }
    Some(())
}

/// The next decision instant; `None` when waiting leads nowhere.
fn next_instant(ctx: &Ctx, n: &Node, started_any: bool) -> Option<i64> {
    let mut next = i64::MAX;
    if let Some((_, e)) = n.running {
        next = next.min(e);
    }
    if n.cpu_running.is_some() || n.cpu_next < ctx.cpu_order.len() {
        // Until the last CPU op has ended, every tick is a decision instant
        // (proofs/SEARCH.md, "CPU ops": the left shift of limit 6 could move
        // a GPU write before a CPU read).
        next = next.min(n.time + 1);
    }
    for f in n.flights.iter().flatten() {
        next = next.min(f.end);
    }
    // (One-shot: once every op has started nothing more can be enabled:
    // offloads and prefetches are only of tensors read again. Cyclic: one tick
    // after the last op start may be where the period ends.)
    if started_any && (ctx.cyclic || n.next < ctx.order.len()) {
        next = next.min(n.time + 1);
    }
    if next == i64::MAX {
        // Nothing runs: unless everything is done, waiting leads nowhere. A
        // cyclic path in this case never changes again: its cycle closed at
        // this instant or never.
        if n.next == ctx.order.len() && !ctx.cyclic {
            next = n.time;
        } else {
            return None;
        }
    }
    if next == n.time && n.next < ctx.order.len() {
        return None;
    }
    Some(next)
}

#[cfg(test)]
mod mask_tests {
    use super::masks_by_size;

    #[test]
    fn every_subset_once_by_increasing_size() {
        for m in 0..=10usize {
            let v: Vec<u64> = masks_by_size(m).collect();
            assert_eq!(v.len(), 1 << m, "m = {m}");
            let mut seen = std::collections::HashSet::new();
            for w in v.windows(2) {
                assert!(w[0].count_ones() <= w[1].count_ones());
            }
            for x in &v {
                assert!(*x < (1u64 << m) && seen.insert(*x));
            }
        }
        assert_eq!(masks_by_size(63).take(3).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(masks_by_size(64).collect::<Vec<_>>(), vec![0, u64::MAX]);
    }
}
