//! Exact optima of OFFMATE instances with CPU Adam steps (issue 24): the search
//! runs `optC.p` on a second compute stream (`proofs/SEARCH.md`, "CPU ops"),
//! the MILP encodes it (`proofs/EXACTNESS.md` §3.12), and the two agree.
//! On the tiny fixtures `instances/offmate/tiny/adam-*.json` and on random tiny
//! instances at tight and roomy memory: every schedule passes the checker on
//! the original (slotted) instance, every certified OFFMATE bound is at most
//! the optimum, every OFFMATE heuristic's checked period (Algorithm 1's
//! included) is at least it, a proof of infeasibility leaves no heuristic a
//! schedule, and more GPU memory never raises the optimum.

use crate::common;

use common::offmate_gen::{tiny_adam_instance, Draw};
use common::*;
use offcert::bound::{self, Strength};
use offcert::check::check;
use offcert::exact::crosscheck::{self, Label};
use offcert::exact::{self, Limits, Method, Outcome, Status};
use offcert::family::InstanceFile;
use offcert::heuristic;
use offcert::io::load_instance;
use offcert::model::{ComputeOrder, Device, Instance, OpId};
use offcert::schedule::Event;
use offcert::units::Bytes;
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn limits(secs: u64) -> Limits {
    Limits {
        time_limit: Duration::from_secs(secs),
        ..Limits::default()
    }
}

fn search(inst: &Instance, secs: u64) -> Outcome {
    exact::solve(Method::Search, inst, &limits(secs)).expect("in the search's scope")
}

/// The names of the CPU ops a schedule runs.
fn cpu_runs(inst: &Instance, events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Compute { op, .. } if inst.op(*op).device == Device::Cpu => {
                Some(inst.op(*op).name.clone())
            }
            _ => None,
        })
        .collect()
}

/// Every certified bound ≤ `opt` ≤ every heuristic's checked period (`None`:
/// proven infeasible, so no heuristic has a schedule). Returns how many
/// heuristics gave a schedule.
fn bounds_and_heuristics_around(file: &InstanceFile, inst: &Instance, opt: Option<i64>) -> usize {
    if let Some(p) = opt {
        for (name, b) in bound::evaluate(file, inst) {
            if let Ok(b) = b {
                if b.strength == Strength::Certified {
                    assert!(b.ceil_ticks() <= p, "{name} = {} above {p}", b.value);
                }
            }
        }
    }
    let mut found = 0;
    for h in heuristic::offmate::heuristics() {
        if let Ok(run) = heuristic::run(h.as_ref(), file, inst) {
            let ms = run.checked.report().makespan.0;
            match opt {
                Some(p) => assert!(ms >= p, "{}: {ms} below the optimum {p}", h.name()),
                None => panic!("{}: a valid schedule ({ms}) where none exists", h.name()),
            }
            found += 1;
        }
    }
    found
}

/// `inst` without its CPU ops (each `upd.p` then holds `optG.p` alone): its
/// schedules are those of `inst` whose Adam steps all run on the GPU.
fn without_cpu_ops(inst: &Instance) -> Instance {
    let mut i = inst.clone();
    let mut new_id = vec![None; inst.ops.len()];
    let mut kept = 0u32;
    for (k, o) in inst.ops.iter().enumerate() {
        if o.device == Device::Gpu {
            new_id[k] = Some(OpId(kept));
            kept += 1;
        }
    }
    let remap = |v: &[OpId]| -> Vec<OpId> { v.iter().filter_map(|o| new_id[o.ix()]).collect() };
    i.ops = inst
        .ops
        .iter()
        .filter(|o| o.device == Device::Gpu)
        .cloned()
        .collect();
    for o in &mut i.ops {
        o.after = remap(&o.after);
    }
    for g in &mut i.groups {
        g.members = remap(&g.members);
    }
    assert!(matches!(i.order, ComputeOrder::Slots(_)));
    i
}

/// The tiny fixtures with a CPU Adam step: the search and the MILP each prove
/// the optimum (4, 7, 11: `optimal (cross-checked)`), whose schedule runs a
/// CPU Adam step and passes the checker; the bounds and the heuristics lie on
/// either side; on adam-1x1 the CPU step beats every schedule whose Adam steps
/// all run on the GPU.
#[test]
fn tiny_offmate_fixtures_with_cpu_adam_get_exact_optima() {
    let mut n = 0;
    for (name, want) in [("adam-1x1", 4), ("adam-2x1", 7), ("adam-2x2", 11)] {
        let path = repo().join(format!("instances/offmate/tiny/{name}.json"));
        let (file, inst) = load_instance(&path).unwrap();
        let v = crosscheck::run(&inst, &[Method::Search, Method::Milp], &limits(60));
        assert_eq!(
            v.label,
            Label::OptimalCrossChecked,
            "{name}: {:?}",
            v.evidence
        );
        assert!(v.disagreements.is_empty(), "{name}: {:?}", v.disagreements);
        let p = v.makespan().unwrap().0;
        assert_eq!(p, want, "{name}");
        let sched = v.checked.as_ref().unwrap().schedule();
        assert!(check(&inst, sched).valid, "{name}");
        let cpu = cpu_runs(&inst, &sched.events);
        assert!(
            cpu.iter().any(|o| o.starts_with("optC.")),
            "{name}: {cpu:?}"
        );
        let found = bounds_and_heuristics_around(&file, &inst, Some(p));
        eprintln!("{name}: period {p}, CPU runs {cpu:?}, {found} heuristics");
        let gpu_only = search(&without_cpu_ops(&inst), 60);
        let q = match gpu_only.status {
            Status::Optimal => gpu_only.bound.unwrap().0,
            Status::Infeasible => i64::MAX,
            other => panic!("{name}: GPU Adam only: {other:?}"),
        };
        assert!(q >= p, "{name}: GPU Adam only {q} < {p}");
        eprintln!("{name}: GPU Adam only {q}");
        if name == "adam-1x1" {
            // GPU Adam: F + B + optG = 1 + 2 + 4 on one stream, but optG needs
            // x0, w1, m.w1 and grad.w1 (13 B of 13), and while B1 runs the GPU
            // holds x0, x1, s1.0, w1 and grad.w1 (11 B): m.w1 (4 B) comes back
            // only after B1 ends, one tick late: 8.
            assert_eq!(q, 8);
            assert!(p < q, "{p}");
        }
        n += 1;
    }
    assert_eq!(n, 3);
}

static OPTIMAL: AtomicUsize = AtomicUsize::new(0);
static WITH_CPU: AtomicUsize = AtomicUsize::new(0);
static INFEASIBLE: AtomicUsize = AtomicUsize::new(0);

fn prop(bytes: Vec<u8>, tight: bool) -> TestResult {
    let mut d = Draw::new(&bytes);
    let off = tiny_adam_instance(&mut d, tight);
    let file = InstanceFile::Offmate(off.clone());
    let inst = file.compile().unwrap();
    let o = search(&inst, 5);
    let opt = match o.status {
        Status::Optimal => o.bound.map(|b| b.0),
        Status::Infeasible => None,
        _ => return TestResult::discard(),
    };
    if let Some(s) = &o.schedule {
        assert!(check(&inst, s).valid, "{off:?}");
        if !cpu_runs(&inst, &s.events).is_empty() {
            WITH_CPU.fetch_add(1, Ordering::Relaxed);
        }
    }
    bounds_and_heuristics_around(&file, &inst, opt);
    match opt {
        Some(p) => {
            OPTIMAL.fetch_add(1, Ordering::Relaxed);
            // More memory never raises the optimum (the same schedules fit).
            let mut roomy = inst.clone();
            roomy.machine.gpu_capacity = Bytes(inst.machine.gpu_capacity.0 + 4);
            let r = search(&roomy, 5);
            if r.status == Status::Optimal {
                assert!(r.bound.unwrap().0 <= p, "{off:?}");
            }
        }
        None => {
            INFEASIBLE.fetch_add(1, Ordering::Relaxed);
        }
    }
    TestResult::passed()
}

/// Random tiny OFFMATE instances with CPU Adam steps (tight and roomy
/// memory): the search's schedule passes the checker, the bounds and the
/// heuristics lie on either side of its optimum, a proven infeasibility
/// leaves no heuristic a schedule, and 4 B more memory never raise the
/// optimum.
#[test]
fn the_search_with_cpu_adam_sits_between_bounds_and_heuristics() {
    qc(16, 8).quickcheck(prop as fn(Vec<u8>, bool) -> TestResult);
    let (o, c, i) = (
        OPTIMAL.load(Ordering::Relaxed),
        WITH_CPU.load(Ordering::Relaxed),
        INFEASIBLE.load(Ordering::Relaxed),
    );
    eprintln!("optimal {o} (with a CPU op {c}), infeasible {i}");
    assert!(o >= 4 && c >= 1, "optimal {o}, with a CPU op {c}");
}

static AGREED: AtomicUsize = AtomicUsize::new(0);
static AGREED_CPU: AtomicUsize = AtomicUsize::new(0);

/// A settled outcome: `Some(Some(p))` optimal p, `Some(None)` infeasible,
/// `None` not settled within the limit. A schedule passes the checker.
fn settled(inst: &Instance, m: Method, secs: u64) -> Option<Option<i64>> {
    let o = exact::solve(m, inst, &limits(secs)).expect("in the method's scope");
    if let Some(s) = &o.schedule {
        assert!(check(inst, s).valid, "{m:?}");
        if o.status == Status::Optimal && !cpu_runs(inst, &s.events).is_empty() {
            AGREED_CPU.fetch_add(1, Ordering::Relaxed);
        }
    }
    match o.status {
        Status::Optimal => Some(Some(o.bound.unwrap().0)),
        Status::Infeasible => Some(None),
        _ => None,
    }
}

fn agree(bytes: Vec<u8>, tight: bool) -> TestResult {
    let mut d = Draw::new(&bytes);
    let off = tiny_adam_instance(&mut d, tight);
    let inst = InstanceFile::Offmate(off.clone()).compile().unwrap();
    let Some(milp) = settled(&inst, Method::Milp, 3) else {
        return TestResult::discard();
    };
    let Some(search) = settled(&inst, Method::Search, 3) else {
        return TestResult::discard();
    };
    assert_eq!(milp, search, "MILP vs search on {off:?}");
    AGREED.fetch_add(1, Ordering::Relaxed);
    TestResult::passed()
}

/// Random tiny OFFMATE instances with CPU Adam steps (tight and roomy memory,
/// `tiny_adam_instance`): wherever both settle within 3 s, the MILP and the
/// search prove the same optimum or both prove infeasibility, and every
/// schedule of either passes the checker.
#[test]
fn the_milp_and_the_search_agree_with_cpu_adam() {
    qc(8, 4).quickcheck(agree as fn(Vec<u8>, bool) -> TestResult);
    let (a, c) = (
        AGREED.load(Ordering::Relaxed),
        AGREED_CPU.load(Ordering::Relaxed),
    );
    eprintln!("agreed {a}, optimal schedules with a CPU op {c}");
    assert!(a >= 4 && c >= 1, "agreed {a}, with a CPU op {c}");
}

/// Regression (issue 24): the search listed no boundary state where a
/// gradient the CPU reads is on the GPU at time 0 with its offload in flight,
/// and proved 6 on this instance; the MILP's 5 keeps it so. Both now prove 5.
#[test]
fn a_gradient_crossing_the_boundary_is_found_by_both_methods() {
    let path = repo().join("instances/regressions/search/cpu-input-across-boundary.json");
    let (_, inst) = load_instance(&path).unwrap();
    let v = crosscheck::run(&inst, &[Method::Search, Method::Milp], &limits(30));
    assert_eq!(v.label, Label::OptimalCrossChecked, "{:?}", v.evidence);
    assert_eq!(v.makespan().unwrap().0, 5);
    let o = search(&inst, 30);
    assert_eq!((o.status, o.bound.map(|b| b.0)), (Status::Optimal, Some(5)));
}
