//! `offcert solve` end to end: labels, checker-validated output, schedule and
//! certificate files (re-checked with the z3 and cvc5 binaries when installed),
//! and clear errors with exit code 2.

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
    assert!(out.contains("status:   infeasible"), "{out}");
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

fn have(cmd: &str) -> bool {
    Command::new(cmd).arg("--version").output().is_ok()
}

#[test]
fn certificate_directory_is_recheckable() {
    let d = tmpdir("cert");
    let (code, out, err) = run(&[
        "solve",
        "instances/tiny/act_one_offload.json",
        "--method",
        "all",
        "--certificate",
        d.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
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
    let (code, _, _) = run(&[
        "check",
        d.join("instance.json").to_str().unwrap(),
        d.join("schedule.json").to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    // The SMT-LIB2 refutation of makespan <= 6 is unsat for z3 and cvc5.
    for (cmd, args) in [("z3", vec!["-smt2"]), ("cvc5", vec!["--lang=smt2"])] {
        if !have(cmd) {
            continue;
        }
        let o = Command::new(cmd)
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
        r#"{"family":"activation_chain","name":"odd","layers":[{"u_f":1,"u_b":1,"x":1},{"u_f":1,"u_b":1,"x":1}],"x_last":1,"gpu_memory":2,"bandwidth":{"bytes":3,"ticks":2}}"#,
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
