//! `offcert gap` (issue 4): heuristics against bounds and optima over files
//! and budgets, a thin handler over [`crate::report::gap`].
//!
//! Owns: the `gap` subcommand.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::family::InstanceFile;
use crate::io;
use crate::report::{self, table, BudgetSpec, GapEntry, GapOptions};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct GapArgs {
    /// Instance files or folders of them (every `*.json` that is not a
    /// `*.schedule.json`). Default: instances/paper/activation,
    /// instances/paper/weight and instances/examples, where present.
    pub instances: Vec<PathBuf>,
    /// Memory budgets: FROM:TO:STEPS or one value; FROM/TO in bytes (K/M/G/Ki/Mi/Gi
    /// suffixes), `min`, `peak` or `P%` (0% = least feasible, 100% = M_peak).
    /// Default: each file's own budget.
    #[arg(long)]
    pub memory: Option<String>,
    /// Also compute the exact optimum for every instance (default: only for
    /// instances with at most --exact-max-ops ops).
    #[arg(long)]
    pub exact: bool,
    /// Largest instance (in ops) whose optimum is computed without --exact.
    #[arg(long, default_value_t = 8)]
    pub exact_max_ops: usize,
    /// Seconds per instance and budget for the exact methods. Given, the
    /// anytime search (best checked heuristic schedule as incumbent, the best
    /// certified bound as known bound) runs on every instance and budget whose
    /// certified gap is still open, and the exact cross-check of small
    /// instances uses the same limit. Not given: no anytime search, and the
    /// cross-check runs with 20 s. On `weight_chain` rows whose gap is open,
    /// the local improvement (re-planning the transfers, every candidate
    /// checked) runs first, within this limit (5 s when not given); the
    /// anytime search gets what it leaves.
    #[arg(long)]
    pub time_limit: Option<u64>,
    /// Only these heuristics (repeatable).
    #[arg(long = "heuristic")]
    pub heuristics: Vec<String>,
    /// Print CSV instead of the text table.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Print JSON instead of the text table.
    #[arg(long)]
    pub json: bool,
    /// Draw makespan / ⌈best certified bound⌉ against memory, per heuristic,
    /// over the certified gap band, into this SVG.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Never show the progress bar.
    #[arg(long)]
    pub quiet: bool,
    #[command(flatten)]
    pub release: super::ReleaseOpt,
}

/// Expand folders into their instance files, sorted.
fn expand(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let defaults = [
        "instances/paper/activation",
        "instances/paper/weight",
        "instances/examples",
    ];
    let given: Vec<PathBuf> = if paths.is_empty() {
        defaults
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.is_dir())
            .collect()
    } else {
        paths.to_vec()
    };
    let mut out = Vec::new();
    for p in given {
        if p.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(&p)
                .with_context(|| p.display().to_string())?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    let n = f.to_string_lossy();
                    n.ends_with(".json") && !n.ends_with(".schedule.json")
                })
                .collect();
            v.sort();
            out.extend(v);
        } else {
            out.push(p);
        }
    }
    if out.is_empty() {
        anyhow::bail!("no instance files given (and no default folder found)");
    }
    Ok(out)
}

/// The exact optimum via the exact solvers' cross-check, when this build has them.
fn exact_optimum(limit: std::time::Duration) -> Box<report::OptimumFn<'static>> {
    Box::new(move |inst| crate::report::exact::optimum(inst, limit))
}

pub fn run(a: GapArgs) -> anyhow::Result<ExitCode> {
    let files = expand(&a.instances)?;
    let spec = a.memory.as_deref().map(BudgetSpec::parse).transpose()?;
    // Load everything first: bad input fails before any long computation.
    let mut jobs: Vec<(String, InstanceFile, Vec<u64>)> = Vec::new();
    for f in &files {
        let (mut file, _) = io::load_instance(f)?;
        a.release.apply_file(&mut file);
        let budgets = match &spec {
            Some(s) => s.budgets(&file).with_context(|| f.display().to_string())?,
            None => vec![report::budget::own_budget(&file)],
        };
        jobs.push((f.display().to_string(), file, budgets));
    }
    let total: u64 = jobs.iter().map(|j| j.2.len() as u64).sum();
    let bar = if a.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:30} {pos}/{len} budgets  {elapsed_precise}  {msg}",
            )
            .expect("valid template"),
        );
        b
    };
    if a.time_limit == Some(0) {
        anyhow::bail!("--time-limit: must be a positive number of seconds");
    }
    let limit = a.time_limit.map(std::time::Duration::from_secs);
    let optimum = exact_optimum(limit.unwrap_or(std::time::Duration::from_secs(20)));
    let prefix = std::cell::RefCell::new(String::new());
    let progress = |p: &crate::exact::anytime::Progress| {
        bar.set_message(format!(
            "{}: anytime {:.0} s, best {}, bound {}, gap {}, {} states",
            prefix.borrow(),
            p.elapsed.as_secs_f64(),
            p.incumbent.map_or("-".into(), |t| t.0.to_string()),
            p.lower_bound.0,
            p.gap()
                .map_or("-".into(), |g| format!("{:.3} %", 100.0 * g)),
            p.states
        ))
    };
    let max_ops = a.exact_max_ops;
    let force = a.exact;
    let exact_for = move |inst: &crate::model::Instance| force || inst.ops.len() <= max_ops;
    let opts = GapOptions {
        optimum: Some(optimum.as_ref()),
        exact_for: &exact_for,
        only: a.heuristics.clone(),
        anytime: limit,
        progress: Some(&progress),
        improve: Some(limit.unwrap_or(std::time::Duration::from_secs(5))),
    };
    let mut entries: Vec<GapEntry> = Vec::new();
    for (label, file, budgets) in &jobs {
        // The best schedule of an earlier budget, checked again at the next.
        let mut carry = report::gap::CarryOver::default();
        for &b in budgets {
            let name = Path::new(label)
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            *prefix.borrow_mut() = format!("{name} @ {}", table::human_bytes(b));
            bar.set_message(prefix.borrow().clone());
            let f = report::with_budget(file, b);
            let inst = f
                .compile()
                .with_context(|| format!("{label} at memory {b} B"))?;
            let entry = report::gap::gap_with_carry(label, &f, &inst, &opts, carry.carried());
            carry.keep(&entry, &table::human_bytes(b));
            entries.push(entry);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    if a.json {
        println!("{}", table::json(&entries));
    } else if a.csv {
        print!("{}", table::csv(&entries));
    } else {
        print!("{}", table::text(&entries));
        if spec.is_some() {
            print_range_labels(&jobs, &entries);
        }
    }
    if let Some(p) = &a.plot {
        report::plot::svg(&entries, p)?;
        if !a.json && !a.csv {
            println!("plot written to {}", p.display());
        }
    }
    let problems: usize = entries.iter().map(|e| e.problems.len()).sum();
    if problems > 0 {
        eprintln!("offcert gap: {problems} problem(s) found (bound above a checked makespan, or an invalid schedule)");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Under a text sweep: what each end of the range is (where the family labels
/// it) and the least budget of the sweep at which a checked schedule exists.
fn print_range_labels(jobs: &[(String, InstanceFile, Vec<u64>)], entries: &[GapEntry]) {
    for (label, file, _) in jobs {
        let Some(ends) = report::budget::range_labels(file) else {
            continue;
        };
        let least_checked = entries
            .iter()
            .filter(|e| e.instance == *label && e.best_schedule.is_some())
            .map(|e| e.budget)
            .min()
            .map_or("none".into(), |b| format!("{b} B"));
        println!(
            "{label}: {ends}; least memory with a checked schedule in this sweep: {least_checked}"
        );
    }
}
