//! `offcert examples [DIR]`: check every `*.schedule.json` beside its instance in
//! the bundled examples and print the verdicts. Each schedule file names its
//! instance by the prefix before the first `.` (e.g. `chain4.greedy.schedule.json`
//! goes with `chain4.json`). Exit 0 when every verdict matches the expectation
//! written in the file name (`*.invalid.schedule.json` must be invalid).
//!
//! Owns: the `examples` subcommand.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::check::check;
use crate::io;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ExamplesArgs {
    /// Folder of examples.
    #[arg(default_value = "instances/examples")]
    pub dir: PathBuf,
}

pub fn run(a: ExamplesArgs) -> anyhow::Result<ExitCode> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(&a.dir)
        .map_err(|e| anyhow::anyhow!("{}: {e}", a.dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".schedule.json"))
        .collect();
    files.sort();
    let mut all_as_expected = true;
    println!(
        "{:<48} {:<9} {:>10} {:>10}  first violation",
        "schedule", "verdict", "makespan", "peak B"
    );
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let stem = name.split('.').next().unwrap_or("");
        let ipath = a.dir.join(format!("{stem}.json"));
        let (_, inst) = io::load_instance(&ipath)?;
        let sched = io::load_schedule(&f, &inst)?;
        let r = check(&inst, &sched);
        let expect_valid = !name.contains(".invalid.");
        all_as_expected &= r.valid == expect_valid;
        println!(
            "{:<48} {:<9} {:>10} {:>10}  {}",
            name,
            if r.valid { "valid" } else { "invalid" },
            r.makespan.0,
            r.peak_memory.0,
            r.violations
                .first()
                .map(|v| v.describe(&inst))
                .unwrap_or_default()
        );
    }
    Ok(super::verdict_code(all_as_expected))
}
