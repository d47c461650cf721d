//! `op-transfer-windows` (`proofs/OP-SEQUENCE-BOUND.md` §3–§4): values by
//! hand, at least `op-transfer-volume`, at most every heuristic's checked
//! period on random small programs (both duplex modes, memory from the least
//! feasible up), and at most the MILP's optimum of the MILP's encoding (each
//! activation freed by its last user, release rule `after_start`), whose
//! optimum is at most the program's (tests/it/op_sequence.rs `milp_instance`).

use crate::common;

use common::*;
use offcert::bound::op_sequence::windows::transfer_windows;
use offcert::bound::op_sequence::{transfer_volume, TransferVolume};
use offcert::bound::BoundMethod;
use offcert::check::check;
use offcert::exact::{self, Limits, Method, Status};
use offcert::family::op_sequence::{Function, OpSequence, Variable};
use offcert::family::{BandwidthFile, InstanceFile};
use offcert::heuristic::{self, HeuristicError};
use offcert::model::{Duplex, Instance, ReleaseRule, TensorId, TensorKind};
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};

fn var(name: &str, bytes: u64) -> Variable {
    Variable {
        name: name.into(),
        bytes,
        kind: TensorKind::Other,
    }
}

fn func(name: &str, d: i64, reads: &[String], writes: &[String], modifies: &[String]) -> Function {
    Function {
        name: name.into(),
        duration: d,
        reads: reads.to_vec(),
        writes: writes.to_vec(),
        modifies: modifies.to_vec(),
        clears: vec![],
    }
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn program(variables: Vec<Variable>, functions: Vec<Function>, pers: Vec<String>) -> OpSequence {
    OpSequence {
        name: "prog".into(),
        note: None,
        variables,
        functions,
        persistent: pers,
        gpu_memory: 0,
        bandwidth: BandwidthFile::PerTick(1),
        duplex: Duplex::FullDuplex,
        release: ReleaseRule::AfterEnd,
        allocator: Default::default(),
        tick: None,
    }
}

/// The checked periods of every op_sequence heuristic that has a schedule.
fn periods(s: &OpSequence) -> Vec<i64> {
    let f = InstanceFile::OpSequence(s.clone());
    let inst = f.compile().unwrap();
    heuristic::op_sequence::heuristics()
        .iter()
        .filter_map(|h| match heuristic::run(h.as_ref(), &f, &inst) {
            Ok(r) => Some(r.checked.report().makespan.0),
            Err(HeuristicError::NoSchedule { .. }) => None,
            Err(e) => panic!("{}: {e} on {s:?}", h.name()),
        })
        .collect()
}

/// f0 (1 tick) reads w0, writes a0; f1 (1) reads a0, w1, writes a1; f2 (5)
/// reads a1, w2; w_i 4 B persistent, a_i 1 B, M = 7, β = 1. At f0's start
/// L = {w0, w1, w2} (12 B), out = |a0| = 1, so D = 12 − 6 = 6 B of {w1, w2}
/// are off the GPU and must be back before f2 starts, after which f2 runs:
/// P ≥ 5 + 6 = 11. op-transfer-volume gives max D = 7 (at f1), compute 7.
#[test]
fn windows_by_hand() {
    let w = |i: usize| format!("w{i}");
    let a = |i: usize| format!("a{i}");
    let mut s = program(
        vec![
            var("w0", 4),
            var("w1", 4),
            var("w2", 4),
            var("a0", 1),
            var("a1", 1),
        ],
        vec![
            func("f0", 1, &[w(0)], &[a(0)], &[]),
            func("f1", 1, &[a(0), w(1)], &[a(1)], &[]),
            func("f2", 5, &[a(1), w(2)], &[], &[]),
        ],
        names(&["w0", "w1", "w2"]),
    );
    s.gpu_memory = 7;
    let u = s.uses().unwrap();
    let bw = offcert::units::Bandwidth::new(1, 1);
    assert_eq!(transfer_volume(&u, 7), 7);
    assert_eq!(transfer_windows(&u, 7, bw), 11);
    for p in periods(&s) {
        assert!(p >= 11, "checked period {p}");
    }
}

/// Four functions (1 tick each), f_i reads only w_i (4 B, persistent), M = 4,
/// β = 1. At every f_i, D = 16 − 4 = 12 B of the other three weights are off
/// the GPU; the window [f_i, f_{i+δ}) must bring back 4δ of them while only δ
/// ticks of compute run: excess 3δ. One window (δ = 3) gives 4 + 9 = 13;
/// windows that tile the cycle give 4 + 12 = 16. op-transfer-volume: 12.
#[test]
fn disjoint_windows_add_up() {
    let ws: Vec<String> = (0..4).map(|i| format!("w{i}")).collect();
    let mut s = program(
        ws.iter().map(|w| var(w, 4)).collect(),
        (0..4)
            .map(|i| func(&format!("f{i}"), 1, &[ws[i].clone()], &[], &[]))
            .collect(),
        ws.clone(),
    );
    s.gpu_memory = 4;
    let u = s.uses().unwrap();
    let bw = offcert::units::Bandwidth::new(1, 1);
    assert_eq!(transfer_volume(&u, 4), 12);
    assert_eq!(transfer_windows(&u, 4, bw), 16);
    for p in periods(&s) {
        assert!(p >= 16, "checked period {p}");
    }
}

/// A random program: `spec[i] = (d, size, skip, update)`; function i reads
/// a_{i−1} (and a_{i−1−skip}) and its weight w_i, writes a_i; a last function
/// reads the last activation and modifies the weights marked `update`.
fn random(spec: &[(u8, u8, u8, bool)], bw: u8, mem: u8, half: bool) -> OpSequence {
    let spec = &spec[..spec.len().min(5)];
    let (mut vars, mut funcs, mut pers) = (Vec::new(), Vec::new(), Vec::new());
    for (i, &(d, sz, skip, _)) in spec.iter().enumerate() {
        vars.push(var(&format!("a{i}"), 1 + (sz % 4) as u64));
        vars.push(var(&format!("w{i}"), 1 + (sz / 4 % 4) as u64));
        pers.push(format!("w{i}"));
        let mut reads = vec![format!("w{i}")];
        let k = (skip % 3) as usize;
        if i > 0 {
            reads.push(format!("a{}", i - 1));
            if k > 0 && i > k {
                reads.push(format!("a{}", i - 1 - k));
            }
        }
        funcs.push(func(
            &format!("f{i}"),
            1 + (d % 4) as i64,
            &reads,
            &[format!("a{i}")],
            &[],
        ));
    }
    let upd: Vec<String> = (0..spec.len())
        .filter(|&i| spec[i].3)
        .map(|i| format!("w{i}"))
        .collect();
    let last = vec![format!("a{}", spec.len() - 1)];
    funcs.push(func("upd", 1, &last, &[], &upd));
    let mut s = program(vars, funcs, pers);
    s.bandwidth = BandwidthFile::PerTick(1 + (bw % 3) as u64);
    if half {
        s.duplex = Duplex::HalfDuplex;
    }
    let u = s.uses().unwrap();
    let (lo, hi) = (u.least_memory(), u.resident_peak());
    s.gpu_memory = lo + (hi - lo + 2) * (mem % 8) as u64 / 8;
    s
}

static TESTED: AtomicUsize = AtomicUsize::new(0);
static ABOVE: AtomicUsize = AtomicUsize::new(0);

/// op-transfer-windows ≥ op-transfer-volume, and ≤ every checked period.
#[test]
fn windows_below_every_checked_period() {
    fn prop(spec: Vec<(u8, u8, u8, bool)>, bw: u8, mem: u8, half: bool) -> TestResult {
        if spec.len() < 2 {
            return TestResult::discard();
        }
        let s = random(&spec, bw, mem, half);
        let file = InstanceFile::OpSequence(s.clone());
        let inst = file.compile().unwrap();
        let windows = offcert::bound::op_sequence::windows::TransferWindows
            .bound(&file, &inst)
            .unwrap();
        let volume = TransferVolume.bound(&file, &inst).unwrap();
        assert!(windows.value >= volume.value, "{s:?}");
        let got = periods(&s);
        let Some(&best) = got.iter().min() else {
            return TestResult::discard();
        };
        assert!(
            windows.ceil_ticks() <= best,
            "windows {} above the checked period {best} on {s:?}",
            windows.value
        );
        TESTED.fetch_add(1, Ordering::Relaxed);
        let compute: i64 = s.functions.iter().map(|f| f.duration).sum();
        if windows.value > volume.value && windows.ceil_ticks() > compute {
            ABOVE.fetch_add(1, Ordering::Relaxed);
        }
        TestResult::passed()
    }
    qc(200, 150).quickcheck(prop as fn(Vec<(u8, u8, u8, bool)>, u8, u8, bool) -> TestResult);
    for (what, n) in [("tested", &TESTED), ("above volume and compute", &ABOVE)] {
        assert!(n.load(Ordering::Relaxed) >= 10, "{what}: {n:?}");
    }
}

/// The MILP's encoding of `s` (as in tests/it/op_sequence.rs): each
/// non-persistent variable freed by its last user, release rule
/// `after_start`. Every schedule of `s` maps to one of it with the same
/// period, so its optimum is at most the program's; the bound's proof uses
/// neither the release rule nor when a dead variable is released, so the
/// bound holds for it too.
fn milp_instance(s: &OpSequence) -> Instance {
    let mut inst = s.compile().unwrap();
    let u = s.uses().unwrap();
    for (v, sp) in u.span().iter().enumerate() {
        if let (Some((_, b)), false) = (sp, u.persistent[v]) {
            inst.ops[*b].frees.push(TensorId(v as u32));
        }
    }
    inst.family = "core".into();
    inst.release = ReleaseRule::AfterStart;
    inst
}

static MILP_COMPARED: AtomicUsize = AtomicUsize::new(0);

/// op-transfer-windows ≤ the MILP's proven optimum (checked) on random
/// programs of up to three functions and an update, full duplex.
#[test]
fn windows_at_most_the_milp_optimum() {
    fn prop(spec: Vec<(u8, u8, u8, bool)>, bw: u8, mem: u8) -> TestResult {
        if spec.len() < 2 {
            return TestResult::discard();
        }
        let s = random(&spec[..spec.len().min(3)], bw, mem % 4, false);
        let file = InstanceFile::OpSequence(s.clone());
        let inst = file.compile().unwrap();
        let bound = offcert::bound::op_sequence::windows::TransferWindows
            .bound(&file, &inst)
            .unwrap();
        let d = milp_instance(&s);
        let limits = Limits {
            time_limit: std::time::Duration::from_secs(5),
            ..Limits::default()
        };
        match exact::solve(Method::Milp, &d, &limits) {
            Ok(o) if o.status == Status::Optimal => {
                let sch = o.schedule.expect("an optimal schedule");
                let r = check(&d, &sch);
                assert!(r.valid, "MILP schedule rejected: {:?}", r.violations);
                assert!(
                    bound.ceil_ticks() <= r.makespan.0,
                    "windows {} above the MILP optimum {} on {s:?}",
                    bound.value,
                    r.makespan.0
                );
                MILP_COMPARED.fetch_add(1, Ordering::Relaxed);
                TestResult::passed()
            }
            Ok(_) => TestResult::discard(),
            Err(e) => TestResult::error(format!("MILP: {e}")),
        }
    }
    qc(12, 6)
        .max_tests(cases(60))
        .quickcheck(prop as fn(Vec<(u8, u8, u8, bool)>, u8, u8) -> TestResult);
    assert!(MILP_COMPARED.load(Ordering::Relaxed) >= 3);
}
