//! `offcert solve INSTANCE --method milp|smt|search|all --time-limit S
//! [--schedule-out FILE] [--certificate DIR] [--rescale] [--json]`.
//!
//! Runs the exact methods through `exact::crosscheck`, so every number printed
//! is the checker's. Ctrl-C sets `Limits::cancel`; the best schedule found so
//! far is still printed (and written).
//!
//! Owns: the `solve` subcommand and its certificate directory.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::check::{sha256_bytes, Checked};
use crate::exact::crosscheck::{self, Verdict};
use crate::exact::{milp, rescale, Limits, Method};
use crate::family::{CoreFile, InstanceFile};
use crate::io;
use crate::model::{Instance, Mode, ReleaseRule};
use crate::schedule::ScheduleFile;
use crate::units::Ticks;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MethodArg {
    Milp,
    Smt,
    Search,
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
    /// Seconds allowed per method.
    #[arg(long, default_value_t = 60.0)]
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
    /// `--method anytime` only: solve at this memory (bytes with K/M/G
    /// suffixes, `min`, `peak` or `P%` of least..peak); default: the file's.
    #[arg(long)]
    pub memory: Option<String>,
    #[command(flatten)]
    pub release: super::ReleaseOpt,
}

fn methods(m: MethodArg) -> Vec<Method> {
    match m {
        MethodArg::Milp => vec![Method::Milp],
        MethodArg::Smt => vec![Method::Smt],
        MethodArg::Search => vec![Method::Search],
        MethodArg::All => vec![Method::Milp, Method::Smt, Method::Search],
        MethodArg::Anytime => vec![],
    }
}

pub fn run(a: SolveArgs) -> anyhow::Result<ExitCode> {
    if !(a.time_limit > 0.0 && a.time_limit.is_finite()) {
        anyhow::bail!("--time-limit: must be a positive number of seconds");
    }
    if a.method == MethodArg::Anytime {
        return super::solve_anytime::run(&a);
    }
    if a.memory.is_some() {
        anyhow::bail!("--memory: only with --method anytime");
    }
    let text = io::read_text(&a.instance)?;
    let (_, mut inst) = io::parse_instance(&a.instance.display().to_string(), &text)?;
    let file_release = inst.release;
    a.release.apply(&mut inst);
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
    let v = crosscheck::run(&inst, &methods(a.method), &limits);
    print_verdict(&a, &inst, &v, scale)?;
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
        write_certificate(dir, &a.instance, &text, &inst, &v, scale, file_release)?;
    }
    Ok(if v.label.is_infeasible() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_verdict(a: &SolveArgs, inst: &Instance, v: &Verdict, scale: u64) -> anyhow::Result<()> {
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
        Some(t) => t.to_string(),
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
    for m in &v.methods {
        let claim = match (&m.status, &m.rejected_claim, &m.error) {
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
            m.bound.map(|t| t.to_string()).unwrap_or("-".into()),
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

/// Run an external solver on a file, if installed: its first output line.
fn run_external(cmd: &str, args: &[&str], file: &Path) -> Option<String> {
    let out = std::process::Command::new(cmd)
        .args(args)
        .arg(file)
        .output()
        .ok()?;
    let s = String::from_utf8_lossy(&out.stdout);
    Some(s.lines().next().unwrap_or("").trim().to_string())
}

/// The certificate directory: the instance the schedule is in the ticks of
/// (`instance.json`; with `--rescale`, the rescaled instance, the original next
/// to it as `original-instance.json`), the schedule, the checker's verdict, and
/// refutation files whose README lines claim no more than the verdict's label.
pub fn write_certificate(
    dir: &Path,
    inst_path: &Path,
    text: &str,
    inst: &Instance,
    v: &Verdict,
    scale: u64,
    file_release: ReleaseRule,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let mut readme = format!(
        "offcert certificate for {} (file sha256 {})\nrelease rule: {} ({})\nstatus: {}\n",
        inst_path.display(),
        sha256_bytes(text.as_bytes()),
        inst.release,
        inst.release.describe(),
        v.label.words()
    );
    readme.push_str(&write_instance(
        dir,
        inst_path,
        text,
        inst,
        scale,
        file_release,
    )?);
    let Some(checked) = &v.checked else {
        readme.push_str("no schedule was found: nothing to certify\n");
        readme.push_str(&evidence_lines(v));
        std::fs::write(dir.join("README.txt"), readme)?;
        return Ok(());
    };
    let m = checked.makespan();
    let optimal = v.label.is_optimal();
    write_schedule(dir, inst, checked)?;
    let in_file = if scale > 1 {
        format!(" (= {m}/{scale} ticks of the original file)")
    } else {
        String::new()
    };
    readme.push_str(&format!(
        "schedule.json: a schedule of makespan/period {m}{in_file}, valid by the checker; re-check: offcert check instance.json schedule.json\nverdict.json: the checker's report on it\n"
    ));
    if optimal {
        readme.push_str(&format!(
            "claim: {m} is optimal, status {}; the files below let you re-check that no schedule does better\n",
            v.label.words()
        ));
    } else {
        readme.push_str(&format!(
            "claim: only that a schedule of makespan/period {m} exists; optimality is NOT established (status {}), so the refutation files below are open questions, not proofs\n",
            v.label.words()
        ));
    }
    readme.push_str(&evidence_lines(v));
    readme.push_str(&write_refutations(dir, inst, m, optimal));
    std::fs::write(dir.join("README.txt"), readme)?;
    Ok(())
}

/// The verdict's evidence and disagreements, one README line each.
fn evidence_lines(v: &Verdict) -> String {
    let mut out = String::new();
    for e in &v.evidence {
        out.push_str(&format!("evidence: {e}\n"));
    }
    for d in &v.disagreements {
        out.push_str(&format!("DISAGREEMENT: {d}\n"));
    }
    out
}

/// `instance.json` (the instance the schedule's ticks belong to) and, when it is
/// not the file as given, `original-instance.json`; their README lines.
fn write_instance(
    dir: &Path,
    inst_path: &Path,
    text: &str,
    inst: &Instance,
    scale: u64,
    file_release: ReleaseRule,
) -> anyhow::Result<String> {
    if scale > 1 {
        std::fs::write(dir.join("original-instance.json"), text)?;
        let mut core = CoreFile::from_instance(inst);
        core.note = Some(format!(
            "{} (family {}) rescaled by K = {scale} (offcert solve --rescale): 1 tick here = 1/{scale} tick there",
            inst_path.display(),
            inst.family
        ));
        let f = InstanceFile::Core(core);
        std::fs::write(
            dir.join("instance.json"),
            serde_json::to_string_pretty(&f.to_json()?)? + "\n",
        )?;
        Ok(format!(
            "time scale: K = {scale}: every tick here is 1/{scale} tick of the original file, so that every transfer time |t|/beta is whole (proofs/EXACTNESS.md §2)\n\
             instance.json: the rescaled instance (durations x{scale}, beta per tick /{scale}), in the `core` family; every time below is in its ticks\n\
             original-instance.json: the instance file as given\n"
        ))
    } else if inst.release != file_release {
        // `--release` overrode the file's rule: write the file with the rule used,
        // so that `offcert check instance.json schedule.json` replays under it.
        std::fs::write(dir.join("original-instance.json"), text)?;
        let (mut f, _) = io::parse_instance(&inst_path.display().to_string(), text)?;
        f.set_release(inst.release);
        std::fs::write(
            dir.join("instance.json"),
            serde_json::to_string_pretty(&f.to_json()?)? + "\n",
        )?;
        Ok(format!(
            "instance.json: the instance file with `\"release\": \"{}\"` (set by --release; the file says {file_release})\noriginal-instance.json: the instance file as given\n",
            inst.release
        ))
    } else {
        std::fs::write(dir.join("instance.json"), text)?;
        Ok("instance.json: the instance file as given\n".into())
    }
}

/// `schedule.json` and the checker's `verdict.json` on it.
fn write_schedule(dir: &Path, inst: &Instance, checked: &Checked) -> anyhow::Result<()> {
    let f = ScheduleFile::from_schedule(checked.schedule(), inst);
    std::fs::write(
        dir.join("schedule.json"),
        serde_json::to_string_pretty(&f)? + "\n",
    )?;
    let rep = checked.report();
    let verdict = serde_json::json!({
        "verdict": if rep.valid { "valid" } else { "invalid" },
        "release_rule": rep.release,
        "report": rep,
    });
    std::fs::write(
        dir.join("verdict.json"),
        serde_json::to_string_pretty(&verdict)? + "\n",
    )?;
    Ok(())
}

/// The refutation files for makespan/period `m - 1` (SMT-LIB2 and MILP), and
/// their README lines, which claim a proof only when `optimal`.
fn write_refutations(dir: &Path, inst: &Instance, m: Ticks, optimal: bool) -> String {
    let mut readme = String::new();
    let below = Ticks(m.0 - 1);
    // What an infeasible refutation file would prove, and whether it was proved.
    let refutes = |answer: &str, limits: &str| {
        if optimal {
            format!(
                "{answer} proves that no schedule within {limits} has makespan/period <= {}",
                below.0
            )
        } else {
            format!(
                "asks whether a schedule within {limits} has makespan/period <= {}; no method answered it (not a proof)",
                below.0
            )
        }
    };
    let smt = dir.join("refutation.smt2");
    match crate::exact::smt::write_refutation(inst, below, &smt) {
        Ok(()) => {
            readme.push_str(&format!(
                "refutation.smt2: QF_LIA; {}; re-check: z3 -smt2 refutation.smt2 (or cvc5)\n",
                refutes(
                    "`unsat`",
                    "the structural limits of proofs/SMT.md (scope: models/SMT.md §1)"
                )
            ));
            for (cmd, args) in [("z3", vec!["-smt2"]), ("cvc5", vec!["--lang=smt2"])] {
                if let Some(ans) = run_external(cmd, &args, &smt) {
                    readme.push_str(&format!("  {cmd} says: {ans}\n"));
                    eprintln!("solve: {cmd} on refutation.smt2: {ans}");
                }
            }
        }
        Err(e) => readme.push_str(&format!("refutation.smt2: not written: {e}\n")),
    }
    let lp = dir.join("milp-refute.lp");
    match milp::write_lp(inst, below, false, &lp) {
        Ok(()) => {
            readme.push_str(&format!(
                "milp-refute.lp: the MILP with horizon (period) {}; {}; re-check: highs milp-refute.lp\n",
                below.0,
                refutes("infeasible", "the structural limits of proofs/EXACTNESS.md §3")
            ));
            if inst.mode == Mode::OneShot {
                let opt = dir.join("milp-optimise.lp");
                if milp::write_lp(inst, m, true, &opt).is_ok() {
                    readme.push_str(&format!(
                        "milp-optimise.lp: the makespan model with horizon {m}; {}\n",
                        if optimal {
                            format!("its optimum is {m} (within the structural limits of proofs/EXACTNESS.md §3)")
                        } else {
                            format!("a schedule of makespan {m} exists; this model was not solved to optimality")
                        }
                    ));
                }
            }
        }
        Err(e) => readme.push_str(&format!("milp-refute.lp: not written: {e}\n")),
    }
    readme
}
