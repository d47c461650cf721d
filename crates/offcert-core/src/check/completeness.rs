//! Rule *completeness*: the ops run in the order σ of each device, each once.
//! The order itself is checked by [`crate::semantics::order`] (shared with the
//! simulator and the search); this file maps the schedule onto it and its
//! breaches onto violations.
//!
//! Owns: [`order_rules`]. Must not import: anything outside this crate.

use super::Violation;
use crate::model::{Instance, OpId};
use crate::schedule::{Event, EventId, Schedule};
use crate::semantics::order::{self, OrderBreach};
use crate::units::Ticks;

/// Every order and completeness violation.
pub(super) fn order_rules(inst: &Instance, s: &Schedule) -> Vec<Violation> {
    order::check_order(inst, &runs(s))
        .into_iter()
        .map(violation)
        .collect()
}

/// The compute events as (index, op), in the same order as the sweep: by start,
/// zero-duration ops first, then file order.
fn runs(s: &Schedule) -> Vec<(usize, OpId)> {
    let mut runs: Vec<(usize, OpId, Ticks, bool)> = s
        .events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Event::Compute { op, start, end } => Some((i, *op, *start, end > start)),
            _ => None,
        })
        .collect();
    runs.sort_by_key(|r| (r.2, r.3, r.0));
    runs.into_iter().map(|(i, o, _, _)| (i, o)).collect()
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
    }
}
