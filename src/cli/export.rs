//! `offcert export-trace INSTANCE SCHEDULE -o FILE.json [--tick-ns N]`: write the
//! schedule as a Chrome-trace JSON (Perfetto, chrome://tracing) that `offcert audit`
//! reads back with `instances/traces/export.mapping.json`. Exit 0 when written
//! (whatever the schedule's verdict, which is printed), 2 on bad input.
//!
//! Owns: the `export-trace` subcommand.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::check::check;
use crate::io;
use crate::trace::export::{write_chrome_trace, ExportOptions};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// Instance file (names and sizes).
    pub instance: PathBuf,
    /// Schedule file.
    pub schedule: PathBuf,
    /// Output Chrome-trace JSON.
    #[arg(short = 'o', long = "output")]
    pub out: PathBuf,
    /// Length of a model tick (`1000`, `1us`, `250ns`; a bare number is in ns;
    /// default 1000: a tick is shown as a microsecond).
    #[arg(long, default_value_t = 1000, value_parser = super::tick_ns_arg)]
    pub tick_ns: i64,
}

pub fn run(a: ExportArgs) -> anyhow::Result<ExitCode> {
    let (_, inst) = io::load_instance(&a.instance)?;
    let sched = io::load_schedule(&a.schedule, &inst)?;
    let report = check(&inst, &sched);
    let f = std::fs::File::create(&a.out)
        .with_context(|| format!("{}: cannot create", a.out.display()))?;
    let sum = write_chrome_trace(
        f,
        &a.out.display().to_string(),
        &inst,
        &sched,
        ExportOptions {
            tick_ns: a.tick_ns,
            origin_ns: 0,
        },
    )?;
    println!(
        "wrote {}: {} events, {} memory samples (peak {}); the schedule is {} (makespan {})",
        a.out.display(),
        sum.events,
        sum.memory_samples,
        u64::try_from(sum.peak_memory)
            .map_or(format!("{} B", sum.peak_memory), |b| crate::units::Bytes(b)
                .human()),
        if report.valid { "valid" } else { "INVALID" },
        report.makespan.human(
            u64::try_from(a.tick_ns)
                .ok()
                .map(|ns| crate::units::TickUnit { ns })
        )
    );
    Ok(ExitCode::SUCCESS)
}
