//! Audit rules over an imported trace.
//!
//! Owns: the trace-only rules (device memory against a budget, copy bandwidth
//! against the declared link, same-direction copy overlap, compute idle while
//! copies are in flight, per-direction summaries, notes on zero-duration events and
//! same-stream overlaps) and the mapped rules. The mapped rules do not restate the
//! model's rules: they reconstruct a [`Schedule`] ([`super::mapping`]) and run
//! [`crate::check::check`] on it; races and deletes without a CPU copy are the
//! checker's own witnesses, picked out and named. Computed here: "offloads never
//! prefetched" and "prefetches never used" (waste, not invalidity), and the
//! release races, which are judged on the trace's nanoseconds so that rounding to
//! ticks alone makes none ([`release_races`]).
//! Must not import: solvers, heuristics, bounds.

use super::intervals::Intervals;
use super::mapping::{reconstruct, Mapping, Reconstruction};
use super::{CopyKind, GpuEvent, GpuKind, Nanos, Trace, TraceError, CUDA_DEVICE_TYPE};
use crate::check::{check, CheckOutcome, Violation};
use crate::model::{Direction, Duplex, Instance, ReleaseRule};
use crate::schedule::{Event, EventId, Schedule};
use crate::units::{Bytes, Ticks};
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
    pub fn from_gbps(text: &str) -> Result<LinkRate, super::time::NumberError> {
        let (n, d) = super::time::decimal_fraction(text)?;
        if n == 0 {
            return Err(super::time::NumberError::NotANumber(format!(
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

impl Finding {
    pub fn rule(&self) -> &'static str {
        match self {
            Finding::MemoryOverBudget { .. } => "memory-budget",
            Finding::CopyFasterThanLink { .. } => "link-bandwidth",
            Finding::CopyOverlap { .. } => "copy-channel",
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
}

/// Everything the trace-only audit found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceAudit {
    pub file: String,
    pub format: super::Format,
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
    let memory = memory_rule(trace, opts, dev, col);
    DeviceAudit {
        device: dev,
        kernels: n_kernels,
        streams_with_kernels: streams.into_iter().collect(),
        compute_busy: ns(compute_busy),
        compute_idle: ns(compute_idle),
        idle_while_copying: ns(idle_while_copying),
        directions,
        memory,
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
    trace: &Trace,
    opts: &Options,
    dev: i64,
    col: &mut Collector,
) -> Option<MemorySummary> {
    let tl = memory_timeline(trace, dev)?;
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
    Some(MemorySummary {
        device: dev,
        events: tl.events,
        baseline: Bytes(baseline.clamp(0, u64::MAX as i128) as u64),
        baseline_known: known,
        peak: peak_b,
        peak_at: peak.1,
    })
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
}

/// The memory timeline of GPU `dev`, or `None` without allocator events.
pub fn memory_timeline(trace: &Trace, dev: i64) -> Option<MemoryTimeline> {
    // Stable-sorted by time already.
    let mem: Vec<&super::MemoryEvent> = trace
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
    let mut mismatches = 0u64;
    for (i, m) in mem.iter().enumerate() {
        run += m.bytes as i128;
        if let Some(ta) = m.total_allocated {
            if ta as i128 != run {
                mismatches += 1;
            }
        }
        // Measure after every event of one instant.
        if mem.get(i + 1).is_none_or(|n| n.at != m.at) {
            samples.push((m.at, run));
        }
    }
    Some(MemoryTimeline {
        baseline,
        baseline_known: known,
        events: mem.len() as u64,
        mismatches,
        samples,
    })
}

/// A compute op that started before the prefetch of its input finished (the
/// checker's `InputNotResident` whose pending copy is a prefetch).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Race {
    pub event: EventId,
    pub op: String,
    pub tensor: String,
    pub start: Ticks,
    pub prefetch_ends: Ticks,
}

/// A release of a tensor's GPU copy while an op or a transfer still uses it
/// (rule *released while in use*, `release: after_end`), judged on the trace's own
/// nanoseconds: the release instant r lies strictly inside the holder's interval,
/// s < r < e. The tick times are those of the reconstructed schedule, for reference.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReleaseRace {
    pub tensor: String,
    /// The releasing event: an explicit delete, or an op that consumes the tensor
    /// (at its start) or frees it (at its end).
    pub release: EventId,
    /// `delete`, `consume by OP` or `free by OP`.
    pub released_by: String,
    pub at_ns: Nanos,
    /// The event that holds the tensor: a GPU op that reads (without consuming),
    /// produces or modifies it, or a transfer of it.
    pub holder: EventId,
    /// The op's name, or `offload T` / `prefetch T`.
    pub held_by: String,
    pub held_from_ns: Nanos,
    pub held_to_ns: Nanos,
    pub at: Ticks,
    pub held_from: Ticks,
    pub held_to: Ticks,
}

/// A release of a tensor's GPU copy while no CPU copy holds its latest value and it
/// is needed later (the checker's `DataLoss`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LostDelete {
    pub event: EventId,
    pub tensor: String,
    pub at: Ticks,
}

/// Results of the mapped audit.
#[derive(Clone, Debug, Serialize)]
pub struct MappedAudit {
    pub tick_ns: i64,
    pub origin_ns: i64,
    pub matched: std::collections::BTreeMap<String, u64>,
    pub mapping_notes: Vec<super::mapping::MappingNote>,
    /// The checker's outcome on the reconstructed schedule (which it holds;
    /// serialized as its report).
    pub report: CheckOutcome,
    /// The release rule the checker and the release races follow.
    pub release_rule: ReleaseRule,
    pub races: Vec<Race>,
    /// Releases inside a holder's interval in the trace's nanoseconds (none under
    /// the relaxation `after_start`, which allows them).
    pub release_races: Vec<ReleaseRace>,
    /// The checker's `released-while-in-use` witnesses on the tick schedule that
    /// the nanoseconds do not confirm: rounding to ticks (starts down, ends up)
    /// alone put the release inside. Not races.
    pub release_rounding_only: Vec<Violation>,
    pub deletes_without_cpu_copy: Vec<LostDelete>,
    /// Offloads of a tensor that no later prefetch brings back.
    pub offloads_never_prefetched: Vec<EventId>,
    /// Prefetches that no op reads before the next prefetch of the tensor.
    pub prefetches_never_used: Vec<EventId>,
    #[serde(skip)]
    pub reconstruction: Option<Reconstruction>,
}

/// Reconstruct the schedule with `mapping` and run the checker on it.
pub fn audit_mapped(
    trace: &Trace,
    mapping: &Mapping,
    inst: &Instance,
    mapping_file: &str,
) -> Result<MappedAudit, TraceError> {
    let rec = reconstruct(trace, mapping, inst, mapping_file)?;
    let s = rec.schedule.clone();
    let report = check(inst, &s);
    let period = s.period.map(|p| p.0).unwrap_or(0);
    let same = |a: Ticks, b: Ticks| a == b || (period > 0 && (a.0 - b.0).rem_euclid(period) == 0);
    let mut races = Vec::new();
    let mut lost = Vec::new();
    for v in &report.violations {
        match v {
            Violation::InputNotResident {
                event,
                at,
                op,
                tensor,
                ready_at: Some(r),
            } => {
                let by_prefetch = s.events.iter().any(|e| matches!(e, Event::Transfer { dir: Direction::Prefetch, tensor: t, end, .. } if t == tensor && same(*end, *r)));
                if by_prefetch {
                    races.push(Race {
                        event: *event,
                        op: inst.op(*op).name.clone(),
                        tensor: inst.tensor(*tensor).name.clone(),
                        start: *at,
                        prefetch_ends: *r,
                    });
                }
            }
            Violation::DataLoss {
                event, at, tensor, ..
            } => lost.push(LostDelete {
                event: *event,
                tensor: inst.tensor(*tensor).name.clone(),
                at: *at,
            }),
            _ => {}
        }
    }
    let release_races = if inst.release == ReleaseRule::AfterEnd {
        release_races(inst, &s, &rec)
    } else {
        Vec::new()
    };
    let confirmed = |ev: &EventId, t: &crate::model::TensorId| {
        release_races
            .iter()
            .any(|r| r.release == *ev && r.tensor == inst.tensor(*t).name)
    };
    let release_rounding_only: Vec<Violation> = report
        .violations
        .iter()
        .filter(|v| {
            matches!(v, Violation::ReleasedWhileInUse { event, tensor, .. } if !confirmed(event, tensor))
        })
        .cloned()
        .collect();
    let (never_prefetched, never_used) = waste(inst, &s);
    Ok(MappedAudit {
        tick_ns: rec.tick_ns,
        origin_ns: rec.origin_ns,
        release_rule: inst.release,
        release_races,
        release_rounding_only,
        matched: rec
            .matched
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        mapping_notes: rec.notes.clone(),
        report,
        races,
        deletes_without_cpu_copy: lost,
        offloads_never_prefetched: never_prefetched,
        prefetches_never_used: never_used,
        reconstruction: Some(rec),
    })
}

impl MappedAudit {
    /// The reconstructed schedule the checker judged.
    pub fn schedule(&self) -> &Schedule {
        self.report.schedule()
    }

    /// The checker's verdict, less the violations that rounding to ticks alone
    /// made (`release_rounding_only`): the reconstructed run obeys the model when
    /// judged on the trace's own nanoseconds.
    pub fn valid(&self) -> bool {
        self.report.valid
            || self
                .report
                .violations
                .iter()
                .all(|v| self.release_rounding_only.contains(v))
    }
}

/// Releases strictly inside a holder's interval, on the trace's nanoseconds
/// (`models/MODEL.md`, rule *released while in use*). Holders: a GPU op holds
/// what it reads and does not consume, what it produces and what it modifies over
/// its interval; a transfer holds its tensor's GPU buffer. Releases: explicit
/// deletes, consumes (at the consumer's start) and frees (at the op's end) by
/// another event. An offload's own release (`delete: true`) is deferred to the end
/// of the holder by the rule, never a race. Cyclic schedules also compare the
/// release one period (P · tick_ns) earlier and later.
pub fn release_races(inst: &Instance, s: &Schedule, rec: &Reconstruction) -> Vec<ReleaseRace> {
    use crate::model::{Device, TensorId};
    let ns = |i: usize| rec.event_ns.get(i).copied();
    let mut holds: Vec<(TensorId, usize, String)> = Vec::new();
    let mut releases: Vec<(TensorId, usize, String, Nanos, Ticks)> = Vec::new();
    for (i, e) in s.events.iter().enumerate() {
        let Some((a, b)) = ns(i) else { continue };
        match *e {
            Event::Compute { op, start, end } => {
                let o = inst.op(op);
                if o.device == Device::Gpu {
                    for t in o.reads.iter().filter(|t| !o.consumes.contains(t)) {
                        holds.push((*t, i, o.name.clone()));
                    }
                    for t in o.produces.iter().chain(&o.modifies) {
                        holds.push((*t, i, o.name.clone()));
                    }
                }
                for t in &o.consumes {
                    releases.push((*t, i, format!("consume by {}", o.name), a, start));
                }
                for t in &o.frees {
                    releases.push((*t, i, format!("free by {}", o.name), b, end));
                }
            }
            Event::Transfer { dir, tensor, .. } => {
                let what = match dir {
                    Direction::Offload => "offload",
                    Direction::Prefetch => "prefetch",
                };
                holds.push((tensor, i, format!("{what} {}", inst.tensor(tensor).name)));
            }
            Event::Delete { tensor, at } => {
                releases.push((tensor, i, "delete".into(), a, at));
            }
        }
    }
    let period_ns = s.period.map(|p| p.0 as i128 * rec.tick_ns as i128);
    let mut out = Vec::new();
    for (t, ri, by, r, at) in &releases {
        for (ht, hi, name) in &holds {
            if ht != t || hi == ri {
                continue;
            }
            let Some((hs, he)) = ns(*hi) else { continue };
            let inside = |r: i128| (hs.0 as i128) < r && r < (he.0 as i128);
            let r0 = r.0 as i128;
            let hit = inside(r0)
                || period_ns.is_some_and(|p| p > 0 && (inside(r0 + p) || inside(r0 - p)));
            if hit {
                let h = &s.events[*hi];
                out.push(ReleaseRace {
                    tensor: inst.tensor(*t).name.clone(),
                    release: EventId(*ri as u32),
                    released_by: by.clone(),
                    at_ns: *r,
                    holder: EventId(*hi as u32),
                    held_by: name.clone(),
                    held_from_ns: hs,
                    held_to_ns: he,
                    at: *at,
                    held_from: h.start(),
                    held_to: h.end(),
                });
            }
        }
    }
    out
}

/// Offloads with no later prefetch of the tensor (anywhere in the period for cyclic
/// schedules), and prefetches that no op reads before the tensor's next prefetch.
pub fn waste(inst: &Instance, s: &Schedule) -> (Vec<EventId>, Vec<EventId>) {
    let cyclic = s.period.is_some();
    let mut never_prefetched = Vec::new();
    let mut never_used = Vec::new();
    for (i, e) in s.events.iter().enumerate() {
        match *e {
            Event::Transfer {
                dir: Direction::Offload,
                tensor,
                start,
                ..
            } => {
                let back = s.events.iter().any(|f| matches!(*f, Event::Transfer { dir: Direction::Prefetch, tensor: t, start: ps, .. } if t == tensor && (cyclic || ps >= start)));
                if !back {
                    never_prefetched.push(EventId(i as u32));
                }
            }
            Event::Transfer {
                dir: Direction::Prefetch,
                tensor,
                start,
                ..
            } => {
                let next = s
                    .events
                    .iter()
                    .filter_map(|f| match *f {
                        Event::Transfer {
                            dir: Direction::Prefetch,
                            tensor: t,
                            start: ps,
                            ..
                        } if t == tensor && ps > start => Some(ps),
                        _ => None,
                    })
                    .min();
                let used = s.events.iter().any(|f| match *f {
                    Event::Compute { op, start: cs, .. } => {
                        inst.op(op).reads.contains(&tensor)
                            && (cyclic || (cs >= start && next.is_none_or(|n| cs < n)))
                    }
                    _ => false,
                });
                if !used {
                    never_used.push(EventId(i as u32));
                }
            }
            _ => {}
        }
    }
    (never_prefetched, never_used)
}
