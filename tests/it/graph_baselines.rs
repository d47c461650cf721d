//! Checkmate's baselines as its code defines them (issue 27 item 6:
//! `chen-ladder`, `chen-greedy`, `checkmate-lp-round`; src/heuristic/graph/
//! {stages,chen_ladder,lp_round}.rs): on random small DAGs at tight memory
//! every schedule they give passes the checker and is at least the exact
//! optimum, and each finds schedules (not vacuous); Checkmate's articulation
//! points and its R-from-S fix-up on hand-checked graphs; the forward-backward
//! ladder on a training chain.

use crate::common::{dag_instance, qc, DagSpec};
use offcert::exact::{self, Limits, Method, Status};
use offcert::family::graph::{Graph, Node};
use offcert::family::{CoreFile, InstanceFile};
use offcert::heuristic::graph::chen_ladder::{
    articulation_points, fixed_checkpoints, ChenGreedy, ChenLadder,
};
use offcert::heuristic::graph::lp_round::LpRound;
use offcert::heuristic::graph::stages::r_of_s;
use offcert::heuristic::{self, Heuristic, HeuristicError};
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};

static FOUND: [AtomicUsize; 3] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

fn baselines() -> [Box<dyn Heuristic>; 3] {
    [
        Box::new(ChenLadder),
        Box::new(ChenGreedy),
        Box::new(LpRound::default()),
    ]
}

fn above_the_optimum(spec: DagSpec) -> TestResult {
    let inst = dag_instance(&spec);
    let file = InstanceFile::Core(CoreFile::from_instance(&inst));
    let search = exact::solve(Method::GraphSearch, &inst, &Limits::default()).unwrap();
    if search.status != Status::Optimal {
        return TestResult::discard();
    }
    let opt = search.bound.unwrap().0;
    for (k, h) in baselines().iter().enumerate() {
        assert!(h.applies(&file), "{} applies to a DAG", h.name());
        match heuristic::run(h.as_ref(), &file, &inst) {
            Ok(r) if r.checked.makespan().0 < opt => {
                return TestResult::error(format!(
                    "{spec:?}: {} {} below the optimum {opt}",
                    h.name(),
                    r.checked.makespan().0
                ))
            }
            Ok(_) => {
                FOUND[k].fetch_add(1, Ordering::Relaxed);
            }
            // Too little memory for this baseline's plan: allowed, with a reason.
            Err(HeuristicError::NoSchedule { reason, .. }) => assert!(!reason.is_empty()),
            // A schedule the checker rejects (or any other failure) is a bug.
            Err(e) => return TestResult::error(format!("{spec:?}: {}: {e}", h.name())),
        }
    }
    TestResult::passed()
}

#[test]
fn checkmate_baselines_are_checked_and_never_below_the_optimum() {
    qc(30, 15).quickcheck(above_the_optimum as fn(DagSpec) -> TestResult);
    let found: Vec<usize> = FOUND.iter().map(|f| f.load(Ordering::Relaxed)).collect();
    eprintln!("schedules found: chen-ladder, chen-greedy, checkmate-lp-round = {found:?}");
    // Not vacuous: each baseline schedules some of the tight graphs.
    assert!(found.iter().all(|&f| f >= 1), "{found:?}");
}

/// Checkmate's articulation points (`DFGraph.articulation_points`): a
/// virtual source joins node 0 and a virtual sink the last forward node, and
/// a vertex counts when the edges that do not touch it fall apart. So on a
/// chain the interior nodes (removing an end leaves the virtual vertex on no
/// edge), on a diamond 0 → {1, 2} → 3 none.
#[test]
fn articulation_points_as_checkmate_defines_them() {
    let chain = vec![vec![], vec![0], vec![1], vec![2]];
    assert_eq!(articulation_points(&chain, &[false; 4]), vec![1, 2]);
    let diamond = vec![vec![], vec![0], vec![0], vec![1, 2]];
    assert_eq!(
        articulation_points(&diamond, &[false; 4]),
        Vec::<usize>::new()
    );
    // Backward nodes (and edges into them) are not part of the forward graph.
    let fb = vec![vec![], vec![0], vec![1], vec![2], vec![2, 3]];
    assert_eq!(
        articulation_points(&fb, &[false, false, false, true, true]),
        vec![1]
    );
}

/// `solve_r_opt`: with nothing checkpointed, stage t recomputes all of node
/// t's ancestors; with every input kept (Checkmate's minimum S), each stage
/// computes its own node only.
#[test]
fn r_from_s_recomputes_exactly_what_s_lacks() {
    let chain = vec![vec![], vec![0], vec![1], vec![2]];
    let none = vec![vec![false; 4]; 4];
    let r = r_of_s(&chain, &none);
    for (t, row) in r.iter().enumerate() {
        let want: Vec<bool> = (0..4).map(|k| k <= t).collect();
        assert_eq!(row, &want, "stage {t}");
    }
    let s = fixed_checkpoints(&chain, &[false; 4], &[], true);
    let r = r_of_s(&chain, &s);
    for (t, row) in r.iter().enumerate() {
        let want: Vec<bool> = (0..4).map(|k| k == t).collect();
        assert_eq!(row, &want, "stage {t}");
    }
}

/// Checkmate's public fixed-checkpoint S keeps every output until its last
/// reader, so on a training chain (f0..f5, b5..b0) R recomputes nothing
/// whatever the checkpoints; without its minimum-input rows (Chen's scheme)
/// checkpoints {f2, f4} make R recompute f0, f1 and f3 once each.
#[test]
fn checkmate_public_chen_keeps_everything_and_the_ladder_recomputes() {
    let inst = InstanceFile::Graph(training_chain(1_000))
        .compile()
        .unwrap();
    let dag = offcert::family::dag::Dag::of(&inst).unwrap();
    let preds = offcert::heuristic::graph::stages::preds_by_pos(&dag);
    let backward: Vec<bool> = (0..12).map(|k| k >= 6).collect();
    let runs = |keep: bool| -> usize {
        let r = r_of_s(&preds, &fixed_checkpoints(&preds, &backward, &[2, 4], keep));
        r.iter().flatten().filter(|&&x| x).count()
    };
    assert_eq!(runs(true), 12);
    assert_eq!(runs(false), 12 + 3);
}

fn node(name: &str, duration: i64, memory: u64, inputs: Vec<usize>, backward: bool) -> Node {
    Node {
        name: name.into(),
        duration,
        memory,
        inputs,
        backward,
        transferable: true,
    }
}

/// A training chain f0..f5, then b5..b0 (b_i reads b_{i+1} and f_i; b5
/// reads f5 only), every output 10 B.
fn training_chain(gpu_memory: u64) -> Graph {
    let mut nodes: Vec<Node> = (0..6)
        .map(|i| {
            let ins = if i == 0 { vec![] } else { vec![i - 1] };
            node(&format!("f{i}"), 2, 10, ins, false)
        })
        .collect();
    for (k, i) in (0..6).rev().enumerate() {
        let mut ins = vec![i];
        if k > 0 {
            ins.push(6 + k - 1);
        }
        nodes.push(node(&format!("b{i}"), 3, 10, ins, true));
    }
    Graph {
        name: "training-chain".into(),
        note: None,
        nodes,
        gpu_memory,
        offload: None,
        baseline: None,
        release: Default::default(),
        allocator: Default::default(),
    }
}

/// On a training chain Chen's checkpoints (every ⌊√4⌋ = 2nd of the
/// articulation points f1..f4) fit below the checkpoint-all peak and
/// recompute the segments' other forward nodes once more: the ladder costs
/// more than Σd but fits where `checkpoint-all` does not.
#[test]
fn the_ladder_fits_below_checkpoint_all_on_a_training_chain() {
    let roomy = InstanceFile::Graph(training_chain(1_000));
    let inst = roomy.compile().unwrap();
    let all = heuristic::graph::CheckpointAll;
    let peak = heuristic::run(&all, &roomy, &inst)
        .unwrap()
        .checked
        .report()
        .peak_memory
        .0;
    let tight = InstanceFile::Graph(training_chain(peak - 10));
    let inst = tight.compile().unwrap();
    assert!(matches!(
        heuristic::run(&all, &tight, &inst),
        Err(HeuristicError::NoSchedule { .. })
    ));
    let sum: i64 = inst.ops.iter().map(|o| o.duration.0).sum();
    for h in [&ChenLadder as &dyn Heuristic, &ChenGreedy] {
        let r = heuristic::run(h, &tight, &inst).unwrap_or_else(|e| panic!("{}: {e}", h.name()));
        let m = r.checked.makespan().0;
        assert!(m > sum && m <= sum + 2 * 6, "{}: {m} (Σd {sum})", h.name());
        assert!(r.checked.report().peak_memory.0 < peak);
    }
}
