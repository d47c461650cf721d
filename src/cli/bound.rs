//! `offcert bound` (issue 4): the papers' lower bounds for one instance, a
//! thin handler over [`crate::bound::evaluate`].
//!
//! Owns: the `bound` subcommand.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::bound;
use crate::report;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct BoundArgs {
    /// Instance file (JSON, tagged by `family`).
    pub instance: PathBuf,
    /// GPU memory to use instead of the file's (bytes, K/M/G suffixes, `min`, `peak` or `P%`).
    #[arg(long)]
    pub memory: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub release: super::ReleaseOpt,
}

pub fn run(a: BoundArgs) -> anyhow::Result<ExitCode> {
    let (file, inst) = super::load_at_memory(&a.instance, a.release, a.memory.as_deref())?;
    let results = bound::evaluate(&file, &inst);
    if a.json {
        let v: Vec<serde_json::Value> = results
            .iter()
            .map(|(name, r)| match r {
                Ok(b) => serde_json::json!({
                    "source": b.source, "strength": b.strength.words(),
                    "value": b.value.to_string(), "ceil": b.ceil_ticks(),
                }),
                Err(e) => serde_json::json!({"source": name, "error": e.to_string()}),
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "instance": a.instance.display().to_string(),
                "family": file.family(),
                "release": inst.release.as_str(),
                "memory": report::budget::own_budget(&file),
                "bounds": v,
            }))?
        );
    } else {
        println!("{}", super::instance_line(&a.instance, &file, &inst));
        if results.is_empty() {
            println!("no bound applies to family {}", file.family());
        }
        for (name, r) in &results {
            match r {
                Ok(b) => println!(
                    "  {:<w$} {:>16} ticks  {}  (exact {})",
                    b.source,
                    b.display(),
                    b.strength.words(),
                    b.value,
                    w = bound::NAME_WIDTH
                ),
                Err(e) => println!("  {name:<w$} {e}", w = bound::NAME_WIDTH),
            }
        }
    }
    let infeasible = results
        .iter()
        .any(|(_, r)| matches!(r, Err(bound::BoundError::Infeasible { .. })));
    Ok(if infeasible {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
