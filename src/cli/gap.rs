//! `offcert gap` (issue 4): heuristics against bounds and optima over files
//! and budgets, a thin handler over [`crate::report::gap`].
//!
//! Owns: the `gap` subcommand.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::family::InstanceFile;
use crate::heuristic::effort::Effort;
use crate::heuristic::SolverLimit;
use crate::io;
use crate::report::{self, table, BudgetSpec, GapEntry, GapOptions};
use anyhow::Context;
use indicatif::ProgressBar;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The improvement's work per open row without `--time-limit`: a count of
/// candidates, never a clock, so that rows do not depend on the machine.
pub const IMPROVE_CANDIDATES: u64 = 20_000;

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
    /// checked) runs first, within this limit (when not given: at most
    /// 20000 candidates, so that the report does not depend on the machine);
    /// the anytime search gets what it leaves. Whole seconds (`60`, `60s`, `2m`).
    #[arg(long, value_parser = super::whole_seconds_arg)]
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
    /// Never show progress on stderr (the bar on a terminal, else a line per
    /// finished instance).
    #[arg(long)]
    pub quiet: bool,
    /// Instances computed at once (their budgets in order, each offered the
    /// previous budget's best schedule). Without --time-limit the report is
    /// the same for every N, byte for byte. Default: the machine's cores.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: Option<u64>,
    #[command(flatten)]
    pub release: super::ReleaseOpt,
    /// Judge every row's schedules under this allocator (MODEL.md §2.8):
    /// rows are computed in the `exact` model; a heuristic's schedule valid
    /// there but not under the allocator counts as no schedule, with the
    /// reason; the optimum is kept only if its schedule passes.
    #[command(flatten)]
    pub allocator: super::AllocatorOpt,
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

/// One instance file and its budgets, in order.
struct Job {
    label: String,
    file: InstanceFile,
    budgets: Vec<u64>,
    /// The allocator the rows are judged under at the end (the file is
    /// computed in the exact model).
    allocator: crate::model::Allocator,
}

/// What every worker shares: the exact optimum, which instances get it, the
/// heuristics asked for and the limits.
struct Shared {
    optimum: Box<report::OptimumFn<'static>>,
    exact_max_ops: usize,
    exact_all: bool,
    only: Vec<String>,
    limit: Option<Duration>,
}

/// Load every file and its budgets: bad input fails before any computation.
fn load(a: &GapArgs) -> anyhow::Result<Vec<Job>> {
    let spec = a.memory.as_deref().map(BudgetSpec::parse).transpose()?;
    let mut jobs = Vec::new();
    for f in &expand(&a.instances)? {
        let (mut file, _) = io::load_instance(f)?;
        a.release.apply_file(&mut file);
        let allocator = a.allocator.allocator.unwrap_or(file.allocator());
        file.set_allocator(crate::model::Allocator::Exact);
        let budgets = match &spec {
            Some(s) => s.budgets(&file).with_context(|| f.display().to_string())?,
            None => vec![report::budget::own_budget(&file)],
        };
        jobs.push(Job {
            label: f.display().to_string(),
            file,
            budgets,
            allocator,
        });
    }
    Ok(jobs)
}

/// The progress bar (hidden with `--quiet`, and by indicatif when stderr is
/// not a terminal).
fn progress_bar(quiet: bool, total: u64) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(total);
    b.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} budgets  {elapsed_precise}  {msg}",
        )
        .expect("valid template"),
    );
    b
}

/// The anytime search's progress line.
fn anytime_message(prefix: &str, p: &crate::exact::anytime::Progress) -> String {
    format!(
        "{prefix}: anytime {:.0} s, best {}, bound {}, gap {}, {} states",
        p.elapsed.as_secs_f64(),
        p.incumbent.map_or("-".into(), |t| t.0.to_string()),
        p.lower_bound.0,
        p.gap()
            .map_or("-".into(), |g| format!("{:.3} %", 100.0 * g)),
        p.states
    )
}

/// Every budget of one instance, in order, each offered the best schedule of
/// the budgets before it ([`report::gap::CarryOver`]): the rows of one
/// instance form a chain, computed by one worker.
fn instance_rows(job: &Job, shared: &Shared, bar: &ProgressBar) -> anyhow::Result<Vec<GapEntry>> {
    let name = Path::new(&job.label)
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let prefix = std::sync::Mutex::new(String::new());
    let progress = |p: &crate::exact::anytime::Progress| {
        let pre = prefix.lock().map(|g| g.clone()).unwrap_or_default();
        bar.set_message(anytime_message(&pre, p));
    };
    let exact_for =
        |inst: &crate::model::Instance| shared.exact_all || inst.ops.len() <= shared.exact_max_ops;
    let opts = GapOptions {
        optimum: Some(shared.optimum.as_ref()),
        exact_for: &exact_for,
        only: shared.only.clone(),
        anytime: shared.limit,
        progress: Some(&progress),
        improve: Some(
            shared
                .limit
                .map_or(Effort::Candidates(IMPROVE_CANDIDATES), Effort::Time),
        ),
        solver_limit: shared
            .limit
            .map_or(SolverLimit::Deterministic, SolverLimit::Time),
    };
    let mut carry = report::gap::CarryOver::default();
    let mut rows = Vec::new();
    for &b in &job.budgets {
        let here = format!("{name} @ {}", table::human_bytes(b));
        bar.set_message(here.clone());
        if let Ok(mut g) = prefix.lock() {
            *g = here;
        }
        let f = report::with_budget(&job.file, b);
        let inst = f
            .compile()
            .with_context(|| format!("{} at memory {b} B", job.label))?;
        let mut entry = report::gap::gap_with_carry(&job.label, &f, &inst, &opts, carry.carried());
        carry.keep(&entry, &table::human_bytes(b));
        report::allocated::restrict(&mut entry, &inst, job.allocator);
        rows.push(entry);
        bar.inc(1);
    }
    Ok(rows)
}

/// Compute every instance on `threads` workers and hand each instance's rows
/// to `emit` in input order, as soon as it and every instance before it are
/// done. A row depends only on its instance, its budget and the rows before
/// it of the same instance, so the rows are the same for every `threads`.
fn compute(
    jobs: &[Job],
    shared: &Shared,
    threads: usize,
    bar: &ProgressBar,
    mut emit: impl FnMut(&Job, &[GapEntry]),
) -> anyhow::Result<Vec<GapEntry>> {
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, jobs.len().max(1)) {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(job) = jobs.get(i) else { break };
                if tx.send((i, instance_rows(job, shared, bar))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut pending = BTreeMap::new();
        let mut all = Vec::new();
        let mut done = 0;
        for (i, rows) in rx {
            pending.insert(i, rows);
            while let Some(rows) = pending.remove(&done) {
                let rows = rows.inspect_err(|_| next.store(jobs.len(), Ordering::SeqCst))?;
                emit(&jobs[done], &rows);
                all.extend(rows);
                done += 1;
            }
        }
        Ok(all)
    })
}

/// Where the rows go as they come: text, CSV or JSON on stdout.
enum Sink {
    Text,
    Csv,
    Json(table::JsonArray),
}

impl Sink {
    fn open(a: &GapArgs) -> Sink {
        if a.json {
            Sink::Json(table::JsonArray::default())
        } else if a.csv {
            print!("{}", table::csv(&[]));
            Sink::Csv
        } else {
            Sink::Text
        }
    }
    fn rows(&mut self, entries: &[GapEntry]) {
        use std::io::Write;
        match self {
            Sink::Text => print!("{}", table::text(entries)),
            Sink::Csv => print!("{}", table::csv_rows(entries)),
            Sink::Json(j) => print!("{}", j.push(entries)),
        }
        let _ = std::io::stdout().flush();
    }
    fn close(self) {
        if let Sink::Json(j) = self {
            println!("{}", j.close());
        }
    }
}

pub fn run(a: GapArgs) -> anyhow::Result<ExitCode> {
    let jobs = load(&a)?;
    if a.time_limit == Some(0) {
        anyhow::bail!("--time-limit: must be a positive number of seconds");
    }
    let threads = a.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |n| n as usize,
    );
    let limit = a.time_limit.map(Duration::from_secs);
    let exact_limit = limit.unwrap_or(Duration::from_secs(20));
    let shared = Shared {
        optimum: Box::new(move |inst| report::exact::optimum(inst, exact_limit)),
        exact_max_ops: a.exact_max_ops,
        exact_all: a.exact,
        only: a.heuristics.clone(),
        limit,
    };
    let bar = progress_bar(a.quiet, jobs.iter().map(|j| j.budgets.len() as u64).sum());
    // No bar (stderr is not a terminal): a plain line per finished instance.
    let lines = !a.quiet && bar.is_hidden();
    let mut sink = Sink::open(&a);
    let mut finished = 0;
    let text_sweep = a.memory.is_some() && !a.json && !a.csv;
    let entries = compute(&jobs, &shared, threads, &bar, |job, rows| {
        bar.suspend(|| {
            sink.rows(rows);
            if text_sweep {
                print_range_labels(job, rows);
            }
        });
        finished += 1;
        if lines {
            eprintln!("offcert gap: {finished}/{} done: {}", jobs.len(), job.label);
        }
    })?;
    bar.finish_and_clear();
    sink.close();
    let summary = table::summary(&entries);
    if a.json || a.csv {
        eprintln!("{summary}");
    } else {
        println!("{summary}");
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
fn print_range_labels(job: &Job, rows: &[GapEntry]) {
    let Some(ends) = report::budget::range_labels(&job.file) else {
        return;
    };
    let least_checked = rows
        .iter()
        .filter(|e| e.best_schedule.is_some())
        .map(|e| e.budget)
        .min()
        .map_or("none".into(), |b| crate::units::Bytes(b).human());
    println!(
        "{}: {ends}; least memory with a checked schedule in this sweep: {least_checked}",
        job.label
    );
}
