//! Typed witnesses: each violation carries the few facts a person needs to
//! re-check it by hand, and [`Violation::confirm`] re-checks the facts that can be
//! read straight off the instance and schedule.
//!
//! Owns: [`Violation`], [`Warning`], their rule names, kinds, times and
//! sentences ([`Violation::confirm`] lives in `confirm.rs`).
//! Must not import: anything outside offcert-core (no solver, heuristic or
//! `offcert` module; Cargo enforces it).

use crate::allocator::{FreeBlock, Pool};
use crate::model::{Channel, Device, Direction, GroupId, Instance, OpId, TensorId};
use crate::schedule::{EventId, Schedule};
use crate::semantics::{Holder, Version};
use crate::units::{Bandwidth, Bytes, Ticks};
use serde::{Deserialize, Serialize};

/// A broken rule. Times are within the period for cyclic schedules; versions
/// count materialisations and modifications since the start of the replay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Violation {
    /// Rule *resources*: two ops overlap on one compute stream.
    ComputeOverlap {
        device: Device,
        first: EventId,
        second: EventId,
        first_end: Ticks,
        second_start: Ticks,
    },
    /// Rule *resources*: two transfers overlap on one channel.
    ChannelOverlap {
        channel: Channel,
        first: EventId,
        second: EventId,
        first_end: Ticks,
        second_start: Ticks,
    },
    /// Rule *duration*: an op does not last its duration.
    WrongDuration {
        event: EventId,
        op: OpId,
        start: Ticks,
        end: Ticks,
        duration: Ticks,
    },
    /// Rule *bandwidth*: a transfer is shorter than size/β.
    TransferTooFast {
        event: EventId,
        tensor: TensorId,
        bytes: Bytes,
        took: Ticks,
        needs_at_least: Ticks,
        bandwidth: Bandwidth,
    },
    /// Rule *completeness* (cyclic): an event lies outside [0, P).
    OutsidePeriod {
        event: EventId,
        start: Ticks,
        end: Ticks,
        period: Ticks,
    },
    /// Rule *dependencies*: the tensor may not cross the link.
    NotTransferable {
        event: EventId,
        at: Ticks,
        tensor: TensorId,
    },
    /// Rule *dependencies*: an input is not on the GPU when the op starts.
    InputNotResident {
        event: EventId,
        at: Ticks,
        op: OpId,
        tensor: TensorId,
        ready_at: Option<Ticks>,
    },
    /// Rule *dependencies*: an input is on the GPU in an outdated version.
    InputStale {
        event: EventId,
        at: Ticks,
        op: OpId,
        tensor: TensorId,
        held: Option<Version>,
        latest: Version,
    },
    /// Rule *dependencies*: a CPU op's input has no current CPU copy.
    CpuInputMissing {
        event: EventId,
        at: Ticks,
        op: OpId,
        tensor: TensorId,
        held: Option<Version>,
        latest: Version,
    },
    /// Rule *dependencies*: an op produces a tensor that still has a GPU copy.
    ProducesResident {
        event: EventId,
        at: Ticks,
        op: OpId,
        tensor: TensorId,
    },
    /// Rule *dependencies*: an offload starts before the tensor exists on the GPU.
    OffloadAbsent {
        event: EventId,
        at: Ticks,
        tensor: TensorId,
    },
    /// Rule *dependencies*: a prefetch has no CPU copy to read.
    PrefetchWithoutCpuCopy {
        event: EventId,
        at: Ticks,
        tensor: TensorId,
    },
    /// Rule *dependencies*: a prefetch of a tensor already on (or coming to) the GPU.
    PrefetchResident {
        event: EventId,
        at: Ticks,
        tensor: TensorId,
    },
    /// Rule *dependencies*: a delete of a tensor with no GPU copy.
    DeleteAbsent {
        event: EventId,
        at: Ticks,
        tensor: TensorId,
    },
    /// Rule *in use* (R10, default release rule): `event` releases the GPU
    /// copy of `tensor` at `at` (a delete, or an op consuming or freeing it),
    /// strictly inside the interval [from, until) of `holder`, which still uses
    /// it (`holder_event` is that op or transfer in the schedule).
    ReleasedWhileInUse {
        event: EventId,
        at: Ticks,
        tensor: TensorId,
        holder: Holder,
        holder_event: Option<EventId>,
        from: Ticks,
        until: Ticks,
    },
    /// Rule *no data loss*: the GPU copy is released while still needed and no
    /// CPU copy holds the latest version.
    DataLoss {
        event: EventId,
        at: Ticks,
        tensor: TensorId,
        gpu_version: Option<Version>,
        cpu_version: Option<Version>,
        latest: Version,
    },
    /// Rule *memory*: GPU usage above capacity at instant `at` (after the
    /// releases and allocations of `at`).
    MemoryExceeded {
        at: Ticks,
        used: Bytes,
        capacity: Bytes,
        resident: Vec<TensorId>,
        running: Vec<EventId>,
    },
    /// Rule *memory* under `va:m_c` (MODEL.md §2.8): the GPU memory with every
    /// allocation rounded up to whole chunks of `chunk` bytes (`occupied`)
    /// above capacity at `at`; `used` is the exact sum, the copies and running
    /// ops as in [`Violation::MemoryExceeded`].
    VaMemoryExceeded {
        at: Ticks,
        used: Bytes,
        occupied: Bytes,
        chunk: Bytes,
        capacity: Bytes,
        resident: Vec<TensorId>,
        running: Vec<EventId>,
    },
    /// Rule *memory* under `caching` (MODEL.md §2.8): `event` (none: the
    /// initial state) asks for `request` bytes, for the copy of `tensor` or
    /// (none) the scratch of `op`, and the caching allocator cannot serve it:
    /// no free block of its `pool` holds `rounded` bytes and a new `segment`
    /// would take `reserved` over `capacity`. `free_blocks` lists every free
    /// block, largest first; `largest_free` is the largest hole.
    AllocatorOutOfMemory {
        event: Option<EventId>,
        at: Ticks,
        op: Option<OpId>,
        tensor: Option<TensorId>,
        request: Bytes,
        rounded: Bytes,
        pool: Pool,
        segment: Bytes,
        capacity: Bytes,
        reserved: Bytes,
        allocated: Bytes,
        largest_free: Bytes,
        free_blocks: Vec<FreeBlock>,
    },
    /// Rule *memory*: CPU usage above the optional CPU capacity.
    CpuMemoryExceeded {
        at: Ticks,
        used: Bytes,
        capacity: Bytes,
    },
    /// Rule *completeness*: the op at `position` of the device's order is not the expected one.
    OutOfOrder {
        device: Device,
        position: usize,
        expected: OpId,
        found: OpId,
        event: EventId,
    },
    /// Rule *completeness*: the order stops short; `expected` never runs.
    MissingOp {
        device: Device,
        position: usize,
        expected: OpId,
    },
    /// Rule *completeness*: more ops run than the order has.
    ExtraOp {
        device: Device,
        position: usize,
        found: OpId,
        event: EventId,
    },
    /// Rule *completeness* (free order): a required op never runs.
    NeverRan { op: OpId },
    /// Rule *completeness* (cyclic): the state at the end of the period differs
    /// from the state at its start.
    StateMismatch {
        tensor: TensorId,
        start_gpu: bool,
        start_cpu: bool,
        end_gpu: bool,
        end_cpu: bool,
    },
    /// Rule *completeness* (cyclic): a transfer crossing the boundary reads a
    /// current value in one period and a stale one in the next: no steady state.
    NotSteady { event: EventId, tensor: TensorId },
    /// Rule *groups* (R11): no member of the group runs (in the schedule, or
    /// in a period).
    GroupNeverRan { group: GroupId },
    /// Rule *groups* (R11): an exactly-once group runs twice (e.g. both the GPU
    /// and the CPU Adam step of one parameter: a double update). `first` and
    /// `second` are its first two runs in start order.
    GroupRanTwice {
        group: GroupId,
        first: EventId,
        second: EventId,
    },
    /// Rule *slots* (R12): the `position`-th GPU run of a slotted group's
    /// member (`event`, an op of another group) should fill a slot of
    /// `expected`.
    SlotOutOfOrder {
        position: usize,
        expected: GroupId,
        found: OpId,
        event: EventId,
    },
    /// Rule *slots* (R12): a GPU run of a slotted group's member after every
    /// slot to be filled on the GPU is filled (a slot takes one run).
    SlotExtra {
        position: usize,
        found: OpId,
        event: EventId,
    },
    /// Rule *precedence* (R13): `event`, a run of `op` starting at `at`, starts
    /// before the latest earlier run of its predecessor `after` ends:
    /// `pred_event` ending at `pred_end` (shifted by whole periods into the
    /// timeline of `at`), or no run of `after` started before it (`None`).
    StartedBeforePredecessor {
        event: EventId,
        at: Ticks,
        op: OpId,
        after: OpId,
        pred_event: Option<EventId>,
        pred_end: Option<Ticks>,
    },
}

/// Something legal but worth knowing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "warning", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Warning {
    /// An offload whose CPU copy was already current (the discount rule makes it
    /// unnecessary): it costs `bytes` of link traffic and `ticks` of channel time.
    RedundantOffload {
        event: EventId,
        tensor: TensorId,
        bytes: Bytes,
        ticks: Ticks,
    },
}

impl Violation {
    /// The rule's name, as in `models/MODEL.md`.
    pub fn rule(&self) -> &'static str {
        use Violation::*;
        match self {
            ComputeOverlap { .. } | ChannelOverlap { .. } => "resources",
            WrongDuration { .. } => "duration",
            TransferTooFast { .. } => "bandwidth",
            NotTransferable { .. }
            | InputNotResident { .. }
            | InputStale { .. }
            | CpuInputMissing { .. }
            | ProducesResident { .. }
            | OffloadAbsent { .. }
            | PrefetchWithoutCpuCopy { .. }
            | PrefetchResident { .. }
            | DeleteAbsent { .. } => "dependencies",
            DataLoss { .. } => "no-data-loss",
            ReleasedWhileInUse { .. } => "released-while-in-use",
            MemoryExceeded { .. }
            | VaMemoryExceeded { .. }
            | AllocatorOutOfMemory { .. }
            | CpuMemoryExceeded { .. } => "memory",
            OutsidePeriod { .. }
            | OutOfOrder { .. }
            | MissingOp { .. }
            | ExtraOp { .. }
            | NeverRan { .. }
            | StateMismatch { .. } => "completeness",
            NotSteady { .. } => "steady-state",
            GroupNeverRan { .. } | GroupRanTwice { .. } => "groups",
            SlotOutOfOrder { .. } | SlotExtra { .. } => "slots",
            StartedBeforePredecessor { .. } => "precedence",
        }
    }

    /// The variant's name in snake case (the `rule` tag of the JSON form).
    pub fn kind(&self) -> String {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(m)) => m
                .get("rule")
                .and_then(|v| v.as_str())
                .unwrap_or("?")
                .to_string(),
            _ => "?".into(),
        }
    }

    /// When it happens, if it happens at an instant: `None` for the rules that
    /// judge the schedule as a whole (bandwidth, order, groups, slots, the
    /// cyclic boundary and steady state).
    pub fn instant(&self) -> Option<Ticks> {
        use Violation::*;
        match self {
            ComputeOverlap { second_start, .. } | ChannelOverlap { second_start, .. } => {
                Some(*second_start)
            }
            WrongDuration { start, .. } | OutsidePeriod { start, .. } => Some(*start),
            NotTransferable { at, .. }
            | InputNotResident { at, .. }
            | InputStale { at, .. }
            | CpuInputMissing { at, .. }
            | ProducesResident { at, .. }
            | OffloadAbsent { at, .. }
            | PrefetchWithoutCpuCopy { at, .. }
            | PrefetchResident { at, .. }
            | DeleteAbsent { at, .. }
            | DataLoss { at, .. }
            | ReleasedWhileInUse { at, .. }
            | MemoryExceeded { at, .. }
            | VaMemoryExceeded { at, .. }
            | AllocatorOutOfMemory { at, .. }
            | CpuMemoryExceeded { at, .. }
            | StartedBeforePredecessor { at, .. } => Some(*at),
            TransferTooFast { .. }
            | OutOfOrder { .. }
            | MissingOp { .. }
            | ExtraOp { .. }
            | NeverRan { .. }
            | StateMismatch { .. }
            | NotSteady { .. }
            | GroupNeverRan { .. }
            | GroupRanTwice { .. }
            | SlotOutOfOrder { .. }
            | SlotExtra { .. } => None,
        }
    }

    /// When it happens, for sorting: structural violations, which have no
    /// instant ([`Violation::instant`]), sort first (as -1; never printed).
    pub fn at(&self) -> Ticks {
        self.instant().unwrap_or(Ticks(-1))
    }

    /// Re-check this witness's facts directly against the inputs, without the
    /// replay. Facts that only a replay can establish (residency, versions) are
    /// confirmed as far as the events themselves go: the event exists, is of the
    /// right kind, and involves the named op or tensor at the named time
    /// (`check/confirm.rs`).
    pub fn confirm(&self, inst: &Instance, s: &Schedule) -> bool {
        super::confirm::confirm(self, inst, s)
    }

    /// A sentence for people, with names from the instance.
    pub fn describe(&self, inst: &Instance) -> String {
        use Violation::*;
        let t = |x: &TensorId| inst.tensor(*x).name.clone();
        let o = |x: &OpId| inst.op(*x).name.clone();
        let v = |x: &Option<Version>| x.map_or("none".to_string(), |v| format!("v{v}"));
        let g = |x: &GroupId| inst.groups[x.ix()].name.clone();
        match self {
            ComputeOverlap { device, first, second, first_end, second_start } => format!(
                "{device:?} stream: events[{}] runs until {first_end} but events[{}] starts at {second_start}",
                first.0, second.0
            ),
            ChannelOverlap { channel, first, second, first_end, second_start } => format!(
                "channel {}: events[{}] transfers until {first_end} but events[{}] starts at {second_start}",
                channel.name(), first.0, second.0
            ),
            WrongDuration { event, op, start, end, duration } => format!(
                "events[{}]: {} runs [{start}, {end}) = {} ticks, its duration is {duration}",
                event.0, o(op), end.0 - start.0
            ),
            TransferTooFast { event, tensor, bytes, took, needs_at_least, bandwidth } => format!(
                "events[{}]: {} ({bytes} B) moved in {took} ticks; at β = {bandwidth} it needs at least {needs_at_least}",
                event.0, t(tensor)
            ),
            OutsidePeriod { event, start, end, period } => format!(
                "events[{}]: [{start}, {end}) does not fit the period {period}", event.0
            ),
            NotTransferable { event, at, tensor } => format!("events[{}] at {at}: {} may not be transferred", event.0, t(tensor)),
            InputNotResident { event, at, op, tensor, ready_at } => format!(
                "events[{}] at {at}: {} needs {} on the GPU, which is not there{}",
                event.0, o(op), t(tensor),
                ready_at.map_or(String::new(), |r| format!(" (ready only at {r})"))
            ),
            InputStale { event, at, op, tensor, held, latest } => format!(
                "events[{}] at {at}: {} reads {} but the GPU holds {} and the latest is v{latest}",
                event.0, o(op), t(tensor), v(held)
            ),
            CpuInputMissing { event, at, op, tensor, held, latest } => format!(
                "events[{}] at {at}: CPU op {} needs {} v{latest} on the CPU, which holds {}",
                event.0, o(op), t(tensor), v(held)
            ),
            ProducesResident { event, at, op, tensor } => format!(
                "events[{}] at {at}: {} produces {} which still has a GPU copy", event.0, o(op), t(tensor)
            ),
            OffloadAbsent { event, at, tensor } => format!("events[{}] at {at}: offload of {} which is not on the GPU", event.0, t(tensor)),
            PrefetchWithoutCpuCopy { event, at, tensor } => format!("events[{}] at {at}: prefetch of {} which has no CPU copy", event.0, t(tensor)),
            PrefetchResident { event, at, tensor } => format!("events[{}] at {at}: prefetch of {} which is already on the GPU", event.0, t(tensor)),
            DeleteAbsent { event, at, tensor } => format!("events[{}] at {at}: delete of {} which is not on the GPU", event.0, t(tensor)),
            ReleasedWhileInUse { event, at, tensor, holder, holder_event, from, until } => {
                let who = match holder {
                    Holder::Op(h) => o(h),
                    Holder::Transfer(Direction::Offload) => format!("the offload of {}", t(tensor)),
                    Holder::Transfer(Direction::Prefetch) => format!("the prefetch of {}", t(tensor)),
                };
                let which = holder_event.map_or(String::new(), |h| format!(" (events[{}])", h.0));
                format!(
                    "events[{}] at {at}: {} released while in use by {who}{which} over [{from}, {until})",
                    event.0, t(tensor)
                )
            }
            DataLoss { event, at, tensor, gpu_version, cpu_version, latest } => format!(
                "events[{}] at {at}: GPU copy of {} ({}) released while still needed; latest is v{latest}, CPU holds {}",
                event.0, t(tensor), v(gpu_version), v(cpu_version)
            ),
            MemoryExceeded { at, used, capacity, resident, running } => format!(
                "at {at}: GPU memory {used} B > capacity {capacity} B (copies: {}; running: {})",
                copies_witness(inst, resident),
                capped(running.iter().map(|e| format!("events[{}]", e.0)).collect(), String::new())
            ),
            VaMemoryExceeded { at, used, occupied, chunk, capacity, resident, running } => format!(
                "at {at}: GPU memory in chunks of {} occupies {occupied} B > capacity {capacity} B (exact bytes {used} B; copies: {}; running: {})",
                chunk.human(),
                copies_witness(inst, resident),
                capped(running.iter().map(|e| format!("events[{}]", e.0)).collect(), String::new())
            ),
            AllocatorOutOfMemory { .. } => allocator_witness(self, inst),
            CpuMemoryExceeded { at, used, capacity } => format!("at {at}: CPU memory {used} B > capacity {capacity} B"),
            OutOfOrder { device, position, expected, found, event } => format!(
                "{device:?} order position {position}: expected {}, found {} (events[{}])", o(expected), o(found), event.0
            ),
            MissingOp { device, position, expected } => format!("{device:?} order position {position}: {} never runs", o(expected)),
            ExtraOp { device, position, found, event } => format!(
                "{device:?} order position {position}: {} (events[{}]) runs beyond the order", o(found), event.0
            ),
            NeverRan { op } => format!("{} never runs", o(op)),
            StateMismatch { tensor, start_gpu, start_cpu, end_gpu, end_cpu } => format!(
                "{}: at the period start gpu={start_gpu} cpu-current={start_cpu}, at its end gpu={end_gpu} cpu-current={end_cpu}",
                t(tensor)
            ),
            NotSteady { event, tensor } => format!(
                "events[{}]: the transfer of {} crossing the period boundary reads a different version in successive periods",
                event.0, t(tensor)
            ),
            GroupNeverRan { group } => format!("group {}: none of its members runs", g(group)),
            GroupRanTwice { group, first, second } => format!(
                "group {} runs exactly once, but runs in events[{}] and again in events[{}]",
                g(group), first.0, second.0
            ),
            SlotOutOfOrder { position, expected, found, event } => format!(
                "GPU slot {position}: expected a member of group {}, found {} (events[{}]) of group {}",
                g(expected), o(found), event.0,
                inst.group_of(*found).map_or("-".to_string(), |x| g(&x))
            ),
            SlotExtra { position, found, event } => format!(
                "GPU slot {position}: {} (events[{}]) runs after every GPU slot is filled",
                o(found), event.0
            ),
            StartedBeforePredecessor { event, at, op, after, pred_event, pred_end } => match (pred_event, pred_end) {
                (Some(p), Some(end)) => format!(
                    "events[{}] at {at}: {} starts before its predecessor {} (events[{}]) ends at {end}",
                    event.0, o(op), o(after), p.0
                ),
                _ => format!(
                    "events[{}] at {at}: {} starts before any run of its predecessor {}",
                    event.0, o(op), o(after)
                ),
            },
        }
    }
}

/// How many entries of a witness list a sentence names; the rest are counted
/// (the typed witness, and so the `--json` verdict, keeps every entry).
pub const WITNESS_LIST_CAP: usize = 8;

/// A witness list for a sentence: at most [`WITNESS_LIST_CAP`] entries, then
/// "and N more" with `rest` (a figure for the whole list) in parentheses.
fn capped(items: Vec<String>, rest: String) -> String {
    if items.is_empty() {
        return "none".into();
    }
    let n = items.len();
    if n <= WITNESS_LIST_CAP {
        return items.join(", ");
    }
    let more = if rest.is_empty() {
        format!("and {} more", n - WITNESS_LIST_CAP)
    } else {
        format!("and {} more ({rest})", n - WITNESS_LIST_CAP)
    };
    let mut shown = items[..WITNESS_LIST_CAP].to_vec();
    shown.push(more);
    shown.join(", ")
}

/// The resident copies of a memory witness: the largest first (ties in id
/// order), each with its size, capped; beyond the cap, the count and the bytes
/// of all of them.
fn copies_witness(inst: &Instance, resident: &[TensorId]) -> String {
    let size = |t: &TensorId| inst.tensor(*t).size.0;
    let mut by_size: Vec<TensorId> = resident.to_vec();
    by_size.sort_by_key(|t| (std::cmp::Reverse(size(t)), t.0));
    let total: u128 = resident.iter().map(|t| size(t) as u128).sum();
    let items = by_size
        .iter()
        .map(|t| {
            format!(
                "{} ({})",
                inst.tensor(*t).name,
                human_bytes(size(t) as u128)
            )
        })
        .collect();
    capped(
        items,
        format!("{} copies, {} in all", resident.len(), human_bytes(total)),
    )
}

/// The sentence of an `allocator_out_of_memory` witness: the request, the
/// allocator's counters and the free blocks, largest first, capped.
fn allocator_witness(v: &Violation, inst: &Instance) -> String {
    let Violation::AllocatorOutOfMemory {
        event,
        at,
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
    } = v
    else {
        return String::new();
    };
    let who = match (event, tensor, op) {
        (None, Some(t), _) => format!("the initial copy of {}", inst.tensor(*t).name),
        (Some(e), Some(t), _) => format!(
            "events[{}] at {at}: the copy of {}",
            e.0,
            inst.tensor(*t).name
        ),
        (Some(e), None, Some(o)) => format!(
            "events[{}] at {at}: the scratch of {}",
            e.0,
            inst.op(*o).name
        ),
        _ => format!("at {at}: a request"),
    };
    let total: u128 = free_blocks.iter().map(|b| b.size.0 as u128).sum();
    let blocks = free_blocks
        .iter()
        .map(|b| format!("{} at {:#x}", b.size.human(), b.addr))
        .collect();
    format!(
        "{who}: the caching allocator cannot serve {} (rounded {}, {} pool): no free block fits and a new segment of {} would reserve more than {} (reserved {}, allocated {}, free {}; largest hole {}; free blocks: {})",
        request.human(),
        rounded.human(),
        match pool { Pool::Small => "small", Pool::Large => "large" },
        segment.human(),
        capacity.human(),
        reserved.human(),
        allocated.human(),
        human_bytes(total),
        largest_free.human(),
        capped(blocks, format!("{} blocks, {} in all", free_blocks.len(), human_bytes(total)))
    )
}

/// Bytes through the one byte formatter ([`Bytes::human`]); a sum beyond
/// `u64` (never a real GPU) in plain bytes.
fn human_bytes(b: u128) -> String {
    u64::try_from(b).map_or_else(|_| format!("{b} B"), |b| Bytes(b).human())
}

impl Warning {
    pub fn describe(&self, inst: &Instance) -> String {
        match self {
            Warning::RedundantOffload { event, tensor, bytes, ticks } => format!(
                "events[{}]: offload of {} is redundant (its CPU copy is already current): {bytes} B, {ticks} ticks of link time",
                event.0,
                inst.tensor(*tensor).name
            ),
        }
    }
}
