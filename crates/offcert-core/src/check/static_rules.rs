//! The static rules, judged on each event alone: *duration* (an op lasts its
//! duration), *bandwidth* (a transfer is no faster than β allows) and, for cyclic
//! schedules, *outside the period*.
//!
//! Owns: [`static_rules`]. Must not import: anything outside this crate.

use super::window::Window;
use super::Violation;
use crate::model::Instance;
use crate::schedule::{Event, EventId, Schedule};
use crate::units::Ticks;

/// Every static violation, in event order.
pub(super) fn static_rules(inst: &Instance, s: &Schedule, w: &Window) -> Vec<Violation> {
    let mut out = Vec::new();
    for (i, e) in s.events.iter().enumerate() {
        let event = EventId(i as u32);
        out.extend(timing(inst, e, event));
        if w.cyclic {
            out.extend(outside_period(e, event, w.period));
        }
    }
    out
}

/// Rules *duration* and *bandwidth*.
fn timing(inst: &Instance, e: &Event, event: EventId) -> Option<Violation> {
    match *e {
        Event::Compute { op, start, end } => {
            let d = inst.op(op).duration;
            (end - start != d).then_some(Violation::WrongDuration {
                event,
                op,
                start,
                end,
                duration: d,
            })
        }
        Event::Transfer {
            tensor, start, end, ..
        } => {
            let bytes = inst.tensor(tensor).size;
            let bw = inst.machine.bandwidth;
            (!bw.allows(bytes, end - start)).then(|| Violation::TransferTooFast {
                event,
                tensor,
                bytes,
                took: end - start,
                needs_at_least: bw.min_ticks(bytes).unwrap_or(Ticks(i64::MAX)),
                bandwidth: bw,
            })
        }
        Event::Delete { .. } => None,
    }
}

/// Rule *outside the period* (cyclic): every event starts in [0, P); an op ends
/// by P. R8: a zero-duration op may sit at P itself, at the end of its period.
fn outside_period(e: &Event, event: EventId, period: Ticks) -> Option<Violation> {
    let out = match e {
        Event::Compute { start, end, .. } => {
            (*start >= period && !(*start == period && *end == period)) || *end > period
        }
        _ => e.start() >= period,
    };
    out.then(|| Violation::OutsidePeriod {
        event,
        start: e.start(),
        end: e.end(),
        period,
    })
}
