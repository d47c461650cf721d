//! The `graph` family (MODEL.md §4.7): the compiled instance's shape, the
//! validation of hostile files (each error names the field), and the baseline
//! order's releases and peak against the checker.

use crate::common::*;
use offcert::check::{check, CheckOutcome};
use offcert::family::graph::Graph;
use offcert::family::InstanceFile;
use offcert::model::{ComputeOrder, Mode, ModelError, OpId, TensorId};
use offcert::simulate::chain_sequence::back_to_back;
use offcert::simulate::graph_sequence::plan_of;
use offcert::units::Bytes;
use quickcheck::TestResult;

fn graph4() -> Graph {
    match offcert::io::load_instance(&repo().join("instances/fixtures/graph4.json"))
        .unwrap()
        .0
    {
        InstanceFile::Graph(g) => g,
        other => panic!("family {}", other.family()),
    }
}

fn field_of(e: ModelError) -> String {
    match e {
        ModelError::Invalid { field, .. }
        | ModelError::DuplicateName { field, .. }
        | ModelError::UnknownName { field, .. }
        | ModelError::Overflow { field, .. } => field,
        other => panic!("{other:?}"),
    }
}

/// Node i is op i and its output tensor i, named after the node; one-shot,
/// free order, every op required, nothing transferable without `offload`.
#[test]
fn compiled_ids_are_node_ids() {
    let g = graph4();
    let inst = g.compile().unwrap();
    assert_eq!(
        (inst.mode, &inst.order),
        (Mode::OneShot, &ComputeOrder::Free)
    );
    for (i, n) in g.nodes.iter().enumerate() {
        let op = inst.op(OpId(i as u32));
        assert_eq!(op.name, n.name);
        assert_eq!(op.produces, vec![TensorId(i as u32)]);
        assert!(op.required && op.frees.is_empty() && op.consumes.is_empty());
        let t = inst.tensor(TensorId(i as u32));
        assert_eq!(
            (t.name.as_str(), t.size),
            (n.name.as_str(), Bytes(n.memory))
        );
        assert!(!t.transferable);
    }
    assert_eq!(inst.op(OpId(3)).reads, vec![TensorId(0), TensorId(2)]);
    assert_eq!(g.least_memory(), 7);
    assert_eq!(g.sequence_peak(&[0, 1, 2, 3]), 8);
    assert_eq!(g.sequence_peak(&[0, 1, 2, 0, 3]), 7);
}

/// Each hostile graph is refused with the offending field named.
#[test]
fn hostile_graphs_name_the_field() {
    let base = graph4();
    let cases: Vec<(&str, Box<dyn Fn(&mut Graph)>)> = vec![
        ("nodes[0].inputs", Box::new(|g| g.nodes[0].inputs = vec![3])),
        ("nodes[3].inputs[1]", Box::new(|g| g.nodes[3].inputs[1] = 9)),
        ("nodes[3].inputs[1]", Box::new(|g| g.nodes[3].inputs[1] = 0)),
        ("nodes[2].inputs[0]", Box::new(|g| g.nodes[2].inputs[0] = 2)),
        ("nodes[2].name", Box::new(|g| g.nodes[2].name = "a".into())),
        ("nodes[1].duration", Box::new(|g| g.nodes[1].duration = 0)),
        ("nodes", Box::new(|g| g.nodes[1].memory = u64::MAX / 2)),
        ("nodes", Box::new(|g| g.nodes[1].duration = i64::MAX / 2)),
        (
            "baseline[0]",
            Box::new(|g| g.baseline = Some(vec![1, 0, 2, 3])),
        ),
        ("baseline", Box::new(|g| g.baseline = Some(vec![0, 1, 2]))),
        (
            "baseline[3]",
            Box::new(|g| g.baseline = Some(vec![0, 1, 2, 2])),
        ),
        ("nodes", Box::new(|g| g.nodes.clear())),
    ];
    for (field, f) in cases {
        let mut g = base.clone();
        f(&mut g);
        let e = g.compile().expect_err(field);
        assert_eq!(field_of(e), field);
    }
}

/// The baseline order run back to back with the graph tools' releases is
/// valid with memory enough, its checked peak is `sequence_peak` (the tools'
/// count), and at one byte less the checker rejects it for memory.
#[test]
fn quickcheck_baseline_peak_is_the_tools_count() {
    fn prop(spec: Vec<(u8, u8, u8)>, slack: u8) -> TestResult {
        let mut g = random_graph(&spec, 10, slack);
        if g.nodes.is_empty() {
            return TestResult::discard();
        }
        let seq = g.baseline().unwrap();
        let peak = g.sequence_peak(&seq);
        g.gpu_memory = peak;
        let inst = g.compile().unwrap();
        let s = back_to_back(&inst, &plan_of(&g, &seq));
        let CheckOutcome::Valid(c) = check(&inst, &s) else {
            return TestResult::error(format!("{:?}", check(&inst, &s).report().violations));
        };
        let r = c.report();
        let total: i64 = g.nodes.iter().map(|n| n.duration).sum();
        if r.peak_memory != Bytes(peak) || r.makespan.0 != total {
            return TestResult::error(format!("{r:?}"));
        }
        g.gpu_memory = peak - 1;
        let inst = g.compile().unwrap();
        TestResult::from_bool(!check(&inst, &s).report().valid)
    }
    qc(100, 60).quickcheck(prop as fn(Vec<(u8, u8, u8)>, u8) -> TestResult);
}

/// A recomputation sequence gets the releases the fixture's valid schedule
/// writes by hand: a after b, b after c, and the terminal d after itself.
#[test]
fn releases_of_a_recomputation() {
    let g = graph4();
    assert_eq!(
        g.releases(&[0, 1, 2, 0, 3]),
        vec![(1, 0), (2, 1), (4, 0), (4, 2), (4, 3)]
    );
}

/// `offload` makes the outputs transferable over the given link (a node may
/// opt out); without it nothing is (pure rematerialisation).
#[test]
fn offload_makes_outputs_transferable() {
    use offcert::family::graph::Offload;
    use offcert::family::BandwidthFile;
    use offcert::model::Duplex;
    let mut g = graph4();
    g.nodes[2].transferable = false;
    assert!(g.compile().unwrap().tensors.iter().all(|t| !t.transferable));
    g.offload = Some(Offload {
        bandwidth: BandwidthFile::PerTick(3),
        duplex: Duplex::FullDuplex,
    });
    let inst = g.compile().unwrap();
    let moves: Vec<bool> = inst.tensors.iter().map(|t| t.transferable).collect();
    assert_eq!(moves, vec![true, true, false, true]);
    assert_eq!(inst.machine.duplex, Duplex::FullDuplex);
    g.offload = Some(Offload {
        bandwidth: BandwidthFile::PerTick(0),
        duplex: Duplex::HalfDuplex,
    });
    assert_eq!(field_of(g.compile().unwrap_err()), "offload.bandwidth");
}
