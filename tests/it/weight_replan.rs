//! Local improvement of weight schedules (`heuristic::weight::replan`): every
//! schedule it returns passes the checker (checked again here) and is strictly
//! better than the heuristic schedule it started from.

use crate::common;

use common::{qc, SmallChain};
use offcert::check::{check, CheckOutcome};
use offcert::heuristic::{run, weight};
use quickcheck::TestResult;
use std::time::Duration;

/// Cases where no heuristic schedule was improved are discarded; the property
/// fails unless at least 10 of them improved one.
#[test]
fn improved_weight_schedules_are_checked_and_strictly_better() {
    qc(40, 10).quickcheck(improves as fn(SmallChain) -> TestResult);
}

fn improves(c: SmallChain) -> TestResult {
    let file = c.file();
    let inst = file.compile().expect("random chains compile");
    let mut improved = false;
    for h in weight::heuristics() {
        let Ok(start) = run(h.as_ref(), &file, &inst) else {
            continue;
        };
        let Some((by, better)) =
            weight::replan::improve(&c.0, &inst, &start.checked, None, Duration::from_secs(5))
        else {
            continue;
        };
        assert!(by.ends_with("+improve"), "{by}");
        match check(&inst, better.schedule()) {
            CheckOutcome::Valid(k) => assert_eq!(k.makespan(), better.makespan()),
            CheckOutcome::Invalid(r) => panic!("{by} on {:?}: {:?}", c.0, r.violations()),
        }
        assert!(
            better.makespan() < start.checked.makespan(),
            "{by}: {} not below {} ({})",
            better.makespan().0,
            start.checked.makespan().0,
            start.name
        );
        improved = true;
    }
    if improved {
        TestResult::passed()
    } else {
        TestResult::discard()
    }
}

/// The bundled BERT rows at batch 16 and 32: the improvement beats Greedy and
/// Greedy* (the figures the README records).
#[test]
fn bert_rows_improve() {
    for (f, expect) in [
        ("bert-L96-b16", 6900586),
        ("bert-L144-b16", 10987247),
        ("bert-L96-b32", 11617000),
        ("bert-L144-b32", 17443000),
    ] {
        let path = common::repo().join(format!("instances/paper/weight/{f}.json"));
        let (file, inst) = offcert::io::load_instance(&path).unwrap();
        let c = file.weight_chain().unwrap();
        let start = offcert::heuristic::best_run(&file, &inst).unwrap();
        let (by, k) = weight::replan::improve(
            c,
            &inst,
            &start.checked,
            Some(expect),
            Duration::from_secs(120),
        )
        .expect("an improvement");
        assert_eq!(k.makespan().0, expect, "{f}: {by}");
    }
}

/// The gap report runs the improvement on an open weight row and offers its
/// checked schedule: on bert-L96-b16 it meets the turnaround bound, so the row
/// is `optimal (certified)` (Greedy* alone: 7127164, 4.090 % over §6's LP).
#[test]
fn the_gap_report_offers_the_improvement() {
    use offcert::report::gap::{gap, GapOptions};
    let path = common::repo().join("instances/paper/weight/bert-L96-b16.json");
    let (file, inst) = offcert::io::load_instance(&path).unwrap();
    let never = |_: &offcert::model::Instance| false;
    let opts = GapOptions {
        optimum: None,
        exact_for: &never,
        only: vec![],
        anytime: None,
        progress: None,
        improve: Some(Duration::from_secs(120).into()),
        solver_limit: Default::default(),
    };
    let e = gap("bert-L96-b16", &file, &inst, &opts);
    let best = e.best_schedule.as_ref().expect("a schedule");
    assert_eq!(best.makespan(), 6900586);
    assert!(best.by.ends_with("+improve"), "{}", best.by);
    assert_eq!(
        e.best_certified_bound.as_ref().unwrap().source,
        "turnaround"
    );
    assert_eq!(e.optimum.as_ref().unwrap().claim, "optimal (certified)");
    assert!(e.problems.is_empty(), "{:?}", e.problems);
}
