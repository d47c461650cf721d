//! `graph-forced` (src/bound/graph/forced.rs, proofs/GRAPH-BOUNDS.md §5): on
//! random small DAGs at tight memory it lies between Σd and the exact optimum
//! (the graph search's), it is strictly above Σd on some of them (not
//! vacuous), and where it proves infeasibility so does the search; on §3's
//! hand-checked example it is the optimum, 6; offloading is refused.

use crate::common::{bounds_example, dag_at, dag_instance, graph_optimum, qc, DagSpec};
use offcert::bound::graph::forced::{forced_extra, GraphForced};
use offcert::bound::BoundError;
use offcert::family::dag::Dag;
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};

static ABOVE: AtomicUsize = AtomicUsize::new(0);

fn sandwich(spec: DagSpec) -> TestResult {
    let inst = dag_instance(&spec);
    let dag = Dag::of(&inst).unwrap();
    let sum = dag.total_duration();
    let opt = graph_optimum(&inst);
    match (GraphForced.compute(&inst), opt) {
        (Ok(lb), Some(o)) => {
            let b = lb.ceil_ticks();
            if b < sum || b > o {
                return TestResult::error(format!("{spec:?}: Σd {sum} ≤ {b} ≤ {o} fails"));
            }
            if b > sum {
                ABOVE.fetch_add(1, Ordering::Relaxed);
            }
        }
        (Ok(_), None) => {}
        (Err(BoundError::Infeasible { .. }), None) => {}
        (r, o) => return TestResult::error(format!("{spec:?}: {r:?}, optimum {o:?}")),
    }
    TestResult::passed()
}

#[test]
fn the_forced_bound_lies_between_the_sum_and_the_optimum() {
    qc(150, 75).quickcheck(sandwich as fn(DagSpec) -> TestResult);
    let above = ABOVE.load(Ordering::Relaxed);
    eprintln!("graph-forced above Σd on {above} DAGs");
    assert!(above >= 1);
}

/// §3's example at 5 B: c's first run finds a (read by e later) and b (read
/// by c) resident beside its own 2 B: 6 B, 1 B over. Covering 1 B costs at
/// least half of a's (or b's) 1 tick, rounded up: 1; Σd + 1 = 6, the optimum.
#[test]
fn the_forced_bound_on_the_example_is_the_optimum() {
    let inst = bounds_example(5);
    let dag = Dag::of(&inst).unwrap();
    assert_eq!(forced_extra(&dag), Ok((1, Some(3))));
    assert_eq!(GraphForced.compute(&inst).unwrap().ceil_ticks(), 6);
    assert_eq!(graph_optimum(&inst), Some(6));
    // At 6 B nothing is forced over the memory: Σd.
    let roomy = bounds_example(6);
    assert_eq!(GraphForced.compute(&roomy).unwrap().ceil_ticks(), 5);
}

#[test]
fn offloading_is_refused() {
    let spec = DagSpec {
        nodes: vec![(0, 2, 1, 0), (1, 2, 1, 0), (1, 2, 1, 0)],
        slack: 0,
    };
    let err = GraphForced.compute(&dag_at(&spec, 100, true)).unwrap_err();
    assert!(matches!(err, BoundError::Failed { .. }), "{err}");
}
