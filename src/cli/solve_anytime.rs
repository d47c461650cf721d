//! `offcert solve INSTANCE --method anytime --time-limit S [--memory M]
//! [--schedule-out FILE] [--json]`: the anytime search (`exact::anytime`)
//! started from the best checked heuristic schedule (improved locally,
//! `heuristic::improve`) and the best certified bound (`bound`). Prints the
//! incumbent, the certified lower bound, the gap and the claim words; progress
//! lines go to stderr; Ctrl-C returns what the search has.
//!
//! Owns: the anytime branch of `solve`.
//! Must not import: nothing is forbidden (the top layer); every figure printed
//! is a `Checked`'s makespan or a certified bound.

use super::solve::SolveArgs;
use crate::bound::{self, Strength};
use crate::exact::anytime::{solve_anytime, AnytimeOptions, Progress};
use crate::heuristic;
use crate::schedule::ScheduleFile;
use crate::units::Ticks;
use anyhow::Context;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn run(a: &SolveArgs) -> anyhow::Result<ExitCode> {
    if !(a.time_limit > 0.0 && a.time_limit.is_finite()) {
        anyhow::bail!("--time-limit: must be a positive number of seconds");
    }
    if a.rescale || a.certificate.is_some() {
        anyhow::bail!("--method anytime: --rescale and --certificate are not supported");
    }
    let (file, inst) = super::load_at_memory(&a.instance, a.release, a.memory.as_deref())?;
    let started = Instant::now();
    // Incumbent: the best checked heuristic schedule, improved locally.
    let incumbent = heuristic::best_run(&file, &inst).map(|r| {
        let name = r.name.to_string();
        match heuristic::improve::improve(
            &inst,
            &r.checked,
            Duration::from_secs_f64(a.time_limit / 10.0),
        ) {
            Some(better) => (format!("{name}+improve"), better),
            None => (name, r.checked),
        }
    });
    // Known bound: the best certified bound (never a solver-reported one).
    let certified: Vec<bound::LowerBound> = bound::evaluate(&file, &inst)
        .into_iter()
        .filter_map(|(_, r)| r.ok())
        .filter(|b| b.strength == Strength::Certified)
        .collect();
    let known = bound::best_of(&certified, Strength::Certified).cloned();
    let interrupt = Arc::new(AtomicBool::new(false));
    {
        let c = interrupt.clone();
        let _ = ctrlc::set_handler(move || {
            eprintln!("solve: interrupted; returning what the search has");
            c.store(true, Ordering::SeqCst);
        });
    }
    let show = |p: &Progress| {
        eprintln!(
            "anytime: {:>7.1}s  incumbent {:>9}  bound {:>9}  gap {:>8}  {} states, {} open",
            p.elapsed.as_secs_f64(),
            p.incumbent.map_or("-".into(), |t| t.to_string()),
            p.lower_bound,
            p.gap().map_or("-".into(), |g| format!("{:.3}%", 100.0 * g)),
            p.states,
            p.open
        )
    };
    let left = Duration::from_secs_f64(a.time_limit).saturating_sub(started.elapsed());
    let opts = AnytimeOptions {
        time_limit: left,
        incumbent: incumbent.as_ref().map(|(_, c)| c.clone()),
        known_bound: known.as_ref().map(|b| Ticks(b.ceil_ticks())),
        progress: if a.json { None } else { Some(&show) },
        interrupt: Some(interrupt),
        ..AnytimeOptions::default()
    };
    let out = solve_anytime(&inst, &opts)?;
    let best_by = if out.best_from_search {
        "anytime search".to_string()
    } else {
        incumbent.as_ref().map_or("-".into(), |(n, _)| n.clone())
    };
    let bound_by = match (&known, out.search_bound) {
        (Some(k), Some(s)) if Ticks(k.ceil_ticks()) >= s => k.source.clone(),
        (Some(k), None) => k.source.clone(),
        _ => "anytime search".into(),
    };
    let makespan = out.best.as_ref().map(|c| c.makespan());
    if a.json {
        let j = serde_json::json!({
            "instance": a.instance.display().to_string(),
            "memory": crate::report::budget::own_budget(&file),
            "release_rule": inst.release,
            "status": out.claim(),
            "makespan": makespan,
            "best_by": best_by,
            "lower_bound": out.lower_bound,
            "lower_bound_by": bound_by,
            "search_bound": out.search_bound,
            "gap": out.gap(),
            "states": out.states,
            "stop": out.stop,
            "elapsed_ms": out.elapsed.as_millis(),
            "notes": out.notes,
        });
        println!("{}", serde_json::to_string_pretty(&j)?);
    } else {
        println!("{}", super::instance_line(&a.instance, &file, &inst));
        println!("status:      {}", out.claim());
        println!(
            "incumbent:   {} ({})",
            makespan.map_or("-".into(), |t| format!("{t} ticks, valid")),
            best_by
        );
        println!(
            "bound:       {} ticks, lower bound (certified) ({bound_by})",
            out.lower_bound
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
    if let (Some(path), Some(c)) = (&a.schedule_out, &out.best) {
        let f = ScheduleFile::from_schedule(c.schedule(), &inst);
        std::fs::write(path, serde_json::to_string_pretty(&f)? + "\n")
            .with_context(|| format!("{}: cannot write the schedule", path.display()))?;
    }
    Ok(if out.infeasible {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
