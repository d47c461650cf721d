//! The SMT method (z3): optima on small instances of both families, every
//! schedule accepted by the checker, and certificates refuted by z3 and cvc5
//! (both required: `scripts/setup.sh` installs them; a missing one fails).

use offcert::exact::{self, smt, Limits, Method, Status};
use offcert::model::{Direction, Instance};
use offcert::schedule::Event;
use offcert::units::Ticks;

use crate::common;

use common::{act, qc, relaxed, require_solver, weights, RandomWeights};

/// Solve, assert the schedule passes the checker, return (status, makespan).
fn solve(inst: &Instance) -> (Status, Option<i64>) {
    let out = exact::solve(Method::Smt, inst, &Limits::default()).expect("smt runs");
    if let Some(s) = &out.schedule {
        let r = offcert::check::check(inst, s);
        assert!(r.valid, "checker rejects: {:?}\n{s:?}", r.violations);
        if out.status == Status::Optimal {
            assert_eq!(out.bound, Some(r.makespan));
        }
        return (out.status, Some(r.makespan.0));
    }
    (out.status, None)
}

#[test]
fn activation_chain_with_enough_memory_is_pure_compute() {
    // Everything fits: the optimum is the total compute time 2+2+2+3+3+3 = 15.
    let inst = act(&[(2, 3, 4), (2, 3, 4), (2, 3, 4)], 4, 100, 2);
    assert_eq!(solve(&inst), (Status::Optimal, Some(15)));
}

#[test]
fn activation_chain_chain3_example() {
    // instances/examples/chain3.json: M_peak = 16 > 12 forces an offload, but the
    // transfers (2 ticks each) hide behind compute: the optimum is the compute 15.
    let inst = act(&[(2, 3, 4), (2, 3, 4), (2, 3, 4)], 4, 12, 2);
    let out = exact::solve(Method::Smt, &inst, &Limits::default()).unwrap();
    assert_eq!(out.status, Status::Optimal);
    assert_eq!(out.bound, Some(Ticks(15)));
    let s = out.schedule.unwrap();
    assert!(offcert::check::check(&inst, &s).valid);
    assert!(s.events.iter().any(|e| matches!(
        e,
        Event::Transfer {
            dir: Direction::Offload,
            ..
        }
    )));
}

#[test]
fn activation_chain_slow_link_uses_an_early_delete() {
    // Same chain, β = 1 (4 ticks per transfer). Under the relaxation the compute
    // bound 15 is still reached, but only through its freedom to delete a dead
    // input while its last reader runs: offload x0 over [0,4), delete it at 4; B2
    // runs [6,9) with x1,x2,x3 (12 B); x3 is dead once B2 started and is deleted
    // at 7, which makes room for the prefetch of x0 over [8,12), in time for B0
    // at 12. Under the default rule B2 holds x3 until 9 (R10): the optimum is 16.
    let inst = act(&[(2, 3, 4), (2, 3, 4), (2, 3, 4)], 4, 12, 1);
    assert_eq!(solve(&relaxed(inst.clone())), (Status::Optimal, Some(15)));
    assert_eq!(solve(&inst), (Status::Optimal, Some(16)));
}

/// `instances/examples/chain3.json` with 8 B of GPU memory (issue 9): 19 under
/// the default rule, 15 under the relaxation (which deletes x3 while B2 runs).
#[test]
fn chain3_at_8_bytes_under_both_rules() {
    let inst = act(&[(2, 3, 4), (2, 3, 4), (2, 3, 4)], 4, 8, 2);
    assert_eq!(solve(&inst), (Status::Optimal, Some(19)));
    assert_eq!(solve(&relaxed(inst)), (Status::Optimal, Some(15)));
}

/// `instances/tiny/weight_discount_lowers.json`: 14 under the default rule
/// (B3 holds δ3 until it ends), 13 under the relaxation.
#[test]
fn weight_discount_lowers_under_both_rules() {
    let inst = weights(&[(1, 2, 2, 0), (1, 2, 2, 0), (1, 2, 1, 2)], 0, 4, 1);
    assert_eq!(solve(&inst), (Status::Optimal, Some(14)));
    assert_eq!(solve(&relaxed(inst)), (Status::Optimal, Some(13)));
}

#[test]
fn activation_chain_infeasible_memory() {
    // B_L needs x_0..x_{L+1} unless something is offloaded; with memory below
    // every op's own footprint nothing works: F_0 needs |x_0| + |x_1| = 8.
    let inst = act(&[(1, 1, 4), (1, 1, 4)], 4, 7, 1);
    assert_eq!(solve(&inst), (Status::Infeasible, None));
}

#[test]
fn weight_chain_with_enough_memory_is_pure_compute() {
    let inst = weights(&[(2, 3, 4, 1), (2, 3, 4, 1)], 1, 100, 1);
    assert_eq!(solve(&inst), (Status::Optimal, Some(10)));
}

#[test]
fn weight_chain_tight_memory_needs_transfers() {
    let inst = weights(&[(2, 3, 4, 1), (2, 3, 4, 1)], 1, 12, 2);
    let (st, ms) = solve(&inst);
    assert_eq!(st, Status::Optimal);
    assert!(ms.unwrap() >= 10);
}

/// The answer of the external solver `bin` on `file` (its first line of output).
/// A missing solver fails the test: the README's set-up installs both.
fn run_solver(bin: &str, file: &std::path::Path) -> String {
    let out = require_solver(bin).arg(file).output().expect("solver runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn certificates_agree(inst: &Instance, tag: &str) {
    let (st, ms) = solve(inst);
    assert_eq!(st, Status::Optimal);
    let t = ms.unwrap();
    let dir = std::env::temp_dir().join(format!("offcert-smt-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let below = dir.join("below.smt2");
    let at = dir.join("at.smt2");
    smt::write_refutation(inst, Ticks(t - 1), &below).unwrap();
    smt::write_refutation(inst, Ticks(t), &at).unwrap();
    let text = std::fs::read_to_string(&below).unwrap();
    assert!(!text.contains("Real"), "certificates are pure integer");
    for bin in ["z3", "cvc5"] {
        assert_eq!(run_solver(bin, &below), "unsat", "{bin} on T*-1");
        assert_eq!(run_solver(bin, &at), "sat", "{bin} on T*");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn certificates_are_refuted_by_z3_and_cvc5_activation() {
    certificates_agree(&act(&[(2, 3, 4), (2, 3, 4), (2, 3, 4)], 4, 12, 2), "act");
}

#[test]
fn certificates_are_refuted_by_z3_and_cvc5_weight() {
    certificates_agree(&weights(&[(2, 3, 4, 1), (2, 3, 4, 1)], 1, 12, 2), "wt");
}

#[test]
fn weight_chain_hand_derived_optimum() {
    // L = 2, |w1| = 2, |w2| = 4, |a| = 1, u_F = 2, u_B = 3, β = 1, M = 11.
    // Memory with every weight resident: F1 8, F2 9, B2 13, B1 10 (eq. (1) plus the
    // other weight). So w1 must be away at B2's start and during B2 (11 B in use
    // without it, no room for its prefetch even after deleting the dead δ2).
    // Its prefetch (2 ticks) starts at B2's end at the earliest, so B1 waits 2
    // ticks: P ≥ 2+2+3+3 + 2 = 12. P = 12 is reached: w1 is offloaded after B1
    // (2 ticks, during F1/F2 of the next period, the discount rule makes that
    // copy current), deleted before B2 and prefetched right after B2.
    let inst = weights(&[(2, 3, 2, 1), (2, 3, 4, 1)], 1, 11, 1);
    assert_eq!(solve(&inst), (Status::Optimal, Some(12)));
}

fn weights_monotone(w: RandomWeights) -> quickcheck::TestResult {
    let base = solve(&weights(&w.layers, w.a0, w.mem, w.beta));
    let more_mem = solve(&weights(&w.layers, w.a0, w.mem + 2, w.beta));
    let faster = solve(&weights(&w.layers, w.a0, w.mem, w.beta * 2));
    for (name, x) in [("more memory", more_mem), ("more bandwidth", faster)] {
        let worse = match (base, x) {
            ((Status::Optimal, Some(a)), (Status::Optimal, Some(b))) => b > a,
            ((Status::Optimal, _), (Status::Infeasible, _)) => true,
            ((Status::Infeasible, _), _) => false,
            _ => return quickcheck::TestResult::error(format!("unexpected {base:?} / {x:?}")),
        };
        if worse {
            return quickcheck::TestResult::error(format!(
                "{name} made {w:?} worse: {base:?} -> {x:?}"
            ));
        }
    }
    quickcheck::TestResult::passed()
}

#[test]
fn weight_chain_random_schedules_check_and_are_monotone() {
    qc(15, 15).quickcheck(weights_monotone as fn(RandomWeights) -> quickcheck::TestResult);
}

/// Cancelled before z3 finds anything, a one-shot solve still returns the
/// checked earliest-start schedule it started from (an interrupt returns the
/// best schedule found), labelled feasible and not optimal.
#[test]
fn cancelled_solve_returns_the_first_incumbent() {
    let inst = act(&[(2, 3, 4), (2, 3, 4), (2, 3, 4)], 4, 12, 1);
    let limits = Limits::default();
    limits
        .cancel
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let out = exact::solve(Method::Smt, &inst, &limits).unwrap();
    assert_eq!(out.status, Status::Feasible);
    let s = out.schedule.expect("the seed schedule");
    let r = offcert::check::check(&inst, &s);
    assert!(r.valid);
    // Not better than the optimum (15, tests above), and no bound claimed.
    assert!(r.makespan >= Ticks(15));
    assert_eq!(out.bound, None);
}
