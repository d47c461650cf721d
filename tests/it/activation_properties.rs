//! Properties of the activation bounds and heuristics on random small chains:
//! every bound is ≤ every heuristic's checked makespan, every heuristic schedule
//! passes the checker (enforced by `heuristic::run`), the fractional optimum is
//! at least Prop. 3's compute term and at most GREEDY's makespan.

use num_rational::BigRational;
use offcert::bound::activation::{fractional_optimum, prop3};
use offcert::bound::{self, BoundError};
use offcert::family::InstanceFile;
use offcert::heuristic::activation::{DynProg, OffloadEverything};
use offcert::heuristic::{self, HeuristicError};
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common;

use common::{activation_chain_5, cases, qc};

static COMPARED: AtomicUsize = AtomicUsize::new(0);
static TIGHT_FRACTIONAL: AtomicUsize = AtomicUsize::new(0);

#[test]
fn bounds_never_exceed_a_checked_heuristic_makespan() {
    fn prop(spec: Vec<(u8, u8, u8, u8, u8)>, mem: u8, bw: u8) -> TestResult {
        if spec.is_empty() || spec.len() > 10 {
            return TestResult::discard();
        }
        let c = activation_chain_5(&spec, mem, bw);
        let file = InstanceFile::ActivationChain(c.clone());
        let inst = file.compile().unwrap();
        let p3 = prop3(&c);
        let frac = match fractional_optimum(&c) {
            Ok(v) => v,
            Err(e) => return TestResult::error(format!("{e} on {c:?}")),
        };
        // The fractional optimum is a schedule of the relaxation: at least the
        // compute sum and at least Prop. 3 (which bounds the relaxation too).
        if frac < p3 {
            return TestResult::error(format!("fractional {frac} < prop3 {p3} on {c:?}"));
        }
        let bounds: Vec<_> = bound::evaluate(&file, &inst)
            .into_iter()
            .map(|(n, r)| (n, r.unwrap()))
            .collect();
        let mut best_heur: Option<i64> = None;
        for h in heuristic::all().iter().filter(|h| h.applies(&file)) {
            match heuristic::run(h.as_ref(), &file, &inst) {
                Ok(run) => {
                    let m = run.checked.report().makespan.0;
                    best_heur = Some(best_heur.map_or(m, |b| b.min(m)));
                    for (name, b) in &bounds {
                        if b.value > BigRational::from_integer(m.into()) {
                            return TestResult::error(format!(
                                "bound {name} = {} exceeds {}'s checked makespan {m} on {c:?}",
                                b.value, run.name
                            ));
                        }
                    }
                    COMPARED.fetch_add(1, Ordering::Relaxed);
                }
                Err(HeuristicError::NoSchedule { .. }) => {}
                Err(e) => return TestResult::error(format!("{e} on {c:?}")),
            }
        }
        if let Some(m) = best_heur {
            if frac == BigRational::from_integer(m.into()) {
                TIGHT_FRACTIONAL.fetch_add(1, Ordering::Relaxed);
            }
        }
        TestResult::passed()
    }
    // Most draws are discarded (a spec of 1..=10 layers is one in ten).
    qc(250, 100)
        .max_tests(cases(2000))
        .quickcheck(prop as fn(_, _, _) -> TestResult);
    assert!(COMPARED.load(Ordering::Relaxed) >= 500);
}

#[test]
fn below_the_least_feasible_memory_every_bound_says_infeasible() {
    let c = activation_chain_5(&[(2, 3, 4, 1, 2), (1, 2, 7, 0, 5), (3, 1, 9, 2, 1)], 0, 3);
    let mut c2 = c.clone();
    c2.gpu_memory -= 1;
    let file = InstanceFile::ActivationChain(c2);
    let inst = file.compile().unwrap();
    for (name, r) in bound::evaluate(&file, &inst) {
        assert!(
            matches!(r, Err(BoundError::Infeasible { .. })),
            "{name}: {r:?}"
        );
    }
}

static DYNPROG_RUNS: AtomicUsize = AtomicUsize::new(0);

/// A case the property below drew (S = 9 and S = 50 on a 4-layer chain at its
/// least memory, 14 B): every grid's choice stuck in the simulator ("op B0
/// cannot start") while offload-all had a schedule. DYNPROG now realises the
/// set of every candidate last (`dynprog.rs`, addition 4); this failed before.
#[test]
fn dynprog_falls_back_to_every_candidate() {
    let spec = [
        (0, 0, 56, 0, 0),
        (0, 1, 5, 20, 33),
        (1, 0, 54, 0, 0),
        (129, 185, 0, 94, 9),
    ];
    let c = activation_chain_5(&spec, 0, 26);
    assert_eq!(c.gpu_memory, 14);
    let file = InstanceFile::ActivationChain(c);
    let inst = file.compile().unwrap();
    let all = heuristic::run(&OffloadEverything, &file, &inst).expect("offload-all fits");
    for slots in [9, 50] {
        let dp = heuristic::run(&DynProg { slots }, &file, &inst)
            .unwrap_or_else(|e| panic!("S = {slots}: {e}"));
        assert_eq!(dp.checked.makespan(), all.checked.makespan(), "S = {slots}");
    }
}

/// DYNPROG on coarse grids (S = 2..=41, where rounding bites) at memories
/// from the least feasible (a quarter of the draws) to the peak: every
/// schedule it returns passes the checker (`heuristic::run` fails with
/// `Invalid` otherwise), and wherever offloading everything fits, DYNPROG
/// finds a schedule too (discretisation never turns a feasible budget into
/// "no schedule").
#[test]
fn dynprog_schedules_pass_the_checker_on_coarse_grids() {
    fn prop(spec: Vec<(u8, u8, u8, u8, u8)>, mem: u8, bw: u8, slots: u8) -> TestResult {
        if spec.is_empty() || spec.len() > 10 {
            return TestResult::discard();
        }
        let mem = if mem.is_multiple_of(4) { 0 } else { mem };
        let c = activation_chain_5(&spec, mem, bw);
        let file = InstanceFile::ActivationChain(c.clone());
        let inst = file.compile().unwrap();
        let dp = DynProg {
            slots: 2 + (slots % 40) as u32,
        };
        let all = heuristic::run(&OffloadEverything, &file, &inst);
        match heuristic::run(&dp, &file, &inst) {
            Ok(_) => {
                DYNPROG_RUNS.fetch_add(1, Ordering::Relaxed);
                TestResult::passed()
            }
            Err(HeuristicError::NoSchedule { reason, .. }) if all.is_ok() => {
                TestResult::error(format!(
                    "S = {}: no schedule ({reason}) although offload-all has one on {c:?}",
                    dp.slots
                ))
            }
            Err(HeuristicError::NoSchedule { .. }) => TestResult::discard(),
            Err(e) => TestResult::error(format!("S = {}: {e} on {c:?}", dp.slots)),
        }
    }
    qc(300, 150)
        .max_tests(cases(3000))
        .quickcheck(prop as fn(_, _, _, _) -> TestResult);
    assert!(DYNPROG_RUNS.load(Ordering::Relaxed) >= 150);
}
