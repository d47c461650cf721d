//! The orders that compute every node once (src/heuristic/graph/order.rs;
//! issue 27, ported from branch `gorder`): on random small DAGs at tight
//! memory, `graph-order` finds a checked schedule at Σd exactly when the exact
//! optimum (the graph search's) is Σd, and otherwise reports that it visited
//! every down-set or that a node forces more than the memory; the forced peak
//! is at most the peak of every order that computes each node once (the
//! least-peak beam's, the low-memory orders', a found one); on a hand-checked
//! DAG whose every schedule recomputes the search reports exhaustion, and one
//! byte more lets it find the order; a cap of one down-set stops it.

use crate::common::{bounds_example, dag_instance, graph_optimum, qc, DagSpec};
use offcert::bound::graph::forced::forced_peak;
use offcert::family::dag::Dag;
use offcert::family::{CoreFile, InstanceFile};
use offcert::heuristic::graph::evict::low_memory_order;
use offcert::heuristic::graph::order::{
    least_peak_order, search_within, Order, Outcome, STATE_CAP,
};
use offcert::heuristic::{self, HeuristicError};
use offcert::model::Instance;
use offcert::simulate::dag_sequence::peak_of;
use offcert::units::Bytes;
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};

static FOUND: AtomicUsize = AtomicUsize::new(0);
static NONE: AtomicUsize = AtomicUsize::new(0);
static FORCED: AtomicUsize = AtomicUsize::new(0);

fn file_of(inst: &Instance) -> InstanceFile {
    InstanceFile::Core(CoreFile::from_instance(inst))
}

/// `graph-order` through the checker: `Ok(makespan)` or the reason it gave.
fn order_run(inst: &Instance) -> Result<i64, String> {
    match heuristic::run(&Order, &file_of(inst), inst) {
        Ok(r) => Ok(r.checked.makespan().0),
        Err(HeuristicError::NoSchedule { reason, .. }) => Err(reason),
        Err(e) => panic!("graph-order: {e}"),
    }
}

fn agrees_with_the_optimum(spec: DagSpec) -> TestResult {
    let inst = dag_instance(&spec);
    let dag = Dag::of(&inst).unwrap();
    let sum = dag.total_duration();
    let opt = graph_optimum(&inst);
    match (opt, order_run(&inst)) {
        (Some(o), Ok(m)) if o == sum && m == sum => {
            FOUND.fetch_add(1, Ordering::Relaxed);
        }
        (Some(o), r) if o == sum => {
            return TestResult::error(format!("{spec:?}: optimum Σd = {sum}, graph-order {r:?}"))
        }
        (_, Ok(m)) => {
            return TestResult::error(format!("{spec:?}: graph-order {m}, optimum {opt:?}"))
        }
        (_, Err(why)) => {
            // Every schedule recomputes (or none exists): the search must
            // have settled it (2^8 down-sets at most, far below its cap).
            match search_within(&dag, STATE_CAP, None) {
                Outcome::Exhausted(_) if why.contains("reachable down-sets visited") => {
                    NONE.fetch_add(1, Ordering::Relaxed);
                }
                Outcome::Forced { .. } if why.contains("forces resident") => {
                    FORCED.fetch_add(1, Ordering::Relaxed);
                }
                o => return TestResult::error(format!("{spec:?}: optimum {opt:?}: {o:?}, {why}")),
            }
        }
    }
    TestResult::passed()
}

#[test]
fn graph_order_finds_sum_d_exactly_when_the_optimum_is_sum_d() {
    qc(80, 40).quickcheck(agrees_with_the_optimum as fn(DagSpec) -> TestResult);
    let (f, e, p) = (
        FOUND.load(Ordering::Relaxed),
        NONE.load(Ordering::Relaxed),
        FORCED.load(Ordering::Relaxed),
    );
    eprintln!("graph-order found Σd on {f} DAGs, exhausted on {e}, forced on {p}");
    // Not vacuous: an order is found, and refused, at tight memory.
    assert!(f >= 1 && e + p >= 1, "{f} {e} {p}");
}

static ABOVE: AtomicUsize = AtomicUsize::new(0);

/// `forced_peak` bounds the peak of every order computing each node once:
/// the least-peak beam's (at widths 1 and 8), the low-memory orders', and a
/// found order's; the beam's order is a topological order of every node.
fn forced_peak_is_a_lower_bound(spec: DagSpec) -> TestResult {
    let inst = dag_instance(&spec);
    let dag = Dag::of(&inst).unwrap();
    let (forced, _) = forced_peak(&dag).expect("non-empty");
    let mut orders = vec![
        least_peak_order(&dag, 1),
        least_peak_order(&dag, 8),
        low_memory_order(&dag, false),
        dag.topo.clone(),
    ];
    if let Outcome::Found(o) = search_within(&dag, STATE_CAP, None) {
        orders.push(o);
    }
    for o in &orders {
        let mut sorted = o.clone();
        sorted.sort_unstable();
        if sorted != (0..dag.len()).collect::<Vec<_>>() {
            return TestResult::error(format!("{spec:?}: not every node once: {o:?}"));
        }
        let Some(peak) = peak_of(&dag, o) else {
            return TestResult::error(format!("{spec:?}: not topological: {o:?}"));
        };
        if peak < forced {
            return TestResult::error(format!("{spec:?}: {o:?} peaks at {peak} < {forced}"));
        }
    }
    if forced > dag.capacity as u128 {
        ABOVE.fetch_add(1, Ordering::Relaxed);
    }
    TestResult::passed()
}

#[test]
fn the_forced_peak_is_below_every_order_s_peak() {
    qc(150, 75).quickcheck(forced_peak_is_a_lower_bound as fn(DagSpec) -> TestResult);
    // Not vacuous: at tight memory it alone settles some graphs.
    assert!(ABOVE.load(Ordering::Relaxed) >= 1);
}

/// proofs/GRAPH-BOUNDS.md §3's example at 5 B: the only topological order is
/// s a b c e, and c runs beside a and b (2 + 2 + 2 = 6 B > 5): every schedule
/// recomputes, the optimum is 6. The forced peak (c beside a, read by e
/// later, and b: 6 B) says so before any search.
#[test]
fn every_schedule_recomputes_and_the_search_says_so() {
    let inst = bounds_example(5);
    assert_eq!(graph_optimum(&inst), Some(6));
    let dag = Dag::of(&inst).unwrap();
    assert_eq!(forced_peak(&dag), Some((6, 3)));
    assert_eq!(
        search_within(&dag, STATE_CAP, None),
        Outcome::Forced { bytes: 6, node: 3 }
    );
    let why = order_run(&inst).unwrap_err();
    assert!(why.contains("node 3 runs beside 6 B"), "{why}");
    // One byte more: s a b c e fits, Σd = 5.
    let mut roomy = inst.clone();
    roomy.machine.gpu_capacity = Bytes(6);
    let roomy_dag = Dag::of(&roomy).unwrap();
    assert_eq!(
        search_within(&roomy_dag, STATE_CAP, None),
        Outcome::Found(vec![0, 1, 2, 3, 4])
    );
    assert_eq!(order_run(&roomy), Ok(5));
}

#[test]
fn a_cap_of_one_down_set_stops_the_search() {
    let dag = Dag::of(&bounds_example(6)).unwrap();
    assert_eq!(search_within(&dag, 1, None), Outcome::Stopped(2));
}
