//! `heuristic::remat::replan` (issue 23, Deliver 5): on random chains at
//! every memory from the least feasible to the peak, every schedule it
//! returns passes the checker and ends strictly earlier than the schedule it
//! was given (rotor's), and it never returns one otherwise.

use crate::common;

use common::*;
use offcert::check::{check, CheckOutcome};
use offcert::family::remat_chain::RematChain;
use offcert::family::InstanceFile;
use offcert::heuristic::effort::Effort;
use offcert::heuristic::remat::replan;
use offcert::heuristic::remat::rotor::Rotor;
use offcert::heuristic::{self, HeuristicError};
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};

type Spec = Vec<(u8, u8, u8, u8, u8)>;

/// 1..=8 layers (`small_remat_layers`, u_F and u_B times 4), memory anywhere
/// from the least feasible to the peak (`at` / 255 of the way).
fn chain(spec: &[(u8, u8, u8, u8, u8)], bw: u8, at: u8) -> RematChain {
    let layers = small_remat_layers(spec, 8);
    let mut c = remat_chain_of("replan", layers, bw, RematTail::WIDE);
    let lo = c.min_memory().unwrap();
    let hi = c.store_all_peak().unwrap();
    c.gpu_memory = lo + (hi - lo) * at as u64 / 255;
    // Compute 4× as long: transfers fit in it, so offloading competes with
    // recomputation (as on the paper's chains).
    for x in &mut c.layers {
        x.u_f *= 4;
        x.u_b *= 4;
    }
    c
}

static IMPROVED: AtomicUsize = AtomicUsize::new(0);

fn checked_and_better(spec: Spec, bw: u8, at: u8) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let c = chain(&spec, bw, at);
    let f = InstanceFile::RematChain(c.clone());
    let inst = f.compile().unwrap();
    let start = match heuristic::run(&Rotor::default(), &f, &inst) {
        Ok(run) => run.checked,
        Err(HeuristicError::NoSchedule { .. }) => return TestResult::discard(),
        Err(e) => return TestResult::error(e.to_string()),
    };
    let Some((by, k)) = replan::improve(&c, &inst, Some(&start), None, Effort::Candidates(400))
    else {
        return TestResult::passed();
    };
    let json = serde_json::to_string(&c).unwrap();
    match check(&inst, k.schedule()) {
        CheckOutcome::Valid(again) if again.makespan() == k.makespan() => {}
        other => {
            return TestResult::error(format!(
                "{json}: {by}'s schedule does not check again: {:?}",
                other.report().violations.first()
            ))
        }
    }
    if k.makespan() >= start.makespan() {
        return TestResult::error(format!(
            "{json}: {by} returns {} against rotor's {}",
            k.makespan(),
            start.makespan()
        ));
    }
    IMPROVED.fetch_add(1, Ordering::Relaxed);
    TestResult::passed()
}

#[test]
fn replan_returns_checked_schedules_strictly_better_than_its_input() {
    qc(60, 30).quickcheck(checked_and_better as fn(Spec, u8, u8) -> TestResult);
    eprintln!(
        "replan: {} of the chains improved over rotor",
        IMPROVED.load(Ordering::Relaxed)
    );
}

/// On the bundled ResNet-50 chain at 75 % of least..peak, rotor recomputes
/// where offloading is cheaper: the re-planning (rotor's table read at a
/// larger virtual budget, fitted by offloads) returns a checked schedule
/// strictly below rotor's, valid on the instance (checked again here).
#[test]
fn replan_beats_rotor_on_resnet50_at_three_quarters() {
    let path = repo().join("instances/paper/remat/resnet50-224px-b32-remat.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let (f, _) = offcert::io::parse_instance("resnet50", &text).unwrap();
    let InstanceFile::RematChain(mut c) = f else {
        panic!("a remat_chain")
    };
    let b = offcert::report::budget::remat_budgets(&c).unwrap();
    c.gpu_memory = b.least + (b.peak - b.least) * 3 / 4;
    let f = InstanceFile::RematChain(c.clone());
    let inst = f.compile().unwrap();
    let rotor = heuristic::run(&Rotor::default(), &f, &inst)
        .unwrap()
        .checked;
    let (by, k) = replan::improve(&c, &inst, Some(&rotor), None, Effort::Candidates(2000))
        .expect("a better schedule than rotor's");
    assert!(by.starts_with("rotor@"), "{by}");
    assert!(k.makespan() < rotor.makespan(), "{by}: {}", k.makespan());
    assert!(check(&inst, k.schedule()).valid);
}
