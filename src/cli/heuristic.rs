//! `offcert heuristic` (issue 4): run the papers' heuristics on one instance
//! and print the checker's figures, a thin handler over [`crate::heuristic`].
//!
//! Owns: the `heuristic` subcommand.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::heuristic;
use crate::schedule::ScheduleFile;
use crate::units::{Bytes, Ticks};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct HeuristicArgs {
    /// Instance file (JSON, tagged by `family`).
    pub instance: PathBuf,
    /// Heuristic(s) to run (default: every one that applies). Repeatable.
    #[arg(long = "name", short = 'n', value_name = "NAME", help = name_help())]
    pub names: Vec<String>,
    /// GPU memory to use instead of the file's (bytes, K/M/G suffixes, `min`, `peak` or `P%`).
    #[arg(long)]
    pub memory: Option<String>,
    /// Write the (checked) schedule to this file; needs exactly one heuristic.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub release: super::ReleaseOpt,
    /// Judge every heuristic's schedule under this allocator too (MODEL.md
    /// §2.8): the heuristics run in the `exact` model, and a schedule valid
    /// there but not under the allocator counts as no schedule, with the reason.
    #[command(flatten)]
    pub allocator: super::AllocatorOpt,
}

/// The heuristic names, per family: `activation_chain: greedy, dynprog, …;
/// weight_chain: …` (each name once per family it applies to).
pub fn names_per_family() -> String {
    heuristic::by_family()
        .iter()
        .map(|(family, hs)| {
            let names: Vec<&str> = hs.iter().map(|h| h.name()).collect();
            format!("{family}: {}", names.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn name_help() -> String {
    format!(
        "Heuristic(s) to run (default: every one that applies). Repeatable. Names, per family: {}",
        names_per_family()
    )
}

pub fn run(a: HeuristicArgs) -> anyhow::Result<ExitCode> {
    let (mut file, mut inst) = super::load_at_memory(&a.instance, a.release, a.memory.as_deref())?;
    // The heuristics work in the exact model; their schedules are judged
    // under the allocator afterwards (`strict`).
    let mut strict = inst.clone();
    a.allocator.apply(&mut strict);
    file.set_allocator(crate::model::Allocator::Exact);
    inst.allocator = crate::model::Allocator::Exact;
    let all = heuristic::all();
    for n in &a.names {
        if !all.iter().any(|h| h.name() == n) {
            anyhow::bail!(
                "unknown heuristic `{n}`; known, per family: {}",
                names_per_family()
            );
        }
    }
    let chosen: Vec<_> = all
        .iter()
        .filter(|h| h.applies(&file))
        .filter(|h| a.names.is_empty() || a.names.iter().any(|n| n == h.name()))
        .collect();
    if chosen.is_empty() {
        anyhow::bail!("no chosen heuristic applies to family {}", file.family());
    }
    if a.out.is_some() && chosen.len() != 1 {
        anyhow::bail!("--out needs exactly one heuristic (use --name)");
    }
    let mut ok = true;
    let mut out = Vec::new();
    for h in chosen {
        let t = std::time::Instant::now();
        let r = heuristic::run(h.as_ref(), &file, &inst);
        let secs = t.elapsed().as_secs_f64();
        let refused = r
            .as_ref()
            .ok()
            .and_then(|run| crate::report::allocated::refused(&strict, &run.checked));
        match r {
            Ok(_) if refused.is_some() => out.push(serde_json::json!({
                "heuristic": h.name(), "verdict": "no schedule",
                "allocator": strict.allocator.to_string(),
                "error": refused.unwrap_or_default(), "seconds": secs,
            })),
            Ok(run) => {
                if let Some(path) = &a.out {
                    let sf = ScheduleFile::from_schedule(run.checked.schedule(), &inst);
                    std::fs::write(path, serde_json::to_string_pretty(&sf)? + "\n")
                        .with_context(|| path.display().to_string())?;
                }
                out.push(serde_json::json!({
                    "heuristic": run.name, "verdict": "valid",
                    "release": run.checked.report().release.as_str(),
                    "makespan": run.checked.report().makespan.0,
                    "peak_memory": run.checked.report().peak_memory.0,
                    "compute_idle": run.checked.report().compute_idle.0,
                    "schedule_sha256": run.checked.report().schedule_sha256,
                    "seconds": secs,
                }));
                if !strict.allocator.is_default() {
                    out.last_mut().unwrap()["allocator"] = strict.allocator.to_string().into();
                }
            }
            Err(e) => {
                if matches!(e, heuristic::HeuristicError::Invalid { .. }) {
                    ok = false;
                }
                out.push(serde_json::json!({
                    "heuristic": h.name(),
                    "verdict": if matches!(e, heuristic::HeuristicError::Invalid { .. }) { "invalid" } else { "no schedule" },
                    "error": e.to_string(), "seconds": secs,
                }));
            }
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("{}", super::instance_line(&a.instance, &file, &inst));
        if let Some(line) = super::allocator_line(strict.allocator) {
            println!("{line}; heuristics run in the exact model, their schedules judged under it");
        }
        for o in &out {
            match o.get("makespan") {
                Some(m) => println!(
                    "  {:<12} valid (checked)  makespan {:>12}  peak memory {}  ({:.3} s)",
                    o["heuristic"].as_str().unwrap_or(""),
                    Ticks(m.as_i64().unwrap_or(0)).human(file.tick_unit()),
                    Bytes(o["peak_memory"].as_u64().unwrap_or(0)).human(),
                    o["seconds"].as_f64().unwrap_or(0.0)
                ),
                None => println!(
                    "  {:<12} {}",
                    o["heuristic"].as_str().unwrap_or(""),
                    o["error"].as_str().unwrap_or("")
                ),
            }
        }
    }
    Ok(super::verdict_code(ok))
}
