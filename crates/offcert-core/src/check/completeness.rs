//! Rule *completeness*: the ops run in the order σ of each device, each once;
//! rules *groups* (R11), *slots* (R12) and *precedence* (R13). The rules
//! themselves are [`crate::semantics::order`] and
//! [`crate::semantics::precedence`]; this file maps the schedule onto them and
//! their breaches onto violations.
//!
//! Owns: [`order_rules`]. Must not import: anything outside this crate.

use super::Violation;
use crate::model::{Instance, Mode, OpId};
use crate::schedule::{Event, EventId, Schedule};
use crate::semantics::order::{self, OrderBreach};
use crate::semantics::precedence::{self, PrecedenceBreach, Run};

/// Every order, completeness, groups, slots and precedence violation.
pub(super) fn order_rules(inst: &Instance, s: &Schedule) -> Vec<Violation> {
    let runs = runs(s);
    let ids: Vec<(usize, OpId)> = runs.iter().map(|r| (r.index, r.op)).collect();
    let period = s.period.filter(|_| inst.mode == Mode::Cyclic);
    let mut out: Vec<Violation> = order::check_order(inst, &ids)
        .into_iter()
        .map(violation)
        .collect();
    out.extend(
        precedence::check_after(inst, &runs, period)
            .into_iter()
            .map(precedence_violation),
    );
    out
}

/// The compute events, in the same order as the sweep: by start,
/// zero-duration ops first, then file order.
fn runs(s: &Schedule) -> Vec<Run> {
    let mut runs: Vec<Run> = s
        .events
        .iter()
        .enumerate()
        .filter_map(|(index, e)| match *e {
            Event::Compute { op, start, end } => Some(Run {
                index,
                op,
                start,
                end,
            }),
            _ => None,
        })
        .collect();
    runs.sort_by_key(|r| (r.start, r.end > r.start, r.index));
    runs
}

fn precedence_violation(b: PrecedenceBreach) -> Violation {
    Violation::StartedBeforePredecessor {
        event: EventId(b.index as u32),
        at: b.start,
        op: b.op,
        after: b.after,
        pred_event: b.pred.map(|(i, _)| EventId(i as u32)),
        pred_end: b.pred.map(|(_, e)| e),
    }
}

fn violation(b: OrderBreach) -> Violation {
    match b {
        OrderBreach::OutOfOrder {
            device,
            position,
            expected,
            found,
            found_index,
        } => Violation::OutOfOrder {
            device,
            position,
            expected,
            found,
            event: EventId(found_index as u32),
        },
        OrderBreach::Missing {
            device,
            position,
            expected,
        } => Violation::MissingOp {
            device,
            position,
            expected,
        },
        OrderBreach::Extra {
            device,
            position,
            found,
            found_index,
        } => Violation::ExtraOp {
            device,
            position,
            found,
            event: EventId(found_index as u32),
        },
        OrderBreach::NeverRan { op } => Violation::NeverRan { op },
        OrderBreach::GroupNeverRan { group } => Violation::GroupNeverRan { group },
        OrderBreach::GroupRanTwice {
            group,
            first,
            second,
        } => Violation::GroupRanTwice {
            group,
            first: EventId(first as u32),
            second: EventId(second as u32),
        },
        OrderBreach::SlotOutOfOrder {
            position,
            expected,
            found,
            found_index,
        } => Violation::SlotOutOfOrder {
            position,
            expected,
            found,
            event: EventId(found_index as u32),
        },
        OrderBreach::SlotExtra {
            position,
            found,
            found_index,
        } => Violation::SlotExtra {
            position,
            found,
            event: EventId(found_index as u32),
        },
    }
}
