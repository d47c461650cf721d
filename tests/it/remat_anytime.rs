//! The anytime search on `remat_chain` rows (issue 23, Deliver 5):
//! `report::exact::anytime_remat` runs the fixed-order search on op
//! sequences of checked schedules. Checked here: a schedule carried onto its
//! renamed sequence (`carry_to_sequence`) is valid there with the same
//! makespan, and maps back (`exact::remat::map_back`) to a valid schedule of
//! the chain with the same makespan; every schedule the search returns
//! re-checks on the chain and beats its input; its bound is never a bound of
//! the instance (no `anytime-search` bound in the gap row).

use crate::common;

use common::*;
use offcert::check::{check, CheckOutcome, Checked};
use offcert::exact::remat::{map_back, sequences::rename};
use offcert::family::InstanceFile;
use offcert::heuristic;
use offcert::report::exact::{anytime_remat, carry_to_sequence, op_sequence};
use offcert::report::gap::{gap_with_carry, GapOptions, ANYTIME_SOURCE};
use offcert::report::BudgetSpec;
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

type Spec = Vec<(u8, u8, u8, u8, u8, u8)>;

static CARRIED: AtomicUsize = AtomicUsize::new(0);
static SEARCHED: AtomicUsize = AtomicUsize::new(0);

/// Every remat heuristic's checked schedule on a random (multi-option) chain.
fn heuristic_schedules(f: &InstanceFile, inst: &offcert::model::Instance) -> Vec<Checked> {
    heuristic::remat::heuristics()
        .iter()
        .filter_map(|h| heuristic::run(h.as_ref(), f, inst).ok())
        .map(|r| r.checked)
        .collect()
}

fn carried_and_searched(spec: Spec, extra: Vec<(u8, u8, u8, u8)>, bw: u8, slack: u8) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let mut c = remat_options_chain(&spec, &extra, bw, slack);
    // The reduction's scope: every layer op lasts a tick at least (a last
    // reader's release at the end of a zero-length op would precede it).
    for x in &mut c.layers {
        x.u_b = x.u_b.max(1);
        x.options.iter_mut().for_each(|o| o.u_b = o.u_b.max(1));
    }
    let f = InstanceFile::RematChain(c.clone());
    let inst = f.compile().unwrap();
    let found = heuristic_schedules(&f, &inst);
    if found.is_empty() {
        return TestResult::discard();
    }
    let json = serde_json::to_string(&c).unwrap();
    for k in &found {
        let r = rename(&inst, &op_sequence(k.schedule()));
        let on_seq = match check(&r.inst, &carry_to_sequence(&r, k.schedule())) {
            CheckOutcome::Valid(s) if s.makespan() == k.makespan() => s,
            other => {
                return TestResult::error(format!(
                    "{json}: carried onto its sequence: {:?}",
                    other.report().violations.first()
                ))
            }
        };
        match check(&inst, &map_back(&r, on_seq.schedule())) {
            CheckOutcome::Valid(b) if b.makespan() == k.makespan() => {}
            other => {
                return TestResult::error(format!(
                    "{json}: mapped back: {:?}",
                    other.report().violations.first()
                ))
            }
        }
        CARRIED.fetch_add(1, Ordering::Relaxed);
    }
    let mut from: Vec<&Checked> = found.iter().collect();
    from.sort_by_key(|k| k.makespan());
    let cell = anytime_remat(&inst, &from, None, Duration::from_millis(300), None);
    if cell.search_bound.is_some() {
        return TestResult::error(format!(
            "{json}: a sequence's bound given as the search's own"
        ));
    }
    if let Some(k) = cell.found_checked() {
        match check(&inst, k.schedule()) {
            CheckOutcome::Valid(again) if again.makespan() < from[0].makespan() => {}
            _ => return TestResult::error(format!("{json}: the search's schedule")),
        }
        SEARCHED.fetch_add(1, Ordering::Relaxed);
    }
    TestResult::passed()
}

#[test]
fn carried_schedules_are_valid_on_their_sequence_and_found_ones_on_the_chain() {
    qc(60, 30)
        .quickcheck(carried_and_searched as fn(Spec, Vec<(u8, u8, u8, u8)>, u8, u8) -> TestResult);
    assert!(CARRIED.load(Ordering::Relaxed) >= 30, "{CARRIED:?}");
    eprintln!("the search beat the best heuristic in {SEARCHED:?} cases");
}

/// On the bundled small chains, through the gap report with the search on:
/// no row carries an `anytime-search` bound (a sequence's bound is not the
/// instance's), and the best schedule is valid on the row's instance.
#[test]
fn the_gap_report_never_takes_a_sequence_bound_for_the_instance() {
    let never = |_: &offcert::model::Instance| false;
    let opts = GapOptions {
        optimum: None,
        exact_for: &never,
        only: vec![],
        anytime: Some(Duration::from_millis(500)),
        progress: None,
        improve: Some(heuristic::effort::Effort::Candidates(200)),
        solver_limit: heuristic::SolverLimit::Deterministic,
    };
    let spec = BudgetSpec::parse("0%:100%:5").unwrap();
    let mut searched = 0;
    for name in ["remat2", "remat3", "rockmate-two"] {
        let path = repo().join(format!("instances/remat/{name}.json"));
        let (file, _) = offcert::io::load_instance(&path).unwrap();
        for b in spec.budgets(&file).unwrap() {
            let f = offcert::report::with_budget(&file, b);
            let inst = f.compile().unwrap();
            let e = gap_with_carry(name, &f, &inst, &opts, None);
            assert!(e.problems.is_empty(), "{name} at {b} B: {:?}", e.problems);
            assert!(
                e.bounds.iter().all(|x| x.source != ANYTIME_SOURCE),
                "{name} at {b} B"
            );
            if let Some(a) = &e.anytime {
                assert_eq!(a.search_bound, None, "{name} at {b} B");
                searched += 1;
            }
            let best = e.best_schedule.expect("a schedule at every budget");
            assert!(check(&inst, best.checked().schedule()).checked().is_some());
        }
    }
    assert!(searched > 0, "the search ran on no row");
}
