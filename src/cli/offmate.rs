//! `offcert offmate FILE`: OFFMATE end to end on an `offmate` instance: the ILP
//! (1)–(23) in the chosen mode(s) with a time limit, the post-processing
//! (Algorithm 1, exact SELECT), the step realiser and the checker; plus the
//! ILP-free baselines. Prints, per plan, "ILP objective ≤ step sum ≤ checked
//! period" with the checker's GPU and CPU peaks, or the checker's reason.
//!
//! Owns: the `offmate` subcommand.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::family::offmate::IlpMode;
use crate::heuristic::offmate::{self as om, Baseline, PlanSource};
use crate::report::offmate as rep;
use crate::schedule::ScheduleFile;
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum IlpArg {
    Printed,
    Corrected,
    None,
}

#[derive(clap::Args, Debug)]
pub struct OffmateArgs {
    /// Instance file (`"family": "offmate"`).
    pub instance: PathBuf,
    /// ILP mode(s) to solve (repeatable; default: corrected).
    #[arg(long = "ilp", value_enum)]
    pub ilp: Vec<IlpArg>,
    /// Time limit per ILP solve (`60`, `60s`, `2m`; bare: seconds); a run stopped by it is `feasible, gap g`.
    #[arg(long, default_value_t = 60.0, value_parser = super::seconds_arg)]
    pub time_limit: f64,
    /// When the checker refutes a plan's schedule for GPU memory only, solve the
    /// ILP again for a budget lowered by the excess, at most this many times
    /// (every attempt is printed).
    #[arg(long, default_value_t = 3)]
    pub repairs: usize,
    /// Forbid the CPU optimiser in the ILP (Table 2's "w/o CPU optim" ablation).
    #[arg(long)]
    pub no_cpu_optim: bool,
    /// ILP-free baselines to add (all-gpu, offload-all, offload-all-gpu-adam; `all`). Repeatable.
    #[arg(long = "baseline")]
    pub baselines: Vec<String>,
    /// Write the first row's realised schedule (checked or not) to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also print, per step, the ILP's Time_t, the realised length and the
    /// streams' busy ticks (GPU, d2h, h2d, CPU) of the first row.
    #[arg(long)]
    pub steps: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub release: super::ReleaseOpt,
}

fn baselines(names: &[String]) -> anyhow::Result<Vec<Baseline>> {
    let mut out = Vec::new();
    for n in names {
        if n == "all" {
            out.extend(Baseline::all());
            continue;
        }
        match Baseline::all().into_iter().find(|b| b.name() == n) {
            Some(b) => out.push(b),
            None => anyhow::bail!(
                "unknown baseline `{n}` (all-gpu, offload-all, offload-all-gpu-adam, all)"
            ),
        }
    }
    Ok(out)
}

pub fn run(a: OffmateArgs) -> anyhow::Result<ExitCode> {
    let (file, inst) = super::load_at_memory(&a.instance, a.release, None)?;
    let Some(off) = file.offmate() else {
        anyhow::bail!(
            "{}: `offcert offmate` needs an offmate instance (family {})",
            a.instance.display(),
            file.family()
        );
    };
    let limit = Duration::from_secs_f64(a.time_limit.max(0.0));
    let modes: Vec<IlpMode> = if a.ilp.is_empty() {
        vec![IlpMode::Corrected]
    } else {
        a.ilp
            .iter()
            .filter_map(|m| match m {
                IlpArg::Printed => Some(IlpMode::AsPrinted),
                IlpArg::Corrected => Some(IlpMode::Corrected),
                IlpArg::None => None,
            })
            .collect()
    };
    let mut runs = Vec::new();
    let mut notes = Vec::new();
    let opts = crate::bound::offmate::IlpOptions {
        cpu_optimizer: !a.no_cpu_optim,
        ..Default::default()
    };
    for mode in modes {
        for r in om::ilp_runs(off, &inst, mode, limit, opts, a.repairs) {
            match r {
                Ok(run) => runs.push(run),
                Err(e) => notes.push(format!("no plan: {e}")),
            }
        }
    }
    for b in baselines(&a.baselines)? {
        let plan = om::baseline_plan(off, b);
        runs.push(om::run_plan(off, &inst, &plan, PlanSource::Baseline(b))?);
    }
    if let (Some(path), Some(first)) = (&a.out, runs.first()) {
        let s = match &first.outcome {
            crate::check::CheckOutcome::Valid(c) => c.schedule().clone(),
            crate::check::CheckOutcome::Invalid(r) => r.schedule().clone(),
        };
        let sf = ScheduleFile::from_schedule(&s, &inst);
        std::fs::write(path, serde_json::to_string_pretty(&sf)? + "\n")
            .with_context(|| path.display().to_string())?;
    }
    let rows: Vec<rep::OffmateRow> = runs.iter().map(|r| rep::row(&inst, r)).collect();
    let ok = rows
        .iter()
        .all(|r| matches!(r.verdict, rep::RowVerdict::Valid { .. }));
    if a.json {
        let v = serde_json::json!({"instance": a.instance.display().to_string(),
            "release": inst.release.as_str(), "rows": rep::to_json(&rows), "notes": notes});
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("{}", super::instance_line(&a.instance, &file, &inst));
        for n in &notes {
            println!("  {n}");
        }
        print!("{}", rep::render(&rows));
        if let (true, Some(first)) = (a.steps, runs.first()) {
            print!("{}", rep::render_steps(first));
        }
    }
    Ok(super::verdict_code(ok && notes.is_empty()))
}
