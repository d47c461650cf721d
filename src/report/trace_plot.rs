//! The picture of an audited trace: for one GPU, a lane of kernels per stream,
//! one lane per copy channel (HtoD and DtoH at full duplex, `link` at half),
//! the device-memory timeline ([`crate::trace::audit::memory_timeline`], the
//! very samples the memory-budget rule measured) with the budget line and the
//! peak, and the allocator's reserved total dashed beside it where the trace
//! records one, and every finding the audit's verdict holds against the run
//! ([`crate::trace::audit::findings`]: the trace-only findings, and with a mapping
//! the checker's violations on the reconstructed schedule) as a numbered red
//! marker whose legend line is the text's own line. Large traces
//! are aggregated to pixel columns by [`super::svg`] (lane coverage, min/max
//! memory envelope), so the SVG stays small whatever the trace's size.
//!
//! Owns: [`trace_picture`], [`trace_svg`]. Judges nothing: the verdict and the
//! findings come from [`crate::trace::audit`]. Must not import: the CLI, solvers.

use super::svg::{self, Bar, Kind, Lane, Marker, Memory, Picture, Place};
use crate::model::Duplex;
use crate::trace::audit::{
    self, memory_timeline, CachingReplay, MappedAudit, MemorySummary, MemoryTimeline, Options,
    Spot, TraceAudit,
};
use crate::trace::{CopyKind, GpuEvent, GpuKind, Nanos, Trace};
use std::collections::BTreeMap;

/// Nanoseconds from `origin` as milliseconds (display only).
fn ms(t: Nanos, origin: Nanos) -> f64 {
    (t.0 as f64 - origin.0 as f64) / 1e6
}

fn copy_lane_name(k: CopyKind, duplex: Duplex) -> String {
    match (k.on_link(), duplex) {
        (true, Duplex::HalfDuplex) => "link".into(),
        (true, Duplex::FullDuplex) => k.label().into(),
        (false, _) => format!("{} copies", k.label()),
    }
}

/// The picture of GPU `device` (default: the first GPU with a trace-only
/// finding, else the first GPU) of `trace` as audited into `ta` (and `mapped`,
/// with a mapping) with `opts`.
pub fn trace_picture(
    trace: &Trace,
    ta: &TraceAudit,
    mapped: Option<&MappedAudit>,
    opts: &Options,
    device: Option<i64>,
) -> Picture {
    let dev = device
        .or_else(|| ta.findings.first().map(|f| f.device()))
        .or_else(|| ta.devices.first().map(|d| d.device))
        .unwrap_or(0);
    let origin = trace.gpu.first().map(|g| g.start).unwrap_or(Nanos(0));
    let gpu: Vec<&GpuEvent> = trace.gpu.iter().filter(|g| g.device == dev).collect();
    let few = gpu.len() <= svg::AGGREGATE_BARS;
    let (lanes, (mut t0, mut t1)) = lanes(trace, &gpu, opts.duplex, origin, few);
    let timeline = memory_timeline(trace, dev);
    if let Some(tl) = &timeline {
        for (t, _) in &tl.samples {
            t0 = t0.min(ms(*t, origin));
            t1 = t1.max(ms(*t, origin));
        }
    }
    let summary = ta.devices.iter().find(|d| d.device == dev);
    let memory = timeline.as_ref().map(|tl| {
        memory_panel(
            tl,
            (
                summary.and_then(|d| d.memory.as_ref()),
                summary.and_then(|d| d.caching_replay.as_ref()),
            ),
            opts,
            dev,
            origin,
        )
    });
    let markers = markers(
        &audit::findings(ta, mapped),
        timeline.as_ref(),
        &lanes,
        &gpu,
        opts.duplex,
        dev,
        origin,
    );
    let heading = vec![
        format!("trace {} ({:?}), GPU {dev}", trace.file, trace.format),
        format!(
            "{} events; verdict: {} ({}); {} GPU activities drawn{}",
            trace.total_events,
            audit::verdict_words(audit::clean(ta, mapped)),
            verdict_detail(ta, mapped),
            gpu.len(),
            if few {
                ""
            } else {
                ", aggregated to pixel columns"
            }
        ),
        "kernels blue; DtoH orange; HtoD green; other copies grey; memory: min/max per pixel column; red: findings".into(),
    ];
    Picture {
        heading,
        t0,
        t1: if t1 > t0 { t1 } else { t0 + 1e-3 },
        axis: format!("time (ms since the first GPU event, at {} ns)", origin.0),
        period: None,
        lanes,
        memory,
        markers,
        footer: footer(ta, mapped, dev),
    }
}

/// What the verdict rests on: the trace-only violations, and with a mapping the
/// checker's violations that the trace's nanoseconds confirm.
fn verdict_detail(ta: &TraceAudit, mapped: Option<&MappedAudit>) -> String {
    let trace_only = format!("trace-only rules: {} violation(s)", ta.violations());
    match mapped {
        None => trace_only,
        Some(m) => format!(
            "{trace_only}; checker on the schedule reconstructed from the trace: {} violation(s)",
            m.findings.len()
        ),
    }
}

/// The lanes of one GPU's activities: kernel streams, then copy channels (bars
/// named and titled when `few`), and the time span of every activity, memsets
/// included.
fn lanes(
    trace: &Trace,
    gpu: &[&GpuEvent],
    duplex: Duplex,
    origin: Nanos,
    few: bool,
) -> (Vec<Lane>, (f64, f64)) {
    let mut names: Vec<String> = Vec::new();
    let mut by_name: BTreeMap<String, Vec<Bar>> = BTreeMap::new();
    let streams: std::collections::BTreeSet<i64> = gpu
        .iter()
        .filter(|g| g.kind == GpuKind::Kernel)
        .map(|g| g.stream)
        .collect();
    for st in &streams {
        names.push(format!("stream {st}"));
    }
    let (mut t0, mut t1) = (0.0f64, 0.0f64);
    for g in gpu {
        let (a, b) = (ms(g.start, origin), ms(g.end, origin));
        t0 = t0.min(a);
        t1 = t1.max(b);
        let (lane, kind) = match g.kind {
            GpuKind::Kernel => (format!("stream {}", g.stream), Kind::Compute),
            GpuKind::Memcpy(k) => (
                copy_lane_name(k, duplex),
                match k {
                    CopyKind::DtoH => Kind::Offload,
                    CopyKind::HtoD => Kind::Prefetch,
                    _ => Kind::Copy,
                },
            ),
            GpuKind::Memset => continue,
        };
        if !names.contains(&lane) {
            names.push(lane.clone());
        }
        let (label, title) = if few {
            let n = trace.name(g.name).to_string();
            let t = format!(
                "{n} [{}, {}) ns{}",
                g.start.0,
                g.end.0,
                g.bytes.map_or(String::new(), |b| format!(", {b} B"))
            );
            (n, t)
        } else {
            (String::new(), String::new())
        };
        by_name.entry(lane).or_default().push(Bar {
            start: a,
            end: b,
            kind,
            label,
            title,
            wrapped: false,
        });
    }
    let lanes = names
        .iter()
        .map(|n| Lane {
            name: n.clone(),
            bars: by_name.remove(n).unwrap_or_default(),
            marks: Vec::new(),
        })
        .collect();
    (lanes, (t0, t1))
}

/// The memory panel: the timeline's samples, the budget and the audit's peak.
fn memory_panel(
    tl: &MemoryTimeline,
    (m, replay): (Option<&MemorySummary>, Option<&CachingReplay>),
    opts: &Options,
    dev: i64,
    origin: Nanos,
) -> Memory {
    Memory {
        title: format!(
            "device memory of GPU {dev} (allocator events; baseline {})",
            if tl.baseline_known {
                "from Total Allocated"
            } else {
                "inferred, a lower bound"
            }
        ),
        samples: tl
            .samples
            .iter()
            .map(|(t, b)| (ms(*t, origin), (*b).clamp(0, u64::MAX as i128) as u64))
            .collect(),
        capacity: opts.budget.map(|b| (b.0, format!("budget {b} B"))),
        peak: m.map(|m| {
            (m.peak.0, ms(m.peak_at, origin), {
                let off = ms(m.peak_at, origin);
                let when = if off < 0.0 {
                    format!("{:.6} ms before the first GPU event", -off)
                } else {
                    format!("+{off:.6} ms")
                };
                format!("peak {} at {} ns ({when})", m.peak.human(), m.peak_at.0)
            })
        }),
        others: reserved_curves(tl, replay, origin),
    }
}

/// The allocator's `Total Reserved` on the same instants, where the trace has
/// it, and the caching model's reserved bytes on the trace's allocations.
fn reserved_curves(
    tl: &MemoryTimeline,
    replay: Option<&CachingReplay>,
    origin: Nanos,
) -> Vec<(String, Vec<(f64, u64)>)> {
    let mut out = Vec::new();
    let samples: Vec<(f64, u64)> = tl
        .samples
        .iter()
        .zip(&tl.reserved)
        .filter_map(|((t, _), r)| r.map(|r| (ms(*t, origin), r)))
        .collect();
    if !samples.is_empty() {
        out.push(("reserved (Total Reserved), dashed".to_string(), samples));
    }
    if let Some(r) = replay {
        let curve = r.curve.iter().map(|(t, b)| (ms(*t, origin), *b)).collect();
        out.push(("caching model's reserved, dotted".to_string(), curve));
    }
    out
}

/// The findings on GPU `dev` (and the mapped ones, which name no GPU) as
/// numbered markers, each with the text's own line: on the memory curve, on the
/// lane of the copy, or on the kernel lane running at that instant.
fn markers(
    findings: &[audit::Line],
    timeline: Option<&MemoryTimeline>,
    lanes: &[Lane],
    gpu: &[&GpuEvent],
    duplex: Duplex,
    dev: i64,
    origin: Nanos,
) -> Vec<Marker> {
    let lane_named = |n: &str| lanes.iter().position(|x| x.name == n);
    let lane_of = |k: CopyKind| lane_named(&copy_lane_name(k, duplex)).unwrap_or(0);
    let kernel_lane = |t: Nanos| {
        let running = gpu
            .iter()
            .find(|g| g.kind == GpuKind::Kernel && g.start <= t && t < g.end);
        running
            .and_then(|g| lane_named(&format!("stream {}", g.stream)))
            .or_else(|| lanes.iter().position(|x| x.name.starts_with("stream ")))
            .unwrap_or(0)
    };
    let value_at = |t: Nanos| -> Option<u64> {
        timeline.map(|tl| {
            let i = tl.samples.partition_point(|(a, _)| *a <= t);
            tl.samples[i.saturating_sub(1)].1.clamp(0, u64::MAX as i128) as u64
        })
    };
    let mut markers = Vec::new();
    for f in findings {
        if f.spot.device().is_some_and(|d| d != dev) {
            continue;
        }
        let place = match f.spot {
            Spot::Memory { at, .. } => match value_at(at) {
                Some(v) => Place::Curve(ms(at, origin), v),
                None => Place::Lane(0, ms(at, origin)),
            },
            Spot::Copy { kind, at, .. } => Place::Lane(lane_of(kind), ms(at, origin)),
            Spot::Compute { at } => Place::Lane(kernel_lane(at), ms(at, origin)),
            Spot::Nowhere => Place::LaneEnd(0),
        };
        markers.push(Marker {
            place,
            text: f.text.clone(),
        });
    }
    markers
}

/// Counts per rule, the mapped audit's notes and warnings, the trace's notes,
/// and the other GPUs of the trace: the text's own lines.
fn footer(ta: &TraceAudit, mapped: Option<&MappedAudit>, dev: i64) -> Vec<String> {
    let mut footer: Vec<String> = ta
        .finding_counts
        .iter()
        .map(|(rule, n)| {
            format!(
                "trace-only rule {rule}: {n} violation(s) (the first {} of each rule are marked)",
                crate::trace::audit::MAX_WITNESSES
            )
        })
        .collect();
    if let Some(m) = mapped {
        footer.extend(m.rounding_note());
        footer.extend(m.warnings());
    }
    footer.extend(ta.notes.iter().map(|n| format!("note: {}", n.describe())));
    let others: Vec<String> = ta
        .devices
        .iter()
        .filter(|d| d.device != dev)
        .map(|d| d.device.to_string())
        .collect();
    if !others.is_empty() {
        footer.push(format!(
            "other GPUs in the trace: {} (draw one with --device)",
            others.join(", ")
        ));
    }
    footer
}

/// The SVG text of [`trace_picture`].
pub fn trace_svg(
    trace: &Trace,
    ta: &TraceAudit,
    mapped: Option<&MappedAudit>,
    opts: &Options,
    device: Option<i64>,
) -> String {
    svg::render(&trace_picture(trace, ta, mapped, opts, device))
}
