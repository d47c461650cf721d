//! Local improvement of a checked schedule by re-planning its transfers.
//!
//! Scope: one-shot instances with a fixed order of GPU ops (what
//! [`crate::simulate::asap`] realises: `activation_chain` and core instances
//! of that shape). The schedule's plan is the set of tensors it offloads, in
//! the order of their offloads; the neighbours of a plan are: one tensor more
//! (inserted in production order), one tensor fewer, one tensor swapped for
//! another, and the same set with a TFLMS-style prefetch look-ahead. Each
//! neighbour is realised by the shared no-wait simulator and **checked**; the
//! first strictly better checked schedule becomes the current one (first-
//! improvement hill climbing) until no neighbour improves or the effort
//! ([`Effort`]: a count of candidates, or a time) is spent.
//!
//! Then [`retime`] keeps the best schedule's events and moves each compute
//! and transfer as early as the checker allows (an event-by-event left
//! shift; DYNPROG's schedules start each prefetch only at the end of an op).
//!
//! A cyclic schedule is re-timed by [`retime_cyclic`]: each event, deletes
//! included, moves to an early instant the checker accepts (found by
//! bisection over the event boundaries before it, so each move costs a few
//! checks), then the period is cut to the last event; groups, slots and
//! precedences are the checker's business, like every other rule. OFFMATE's
//! improvement (`heuristic::offmate::improve`) and [`improve_op_sequence`]
//! call it; [`retime`] leaves cyclic schedules alone.
//!
//! Owns: [`improve`], [`best_run`]'s companion that improves a heuristic run;
//! [`retime`], [`retime_cyclic`], [`improve_op_sequence`].
//! Must not import: exact solvers. Property (`tests/improve.rs`): every
//! schedule it returns passes the checker and is never worse than its input.

use super::effort::{Effort, Meter};
use crate::check::{check, CheckOutcome, Checked};
use crate::model::{ComputeOrder, Direction, Instance, Mode, TensorId};
use crate::schedule::Event;
use crate::simulate::{asap, Plan};
use crate::units::Ticks;

/// Prefetch look-aheads tried for the final set (None: as early as memory allows).
const LOOKAHEADS: [Option<usize>; 7] = [None, Some(1), Some(2), Some(3), Some(4), Some(6), Some(8)];

/// A strictly better checked schedule than `start`, found by re-planning its
/// transfers (half of `effort`) and then re-timing the best schedule so far
/// with [`retime`] (the rest), or `None` (none found, or the instance is out
/// of scope). With [`Effort::Candidates`] the result does not depend on the
/// machine (a `Duration` is [`Effort::Time`]).
pub fn improve(inst: &Instance, start: &Checked, effort: impl Into<Effort>) -> Option<Checked> {
    let effort = effort.into();
    let whole = effort.start();
    let mut first = effort.half().start();
    let planned = replan(inst, start, &mut first);
    let base = planned.as_ref().unwrap_or(start);
    let left = match effort {
        Effort::Candidates(n) => Effort::Candidates(n.saturating_sub(first.used())),
        Effort::Time(_) => whole.left(),
    };
    retime(inst, base, left).or(planned)
}

/// The re-planning hill climb of [`improve`] (before [`retime`]).
fn replan(inst: &Instance, start: &Checked, meter: &mut Meter) -> Option<Checked> {
    if inst.mode != Mode::OneShot || !matches!(inst.order, ComputeOrder::Fixed(_)) {
        return None;
    }
    let cands = candidates(inst);
    let mut cur: Vec<TensorId> = offloaded(start);
    let mut best: Option<Checked> = None;
    let mut best_ms = start.makespan();
    // The start's own plan realised (it may already be better than the input).
    let mut la_best: Option<usize> = None;
    let mut try_plan =
        |meter: &mut Meter, set: &[TensorId], la: Option<usize>| -> Option<Checked> {
            meter.charge();
            let plan = Plan {
                offload: set.to_vec(),
                lookahead: la,
            };
            let s = asap(inst, &plan).ok()?;
            if s.last_end() >= best_ms {
                return None;
            }
            match check(inst, &s) {
                CheckOutcome::Valid(c) if c.makespan() < best_ms => {
                    best_ms = c.makespan();
                    best = Some(c.clone());
                    Some(c)
                }
                _ => None,
            }
        };
    for la in LOOKAHEADS {
        if try_plan(meter, &cur, la).is_some() {
            la_best = la;
        }
    }
    let order_of = |t: TensorId| cands.iter().position(|c| *c == t).unwrap_or(usize::MAX);
    let sorted = |mut v: Vec<TensorId>| {
        v.sort_by_key(|t| order_of(*t));
        v
    };
    'climb: loop {
        // Neighbours: remove one, add one, swap one for one.
        let mut moves: Vec<Vec<TensorId>> = vec![];
        for i in 0..cur.len() {
            let mut v = cur.clone();
            v.remove(i);
            moves.push(v);
        }
        for c in &cands {
            if !cur.contains(c) {
                let mut v = cur.clone();
                v.push(*c);
                moves.push(sorted(v));
            }
        }
        for i in 0..cur.len() {
            for c in &cands {
                if !cur.contains(c) {
                    let mut v = cur.clone();
                    v[i] = *c;
                    moves.push(sorted(v));
                }
            }
        }
        for m in moves {
            if meter.spent() {
                break 'climb;
            }
            if try_plan(meter, &m, la_best).is_some() {
                cur = m;
                continue 'climb;
            }
        }
        // A local optimum for this look-ahead: try the others once more.
        let mut moved = false;
        for la in LOOKAHEADS {
            if la != la_best && try_plan(meter, &cur, la).is_some() {
                la_best = la;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    best
}

/// The transferable tensors of positive size read at least twice (the only
/// ones an offload can pay for), in order of their first reader.
fn candidates(inst: &Instance) -> Vec<TensorId> {
    let ComputeOrder::Fixed(order) = &inst.order else {
        return vec![];
    };
    let mut reads = vec![0usize; inst.tensors.len()];
    let mut first = vec![usize::MAX; inst.tensors.len()];
    for (k, o) in order.iter().enumerate() {
        for t in &inst.op(*o).reads {
            reads[t.ix()] += 1;
            first[t.ix()] = first[t.ix()].min(k);
        }
    }
    let mut v: Vec<TensorId> = (0..inst.tensors.len())
        .filter(|&i| inst.tensors[i].transferable && inst.tensors[i].size.0 > 0 && reads[i] >= 2)
        .map(|i| TensorId(i as u32))
        .collect();
    v.sort_by_key(|t| first[t.ix()]);
    v
}

/// The tensors a schedule offloads, in the order of their first offload.
fn offloaded(c: &Checked) -> Vec<TensorId> {
    let mut offs: Vec<(i64, TensorId)> = c
        .schedule()
        .events
        .iter()
        .filter_map(|e| match *e {
            Event::Transfer {
                dir: Direction::Offload,
                tensor,
                start,
                ..
            } => Some((start.0, tensor)),
            _ => None,
        })
        .collect();
    offs.sort();
    let mut out: Vec<TensorId> = vec![];
    for (_, t) in offs {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// Re-time a checked one-shot schedule: keep every event (the compute order,
/// the deletes) and move each compute and transfer, in order of start, to
/// the earliest instant the **checker** accepts: an op no earlier than the
/// end of its predecessor on its stream, a transfer into any earlier gap of
/// its channel that fits it (so transfers may change their order on a
/// channel: a prefetch moved ahead of another). Sweeps repeat until nothing
/// moves or `effort` is spent (one unit per candidate checked). Nothing is re-implemented: each move is a candidate schedule that
/// goes through [`check`], and events only move earlier, so the makespan
/// never grows. Returns the re-timed schedule if it ends strictly earlier
/// than `start`, else `None`.
pub fn retime(inst: &Instance, start: &Checked, effort: impl Into<Effort>) -> Option<Checked> {
    if inst.mode != Mode::OneShot {
        return None;
    }
    sweep(inst, start, &mut effort.into().start())
}

/// Sweeps of [`retime`]: each event, in order of start, to the earliest
/// instant the checker accepts, until nothing moves or `meter` is spent.
/// `Some` if some event moved.
fn sweep(inst: &Instance, start: &Checked, meter: &mut Meter) -> Option<Checked> {
    let mut any = false;
    let mut sched = start.schedule().clone();
    let mut cur = start.clone();
    'sweeps: loop {
        let mut moved = false;
        let mut ix: Vec<usize> = (0..sched.events.len()).collect();
        ix.sort_by_key(|&i| (sched.events[i].start(), sched.events[i].end()));
        for i in ix {
            for t in earlier_instants(inst, &sched.events, i) {
                if meter.spent() {
                    break 'sweeps;
                }
                meter.charge();
                let mut cand = sched.clone();
                cand.events[i] = cand.events[i].starting_at(t);
                if let CheckOutcome::Valid(c) = check(inst, &cand) {
                    if c.makespan() <= cur.makespan() {
                        sched = cand;
                        cur = c;
                        moved = true;
                        any = true;
                        break;
                    }
                }
            }
        }
        if !moved {
            break;
        }
    }
    match inst.mode {
        Mode::OneShot => (cur.makespan() < start.makespan()).then_some(cur),
        _ => any.then_some(cur),
    }
}

/// The instants before event `i`'s start worth trying, earliest first. An
/// op: the end of its predecessor on its device stream and every event
/// boundary between that and its start (the compute order is kept). A
/// transfer: every event boundary before its start (and 0) at which it fits
/// in a gap of its channel, so it may also jump ahead of other transfers on
/// that channel (a prefetch moved before another one). Deletes are not moved.
fn earlier_instants(inst: &Instance, events: &[Event], i: usize) -> Vec<Ticks> {
    let me = events[i];
    let same = |e: &Event| match (me, *e) {
        (Event::Compute { op: a, .. }, Event::Compute { op: b, .. }) => {
            inst.op(a).device == inst.op(b).device
        }
        (Event::Transfer { dir: a, .. }, Event::Transfer { dir: b, .. }) => {
            inst.machine.channel(a) == inst.machine.channel(b)
        }
        _ => false,
    };
    if matches!(me, Event::Delete { .. }) {
        return vec![];
    }
    let s = me.start();
    let d = me.end() - s;
    let others: Vec<&Event> = events
        .iter()
        .enumerate()
        .filter(|(j, e)| *j != i && same(e))
        .map(|(_, e)| e)
        .collect();
    let lo = match me {
        Event::Transfer { .. } => Ticks::ZERO,
        _ => others
            .iter()
            .filter(|e| e.start() < s)
            .map(|e| e.end())
            .max()
            .unwrap_or(Ticks::ZERO),
    };
    let mut ts: Vec<Ticks> = events
        .iter()
        .flat_map(|e| [e.start(), e.end()])
        .filter(|t| *t > lo && *t < s)
        .collect();
    ts.push(lo);
    ts.retain(|t| *t < s);
    ts.retain(|&t| others.iter().all(|e| e.end() <= t || e.start() >= t + d));
    ts.sort();
    ts.dedup();
    ts
}

/// [`retime`] for a cyclic schedule: sweeps in order of start move each
/// event (compute, transfer, delete) to the earliest instant before it that
/// the checker accepts, found by bisection over the candidate instants
/// ([`cyclic_instants`]; the checker's verdict need not be monotone, so the
/// instant found is valid but not always the earliest); after each sweep the
/// period is cut to the last event ([`cut_period`]). Stops when a sweep moves
/// nothing or `effort` (one unit per check) is spent.
pub fn retime_cyclic(
    inst: &Instance,
    start: &Checked,
    effort: impl Into<Effort>,
) -> Option<Checked> {
    start.schedule().period?;
    let mut meter = effort.into().start();
    let mut sched = start.schedule().clone();
    let mut cur = start.clone();
    loop {
        let mut moved = false;
        let mut ix: Vec<usize> = (0..sched.events.len()).collect();
        ix.sort_by_key(|&i| (sched.events[i].start(), sched.events[i].end()));
        for i in ix {
            let ts = cyclic_instants(inst, &sched.events, i);
            let (mut lo, mut hi) = (0usize, ts.len());
            while lo < hi && !meter.spent() {
                let mid = (lo + hi) / 2;
                meter.charge();
                let mut cand = sched.clone();
                cand.events[i] = moved_to(cand.events[i], ts[mid]);
                match check(inst, &cand) {
                    CheckOutcome::Valid(c) => {
                        sched = cand;
                        cur = c;
                        moved = true;
                        hi = mid;
                    }
                    CheckOutcome::Invalid(_) => lo = mid + 1,
                }
            }
        }
        if let Some(c) = cut_period(inst, &mut sched, &mut meter) {
            cur = c;
            moved = true;
        }
        if !moved || meter.spent() {
            break;
        }
    }
    (cur.makespan() < start.makespan()).then_some(cur)
}

/// The event moved to start (a delete: happen) at `t`.
fn moved_to(e: Event, t: Ticks) -> Event {
    match e {
        Event::Delete { tensor, .. } => Event::Delete { tensor, at: t },
        other => other.starting_at(t),
    }
}

/// Candidate instants before event `i` of a cyclic schedule, ascending: from
/// `lo` (a compute or transfer: the end of the latest event on its stream or
/// channel starting before it, so that the order on each stream is kept; a
/// delete: the latest end of an event starting before it that touches its
/// tensor) to its start, every event boundary in between.
fn cyclic_instants(inst: &Instance, events: &[Event], i: usize) -> Vec<Ticks> {
    let me = events[i];
    let s = me.start();
    let touches = |e: &Event, t: TensorId| match *e {
        Event::Compute { op, .. } => {
            let o = inst.op(op);
            o.reads.contains(&t) || o.produces.contains(&t) || o.modifies.contains(&t)
        }
        Event::Transfer { tensor, .. } => tensor == t,
        Event::Delete { .. } => false,
    };
    let related = |e: &Event| match (me, *e) {
        (Event::Compute { op: a, .. }, Event::Compute { op: b, .. }) => {
            inst.op(a).device == inst.op(b).device
        }
        (Event::Transfer { dir: a, .. }, Event::Transfer { dir: b, .. }) => {
            inst.machine.channel(a) == inst.machine.channel(b)
        }
        (Event::Delete { tensor, .. }, other) => touches(&other, tensor),
        _ => false,
    };
    let lo = events
        .iter()
        .enumerate()
        .filter(|(j, e)| *j != i && e.start() < s && related(e))
        .map(|(_, e)| e.end())
        .max()
        .unwrap_or(Ticks::ZERO);
    if lo >= s {
        return vec![];
    }
    let mut ts: Vec<Ticks> = events
        .iter()
        .flat_map(|e| [e.start(), e.end()])
        .filter(|t| *t > lo && *t < s)
        .collect();
    ts.push(lo);
    ts.sort();
    ts.dedup();
    ts
}

/// Cut the period of a cyclic schedule to its last event (computes and
/// transfers end there, deletes happen before it; a delete at 0 stays at 0,
/// the boundary): checked, and kept when valid.
fn cut_period(
    inst: &Instance,
    sched: &mut crate::schedule::Schedule,
    meter: &mut Meter,
) -> Option<Checked> {
    let p = sched.period?;
    let last = sched
        .events
        .iter()
        .map(|e| match *e {
            Event::Delete { at, .. } if at > Ticks::ZERO => at + Ticks(1),
            Event::Delete { .. } => Ticks(1),
            other => other.end(),
        })
        .max()?;
    if last >= p || meter.spent() {
        return None;
    }
    meter.charge();
    let mut cand = sched.clone();
    cand.period = Some(last);
    match check(inst, &cand) {
        CheckOutcome::Valid(c) if c.makespan() < p => {
            *sched = cand;
            Some(c)
        }
        _ => None,
    }
}

/// Events × candidates an `op_sequence` improvement checks at most when its
/// effort is a count of candidates (a check costs about its event count):
/// the count is cut to this over the schedule's events, so that a row of a
/// program of thousands of functions stays within seconds.
pub const OP_SEQUENCE_EVENT_CHECKS: u64 = 1_000_000;

/// Checked improvement of an `op_sequence` schedule (issue 25): re-plan the
/// evictions (every `belady` candidate plan realised within the memory, in
/// order of period, the first the checker accepts that is shorter than
/// `start`), then [`retime_cyclic`] on the better of the two. `None`: no
/// strictly shorter checked period found.
pub fn improve_op_sequence(
    seq: &crate::family::OpSequence,
    inst: &Instance,
    start: &Checked,
    effort: impl Into<Effort>,
) -> Option<Checked> {
    let effort = match effort.into() {
        Effort::Candidates(n) => {
            let events = start.schedule().events.len().max(1) as u64;
            Effort::Candidates(n.min(OP_SEQUENCE_EVENT_CHECKS / events).max(1))
        }
        t => t,
    };
    let mut meter = effort.start();
    let u = seq.uses().ok()?;
    let mut best: Option<Checked> = None;
    for s in super::op_sequence::belady_candidates(inst, &u) {
        if s.period.is_none_or(|p| p >= start.makespan()) || meter.spent() {
            break;
        }
        meter.charge();
        if let CheckOutcome::Valid(c) = check(inst, &s) {
            best = Some(c);
            break;
        }
    }
    let left = match effort {
        Effort::Candidates(n) => Effort::Candidates(n.saturating_sub(meter.used())),
        Effort::Time(_) => meter.left(),
    };
    let base = best.as_ref().unwrap_or(start);
    retime_cyclic(inst, base, left).or(best)
}
