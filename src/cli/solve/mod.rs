//! `offcert solve INSTANCE --method milp|smt|search|all --time-limit S
//! [--schedule-out FILE] [--certificate DIR] [--rescale] [--json]`.
//!
//! Runs the exact methods through `exact::crosscheck`, so every number printed
//! is the checker's. Ctrl-C sets `Limits::cancel`; the best schedule found so
//! far is still printed (and written).
//!
//! The certificate directory is written by [`crate::exact::certificate`]; the
//! anytime branch lives in [`anytime`], which takes its own request (it does
//! not import this module).
//!
//! Owns: the `solve` subcommand.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

pub mod anytime;

use crate::exact::certificate::{self, Source};
use crate::exact::crosscheck::{self, Verdict};
use crate::exact::{milp, rescale, Limits, Method, Status};
use crate::io;
use crate::model::{Instance, Mode};
use crate::schedule::ScheduleFile;
use crate::units::{TickUnit, Ticks};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MethodArg {
    Milp,
    Smt,
    Search,
    /// Checkmate's MILP on a computation graph (graph family).
    Checkmate,
    /// The exhaustive search on a computation graph (graph family).
    GraphSearch,
    /// Every method that applies; on a computation graph, the two graph methods.
    All,
    /// The anytime search (exact::anytime): the best checked heuristic
    /// schedule as incumbent, the best certified bound as known bound; prints
    /// the incumbent, the certified bound and the gap.
    Anytime,
}

#[derive(clap::Args, Debug)]
pub struct SolveArgs {
    /// Instance file (JSON, tagged by `family`).
    pub instance: PathBuf,
    /// Which exact method(s) to run; `all` runs every method and cross-checks them.
    #[arg(long, value_enum, default_value = "all")]
    pub method: MethodArg,
    /// Time allowed per method (`60`, `60s`, `2m`, `500ms`; bare: seconds).
    #[arg(long, default_value_t = 60.0, value_parser = super::seconds_arg)]
    pub time_limit: f64,
    /// Write the best schedule found here (JSON schedule file).
    #[arg(long)]
    pub schedule_out: Option<PathBuf>,
    /// Write a re-checkable certificate of optimality into this directory.
    #[arg(long)]
    pub certificate: Option<PathBuf>,
    /// Rescale time so that every transfer time |t|/β is whole (EXACTNESS §2);
    /// the makespan is then also shown in the file's own ticks.
    #[arg(long)]
    pub rescale: bool,
    /// Print the verdict as JSON.
    #[arg(long)]
    pub json: bool,
    /// Solve at this GPU memory, overriding the file's (bytes such as `2G`,
    /// `1.5GiB`, `64MiB`; or `min`, `peak`, `P%` of least..peak where the
    /// family defines them); every method.
    #[arg(long)]
    pub memory: Option<String>,
    #[command(flatten)]
    pub release: super::ReleaseOpt,
}

fn methods(m: MethodArg, inst: &Instance) -> Vec<Method> {
    match m {
        MethodArg::Milp => vec![Method::Milp],
        MethodArg::Smt => vec![Method::Smt],
        MethodArg::Search => vec![Method::Search],
        MethodArg::Checkmate => vec![Method::Checkmate],
        MethodArg::GraphSearch => vec![Method::GraphSearch],
        MethodArg::All if crate::family::dag::Dag::of(inst).is_ok() => {
            vec![Method::Checkmate, Method::GraphSearch]
        }
        MethodArg::All => vec![Method::Milp, Method::Smt, Method::Search],
        MethodArg::Anytime => vec![],
    }
}

/// The anytime branch's request; `--rescale` and `--certificate` are refused.
fn anytime_request(a: &SolveArgs) -> anyhow::Result<anytime::Request> {
    if a.rescale || a.certificate.is_some() {
        anyhow::bail!("--method anytime: --rescale and --certificate are not supported");
    }
    Ok(anytime::Request {
        instance: a.instance.clone(),
        time_limit: a.time_limit,
        memory: a.memory.clone(),
        release: a.release,
        json: a.json,
        schedule_out: a.schedule_out.clone(),
    })
}

pub fn run(a: SolveArgs) -> anyhow::Result<ExitCode> {
    if !(a.time_limit > 0.0 && a.time_limit.is_finite()) {
        anyhow::bail!("--time-limit: must be a positive number of seconds");
    }
    if a.method == MethodArg::Anytime {
        return anytime::run(&anytime_request(&a)?);
    }
    let text = io::read_text(&a.instance)?;
    let (given, used) = super::file_at_memory(&a.instance, &text, a.release, a.memory.as_deref())?;
    let mut inst = used
        .compile()
        .with_context(|| a.instance.display().to_string())?;
    let mut scale = 1u64;
    if a.rescale {
        let (r, k) = rescale(&inst).with_context(|| {
            format!(
                "{}: rescaling the time unit overflows 64 bits",
                a.instance.display()
            )
        })?;
        let horizon = r.total_compute().0;
        if horizon > milp::MAX_HORIZON {
            anyhow::bail!(
                "{}: rescaling by K = {k} makes every transfer time whole, but the compute alone then spans {horizon} slots (limit {}); the time-indexed MILP cannot use such a grid — solve without --rescale (transfers then last ⌈|t|/β⌉ ticks) or coarsen the instance",
                a.instance.display(),
                milp::MAX_HORIZON
            );
        }
        inst = r;
        scale = k;
    } else if inst
        .tensors
        .iter()
        .any(|t| t.transferable && !inst.machine.bandwidth.divides(t.size))
    {
        eprintln!(
            "solve: note: some transfer times |t|/β are not whole ticks; schedules are integral, so such transfers last ⌈|t|/β⌉ ticks (use --rescale for a finer grid)"
        );
    }
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let c = cancel.clone();
        // A second handler cannot be installed in one process (tests run several
        // solves): ignore that error, the first one still sets its own flag.
        let _ = ctrlc::set_handler(move || {
            eprintln!("solve: interrupted; returning the best schedule found so far");
            c.store(true, Ordering::SeqCst);
        });
    }
    let limits = Limits {
        time_limit: Duration::from_secs_f64(a.time_limit),
        cancel,
        progress: true,
    };
    let v = crosscheck::run(&inst, &methods(a.method, &inst), &limits);
    print_verdict(&a, &inst, &v, (scale, used.tick_unit()))?;
    if let (Some(path), Some(c)) = (&a.schedule_out, &v.checked) {
        let mut f = ScheduleFile::from_schedule(c.schedule(), &inst);
        if scale > 1 {
            f.note = Some(format!(
                "in rescaled ticks: 1 tick = 1/{scale} tick of {}; check it against the rescaled instance (`solve --rescale --certificate DIR` writes it)",
                a.instance.display()
            ));
            eprintln!(
                "solve: note: {} is in rescaled ticks (1/{scale} of the file's); `--certificate DIR` writes the rescaled instance it checks against",
                path.display()
            );
        }
        std::fs::write(path, serde_json::to_string_pretty(&f)? + "\n")
            .with_context(|| format!("{}: cannot write the schedule", path.display()))?;
    }
    if let Some(dir) = &a.certificate {
        let source = Source {
            path: &a.instance,
            text: &text,
            given: &given,
            used: &used,
        };
        certificate::write(dir, source, &inst, &v, scale)?;
    }
    Ok(exit_code(&v))
}

/// 0 when a schedule was found (and checked), 1 when none was: infeasible, or
/// no result at all (every method failed or stopped without a schedule; each
/// method's reason goes to stderr). Bad input exits 2 before any method runs.
fn exit_code(v: &Verdict) -> ExitCode {
    if v.checked.is_some() && !v.label.is_infeasible() {
        return ExitCode::SUCCESS;
    }
    if v.label.is_none_within_limits() {
        eprintln!("solve: no schedule within the op-sequence limits of proofs/REMAT-EXACT.md; one outside them may exist (not proved infeasible)");
    } else if !v.label.is_infeasible() {
        eprintln!("solve: no result: no method found a schedule or proved that none exists");
        for m in &v.methods {
            let why = match (&m.error, m.status) {
                (Some(e), _) => e.to_string(),
                (None, Some(s)) => format!("{s:?}").to_lowercase(),
                (None, None) => "no answer".into(),
            };
            eprintln!("  {}: {why}", format!("{:?}", m.method).to_lowercase());
        }
    }
    ExitCode::from(1)
}

/// `unit`: the time scale (1: the file's ticks) and the file's tick length.
fn print_verdict(
    a: &SolveArgs,
    inst: &Instance,
    v: &Verdict,
    unit: (u64, Option<TickUnit>),
) -> anyhow::Result<()> {
    let (scale, tick) = unit;
    let what = if inst.mode == Mode::Cyclic {
        "period"
    } else {
        "makespan"
    };
    if a.json {
        let j = serde_json::json!({
            "instance": a.instance.display().to_string(),
            "release_rule": inst.release,
            "status": v.label.words(),
            "label": v.label,
            what: v.makespan(),
            "bound": v.bound,
            "time_scale": scale,
            "elapsed_ms": v.elapsed.as_millis(),
            "methods": v.methods,
            "evidence": v.evidence,
            "disagreements": v.disagreements,
            "checker_valid": v.checked.as_ref().map(|c| c.report().valid),
        });
        println!("{}", serde_json::to_string_pretty(&j)?);
        return Ok(());
    }
    let show = |t: Option<Ticks>| match t {
        None => "-".to_string(),
        Some(t) if scale > 1 => format!("{t} (= {t}/{scale} in the file's ticks)"),
        Some(t) => match tick {
            // The file's ticks, and their length where the file knows it.
            Some(_) => t.human(tick),
            None => t.to_string(),
        },
    };
    println!(
        "release rule: {} ({})",
        inst.release,
        inst.release.describe()
    );
    println!("status:   {}", v.label.words());
    println!(
        "{what}: {}{}",
        if what == "period" { "  " } else { "" },
        show(v.makespan())
    );
    println!("bound:    {}", show(v.bound));
    println!("time:     {:.2} s", v.elapsed.as_secs_f64());
    let free = matches!(inst.order, crate::model::ComputeOrder::Free);
    for m in &v.methods {
        let claim = match (&m.status, &m.rejected_claim, &m.error) {
            // A free order is searched within the op-sequence limits only.
            (Some(Status::Optimal), _, _) if free => "best-within-limits".into(),
            (Some(s), _, _) => format!("{s:?}").to_lowercase(),
            (None, Some(c), Some(e)) => {
                format!("{} REJECTED: {e}", format!("{c:?}").to_lowercase())
            }
            (None, _, Some(e)) => format!("failed: {e}"),
            (None, _, None) => "-".into(),
        };
        println!(
            "method:   {:<7} {:<10} {what} {:<6} bound {:<6} {:.2} s",
            format!("{:?}", m.method).to_lowercase(),
            claim,
            m.makespan().map(|t| t.to_string()).unwrap_or("-".into()),
            match m.bound {
                Some(t) if free => format!("{t} (within limits)"),
                Some(t) => t.to_string(),
                None => "-".into(),
            },
            m.elapsed_ms as f64 / 1000.0
        );
    }
    for e in &v.evidence {
        println!("evidence: {e}");
    }
    for d in &v.disagreements {
        println!("DISAGREEMENT: {d}");
    }
    if let Some(c) = &v.checked {
        println!(
            "checker:  valid (schedule sha256 {})",
            c.report().schedule_sha256
        );
    }
    Ok(())
}
