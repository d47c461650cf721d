//! `offmate-balance` (`heuristic::offmate::balance`): the step-balanced plan
//! built without the ILP. Every schedule it returns passes the checker, or it
//! says `no schedule` with the checker's memory reason; it is deterministic
//! without a time limit; a time limit still checks at least one plan.

use crate::common;

use common::offmate_gen::{offmate_instance, Draw};
use common::*;
use offcert::check::{check, CheckOutcome};
use offcert::family::InstanceFile;
use offcert::heuristic::offmate::balance::{self, Balance};
use offcert::heuristic::{Heuristic, HeuristicError, SolverLimit};
use offcert::model::Instance;
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

static VALID: AtomicUsize = AtomicUsize::new(0);
static NO_FIT: AtomicUsize = AtomicUsize::new(0);
static CPU_ADAM: AtomicUsize = AtomicUsize::new(0);

fn compiled(file: &InstanceFile) -> Instance {
    file.compile().unwrap()
}

/// On random small instances (tight or roomy, some forwards of 0 ticks),
/// `offmate-balance` returns a schedule the checker accepts, whose period is at
/// least every certified bound of the family, or `no schedule` with a memory
/// reason; never `invalid`, never another error.
#[test]
fn balance_is_valid_or_says_no_schedule() {
    fn prop(bytes: Vec<u8>, tight: bool, instant: u8) -> TestResult {
        let mut d = Draw::new(&bytes);
        let mut off = offmate_instance(&mut d, tight);
        for (b, blk) in off.blocks.iter_mut().enumerate() {
            if instant >> (b % 8) & 1 == 1 {
                for o in &mut blk.options {
                    o.t_fwd = offcert::units::Ticks(0);
                }
            }
        }
        let file = InstanceFile::Offmate(off.clone());
        let inst = compiled(&file);
        match offcert::heuristic::run(&Balance, &file, &inst) {
            Ok(r) => {
                assert!(r.checked.report().valid);
                VALID.fetch_add(1, Ordering::Relaxed);
                let s = r.checked.schedule();
                if s.events.iter().any(|e| {
                    matches!(e, offcert::schedule::Event::Compute { op, .. }
                        if inst.op(*op).name.starts_with("optC."))
                }) {
                    CPU_ADAM.fetch_add(1, Ordering::Relaxed);
                }
                let period = r.checked.makespan().0;
                for (name, b) in offcert::bound::evaluate(&file, &inst) {
                    let Ok(b) = b else { continue };
                    if b.strength == offcert::bound::Strength::Certified {
                        assert!(b.ceil_ticks() <= period, "{name} = {} > {period}", b.value);
                    }
                }
            }
            Err(HeuristicError::NoSchedule { reason, .. }) => {
                assert!(reason.contains("memory"), "{reason}");
                NO_FIT.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => panic!("{e} on {off:?}"),
        }
        TestResult::passed()
    }
    qc(300, 200).quickcheck(prop as fn(Vec<u8>, bool, u8) -> TestResult);
    for (what, n) in [
        ("valid", &VALID),
        ("no schedule", &NO_FIT),
        ("CPU Adam", &CPU_ADAM),
    ] {
        assert!(n.load(Ordering::Relaxed) >= 5, "{what}: {n:?}");
    }
}

/// Without a time limit the schedule is the same on every run; with a limit
/// of 0 s at least one plan is still checked (a schedule or a reason).
#[test]
fn balance_is_deterministic_and_respects_a_time_limit() {
    let mut seen = 0;
    for seed in 0u8..40 {
        let bytes: Vec<u8> = (0..64)
            .map(|i| seed.wrapping_mul(37).wrapping_add(i * 11))
            .collect();
        let off = offmate_instance(&mut Draw::new(&bytes), seed % 2 == 0);
        let file = InstanceFile::Offmate(off.clone());
        let inst = compiled(&file);
        let a = balance::plan(&off, &inst, SolverLimit::Deterministic);
        let b = balance::plan(&off, &inst, SolverLimit::Deterministic);
        match (&a, &b) {
            (Ok(x), Ok(y)) => {
                assert_eq!(x.schedule, y.schedule);
                assert!(matches!(check(&inst, &x.schedule), CheckOutcome::Valid(_)));
                seen += 1;
            }
            (Err(x), Err(y)) => assert_eq!(x.to_string(), y.to_string()),
            _ => panic!("two runs differ on {off:?}"),
        }
        match Balance.schedule_within(&file, &inst, SolverLimit::Time(Duration::ZERO)) {
            Ok(f) => assert!(matches!(check(&inst, &f.schedule), CheckOutcome::Valid(_))),
            Err(HeuristicError::NoSchedule { reason, .. }) => {
                assert!(reason.contains("memory"), "{reason}")
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(seen >= 10, "{seen}");
}
