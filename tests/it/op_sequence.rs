//! `op_sequence` (issue 13): fixtures with exact violations, the window
//! heuristic on a hand-built sequence, every heuristic's schedule checked, the
//! bounds below every checked period, and (quickcheck) window ≥ MILP optimum on
//! toy DAGs with skip connections inside the cyclic MILP's scope.

use crate::common;

use common::*;
use offcert::bound::op_sequence::{transfer_volume, Compute, TransferVolume};
use offcert::bound::BoundMethod;
use offcert::check::{check, CheckOutcome, Violation};
use offcert::exact::{self, Limits, Method, Status};
use offcert::family::op_sequence::{Function, OpSequence, Variable};
use offcert::family::{BandwidthFile, InstanceFile};
use offcert::heuristic::op_sequence::plan::{realise, Action};
use offcert::heuristic::op_sequence::window::{plan, Variant, WindowOptions};
use offcert::heuristic::op_sequence::{lms_plan, Window};
use offcert::heuristic::{self, HeuristicError};
use offcert::model::{Duplex, Instance, OpId, ReleaseRule, TensorId, TensorKind};
use offcert::schedule::Event;
use offcert::units::Ticks;
use quickcheck::TestResult;

fn fixture(schedule: &str) -> CheckOutcome {
    let dir = repo().join("instances/fixtures");
    let (inst, s) = load(&dir.join("opseq3.json"), &dir.join(schedule));
    let r = check(&inst, &s);
    for w in &r.violations {
        assert!(
            w.confirm(&inst, &s),
            "{schedule}: witness does not confirm: {w:?}"
        );
    }
    r
}

#[test]
fn fixture_valid() {
    let r = fixture("opseq3.valid.schedule.json");
    assert!(r.valid, "{:?}", r.violations);
    assert_eq!(r.makespan, Ticks(20));
    assert_eq!(r.peak_memory.0, 10);
}

#[test]
fn fixture_swap_in_after_function_start() {
    let r = fixture("opseq3.late-swap-in.invalid.schedule.json");
    assert!(!r.valid);
    let first = &r.violations[0];
    assert!(
        // `at` and `ready_at` are both relative to the period start (P = 18):
        // the prefetch ends at 4, two ticks after f1 starts at 2.
        matches!(
            first,
            Violation::InputNotResident {
                op: OpId(0),
                tensor: TensorId(0),
                at: Ticks(2),
                ready_at: Some(Ticks(4)),
                ..
            }
        ),
        "{first:?}"
    );
    assert_eq!(
        rules(&r).into_iter().collect::<Vec<_>>(),
        vec!["dependencies"],
        "{:?}",
        r.violations
    );
}

#[test]
fn fixture_dropped_while_needed() {
    let r = fixture("opseq3.dropped-needed.invalid.schedule.json");
    assert!(!r.valid);
    assert!(
        has(&r, |v| matches!(
            v,
            Violation::DataLoss {
                tensor: TensorId(1),
                at: Ticks(8),
                ..
            }
        )),
        "{:?}",
        r.violations
    );
    assert!(has(&r, |v| matches!(
        v,
        Violation::InputNotResident {
            op: OpId(1),
            tensor: TensorId(1),
            at: Ticks(8),
            ready_at: None,
            ..
        }
    )));
    assert!(has(&r, |v| matches!(
        v,
        Violation::InputNotResident {
            op: OpId(2),
            tensor: TensorId(1),
            at: Ticks(12),
            ready_at: None,
            ..
        }
    )));
}

#[test]
fn fixture_swapped_out_while_needed() {
    let r = fixture("opseq3.swapped-out-needed.invalid.schedule.json");
    assert!(!r.valid);
    assert!(
        has(&r, |v| matches!(
            v,
            Violation::InputNotResident {
                op: OpId(2),
                tensor: TensorId(1),
                at: Ticks(12),
                ready_at: None,
                ..
            }
        )),
        "{:?}",
        r.violations
    );
    assert!(!has(&r, |v| matches!(
        v,
        Violation::ReleasedWhileInUse { .. }
    )));
}

fn var(name: &str, bytes: u64) -> Variable {
    Variable {
        name: name.into(),
        bytes,
        kind: TensorKind::Other,
    }
}

fn func(name: &str, d: i64, reads: &[&str], writes: &[&str], modifies: &[&str]) -> Function {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
    Function {
        name: name.into(),
        duration: d,
        reads: s(reads),
        writes: s(writes),
        modifies: s(modifies),
        clears: vec![],
    }
}

/// Six functions with a skip connection (a is read by f1's successor and by
/// the backward b3): x, w1, w2 persistent (4 B each), a, b, c, g activations.
pub(crate) fn six(mem: u64) -> OpSequence {
    OpSequence {
        name: "six".into(),
        note: None,
        variables: vec![
            var("x", 4),
            var("w1", 4),
            var("w2", 4),
            var("a", 8),
            var("b", 8),
            var("c", 8),
            var("g", 8),
        ],
        functions: vec![
            func("f1", 10, &["x", "w1"], &["a"], &[]),
            func("f2", 10, &["a", "w2"], &["b"], &[]),
            func("f3", 10, &["a", "b"], &["c"], &[]),
            func("b3", 10, &["c", "a"], &["g"], &[]),
            func("b2", 10, &["g"], &[], &["w2"]),
            func("b1", 10, &["g", "x"], &[], &["w1"]),
        ],
        persistent: vec!["x".into(), "w1".into(), "w2".into()],
        gpu_memory: mem,
        bandwidth: BandwidthFile::PerTick(1),
        duplex: Duplex::FullDuplex,
        release: ReleaseRule::AfterEnd,
        allocator: Default::default(),
        tick: None,
    }
}

pub(crate) fn checked(
    s: &OpSequence,
    h: &dyn heuristic::Heuristic,
) -> Result<heuristic::HeuristicRun, HeuristicError> {
    let f = InstanceFile::OpSequence(s.clone());
    let inst = f.compile().unwrap();
    heuristic::run(h, &f, &inst)
}

#[test]
fn window_on_six_functions_by_hand() {
    // Footprints: f1 16, f2 20, f3 24, b3 24, b2 12, b1 16: least memory 24.
    let s = six(24);
    let u = s.uses().unwrap();
    assert_eq!(u.least_memory(), 24);
    // B = 24, W = 36 (1.5 B). f1: window admits x, w1 (swap in), a (reserve),
    // then f2's a (counted), w2 (swap in: 4+4+4 = 12 ≤ 24), b (reserve, window
    // 4+4+8+4+8 = 28), f3's c would make 36 ≤ 36 (reserve). After f1: x is
    // next read by b1 (beyond the window) and clean: a pending drop; w1 same.
    let p = plan(
        &u,
        &WindowOptions {
            variant: Variant::Nnabla,
            budget: 24,
            window: 36,
        },
    )
    .unwrap();
    assert_eq!(
        p.begin[0],
        vec![Action::SwapIn(0), Action::SwapIn(1), Action::SwapIn(2)]
    );
    assert_eq!(p.end[0], vec![Some(Action::Drop(0)), Some(Action::Drop(1))]);
    // The last uses: w2 modified by b2 → swapped out; w1 by b1 → swapped out.
    assert!(
        p.end[4].contains(&Some(Action::SwapOut(2))),
        "{:?}",
        p.end[4]
    );
    assert!(
        p.end[5].contains(&Some(Action::SwapOut(1))),
        "{:?}",
        p.end[5]
    );
    let run = checked(&s, &Window::nnabla()).unwrap();
    assert!(run.checked.report().valid);
    assert!(run.checked.report().peak_memory.0 <= 24);
    // The compute bound is 60; the transfer-volume bound at 24 B: at b3 the
    // persistent 12 B plus live a, c (16 B) plus out g (8 B) against 24 B → 12 B.
    assert_eq!(transfer_volume(&u, 24), 12);
    assert!(run.checked.report().makespan.0 >= 60);
}

#[test]
fn every_heuristic_is_checked_valid_or_says_why() {
    for mem in [24u64, 30, 40, 52, 60] {
        let s = six(mem);
        let f = InstanceFile::OpSequence(s.clone());
        let inst = f.compile().unwrap();
        let comp = Compute.bound(&f, &inst).unwrap();
        let vol = TransferVolume.bound(&f, &inst).unwrap();
        for h in offcert::heuristic::op_sequence::heuristics() {
            match heuristic::run(h.as_ref(), &f, &inst) {
                Ok(r) => {
                    assert!(r.checked.report().valid);
                    assert!(r.checked.report().makespan.0 >= comp.ceil_ticks());
                    assert!(
                        r.checked.report().makespan.0 >= vol.ceil_ticks(),
                        "{} at {mem}",
                        h.name()
                    );
                }
                Err(HeuristicError::NoSchedule { .. }) => {}
                Err(e) => panic!("{} at {mem}: {e}", h.name()),
            }
        }
    }
    // No offload needs the resident peak: 12 B persistent + a, b, c live at f3 (24 B) = 36 B.
    assert_eq!(six(0).uses().unwrap().resident_peak(), 36);
    assert!(checked(&six(35), &offcert::heuristic::op_sequence::NoOffload).is_err());
    let r = checked(&six(36), &offcert::heuristic::op_sequence::NoOffload).unwrap();
    // Σ durations: the drops at the last function's end move to instant 0 of
    // the next iteration (they cost a tick more before, 61: the period of a
    // training step that ends with its optimiser was never Σ durations).
    assert_eq!(r.checked.report().makespan, Ticks(60));
    let s = r.checked.schedule();
    let init = s.initial.as_ref().unwrap();
    assert!(s.events.iter().any(|e| matches!(e, offcert::schedule::Event::Delete { at, tensor } if at.0 == 0 && init.gpu.contains(tensor))));
}

#[test]
fn below_the_largest_footprint_reports_not_prefetched() {
    for h in [Window::nnabla(), Window::paper()] {
        match checked(&six(23), &h) {
            Err(HeuristicError::NoSchedule { reason, .. }) => {
                assert!(reason.contains("not prefetched"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn lms_plan_realises_to_a_valid_schedule() {
    let s = six(60);
    let inst = s.compile().unwrap();
    let u = s.uses().unwrap();
    let p = lms_plan(&u, 1, 1);
    let sch = realise(&inst, &u, &p);
    let r = check(&inst, &sch);
    assert!(r.valid, "{:?}", r.violations);
}

// ---------------------------------------------------------------------------
// Random toy DAGs.

/// A random sequence: `spec[i] = (d, size, skip, update)`; function i writes
/// a_i, reads a_{i-1} and (if skip) a_{i-1-skip}, and a weight w_i (modified by
/// the last function when `update`). Each activation's last reader is known.
pub(crate) fn random(spec: &[(u8, u8, u8, bool)], bw: u8, slack: u8) -> OpSequence {
    let n = spec.len().clamp(2, 4);
    let spec = &spec[..n.min(spec.len())];
    let mut vars = Vec::new();
    let mut funcs = Vec::new();
    let mut pers = Vec::new();
    for (i, &(d, sz, skip, _)) in spec.iter().enumerate() {
        vars.push(var(&format!("a{i}"), 1 + (sz % 4) as u64));
        vars.push(var(&format!("w{i}"), 1 + (sz / 4 % 3) as u64));
        pers.push(format!("w{i}"));
        let mut reads = vec![format!("w{i}")];
        if i > 0 {
            reads.push(format!("a{}", i - 1));
            let k = (skip % 3) as usize;
            if k > 0 && i > k {
                reads.push(format!("a{}", i - 1 - k));
            }
        }
        funcs.push(Function {
            name: format!("f{i}"),
            duration: 1 + (d % 4) as i64,
            reads,
            writes: vec![format!("a{i}")],
            modifies: vec![],
            clears: vec![],
        });
    }
    // The last function reads the last activation and updates weights.
    let last = spec.len();
    let mut upd = Function {
        name: "upd".into(),
        duration: 1,
        reads: vec![format!("a{}", last - 1)],
        writes: vec![],
        modifies: vec![],
        clears: vec![],
    };
    for (i, &(_, _, _, u)) in spec.iter().enumerate() {
        if u {
            upd.modifies.push(format!("w{i}"));
        }
    }
    funcs.push(upd);
    let mut s = OpSequence {
        name: "rand".into(),
        note: None,
        variables: vars,
        functions: funcs,
        persistent: pers,
        gpu_memory: 0,
        bandwidth: BandwidthFile::PerTick(1 + (bw % 3) as u64),
        duplex: Duplex::FullDuplex,
        release: ReleaseRule::AfterEnd,
        allocator: Default::default(),
        tick: None,
    };
    let u = s.uses().unwrap();
    let (lo, hi) = (u.least_memory(), u.resident_peak());
    // Tight memory: from the least feasible to the peak, mostly near the bottom.
    s.gpu_memory = lo + (hi - lo) * (slack % 4) as u64 / 6;
    s
}

/// The MILP's encoding of an op_sequence instance: each non-persistent
/// variable is freed by its last user (the MILP does not encode deletes of
/// dead tensors). Any schedule of the original maps to one of this instance
/// with the same period (drop the releases after the last use), so its
/// optimum is ≤ the original's.
fn milp_instance(s: &OpSequence) -> Instance {
    let mut inst = s.compile().unwrap();
    let u = s.uses().unwrap();
    for (v, sp) in u.span().iter().enumerate() {
        if let (Some((_, b)), false) = (sp, u.persistent[v]) {
            inst.ops[*b].frees.push(TensorId(v as u32));
        }
    }
    inst.family = "core".into();
    inst
}

#[test]
fn quickcheck_window_is_valid_or_not_prefetched() {
    fn prop(spec: Vec<(u8, u8, u8, bool)>, bw: u8, slack: u8, paper: bool) -> TestResult {
        if spec.len() < 2 {
            return TestResult::discard();
        }
        let s = random(&spec, bw, slack);
        let h = if paper {
            Window::paper()
        } else {
            Window::nnabla()
        };
        match checked(&s, &h) {
            Ok(r) => TestResult::from_bool(r.checked.report().valid),
            Err(HeuristicError::NoSchedule { reason, .. }) => {
                TestResult::error(format!("no schedule at least memory: {reason}"))
            }
            Err(e) => TestResult::error(e.to_string()),
        }
    }
    qc(60, 40).quickcheck(prop as fn(Vec<(u8, u8, u8, bool)>, u8, u8, bool) -> TestResult);
}

#[test]
fn quickcheck_window_period_at_least_milp_optimum() {
    fn prop(spec: Vec<(u8, u8, u8, bool)>, bw: u8, slack: u8) -> TestResult {
        if spec.len() < 2 {
            return TestResult::discard();
        }
        let s = random(&spec, bw, slack);
        let run = match checked(&s, &Window::nnabla()) {
            Ok(r) => r,
            Err(e) => return TestResult::error(e.to_string()),
        };
        let d = milp_instance(&s);
        // The window schedule, without the drops the last users now do, is valid there.
        let mut sch = run.checked.schedule().clone();
        let freed: Vec<(OpId, TensorId)> = d
            .ops
            .iter()
            .enumerate()
            .flat_map(|(i, o)| o.frees.iter().map(move |t| (OpId(i as u32), *t)))
            .collect();
        let ends: std::collections::HashMap<OpId, Ticks> = sch
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Compute { op, end, .. } => Some((*op, *end)),
                _ => None,
            })
            .collect();
        // A drop at the period's end was moved to instant 0 of the next
        // iteration (the variable in the GPU set at 0): there the last user
        // frees it, so it leaves the initial set too.
        let period = sch.period.unwrap();
        let wrapped = |t: &TensorId, at: Ticks| {
            at == Ticks(0) && freed.iter().any(|(o, f)| f == t && ends[o] == period)
        };
        let dropped_at_end: Vec<TensorId> = sch
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Delete { tensor, at } if wrapped(tensor, *at) => Some(*tensor),
                _ => None,
            })
            .collect();
        sch.events.retain(|e| !matches!(e, Event::Delete { tensor, at } if freed.iter().any(|(o, t)| t == tensor && ends[o] == *at) || wrapped(tensor, *at)));
        if let Some(init) = sch.initial.as_mut() {
            init.gpu.retain(|t| !dropped_at_end.contains(t));
        }
        let r = check(&d, &sch);
        if !r.valid {
            return TestResult::error(format!(
                "window schedule rejected on the MILP encoding: {:?}",
                r.violations
            ));
        }
        // The MILP encodes the relaxation `after_start` (its schedules may
        // release an operand while its op runs); its optimum is a lower bound
        // on the default rule's (MODEL.md R10), so the comparison stands.
        let mut d = d;
        d.release = ReleaseRule::AfterStart;
        let limits = Limits {
            time_limit: std::time::Duration::from_secs(5),
            ..Limits::default()
        };
        match exact::solve(Method::Milp, &d, &limits) {
            Ok(o) if o.status == Status::Optimal => {
                let opt = o
                    .schedule
                    .map(|s| check(&d, &s).makespan)
                    .unwrap_or(Ticks(i64::MAX));
                TestResult::from_bool(run.checked.report().makespan >= opt)
            }
            Ok(_) => TestResult::discard(),
            Err(e) => TestResult::error(format!("MILP: {e}")),
        }
    }
    qc(12, 6)
        .max_tests(cases(60))
        .quickcheck(prop as fn(Vec<(u8, u8, u8, bool)>, u8, u8) -> TestResult);
}

#[test]
fn resnet50_table1_point_is_checked_valid() {
    // Batch 928 on 16 GiB, 50 GB/s, W = B: the window's schedule is valid and
    // at most the compute bound's 581·(928/928) images/s.
    let s = offcert::family::resnet50::resnet50(928, 16 << 30, 50);
    assert!(
        s.uses().unwrap().resident_peak() > 16 << 30,
        "the batch must not fit without offloading"
    );
    let f = InstanceFile::OpSequence(s);
    let inst = f.compile().unwrap();
    let r = heuristic::run(
        &Window {
            variant: Variant::Nnabla,
            num: 1,
            den: 1,
        },
        &f,
        &inst,
    )
    .unwrap();
    assert!(r.checked.report().valid);
    assert!(r.checked.report().peak_memory.0 <= 16 << 30);
    assert!(r.checked.report().makespan >= inst.total_compute());
}

/// `instances/regressions/milp/temporary-offload-s0.json` (shrunk from the
/// property above): the MILP's optimum offloads the temporary a0 in the
/// period, so the state at P, hence S₀, has a0's host copy current. The
/// cyclic decoder once left a0 out of S₀ and the checker rejected its schedule.
#[test]
fn milp_s0_keeps_the_host_copy_of_an_offloaded_temporary() {
    let (_, inst) = offcert::io::load_instance(
        &repo().join("instances/regressions/milp/temporary-offload-s0.json"),
    )
    .unwrap();
    let limits = Limits {
        time_limit: std::time::Duration::from_secs(20),
        ..Limits::default()
    };
    let o = exact::solve(Method::Milp, &inst, &limits)
        .expect("the checker accepts the MILP's schedule");
    assert_eq!(o.status, Status::Optimal);
    let s = o.schedule.unwrap();
    let r = check(&inst, &s);
    assert!(r.valid, "{:?}", r.violations);
    let a0 = inst.tensor_by_name("a0").unwrap();
    assert!(s.initial.unwrap().cpu.contains(&a0));
}

// ---------------------------------------------------------------------------
// Issue 25: half duplex, never worse than no-offload, LMS's thresholds.

/// Every op_sequence heuristic on `s`: its checked period, or `None` for `no
/// schedule`; an `invalid` schedule fails the test.
fn periods(s: &OpSequence) -> Vec<(&'static str, Option<i64>)> {
    offcert::heuristic::op_sequence::heuristics()
        .iter()
        .map(|h| match checked(s, h.as_ref()) {
            Ok(r) => {
                assert!(r.checked.report().valid);
                (h.name(), Some(r.checked.report().makespan.0))
            }
            Err(HeuristicError::NoSchedule { .. }) => (h.name(), None),
            Err(e) => panic!("{}: {e} on {s:?}", h.name()),
        })
        .collect()
}

/// The reproduction of issue 25 (Why 4), kept in instances/regressions: on a
/// half-duplex link `window` and `window-paper` overlapped a swap-out with a
/// swap-in ("channel link: events[2] transfers until 5 but events[3] starts
/// at 4"), and `lms` found no threshold. Now each has a checked schedule.
#[test]
fn halfduplex_regression_every_heuristic_is_valid() {
    let path = repo().join("instances/regressions/heuristic/halfduplex.json");
    let (f, _) = offcert::io::load_instance(&path).unwrap();
    let InstanceFile::OpSequence(s) = f else {
        panic!("op_sequence expected")
    };
    assert_eq!(s.duplex, Duplex::HalfDuplex);
    let got = periods(&s);
    for (name, p) in &got {
        if *name != "no-offload" {
            assert!(p.is_some(), "{name}: {got:?}");
        }
    }
}

/// `window` takes no-offload's plan when it fits (at 100 % it was 5.8× no-offload
/// on param_linear); `window-paper` still swaps as printed.
#[test]
fn window_keeps_everything_when_everything_fits() {
    let s = six(36);
    let got = periods(&s);
    let of = |n: &str| got.iter().find(|(h, _)| *h == n).unwrap().1;
    assert_eq!(of("no-offload"), Some(60));
    assert_eq!(of("window"), Some(60));
    assert_eq!(of("lms"), Some(60));
    assert!(of("window-paper").unwrap() > 60, "{got:?}");
}

static NO_OFFLOAD_VALID: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static HALF: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Random small programs in both duplex modes, at memories from the least
/// feasible to above the no-offload peak: every heuristic's schedule passes
/// the checker or the heuristic says `no schedule`; where no-offload is
/// valid, every heuristic but `window-paper` has a schedule no longer than
/// it; `window`, `lms` and `belady` have one at every memory from the least
/// feasible.
#[test]
fn quickcheck_heuristics_valid_and_never_worse_than_no_offload() {
    use std::sync::atomic::Ordering;
    fn prop(spec: Vec<(u8, u8, u8, bool)>, bw: u8, mem: u8, half: bool) -> TestResult {
        if spec.len() < 2 {
            return TestResult::discard();
        }
        let mut s = random(&spec, bw, 0);
        let u = s.uses().unwrap();
        let (lo, hi) = (u.least_memory(), u.resident_peak());
        s.gpu_memory = lo + (hi - lo + 2) * (mem % 8) as u64 / 6;
        if half {
            s.duplex = Duplex::HalfDuplex;
            HALF.fetch_add(1, Ordering::Relaxed);
        }
        let got = periods(&s);
        let of = |n: &str| got.iter().find(|(h, _)| *h == n).unwrap().1;
        assert!(of("window").is_some(), "{got:?} on {s:?}");
        assert!(of("belady").is_some(), "{got:?} on {s:?}");
        if let Some(none) = of("no-offload") {
            NO_OFFLOAD_VALID.fetch_add(1, Ordering::Relaxed);
            for (h, p) in &got {
                if *h != "window-paper" {
                    assert!(p.is_some_and(|p| p <= none), "{h}: {got:?} on {s:?}");
                }
            }
        }
        TestResult::passed()
    }
    qc(150, 100).quickcheck(prop as fn(Vec<(u8, u8, u8, bool)>, u8, u8, bool) -> TestResult);
    assert!(NO_OFFLOAD_VALID.load(Ordering::Relaxed) >= 10);
    assert!(HALF.load(Ordering::Relaxed) >= 10);
}

/// `lms` finds a schedule wherever one of its thresholds gives one: on random
/// small programs (both duplex modes, least memory and up), whenever some
/// (out, ahead) in 0..=n realises within the memory and passes the checker,
/// `lms` returns a checked schedule no longer than it ("every threshold on the
/// grid exceeds the memory" on param_resnet at 0 %: the grid lacked ahead 0).
#[test]
fn quickcheck_lms_finds_a_schedule_wherever_a_threshold_does() {
    fn prop(spec: Vec<(u8, u8, u8, bool)>, bw: u8, mem: u8, half: bool) -> TestResult {
        if spec.len() < 2 {
            return TestResult::discard();
        }
        let mut s = random(&spec, bw, 0);
        let u = s.uses().unwrap();
        let (lo, hi) = (u.least_memory(), u.resident_peak());
        s.gpu_memory = lo + (hi - lo) * (mem % 5) as u64 / 8;
        if half {
            s.duplex = Duplex::HalfDuplex;
        }
        let inst = s.compile().unwrap();
        let n = u.n();
        let best = (0..=n)
            .flat_map(|out| (0..=n).map(move |ahead| (out, ahead)))
            .filter_map(|(out, ahead)| {
                let r = check(&inst, &realise(&inst, &u, &lms_plan(&u, out, ahead)));
                r.valid.then_some(r.makespan.0)
            })
            .min();
        let Some(best) = best else {
            return TestResult::discard();
        };
        match checked(&s, &offcert::heuristic::op_sequence::Lms) {
            Ok(r) => TestResult::from_bool(r.checked.report().makespan.0 <= best),
            Err(e) => TestResult::error(format!("{e}: a threshold gives {best} on {s:?}")),
        }
    }
    qc(150, 80).quickcheck(prop as fn(Vec<(u8, u8, u8, bool)>, u8, u8, bool) -> TestResult);
}

/// The bundled param_linear trace (issue 25): at 100 % `window` was 5.8×
/// no-offload; now `window` and `lms` equal it. At the least memory `lms`
/// has a schedule, in both duplex modes.
#[test]
fn param_linear_window_and_lms_at_both_ends() {
    let opts = offcert::trace::et::EtOptions {
        name: "param_linear_et".into(),
        gpu_memory: None,
        bandwidth: BandwidthFile::PerTick(12),
        split_reused_storages: true,
    };
    let path = repo().join("tests/data/traces/param_linear_et.json.gz");
    let (mut s, _) = offcert::trace::et::import_files(&path, None, &opts).unwrap();
    let u = s.uses().unwrap();
    for duplex in [Duplex::FullDuplex, Duplex::HalfDuplex] {
        s.duplex = duplex;
        s.gpu_memory = u.resident_peak();
        let got = periods(&s);
        let of = |n: &str| got.iter().find(|(h, _)| *h == n).unwrap().1;
        assert!(of("no-offload").is_some());
        assert_eq!(of("window"), of("no-offload"), "{got:?}");
        assert_eq!(of("lms"), of("no-offload"), "{got:?}");
        s.gpu_memory = u.least_memory();
        let got = periods(&s);
        let of = |n: &str| got.iter().find(|(h, _)| *h == n).unwrap().1;
        assert!(of("lms").is_some() && of("window").is_some(), "{got:?}");
    }
}

/// The bundled param_resnet trace at its least memory (issue 25: `lms` said
/// "every threshold on the grid exceeds the memory"; out 0, ahead 0 fits).
#[test]
fn param_resnet_lms_at_least_memory() {
    let opts = offcert::trace::et::EtOptions {
        name: "param_resnet_et".into(),
        gpu_memory: None,
        bandwidth: BandwidthFile::PerTick(12),
        split_reused_storages: true,
    };
    let path = repo().join("tests/data/traces/param_resnet_et.json.gz");
    let (mut s, _) = offcert::trace::et::import_files(&path, None, &opts).unwrap();
    s.gpu_memory = s.uses().unwrap().least_memory();
    let r = checked(&s, &offcert::heuristic::op_sequence::Lms).unwrap();
    assert!(r.checked.report().valid);
}
