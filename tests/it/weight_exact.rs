//! bound ≤ optimum ≤ heuristic on small weight chains: the §6 bounds against the
//! exact optimum (the MILP and SMT methods of `crate::exact`, their schedules
//! checked), and the optimum against every weight heuristic's checked period.

use num_bigint::BigInt;
use num_rational::BigRational;
use offcert::bound::weight::{Sec6Certified, Sec6Milp};
use offcert::check::check;
use offcert::exact::{self, Limits, Method, Status};
use offcert::family::InstanceFile;
use offcert::heuristic::{run, weight, HeuristicError};
use offcert::model::Instance;
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common;

use common::{cases, qc, RoomyWeight, TightWeight};

static SOLVED: AtomicUsize = AtomicUsize::new(0);

/// The exact optimum, if a method proves it within its limit (schedule checked).
fn optimum(inst: &Instance) -> Option<i64> {
    let limits = Limits {
        time_limit: Duration::from_secs(20),
        ..Default::default()
    };
    for method in [Method::Milp, Method::Smt] {
        let Ok(out) = exact::solve(method, inst, &limits) else {
            continue;
        };
        if out.status != Status::Optimal {
            continue;
        }
        let s = out.schedule.expect("an optimal outcome has a schedule");
        let r = check(inst, &s);
        assert!(r.valid, "exact schedule rejected: {:?}", r.violations);
        return Some(r.makespan.0);
    }
    None
}

fn bound_optimum_heuristic(t: RoomyWeight) -> TestResult {
    let c = t.0;
    let file = InstanceFile::WeightChain(c.clone());
    let inst = file.compile().unwrap();
    let Some(opt) = optimum(&inst) else {
        return TestResult::discard();
    };
    SOLVED.fetch_add(1, Ordering::SeqCst);
    let opt_r = BigRational::from_integer(BigInt::from(opt));
    let cert = Sec6Certified::default().compute(&c).unwrap();
    let mip = Sec6Milp::default().compute(&c).unwrap();
    assert!(
        cert.value <= opt_r,
        "certified {} > optimum {opt} on {c:?}",
        cert.display()
    );
    assert!(
        mip.value <= opt_r,
        "milp-sec6 {} > optimum {opt} on {c:?}",
        mip.display()
    );
    for h in weight::heuristics() {
        let p = run(h.as_ref(), &file, &inst)
            .unwrap()
            .checked
            .report()
            .makespan
            .0;
        assert!(opt <= p, "{} period {p} < optimum {opt} on {c:?}", h.name());
    }
    TestResult::passed()
}

#[test]
fn bounds_below_optimum_below_heuristics() {
    qc(12, 6)
        .max_tests(cases(40))
        .quickcheck(bound_optimum_heuristic as fn(RoomyWeight) -> TestResult);
    assert!(
        SOLVED.load(Ordering::SeqCst) >= 6,
        "too few instances solved exactly"
    );
}

static TIGHT_SOLVED: AtomicUsize = AtomicUsize::new(0);

/// Every registered bound ≤ the optimum ≤ every weight heuristic's checked
/// period, with the optimum proved by the exhaustive search (no solver) under
/// the instance's release rule, on tight memory. Fails if too few cases pass
/// (every one discarded included).
fn bound_search_optimum_heuristic(t: TightWeight) -> TestResult {
    let c = t.0;
    let file = InstanceFile::WeightChain(c.clone());
    let inst = file.compile().unwrap();
    let limits = Limits {
        time_limit: Duration::from_secs(20),
        ..Default::default()
    };
    let out = offcert::exact::solve(offcert::exact::Method::Search, &inst, &limits).unwrap();
    let opt = match out.status {
        Status::Optimal => {
            let r = check(&inst, out.schedule.as_ref().unwrap());
            assert!(r.valid, "search schedule rejected: {:?}", r.violations);
            r.makespan.0
        }
        // An infeasible instance: no heuristic may produce a schedule.
        Status::Infeasible => {
            for h in weight::heuristics() {
                match run(h.as_ref(), &file, &inst) {
                    Ok(run) => {
                        return TestResult::error(format!(
                            "{} found period {} on an instance the search proves infeasible: {c:?}",
                            h.name(),
                            run.checked.report().makespan
                        ))
                    }
                    Err(HeuristicError::NoSchedule { .. }) => {}
                    Err(e) => return TestResult::error(format!("{e} on {c:?}")),
                }
            }
            return TestResult::passed();
        }
        _ => return TestResult::discard(),
    };
    TIGHT_SOLVED.fetch_add(1, Ordering::SeqCst);
    let opt_r = BigRational::from_integer(BigInt::from(opt));
    for (name, b) in offcert::bound::evaluate(&file, &inst) {
        if let Ok(b) = b {
            if b.value > opt_r {
                return TestResult::error(format!(
                    "{}: bound {name} = {} > optimum {opt} on {c:?}",
                    c.release,
                    b.display()
                ));
            }
        }
    }
    for h in weight::heuristics() {
        match run(h.as_ref(), &file, &inst) {
            Ok(run) if run.checked.report().makespan.0 < opt => {
                return TestResult::error(format!(
                    "{}: {} period {} < optimum {opt} on {c:?}",
                    c.release,
                    h.name(),
                    run.checked.report().makespan.0
                ))
            }
            Ok(_) | Err(HeuristicError::NoSchedule { .. }) => {}
            Err(e) => return TestResult::error(format!("{}: {e} on {c:?}", c.release)),
        }
    }
    TestResult::passed()
}

#[test]
fn bounds_below_search_optimum_below_heuristics_on_tight_memory() {
    qc(30, 30).quickcheck(bound_search_optimum_heuristic as fn(TightWeight) -> TestResult);
    eprintln!(
        "tight weight chains solved: {}",
        TIGHT_SOLVED.load(Ordering::SeqCst)
    );
}

static TURN_SOLVED: AtomicUsize = AtomicUsize::new(0);
static TURN_ABOVE_SUM: AtomicUsize = AtomicUsize::new(0);

/// The turnaround bound (`proofs/WEIGHT-BOUND.md` §6) ≤ the optimum proved by
/// the exhaustive search, under the instance's release rule, on tight memory.
/// Cases the search does not solve (or proves infeasible) are discarded. With
/// `slow`, the link is 1 B per 3 ticks and the memory the least any op needs
/// (transfers longer than the ops and little room: where the bound's link term
/// binds).
fn turnaround_search_optimum(t: TightWeight, slow: bool) -> TestResult {
    use offcert::bound::BoundMethod;
    let mut c = t.0;
    if slow {
        c.bandwidth = offcert::family::BandwidthFile::Ratio { bytes: 1, ticks: 3 };
        c.gpu_memory = (1..=c.l())
            .map(|i| c.mb(i).unwrap().max(c.mf(i).unwrap()))
            .max()
            .unwrap();
    }
    let file = InstanceFile::WeightChain(c.clone());
    let inst = file.compile().unwrap();
    let limits = Limits {
        time_limit: Duration::from_secs(20),
        ..Default::default()
    };
    let out = offcert::exact::solve(offcert::exact::Method::Search, &inst, &limits).unwrap();
    if out.status != Status::Optimal {
        return TestResult::discard();
    }
    let r = check(&inst, out.schedule.as_ref().unwrap());
    assert!(r.valid, "search schedule rejected: {:?}", r.violations);
    let opt = r.makespan.0;
    let b = offcert::bound::weight::turnaround::Turnaround
        .bound(&file, &inst)
        .unwrap();
    let t = b.ceil_ticks();
    TURN_SOLVED.fetch_add(1, Ordering::SeqCst);
    let sum_u: i64 = c.layers.iter().map(|x| x.u_f + x.u_b).sum();
    if t > sum_u {
        TURN_ABOVE_SUM.fetch_add(1, Ordering::SeqCst);
    }
    if t > opt {
        return TestResult::error(format!(
            "{}: turnaround {t} > optimum {opt} on {c:?}",
            c.release
        ));
    }
    TestResult::passed()
}

/// Fails if fewer than 60 cases were solved, or if the bound never rose above
/// the compute sum Σu (the property would then say nothing about its link term).
#[test]
fn turnaround_is_at_most_the_search_optimum() {
    qc(100, 60).quickcheck(turnaround_search_optimum as fn(TightWeight, bool) -> TestResult);
    let above = TURN_ABOVE_SUM.load(Ordering::SeqCst);
    eprintln!(
        "turnaround: {} solved, {above} above Σu",
        TURN_SOLVED.load(Ordering::SeqCst)
    );
    assert!(above >= 10, "the link term bound only {above} cases");
}
