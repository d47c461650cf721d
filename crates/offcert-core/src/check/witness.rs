//! Breaches of the rules (from [`crate::semantics`]) as violations with their
//! witnesses: the event, the time in the period, and for rule R10 the schedule
//! event that holds the tensor.
//!
//! Owns: [`to_violation`]. Must not import: anything outside this crate.

use super::window::Window;
use super::Violation;
use crate::allocator::AllocFailure;
use crate::model::{OpId, TensorId};
use crate::schedule::{Event, EventId, Schedule};
use crate::semantics::{Breach, Holder};
use crate::units::Ticks;

/// A breach as a witness: `w` maps replay ticks into the period.
pub(super) fn to_violation(
    b: Breach,
    event: EventId,
    at: Ticks,
    op: Option<OpId>,
    s: &Schedule,
    w: &Window,
) -> Violation {
    let op = op.unwrap_or(OpId(0));
    match b {
        Breach::InputNotResident { tensor, ready_at } => Violation::InputNotResident {
            event,
            at,
            op,
            tensor,
            // In the period, as `at` is.
            ready_at: ready_at.map(|t| w.rel(t)),
        },
        Breach::InputStale {
            tensor,
            held,
            latest,
        } => Violation::InputStale {
            event,
            at,
            op,
            tensor,
            held,
            latest,
        },
        Breach::CpuInputMissing {
            tensor,
            held,
            latest,
        } => Violation::CpuInputMissing {
            event,
            at,
            op,
            tensor,
            held,
            latest,
        },
        Breach::ProducesResident { tensor } => Violation::ProducesResident {
            event,
            at,
            op,
            tensor,
        },
        Breach::NotTransferable { tensor } => Violation::NotTransferable { event, at, tensor },
        Breach::OffloadAbsent { tensor } => Violation::OffloadAbsent { event, at, tensor },
        Breach::PrefetchWithoutCpuCopy { tensor } => {
            Violation::PrefetchWithoutCpuCopy { event, at, tensor }
        }
        Breach::PrefetchResident { tensor } => Violation::PrefetchResident { event, at, tensor },
        Breach::DeleteAbsent { tensor } => Violation::DeleteAbsent { event, at, tensor },
        Breach::DataLoss {
            tensor,
            gpu,
            cpu,
            latest,
        } => Violation::DataLoss {
            event,
            at,
            tensor,
            gpu_version: gpu,
            cpu_version: cpu,
            latest,
        },
        Breach::ReleasedWhileInUse {
            tensor,
            holder,
            from,
            until,
        } => Violation::ReleasedWhileInUse {
            event,
            at,
            tensor,
            holder,
            holder_event: locate_holder(s, holder, tensor, w.rel(from), w.rel(until)),
            from: w.rel(from),
            until: w.rel(until),
        },
        Breach::AllocatorOutOfMemory { tensor, failure } => allocator_violation(
            Some(event),
            at,
            tensor.is_none().then_some(op),
            tensor,
            failure,
        ),
    }
}

/// The witness of a request the caching allocator cannot serve (`event`
/// none: a copy of the initial state).
pub(super) fn allocator_violation(
    event: Option<EventId>,
    at: Ticks,
    op: Option<OpId>,
    tensor: Option<TensorId>,
    f: AllocFailure,
) -> Violation {
    Violation::AllocatorOutOfMemory {
        event,
        at,
        op,
        tensor,
        request: f.request,
        rounded: f.rounded,
        pool: f.pool,
        segment: f.segment,
        capacity: f.capacity,
        reserved: f.reserved,
        allocated: f.allocated,
        largest_free: f.largest_free,
        free_blocks: f.free_blocks,
    }
}

/// The schedule event that holds `tensor` from `from` (a time in the period for
/// cyclic schedules, possibly negative for a transfer crossing in from the
/// period before): for the witness of rule R10.
fn locate_holder(
    s: &Schedule,
    holder: Holder,
    tensor: TensorId,
    from: Ticks,
    until: Ticks,
) -> Option<EventId> {
    // The same start (up to whole periods) and the same length: two runs of one
    // op that start together are told apart by their ends.
    let same = |a: Ticks, b: Ticks| {
        b - a == until - from
            && match s.period {
                Some(p) if p.0 > 0 => (a.0 - from.0).rem_euclid(p.0) == 0,
                _ => a == from,
            }
    };
    s.events
        .iter()
        .position(|e| match (*e, holder) {
            (Event::Compute { op, start, end }, Holder::Op(h)) => op == h && same(start, end),
            (
                Event::Transfer {
                    tensor: t,
                    dir,
                    start,
                    end,
                    ..
                },
                Holder::Transfer(d),
            ) => t == tensor && dir == d && same(start, end),
            _ => false,
        })
        .map(|i| EventId(i as u32))
}
