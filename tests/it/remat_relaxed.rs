//! `remat-knapsack-every` and `remat-relaxed-search` (`proofs/REMAT-BOUNDS.md`):
//! their hand checks, the issue's limit-4 chain, the bundled `remat2` (the
//! search's value meets the best schedule at every budget), and on random
//! tight chains of 1–3 layers (one option per block) and of 1–2 blocks with
//! several options, each at most every checked schedule we can find: every
//! remat heuristic's, the re-planned one, and the exact methods' best within
//! their sequence limits (a checked schedule, so at least the optimum).

use crate::common;

use common::*;
use num_bigint::BigInt;
use num_rational::BigRational;
use offcert::bound::remat::knapsack::{knapsack_bound, knapsack_every_bound};
use offcert::bound::remat::relaxed::{relaxed_optimum, Outcome};
use offcert::bound::remat::{compute_bound, RematCompute};
use offcert::bound::BoundMethod;
use offcert::exact::crosscheck;
use offcert::exact::{Limits, Method};
use offcert::family::remat_chain::RematChain;
use offcert::family::InstanceFile;
use offcert::heuristic;
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};

fn q(n: i64) -> BigRational {
    BigRational::from_integer(BigInt::from(n))
}

fn parse(json: &str) -> (InstanceFile, offcert::model::Instance, RematChain) {
    let (f, inst) = offcert::io::parse_instance("hand.json", json).unwrap();
    let InstanceFile::RematChain(c) = &f else {
        panic!("not a remat chain")
    };
    let c = c.clone();
    (f, inst, c)
}

fn relaxed(inst: &offcert::model::Instance) -> i64 {
    match relaxed_optimum(inst).unwrap() {
        Outcome::Optimum(t) => t,
        other => panic!("{other:?}"),
    }
}

/// One layer (u 1/1, |a_1| 1, |ā_1| 2), the loss (u 1/1, ā 3 B), |a_0| 2,
/// 1 B/tick, 7 B (B_1's footprint d1 + a1 + s1 + a0 + d0 = 1+1+1+2+2).
/// Compute 4, and every knapsack says 4 (at B_2: K = {a0, s1} 3 B, the
/// footprint a1 + s2 + d1 = 5 B, V = 1 B: 1 tick each way, hidden by
/// compute). By hand the optimum is 5: a 4-tick schedule runs Fall1, Fall2,
/// B2, B1 back to back at 0, 1, 2, 3; a0 cannot leave (2 ticks out before 2
/// and 2 back after 2 end after 3), so at 2 the GPU holds a0 + B2's 5 B = 7:
/// s1 is not there, no forward runs again, and its prefetch cannot start at
/// 2 (8 B) and would end after 3 if it started later. The schedule of 5
/// (offload s1 during Fall2, prefetch it after B2) is checked valid.
#[test]
fn relaxed_search_hand_check() {
    let (f, inst, c) = parse(
        r#"{"family": "remat_chain", "name": "hand-prefetch",
        "layers": [{"u_f": 1, "u_b": 1, "a": 1, "abar": 2}],
        "loss": {"u_f": 1, "u_b": 1, "abar": 3}, "a0": 2, "gpu_memory": 7, "bandwidth": 1}"#,
    );
    assert_eq!(c.min_memory(), Some(7));
    assert_eq!(compute_bound(&c), 4);
    assert_eq!(knapsack_bound(&c), q(4));
    assert_eq!(knapsack_every_bound(&c), q(4));
    assert_eq!(relaxed(&inst), 5);
    let s = offcert::io::parse_schedule(
        "five.json",
        r#"{"events": [
        {"type": "compute", "op": "Fall1", "start": 0},
        {"type": "offload", "tensor": "s1", "start": 1, "end": 2, "delete": true},
        {"type": "compute", "op": "Fall2", "start": 1},
        {"type": "compute", "op": "B2", "start": 2},
        {"type": "prefetch", "tensor": "s1", "start": 3, "end": 4},
        {"type": "compute", "op": "B1", "start": 4}]}"#,
        &inst,
    )
    .unwrap();
    let r = offcert::check::check(&inst, &s);
    assert!(r.valid, "{:?}", r.violations);
    assert_eq!(r.makespan.0, 5);
    let b = offcert::bound::remat::relaxed::RematRelaxedSearch
        .bound(&f, &inst)
        .unwrap();
    assert_eq!(b.ceil_ticks(), 5);
}

/// Two layers (u 1/1 each; |a| 1, 1; |ā| 3, 1; |δ| 4, 4), the loss (u 1/1,
/// ā 0), |a_0| 1, 1 B/tick, 10 B (B_2's footprint d2 + a2 + s2 + a1 + d1 =
/// 4+1+0+1+4). At the loss's backward K = {a0, a1, s1, s2} is 4 B and the
/// footprint a2 + s3 + d2 5 B: nothing must leave, `remat-knapsack` = the
/// compute 6. At B_2: K_2 = {a0, s1} 3 B, footprint 10 B, V = 3 B; before
/// it the three forwards and B_3 (4 ticks), after it B_2, B_1 (2 ticks).
/// g(0) = max(4, 3) + max(2, 3) = 7; recomputing layer 1 (1 tick, frees s1,
/// 2 B) leaves X = 1: max(4, 1) + max(2 + 1, 1) = 7, and g grows beyond. So
/// `remat-knapsack-every` = 7.
#[test]
fn knapsack_every_hand_check() {
    let (f, inst, c) = parse(
        r#"{"family": "remat_chain", "name": "hand-middle",
        "layers": [{"u_f": 1, "u_b": 1, "a": 1, "abar": 3, "delta": 4},
                   {"u_f": 1, "u_b": 1, "a": 1, "abar": 1, "delta": 4}],
        "loss": {"u_f": 1, "u_b": 1, "abar": 0}, "a0": 1, "gpu_memory": 10, "bandwidth": 1}"#,
    );
    assert_eq!(c.min_memory(), Some(10));
    assert_eq!(knapsack_bound(&c), q(6));
    assert_eq!(knapsack_every_bound(&c), q(7));
    let b = offcert::bound::remat::knapsack::RematKnapsackEvery
        .bound(&f, &inst)
        .unwrap();
    assert_eq!(b.ceil_ticks(), 7);
    // The relaxed search is at least as strong here, and below every
    // heuristic's checked schedule.
    let r = relaxed(&inst);
    assert!(r >= 7, "{r}");
    for h in heuristic::remat::heuristics() {
        if let Ok(run) = heuristic::run(h.as_ref(), &f, &inst) {
            assert!(run.checked.report().makespan.0 >= r, "{}", h.name());
        }
    }
}

/// The issue's chain where limit 4 loses the optimum: the relaxed search
/// (no sequence limits) gives exactly the makespan of the valid schedule
/// that runs the forwards in the layer order 1, 2, 3, 2.
#[test]
fn limit4_chain_relaxed_search_meets_the_better_schedule() {
    let dir = repo().join("instances/regressions/remat");
    let text = std::fs::read_to_string(dir.join("limit4.json")).unwrap();
    let (_, inst) = offcert::io::parse_instance("limit4.json", &text).unwrap();
    let s =
        offcert::io::load_schedule(&dir.join("limit4.better.valid.schedule.json"), &inst).unwrap();
    let r = offcert::check::check(&inst, &s);
    assert!(r.valid, "{:?}", r.violations);
    assert_eq!(relaxed(&inst), r.makespan.0);
}

/// remat2 at every byte budget from the least (14 B) to the peak (17 B): the
/// relaxed search meets the exact methods' best checked schedule, which
/// makes each budget `optimal (certified)`.
#[test]
fn remat2_relaxed_search_meets_the_best_schedule_at_every_budget() {
    let text = std::fs::read_to_string(repo().join("instances/remat/remat2.json")).unwrap();
    let (_, _, c) = parse(&text);
    for m in c.min_memory().unwrap()..=c.store_all_peak().unwrap() {
        let mut c = c.clone();
        c.gpu_memory = m;
        let inst = InstanceFile::RematChain(c).compile().unwrap();
        let v = crosscheck::run(&inst, &[Method::Search], &Limits::default());
        let best = v.makespan().expect("a schedule").0;
        assert_eq!(relaxed(&inst), best, "{m} B");
    }
}

type Spec = Vec<(u8, u8, u8, u8, u8)>;

static COMPARED: AtomicUsize = AtomicUsize::new(0);
static CLOSED: AtomicUsize = AtomicUsize::new(0);
static ABOVE_KNAPSACK: AtomicUsize = AtomicUsize::new(0);
static EVERY_ABOVE: AtomicUsize = AtomicUsize::new(0);

/// Both new bounds against every checked makespan; `remat-knapsack-every`
/// at least `remat-knapsack`, the relaxed search at least `remat-compute`.
fn bounds_below_checked(c: &RematChain, exact: bool) -> TestResult {
    let json = serde_json::to_string(c).unwrap();
    let f = InstanceFile::RematChain(c.clone());
    let inst = f.compile().unwrap();
    let (kb, every) = (knapsack_bound(c), knapsack_every_bound(c));
    if every < kb {
        return TestResult::error(format!("{json}: every {every} below knapsack {kb}"));
    }
    let rs = match relaxed_optimum(&inst) {
        Ok(Outcome::Optimum(t)) | Ok(Outcome::AtLeast(t)) => t,
        Ok(Outcome::Infeasible) => i64::MAX,
        Err(e) => return TestResult::error(format!("{json}: {e}")),
    };
    let compute = RematCompute.bound(&f, &inst).unwrap().ceil_ticks();
    if rs < compute {
        return TestResult::error(format!("{json}: relaxed {rs} below the compute {compute}"));
    }
    let methods: &[Method] = if exact { &[Method::Search] } else { &[] };
    let Some(best) = remat_best_checked(c, methods, 100) else {
        return TestResult::discard();
    };
    if every > q(best) || rs > best {
        return TestResult::error(format!(
            "{json}: knapsack-every {every} or relaxed {rs} above the valid makespan {best}"
        ));
    }
    COMPARED.fetch_add(1, Ordering::Relaxed);
    CLOSED.fetch_add((rs == best) as usize, Ordering::Relaxed);
    ABOVE_KNAPSACK.fetch_add((q(rs) > every) as usize, Ordering::Relaxed);
    EVERY_ABOVE.fetch_add((every > kb) as usize, Ordering::Relaxed);
    TestResult::passed()
}

fn one_option(spec: Spec, bw: u8, slack: u8) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let c = tight_remat_chain(&spec, 3, bw, slack);
    bounds_below_checked(&c, c.l() <= 2)
}

#[test]
fn new_bounds_are_at_most_every_checked_makespan() {
    qc(40, 20).quickcheck(one_option as fn(Spec, u8, u8) -> TestResult);
    eprintln!(
        "remat-relaxed: {} chains compared, relaxed search = best schedule on {}, \
         above remat-knapsack-every on {}; knapsack-every above knapsack on {}",
        COMPARED.load(Ordering::Relaxed),
        CLOSED.load(Ordering::Relaxed),
        ABOVE_KNAPSACK.load(Ordering::Relaxed),
        EVERY_ABOVE.load(Ordering::Relaxed)
    );
}

type OptSpec = Vec<(u8, u8, u8, u8, u8, u8)>;

/// 1–2 blocks with up to 3 options each and sometimes a fast forward
/// (`remat_options_chain`): the bounds against rotor and the search.
fn several_options(spec: OptSpec, extra: Vec<(u8, u8, u8, u8)>, bw: u8, slack: u8) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let spec: OptSpec = spec.into_iter().take(2).collect();
    let c = remat_options_chain(&spec, &extra, bw, slack);
    bounds_below_checked(&c, true)
}

#[test]
fn new_bounds_with_several_options_are_at_most_every_checked_makespan() {
    qc(20, 8)
        .quickcheck(several_options as fn(OptSpec, Vec<(u8, u8, u8, u8)>, u8, u8) -> TestResult);
}
