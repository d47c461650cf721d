//! Random small computation graphs (DAG instances, models/MODEL.md §4.7, built
//! directly as core instances so that the tests do not wait on a front-end).
//!
//! [`DagSpec`]: 3–8 nodes; node v > 0 reads each earlier node u whose bit is
//! set in a random byte (over the 8 nodes before it: long-range reads make
//! recomputation pay), and at least the node before it when none is set; sizes 1–6 B,
//! durations 1–4 ticks, scratch 0–1 B. The capacity lies between the largest
//! footprint (the least any schedule needs) and the peak of running every
//! node once in id order (checkpoint all), at a random fraction: tight memory.

use offcert::exact::{self, Limits, Method, Status};
use offcert::family::dag::Dag;
use offcert::model::{
    ComputeOrder, Device, Duplex, Instance, Machine, Mode, Op, Placement, ReleaseRule, Tensor,
    TensorId, TensorKind,
};
use offcert::simulate::dag_sequence::peak_of;
use offcert::units::{Bandwidth, Bytes, Ticks};
use quickcheck::{Arbitrary, Gen};

#[derive(Clone, Debug)]
pub struct DagSpec {
    /// Per node: (input bits over the 8 nodes before it, size, duration, scratch).
    pub nodes: Vec<(u8, u8, u8, u8)>,
    /// Where the capacity lies between the largest footprint and the
    /// checkpoint-all peak: 1/8, 2/8 or 3/8 of the way (`1 + slack % 3`).
    pub slack: u8,
}

impl Arbitrary for DagSpec {
    fn arbitrary(g: &mut Gen) -> DagSpec {
        let n = 3 + usize::arbitrary(g) % 6;
        DagSpec {
            nodes: (0..n)
                .map(|_| {
                    (
                        u8::arbitrary(g),
                        1 + u8::arbitrary(g) % 6,
                        1 + u8::arbitrary(g) % 4,
                        u8::arbitrary(g) % 2,
                    )
                })
                .collect(),
            slack: u8::arbitrary(g),
        }
    }
    fn shrink(&self) -> Box<dyn Iterator<Item = DagSpec>> {
        let s = self.clone();
        let n = if s.nodes.len() > 2 { s.nodes.len() } else { 0 };
        Box::new((0..n).rev().map(move |k| {
            let mut t = s.clone();
            t.nodes.remove(k);
            t
        }))
    }
}

/// The instance of `spec` at capacity `cap` (`movable`: outputs transferable).
pub fn dag_at(spec: &DagSpec, cap: u64, movable: bool) -> Instance {
    let tensors = spec
        .nodes
        .iter()
        .enumerate()
        .map(|(v, &(_, size, _, _))| Tensor {
            name: format!("x{v}"),
            size: Bytes(size as u64),
            kind: TensorKind::default(),
            transferable: movable,
            initial: Placement::Nowhere,
        })
        .collect();
    let ops = spec
        .nodes
        .iter()
        .enumerate()
        .map(|(v, &(bits, _, d, tmp))| {
            let mut reads: Vec<TensorId> = (1..=8usize)
                .filter(|&b| v >= b && bits >> (b - 1) & 1 == 1)
                .map(|b| TensorId((v - b) as u32))
                .collect();
            if reads.is_empty() && v > 0 {
                reads.push(TensorId((v - 1) as u32));
            }
            reads.sort();
            Op {
                name: format!("n{v}"),
                duration: Ticks(d as i64),
                reads,
                produces: vec![TensorId(v as u32)],
                consumes: vec![],
                frees: vec![],
                modifies: vec![],
                temp: Bytes(tmp as u64),
                device: Device::Gpu,
                required: true,
                after: vec![],
            }
        })
        .collect();
    Instance {
        name: "random-dag".into(),
        family: "core".into(),
        tensors,
        ops,
        order: ComputeOrder::Free,
        machine: Machine {
            gpu_capacity: Bytes(cap),
            cpu_capacity: None,
            duplex: Duplex::HalfDuplex,
            bandwidth: Bandwidth::new(1, 1),
        },
        mode: Mode::OneShot,
        release: ReleaseRule::AfterEnd,
        allocator: Default::default(),
        groups: vec![],
    }
}

/// The instance of `spec` at its tight capacity (module doc), nothing movable.
pub fn dag_instance(spec: &DagSpec) -> Instance {
    let probe = dag_at(spec, u64::MAX / 4, false);
    let dag = Dag::of(&probe).expect("a DAG");
    let least = (0..dag.len()).map(|v| dag.footprint(v)).max().unwrap_or(0) as u64;
    let ids: Vec<usize> = (0..dag.len()).collect();
    let peak = peak_of(&dag, &ids).expect("id order is topological") as u64;
    // 1/8, 2/8 or 3/8 of the way: memory binds often.
    let cap = least + (peak.saturating_sub(least)) * (1 + spec.slack % 3) as u64 / 8;
    dag_at(spec, cap, false)
}

/// The exact optimum of a small DAG instance (the graph search's; `None`:
/// the search proves no schedule). Panics if the search stops early.
pub fn graph_optimum(inst: &Instance) -> Option<i64> {
    let o = exact::solve(Method::GraphSearch, inst, &Limits::default()).unwrap();
    match o.status {
        Status::Optimal => Some(o.bound.unwrap().0),
        Status::Infeasible => None,
        s => panic!("the search ended {s:?} on a small DAG"),
    }
}

/// proofs/GRAPH-BOUNDS.md §3's example at capacity `cap`: s → a → b → c,
/// a → e, c → e; |s| = |e| = 1, |a| = |b| = |c| = 2, every duration 1. At 5 B
/// every schedule recomputes (the optimum is 6 against Σd = 5); at 6 B the
/// order s a b c e fits.
pub fn bounds_example(cap: u64) -> Instance {
    let spec = DagSpec {
        nodes: vec![
            (0, 1, 1, 0),
            (0b1, 2, 1, 0),
            (0b1, 2, 1, 0),
            (0b1, 2, 1, 0),
            (0b101, 1, 1, 0),
        ],
        slack: 0,
    };
    dag_at(&spec, cap, false)
}
