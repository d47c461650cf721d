//! `offcert plot INSTANCE SCHEDULE -o FILE.svg`: check the schedule and draw it
//! (lanes, the replay's memory curve, every violation marked). Exit codes as
//! `offcert check`: 0 valid, 1 invalid (the picture is written either way), 2
//! bad input.
//!
//! Owns: the `plot` subcommand and `write_schedule_svg`.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::check::{check_with_profile, CheckOutcome, MemoryProfile};
use crate::io;
use crate::model::Instance;
use crate::report::schedule_plot::schedule_svg;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct PlotArgs {
    /// Instance file (JSON, tagged by `family`).
    pub instance: PathBuf,
    /// Schedule file (JSON).
    pub schedule: PathBuf,
    /// The SVG file to write.
    #[arg(short, long, value_name = "FILE.svg")]
    pub output: PathBuf,
    #[command(flatten)]
    pub release: super::ReleaseOpt,
}

pub fn run(a: PlotArgs) -> anyhow::Result<ExitCode> {
    let itext = io::read_text(&a.instance)?;
    let stext = io::read_text(&a.schedule)?;
    let (_, mut inst) = io::parse_instance(&a.instance.display().to_string(), &itext)?;
    a.release.apply(&mut inst);
    let sched = io::parse_schedule(&a.schedule.display().to_string(), &stext, &inst)?;
    let (report, profile) = check_with_profile(&inst, &sched);
    write_schedule_svg(&a.output, &inst, &report, &profile, &a.schedule)?;
    println!(
        "verdict: {} ({} violation(s)); picture written to {}",
        if report.valid { "valid" } else { "INVALID" },
        report.violations.len(),
        a.output.display()
    );
    Ok(super::verdict_code(report.valid))
}

/// Draw a checked schedule into `out` (also used by `offcert check --plot`).
pub fn write_schedule_svg(
    out: &Path,
    inst: &Instance,
    outcome: &CheckOutcome,
    profile: &MemoryProfile,
    schedule_file: &Path,
) -> anyhow::Result<()> {
    let svg = schedule_svg(inst, outcome, profile, &schedule_file.display().to_string());
    std::fs::write(out, svg).with_context(|| format!("{}: cannot write", out.display()))
}
