//! `offcert solve` end to end: labels, checker-validated output, schedule and
//! certificate files (re-checked with the z3 and cvc5 binaries, which
//! `scripts/setup.sh` installs: a missing one fails the test),
//! and clear errors with exit code 2.

use crate::common;

use common::require_solver;
use std::path::{Path, PathBuf};
use std::process::Command;

fn offcert() -> Command {
    Command::new(env!("CARGO_BIN_EXE_offcert"))
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("offcert-solve-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&str]) -> (i32, String, String) {
    let o = offcert().args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

/// `offcert solve INSTANCE --method METHOD EXTRA… --certificate DIR`, which
/// must exit 0: its stdout and the certificate's README.
fn solve_certified(instance: &str, method: &str, extra: &[&str], dir: &Path) -> (String, String) {
    let mut args = vec!["solve", instance, "--method", method];
    args.extend(extra);
    args.extend(["--certificate", dir.to_str().unwrap()]);
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{out}{err}");
    let readme = std::fs::read_to_string(dir.join("README.txt")).unwrap();
    (out, readme)
}

/// `offcert check INSTANCE schedule.json` run inside the certificate `dir`, as
/// its README says: the exit code and stdout.
fn check_in(dir: &Path, instance: &str) -> (Option<i32>, String) {
    let o = offcert()
        .args(["check", instance, "schedule.json"])
        .current_dir(dir)
        .output()
        .unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into())
}

#[test]
fn all_methods_cross_check_a_one_shot_instance() {
    let (code, out, _) = run(&[
        "solve",
        "instances/tiny/act_one_offload.json",
        "--method",
        "all",
        "--time-limit",
        "30",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("status:   optimal (cross-checked)"), "{out}");
    assert!(out.contains("makespan: 7"), "{out}");
    assert!(out.contains("checker:  valid"), "{out}");
}

#[test]
fn single_method_is_solver_reported() {
    let (code, out, _) = run(&[
        "solve",
        "instances/tiny/weight_discount.json",
        "--method",
        "milp",
        "--time-limit",
        "30",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("status:   optimal (solver-reported)"), "{out}");
    assert!(out.contains("period:   15"), "{out}");
}

#[test]
fn infeasible_exits_1_with_evidence() {
    let (code, out, _) = run(&[
        "solve",
        "instances/tiny/act_infeasible.json",
        "--method",
        "milp",
    ]);
    assert_eq!(code, 1, "{out}");
    // One method alone: its infeasibility is its own claim.
    assert!(
        out.contains("status:   infeasible (solver-reported)"),
        "{out}"
    );
    assert!(
        out.contains("evidence: Milp: infeasible: op F1 needs at least 4 B"),
        "{out}"
    );
}

#[test]
fn schedule_out_is_checked_by_offcert_check() {
    let d = tmpdir("sched");
    let s = d.join("s.json");
    let (code, _, _) = run(&[
        "solve",
        "instances/tiny/act_chain3.json",
        "--method",
        "milp",
        "--schedule-out",
        s.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let (code, out, _) = run(&[
        "check",
        "instances/tiny/act_chain3.json",
        s.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn certificate_directory_is_recheckable() {
    let d = tmpdir("cert");
    solve_certified("instances/tiny/act_one_offload.json", "all", &[], &d);
    for f in [
        "README.txt",
        "schedule.json",
        "verdict.json",
        "instance.json",
        "refutation.smt2",
        "milp-refute.lp",
        "milp-optimise.lp",
    ] {
        assert!(d.join(f).exists(), "{f} missing");
    }
    let verdict: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("verdict.json")).unwrap()).unwrap();
    assert_eq!(verdict["verdict"], "valid");
    assert_eq!(verdict["report"]["makespan"], 7);
    // The schedule re-checks with the CLI.
    assert_eq!(check_in(&d, "instance.json").0, Some(0));
    // The SMT-LIB2 refutation of makespan <= 6 is unsat for z3 and cvc5.
    // Both are required: the README's set-up (scripts/setup.sh) installs them.
    for (cmd, args) in [("z3", vec!["-smt2"]), ("cvc5", vec!["--lang=smt2"])] {
        let o = require_solver(cmd)
            .args(&args)
            .arg(d.join("refutation.smt2"))
            .output()
            .unwrap();
        let s = String::from_utf8_lossy(&o.stdout);
        assert_eq!(s.lines().next().map(str::trim), Some("unsat"), "{cmd}: {s}");
    }
    let lp = std::fs::read_to_string(d.join("milp-refute.lp")).unwrap();
    assert!(lp.contains("horizon H = 6"), "{}", &lp[..200]);
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn bad_input_names_the_file_and_exits_2() {
    let d = tmpdir("bad");
    let f = d.join("broken.json");
    std::fs::write(
        &f,
        "{\"family\": \"activation_chain\", \"name\": \"x\", \"layers\": [}",
    )
    .unwrap();
    let (code, _, err) = run(&["solve", f.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("broken.json"), "{err}");
    let (code, _, err) = run(&["solve", "instances/tiny/act_fits.json", "--time-limit=0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--time-limit"), "{err}");
    assert!(!Path::new("nonexistent").exists());
    let (code, _, err) = run(&["solve", "nonexistent.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("nonexistent.json"), "{err}");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn rescale_reports_the_file_ticks() {
    let d = tmpdir("rescale");
    let f = d.join("odd.json");
    // beta = 3 B per 2 ticks: a 1 B transfer lasts 2/3 tick.
    std::fs::write(
        &f,
        r#"{"family":"activation_chain","name":"odd","layers":[{"u_f":1,"u_b":1,"x":1},{"u_f":1,"u_b":1,"x":1}],"x_last":1,"gpu_memory":3,"bandwidth":{"bytes":3,"ticks":2}}"#,
    )
    .unwrap();
    let (code, out, err) = run(&[
        "solve",
        f.to_str().unwrap(),
        "--method",
        "milp",
        "--rescale",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("/3 in the file's ticks"), "{out}");
    std::fs::remove_dir_all(&d).ok();
}

/// Defect 1: with `--rescale` the schedule is in rescaled ticks; the certificate
/// holds the instance it belongs to, and the README's own check command passes.
#[test]
fn rescaled_certificate_round_trips() {
    let d = tmpdir("rescale-cert");
    let f = d.join("odd.json");
    let text = r#"{"family":"activation_chain","name":"odd","layers":[{"u_f":1,"u_b":1,"x":1},{"u_f":1,"u_b":1,"x":1}],"x_last":1,"gpu_memory":3,"bandwidth":{"bytes":3,"ticks":2}}"#;
    std::fs::write(&f, text).unwrap();
    let cert = d.join("cert");
    let (_, readme) = solve_certified(f.to_str().unwrap(), "milp", &["--rescale"], &cert);
    assert!(readme.contains("time scale: K = 3"), "{readme}");
    assert_eq!(
        std::fs::read_to_string(cert.join("original-instance.json")).unwrap(),
        text
    );
    // Run the README's re-check command as written, in the certificate dir.
    let line = readme
        .lines()
        .find(|l| l.starts_with("schedule.json:"))
        .unwrap();
    let cmd = line.split("re-check: offcert ").nth(1).unwrap();
    let args: Vec<&str> = cmd.split_whitespace().collect();
    assert_eq!(args, ["check", "instance.json", "schedule.json"]);
    let (code, out) = check_in(&cert, args[1]);
    assert_eq!(code, Some(0), "{out}");
    // Against the original file the rescaled ticks are wrong: that was the bug.
    assert_eq!(check_in(&cert, "original-instance.json").0, Some(1));
    std::fs::remove_dir_all(&d).ok();
}

/// Every verdict states its release rule; with `--release` overriding the file,
/// the certificate's instance.json carries the rule used, so the README's check
/// command replays under it.
#[test]
fn the_release_rule_is_stated_and_certified() {
    let d = tmpdir("release");
    let (out, readme) = solve_certified(
        "instances/tiny/act_one_offload.json",
        "milp",
        &["--release", "after_start"],
        &d,
    );
    assert!(out.contains("release rule: after_start"), "{out}");
    assert!(readme.contains("release rule: after_start"), "{readme}");
    let verdict: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("verdict.json")).unwrap()).unwrap();
    assert_eq!(verdict["release_rule"], "after_start");
    let inst = std::fs::read_to_string(d.join("instance.json")).unwrap();
    assert!(inst.contains("\"after_start\""), "{inst}");
    assert!(d.join("original-instance.json").exists());
    let (code, out) = check_in(&d, "instance.json");
    assert_eq!(code, Some(0));
    assert!(out.contains("release rule: after_start"));
    // The default is stated too, in the text and the JSON verdicts.
    let (_, out, _) = run(&[
        "solve",
        "instances/tiny/act_fits.json",
        "--method",
        "search",
    ]);
    assert!(out.contains("release rule: after_end"), "{out}");
    let (_, out, _) = run(&[
        "solve",
        "instances/tiny/act_fits.json",
        "--method",
        "search",
        "--json",
    ]);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["release_rule"], "after_end");
    std::fs::remove_dir_all(&d).ok();
}

/// Defect 3: an optimal certificate says "optimal" and the SMT line states its
/// structural limits like the MILP line.
#[test]
fn certificate_readme_states_the_limits_of_each_refutation() {
    let d = tmpdir("cert-claims");
    let (_, readme) = solve_certified("instances/tiny/act_one_offload.json", "all", &[], &d);
    let line = |f: &str| {
        readme
            .lines()
            .find(|l| l.starts_with(f))
            .unwrap_or_else(|| panic!("no {f} line: {readme}"))
            .to_string()
    };
    assert!(line("claim:").contains("7 is optimal"), "{readme}");
    assert!(
        line("refutation.smt2:").contains("within the structural limits of proofs/SMT.md"),
        "{readme}"
    );
    assert!(
        line("milp-refute.lp:").contains("within the structural limits of proofs/EXACTNESS.md"),
        "{readme}"
    );
    std::fs::remove_dir_all(&d).ok();
}

// Cross-check labels with planted methods (`crosscheck::run_with`).

use offcert::exact::crosscheck::{self, Label, Verdict};
use offcert::exact::{self, ExactError, Limits, Method, Outcome, Status};
use offcert::model::Instance;
use offcert::schedule::Schedule;
use std::time::Duration;

fn tiny(name: &str) -> (String, Instance) {
    let text = std::fs::read_to_string(format!("instances/tiny/{name}.json")).unwrap();
    let (_, inst) = offcert::io::parse_instance(name, &text).unwrap();
    (text, inst)
}

fn outcome(m: Method, status: Status, schedule: Option<Schedule>) -> Outcome {
    Outcome {
        method: m,
        status,
        schedule,
        bound: None,
        elapsed: Duration::ZERO,
        notes: vec![format!("planted {status:?}")],
    }
}

/// Claims an optimum with a schedule that runs nothing: the checker rejects it.
fn bogus_optimum(_: &Instance, _: &Limits) -> Result<Outcome, ExactError> {
    let s = Schedule {
        events: vec![],
        period: None,
        initial: None,
    };
    Ok(outcome(Method::Smt, Status::Optimal, Some(s)))
}

/// Its own replay rejected its schedule (how the real methods report it).
fn self_rejected(i: &Instance, _: &Limits) -> Result<Outcome, ExactError> {
    let nothing = Schedule {
        events: vec![],
        period: None,
        initial: None,
    };
    ExactError::checked(Method::Search, i, &nothing)?;
    unreachable!("a schedule that runs nothing is rejected")
}

fn says_infeasible(_: &Instance, _: &Limits) -> Result<Outcome, ExactError> {
    Ok(outcome(Method::Milp, Status::Infeasible, None))
}

/// The MILP's schedule, but only claimed feasible (no proven bound).
fn milp_feasible_only(i: &Instance, l: &Limits) -> Result<Outcome, ExactError> {
    let mut o = exact::solve(Method::Milp, i, l)?;
    o.status = Status::Feasible;
    o.bound = None;
    Ok(o)
}

fn verdict(inst: &Instance, planted: &[(Method, crosscheck::SolveFn)]) -> Verdict {
    crosscheck::run_with(inst, planted, &Limits::default())
}

/// Defect 4: a method whose schedule the checker rejects does not drop silently
/// out of the vote; against an "infeasible" it is a disagreement, and the
/// infeasibility is no longer cross-checked.
#[test]
fn a_rejected_schedule_is_a_disagreement_not_a_silent_abstention() {
    let (_, inst) = tiny("act_one_offload");
    let v = verdict(
        &inst,
        &[
            (Method::Milp, says_infeasible),
            (Method::Smt, bogus_optimum),
        ],
    );
    assert_eq!(v.label, Label::InfeasibleSolverReported, "{v:?}");
    assert_eq!(v.label.words(), "infeasible (solver-reported)");
    assert_eq!(v.disagreements.len(), 1, "{:?}", v.disagreements);
    let d = &v.disagreements[0];
    assert!(d.contains("Smt claims an optimum"), "{d}");
    assert!(d.contains("rejected by the checker"), "{d}");
    assert!(d.contains("[Milp] say no schedule exists"), "{d}");
    let smt = v.methods.iter().find(|m| m.method == Method::Smt).unwrap();
    assert_eq!(smt.rejected_claim, Some(Status::Optimal));
    assert_eq!(smt.status, None);
    // The same when the method's own replay rejected its schedule.
    let v = verdict(
        &inst,
        &[
            (Method::Milp, says_infeasible),
            (Method::Search, self_rejected),
        ],
    );
    assert_eq!(v.label, Label::InfeasibleSolverReported, "{v:?}");
    assert!(
        v.disagreements
            .iter()
            .any(|d| d.contains("Search claims a schedule") && d.contains("say no schedule exists")),
        "{:?}",
        v.disagreements
    );
    // Two uncontested infeasibility proofs are cross-checked; one alone is not.
    let v = verdict(
        &inst,
        &[
            (Method::Milp, says_infeasible),
            (Method::Search, says_infeasible),
        ],
    );
    assert_eq!(v.label, Label::Infeasible);
    assert_eq!(v.label.words(), "infeasible (cross-checked)");
    let v = verdict(&inst, &[(Method::Milp, says_infeasible)]);
    assert_eq!(v.label, Label::InfeasibleSolverReported);
    // Next to a checked optimum, a rejected schedule still contests it.
    let v = verdict(
        &inst,
        &[
            (Method::Milp, crosscheck::solver(Method::Milp)),
            (Method::Smt, bogus_optimum),
            (Method::Search, crosscheck::solver(Method::Search)),
        ],
    );
    assert_eq!(v.makespan().map(|m| m.0), Some(7));
    assert_eq!(v.label, Label::OptimalSolverReported, "{v:?}");
    assert!(
        v.disagreements
            .iter()
            .any(|d| d.contains("Smt claims an optimum")),
        "{:?}",
        v.disagreements
    );
}

/// Defect 3: a certificate for a schedule whose optimality is not established
/// says so and claims no optimum.
#[test]
fn a_feasible_certificate_claims_no_optimum() {
    let (text, inst) = tiny("act_one_offload");
    let v = verdict(&inst, &[(Method::Milp, milp_feasible_only)]);
    assert!(matches!(v.label, Label::Feasible { .. }), "{v:?}");
    let d = tmpdir("cert-feasible");
    let file = offcert::io::parse_instance_file("act_one_offload.json", &text).unwrap();
    let source = offcert::exact::certificate::Source {
        path: Path::new("act_one_offload.json"),
        text: &text,
        given: &file,
        used: &file,
    };
    offcert::exact::certificate::write(&d, source, &inst, &v, 1).unwrap();
    let readme = std::fs::read_to_string(d.join("README.txt")).unwrap();
    assert!(readme.contains("status: feasible, gap"), "{readme}");
    assert!(readme.contains("optimality is NOT established"), "{readme}");
    assert!(!readme.contains("optimum is"), "{readme}");
    assert!(!readme.contains("is optimal"), "{readme}");
    assert!(!readme.contains(" proves "), "{readme}");
    std::fs::remove_dir_all(&d).ok();
}

/// Issue 21 item 6: `--memory` overrides the file's GPU memory for every
/// method, not only `anytime`. act_one_offload needs an offload at its own
/// 3 B (optimum 7) and none at `peak` (the compute alone, 6).
#[test]
fn memory_overrides_the_file_for_every_method() {
    let inst = "instances/tiny/act_one_offload.json";
    for method in ["milp", "smt", "search", "all"] {
        let (code, out, err) = run(&["solve", inst, "--method", method]);
        assert_eq!(code, 0, "{method}: {out}{err}");
        assert!(out.contains("makespan: 7\n"), "{method}: {out}");
        let (code, out, err) = run(&["solve", inst, "--method", method, "--memory", "peak"]);
        assert_eq!(code, 0, "{method}: {out}{err}");
        assert!(out.contains("makespan: 6\n"), "{method}: {out}");
        // The same budget spelt in bytes.
        let (code, out, err) = run(&["solve", inst, "--method", method, "--memory", "1K"]);
        assert_eq!(code, 0, "{method}: {out}{err}");
        assert!(out.contains("makespan: 6\n"), "{method}: {out}");
    }
    // The certificate holds the instance at the memory solved, and re-checks.
    let d = tmpdir("memory");
    let (_, readme) = solve_certified(inst, "milp", &["--memory", "1K"], &d);
    assert!(readme.contains("GPU memory 1000 B"), "{readme}");
    assert!(readme.contains("the file says"), "{readme}");
    let used = std::fs::read_to_string(d.join("instance.json")).unwrap();
    assert!(used.contains("\"gpu_memory\": 1000"), "{used}");
    assert_eq!(check_in(&d, "instance.json").0, Some(0));
    // The schedule of makespan 6 keeps x0 resident: over the file's own 3 B.
    assert_eq!(check_in(&d, "original-instance.json").0, Some(1));
    // A bad budget is bad input, with the option named.
    let (code, _, err) = run(&["solve", inst, "--method", "smt", "--memory", "2X"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--memory 2X"), "{err}");
    std::fs::remove_dir_all(&d).ok();
}

/// Issue 21 item 9: when every method fails (here all three are outside
/// their scope: a one-shot update of a transferable weight), `solve` has no
/// result, which is not success: exit 1, with each method's reason on stderr.
/// (This used `opseq3.json` until the search and the MILP accepted moving
/// activations, issue 25: `solve` now proves it optimal, below.)
#[test]
fn no_result_is_not_success() {
    let (code, out, err) = run(&["solve", "instances/fixtures/upd1.json"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("status:   unknown"), "{out}");
    assert!(err.contains("solve: no result"), "{err}");
    for m in ["milp", "smt", "search"] {
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("  {m}: "))
                    && l.contains("outside the method's scope")),
            "{m}: {err}"
        );
    }
    let (code, out, _) = run(&["solve", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("Exit codes: 0 a schedule was found"), "{out}");
}

/// Issue 25 item 1: `solve` on `instances/fixtures/opseq3.json` (activations
/// that may move) is `optimal (cross-checked)`: the search and the MILP both
/// prove the period 12 (= Σ durations: a and y are dropped at time 0,
/// MODEL.md §4.4 question 2).
#[test]
fn opseq3_is_optimal_cross_checked() {
    let (code, out, err) = run(&["solve", "instances/fixtures/opseq3.json"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("status:   optimal (cross-checked)"), "{out}");
    assert!(out.contains("period:   12"), "{out}");
}

/// Issue 23, Why 5: on `limit4.json` limit 4 of proofs/REMAT-EXACT.md loses
/// the optimum (11 in layer order; the valid
/// `limit4.better.valid.schedule.json` has makespan 10). `solve` relaxes
/// limit 4 on chains this short and finds 10, and, as its remaining limits
/// are not proven lossless, never calls it optimal: not in its status, its
/// method lines, its JSON or its certificate; its bound is not the makespan.
#[test]
fn solve_on_the_limit4_chain_finds_10_and_never_calls_it_optimal() {
    const LIMIT4: &str = "instances/regressions/remat/limit4.json";
    let dir = tmpdir("limit4");
    let (code, out, err) = run(&["solve", LIMIT4, "--certificate", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("status:   best within sequence limits (cross-checked)"),
        "{out}"
    );
    assert!(out.contains("makespan: 10"), "{out}");
    assert!(out.contains("forwards in any order"), "{out}");
    assert!(!out.contains("optimal"), "{out}");
    assert!(!out.contains("optimum"), "{out}");
    assert!(!out.contains("bound:    10"), "{out}");
    let readme = std::fs::read_to_string(dir.join("README.txt")).unwrap();
    assert!(readme.contains("optimality is NOT established"), "{readme}");
    assert!(!readme.contains("is optimal"), "{readme}");
    assert!(!readme.contains("proves that no schedule"), "{readme}");
    let (code, out, _) = run(&["solve", LIMIT4, "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["status"], "best within sequence limits (cross-checked)");
    assert_eq!(v["label"]["label"], "best_within_limits_cross_checked");
    assert_eq!(v["makespan"], 10, "{out}");
    assert!(v["bound"].as_i64().unwrap() < 10, "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
