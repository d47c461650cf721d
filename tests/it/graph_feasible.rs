//! The graph eviction scheduler's engines (issue 27, branch `gbetter`): on
//! random small DAGs at tight memory (capacity between the largest footprint
//! and the checkpoint-all peak), every sequence that an engine finishes, under
//! every rule and in every candidate order, runs every node, fits the memory
//! when realised (`peak_of`), and passes the checker; the work-stack and the
//! planned engines finish on some of them (not vacuous).

use crate::common::{dag_instance, qc, DagSpec};
use offcert::check::check;
use offcert::family::dag::Dag;
use offcert::heuristic::graph::evict::{low_memory_order, plan, ENGINES, RULES};
use offcert::simulate::dag_sequence::{peak_of, schedule_of};
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};

static FINISHED: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

fn engines_fit(spec: DagSpec) -> TestResult {
    let inst = dag_instance(&spec);
    let dag = Dag::of(&inst).expect("a DAG");
    let orders = [
        dag.topo.clone(),
        low_memory_order(&dag, false),
        low_memory_order(&dag, true),
    ];
    for order in &orders {
        for (e, &engine) in ENGINES.iter().enumerate() {
            for rule in RULES {
                let Ok((seq, _)) = plan(&dag, order, rule, engine, None) else {
                    continue;
                };
                FINISHED[e].fetch_add(1, Ordering::Relaxed);
                if (0..dag.len()).any(|v| !seq.contains(&v)) {
                    return TestResult::error(format!("{spec:?} {engine:?}: a node never runs"));
                }
                let peak = peak_of(&dag, &seq).expect("inputs present");
                if peak > dag.capacity as u128 {
                    return TestResult::error(format!(
                        "{spec:?} {engine:?} {rule:?}: peak {peak} over {}",
                        dag.capacity
                    ));
                }
                let s = schedule_of(&inst, &dag, &seq);
                if let Err(v) = check(&inst, &s).into_result() {
                    return TestResult::error(format!("{spec:?} {engine:?}: {v:?}"));
                }
            }
        }
    }
    TestResult::passed()
}

#[test]
fn every_engine_sequence_fits_and_checks() {
    qc(100, 50).quickcheck(engines_fit as fn(DagSpec) -> TestResult);
    for (e, f) in ENGINES.iter().zip(&FINISHED) {
        assert!(f.load(Ordering::Relaxed) >= 1, "{e:?} never finished");
    }
}
