//! `offcert sweep` (issue 4): one instance at a series of memory budgets,
//! printed or written one file per budget.
//!
//! Owns: the `sweep` subcommand.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::io;
use crate::report::{self, BudgetSpec};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// Instance file (JSON, tagged by `family`).
    pub instance: PathBuf,
    /// FROM:TO:STEPS; FROM/TO in bytes (K/M/G suffixes), `min`, `peak` or `P%`.
    #[arg(long)]
    pub memory: String,
    /// Write one instance file per budget into this folder (default: print the budgets).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(a: SweepArgs) -> anyhow::Result<ExitCode> {
    let (file, _) = io::load_instance(&a.instance)?;
    let spec = BudgetSpec::parse(&a.memory)?;
    let budgets = spec
        .budgets(&file)
        .with_context(|| a.instance.display().to_string())?;
    let stem = a
        .instance
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "instance".into());
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    if let Some(ends) = report::budget::range_labels(&file) {
        println!("{ends}");
    }
    println!("{:>16} {:>10}  file", "memory (B)", "percent");
    for (k, b) in budgets.iter().enumerate() {
        let f = report::with_budget(&file, *b);
        f.compile()
            .with_context(|| format!("{} at memory {b} B", a.instance.display()))?;
        let pct = report::budget::position(&file, *b)
            .map(|p| format!("{p:.1}%"))
            .unwrap_or_default();
        let written = match &a.out {
            Some(dir) => {
                let path = dir.join(format!("{stem}.mem{k:03}.json"));
                let mut v = f.to_json()?;
                if let Some(o) = v.as_object_mut() {
                    let note = o
                        .get("note")
                        .and_then(|n| n.as_str())
                        .map(|s| format!("{s} "))
                        .unwrap_or_default();
                    o.insert(
                        "note".into(),
                        serde_json::Value::String(format!(
                            "{note}[offcert sweep {}: budget {} of {}]",
                            spec.text,
                            k + 1,
                            budgets.len()
                        )),
                    );
                }
                std::fs::write(&path, serde_json::to_string_pretty(&v)? + "\n")
                    .with_context(|| path.display().to_string())?;
                path.display().to_string()
            }
            None => String::new(),
        };
        println!("{b:>16} {pct:>10}  {written}");
    }
    Ok(ExitCode::SUCCESS)
}
