//! The computation graph a compiled instance is, when it is one: the view the
//! graph methods (Checkmate's MILP, the exhaustive graph search, the graph
//! bounds and schedulers) work on, read from the core [`Instance`] alone, so
//! that none of them depends on a front-end's own types.
//!
//! A *DAG instance* (models/MODEL.md §4.7, the `graph` family; any core file of
//! the same shape): one-shot, free order, no extensions, every op on the GPU
//! and required, each op produces exactly one tensor that no other op produces,
//! reads only tensors that ops produce, consumes, frees and modifies nothing;
//! no tensor is on the GPU or the CPU at time 0; the reads form no cycle.
//! Node `v` is op `v`; its output is `out[v]`. `topo` lists the nodes in a
//! topological order (Kahn's, smallest op id first), `pos` is its inverse.
//!
//! Owns: [`Dag`], [`Dag::of`], [`NotADag`]. Must not import: schedules, the
//! checker, solvers.

use crate::model::{ComputeOrder, Device, Instance, Mode, Placement, TensorId};

/// Why an instance is not a DAG instance (the first reason found).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a computation graph: {0}")]
pub struct NotADag(pub String);

/// An instance as a computation graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dag {
    /// The output tensor of each node.
    pub out: Vec<TensorId>,
    /// The nodes whose outputs each node reads (ascending, no repeats).
    pub preds: Vec<Vec<usize>>,
    /// The nodes that read each node's output (ascending).
    pub succs: Vec<Vec<usize>>,
    /// |out(v)| in bytes.
    pub size: Vec<u64>,
    /// tmp(v) in bytes.
    pub temp: Vec<u64>,
    /// d(v) in ticks.
    pub duration: Vec<i64>,
    /// A topological order of the nodes.
    pub topo: Vec<usize>,
    /// `pos[v]`: the place of `v` in `topo`.
    pub pos: Vec<usize>,
    /// The GPU capacity in bytes.
    pub capacity: u64,
    /// Some output of positive size may be transferred (offloading enabled).
    pub movable: bool,
}

fn refuse(why: impl Into<String>) -> NotADag {
    NotADag(why.into())
}

impl Dag {
    /// The graph `inst` is, or why it is none.
    pub fn of(inst: &Instance) -> Result<Dag, NotADag> {
        if inst.mode != Mode::OneShot {
            return Err(refuse("a cyclic instance"));
        }
        if !matches!(inst.order, ComputeOrder::Free) {
            return Err(refuse("a fixed or slotted order"));
        }
        if let Some(e) = inst.extensions().first() {
            return Err(refuse(format!("it uses {e}")));
        }
        let n = inst.ops.len();
        let mut producer: Vec<Option<usize>> = vec![None; inst.tensors.len()];
        for (v, op) in inst.ops.iter().enumerate() {
            if op.device != Device::Gpu || !op.required {
                return Err(refuse(format!("op {} is optional or on the CPU", op.name)));
            }
            if op.produces.len() != 1
                || !op.consumes.is_empty()
                || !op.frees.is_empty()
                || !op.modifies.is_empty()
            {
                return Err(refuse(format!(
                    "op {} does not produce exactly one tensor, or releases or modifies one",
                    op.name
                )));
            }
            let t = op.produces[0];
            if producer[t.ix()].replace(v).is_some() {
                return Err(refuse(format!(
                    "two ops produce tensor {}",
                    inst.tensor(t).name
                )));
            }
        }
        if let Some(t) = inst
            .tensors
            .iter()
            .find(|t| t.initial != Placement::Nowhere)
        {
            return Err(refuse(format!("tensor {} exists at time 0", t.name)));
        }
        let mut preds = vec![Vec::new(); n];
        let mut succs = vec![Vec::new(); n];
        for (v, op) in inst.ops.iter().enumerate() {
            for t in &op.reads {
                let u = producer[t.ix()].ok_or_else(|| {
                    refuse(format!(
                        "op {} reads {}, which no op produces",
                        op.name,
                        inst.tensor(*t).name
                    ))
                })?;
                preds[v].push(u);
            }
            preds[v].sort_unstable();
            preds[v].dedup();
            for &u in &preds[v] {
                succs[u].push(v);
            }
        }
        let topo = kahn(&preds, &succs).ok_or_else(|| refuse("the reads form a cycle"))?;
        let mut pos = vec![0; n];
        for (k, &v) in topo.iter().enumerate() {
            pos[v] = k;
        }
        let out: Vec<TensorId> = inst.ops.iter().map(|o| o.produces[0]).collect();
        let size: Vec<u64> = out.iter().map(|t| inst.tensor(*t).size.0).collect();
        Ok(Dag {
            movable: out
                .iter()
                .any(|t| inst.tensor(*t).transferable && inst.tensor(*t).size.0 > 0),
            out,
            preds,
            succs,
            size,
            temp: inst.ops.iter().map(|o| o.temp.0).collect(),
            duration: inst.ops.iter().map(|o| o.duration.0).collect(),
            topo,
            pos,
            capacity: inst.machine.gpu_capacity.0,
        })
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.out.len()
    }

    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    /// Bytes in use while `v` runs with its inputs present: its inputs, its
    /// output and its scratch (R7 at its start, nothing else resident).
    pub fn footprint(&self, v: usize) -> u128 {
        let ins: u128 = self.preds[v].iter().map(|&u| self.size[u] as u128).sum();
        ins + self.size[v] as u128 + self.temp[v] as u128
    }

    /// Σ d(v): every node runs at least once, on one stream.
    pub fn total_duration(&self) -> i64 {
        self.duration.iter().sum()
    }
}

/// Kahn's algorithm, the smallest ready node first; `None` on a cycle.
fn kahn(preds: &[Vec<usize>], succs: &[Vec<usize>]) -> Option<Vec<usize>> {
    let n = preds.len();
    let mut left: Vec<usize> = preds.iter().map(Vec::len).collect();
    let mut ready: std::collections::BTreeSet<usize> = (0..n).filter(|&v| left[v] == 0).collect();
    let mut topo = Vec::with_capacity(n);
    while let Some(v) = ready.pop_first() {
        topo.push(v);
        for &w in &succs[v] {
            left[w] -= 1;
            if left[w] == 0 {
                ready.insert(w);
            }
        }
    }
    (topo.len() == n).then_some(topo)
}
