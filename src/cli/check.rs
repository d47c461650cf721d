//! `offcert check INSTANCE SCHEDULE [--json] [--plot FILE.svg]`.
//!
//! Owns: the `check` subcommand and its text and JSON verdicts.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::check::{check_with_profile, sha256_bytes, CheckOutcome};
use crate::io;
use crate::model::Instance;
use crate::units::TickUnit;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Instance file (JSON, tagged by `family`).
    pub instance: PathBuf,
    /// Schedule file (JSON).
    pub schedule: PathBuf,
    /// Print the machine-readable verdict.
    #[arg(long)]
    pub json: bool,
    /// Also draw the schedule (as `offcert plot`) into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    #[command(flatten)]
    pub release: super::ReleaseOpt,
    #[command(flatten)]
    pub allocator: super::AllocatorOpt,
}

/// The JSON verdict: the report plus the digests of the files as read.
#[derive(Serialize)]
pub struct FileVerdict<'a> {
    pub instance_file: String,
    pub schedule_file: String,
    pub instance_file_sha256: String,
    pub schedule_file_sha256: String,
    pub verdict: &'static str,
    /// The checker's outcome, flattened to its report.
    #[serde(flatten)]
    pub report: &'a CheckOutcome,
    /// The violations as sentences, in the same order.
    pub explanations: Vec<String>,
}

pub fn run(a: CheckArgs) -> anyhow::Result<ExitCode> {
    let itext = io::read_text(&a.instance)?;
    let stext = io::read_text(&a.schedule)?;
    let (file, mut inst) = io::parse_instance(&a.instance.display().to_string(), &itext)?;
    a.release.apply(&mut inst);
    a.allocator.apply(&mut inst);
    let sched = io::parse_schedule(&a.schedule.display().to_string(), &stext, &inst)?;
    let (report, profile) = check_with_profile(&inst, &sched);
    if let Some(out) = &a.plot {
        super::plot::write_schedule_svg(out, &inst, &report, &profile, &a.schedule)?;
    }
    if a.json {
        let v = FileVerdict {
            instance_file: a.instance.display().to_string(),
            schedule_file: a.schedule.display().to_string(),
            instance_file_sha256: sha256_bytes(itext.as_bytes()),
            schedule_file_sha256: sha256_bytes(stext.as_bytes()),
            verdict: if report.valid { "valid" } else { "invalid" },
            report: &report,
            explanations: report
                .violations
                .iter()
                .map(|v| v.describe(&inst))
                .collect(),
        };
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!(
            "{}",
            render_text(
                &inst,
                &report,
                &a.instance.display().to_string(),
                &a.schedule.display().to_string(),
                file.tick_unit(),
            )
        );
    }
    Ok(super::verdict_code(report.valid))
}

/// The text verdict of the checker's outcome (valid or not; the figures are
/// the checker's either way).
/// Times are shown in ticks, and also in `tick`'s unit where the instance
/// knows how long a tick is; amounts of memory with
/// [`crate::units::Bytes::human`].
pub fn render_text(
    inst: &Instance,
    r: &CheckOutcome,
    ifile: &str,
    sfile: &str,
    tick: Option<TickUnit>,
) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "instance {} ({}), schedule {}",
        ifile, inst.family, sfile
    );
    let _ = writeln!(
        s,
        "verdict: {}",
        if r.valid {
            "valid (the exact replay passed)"
        } else {
            "INVALID"
        }
    );
    let _ = writeln!(s, "release rule: {} ({})", r.release, r.release.describe());
    if let Some(line) = super::allocator_line(r.allocator) {
        let _ = writeln!(s, "{line}");
    }
    let _ = writeln!(
        s,
        "{}: {}",
        if r.cyclic { "period" } else { "makespan" },
        r.makespan.human(tick)
    );
    let _ = writeln!(
        s,
        "peak GPU memory: {} at t={} (capacity {})",
        r.peak_memory.human(),
        r.peak_at,
        inst.machine.gpu_capacity.human()
    );
    if let Some(p) = &r.allocator_peaks {
        allocator_peaks(&mut s, p);
    }
    if let Some(cap) = inst.machine.cpu_capacity {
        let _ = writeln!(
            s,
            "peak CPU memory: {} (capacity {})",
            r.peak_cpu_memory.human(),
            cap.human()
        );
    }
    for c in &r.channel_busy {
        let _ = writeln!(
            s,
            "channel {} busy: {}",
            c.channel.name(),
            c.busy.human(tick)
        );
    }
    let _ = writeln!(s, "compute stream idle: {}", r.compute_idle.human(tick));
    if !r.violations.is_empty() {
        let _ = writeln!(s, "{} violation(s):", r.violations.len());
        for v in &r.violations {
            let _ = writeln!(s, "  [{}:{}] {}", v.rule(), v.kind(), v.describe(inst));
        }
    }
    if !r.warnings.is_empty() {
        let _ = writeln!(s, "{} warning(s):", r.warnings.len());
        for w in &r.warnings {
            let _ = writeln!(s, "  {}", w.describe(inst));
        }
    }
    let _ = writeln!(
        s,
        "sha256 instance {} schedule {}",
        r.instance_sha256, r.schedule_sha256
    );
    s
}

/// The allocator's own peaks (MODEL.md §2.8), under a non-default allocator.
fn allocator_peaks(s: &mut String, p: &crate::check::AllocatorPeaks) {
    use std::fmt::Write;
    if let (Some(occ), Some(n)) = (p.peak_occupied, p.max_live_allocations) {
        let _ = writeln!(
            s,
            "peak GPU memory in whole chunks: {} (at most {n} allocations alive at once)",
            occ.human()
        );
    }
    if let (Some(r), Some(a)) = (p.peak_reserved, p.peak_allocated) {
        let _ = writeln!(
            s,
            "peak reserved by the allocator: {}, peak allocated: {}",
            r.human(),
            a.human()
        );
    }
}
