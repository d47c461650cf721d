//! The trace-only audit: the rules a trace is held to without a mapping.
//!
//! Owns: [`audit_trace`] and its rules (device memory against a budget, copy
//! bandwidth against the declared link, same-direction copy overlap), the
//! per-GPU summaries (compute busy and idle, idle while copies are in flight,
//! per-direction bytes and overlap), the notes (zero-duration events, same-stream
//! overlaps, memory events out of order, inferred baselines, reserved totals
//! missing), the device-memory timeline ([`memory_timeline`], with the
//! allocator's reserved total beside it), and the sentences of [`Finding`] and
//! [`Note`].
//! Must not import: the mapped audit (`super::mapped`), the mapping, the checker
//! (nothing here reconstructs a schedule), solvers, heuristics, bounds.

use super::Spot;
use crate::model::Duplex;
use crate::trace::intervals::Intervals;
use crate::trace::{CopyKind, GpuEvent, GpuKind, Nanos, Trace, CUDA_DEVICE_TYPE};
use crate::units::Bytes;
use serde::Serialize;
use std::collections::BTreeSet;

/// How many witnesses of one rule are kept (the count is always exact).
pub const MAX_WITNESSES: usize = 50;

/// A link rate as an exact fraction: `bytes` per `ns` nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LinkRate {
    pub bytes: u128,
    pub ns: u128,
}

impl LinkRate {
    /// From decimal GB/s (10^9 B/s = 1 B/ns), exactly: `"12.5"` → 125/10 B/ns.
    pub fn from_gbps(text: &str) -> Result<LinkRate, crate::trace::time::NumberError> {
        let (n, d) = crate::trace::time::decimal_fraction(text)?;
        if n == 0 {
            return Err(crate::trace::time::NumberError::NotANumber(format!(
                "{text} (must be > 0)"
            )));
        }
        Ok(LinkRate { bytes: n, ns: d })
    }
    /// The model's β (bytes per tick) at `tick_ns` nanoseconds per tick.
    pub fn from_model(bw: crate::units::Bandwidth, tick_ns: i64) -> LinkRate {
        LinkRate {
            bytes: bw.bytes as u128,
            ns: bw.ticks as u128 * tick_ns as u128,
        }
    }
    /// Least whole nanoseconds `bytes` need: ⌈bytes·ns/rate⌉.
    pub fn min_ns(&self, bytes: u64) -> u128 {
        (bytes as u128 * self.ns).div_ceil(self.bytes)
    }
}

/// Trace-only options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Device memory budget per GPU.
    pub budget: Option<Bytes>,
    /// Declared host↔device link rate.
    pub link: Option<LinkRate>,
    /// Full duplex: one copy channel per direction; half: one for both.
    pub duplex: Duplex,
    /// Audit only this GPU (default: every GPU in the trace).
    pub device: Option<i64>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            budget: None,
            link: None,
            duplex: Duplex::FullDuplex,
            device: None,
        }
    }
}

/// A copy as a witness.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CopyRef {
    pub kind: CopyKind,
    pub stream: i64,
    pub start: Nanos,
    pub end: Nanos,
    pub bytes: u64,
}

fn copy_ref(e: &GpuEvent) -> CopyRef {
    let kind = match e.kind {
        GpuKind::Memcpy(k) => k,
        _ => CopyKind::Other,
    };
    CopyRef {
        kind,
        stream: e.stream,
        start: e.start,
        end: e.end,
        bytes: e.bytes.unwrap_or(0),
    }
}

/// A broken trace-only rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Finding {
    /// Device memory above the budget: the peak, when it occurs, and the first
    /// instant above the budget.
    MemoryOverBudget {
        device: i64,
        budget: Bytes,
        peak: Bytes,
        peak_at: Nanos,
        first_over_at: Nanos,
        time_over: Nanos,
    },
    /// A copy faster than the declared link even allowing one timestamp step:
    /// impossible, so the attribution or the declaration is wrong.
    CopyFasterThanLink {
        device: i64,
        copy: CopyRef,
        needs_at_least: Nanos,
        resolution: Nanos,
    },
    /// Two copies on one channel at once (different streams), when the model has
    /// one channel per direction (full duplex) or one in all (half duplex).
    CopyOverlap {
        device: i64,
        first: CopyRef,
        second: CopyRef,
        overlap: Nanos,
    },
}

impl CopyRef {
    /// `the HtoD copy of 4 B on stream 7 over [1000 ns, 3000 ns)`.
    fn describe(&self) -> String {
        format!(
            "the {} copy of {} B on stream {} over [{}, {})",
            self.kind.label(),
            self.bytes,
            self.stream,
            self.start,
            self.end
        )
    }
}

impl Finding {
    pub fn rule(&self) -> &'static str {
        match self {
            Finding::MemoryOverBudget { .. } => "memory-budget",
            Finding::CopyFasterThanLink { .. } => "link-bandwidth",
            Finding::CopyOverlap { .. } => "copy-channel",
        }
    }

    /// The GPU it happened on.
    pub fn device(&self) -> i64 {
        match self {
            Finding::MemoryOverBudget { device, .. }
            | Finding::CopyFasterThanLink { device, .. }
            | Finding::CopyOverlap { device, .. } => *device,
        }
    }

    /// A sentence for people, with the facts to re-check it by hand in the trace.
    pub fn describe(&self) -> String {
        match self {
            Finding::MemoryOverBudget {
                device,
                budget,
                peak,
                peak_at,
                first_over_at,
                time_over,
            } => format!(
                "GPU {device}: device memory reaches {peak} B at {peak_at}, above the budget of {budget} B; first above it at {first_over_at}, above it for {time_over} in all"
            ),
            Finding::CopyFasterThanLink {
                device,
                copy,
                needs_at_least,
                resolution,
            } => format!(
                "GPU {device}: {} takes {}, but the declared link needs at least {needs_at_least} to move {} B: shorter by more than one timestamp step ({resolution})",
                copy.describe(),
                Nanos(copy.end.0 - copy.start.0),
                copy.bytes
            ),
            Finding::CopyOverlap {
                device,
                first,
                second,
                overlap,
            } => format!(
                "GPU {device}: {} starts while {} is in flight, on {} ({overlap} together)",
                second.describe(),
                first.describe(),
                if first.kind == second.kind {
                    format!("the one {} channel", first.kind.label())
                } else {
                    "the one channel of a half-duplex link".to_string()
                }
            ),
        }
    }

    /// The finding as printed and drawn: `[rule] sentence`.
    pub fn line(&self) -> String {
        format!("[{}] {}", self.rule(), self.describe())
    }

    /// Where it happened: on the memory curve, or on the lane of the copy.
    pub fn spot(&self) -> Spot {
        match self {
            Finding::MemoryOverBudget {
                device,
                first_over_at,
                ..
            } => Spot::Memory {
                device: Some(*device),
                at: *first_over_at,
            },
            Finding::CopyFasterThanLink { device, copy, .. } => Spot::Copy {
                device: Some(*device),
                kind: copy.kind,
                at: copy.start,
            },
            Finding::CopyOverlap { device, second, .. } => Spot::Copy {
                device: Some(*device),
                kind: second.kind,
                at: second.start,
            },
        }
    }
}

/// Not errors: facts of real traces worth knowing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "note", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Note {
    ZeroDuration {
        what: &'static str,
        count: u64,
    },
    /// Activities on one stream that overlap (profiler timestamp jitter).
    SameStreamOverlap {
        device: i64,
        stream: i64,
        count: u64,
        largest: Nanos,
    },
    /// Copies faster than the link only within one timestamp step.
    CopyWithinResolution {
        count: u64,
    },
    /// Zero-duration copies are left out of the bandwidth rule.
    ZeroDurationCopiesSkipped {
        count: u64,
    },
    /// `[memory]` events out of time order in the file (sorted before use).
    MemoryOutOfOrder {
        count: u64,
    },
    /// The running sum disagrees with the allocator's `Total Allocated`.
    TotalAllocatedMismatch {
        device: i64,
        count: u64,
    },
    /// No `Total Allocated`: the baseline (memory held before the window) is the
    /// least that keeps the running sum non-negative, so the peak is a lower bound.
    BaselineInferred {
        device: i64,
        baseline: Bytes,
    },
    SubnanosecondRounded {
        count: u64,
    },
    /// A GPU with allocator events none of which carries `Total Reserved`: the
    /// memory the allocator held beyond its tensors (fragmentation, cache) is
    /// not in the trace.
    ReservedMissing {
        device: i64,
        events: u64,
    },
    /// Some allocator events of a GPU carry `Total Reserved`, some do not (the
    /// last value is carried over those).
    ReservedPartial {
        device: i64,
        missing: u64,
        events: u64,
    },
    /// Instants at which `Total Reserved` is below the bytes allocated (a
    /// reserved total the allocated one cannot fit in; with an inferred baseline
    /// the allocated side is a lower bound already).
    ReservedBelowAllocated {
        device: i64,
        instants: u64,
        first_at: Nanos,
    },
    /// Allocator events without `Addr`: frees cannot be paired with their
    /// allocations, so the caching model is not replayed on this GPU.
    ReplayWithoutAddr {
        device: i64,
        missing: u64,
        events: u64,
    },
}

impl Note {
    /// A sentence for people.
    pub fn describe(&self) -> String {
        match self {
            Note::ZeroDuration { what, count } => {
                format!("{count} {what} event(s) of zero duration")
            }
            Note::SameStreamOverlap {
                device,
                stream,
                count,
                largest,
            } => format!(
                "GPU {device} stream {stream}: {count} activity(ies) start before an earlier one on the same stream ends (profiler timestamp jitter; the largest overlap is {largest})"
            ),
            Note::CopyWithinResolution { count } => format!(
                "{count} copy(ies) faster than the declared link only within one timestamp step: not counted as violations"
            ),
            Note::ZeroDurationCopiesSkipped { count } => format!(
                "{count} copy(ies) of some bytes with zero duration: left out of the link-bandwidth rule"
            ),
            Note::MemoryOutOfOrder { count } => format!(
                "{count} [memory] event(s) out of time order in the file (sorted by time before use)"
            ),
            Note::TotalAllocatedMismatch { device, count } => format!(
                "GPU {device}: at {count} [memory] event(s) the running sum of the allocations disagrees with the allocator's Total Allocated (the running sum is used)"
            ),
            Note::BaselineInferred { device, baseline } => format!(
                "GPU {device}: no Total Allocated, so the memory held before the first event is taken as {baseline} B, the least that keeps the running sum non-negative: the peak is a lower bound"
            ),
            Note::SubnanosecondRounded { count } => format!(
                "{count} timestamp(s) with sub-nanosecond digits, rounded down to the nanosecond"
            ),
            Note::ReservedMissing { device, events } => format!(
                "GPU {device}: none of its {events} [memory] event(s) carries Total Reserved, so the memory the allocator reserved beyond its allocations (cache, fragmentation) is unknown"
            ),
            Note::ReservedPartial { device, missing, events } => format!(
                "GPU {device}: {missing} of its {events} [memory] event(s) carry no Total Reserved (the previous value is carried over them)"
            ),
            Note::ReplayWithoutAddr { device, missing, events } => format!(
                "GPU {device}: {missing} of its {events} [memory] event(s) carry no Addr, so frees cannot be paired with allocations: the caching allocator model is not replayed"
            ),
            Note::ReservedBelowAllocated { device, instants, first_at } => format!(
                "GPU {device}: at {instants} instant(s), first at {first_at}, Total Reserved is below the bytes allocated (the reserved-minus-allocated figures count those as negative)"
            ),
        }
    }
}

/// Bytes, time and overlap of one copy direction on one GPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DirectionSummary {
    pub kind: CopyKind,
    pub copies: u64,
    pub bytes: u128,
    pub zero_duration: u64,
    /// Union of the copies' intervals.
    pub busy: Nanos,
    /// bytes / busy, in GB/s (= B/ns), to three decimals (display only).
    pub achieved_gbps: Option<String>,
    /// Copy time during which some kernel ran.
    pub overlapped_with_compute: Nanos,
    /// overlapped / busy, in percent to one decimal (display only).
    pub overlapped_percent: Option<String>,
}

/// The device-memory timeline of one GPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemorySummary {
    pub device: i64,
    pub events: u64,
    /// Memory held before the first event.
    pub baseline: Bytes,
    /// True when read from `Total Allocated`; false when inferred (a lower bound).
    pub baseline_known: bool,
    pub peak: Bytes,
    pub peak_at: Nanos,
}

/// Trace-only results for one GPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeviceAudit {
    pub device: i64,
    pub kernels: u64,
    pub streams_with_kernels: Vec<i64>,
    /// Union of kernel intervals.
    pub compute_busy: Nanos,
    /// First kernel start to last kernel end, less the busy time.
    pub compute_idle: Nanos,
    /// Time some host↔device copy is in flight and no kernel runs.
    pub idle_while_copying: Nanos,
    pub directions: Vec<DirectionSummary>,
    pub memory: Option<MemorySummary>,
    /// Reserved against allocated memory, where the trace records `Total Reserved`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved: Option<super::reserved::ReservedSummary>,
    /// The trace's allocation sequence replayed through the `caching` model,
    /// where its events carry `Addr`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caching_replay: Option<super::replay::CachingReplay>,
}

/// Everything the trace-only audit found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceAudit {
    pub file: String,
    pub format: crate::trace::Format,
    pub total_events: u64,
    pub resolution: Nanos,
    pub devices: Vec<DeviceAudit>,
    /// Per rule: how many, and the first [`MAX_WITNESSES`] witnesses.
    pub findings: Vec<Finding>,
    pub finding_counts: Vec<(String, u64)>,
    pub notes: Vec<Note>,
}

impl TraceAudit {
    pub fn violations(&self) -> u64 {
        self.finding_counts.iter().map(|(_, n)| n).sum()
    }
}

fn ns(v: i128) -> Nanos {
    Nanos(v.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
}

/// `num/den` as a decimal with `digits` decimals (display only; exact input).
pub fn ratio_text(num: u128, den: u128, digits: u32) -> Option<String> {
    if den == 0 {
        return None;
    }
    let scale = 10u128.pow(digits);
    let v = num.checked_mul(scale)? / den;
    Some(if digits == 0 {
        format!("{v}")
    } else {
        format!("{}.{:0w$}", v / scale, v % scale, w = digits as usize)
    })
}

/// What the trace-only rules found so far: findings (per rule, the first
/// [`MAX_WITNESSES`] and an exact count), notes and the tallies that become notes.
#[derive(Default)]
struct Collector {
    findings: Vec<Finding>,
    counts: std::collections::BTreeMap<&'static str, u64>,
    notes: Vec<Note>,
    /// Copies faster than the link only within one timestamp step.
    within_res: u64,
    /// Zero-duration copies of some bytes, left out of the bandwidth rule.
    zero_copies: u64,
}

impl Collector {
    fn push(&mut self, f: Finding) {
        let c = self.counts.entry(f.rule()).or_insert(0);
        *c += 1;
        if *c as usize <= MAX_WITNESSES {
            self.findings.push(f);
        }
    }
}

/// Run the trace-only rules.
pub fn audit_trace(trace: &Trace, opts: &Options) -> TraceAudit {
    let mut col = Collector {
        notes: trace_notes(trace),
        ..Collector::default()
    };
    let mut devices: BTreeSet<i64> = trace.gpu.iter().map(|g| g.device).collect();
    devices.extend(
        trace
            .memory
            .iter()
            .filter(|m| m.device_type == CUDA_DEVICE_TYPE)
            .map(|m| m.device),
    );
    if let Some(d) = opts.device {
        devices.retain(|x| *x == d);
    }
    let out_devices = devices
        .into_iter()
        .map(|dev| audit_device(trace, opts, dev, &mut col))
        .collect();
    if col.within_res > 0 {
        col.notes.push(Note::CopyWithinResolution {
            count: col.within_res,
        });
    }
    if col.zero_copies > 0 {
        col.notes.push(Note::ZeroDurationCopiesSkipped {
            count: col.zero_copies,
        });
    }
    TraceAudit {
        file: trace.file.clone(),
        format: trace.format,
        total_events: trace.total_events,
        resolution: trace.resolution,
        devices: out_devices,
        findings: col.findings,
        finding_counts: col
            .counts
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        notes: col.notes,
    }
}

/// Notes on the whole trace: zero-duration activities by kind, memory events
/// out of order, sub-nanosecond times rounded.
fn trace_notes(trace: &Trace) -> Vec<Note> {
    let mut notes = Vec::new();
    let mut zero = [0u64; 3];
    for g in &trace.gpu {
        if g.start == g.end {
            zero[match g.kind {
                GpuKind::Kernel => 0,
                GpuKind::Memcpy(_) => 1,
                GpuKind::Memset => 2,
            }] += 1;
        }
    }
    for (what, n) in [
        ("kernel", zero[0]),
        ("memcpy", zero[1]),
        ("memset", zero[2]),
    ] {
        if n > 0 {
            notes.push(Note::ZeroDuration { what, count: n });
        }
    }
    let zero_runtime = trace.runtime.iter().filter(|r| r.start == r.end).count() as u64;
    if zero_runtime > 0 {
        notes.push(Note::ZeroDuration {
            what: "runtime call",
            count: zero_runtime,
        });
    }
    if trace.memory_out_of_order > 0 {
        notes.push(Note::MemoryOutOfOrder {
            count: trace.memory_out_of_order,
        });
    }
    if trace.subnanosecond_rounded > 0 {
        notes.push(Note::SubnanosecondRounded {
            count: trace.subnanosecond_rounded,
        });
    }
    notes
}

/// The trace-only rules on one GPU.
fn audit_device(trace: &Trace, opts: &Options, dev: i64, col: &mut Collector) -> DeviceAudit {
    let gpu: Vec<&GpuEvent> = trace.gpu.iter().filter(|g| g.device == dev).collect();
    let kernels = Intervals::union_of(
        gpu.iter()
            .filter(|g| g.kind == GpuKind::Kernel)
            .map(|g| (g.start, g.end)),
    );
    let n_kernels = gpu.iter().filter(|g| g.kind == GpuKind::Kernel).count() as u64;
    let streams: BTreeSet<i64> = gpu
        .iter()
        .filter(|g| g.kind == GpuKind::Kernel)
        .map(|g| g.stream)
        .collect();
    let compute_busy = kernels.total();
    let compute_idle = kernels
        .span()
        .map(|(a, b)| (b.0 as i128 - a.0 as i128) - compute_busy)
        .unwrap_or(0);
    same_stream_notes(dev, &gpu, &mut col.notes);

    // Copies: per-direction summaries, link bandwidth, channel overlaps.
    let copies: Vec<&GpuEvent> = gpu
        .iter()
        .copied()
        .filter(|g| matches!(g.kind, GpuKind::Memcpy(_)))
        .collect();
    let directions = direction_summaries(&copies, &kernels);
    let link_copies: Vec<&GpuEvent> = copies
        .iter()
        .copied()
        .filter(|c| matches!(c.kind, GpuKind::Memcpy(k) if k.on_link()))
        .collect();
    let in_flight = Intervals::union_of(link_copies.iter().map(|c| (c.start, c.end)));
    let idle_while_copying = in_flight.minus(&kernels);
    if let Some(link) = opts.link {
        link_rule(link, trace.resolution, dev, &link_copies, col);
    }
    channel_rule(opts.duplex, dev, &link_copies, col);
    let timeline = memory_timeline(trace, dev);
    let memory = timeline.as_ref().map(|tl| memory_rule(tl, opts, dev, col));
    let reserved = timeline.as_ref().and_then(|tl| {
        let (summary, notes) = super::reserved::reserved_against_allocated(tl, dev);
        col.notes.extend(notes);
        summary
    });
    let caching_replay = timeline.as_ref().and_then(|tl| {
        let (replay, notes) = super::replay::replay_caching(trace, tl, dev);
        col.notes.extend(notes);
        replay
    });
    DeviceAudit {
        device: dev,
        kernels: n_kernels,
        streams_with_kernels: streams.into_iter().collect(),
        compute_busy: ns(compute_busy),
        compute_idle: ns(compute_idle),
        idle_while_copying: ns(idle_while_copying),
        directions,
        memory,
        reserved,
        caching_replay,
    }
}

/// Same-stream overlaps (notes): each activity against the latest end so far on
/// its stream.
fn same_stream_notes(dev: i64, gpu: &[&GpuEvent], notes: &mut Vec<Note>) {
    let mut by_stream: std::collections::BTreeMap<i64, (i64, u64, i64)> = Default::default();
    for g in gpu {
        let e = by_stream.entry(g.stream).or_insert((i64::MIN, 0, 0));
        if g.start.0 < e.0 {
            e.1 += 1;
            e.2 = e.2.max(e.0.min(g.end.0) - g.start.0);
        }
        e.0 = e.0.max(g.end.0);
    }
    for (stream, (_, count, largest)) in by_stream {
        if count > 0 {
            notes.push(Note::SameStreamOverlap {
                device: dev,
                stream,
                count,
                largest: Nanos(largest),
            });
        }
    }
}

/// Bytes, busy time and overlap with compute of each copy kind.
fn direction_summaries(copies: &[&GpuEvent], kernels: &Intervals) -> Vec<DirectionSummary> {
    let mut kinds: BTreeSet<CopyKind> = BTreeSet::new();
    for c in copies {
        if let GpuKind::Memcpy(k) = c.kind {
            kinds.insert(k);
        }
    }
    let mut directions = Vec::new();
    for k in kinds {
        let these: Vec<&&GpuEvent> = copies
            .iter()
            .filter(|c| c.kind == GpuKind::Memcpy(k))
            .collect();
        let busy = Intervals::union_of(these.iter().map(|c| (c.start, c.end)));
        let bytes: u128 = these.iter().map(|c| c.bytes.unwrap_or(0) as u128).sum();
        let ov = busy.overlap(kernels);
        let b = busy.total();
        directions.push(DirectionSummary {
            kind: k,
            copies: these.len() as u64,
            bytes,
            zero_duration: these.iter().filter(|c| c.start == c.end).count() as u64,
            busy: ns(b),
            achieved_gbps: if b > 0 {
                ratio_text(bytes, b as u128, 3)
            } else {
                None
            },
            overlapped_with_compute: ns(ov),
            overlapped_percent: if b > 0 {
                ratio_text(ov as u128 * 100, b as u128, 1)
            } else {
                None
            },
        });
    }
    directions
}

/// The link rule: no copy faster than the declared link, allowing one
/// timestamp step (those within it are counted for a note).
fn link_rule(
    link: LinkRate,
    resolution: Nanos,
    dev: i64,
    link_copies: &[&GpuEvent],
    col: &mut Collector,
) {
    for c in link_copies {
        let bytes = c.bytes.unwrap_or(0);
        let took = (c.end.0 - c.start.0) as u128;
        if took == 0 {
            if bytes > 0 {
                col.zero_copies += 1;
            }
            continue;
        }
        let need = link.min_ns(bytes);
        if took < need {
            if took + resolution.0 as u128 >= need {
                col.within_res += 1;
            } else {
                col.push(Finding::CopyFasterThanLink {
                    device: dev,
                    copy: copy_ref(c),
                    needs_at_least: ns(need as i128),
                    resolution,
                });
            }
        }
    }
}

/// Channel overlaps: sweep each channel's copies by start, against the copy
/// with the latest end so far. Same-stream overlaps are notes (above).
fn channel_rule(duplex: Duplex, dev: i64, link_copies: &[&GpuEvent], col: &mut Collector) {
    let channels: Vec<Vec<CopyKind>> = match duplex {
        Duplex::FullDuplex => vec![vec![CopyKind::HtoD], vec![CopyKind::DtoH]],
        Duplex::HalfDuplex => vec![vec![CopyKind::HtoD, CopyKind::DtoH]],
    };
    for ch in channels {
        let mut on: Vec<&GpuEvent> = link_copies
            .iter()
            .copied()
            .filter(|c| matches!(c.kind, GpuKind::Memcpy(k) if ch.contains(&k)))
            .collect();
        on.sort_by_key(|c| (c.start, c.end));
        let mut latest: Option<&GpuEvent> = None;
        for c in on {
            if let Some(p) = latest {
                if c.start < p.end && c.start < c.end && p.stream != c.stream {
                    let overlap = Nanos(p.end.0.min(c.end.0) - c.start.0);
                    col.push(Finding::CopyOverlap {
                        device: dev,
                        first: copy_ref(p),
                        second: copy_ref(c),
                        overlap,
                    });
                }
            }
            if latest.is_none_or(|p| c.end > p.end) {
                latest = Some(c);
            }
        }
    }
}

/// Device memory of one GPU: the baseline, the peak and the budget rule, on
/// [`memory_timeline`]'s samples.
fn memory_rule(
    tl: &MemoryTimeline,
    opts: &Options,
    dev: i64,
    col: &mut Collector,
) -> MemorySummary {
    let (baseline, known) = (tl.baseline, tl.baseline_known);
    if !known {
        col.notes.push(Note::BaselineInferred {
            device: dev,
            baseline: Bytes(baseline.max(0) as u64),
        });
    }
    let mut peak = tl.samples[0];
    let mut first_over: Option<Nanos> = None;
    let mut time_over = 0i128;
    let mut over_since: Option<Nanos> = None;
    let budget = opts.budget.map(|b| b.0 as i128);
    for &(at, run) in &tl.samples[1..] {
        if run > peak.1 {
            peak = (at, run);
        }
        if let Some(b) = budget {
            if run > b {
                first_over.get_or_insert(at);
                over_since.get_or_insert(at);
            } else if let Some(s) = over_since.take() {
                time_over += (at.0 - s.0) as i128;
            }
        }
    }
    let peak = (peak.1, peak.0);
    if let (Some(s), Some(last)) = (over_since, tl.samples.last()) {
        time_over += (last.0 .0 - s.0) as i128;
    }
    if tl.mismatches > 0 {
        col.notes.push(Note::TotalAllocatedMismatch {
            device: dev,
            count: tl.mismatches,
        });
    }
    let peak_b = Bytes(peak.0.clamp(0, u64::MAX as i128) as u64);
    if let (Some(b), Some(at)) = (opts.budget, first_over) {
        col.push(Finding::MemoryOverBudget {
            device: dev,
            budget: b,
            peak: peak_b,
            peak_at: peak.1,
            first_over_at: at,
            time_over: ns(time_over),
        });
    }
    MemorySummary {
        device: dev,
        events: tl.events,
        baseline: Bytes(baseline.clamp(0, u64::MAX as i128) as u64),
        baseline_known: known,
        peak: peak_b,
        peak_at: peak.1,
    }
}

/// The device-memory timeline of one GPU from the trace's allocator events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryTimeline {
    /// Memory held before the first event.
    pub baseline: i128,
    /// True when read from `Total Allocated`; false when inferred (a lower bound).
    pub baseline_known: bool,
    /// Allocator events of this GPU.
    pub events: u64,
    /// Events whose `Total Allocated` disagrees with the running sum.
    pub mismatches: u64,
    /// (instant, bytes held): the baseline at the first event's instant, then
    /// the running sum after the last event of every instant (what the
    /// memory-budget rule measures).
    pub samples: Vec<(Nanos, i128)>,
    /// Index for index with `samples`: the allocator's `Total Reserved` after the
    /// last event of that instant that carries one, carried forward over events
    /// without; `None` for the baseline sample and before the first event that
    /// carries one.
    pub reserved: Vec<Option<u64>>,
    /// Events of this GPU without `Total Reserved`.
    pub reserved_missing: u64,
}

/// The memory timeline of GPU `dev`, or `None` without allocator events.
pub fn memory_timeline(trace: &Trace, dev: i64) -> Option<MemoryTimeline> {
    // Stable-sorted by time already.
    let mem: Vec<&crate::trace::MemoryEvent> = trace
        .memory
        .iter()
        .filter(|m| m.device_type == CUDA_DEVICE_TYPE && m.device == dev)
        .collect();
    let first = mem.first()?;
    let (baseline, known) = match first.total_allocated {
        Some(ta) => ((ta as i128) - (first.bytes as i128), true),
        None => {
            let mut run = 0i128;
            let mut lo = 0i128;
            for m in &mem {
                run += m.bytes as i128;
                lo = lo.min(run);
            }
            (-lo, false)
        }
    };
    let mut run = baseline;
    let mut samples = vec![(first.at, baseline)];
    let mut reserved = vec![None];
    let mut last_reserved = None;
    let mut mismatches = 0u64;
    for (i, m) in mem.iter().enumerate() {
        run += m.bytes as i128;
        if let Some(ta) = m.total_allocated {
            if ta as i128 != run {
                mismatches += 1;
            }
        }
        last_reserved = m.total_reserved.or(last_reserved);
        // Measure after every event of one instant.
        if mem.get(i + 1).is_none_or(|n| n.at != m.at) {
            samples.push((m.at, run));
            reserved.push(last_reserved);
        }
    }
    Some(MemoryTimeline {
        baseline,
        baseline_known: known,
        events: mem.len() as u64,
        mismatches,
        samples,
        reserved,
        reserved_missing: mem.iter().filter(|m| m.total_reserved.is_none()).count() as u64,
    })
}
