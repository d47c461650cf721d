//! The graph eviction scheduler's engines (issue 27, branch `gbetter`): on
//! random small DAGs at tight memory (capacity between the largest footprint
//! and the checkpoint-all peak), every sequence that an engine finishes, under
//! every rule and in every candidate order, runs every node, fits the memory
//! when realised (`peak_of`), and passes the checker (the orders: the
//! topological one, the two low-memory ones, the least-peak beam's); the work-stack and the
//! planned engines finish on some of them (not vacuous). The order search's
//! orders compute every node once, fit and check, and it finds one whenever
//! the exact optimum is Σd.

use crate::common::{dag_instance, qc, DagSpec};
use offcert::check::check;
use offcert::exact::{self, Limits, Method, Status};
use offcert::family::dag::Dag;
use offcert::heuristic::graph::evict::{low_memory_order, plan, ENGINES, RULES};
use offcert::heuristic::graph::order;
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
        order::least_peak_order(&dag, 4),
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

static ORDERS_FOUND: AtomicUsize = AtomicUsize::new(0);

/// The order search (`heuristic::graph::order`): an order it finds computes
/// every node exactly once, fits the memory when realised, and passes the
/// checker; and it finds one whenever the exact optimum is Σd (no
/// recomputation needed: on these small graphs its cap is never reached).
fn order_search_sound_and_complete(spec: DagSpec) -> TestResult {
    let inst = dag_instance(&spec);
    let dag = Dag::of(&inst).expect("a DAG");
    let sum: i64 = dag.duration.iter().sum();
    let found = order::search(&dag, order::max_downsets(&dag));
    if let Some(seq) = &found {
        ORDERS_FOUND.fetch_add(1, Ordering::Relaxed);
        let mut sorted = seq.clone();
        sorted.sort();
        if sorted != (0..dag.len()).collect::<Vec<_>>() {
            return TestResult::error(format!("{spec:?}: not every node once: {seq:?}"));
        }
        let peak = peak_of(&dag, seq).expect("inputs present");
        if peak > dag.capacity as u128 {
            return TestResult::error(format!("{spec:?}: peak {peak} over {}", dag.capacity));
        }
        if let Err(v) = check(&inst, &schedule_of(&inst, &dag, seq)).into_result() {
            return TestResult::error(format!("{spec:?}: {v:?}"));
        }
    }
    let search = exact::solve(Method::GraphSearch, &inst, &Limits::default()).unwrap();
    if search.status == Status::Optimal && search.bound.map(|b| b.0) == Some(sum) && found.is_none()
    {
        return TestResult::error(format!("{spec:?}: optimum Σd = {sum} but no order found"));
    }
    TestResult::passed()
}

#[test]
fn order_search_is_sound_and_finds_an_order_when_the_optimum_is_the_sum() {
    qc(100, 50).quickcheck(order_search_sound_and_complete as fn(DagSpec) -> TestResult);
    assert!(
        ORDERS_FOUND.load(Ordering::Relaxed) >= 1,
        "{ORDERS_FOUND:?}"
    );
}
