//! The certificate bundle of a cross-checked verdict: a directory that lets
//! anyone re-check the claim without offcert's solvers. It holds the instance
//! the schedule is in the ticks of (`instance.json`; with a rescaled instance,
//! the original next to it as `original-instance.json`), the schedule, the
//! checker's verdict on it, and refutation files (SMT-LIB2 and MILP) for one
//! tick less, whose README lines claim no more than the verdict's label. When
//! the z3 or cvc5 binaries are installed, their answer on the SMT file is
//! recorded too.
//!
//! Owns: [`write`], [`Source`] and [`CertificateError`].
//! Must not import: bounds, heuristics, traces, reports, the CLI.

use super::crosscheck::Verdict;
use super::{milp, smt};
use crate::check::{sha256_bytes, Checked};
use crate::family::{CoreFile, InstanceFile};
use crate::model::{Instance, Mode};
use crate::schedule::ScheduleFile;
use crate::units::Ticks;
use std::path::{Path, PathBuf};

/// Why a certificate directory could not be written.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    #[error("{}: cannot write: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{what}: cannot serialise: {source}")]
    Serialise {
        what: &'static str,
        source: serde_json::Error,
    },
}

/// The instance file a verdict was computed on: as the user gave it, and as
/// the command used it (with its overrides, such as another release rule or
/// GPU memory, applied).
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    /// Where it was read from (shown in the README).
    pub path: &'a Path,
    /// Its text, byte for byte (hashed, and copied when it is the instance used).
    pub text: &'a str,
    /// The parsed file as given.
    pub given: &'a InstanceFile,
    /// The file the methods solved (before any rescaling): `given` with the
    /// command's overrides; equal to `given` when there were none.
    pub used: &'a InstanceFile,
}

fn write_file(path: PathBuf, contents: &str) -> Result<(), CertificateError> {
    std::fs::write(&path, contents).map_err(|source| CertificateError::Write { path, source })
}

fn pretty<T: serde::Serialize>(what: &'static str, v: &T) -> Result<String, CertificateError> {
    serde_json::to_string_pretty(v)
        .map(|s| s + "\n")
        .map_err(|source| CertificateError::Serialise { what, source })
}

/// An instance file as offcert writes it (with its `format` version).
fn pretty_instance(f: &InstanceFile) -> Result<String, CertificateError> {
    let v = f.to_json().map_err(|source| CertificateError::Serialise {
        what: "instance",
        source,
    })?;
    pretty("instance", &v)
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

/// Write the certificate of `v` into `dir` (created if missing). `inst` is the
/// instance the methods solved: `source` compiled, under the release rule
/// used, and rescaled by `scale` (1: not rescaled).
pub fn write(
    dir: &Path,
    source: Source<'_>,
    inst: &Instance,
    v: &Verdict,
    scale: u64,
) -> Result<(), CertificateError> {
    std::fs::create_dir_all(dir).map_err(|e| CertificateError::Write {
        path: dir.to_path_buf(),
        source: e,
    })?;
    let mut readme = format!(
        "offcert certificate for {} (file sha256 {})\nrelease rule: {} ({})\nstatus: {}\n",
        source.path.display(),
        sha256_bytes(source.text.as_bytes()),
        inst.release,
        inst.release.describe(),
        v.label.words()
    );
    readme.push_str(&write_instance(dir, source, inst, scale)?);
    let Some(checked) = &v.checked else {
        readme.push_str("no schedule was found: nothing to certify\n");
        if v.label.is_none_within_limits() {
            readme.push_str("no schedule exists within the op-sequence limits of proofs/REMAT-EXACT.md; a schedule outside them may exist, so infeasibility is NOT claimed\n");
        }
        readme.push_str(&evidence_lines(v));
        return write_file(dir.join("README.txt"), &readme);
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
    if v.label.is_best_within_limits() {
        readme.push_str(&format!(
            "{m} is the best makespan within the op-sequence limits of proofs/REMAT-EXACT.md; a schedule outside them may do better, so no refutation of {} is claimed\n",
            m.0 - 1
        ));
    }
    readme.push_str(&evidence_lines(v));
    readme.push_str(&write_refutations(dir, inst, m, optimal));
    write_file(dir.join("README.txt"), &readme)
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
    source: Source<'_>,
    inst: &Instance,
    scale: u64,
) -> Result<String, CertificateError> {
    if scale > 1 {
        write_file(dir.join("original-instance.json"), source.text)?;
        let mut core = CoreFile::from_instance(inst);
        core.note = Some(format!(
            "{} (family {}) rescaled by K = {scale} (offcert solve --rescale): 1 tick here = 1/{scale} tick there",
            source.path.display(),
            inst.family
        ));
        let f = InstanceFile::Core(core);
        write_file(dir.join("instance.json"), &pretty_instance(&f)?)?;
        Ok(format!(
            "time scale: K = {scale}: every tick here is 1/{scale} tick of the original file, so that every transfer time |t|/beta is whole (proofs/EXACTNESS.md §2)\n\
             instance.json: the rescaled instance (durations x{scale}, beta per tick /{scale}), in the `core` family; every time below is in its ticks\n\
             original-instance.json: the instance file as given\n"
        ))
    } else if source.used != source.given {
        // The command overrode the file (`--release`, `--memory`): write the file
        // it solved, so that `offcert check instance.json schedule.json` replays it.
        write_file(dir.join("original-instance.json"), source.text)?;
        write_file(dir.join("instance.json"), &pretty_instance(source.used)?)?;
        Ok(format!(
            "instance.json: the instance file with the command's overrides ({}); the file says {}\noriginal-instance.json: the instance file as given\n",
            overrides(source.used),
            overrides(source.given)
        ))
    } else {
        write_file(dir.join("instance.json"), source.text)?;
        Ok("instance.json: the instance file as given\n".into())
    }
}

/// The settings a command may override, as README words.
fn overrides(f: &InstanceFile) -> String {
    format!(
        "`\"release\": \"{}\"`, GPU memory {} B",
        f.release(),
        f.gpu_memory()
    )
}

/// `schedule.json` and the checker's `verdict.json` on it.
fn write_schedule(dir: &Path, inst: &Instance, checked: &Checked) -> Result<(), CertificateError> {
    let f = ScheduleFile::from_schedule(checked.schedule(), inst);
    write_file(dir.join("schedule.json"), &pretty("schedule", &f)?)?;
    let rep = checked.report();
    let verdict = serde_json::json!({
        "verdict": if rep.valid { "valid" } else { "invalid" },
        "release_rule": rep.release,
        "report": rep,
    });
    write_file(dir.join("verdict.json"), &pretty("verdict", &verdict)?)
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
    match smt::write_refutation(inst, below, &smt) {
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
