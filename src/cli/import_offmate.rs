//! `offcert import offmate-solution INSTANCE SOLUTION`: OFFMATE's own plan
//! (`scripts/export_offmate.py --solution`, format
//! [`crate::family::offmate_solution`]) turned into whole-tensor decisions,
//! realised by offcert's realiser and judged by the checker; then compared
//! with Algorithm 1 as offcert realises it (the corrected ILP, the same
//! post-processing), per block option, Adam placement and residency.
//!
//! Exit 0 when the checker accepts OFFMATE's schedule, 1 when it refutes it
//! (its reason printed), 2 on bad input (the file and field named).
//!
//! Owns: the `import offmate-solution` handler.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::check::{check, CheckOutcome};
use crate::family::offmate_solution::OffmateSolution;
use crate::heuristic::offmate::{algorithm1, realise, solution};
use crate::heuristic::SolverLimit;
use crate::io;
use crate::schedule::ScheduleFile;
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct OffmateSolutionArgs {
    /// The `offmate` instance file.
    pub instance: PathBuf,
    /// OFFMATE's plan (`offmate-solution/1` JSON).
    pub solution: PathBuf,
    /// Write the realised schedule (checked or not) to this file.
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Do not run Algorithm 1 for the comparison.
    #[arg(long)]
    pub no_compare: bool,
    /// Time limit per ILP solve of Algorithm 1 (default: a node limit, the
    /// same result on every machine).
    #[arg(long, value_parser = super::seconds_arg)]
    pub time_limit: Option<f64>,
    /// Differences printed at most (their counts are always printed).
    #[arg(long, default_value_t = 40)]
    pub show: usize,
}

/// Read and validate the solution file: errors name the file and the field.
fn load_solution(path: &std::path::Path) -> anyhow::Result<OffmateSolution> {
    let file = path.display().to_string();
    let text = io::read_text(path)?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| io::json_error(&file, e))?;
    serde_path_to_error::deserialize(v).map_err(|e| {
        io::InputError::Field(io::FieldError {
            file: file.clone(),
            field: e.path().to_string(),
            message: e.into_inner().to_string(),
        })
        .into()
    })
}

pub fn run(a: OffmateSolutionArgs) -> anyhow::Result<ExitCode> {
    let (file, inst) = super::load_at_memory(&a.instance, super::ReleaseOpt::default(), None)?;
    let Some(off) = file.offmate() else {
        anyhow::bail!(
            "{}: needs an offmate instance (family {})",
            a.instance.display(),
            file.family()
        );
    };
    let sol = load_solution(&a.solution)?;
    sol.validate(off).map_err(|error| io::InputError::Model {
        file: a.solution.display().to_string(),
        error,
    })?;
    let theirs = solution::rounded(off, &sol)?;
    let realised = realise(off, &inst, &theirs)?;
    let outcome = check(&inst, &realised.schedule);
    println!("{}", super::instance_line(&a.instance, &file, &inst));
    println!(
        "  OFFMATE's plan ({}), realised by offcert",
        a.solution.display()
    );
    let ok = match &outcome {
        CheckOutcome::Valid(c) => {
            println!(
                "    checked period {} (valid, checked)  GPU peak {}  CPU peak {}",
                c.report().makespan.human(None),
                c.report().peak_memory.human(),
                c.report().peak_cpu_memory.human()
            );
            true
        }
        CheckOutcome::Invalid(r) => {
            println!(
                "    refuted by the checker ({} violations); first: {}",
                r.violations().len(),
                r.violations()
                    .first()
                    .map(|v| v.describe(&inst))
                    .unwrap_or_default()
            );
            false
        }
    };
    if let Some(path) = &a.out {
        let s = match &outcome {
            CheckOutcome::Valid(c) => c.schedule(),
            CheckOutcome::Invalid(r) => r.schedule(),
        };
        let sf = ScheduleFile::from_schedule(s, &inst);
        std::fs::write(path, serde_json::to_string_pretty(&sf)? + "\n")
            .with_context(|| path.display().to_string())?;
    }
    if !a.no_compare {
        compare(off, &inst, &theirs, &a);
    }
    Ok(super::verdict_code(ok))
}

/// Algorithm 1's first attempt the checker accepts (or its last), and the
/// differences between the two plans.
fn compare(
    off: &crate::family::offmate::Offmate,
    inst: &crate::model::Instance,
    theirs: &crate::heuristic::offmate::Rounded,
    a: &OffmateSolutionArgs,
) {
    let limit = a.time_limit.map_or(SolverLimit::Deterministic, |s| {
        SolverLimit::Time(Duration::from_secs_f64(s))
    });
    let runs: Vec<_> = algorithm1::runs(off, inst, limit)
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    let Some(ours) = runs
        .iter()
        .find(|r| matches!(r.outcome, CheckOutcome::Valid(_)))
        .or(runs.last())
    else {
        println!("  Algorithm 1: no plan (its ILP gave none); nothing to compare");
        return;
    };
    let verdict = match &ours.outcome {
        CheckOutcome::Valid(c) => format!("checked period {} (valid, checked)", c.makespan().0),
        CheckOutcome::Invalid(_) => "refuted by the checker".into(),
    };
    println!("  Algorithm 1 as offcert realises it: {verdict}");
    let d = solution::differences(off, theirs, &ours.rounded);
    println!(
        "  differences: {} block options, {} Adam placements, {} parameter residencies, {} state residencies",
        d.options, d.updates, d.residency, d.states
    );
    for l in d.lines.iter().take(a.show) {
        println!("    {l}");
    }
    if d.lines.len() > a.show {
        println!("    … and {} more (--show N)", d.lines.len() - a.show);
    }
}
