//! [`Violation::confirm`]: a witness's facts re-checked straight against the
//! instance and the schedule, without the replay. Facts that only a replay can
//! establish (residency, versions) are confirmed as far as the events
//! themselves go: the event exists, is of the right kind, and involves the
//! named op or tensor at the named time. One function per kind of witness.
//!
//! Owns: [`confirm`]. Must not import: anything outside this crate.

use super::Violation;
use crate::model::{
    ComputeOrder, Device, Direction, GroupId, Instance, Multiplicity, OpId, ReleaseRule, TensorId,
};
use crate::schedule::{Event, EventId, Schedule};
use crate::semantics::{Holder, Version};
use crate::units::{Bandwidth, Bytes, Ticks};

/// The inputs a witness is confirmed against.
struct Inputs<'a> {
    inst: &'a Instance,
    s: &'a Schedule,
    /// The period (zero for one-shot schedules).
    p: Ticks,
}

impl Inputs<'_> {
    fn ev(&self, e: &EventId) -> Option<&Event> {
        self.s.events.get(e.ix())
    }

    /// A time in the period matches an event time directly or one period on.
    fn same_time(&self, a: Ticks, b: Ticks) -> bool {
        a == b || (self.p.0 > 0 && (a.0 - b.0).rem_euclid(self.p.0) == 0)
    }

    fn is_transfer_of(&self, e: &EventId, t: &TensorId, dir: Option<Direction>) -> bool {
        matches!(self.ev(e), Some(Event::Transfer { tensor, dir: d, .. })
            if tensor == t && dir.is_none_or(|x| x == *d))
    }

    fn is_compute_of(&self, e: &EventId, op: &OpId) -> bool {
        matches!(self.ev(e), Some(Event::Compute { op: o, .. }) if o == op)
    }
}

pub(super) fn confirm(v: &Violation, inst: &Instance, s: &Schedule) -> bool {
    use Violation::*;
    let x = Inputs {
        inst,
        s,
        p: s.period.unwrap_or(Ticks(0)),
    };
    // Every kind is named here (no wildcard), so a new kind of witness fails
    // to compile until it is given a confirmation.
    match v {
        ComputeOverlap { .. }
        | ChannelOverlap { .. }
        | WrongDuration { .. }
        | TransferTooFast { .. }
        | OutsidePeriod { .. } => confirm_timing(&x, v),
        NotTransferable { .. }
        | InputNotResident { .. }
        | InputStale { .. }
        | CpuInputMissing { .. }
        | ProducesResident { .. }
        | OffloadAbsent { .. }
        | PrefetchWithoutCpuCopy { .. }
        | PrefetchResident { .. }
        | DeleteAbsent { .. }
        | ReleasedWhileInUse { .. }
        | DataLoss { .. } => confirm_residency(&x, v),
        MemoryExceeded { .. }
        | VaMemoryExceeded { .. }
        | AllocatorOutOfMemory { .. }
        | CpuMemoryExceeded { .. }
        | StateMismatch { .. }
        | NotSteady { .. } => confirm_capacity_and_state(&x, v),
        OutOfOrder { .. }
        | ExtraOp { .. }
        | MissingOp { .. }
        | NeverRan { .. }
        | GroupNeverRan { .. }
        | GroupRanTwice { .. }
        | SlotOutOfOrder { .. }
        | SlotExtra { .. }
        | StartedBeforePredecessor { .. } => confirm_order(&x, v),
    }
}

/// Witnesses about when events run (overlaps, durations, transfer speed, the
/// period): confirmed from the events' times alone. Kinds that [`confirm`]
/// sends elsewhere are not confirmed here (false).
fn confirm_timing(x: &Inputs, v: &Violation) -> bool {
    use Violation::*;
    match v {
        ComputeOverlap { first, second, .. } | ChannelOverlap { first, second, .. } => {
            overlap(x, first, second)
        }
        WrongDuration {
            event,
            op,
            start,
            end,
            duration,
        } => wrong_duration(x, event, op, (*start, *end), *duration),
        TransferTooFast {
            event,
            tensor,
            bytes,
            took,
            bandwidth,
            ..
        } => too_fast(x, event, tensor, (*bytes, *took, *bandwidth)),
        OutsidePeriod {
            event,
            start,
            end,
            period,
        } => outside_period(x, event, (*start, *end), *period),
        _ => false,
    }
}

/// Witnesses about where a tensor is (reads, transfers, deletes, releases,
/// lost data): only a replay establishes residency, so these are confirmed as
/// far as the named events go. Kinds that [`confirm`] sends elsewhere are not
/// confirmed here (false).
fn confirm_residency(x: &Inputs, v: &Violation) -> bool {
    use Violation::*;
    let inst = x.inst;
    match v {
        NotTransferable { event, tensor, .. } => {
            x.is_transfer_of(event, tensor, None) && !inst.tensor(*tensor).transferable
        }
        InputNotResident {
            event,
            op,
            tensor,
            at,
            ..
        }
        | InputStale {
            event,
            op,
            tensor,
            at,
            ..
        }
        | CpuInputMissing {
            event,
            op,
            tensor,
            at,
            ..
        } => reads_at(x, event, op, tensor, *at),
        ProducesResident {
            event, op, tensor, ..
        } => x.is_compute_of(event, op) && inst.op(*op).produces.contains(tensor),
        OffloadAbsent { event, tensor, .. } => {
            x.is_transfer_of(event, tensor, Some(Direction::Offload))
        }
        PrefetchWithoutCpuCopy { event, tensor, .. } | PrefetchResident { event, tensor, .. } => {
            x.is_transfer_of(event, tensor, Some(Direction::Prefetch))
        }
        DeleteAbsent { event, tensor, .. } => {
            matches!(x.ev(event), Some(Event::Delete { tensor: t, .. }) if t == tensor)
        }
        ReleasedWhileInUse {
            event,
            at,
            tensor,
            holder,
            holder_event,
            from,
            until,
        } => {
            inst.release == ReleaseRule::AfterEnd
                && releases(x, event, tensor, *at)
                && holds(x, *holder_event, holder, tensor, (*from, *until))
                && inside(*at, (*from, *until), x.p)
        }
        DataLoss {
            event,
            tensor,
            latest,
            cpu_version,
            ..
        } => data_loss(x, event, tensor, *cpu_version, *latest),
        _ => false,
    }
}

/// Witnesses about memory capacity and the steady state of a periodic
/// schedule: confirmed from the instance's capacities and the events. Kinds
/// that [`confirm`] sends elsewhere are not confirmed here (false).
fn confirm_capacity_and_state(x: &Inputs, v: &Violation) -> bool {
    use Violation::*;
    match v {
        MemoryExceeded {
            used,
            capacity,
            resident,
            running,
            ..
        } => memory_exceeded(x, (*used, *capacity), resident, running),
        VaMemoryExceeded {
            used,
            occupied,
            chunk,
            capacity,
            resident,
            running,
            ..
        } => va_exceeded(x, (*used, *occupied, *chunk, *capacity), resident, running),
        AllocatorOutOfMemory { .. } => allocator_out_of_memory(x, v),
        CpuMemoryExceeded { used, capacity, .. } => {
            used > capacity && Some(*capacity) == x.inst.machine.cpu_capacity
        }
        StateMismatch {
            start_gpu,
            start_cpu,
            end_gpu,
            end_cpu,
            tensor,
        } => state_mismatch(x, tensor, (*start_gpu, *start_cpu), (*end_gpu, *end_cpu)),
        NotSteady { event, tensor } => x.is_transfer_of(event, tensor, None),
        _ => false,
    }
}

/// Witnesses about which ops run and in what order (the compute order,
/// groups, slots, precedence): confirmed from the compute events. Kinds that
/// [`confirm`] sends elsewhere are not confirmed here (false).
fn confirm_order(x: &Inputs, v: &Violation) -> bool {
    use Violation::*;
    let inst = x.inst;
    match v {
        OutOfOrder { found, event, .. } | ExtraOp { found, event, .. } => {
            x.is_compute_of(event, found)
        }
        MissingOp { expected, .. } => missing(x, expected),
        NeverRan { op } => {
            !x.s.events
                .iter()
                .any(|e| matches!(e, Event::Compute { op: o, .. } if o == op))
        }
        GroupNeverRan { group } => group_runs(x, group).is_empty(),
        GroupRanTwice {
            group,
            first,
            second,
        } => ran_twice(x, group, first, second),
        SlotOutOfOrder {
            position,
            expected,
            found,
            event,
        } => {
            slot_position(x, *position, found, event)
                && inst.group_of(*found) != Some(*expected)
                && matches!(&inst.order, ComputeOrder::Slots(v) if v.contains(expected))
        }
        SlotExtra {
            position,
            found,
            event,
        } => {
            slot_position(x, *position, found, event)
                && matches!(&inst.order, ComputeOrder::Slots(v)
                    if v.iter().filter(|g| slot_filled_on_gpu(x, g)).count() <= *position)
        }
        StartedBeforePredecessor {
            event,
            at,
            op,
            after,
            pred_event,
            pred_end,
        } => before_predecessor(x, (event, *at, op), after, *pred_event, *pred_end),
        _ => false,
    }
}

/// Rule *groups*: the compute events of a group's members.
fn group_runs(x: &Inputs, group: &GroupId) -> Vec<EventId> {
    let Some(g) = x.inst.groups.get(group.ix()) else {
        return Vec::new();
    };
    x.s.events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, Event::Compute { op, .. } if g.members.contains(op)))
        .map(|(i, _)| EventId(i as u32))
        .collect()
}

/// Rule *groups*: two distinct runs of members of an exactly-once group.
fn ran_twice(x: &Inputs, group: &GroupId, first: &EventId, second: &EventId) -> bool {
    let runs = group_runs(x, group);
    first != second
        && runs.contains(first)
        && runs.contains(second)
        && x.inst.groups[group.ix()].runs == Multiplicity::ExactlyOnce
}

/// Key of the replay's start order: start, zero-duration first, file order.
fn start_key(x: &Inputs, e: &EventId) -> Option<(Ticks, bool, u32)> {
    x.ev(e).map(|ev| (ev.start(), ev.end() > ev.start(), e.0))
}

/// Is a GPU run of a member of a slotted group?
fn slotted_gpu_run(x: &Inputs, ev: &Event) -> bool {
    let ComputeOrder::Slots(slots) = &x.inst.order else {
        return false;
    };
    matches!(ev, Event::Compute { op, .. }
        if x.inst.op(*op).device == Device::Gpu
            && x.inst.group_of(*op).is_some_and(|g| slots.contains(&g)))
}

/// Rule *slots*: `event` is a GPU run of `found`, a slotted group's member, and
/// exactly `position` such runs start before it.
fn slot_position(x: &Inputs, position: usize, found: &OpId, event: &EventId) -> bool {
    let Some(key) = start_key(x, event) else {
        return false;
    };
    let before = (0..x.s.events.len() as u32)
        .map(EventId)
        .filter(|e| slotted_gpu_run(x, &x.s.events[e.ix()]))
        .filter(|e| start_key(x, e).is_some_and(|k| k < key))
        .count();
    x.is_compute_of(event, found)
        && slotted_gpu_run(x, &x.s.events[event.ix()])
        && before == position
}

/// Rule *slots*: the group has a GPU run (its slot is not skipped).
fn slot_filled_on_gpu(x: &Inputs, g: &GroupId) -> bool {
    group_runs(x, g)
        .iter()
        .any(|e| matches!(x.ev(e), Some(Event::Compute { op, .. }) if x.inst.op(*op).device == Device::Gpu))
}

/// Rule *precedence*: `event` is a run of `op` starting at `at`, `after` is one
/// of its predecessors, and the named predecessor run ends after `at` (one or
/// more periods earlier for cyclic schedules), or (no run named) none of
/// `after` starts before `at` (cyclic: none at all).
fn before_predecessor(
    x: &Inputs,
    (event, at, op): (&EventId, Ticks, &OpId),
    after: &OpId,
    pred_event: Option<EventId>,
    pred_end: Option<Ticks>,
) -> bool {
    let run =
        matches!(x.ev(event), Some(Event::Compute { op: o, start, .. }) if o == op && *start == at);
    if !run || !x.inst.op(*op).after.contains(after) {
        return false;
    }
    match (pred_event, pred_end) {
        (Some(p), Some(end)) => {
            x.is_compute_of(&p, after)
                && end > at
                && x.ev(&p).is_some_and(|e| x.same_time(end, e.end()))
        }
        (None, None) => {
            let key = start_key(x, event);
            !(0..x.s.events.len() as u32)
                .map(EventId)
                .any(|e| x.is_compute_of(&e, after) && (x.p.0 > 0 || start_key(x, &e) < key))
        }
        _ => false,
    }
}

/// Rule *resources*: the two events overlap, directly or a period apart (an
/// event overlaps itself only when it is longer than the period).
fn overlap(x: &Inputs, first: &EventId, second: &EventId) -> bool {
    let (Some(a), Some(b)) = (x.ev(first), x.ev(second)) else {
        return false;
    };
    let p = x.p.0;
    let overl = |a: &Event, b: &Event, shift: i64| {
        a.start().0 + shift < b.end().0 && b.start().0 < a.end().0 + shift
    };
    (first != second || a.end().0 - a.start().0 > p)
        && (overl(a, b, 0) || (p > 0 && (overl(a, b, p) || overl(a, b, -p))))
}

/// Rule *duration*.
fn wrong_duration(
    x: &Inputs,
    event: &EventId,
    op: &OpId,
    (start, end): (Ticks, Ticks),
    duration: Ticks,
) -> bool {
    matches!(x.ev(event),
        Some(Event::Compute { op: o, start: s0, end: e0 }) if o == op && *s0 == start && *e0 == end
            && x.inst.op(*op).duration == duration && *e0 - *s0 != duration)
}

/// Rule *dependencies* at an op's start: the op reads the tensor and starts at
/// `at`.
fn reads_at(x: &Inputs, event: &EventId, op: &OpId, tensor: &TensorId, at: Ticks) -> bool {
    matches!(x.ev(event),
        Some(Event::Compute { op: o, start, .. }) if o == op && x.same_time(*start, at)
            && x.inst.op(*op).reads.contains(tensor))
}

/// Rule *bandwidth*.
fn too_fast(
    x: &Inputs,
    event: &EventId,
    tensor: &TensorId,
    (bytes, took, bandwidth): (Bytes, Ticks, Bandwidth),
) -> bool {
    matches!(x.ev(event),
        Some(Event::Transfer { tensor: t, start, end, .. }) if t == tensor && *end - *start == took
            && x.inst.tensor(*t).size == bytes && bandwidth == x.inst.machine.bandwidth
            && !bandwidth.allows(bytes, took))
}

/// Rule *outside the period* (R8: a zero-duration op may sit at P).
fn outside_period(
    x: &Inputs,
    event: &EventId,
    (start, end): (Ticks, Ticks),
    period: Ticks,
) -> bool {
    let compute = matches!(x.ev(event), Some(Event::Compute { .. }));
    matches!(x.ev(event), Some(e) if e.start() == start && e.end() == end)
        && Some(period) == x.s.period
        && ((start.0 >= period.0 && !(compute && start == period && end == period))
            || (compute && end.0 > period.0))
}

/// R10: the event releases the tensor at `at` (a delete, a consume at the
/// op's start, a free at its end).
fn releases(x: &Inputs, event: &EventId, tensor: &TensorId, at: Ticks) -> bool {
    match x.ev(event) {
        Some(Event::Delete { tensor: t, at: a }) => t == tensor && x.same_time(*a, at),
        Some(Event::Compute { op, start, end }) => {
            let o = x.inst.op(*op);
            (o.consumes.contains(tensor) && x.same_time(*start, at))
                || (o.frees.contains(tensor) && x.same_time(*end, at))
        }
        _ => false,
    }
}

/// R10: the holder event holds the tensor over [from, until).
fn holds(
    x: &Inputs,
    holder_event: Option<EventId>,
    holder: &Holder,
    tensor: &TensorId,
    (from, until): (Ticks, Ticks),
) -> bool {
    match (holder_event.and_then(|h| x.ev(&h)), holder) {
        (Some(Event::Compute { op, start, end }), Holder::Op(h)) => {
            let o = x.inst.op(*op);
            op == h
                && !o.consumes.contains(tensor)
                && (o.reads.contains(tensor)
                    || o.produces.contains(tensor)
                    || o.modifies.contains(tensor))
                && x.same_time(*start, from)
                && end.0 - start.0 == until.0 - from.0
        }
        (
            Some(Event::Transfer {
                tensor: t,
                dir,
                start,
                end,
                ..
            }),
            Holder::Transfer(d),
        ) => {
            t == tensor
                && dir == d
                // A transfer crossing in from the period before starts at
                // `from` + P in the file.
                && x.same_time(*start, from)
                && end.0 - start.0 == until.0 - from.0
        }
        _ => false,
    }
}

/// Strictly inside, directly or one period on (a crossing transfer).
fn inside(at: Ticks, (from, until): (Ticks, Ticks), p: Ticks) -> bool {
    let inside = |t: i64| from.0 < t && t < until.0;
    inside(at.0) || (p.0 > 0 && inside(at.0 + p.0))
}

/// Rule *no data loss*. A release deferred by R10 happens at the end of the
/// copy's last user (an op pinning it, or another transfer of it), and is
/// reported there; it needs an offload with delete of the tensor.
fn data_loss(
    x: &Inputs,
    event: &EventId,
    tensor: &TensorId,
    cpu_version: Option<Version>,
    latest: Version,
) -> bool {
    let deferred = x.s.events.iter().any(|e| {
        matches!(e, Event::Transfer { tensor: t, delete: true, dir: Direction::Offload, .. } if t == tensor)
    });
    let o = |op: &OpId| x.inst.op(*op);
    cpu_version != Some(latest)
        && match x.ev(event) {
            Some(Event::Delete { tensor: t, .. }) => t == tensor,
            Some(Event::Transfer {
                tensor: t, delete, ..
            }) => t == tensor && (*delete || deferred),
            Some(Event::Compute { op, .. }) => {
                o(op).frees.contains(tensor)
                    || o(op).consumes.contains(tensor)
                    || (deferred
                        && (o(op).reads.contains(tensor)
                            || o(op).produces.contains(tensor)
                            || o(op).modifies.contains(tensor)))
            }
            _ => false,
        }
}

/// Rule *memory*: the listed copies and the running ops' scratch must add up
/// to at least `used` worth of memory minus in-flight prefetches, which are
/// listed among `resident` too; so the sum is exactly `used`.
fn memory_exceeded(
    x: &Inputs,
    (used, capacity): (Bytes, Bytes),
    resident: &[TensorId],
    running: &[EventId],
) -> bool {
    let mut sum: u128 = resident
        .iter()
        .map(|t| x.inst.tensor(*t).size.0 as u128)
        .sum();
    for e in running {
        if let Some(Event::Compute { op, .. }) = x.ev(e) {
            sum += x.inst.op(*op).temp.0 as u128;
        }
    }
    used > capacity && capacity == x.inst.machine.gpu_capacity && sum == used.0 as u128
}

/// Rule *memory* under `va:m_c`: the copies and the running ops' scratch sum
/// to `used` exactly and, each rounded up to whole chunks, to `occupied`,
/// which is over the capacity; the chunk is the instance's.
fn va_exceeded(
    x: &Inputs,
    (used, occupied, chunk, capacity): (Bytes, Bytes, Bytes, Bytes),
    resident: &[TensorId],
    running: &[EventId],
) -> bool {
    let mut sizes: Vec<u64> = resident.iter().map(|t| x.inst.tensor(*t).size.0).collect();
    for e in running {
        if let Some(Event::Compute { op, .. }) = x.ev(e) {
            sizes.push(x.inst.op(*op).temp.0);
        }
    }
    let c = chunk.0 as u128;
    let exact: u128 = sizes.iter().map(|s| *s as u128).sum();
    let occ: u128 = sizes
        .iter()
        .map(|s| (*s as u128).div_ceil(c.max(1)) * c)
        .sum();
    x.inst.allocator == crate::model::Allocator::Va { chunk }
        && capacity == x.inst.machine.gpu_capacity
        && occupied > capacity
        && exact == used.0 as u128
        && occ == occupied.0 as u128
}

/// Rule *memory* under `caching`: the witness is self-consistent (the request
/// rounded as the allocator rounds it, from the request's pool, no free block
/// of that pool large enough, the new segment over the capacity, the largest
/// hole the first free block) and names the request's event, op or tensor.
fn allocator_out_of_memory(x: &Inputs, v: &Violation) -> bool {
    use crate::allocator::caching::{rounded as round, segment_size};
    let Violation::AllocatorOutOfMemory {
        event,
        op,
        tensor,
        request,
        rounded,
        pool,
        segment,
        capacity,
        reserved,
        allocated,
        largest_free,
        free_blocks,
        ..
    } = v
    else {
        return false;
    };
    let size = match (tensor, op) {
        (Some(t), _) => x.inst.tensor(*t).size,
        (None, Some(o)) => x.inst.op(*o).temp,
        (None, None) => return false,
    };
    let names_event = match (event, tensor, op) {
        (None, Some(_), _) => true,
        (Some(e), Some(t), _) => {
            x.is_transfer_of(e, t, Some(Direction::Prefetch))
                || matches!(x.ev(e), Some(Event::Compute { op, .. }) if x.inst.op(*op).produces.contains(t))
        }
        (Some(e), None, Some(o)) => x.is_compute_of(e, o),
        _ => false,
    };
    let no_fit = free_blocks
        .iter()
        .all(|b| b.pool != *pool || b.size < *rounded);
    let sorted = free_blocks.windows(2).all(|w| w[0].size >= w[1].size);
    names_event
        && x.inst.allocator == crate::model::Allocator::Caching
        && *request == size
        && *rounded == round(size)
        && *pool == crate::allocator::Pool::of(*rounded)
        && *segment == segment_size(*rounded)
        && *capacity == x.inst.machine.gpu_capacity
        && reserved.0.saturating_add(segment.0) > capacity.0
        && allocated <= reserved
        && no_fit
        && sorted
        && *largest_free == free_blocks.first().map_or(Bytes(0), |b| b.size)
}

/// Rule *completeness* (cyclic): the presence at the period's end differs from
/// the declared start state, which the witness repeats.
fn state_mismatch(x: &Inputs, tensor: &TensorId, start: (bool, bool), end: (bool, bool)) -> bool {
    start != end
        && x.s.initial.as_ref().is_some_and(|st| {
            st.gpu.contains(tensor) == start.0 && st.cpu.contains(tensor) == start.1
        })
}

/// Rule *completeness*: the op runs fewer times than the order wants.
fn missing(x: &Inputs, expected: &OpId) -> bool {
    let ran =
        x.s.events
            .iter()
            .filter(|e| matches!(e, Event::Compute { op, .. } if op == expected))
            .count();
    let want = match &x.inst.order {
        ComputeOrder::Fixed(v) => v.iter().filter(|o| *o == expected).count(),
        ComputeOrder::Free | ComputeOrder::Slots(_) => 1,
    };
    ran < want
        || x.s
            .events
            .iter()
            .filter(|e| matches!(e, Event::Compute { .. }))
            .count()
            < want
}
