//! Exact optima of `remat_chain` (issue 11 §3): on random chains of up to 4
//! layers the search and the MILP (each over the op sequences of
//! `proofs/REMAT-EXACT.md`) agree, every schedule they return is the checker's,
//! the optimum is at most every checked heuristic makespan (rotor, pofo,
//! offload-only), at least every certified bound (remat-compute,
//! remat-split), and more memory never makes it worse; with a fast forward
//! distinct from F_all (one option per block) the bounds and rotor still
//! bracket the optimum.

use crate::common;

use common::*;
use offcert::bound;
use offcert::exact::crosscheck::{self, Label, Verdict};
use offcert::exact::{Limits, Method, Status};
use offcert::family::remat_chain::RematChain;
use offcert::family::InstanceFile;
use offcert::heuristic::{self, HeuristicError};
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

type Spec = Vec<(u8, u8, u8, u8, u8)>;

/// A random chain of 1..=4 layers (`tight_remat_chain`).
fn chain(spec: &[(u8, u8, u8, u8, u8)], bw: u8, slack: u8) -> RematChain {
    tight_remat_chain(spec, 4, bw, slack)
}

fn solve(c: &RematChain, methods: &[Method]) -> Verdict {
    let inst = InstanceFile::RematChain(c.clone()).compile().unwrap();
    let limits = Limits {
        time_limit: Duration::from_secs(4),
        ..Limits::default()
    };
    crosscheck::run(&inst, methods, &limits)
}

/// Every method settled (optimal or infeasible).
fn settled(v: &Verdict) -> bool {
    v.methods
        .iter()
        .all(|m| matches!(m.status, Some(Status::Optimal | Status::Infeasible)))
}

static OPTIMAL: AtomicUsize = AtomicUsize::new(0);
static BEATS_HEURISTIC: AtomicUsize = AtomicUsize::new(0);
static ABOVE_COMPUTE: AtomicUsize = AtomicUsize::new(0);

fn agree_and_sandwich(spec: Spec, bw: u8, slack: u8) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let c = chain(&spec, bw, slack);
    let v = solve(&c, &[Method::Search, Method::Milp]);
    if !v.disagreements.is_empty() || v.methods.iter().any(|m| m.error.is_some()) {
        return TestResult::error(format!(
            "{}: {:?} {:?}",
            serde_json::to_string(&c).unwrap(),
            v.disagreements,
            v.methods.iter().map(|m| &m.error).collect::<Vec<_>>()
        ));
    }
    if !settled(&v) {
        return TestResult::discard();
    }
    let f = InstanceFile::RematChain(c.clone());
    let inst = f.compile().unwrap();
    let opt = match v.label {
        Label::BestWithinLimitsCrossChecked => v.makespan().unwrap().0,
        Label::Infeasible => i64::MAX,
        ref l => return TestResult::error(format!("label {l:?} with both methods settled")),
    };
    for h in heuristic::remat::heuristics() {
        match heuristic::run(h.as_ref(), &f, &inst) {
            Ok(run) => {
                let m = run.checked.report().makespan.0;
                if opt > m {
                    return TestResult::error(format!(
                        "{}: exact {opt} above {} {m}",
                        serde_json::to_string(&c).unwrap(),
                        run.name
                    ));
                }
                if opt < m {
                    BEATS_HEURISTIC.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(HeuristicError::NoSchedule { .. }) => {}
            Err(e) => return TestResult::error(e.to_string()),
        }
    }
    if opt == i64::MAX {
        return TestResult::passed();
    }
    OPTIMAL.fetch_add(1, Ordering::Relaxed);
    for b in bound::remat::bounds() {
        let lb = match b.bound(&f, &inst) {
            Ok(lb) => lb,
            // The relaxed search takes at most 14 tensors (3 plain layers).
            Err(bound::BoundError::Failed { .. }) if b.name() == "remat-relaxed-search" => continue,
            Err(e) => panic!("{e}"),
        };
        if lb.ceil_ticks() > opt {
            return TestResult::error(format!(
                "{}: bound {} above the optimum {opt}",
                serde_json::to_string(&c).unwrap(),
                lb.display()
            ));
        }
    }
    let compute: i64 = (1..=c.l() + 1)
        .map(|k| c.dims().u_f[k] + c.dims().u_b[k])
        .sum();
    if opt > compute {
        ABOVE_COMPUTE.fetch_add(1, Ordering::Relaxed);
    }
    TestResult::passed()
}

#[test]
fn exact_methods_agree_and_sit_between_bounds_and_heuristics() {
    qc(12, 6).quickcheck(agree_and_sandwich as fn(Spec, u8, u8) -> TestResult);
    eprintln!(
        "optimal {OPTIMAL:?}, above the compute sum {ABOVE_COMPUTE:?}, strictly below a heuristic {BEATS_HEURISTIC:?}"
    );
    // Not vacuous: optima are found, some above the compute sum (memory
    // binds).
    assert!(OPTIMAL.load(Ordering::Relaxed) >= 3, "{OPTIMAL:?}");
    assert!(
        ABOVE_COMPUTE.load(Ordering::Relaxed) >= 1,
        "{ABOVE_COMPUTE:?}"
    );
}

static MONOTONE: AtomicUsize = AtomicUsize::new(0);

fn more_memory_never_hurts(spec: Spec, bw: u8, slack: u8, extra: u8) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let c = chain(&spec, bw, slack);
    let mut d = c.clone();
    d.gpu_memory += 1 + (extra % 3) as u64;
    let (v1, v2) = (solve(&c, &[Method::Milp]), solve(&d, &[Method::Milp]));
    if !(settled(&v1) && settled(&v2)) {
        return TestResult::discard();
    }
    let ms = |v: &Verdict| v.makespan().map_or(i64::MAX, |m| m.0);
    if ms(&v2) > ms(&v1) {
        return TestResult::error(format!(
            "{}: {} B gives {}, {} B gives {}",
            serde_json::to_string(&c).unwrap(),
            c.gpu_memory,
            ms(&v1),
            d.gpu_memory,
            ms(&v2)
        ));
    }
    if ms(&v1) != i64::MAX {
        MONOTONE.fetch_add(1, Ordering::Relaxed);
    }
    TestResult::passed()
}

#[test]
fn more_memory_never_makes_the_optimum_worse() {
    qc(10, 5).quickcheck(more_memory_never_hurts as fn(Spec, u8, u8, u8) -> TestResult);
    assert!(MONOTONE.load(Ordering::Relaxed) >= 2, "{MONOTONE:?}");
}

static FF_OPTIMAL: AtomicUsize = AtomicUsize::new(0);
static FF_ROTOR: AtomicUsize = AtomicUsize::new(0);

/// A chain of 1..=3 layers as [`chain`], where every layer with u_F = 2 gets a
/// fast forward `F{ℓ}` of 1 tick (scratch 0 or 1 from `ff`'s bit ℓ): one option
/// per block, so the exact methods apply (variant groups they refuse).
fn fast_forward_between_bounds_and_rotor(spec: Spec, bw: u8, slack: u8, ff: u8) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let mut c = chain(&spec[..spec.len().min(3)], bw, slack);
    for (l, x) in c.layers.iter_mut().enumerate() {
        if x.u_f == 2 {
            x.ff_u_f = Some(1);
            x.ff_o_f = Some((ff >> l & 1) as u64);
        }
    }
    if c.layers.iter().all(|x| x.ff_u_f.is_none()) {
        return TestResult::discard();
    }
    let v = solve(&c, &[Method::Search, Method::Milp]);
    if !v.disagreements.is_empty() || !settled(&v) {
        return TestResult::discard();
    }
    let Some(opt) = v.makespan().map(|m| m.0) else {
        return TestResult::discard();
    };
    FF_OPTIMAL.fetch_add(1, Ordering::Relaxed);
    let f = InstanceFile::RematChain(c.clone());
    let inst = f.compile().unwrap();
    let json = serde_json::to_string(&c).unwrap();
    for b in bound::remat::bounds() {
        let lb = match b.bound(&f, &inst) {
            Ok(lb) => lb,
            // The relaxed search takes at most 14 tensors (3 plain layers).
            Err(bound::BoundError::Failed { .. }) if b.name() == "remat-relaxed-search" => continue,
            Err(e) => panic!("{e}"),
        };
        if lb.ceil_ticks() > opt {
            return TestResult::error(format!("{json}: {} above {opt}", lb.display()));
        }
    }
    match heuristic::run(&heuristic::remat::rotor::Rotor::default(), &f, &inst) {
        Ok(run) if run.checked.report().makespan.0 < opt => TestResult::error(format!(
            "{json}: rotor {} below the optimum {opt}",
            run.checked.report().makespan.0
        )),
        Ok(_) => {
            FF_ROTOR.fetch_add(1, Ordering::Relaxed);
            TestResult::passed()
        }
        Err(HeuristicError::NoSchedule { .. }) => TestResult::passed(),
        Err(e) => TestResult::error(format!("{json}: {e}")),
    }
}

/// `remat-compute` and `remat-split` (which now cover a fast forward distinct
/// from F_all) are at most the cross-checked optimum, and rotor (which now
/// runs that fast forward for its checkpointing runs) at least it.
#[test]
fn with_a_fast_forward_the_bounds_and_rotor_bracket_the_optimum() {
    qc(8, 3)
        .quickcheck(fast_forward_between_bounds_and_rotor as fn(Spec, u8, u8, u8) -> TestResult);
    eprintln!("optimal {FF_OPTIMAL:?}, rotor ran {FF_ROTOR:?}");
    assert!(FF_OPTIMAL.load(Ordering::Relaxed) >= 3, "{FF_OPTIMAL:?}");
    assert!(FF_ROTOR.load(Ordering::Relaxed) >= 1, "{FF_ROTOR:?}");
}

/// The MILP optimum of `c` with limit 4 of proofs/REMAT-EXACT.md kept
/// (`in_order`) or relaxed; `None` if not settled, `Some(i64::MAX)` if
/// infeasible.
fn milp_optimum(c: &RematChain, in_order: bool, secs: u64) -> Option<i64> {
    use offcert::exact::remat::sequences::SequenceLimits;
    let inst = InstanceFile::RematChain(c.clone()).compile().unwrap();
    let limits = Limits {
        time_limit: Duration::from_secs(secs),
        ..Limits::default()
    };
    let seq = SequenceLimits {
        forwards_in_order: in_order,
    };
    let o = offcert::exact::solve_within(Method::Milp, &inst, &limits, seq).unwrap();
    match o.status {
        Status::Optimal => Some(o.bound.unwrap().0),
        Status::Infeasible => Some(i64::MAX),
        _ => None,
    }
}

static LIMIT4_COMPARED: AtomicUsize = AtomicUsize::new(0);

/// Relaxing limit 4 (forwards in any order within a stretch, each layer at
/// most twice) enumerates a superset of sequences, so its optimum is never
/// higher; a lower one would be a chain where limit 4 loses the optimum
/// (reported with the chain).
fn limit4_relaxed_optimum(spec: Spec, bw: u8, slack: u8) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let c = chain(&spec[..spec.len().min(3)], bw, slack);
    let (Some(strict), Some(relaxed)) = (milp_optimum(&c, true, 4), milp_optimum(&c, false, 8))
    else {
        return TestResult::discard();
    };
    let json = serde_json::to_string(&c).unwrap();
    if relaxed > strict {
        return TestResult::error(format!("{json}: relaxed {relaxed} above strict {strict}"));
    }
    if relaxed < strict {
        // Limit 4 loses optima (issue 23, `remat/limit4.json`): the labels
        // say "best within sequence limits", never "optimal".
        eprintln!("{json}: limit 4 loses the optimum: relaxed {relaxed} < strict {strict}");
    }
    LIMIT4_COMPARED.fetch_add(1, Ordering::Relaxed);
    TestResult::passed()
}

/// CI scale: relaxing limit 4 never raises the best makespan (a superset of
/// sequences) on a few random 1–3-layer chains at tight memory; a lower one
/// is printed (limit 4 loses optima: issue 23, `remat/limit4.json`).
#[test]
fn relaxing_limit_4_never_raises_the_best() {
    qc(4, 2).quickcheck(limit4_relaxed_optimum as fn(Spec, u8, u8) -> TestResult);
    assert!(
        LIMIT4_COMPARED.load(Ordering::Relaxed) >= 2,
        "{LIMIT4_COMPARED:?}"
    );
}

/// The sweep behind proofs/REMAT-EXACT.md §5 (limit 4): `OFFCERT_LIMIT4_N`
/// (default 300) pseudo-random chains of 1–3 layers (a fixed LCG, so the run
/// is reproducible), memory from the least feasible up (mostly within 3 B);
/// prints the tally and every chain where the relaxed optimum is lower.
#[test]
#[ignore = "slow: minutes; run by hand for the evidence in proofs/REMAT-EXACT.md"]
fn limit_4_sweep() {
    let n: u64 = std::env::var("OFFCERT_LIMIT4_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) as u8
    };
    let (mut same, mut lower, mut unsettled, mut infeasible) = (0, 0, 0, 0);
    let mut by_len = [0usize; 4];
    for _ in 0..n {
        let len = 1 + (next() % 3) as usize;
        let spec: Spec = (0..len)
            .map(|_| (next(), next(), next(), next(), next()))
            .collect();
        let (bw, slack) = (next(), next());
        let c = chain(&spec, bw, slack);
        match (milp_optimum(&c, true, 10), milp_optimum(&c, false, 30)) {
            (Some(s), Some(r)) => {
                assert!(r <= s, "{}", serde_json::to_string(&c).unwrap());
                if s == i64::MAX {
                    infeasible += 1;
                } else if r < s {
                    lower += 1;
                    eprintln!(
                        "LOWER: relaxed {r} < strict {s}: {}",
                        serde_json::to_string(&c).unwrap()
                    );
                } else {
                    same += 1;
                    by_len[len] += 1;
                }
            }
            _ => unsettled += 1,
        }
    }
    eprintln!(
        "limit-4 sweep: {n} chains: {same} same optimum (by L: {:?}), {lower} lower relaxed, {infeasible} infeasible in both, {unsettled} not settled",
        &by_len[1..]
    );
}

/// Issue 23, Why 5 (`instances/regressions/remat/limit4.json`): with limit 4
/// kept the MILP finds 11; relaxing it (forwards 1, 2, 3, 2 before B3)
/// reaches the 10 of `limit4.better.valid.schedule.json`; the front door
/// relaxes it on a chain this short, and the cross-check labels 10 "best
/// within sequence limits", never optimal, with a bound below it.
#[test]
fn limit4_chain_is_best_within_limits_not_optimal() {
    let text =
        std::fs::read_to_string(repo().join("instances/regressions/remat/limit4.json")).unwrap();
    let (f, inst) = offcert::io::parse_instance("limit4.json", &text).unwrap();
    let InstanceFile::RematChain(c) = f else {
        panic!("a remat_chain")
    };
    assert_eq!(milp_optimum(&c, true, 20), Some(11));
    assert_eq!(milp_optimum(&c, false, 20), Some(10));
    let v = solve(&c, &[Method::Search, Method::Milp]);
    assert_eq!(v.label, Label::BestWithinLimitsCrossChecked, "{v:?}");
    assert!(!v.label.is_optimal());
    assert_eq!(v.makespan().map(|m| m.0), Some(10));
    assert!(v.bound.unwrap().0 < 10, "{v:?}");
    let s = offcert::io::load_schedule(
        &repo().join("instances/regressions/remat/limit4.better.valid.schedule.json"),
        &inst,
    )
    .unwrap();
    assert_eq!(offcert::check::check(&inst, &s).makespan.0, 10);
}

/// A fixed-order method that refutes every op sequence it is given (as a
/// method with its own structural limits may): the reduction then finds no
/// schedule within the sequence limits.
fn refutes_every_sequence(
    _: &offcert::model::Instance,
    _: &Limits,
) -> Result<offcert::exact::Outcome, offcert::exact::ExactError> {
    Ok(offcert::exact::Outcome {
        method: Method::Search,
        status: Status::Infeasible,
        schedule: None,
        bound: None,
        elapsed: Duration::ZERO,
        notes: vec![],
    })
}

fn through_remat_refuting(
    i: &offcert::model::Instance,
    l: &Limits,
) -> Result<offcert::exact::Outcome, offcert::exact::ExactError> {
    let seq = offcert::exact::remat::sequences::SequenceLimits::default_for(i);
    offcert::exact::remat::solve_with(i, l, (Method::Search, refutes_every_sequence, None), seq)
}

/// Issue 23, Deliver 3: a remat search that finds no schedule over its op
/// sequences proved nothing about the schedules outside them. On
/// `limit4.json` at its own 12 B (where `limit4.better.valid.schedule.json`
/// is valid), two methods that refute every sequence within the limits were
/// labelled `infeasible (cross-checked)`; the label is now `no schedule within
/// sequence limits (cross-checked)`, its evidence says so, and no method
/// "proves no schedule exists". Below an op's footprint (9 B: Fall2 needs
/// 11 B) the real methods still prove infeasibility over every schedule.
#[test]
fn an_empty_remat_search_is_no_schedule_within_limits_not_infeasible() {
    let text =
        std::fs::read_to_string(repo().join("instances/regressions/remat/limit4.json")).unwrap();
    let (f, inst) = offcert::io::parse_instance("limit4.json", &text).unwrap();
    let planted: [(Method, crosscheck::SolveFn); 2] = [
        (Method::Search, through_remat_refuting),
        (Method::Milp, through_remat_refuting),
    ];
    let v = crosscheck::run_with(&inst, &planted, &Limits::default());
    assert_eq!(v.label, Label::NoneWithinLimitsCrossChecked, "{v:?}");
    assert_eq!(
        v.label.words(),
        "no schedule within sequence limits (cross-checked)"
    );
    assert!(!v.label.is_infeasible() && !v.label.is_optimal());
    assert!(
        v.evidence
            .iter()
            .all(|e| !e.contains("proves no schedule exists")),
        "{:?}",
        v.evidence
    );
    let v1 = crosscheck::run_with(&inst, &planted[..1], &Limits::default());
    assert_eq!(v1.label, Label::NoneWithinLimitsSolverReported, "{v1:?}");
    // A schedule exists at 12 B: "infeasible" would have been false.
    let s = offcert::io::load_schedule(
        &repo().join("instances/regressions/remat/limit4.better.valid.schedule.json"),
        &inst,
    )
    .unwrap();
    assert!(offcert::check::check(&inst, &s).valid);
    // The footprint argument holds over every schedule: infeasible stays.
    let InstanceFile::RematChain(mut c) = f else {
        panic!("a remat_chain")
    };
    c.gpu_memory = 9;
    let v = solve(&c, &[Method::Search, Method::Milp]);
    assert_eq!(v.label, Label::Infeasible, "{v:?}");
}
