//! `offcert audit TRACE [--instance I --mapping M [--plan S]] [--budget B] [--link-gbps G]`:
//! audit a runtime trace (Kineto JSON, plain or gzip, or Nsight Systems SQLite).
//! `--plot FILE.svg` draws it (crate::report::trace_plot).
//! Exit 0 clean, 1 rule violations found, 2 bad input.
//!
//! Owns: the `audit` subcommand.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::check::Report;
use crate::io;
use crate::model::{Duplex, Instance};
use crate::trace::audit::{
    self, audit_mapped, audit_trace, LinkRate, MappedAudit, Options, TraceAudit,
};
use crate::trace::mapping::Mapping;
use crate::trace::plan::{compare, PlanComparison};
use crate::trace::{self, Nanos};
use crate::units::Bytes;
use anyhow::{bail, Context};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum DuplexArg {
    Full,
    Half,
}

#[derive(clap::Args, Debug)]
pub struct AuditArgs {
    /// Trace file: Kineto/PyTorch profiler JSON (plain or .gz) or Nsight Systems SQLite.
    pub trace: PathBuf,
    /// Instance the run was planned under (default budget, link and duplex come from it).
    #[arg(long)]
    pub instance: Option<PathBuf>,
    /// Mapping file (trace names → ops and tensors); needs --instance.
    #[arg(long)]
    pub mapping: Option<PathBuf>,
    /// Planned schedule to compare with the run; needs --instance and --mapping.
    #[arg(long)]
    pub plan: Option<PathBuf>,
    /// Device-memory budget (bytes: `1500`, `2G`, `1.5GB`, `64MiB`; default: the instance's GPU capacity).
    #[arg(long, value_parser = super::bytes_arg)]
    pub budget: Option<u64>,
    /// Declared host↔device link rate in GB/s (10^9 B/s), a decimal; default: the instance's β.
    #[arg(long)]
    pub link_gbps: Option<String>,
    /// Copy channels: full (one per direction) or half duplex; default: the instance's.
    #[arg(long, value_enum)]
    pub duplex: Option<DuplexArg>,
    /// Audit only this GPU.
    #[arg(long)]
    pub device: Option<i64>,
    /// Write the reconstructed schedule (mapped audits) to this file.
    #[arg(long)]
    pub write_schedule: Option<PathBuf>,
    /// Print the machine-readable result.
    #[arg(long)]
    pub json: bool,
    /// Draw the trace (kernel and copy lanes, device memory, findings marked)
    /// into this SVG file; one GPU: --device, else the first with a finding.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

#[derive(Serialize)]
struct Out<'a> {
    verdict: &'static str,
    trace: &'a TraceAudit,
    counts: &'a std::collections::BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mapped: Option<&'a MappedAudit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mapped_verdict: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    explanations: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<&'a PlanComparison>,
    #[serde(skip_serializing_if = "Option::is_none")]
    allocated_above_model: Option<Vec<audit::AllocatedAboveModel>>,
}

pub fn run(a: AuditArgs) -> anyhow::Result<ExitCode> {
    if a.mapping.is_some() && a.instance.is_none() {
        bail!("--mapping needs --instance (the mapping names the instance's ops and tensors)");
    }
    if a.plan.is_some() && (a.instance.is_none() || a.mapping.is_none()) {
        bail!("--plan needs --instance and --mapping");
    }
    if trace::memsnap::is_snapshot(&a.trace) {
        return run_snapshot(&a);
    }
    let tr = trace::load(&a.trace)?;
    let inst: Option<Instance> = match &a.instance {
        Some(p) => Some(io::load_instance(p)?.1),
        None => None,
    };
    let mapping = match &a.mapping {
        Some(p) => Some(Mapping::load(p)?),
        None => None,
    };
    let opts = options(&a, &tr, inst.as_ref(), mapping.as_ref())?;
    audit::require_content(&tr, &opts)?;
    let ta = audit_trace(&tr, &opts);
    let mapped = match (&inst, &mapping) {
        (Some(i), Some(m)) => Some(audit_mapped(
            &tr,
            m,
            i,
            &a.mapping.as_ref().unwrap().display().to_string(),
        )?),
        _ => None,
    };
    if let (Some(path), Some(m)) = (&a.write_schedule, &mapped) {
        let rec = m
            .reconstruction
            .as_ref()
            .expect("mapped audits keep their reconstruction");
        let text = serde_json::to_string_pretty(&rec.file)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("{}: cannot write", path.display()))?;
    }
    let plan = match (&a.plan, &inst, &mapped) {
        (Some(p), Some(i), Some(m)) => {
            let planned = io::load_schedule(p, i)?;
            Some(compare(i, &planned, m.schedule()))
        }
        _ => None,
    };
    if let Some(out) = &a.plot {
        let svg = crate::report::trace_plot::trace_svg(&tr, &ta, mapped.as_ref(), &opts, a.device);
        std::fs::write(out, svg).with_context(|| format!("{}: cannot write", out.display()))?;
    }
    // Violations that rounding to ticks alone made are not held against the run.
    let clean = audit::clean(&ta, mapped.as_ref());
    if a.json {
        let out = json_out(
            &tr,
            &ta,
            inst.as_ref(),
            mapped.as_ref(),
            plan.as_ref(),
            clean,
        );
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!(
            "{}",
            render(
                &tr,
                &ta,
                inst.as_ref(),
                mapped.as_ref(),
                plan.as_ref(),
                clean
            )
        );
    }
    Ok(super::verdict_code(clean))
}

/// An allocator snapshot (`torch.cuda.memory._snapshot()` as JSON): its
/// history replayed through the caching model from empty, beside the real
/// allocator's segments and reserved bytes. Reports only: exit 0.
fn run_snapshot(a: &AuditArgs) -> anyhow::Result<ExitCode> {
    if a.instance.is_some() || a.budget.is_some() || a.link_gbps.is_some() || a.plot.is_some() {
        bail!(
            "{}: an allocator snapshot is audited on its own (no --instance, --mapping, --budget, --link-gbps or --plot)",
            a.trace.display()
        );
    }
    let snap = trace::memsnap::load(&a.trace)?;
    let replays: Vec<trace::memsnap::SnapshotReplay> = (0..snap.device_traces.len())
        .filter(|&d| a.device.is_none_or(|x| x == d as i64))
        .filter_map(|d| trace::memsnap::replay(&snap, d))
        .collect();
    if a.json {
        #[derive(Serialize)]
        struct SnapOut<'a> {
            verdict: &'static str,
            settings: &'a Option<trace::memsnap::Settings>,
            final_segments: usize,
            devices: &'a [trace::memsnap::SnapshotReplay],
        }
        let out = SnapOut {
            verdict: "clean",
            settings: &snap.allocator_settings,
            final_segments: snap.segments.len(),
            devices: &replays,
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!(
            "{}",
            render_snapshot(&a.trace.display().to_string(), &snap, &replays)
        );
    }
    Ok(super::verdict_code(true))
}

fn render_snapshot(
    file: &str,
    snap: &trace::memsnap::Snapshot,
    replays: &[trace::memsnap::SnapshotReplay],
) -> String {
    let mut s = String::new();
    let settings = snap
        .allocator_settings
        .as_ref()
        .map_or("not recorded".to_string(), |x| {
            format!(
                "expandable_segments {}, max_split_size {}",
                x.expandable_segments,
                if x.max_split_size < 0 {
                    "unlimited".to_string()
                } else {
                    x.max_split_size.to_string()
                }
            )
        });
    let _ = writeln!(s, "allocator snapshot {file}: {} device histor(ies), {} segment(s) at the end; settings: {settings}", snap.device_traces.len(), snap.segments.len());
    let total = |v: &[trace::memsnap::SegmentMade]| Bytes(v.iter().map(|m| m.size.0).sum());
    for r in replays {
        let _ = writeln!(s, "GPU {}: {} events, {} allocations, {} frees completed, {} frees of blocks allocated before the history, streams {:?}", r.device, r.events, r.allocations, r.frees, r.unknown_frees, r.streams);
        let _ = writeln!(s, "  real allocator: reserved {} before the history, {} segment(s) allocated ({}), {} given back; reserved peak {}, at the end {}", r.real_start_reserved.human(), r.real_segments.len(), total(&r.real_segments).human(), r.real_segment_frees, r.real_peak_reserved.human(), r.real_final_reserved.human());
        let _ = writeln!(s, "  caching model from empty (capacity unbounded): {} segment(s) ({}); reserved peak {}, at the end {}; allocated peak {}, at the end {}", r.model_segments.len(), total(&r.model_segments).human(), r.model_peak_reserved.human(), r.model_final_reserved.human(), r.model_peak_allocated.human(), r.model_final_allocated.human());
        let first = r
            .real_segments
            .iter()
            .zip(&r.model_segments)
            .position(|(x, y)| x != y);
        let segs = match (first, r.real_segments.len() == r.model_segments.len()) {
            (None, true) => "the same sizes in the same order, each made for the same allocation".to_string(),
            (None, false) => format!("the first {} agree; the real allocator made {}, the model {}", r.real_segments.len().min(r.model_segments.len()), r.real_segments.len(), r.model_segments.len()),
            (Some(k), _) => format!("first differ at segment {k}: real {} B for allocation {}, model {} B for allocation {}", r.real_segments[k].size.0, r.real_segments[k].allocation, r.model_segments[k].size.0, r.model_segments[k].allocation),
        };
        let _ = writeln!(s, "  segments: {segs}");
        let _ = match &r.first_difference {
            None => writeln!(s, "  reserved after each of {} compared events: equal throughout", r.compared),
            Some(d) => writeln!(s, "  reserved after each of {} compared events: {} differ, first after event {} (real {}, model {})", r.compared, r.reserved_differences, d.event, d.real.human(), d.model.human()),
        };
        if r.unknown_frees > 0 {
            let _ = writeln!(s, "note: GPU {}: the history starts after the process's first allocations ({} frees of earlier blocks were skipped), so the model, which starts empty, replays another state than the real allocator's", r.device, r.unknown_frees);
        }
    }
    let _ = writeln!(s, "verdict: clean");
    s
}

/// The trace-only options: each from its flag, else from the instance.
fn options(
    a: &AuditArgs,
    tr: &trace::Trace,
    inst: Option<&Instance>,
    mapping: Option<&Mapping>,
) -> anyhow::Result<Options> {
    let tick_ns = mapping
        .and_then(|m| m.tick_ns)
        .or(tr.meta.as_ref().map(|m| m.tick_ns))
        .unwrap_or(1000);
    let link = match &a.link_gbps {
        Some(t) => Some(LinkRate::from_gbps(t).with_context(|| format!("--link-gbps {t}"))?),
        None => inst.map(|i| LinkRate::from_model(i.machine.bandwidth, tick_ns)),
    };
    Ok(Options {
        budget: a.budget.map(Bytes).or(inst.map(|i| i.machine.gpu_capacity)),
        link,
        duplex: match a.duplex {
            Some(DuplexArg::Full) => Duplex::FullDuplex,
            Some(DuplexArg::Half) => Duplex::HalfDuplex,
            None => inst.map_or(Duplex::FullDuplex, |i| i.machine.duplex),
        },
        device: a.device,
    })
}

/// The machine-readable result.
fn json_out<'a>(
    tr: &'a trace::Trace,
    ta: &'a TraceAudit,
    inst: Option<&Instance>,
    mapped: Option<&'a MappedAudit>,
    plan: Option<&'a PlanComparison>,
    clean: bool,
) -> Out<'a> {
    Out {
        verdict: if clean { "clean" } else { "violations" },
        trace: ta,
        counts: &tr.counts,
        mapped,
        mapped_verdict: mapped.map(|m| match (m.report.valid, m.valid()) {
            (true, _) => "valid",
            (false, true) => "valid_in_ns_invalid_after_rounding",
            (false, false) => "invalid",
        }),
        explanations: match (mapped, inst) {
            (Some(m), Some(i)) => Some(m.report.violations.iter().map(|v| v.describe(i)).collect()),
            _ => None,
        },
        plan,
        allocated_above_model: mapped.map(|m| audit::allocated_above_model(tr, m)),
    }
}

fn t(n: Nanos) -> String {
    // Nanoseconds shown as milliseconds with six decimals (exact).
    let sign = if n.0 < 0 { "-" } else { "" };
    let a = n.0.unsigned_abs();
    format!("{sign}{}.{:06} ms", a / 1_000_000, a % 1_000_000)
}

/// Where an instant lies against the first GPU event: `+X ms` after it, or
/// `X ms before the first GPU event` (allocator events can precede every kernel).
fn since(at: Nanos, origin: Nanos) -> String {
    let d = at.0 - origin.0;
    if d < 0 {
        format!("{} before the first GPU event", t(Nanos(-d)))
    } else {
        format!("+{}", t(Nanos(d)))
    }
}

fn render(
    tr: &trace::Trace,
    ta: &TraceAudit,
    inst: Option<&Instance>,
    mapped: Option<&MappedAudit>,
    plan: Option<&PlanComparison>,
    clean: bool,
) -> String {
    let mut s = render_trace(tr, ta);
    if let (Some(m), Some(i)) = (mapped, inst) {
        s.push_str(&render_mapped(m, i));
        for a in audit::allocated_above_model(tr, m) {
            let _ = writeln!(
                s,
                "  note: GPU {}: the trace's allocated bytes above its baseline peak at {} at {} ns, {} above the model's peak of {}; first above it at {} ns, for {} in all (the allocator counts a block from the CPU's request, the model from the GPU event; models/TRACES.md)",
                a.device,
                a.trace_peak.human(),
                a.trace_peak_at.0,
                a.excess.human(),
                a.model_peak.human(),
                a.first_above_at.0,
                t(a.time_above)
            );
        }
    }
    if let Some(p) = plan {
        s.push_str(&render_plan(p));
    }
    let _ = writeln!(s, "verdict: {}", audit::verdict_words(clean));
    s
}

/// The trace-only audit: per GPU, the findings and the notes.
fn render_trace(tr: &trace::Trace, ta: &TraceAudit) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "trace {} ({:?}): {} events, timestamp resolution {} ns",
        tr.file, tr.format, tr.total_events, tr.resolution.0
    );
    let cats: Vec<String> = tr.counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let _ = writeln!(s, "  by category: {}", cats.join(", "));
    let origin = tr.gpu.first().map(|g| g.start).unwrap_or(Nanos(0));
    for d in &ta.devices {
        let _ = writeln!(
            s,
            "GPU {}: {} kernels on streams {:?}",
            d.device, d.kernels, d.streams_with_kernels
        );
        let _ = writeln!(s, "  compute busy {}, idle between first and last kernel {}, idle while host<->device copies in flight {}", t(d.compute_busy), t(d.compute_idle), t(d.idle_while_copying));
        for c in &d.directions {
            let _ = writeln!(
                s,
                "  {:<5} {:>6} copies {:>14}  busy {}  achieved {} GB/s  overlapped with compute {} ({}%)  zero-duration {}",
                c.kind.label(),
                c.copies,
                u64::try_from(c.bytes).map_or(format!("{} B", c.bytes), |b| crate::units::Bytes(b).human()),
                t(c.busy),
                c.achieved_gbps.as_deref().unwrap_or("-"),
                t(c.overlapped_with_compute),
                c.overlapped_percent.as_deref().unwrap_or("-"),
                c.zero_duration
            );
        }
        if let Some(m) = &d.memory {
            let _ = writeln!(
                s,
                "  device memory: {} events, baseline {} ({}), peak {} at {} ({})",
                m.events,
                m.baseline.human(),
                if m.baseline_known {
                    "from Total Allocated"
                } else {
                    "inferred, a lower bound"
                },
                m.peak.human(),
                m.peak_at.0,
                if m.peak_at.0 < origin.0 {
                    since(m.peak_at, origin)
                } else {
                    format!("{} from the first GPU event", since(m.peak_at, origin))
                }
            );
        }
        if let Some(r) = &d.reserved {
            s.push_str(&render_reserved(r, origin));
        }
        if let Some(r) = &d.caching_replay {
            s.push_str(&render_replay(r, origin));
        }
    }
    if ta.findings.is_empty() {
        let _ = writeln!(s, "trace-only rules: no violation");
    } else {
        for (rule, n) in &ta.finding_counts {
            let _ = writeln!(s, "trace-only rule {rule}: {n} violation(s)");
        }
        for f in &ta.findings {
            let _ = writeln!(s, "  {}", f.line());
        }
    }
    for n in &ta.notes {
        let _ = writeln!(s, "note: {}", n.describe());
    }
    s
}

/// Signed bytes, human-readable.
fn signed_bytes(v: i64) -> String {
    let b = Bytes(v.unsigned_abs()).human();
    if v < 0 {
        format!("-{b}")
    } else {
        b
    }
}

/// Reserved beside allocated memory (Kineto `Total Reserved`): two lines.
fn render_reserved(r: &audit::ReservedSummary, origin: Nanos) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  reserved memory: {} events with Total Reserved, peak {} at {} ({}, {} allocated then); peak reserved - peak allocated {}",
        r.events,
        r.peak_reserved.human(),
        r.peak_reserved_at.0,
        since(r.peak_reserved_at, origin),
        signed_bytes(r.allocated_at_peak_reserved),
        signed_bytes(r.peak_reserved_over_peak_allocated)
    );
    let _ = writeln!(
        s,
        "  reserved - allocated: peak {} at {} ({}), time-weighted mean {} over {}",
        signed_bytes(r.peak_difference),
        r.peak_difference_at.0,
        since(r.peak_difference_at, origin),
        r.mean_difference.map_or("-".to_string(), signed_bytes),
        t(r.span)
    );
    s
}

/// The caching model replayed on the trace's allocations, beside the trace's
/// reserved curve.
fn render_replay(r: &audit::CachingReplay, origin: Nanos) -> String {
    let mut s = String::new();
    let at = |n: Nanos| format!("{} ({})", n.0, since(n, origin));
    let _ = writeln!(
        s,
        "  caching model on the trace's allocations: {} allocations, {} paired frees, {} frees of earlier blocks, {} seeded live at the start (capacity unbounded): reserved peak {} at {}, allocated peak {}, reserved at the end {}",
        r.allocations,
        r.frees,
        r.unpaired_frees,
        r.seeded.human(),
        r.model_peak_reserved.human(),
        at(r.model_peak_reserved_at),
        r.model_peak_allocated.human(),
        r.model_final_reserved.human()
    );
    if r.size_mismatches + r.reused_live_addresses + r.model_failures > 0 {
        let _ = writeln!(
            s,
            "    {} free(s) of another size than allocated, {} allocation(s) at a live address, {} request(s) the model could not serve",
            r.size_mismatches, r.reused_live_addresses, r.model_failures
        );
    }
    if let Some(c) = &r.against_trace {
        let _ = writeln!(
            s,
            "  trace reserved - model reserved: peak {} - {} = {}; over time from {} at {} to {} at {}, time-weighted mean {}; {}",
            c.trace_peak_reserved.human(),
            r.model_peak_reserved.human(),
            signed_bytes(c.peak_difference),
            signed_bytes(c.least.0),
            at(c.least.1),
            signed_bytes(c.largest.0),
            at(c.largest.1),
            c.mean.map_or("-".to_string(), signed_bytes),
            c.first_divergence
                .map_or("equal throughout".to_string(), |d| format!("they first differ at {}", at(d)))
        );
    }
    s
}

/// The mapped audit: the checker's report on the reconstructed schedule and
/// what the audit picked out of it.
fn render_mapped(m: &MappedAudit, i: &Instance) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "mapped audit ({} ns per tick, origin {} ns): matched {:?}",
        m.tick_ns, m.origin_ns, m.matched
    );
    for n in &m.mapping_notes {
        let _ = writeln!(s, "  mapping note: {}", n.describe());
    }
    s.push_str(&indent(&super::check::render_text(
        i,
        &m.report,
        "(instance)",
        "(reconstructed from the trace)",
        u64::try_from(m.tick_ns)
            .ok()
            .filter(|&ns| ns > 0)
            .map(|ns| crate::units::TickUnit { ns }),
    )));
    for r in &m.races {
        let _ = writeln!(
            s,
            "  race: {} starts at {} but the prefetch of {} ends at {}",
            r.op, r.start, r.tensor, r.prefetch_ends
        );
    }
    for r in &m.release_races {
        let _ = writeln!(
            s,
            "  race: {} released while in use: {} at {} ns (tick {}) inside {} over [{}, {}) ns (ticks [{}, {}))",
            r.tensor,
            r.released_by,
            r.at_ns.0,
            r.at,
            r.held_by,
            r.held_from_ns.0,
            r.held_to_ns.0,
            r.held_from,
            r.held_to
        );
    }
    if let Some(n) = m.rounding_note() {
        let _ = writeln!(s, "  {n}");
    }
    for d in &m.deletes_without_cpu_copy {
        let _ = writeln!(
            s,
            "  delete without a current CPU copy: {} at {}",
            d.tensor, d.at
        );
    }
    for w in m.warnings() {
        let _ = writeln!(s, "  {w}");
    }
    s
}

fn render_plan(p: &PlanComparison) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "plan against actual: planned makespan {} ticks (plan {}), measured {} ticks (run {})",
        p.planned_makespan,
        verdict(&p.planned),
        p.actual_makespan,
        verdict(&p.actual)
    );
    let _ = writeln!(
        s,
        "  {:<9} {:<20} {:>4} {:>10} {:>10} {:>8} {:>8}",
        "kind", "name", "occ", "plan.start", "act.start", "Δstart", "Δdur"
    );
    for d in &p.deviations {
        let o = |v: Option<i64>| v.map_or("-".to_string(), |x| x.to_string());
        let _ = writeln!(
            s,
            "  {:<9} {:<20} {:>4} {:>10} {:>10} {:>8} {:>8}",
            d.kind,
            d.name,
            d.occurrence,
            d.planned_start.0,
            o(d.actual_start.map(|x| x.0)),
            o(d.start_delta),
            o(d.duration_delta)
        );
    }
    if p.unplanned > 0 {
        let _ = writeln!(
            s,
            "  {} event(s) in the run have no planned counterpart",
            p.unplanned
        );
    }
    s
}

fn verdict(r: &Report) -> &'static str {
    if r.valid {
        "valid"
    } else {
        "INVALID"
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}
