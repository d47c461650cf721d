//! OFFMATE in the gap report (issue 24): Algorithm 1 as a heuristic (the
//! corrected ILP, post-processing, realiser, checker) and the checked
//! improvement of cyclic OFFMATE schedules (plan moves, re-timing). Every
//! schedule either source returns passes the checker, or the source says `no
//! schedule`; the plan read back from a realised schedule realises the same
//! schedule; the gap table shows Algorithm 1 with its ILP status, the same
//! for every `--jobs`.

use crate::common;

use common::offmate_gen::{offmate_instance, offmate_plan, Draw};
use common::*;
use offcert::check::{check, CheckOutcome};
use offcert::family::InstanceFile;
use offcert::heuristic::effort::Effort;
use offcert::heuristic::offmate::{self as om, algorithm1, improve, Baseline, PlanSource};
use offcert::heuristic::{self, HeuristicError};
use quickcheck::TestResult;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

static A1_VALID: AtomicUsize = AtomicUsize::new(0);
static A1_NONE: AtomicUsize = AtomicUsize::new(0);
static IMPROVED: AtomicUsize = AtomicUsize::new(0);

/// On random small OFFMATE instances (tight or roomy memory), Algorithm 1's
/// schedule passes the checker or it says `no schedule` (memory, or its ILP
/// infeasible); the improvement of the best baseline or Algorithm 1 schedule
/// returns only schedules the checker accepts, with a strictly shorter period.
#[test]
fn algorithm1_and_its_improvement_are_checked() {
    fn prop(bytes: Vec<u8>, tight: bool) -> TestResult {
        let mut d = Draw::new(&bytes);
        let off = offmate_instance(&mut d, tight);
        let file = InstanceFile::Offmate(off.clone());
        let inst = file.compile().unwrap();
        let mut starts = Vec::new();
        match heuristic::run(&algorithm1::Algorithm1, &file, &inst) {
            Ok(r) => {
                assert!(r.checked.report().valid);
                let note = r.note.clone().unwrap_or_default();
                assert!(note.contains("solver-reported"), "{note}");
                A1_VALID.fetch_add(1, Ordering::Relaxed);
                starts.push(r.checked);
            }
            Err(HeuristicError::NoSchedule { reason, .. }) => {
                assert!(
                    reason.contains("memory") || reason.contains("infeasible (solver-reported)"),
                    "{reason}"
                );
                A1_NONE.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => panic!("{e} on {off:?}"),
        }
        for h in om::heuristics() {
            if let Ok(r) = heuristic::run(h.as_ref(), &file, &inst) {
                starts.push(r.checked);
            }
        }
        for start in &starts {
            if let Some(k) = improve::improve(&off, &inst, start, Effort::Candidates(300)) {
                // Checked again from the schedule alone.
                let CheckOutcome::Valid(c) = check(&inst, k.checked.schedule()) else {
                    panic!("an improved schedule fails the checker: {off:?}");
                };
                assert!(c.makespan() < start.makespan());
                assert!(!k.moves.is_empty());
                IMPROVED.fetch_add(1, Ordering::Relaxed);
            }
        }
        TestResult::passed()
    }
    qc(120, 100).quickcheck(prop as fn(Vec<u8>, bool) -> TestResult);
    for (what, n) in [
        ("algorithm 1 valid", &A1_VALID),
        ("algorithm 1 no schedule", &A1_NONE),
        ("improved", &IMPROVED),
    ] {
        assert!(n.load(Ordering::Relaxed) >= 5, "{what}: {n:?}");
    }
}

static READ_BACK: AtomicUsize = AtomicUsize::new(0);

/// The plan read back from a realised schedule ([`improve::read_plan`])
/// realises the very same schedule: the improvement's moves start from the
/// schedule's own plan.
#[test]
fn a_realised_plan_reads_back_to_itself() {
    fn prop(bytes: Vec<u8>, tight: bool) -> TestResult {
        let mut d = Draw::new(&bytes);
        let off = offmate_instance(&mut d, tight);
        let inst = InstanceFile::Offmate(off.clone()).compile().unwrap();
        let plan = offmate_plan(&mut d, &off);
        let Ok(run) = om::run_plan(&off, &inst, &plan, PlanSource::Baseline(Baseline::AllGpu))
        else {
            return TestResult::discard();
        };
        let Ok(first) = om::realise(&off, &inst, &run.rounded) else {
            return TestResult::discard();
        };
        let back = improve::read_plan(&off, &inst, &first.schedule).expect("a plan");
        let again = om::realise(&off, &inst, &back).expect("realises");
        assert_eq!(again.schedule, first.schedule, "{off:?}\n{:?}", run.rounded);
        READ_BACK.fetch_add(1, Ordering::Relaxed);
        TestResult::passed()
    }
    qc(200, 150).quickcheck(prop as fn(Vec<u8>, bool) -> TestResult);
    assert!(READ_BACK.load(Ordering::Relaxed) >= 20);
}

fn gap(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_offcert"))
        .arg("gap")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
    )
}

/// `offcert gap` on an OFFMATE instance lists Algorithm 1 with its checked
/// period and its ILP status in claim words (text and JSON); without
/// `--time-limit` the report is the same byte for byte at every `--jobs`.
#[test]
fn gap_lists_algorithm1_with_its_ilp_status() {
    let f = "instances/offmate/counterexamples/eq12-13-race.json";
    let (code, out) = gap(&[f, "--quiet"]);
    assert_eq!(code, 0, "{out}");
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("offmate-algorithm1 "))
        .unwrap_or_else(|| panic!("no Algorithm 1 row: {out}"));
    assert!(line.contains("valid"), "{line}");
    assert!(
        out.contains("offmate-algorithm1: ILP (corrected): solver-reported, optimal"),
        "{out}"
    );
    let (code, json) = gap(&[f, "--quiet", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let cell = v[0]["heuristics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["heuristic"] == "offmate-algorithm1")
        .expect("Algorithm 1 in the JSON")
        .clone();
    assert_eq!(cell["verdict"], "valid");
    assert!(cell["makespan"].as_i64().unwrap() > 0);
    assert!(cell["note"].as_str().unwrap().contains("solver-reported"));
    let dir = "instances/offmate/counterexamples";
    let (c1, one) = gap(&[dir, "--quiet", "--jobs", "1"]);
    let (c3, three) = gap(&[dir, "--quiet", "--jobs", "3"]);
    assert_eq!((c1, c3), (0, 0));
    assert_eq!(one, three);
}
