//! The anytime search (`exact::anytime`, proofs/ANYTIME.md) and local
//! improvement (`heuristic::improve`): run to the end, the anytime search
//! proves the exhaustive search's optimum (or infeasibility); stopped early,
//! its certified bound never exceeds that optimum and its schedule is checked;
//! local improvement returns only checked schedules, strictly better than its
//! input.

use crate::common;

use common::{activation_chain, activation_schedule, qc, TinyActivation, TinyWeight};
use offcert::check::{check, CheckOutcome};
use offcert::exact::anytime::{solve_anytime, AnytimeOptions, Stop};
use offcert::exact::{self, Limits, Method, Status};
use offcert::heuristic::improve::improve;
use offcert::model::Instance;
use quickcheck::TestResult;
use std::time::Duration;

/// The exhaustive search's answer: Some(optimum), None (infeasible), or
/// Err(()) when it does not decide.
fn optimum(inst: &Instance) -> Result<Option<i64>, ()> {
    let out = exact::solve(Method::Search, inst, &Limits::default()).map_err(|_| ())?;
    match out.status {
        Status::Optimal => Ok(out.bound.map(|b| b.0)),
        Status::Infeasible => Ok(None),
        _ => Err(()),
    }
}

fn agrees(inst: &Instance) -> TestResult {
    let Ok(opt) = optimum(inst) else {
        return TestResult::discard();
    };
    let out = solve_anytime(inst, &AnytimeOptions::default()).expect("in scope");
    match opt {
        Some(o) => {
            let best = out.best.as_ref().expect("a schedule");
            assert!(out.proven_optimal, "not proven: {out:?}");
            assert_eq!(best.makespan().0, o);
            assert_eq!(out.lower_bound.0, o);
            assert!(matches!(
                check(inst, best.schedule()),
                CheckOutcome::Valid(_)
            ));
        }
        None => {
            assert!(out.infeasible && out.best.is_none(), "{out:?}");
            assert_eq!(out.stop, Stop::Closed);
        }
    }
    TestResult::passed()
}

/// Run to the end, the anytime search proves the exhaustive search's optimum
/// on tiny activation chains (both release rules, tight memory drawn).
#[test]
fn run_to_the_end_it_proves_the_searchs_optimum() {
    qc(60, 40).quickcheck((|t: TinyActivation| agrees(&t.0)) as fn(TinyActivation) -> TestResult);
}

/// Same on tiny weight chains (cyclic: every boundary state is a root).
#[test]
fn run_to_the_end_it_proves_the_searchs_optimum_on_cycles() {
    qc(30, 15).quickcheck(
        (|t: TinyWeight| match t.instance() {
            Some(inst) => agrees(&inst),
            None => TestResult::discard(),
        }) as fn(TinyWeight) -> TestResult,
    );
}

/// Stopped after a few states, with or without an incumbent, the certified
/// bound is at most the optimum and the best schedule at least it.
#[test]
fn stopped_early_the_bound_stays_below_the_optimum() {
    fn prop(t: TinyActivation, states: u8, mask: u8) -> TestResult {
        let inst = &t.0;
        let Ok(Some(opt)) = optimum(inst) else {
            return TestResult::discard();
        };
        let opts = AnytimeOptions {
            max_states: 1 + u64::from(states % 40),
            mask_budget: 1 + usize::from(mask % 4),
            max_open: 2 + usize::from(mask / 4 % 30),
            ..AnytimeOptions::default()
        };
        let out = solve_anytime(inst, &opts).expect("in scope");
        assert!(
            out.lower_bound.0 <= opt,
            "bound {} > optimum {opt}",
            out.lower_bound
        );
        if let Some(b) = &out.best {
            assert!(b.makespan().0 >= opt);
            assert!(matches!(check(inst, b.schedule()), CheckOutcome::Valid(_)));
        }
        if out.proven_optimal {
            assert_eq!(out.best.as_ref().map(|b| b.makespan().0), Some(opt));
        }
        TestResult::passed()
    }
    qc(80, 40).quickcheck(prop as fn(TinyActivation, u8, u8) -> TestResult);
}

/// A heuristic incumbent (an ASAP plan, checked) and a known bound below the
/// optimum: the search still proves the optimum; a known bound equal to the
/// incumbent ends it at once.
#[test]
fn an_incumbent_and_a_known_bound_are_used() {
    fn prop(spec: Vec<(u8, u8, u8, u8)>, bw: u8, slack: u8, mask: u16) -> TestResult {
        if spec.is_empty() {
            return TestResult::discard();
        }
        let c = activation_chain(&spec[..spec.len().min(3)], bw, slack);
        let Some((inst, s)) = activation_schedule(&c, mask, 0) else {
            return TestResult::discard();
        };
        let CheckOutcome::Valid(inc) = check(&inst, &s) else {
            panic!("the simulator's schedule is rejected");
        };
        let Ok(Some(opt)) = optimum(&inst) else {
            return TestResult::discard();
        };
        let out = solve_anytime(
            &inst,
            &AnytimeOptions {
                incumbent: Some(inc.clone()),
                known_bound: Some(offcert::units::Ticks(opt / 2)),
                ..AnytimeOptions::default()
            },
        )
        .expect("in scope");
        assert!(out.proven_optimal);
        assert_eq!(out.best.as_ref().map(|b| b.makespan().0), Some(opt));
        let at_once = solve_anytime(
            &inst,
            &AnytimeOptions {
                incumbent: Some(inc.clone()),
                known_bound: Some(inc.makespan()),
                ..AnytimeOptions::default()
            },
        )
        .expect("in scope");
        assert!(at_once.proven_optimal && at_once.states == 0);
        TestResult::passed()
    }
    qc(40, 20).quickcheck(prop as fn(Vec<(u8, u8, u8, u8)>, u8, u8, u16) -> TestResult);
}

/// An interrupt set before the start returns at once with what it has.
#[test]
fn an_interrupt_returns_what_it_has() {
    let inst = common::act(&[(2, 3, 4), (2, 3, 4), (2, 3, 4)], 4, 8, 2);
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let out = solve_anytime(
        &inst,
        &AnytimeOptions {
            interrupt: Some(flag),
            ..AnytimeOptions::default()
        },
    )
    .unwrap();
    assert_eq!(out.stop, Stop::Interrupted);
    assert_eq!(out.states, 0);
    assert!(out.lower_bound.0 <= 19, "chain3 at 8 B: optimum 19");
    let full = solve_anytime(&inst, &AnytimeOptions::default()).unwrap();
    assert!(full.proven_optimal);
    assert_eq!(full.best.unwrap().makespan().0, 19);
}

/// Local improvement: every schedule it returns passes the checker and is
/// strictly better than its input (tight memory drawn: slack 0..=9 bytes
/// below the peak).
#[test]
fn improved_schedules_are_checked_and_never_worse() {
    fn prop(spec: Vec<(u8, u8, u8, u8)>, bw: u8, slack: u8, mask: u16, la: u8) -> TestResult {
        if spec.is_empty() {
            return TestResult::discard();
        }
        let c = activation_chain(&spec, bw, slack);
        let Some((inst, s)) = activation_schedule(&c, mask, la) else {
            return TestResult::discard();
        };
        let CheckOutcome::Valid(start) = check(&inst, &s) else {
            panic!("the simulator's schedule is rejected");
        };
        if let Some(better) = improve(&inst, &start, Duration::from_secs(5)) {
            assert!(matches!(
                check(&inst, better.schedule()),
                CheckOutcome::Valid(_)
            ));
            assert!(better.makespan() < start.makespan());
        }
        TestResult::passed()
    }
    qc(80, 40).quickcheck(prop as fn(Vec<(u8, u8, u8, u8)>, u8, u8, u16, u8) -> TestResult);
}
