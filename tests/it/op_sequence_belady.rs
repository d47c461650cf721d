//! `op_sequence` (issue 25, Deliver 2): the `belady` heuristic
//! (furthest-next-use eviction, early prefetch) and the checked improvement
//! of cyclic schedules (`heuristic::improve::improve_op_sequence`,
//! `retime_cyclic`). The property that every op_sequence heuristic's schedule
//! passes the checker or says `no schedule`, in both duplex modes, and that
//! none but `window-paper` is worse than no-offload where that is valid, is
//! `op_sequence::quickcheck_heuristics_valid_and_never_worse_than_no_offload`
//! (it runs `belady` too, and asserts it has a schedule at every memory from
//! the least feasible).

use crate::common;
use crate::op_sequence::{checked, random, six};

use common::*;
use offcert::check::{check, CheckOutcome};
use offcert::family::op_sequence::OpSequence;
use offcert::family::InstanceFile;
use offcert::heuristic::effort::Effort;
use offcert::heuristic::improve::{improve_op_sequence, retime_cyclic};
use offcert::heuristic::op_sequence::belady::{plan, variants};
use offcert::heuristic::op_sequence::plan::{peak_memory, realise};
use offcert::heuristic::op_sequence::{no_offload_plan, Belady, Lms, Window};
use offcert::heuristic::{self, HeuristicError};
use offcert::model::Duplex;
use offcert::units::Ticks;
use quickcheck::TestResult;

fn period(s: &OpSequence, h: &dyn heuristic::Heuristic) -> Option<i64> {
    match checked(s, h) {
        Ok(r) => Some(r.checked.makespan().0),
        Err(HeuristicError::NoSchedule { .. }) => None,
        Err(e) => panic!("{}: {e} on {s:?}", h.name()),
    }
}

/// Every plan of every option, realised within the memory, passes the
/// checker (not only the one `belady` keeps): random small programs, both
/// duplex modes, memories from the least feasible up.
#[test]
fn quickcheck_every_belady_plan_within_memory_is_valid() {
    fn prop(spec: Vec<(u8, u8, u8, bool)>, bw: u8, mem: u8, half: bool) -> TestResult {
        if spec.len() < 2 {
            return TestResult::discard();
        }
        let mut s = random(&spec, bw, 0);
        let u = s.uses().unwrap();
        let (lo, hi) = (u.least_memory(), u.resident_peak());
        s.gpu_memory = lo + (hi - lo) * (mem % 5) as u64 / 6;
        if half {
            s.duplex = Duplex::HalfDuplex;
        }
        let inst = s.compile().unwrap();
        let mut planned = 0;
        for o in variants(u.n()) {
            let Ok(p) = plan(&u, s.gpu_memory, &o) else {
                return TestResult::error(format!("{o:?}: no plan at {} B", s.gpu_memory));
            };
            let sch = realise(&inst, &u, &p);
            if peak_memory(&u, &p, &sch) > s.gpu_memory {
                continue;
            }
            planned += 1;
            if let CheckOutcome::Invalid(r) = check(&inst, &sch) {
                let first = r.violations()[0].describe(&inst);
                return TestResult::error(format!("{o:?}: {first} on {s:?}"));
            }
        }
        TestResult::from_bool(planned > 0)
    }
    qc(120, 60).quickcheck(prop as fn(Vec<(u8, u8, u8, bool)>, u8, u8, bool) -> TestResult);
}

/// Where everything fits, `belady` keeps everything (no-offload's period, 60 =
/// Σ durations: the last drops move to instant 0 of the next iteration); at
/// the least memory it has a schedule no longer than `window`'s and `lms`'s.
#[test]
fn belady_on_six_functions() {
    assert_eq!(period(&six(36), &Belady), Some(60));
    let s = six(24);
    let b = period(&s, &Belady).unwrap();
    for h in [&Window::nnabla() as &dyn heuristic::Heuristic, &Lms] {
        let p = period(&s, h).unwrap();
        assert!(b <= p, "belady {b} > {} {p}", h.name());
    }
}

/// On the half-duplex reproduction of issue 25 (Why 4) `belady` has a checked
/// schedule no longer than any other heuristic's.
#[test]
fn belady_on_the_halfduplex_regression() {
    let path = repo().join("instances/regressions/heuristic/halfduplex.json");
    let (f, _) = offcert::io::load_instance(&path).unwrap();
    let InstanceFile::OpSequence(s) = f else {
        panic!("op_sequence expected")
    };
    let b = period(&s, &Belady).unwrap();
    for h in offcert::heuristic::op_sequence::heuristics() {
        if let Some(p) = period(&s, h.as_ref()) {
            assert!(b <= p, "belady {b} > {} {p}", h.name());
        }
    }
}

/// `retime_cyclic` cuts a period longer than its events need: no-offload's
/// schedule of `six` with 5 idle ticks at the end of the period comes back
/// to no-offload's own period, checked.
#[test]
fn retime_cyclic_cuts_an_idle_tail() {
    let s = six(36);
    let f = InstanceFile::OpSequence(s.clone());
    let inst = f.compile().unwrap();
    let u = s.uses().unwrap();
    let tight = realise(&inst, &u, &no_offload_plan(&u));
    let p = tight.period.unwrap();
    let mut slack = tight.clone();
    slack.period = Some(Ticks(p.0 + 5));
    let CheckOutcome::Valid(start) = check(&inst, &slack) else {
        panic!("the padded schedule is valid")
    };
    let got = retime_cyclic(&inst, &start, Effort::Candidates(10_000)).expect("a shorter period");
    assert_eq!(got.makespan(), p);
    assert!(got.report().valid);
}

/// The checked improvement on random small programs (both duplex modes,
/// tight memory), started from each heuristic's schedule: whatever it
/// returns is checked valid and strictly shorter than its start.
#[test]
fn quickcheck_improve_op_sequence_is_checked_and_shorter() {
    fn prop(spec: Vec<(u8, u8, u8, bool)>, bw: u8, mem: u8, half: bool) -> TestResult {
        if spec.len() < 2 {
            return TestResult::discard();
        }
        let mut s = random(&spec, bw, 0);
        let u = s.uses().unwrap();
        let (lo, hi) = (u.least_memory(), u.resident_peak());
        s.gpu_memory = lo + (hi - lo) * (mem % 4) as u64 / 6;
        if half {
            s.duplex = Duplex::HalfDuplex;
        }
        let f = InstanceFile::OpSequence(s.clone());
        let inst = f.compile().unwrap();
        let mut started = 0;
        for h in offcert::heuristic::op_sequence::heuristics() {
            let Ok(run) = heuristic::run(h.as_ref(), &f, &inst) else {
                continue;
            };
            started += 1;
            if let Some(k) = improve_op_sequence(&s, &inst, &run.checked, Effort::Candidates(300)) {
                let again = check(&inst, k.schedule());
                if !matches!(again, CheckOutcome::Valid(_))
                    || k.makespan() >= run.checked.makespan()
                {
                    return TestResult::error(format!("{}: {:?} on {s:?}", h.name(), k));
                }
            }
        }
        TestResult::from_bool(started > 0)
    }
    qc(40, 20).quickcheck(prop as fn(Vec<(u8, u8, u8, bool)>, u8, u8, bool) -> TestResult);
}

/// The bundled param_linear program (instances/paper/op_sequence), imported
/// from its execution trace: at the least memory and half way to the peak,
/// `belady` has a checked period no longer than `window`'s and `lms`'s (it
/// was 2.6× and 3.5× shorter when it was added).
#[test]
fn param_linear_belady_against_window_and_lms() {
    let path = repo().join("instances/paper/op_sequence/param_linear_et.json");
    let (f, _) = offcert::io::load_instance(&path).unwrap();
    let InstanceFile::OpSequence(mut s) = f else {
        panic!("op_sequence expected")
    };
    let u = s.uses().unwrap();
    let (lo, hi) = (u.least_memory(), u.resident_peak());
    for mem in [lo, (lo + hi) / 2] {
        s.gpu_memory = mem;
        let b = period(&s, &Belady).unwrap();
        for h in [&Window::nnabla() as &dyn heuristic::Heuristic, &Lms] {
            let p = period(&s, h).unwrap();
            assert!(b <= p, "at {mem} B: belady {b} > {} {p}", h.name());
        }
    }
}

/// The bundled imported programs are exactly what the commands of
/// `instances/paper/op_sequence/README.md` write today (run from the
/// repository root, into a temporary file, compared byte for byte).
#[test]
fn bundled_imports_are_what_import_et_writes() {
    let readme =
        std::fs::read_to_string(repo().join("instances/paper/op_sequence/README.md")).unwrap();
    let dir = std::env::temp_dir().join(format!("offcert-bundled-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut seen = 0;
    for line in readme.lines().filter(|l| l.contains("`offcert import et ")) {
        let cmd = line
            .rsplit("`offcert ")
            .next()
            .unwrap()
            .trim_end_matches(['`', ' ', '|']);
        let mut args: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
        let o = args.iter().position(|a| a == "-o").expect("-o FILE");
        let bundled = repo().join(&args[o + 1]);
        let fresh = dir.join(bundled.file_name().unwrap());
        args[o + 1] = fresh.display().to_string();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_offcert"))
            .current_dir(repo())
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (a, b) = (
            std::fs::read(&bundled).unwrap(),
            std::fs::read(&fresh).unwrap(),
        );
        assert!(
            a == b,
            "{} differs from what `{cmd}` writes",
            bundled.display()
        );
        seen += 1;
    }
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(seen, 3);
}

/// Regression (found by the property above): with a look-ahead of 2, `belady`
/// prefetched `a2` for `upd` before `f2` had written it ("prefetch of a2
/// which has no CPU copy"). A prefetch now takes only a value that exists.
#[test]
fn belady_never_prefetches_a_value_not_written_yet() {
    let mut s = random(
        &[(0, 2, 0, false), (0, 0, 0, false), (0, 0, 0, false)],
        0,
        0,
    );
    s.gpu_memory = 5;
    let u = s.uses().unwrap();
    let inst = s.compile().unwrap();
    for o in variants(u.n()) {
        let p = plan(&u, 5, &o).unwrap();
        let sch = realise(&inst, &u, &p);
        let r = check(&inst, &sch);
        assert!(r.valid, "{o:?}: {:?}", r.violations);
    }
    assert!(period(&s, &Belady).is_some());
}
