//! The unrolling of a schedule into the replay's timeline: a cyclic schedule
//! becomes three periods (the one before, the reported one, the one after: a
//! transfer that crosses the period end is also replayed one period earlier),
//! each event becomes its actions (start, end), ordered by the same-instant
//! convention of models/MODEL.md §2.4; and the per-tensor uses that say whether
//! a value is still needed.
//!
//! Owns: [`Unrolled`], [`Phase`], [`Action`], [`Uses`]. Must not import:
//! anything outside this crate.

use super::window::Window;
use crate::model::{Instance, TensorId};
use crate::schedule::{Event, EventId, Schedule};
use crate::semantics::Lookahead;
use crate::units::Ticks;

/// An event of the unrolled replay: which schedule event, which period copy
/// (-1, 0, 1 for cyclic; 0 for one-shot), and its shifted times.
#[derive(Clone, Copy, Debug)]
pub(super) struct Unrolled {
    pub event: EventId,
    pub period: i8,
    pub ev: Event,
}

/// The phases of one instant, in replay order: releases before allocations
/// (models/MODEL.md §2.4). The order of the variants is that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Phase {
    TransferEnd,
    OpEnd,
    Delete,
    OpStart,
    TransferStart,
}

impl Phase {
    /// The phases after which memory is measured.
    pub fn allocates(self) -> bool {
        matches!(self, Phase::OpStart | Phase::TransferStart)
    }
}

/// One action of the unrolled replay.
#[derive(Clone, Copy, Debug)]
pub(super) struct Action {
    pub time: Ticks,
    /// A delete or a start at time 0 of a cyclic period: it belongs to the
    /// period that begins at this instant. At a period boundary the ending
    /// period goes first: its completions, then its zero-duration ops at P (R8);
    /// then the boundary state is read; then the next period's time-0 deletes
    /// and starts (a delete at time 0 belongs to the next period, as it does to
    /// the first one, which starts from S₀).
    pub opens: bool,
    pub phase: Phase,
    /// False for a zero-duration event: it starts and ends in this one action.
    pub positive: bool,
    /// Index into the unrolled event list.
    pub unrolled: u32,
}

/// The unrolled events: three copies of a cyclic schedule's events (the copy
/// one period earlier only for events that cross the period end), one of a
/// one-shot schedule's.
pub(super) fn unroll(s: &Schedule, w: &Window) -> Vec<Unrolled> {
    let period = w.period;
    let mut copies = Vec::with_capacity(if w.cyclic {
        2 * s.events.len() + 8
    } else {
        s.events.len()
    });
    for (i, e) in s.events.iter().enumerate() {
        let event = EventId(i as u32);
        if !w.cyclic {
            copies.push(Unrolled {
                event,
                period: 0,
                ev: *e,
            });
            continue;
        }
        for k in 0..2i8 {
            copies.push(Unrolled {
                event,
                period: k,
                ev: e.shifted(Ticks(period.0 * k as i64)),
            });
        }
        if e.end() > period {
            copies.push(Unrolled {
                event,
                period: -1,
                ev: e.shifted(Ticks(-period.0)),
            });
        }
    }
    copies
}

/// Every action of the unrolled events, in replay order: by time, the actions
/// that open a period last, then by phase, zero-duration events first, then by
/// position.
pub(super) fn actions(copies: &[Unrolled], w: &Window) -> Vec<Action> {
    let opens = |c: &Unrolled, at: Ticks| w.cyclic && at.0 == w.period.0 * c.period as i64;
    let mut actions: Vec<Action> = Vec::with_capacity(copies.len() * 2);
    for (u, c) in copies.iter().enumerate() {
        let unrolled = u as u32;
        let positive = c.ev.end() > c.ev.start();
        let (start_phase, end_phase) = match c.ev {
            Event::Compute { .. } => (Phase::OpStart, Some(Phase::OpEnd)),
            Event::Transfer { .. } => (Phase::TransferStart, Some(Phase::TransferEnd)),
            Event::Delete { .. } => (Phase::Delete, None),
        };
        let start = c.ev.start();
        actions.push(Action {
            time: start,
            opens: opens(c, start),
            phase: start_phase,
            // A delete has no end action and counts as positive.
            positive: positive || end_phase.is_none(),
            unrolled,
        });
        if let (Some(phase), true) = (end_phase, positive) {
            actions.push(Action {
                time: c.ev.end(),
                opens: false,
                phase,
                positive,
                unrolled,
            });
        }
    }
    actions.sort_unstable_by_key(|a| (a.time, a.opens, a.phase, a.positive, a.unrolled));
    actions
}

/// Per-tensor times at which it is read or (re)produced, for "needed later".
pub(super) struct Uses {
    /// (time, is_read), sorted by time.
    per_tensor: Vec<Vec<(Ticks, bool)>>,
    always: Vec<bool>,
}

impl Lookahead for Uses {
    fn needed_after(&self, t: TensorId, at: Ticks) -> bool {
        if self.always[t.ix()] {
            return true;
        }
        let v = &self.per_tensor[t.ix()];
        // A re-production starting at `at` comes after every release at `at`
        // (releases before allocations): the released value is dead.
        let from = v.partition_point(|(time, _)| *time < at);
        if v[from..]
            .iter()
            .take_while(|(time, _)| *time == at)
            .any(|(_, read)| !*read)
        {
            return false;
        }
        let i = v.partition_point(|(time, _)| *time <= at);
        // Needed if the next use after `at` reads it (a re-production first means
        // the old value is dead).
        v.get(i).is_some_and(|(_, read)| *read)
    }
}

/// Reads and productions per tensor over the unrolled ops, for "needed later".
pub(super) fn uses(inst: &Instance, copies: &[Unrolled], cyclic: bool) -> Uses {
    let mut per_tensor: Vec<Vec<(Ticks, bool)>> = vec![Vec::new(); inst.tensors.len()];
    for c in copies {
        if let Event::Compute { op, start, .. } = c.ev {
            let o = inst.op(op);
            for t in &o.reads {
                per_tensor[t.ix()].push((start, true));
            }
            for t in &o.produces {
                per_tensor[t.ix()].push((start, false));
            }
        }
    }
    for v in &mut per_tensor {
        // At one instant a read comes before a re-production (an op cannot read
        // what it produces, so a tie is between different ops).
        v.sort_unstable_by_key(|(t, read)| (*t, !*read));
    }
    let always = if cyclic {
        inst.persistent()
    } else {
        vec![false; inst.tensors.len()]
    };
    Uses { per_tensor, always }
}
