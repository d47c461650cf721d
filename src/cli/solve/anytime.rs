//! `offcert solve INSTANCE --method anytime --time-limit S [--memory M]
//! [--schedule-out FILE] [--json]`: the anytime search (`exact::anytime`)
//! started from the best checked heuristic schedule (improved locally,
//! `heuristic::improve`) and the best certified bound (`bound`). Prints the
//! incumbent, the certified lower bound, the gap and the claim words; progress
//! lines go to stderr; Ctrl-C returns what the search has.
//!
//! Owns: the anytime branch of `solve` and its [`Request`] (this module does
//! not import its parent, which builds the request).
//! Must not import: nothing is forbidden (the top layer); every figure printed
//! is a `Checked`'s makespan or a certified bound.

use crate::bound::{self, Strength};
use crate::check::Checked;
use crate::exact::anytime::{solve_anytime, AnytimeOptions, AnytimeOutcome, Progress};
use crate::family::InstanceFile;
use crate::heuristic;
use crate::model::Instance;
use crate::schedule::ScheduleFile;
use crate::units::Ticks;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What `solve --method anytime` was asked for.
#[derive(Clone, Debug)]
pub struct Request {
    pub instance: PathBuf,
    /// Seconds in all (heuristic start, improvement and search).
    pub time_limit: f64,
    /// `--memory`, as given (parsed by [`crate::cli::load_at_memory`]).
    pub memory: Option<String>,
    pub release: crate::cli::ReleaseOpt,
    pub json: bool,
    pub schedule_out: Option<PathBuf>,
}

pub fn run(a: &Request) -> anyhow::Result<ExitCode> {
    if !(a.time_limit > 0.0 && a.time_limit.is_finite()) {
        anyhow::bail!("--time-limit: must be a positive number of seconds");
    }
    let (file, inst) = crate::cli::load_at_memory(&a.instance, a.release, a.memory.as_deref())?;
    let started = Instant::now();
    let incumbent = starting_incumbent(&file, &inst, a.time_limit);
    let known = best_certified_bound(&file, &inst);
    let interrupt = install_interrupt();
    let left = Duration::from_secs_f64(a.time_limit).saturating_sub(started.elapsed());
    let opts = AnytimeOptions {
        time_limit: left,
        incumbent: incumbent.as_ref().map(|(_, c)| c.clone()),
        known_bound: known.as_ref().map(|b| Ticks(b.ceil_ticks())),
        progress: if a.json { None } else { Some(&show_progress) },
        interrupt: Some(interrupt),
        ..AnytimeOptions::default()
    };
    let out = solve_anytime(&inst, &opts)?;
    let credits = Credits::of(&out, incumbent.as_ref(), known.as_ref());
    if a.json {
        print_json(a, &file, &inst, &out, &credits)?;
    } else {
        print_text(a, &file, &inst, &out, &credits);
    }
    if let (Some(path), Some(c)) = (&a.schedule_out, &out.best) {
        write_schedule(path, c, &inst)?;
    }
    Ok(if out.infeasible {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The search starts from the best checked heuristic schedule, improved
/// locally for a tenth of the time limit, so that it prunes from the first
/// node; the name says which heuristic (and whether `improve` helped) for the
/// `best_by` credit.
fn starting_incumbent(
    file: &InstanceFile,
    inst: &Instance,
    time_limit: f64,
) -> Option<(String, Checked)> {
    heuristic::best_run(file, inst).map(|r| {
        let name = r.name.to_string();
        match heuristic::improve::improve(
            inst,
            &r.checked,
            Duration::from_secs_f64(time_limit / 10.0),
        ) {
            Some(better) => (format!("{name}+improve"), better),
            None => (name, r.checked),
        }
    })
}

/// The known bound handed to the search: the best *certified* bound, never a
/// solver-reported one, because the outcome reports it as
/// `lower bound (certified)`.
fn best_certified_bound(file: &InstanceFile, inst: &Instance) -> Option<bound::LowerBound> {
    let certified: Vec<bound::LowerBound> = bound::evaluate(file, inst)
        .into_iter()
        .filter_map(|(_, r)| r.ok())
        .filter(|b| b.strength == Strength::Certified)
        .collect();
    bound::best_of(&certified, Strength::Certified).cloned()
}

/// Ctrl-C sets the returned flag instead of killing the process, so that the
/// search stops and the command still prints (and writes) what it has.
fn install_interrupt() -> Arc<AtomicBool> {
    let interrupt = Arc::new(AtomicBool::new(false));
    let c = interrupt.clone();
    let _ = ctrlc::set_handler(move || {
        eprintln!("solve: interrupted; returning what the search has");
        c.store(true, Ordering::SeqCst);
    });
    interrupt
}

/// One progress line on stderr (stdout stays the result alone).
fn show_progress(p: &Progress) {
    eprintln!(
        "anytime: {:>7.1}s  incumbent {:>9}  bound {:>9}  gap {:>8}  {} states, {} open",
        p.elapsed.as_secs_f64(),
        p.incumbent.map_or("-".into(), |t| t.to_string()),
        p.lower_bound,
        p.gap().map_or("-".into(), |g| format!("{:.3}%", 100.0 * g)),
        p.states,
        p.open
    )
}

/// Who found the printed schedule and who proved the printed bound: both
/// outputs (text and JSON) credit the same sources.
struct Credits {
    /// The heuristic name of the incumbent, or "anytime search".
    best_by: String,
    /// The certified bound's source, or "anytime search" when its own bound
    /// is the stronger one.
    bound_by: String,
}

impl Credits {
    /// The credits for `out`, given the incumbent and the known bound that
    /// were passed to the search.
    fn of(
        out: &AnytimeOutcome,
        incumbent: Option<&(String, Checked)>,
        known: Option<&bound::LowerBound>,
    ) -> Self {
        let best_by = if out.best_from_search {
            "anytime search".to_string()
        } else {
            incumbent.map_or("-".into(), |(n, _)| n.clone())
        };
        let bound_by = match (known, out.search_bound) {
            (Some(k), Some(s)) if Ticks(k.ceil_ticks()) >= s => k.source.clone(),
            (Some(k), None) => k.source.clone(),
            _ => "anytime search".into(),
        };
        Credits { best_by, bound_by }
    }
}

/// The `--json` report: the checker's makespan and the certified bound, with
/// their credits, as one object on stdout.
fn print_json(
    a: &Request,
    file: &InstanceFile,
    inst: &Instance,
    out: &AnytimeOutcome,
    credits: &Credits,
) -> anyhow::Result<()> {
    let j = serde_json::json!({
        "instance": a.instance.display().to_string(),
        "memory": crate::report::budget::own_budget(file),
        "release_rule": inst.release,
        "status": out.claim(),
        "makespan": out.best.as_ref().map(|c| c.makespan()),
        "best_by": credits.best_by,
        "lower_bound": out.lower_bound,
        "lower_bound_by": credits.bound_by,
        "search_bound": out.search_bound,
        "gap": out.gap(),
        "states": out.states,
        "stop": out.stop,
        "elapsed_ms": out.elapsed.as_millis(),
        "notes": out.notes,
    });
    println!("{}", serde_json::to_string_pretty(&j)?);
    Ok(())
}

/// The human report: the same figures as [`print_json`], with claim words.
fn print_text(
    a: &Request,
    file: &InstanceFile,
    inst: &Instance,
    out: &AnytimeOutcome,
    credits: &Credits,
) {
    let makespan = out.best.as_ref().map(|c| c.makespan());
    println!("{}", crate::cli::instance_line(&a.instance, file, inst));
    println!("status:      {}", out.claim());
    println!(
        "incumbent:   {} ({})",
        makespan.map_or("-".into(), |t| format!(
            "{}, valid",
            t.human(file.tick_unit())
        )),
        credits.best_by
    );
    println!(
        "bound:       {}, lower bound (certified) ({})",
        Ticks(out.lower_bound.0).human(file.tick_unit()),
        credits.bound_by
    );
    println!(
        "gap:         {}",
        out.gap()
            .map_or("-".into(), |g| format!("{:.3}% (certified)", 100.0 * g))
    );
    println!(
        "search:      {} states, stopped: {:?}, {:.2} s",
        out.states,
        out.stop,
        out.elapsed.as_secs_f64()
    );
    for n in &out.notes {
        println!("note:        {n}");
    }
}

/// `--schedule-out`: the best (checked) schedule as a schedule file.
fn write_schedule(path: &Path, c: &Checked, inst: &Instance) -> anyhow::Result<()> {
    let f = ScheduleFile::from_schedule(c.schedule(), inst);
    std::fs::write(path, serde_json::to_string_pretty(&f)? + "\n")
        .with_context(|| format!("{}: cannot write the schedule", path.display()))
}
