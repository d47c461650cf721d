//! `graph`: rematerialisation (and, as an option, offloading) on a computation
//! graph, the setting of Checkmate (MLSys 2020) and MOCCASIN (ICML 2023).
//! Mapping and the differences from both tools: `models/MODEL.md` §4.7.
//!
//! Owns: the file format ([`Graph`]: nodes with their duration, output size and
//! inputs; the GPU memory; an optional offloading link; an optional baseline
//! order), its validation (errors name the field: cycles, dangling inputs,
//! duplicate names and inputs, zero durations, overflow) and the compilation to
//! the core model, plus the static views the importers, heuristics and bounds
//! share: a topological order ([`Graph::topological_order`]), the baseline order
//! ([`Graph::baseline`]) and the releases of a node sequence under the graph
//! tools' rule ([`Graph::releases`]).
//! Must not import: schedules, semantics, the checker, solvers.
//!
//! The compiled instance is one-shot with a free order. Ids are stable: node `i`
//! (its position in `nodes`) is op `i` and its output is tensor `i`, both named
//! after the node. Op `i` reads the outputs of `nodes[i].inputs`, produces
//! tensor `i`, is required (at least one run) and may run again (recompute);
//! it frees nothing by itself: schedules release outputs with explicit deletes.

use super::{invalid, BandwidthFile};
use crate::model::*;
use crate::units::{Bytes, Ticks};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One node of the graph: an operation and its one output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Node {
    pub name: String,
    /// Ticks (Checkmate's `cost_cpu`, MOCCASIN's `duration`); at least 1: a
    /// release at the end of a zero-duration op would come before the op in
    /// the same-instant order (MODEL.md §2.4). `offcert import graph` maps a
    /// cost of 0 to 1 tick and says how many it mapped.
    pub duration: i64,
    /// Bytes of its output (Checkmate's `cost_ram`, MOCCASIN's `out_cost`).
    pub memory: u64,
    /// The nodes whose outputs it reads, by index into `nodes`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<usize>,
    /// Checkmate's `backward` flag (informative: the tensor kind `gradient`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backward: bool,
    /// May its output move over the link when `offload` is given (default yes)?
    #[serde(default = "yes", skip_serializing_if = "Clone::clone")]
    pub transferable: bool,
}

fn yes() -> bool {
    true
}

fn half() -> Duplex {
    Duplex::HalfDuplex
}

/// Offloading, off by default (pure rematerialisation: Checkmate's and
/// MOCCASIN's setting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Offload {
    /// β.
    pub bandwidth: BandwidthFile,
    #[serde(default = "half")]
    pub duplex: Duplex,
}

/// A computation graph (`"family": "graph"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Graph {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub nodes: Vec<Node>,
    /// M_GPU in bytes (the budget B).
    pub gpu_memory: u64,
    /// The link, when outputs may be offloaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offload: Option<Offload>,
    /// The baseline topological order (MOCCASIN's `graph.order`), by node
    /// index; absent: [`Graph::topological_order`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Vec<usize>>,
    /// The release rule (`after_end` unless the file selects the relaxation).
    #[serde(default, skip_serializing_if = "ReleaseRule::is_default")]
    pub release: ReleaseRule,
    /// The allocator R7 counts with (`models/MODEL.md` §2.8; `exact` unless the file selects another).
    #[serde(default, skip_serializing_if = "Allocator::is_default")]
    pub allocator: Allocator,
}

/// The most nodes a file may have (the benchmark's largest has 1000).
pub const MAX_NODES: usize = 1 << 20;

impl Graph {
    pub fn n(&self) -> usize {
        self.nodes.len()
    }

    /// Op of node `i` (its index).
    pub fn op_id(&self, i: usize) -> OpId {
        OpId(i as u32)
    }

    /// Tensor holding node `i`'s output.
    pub fn tensor_id(&self, i: usize) -> TensorId {
        TensorId(i as u32)
    }

    /// Per node, the nodes that read its output (in increasing index).
    pub fn consumers(&self) -> Vec<Vec<usize>> {
        let mut c = vec![Vec::new(); self.n()];
        for (i, nd) in self.nodes.iter().enumerate() {
            for &j in &nd.inputs {
                if j < self.n() {
                    c[j].push(i);
                }
            }
        }
        c
    }

    /// Validate the file's values, naming the offending field.
    pub fn validate(&self) -> Result<(), ModelError> {
        if self.nodes.is_empty() {
            return Err(invalid("nodes", "needs at least one node"));
        }
        if self.n() > MAX_NODES {
            return Err(invalid("nodes", format!("more than {MAX_NODES} nodes")));
        }
        let mut names: HashMap<&str, usize> = HashMap::new();
        let (mut bytes, mut ticks) = (0u128, 0i128);
        for (i, nd) in self.nodes.iter().enumerate() {
            if nd.name.is_empty() {
                return Err(invalid(format!("nodes[{i}].name"), "empty name"));
            }
            if let Some(j) = names.insert(nd.name.as_str(), i) {
                return Err(ModelError::DuplicateName {
                    field: format!("nodes[{i}].name"),
                    name: format!("{} (also nodes[{j}])", nd.name),
                });
            }
            if nd.duration < 1 {
                return Err(invalid(
                    format!("nodes[{i}].duration"),
                    "must be at least 1 tick (a release after a zero-duration op would precede it)",
                ));
            }
            self.validate_inputs(i, nd)?;
            bytes += nd.memory as u128;
            ticks += nd.duration as i128;
        }
        if bytes > (u64::MAX >> 2) as u128 {
            return Err(ModelError::Overflow {
                field: "nodes".into(),
                message: "total memory exceeds 2^62 bytes".into(),
            });
        }
        // The exact methods multiply the total compute by the node count.
        if ticks.saturating_mul(self.n() as i128) > (i64::MAX >> 2) as i128 {
            return Err(ModelError::Overflow {
                field: "nodes".into(),
                message: "total duration × node count exceeds 2^61 ticks".into(),
            });
        }
        if let Some(off) = &self.offload {
            let ok = match off.bandwidth {
                BandwidthFile::PerTick(b) => b > 0,
                BandwidthFile::Ratio { bytes, ticks } => bytes > 0 && ticks > 0,
            };
            if !ok {
                return Err(invalid("offload.bandwidth", "must be positive"));
            }
        }
        self.topological_order()?;
        if let Some(b) = &self.baseline {
            self.validate_order("baseline", b)?;
        }
        Ok(())
    }

    fn validate_inputs(&self, i: usize, nd: &Node) -> Result<(), ModelError> {
        let mut seen = std::collections::HashSet::new();
        for (k, &j) in nd.inputs.iter().enumerate() {
            let field = || format!("nodes[{i}].inputs[{k}]");
            if j >= self.n() {
                return Err(invalid(
                    field(),
                    format!("node {j} does not exist ({} nodes)", self.n()),
                ));
            }
            if j == i {
                return Err(invalid(field(), "a node cannot read its own output"));
            }
            if !seen.insert(j) {
                return Err(invalid(field(), format!("node {j} is listed twice")));
            }
        }
        Ok(())
    }

    /// `order` lists every node once, each after its inputs.
    pub fn validate_order(&self, field: &str, order: &[usize]) -> Result<(), ModelError> {
        if order.len() != self.n() {
            return Err(invalid(
                field,
                format!("lists {} nodes, the graph has {}", order.len(), self.n()),
            ));
        }
        let mut pos = vec![usize::MAX; self.n()];
        for (p, &v) in order.iter().enumerate() {
            if v >= self.n() {
                return Err(invalid(
                    format!("{field}[{p}]"),
                    format!("node {v} does not exist"),
                ));
            }
            if pos[v] != usize::MAX {
                return Err(invalid(
                    format!("{field}[{p}]"),
                    format!("node {v} is listed twice"),
                ));
            }
            pos[v] = p;
        }
        for (p, &v) in order.iter().enumerate() {
            if let Some(&u) = self.nodes[v].inputs.iter().find(|&&u| pos[u] > p) {
                return Err(invalid(
                    format!("{field}[{p}]"),
                    format!("node {v} comes before its input {u}"),
                ));
            }
        }
        Ok(())
    }

    /// A topological order: the ready node of least index first (so node ids
    /// in increasing order whenever they are topological already). A cycle is
    /// an error naming a node on it.
    pub fn topological_order(&self) -> Result<Vec<usize>, ModelError> {
        let n = self.n();
        let mut indeg: Vec<usize> = self.nodes.iter().map(|nd| nd.inputs.len()).collect();
        let cons = self.consumers();
        let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = (0..n)
            .filter(|&i| indeg[i] == 0)
            .map(std::cmp::Reverse)
            .collect();
        let mut out = Vec::with_capacity(n);
        while let Some(std::cmp::Reverse(v)) = ready.pop() {
            out.push(v);
            for &c in &cons[v] {
                indeg[c] -= 1;
                if indeg[c] == 0 {
                    ready.push(std::cmp::Reverse(c));
                }
            }
        }
        if out.len() < n {
            let v = (0..n).find(|&i| indeg[i] > 0).unwrap_or(0);
            return Err(invalid(
                format!("nodes[{v}].inputs"),
                format!(
                    "the graph has a cycle through node {v} (`{}`)",
                    self.nodes[v].name
                ),
            ));
        }
        Ok(out)
    }

    /// The baseline order: `baseline` where the file has one, else
    /// [`Graph::topological_order`] (node ids increasing when topological).
    pub fn baseline(&self) -> Result<Vec<usize>, ModelError> {
        match &self.baseline {
            Some(b) => Ok(b.clone()),
            None => self.topological_order(),
        }
    }

    /// The releases of a node sequence (repeats = recomputations) under the
    /// graph tools' rule (MOCCASIN's `get_mem_from_schedule`, Checkmate's
    /// `schedule_from_rs`): each computed copy serves the readers up to the
    /// node's next computation and is released at the end of its last reader
    /// there, or at the end of its own computation when none reads it. Result:
    /// `(position, node)`, the copy of `node` released at the end of the op at
    /// `position`, sorted by position. A reader with no earlier copy of its
    /// input is not the releases' business (the checker reports it).
    pub fn releases(&self, seq: &[usize]) -> Vec<(usize, usize)> {
        // For each position p of node v: the last later position that reads this copy.
        let mut last: Vec<usize> = (0..seq.len()).collect();
        let mut current: Vec<Option<usize>> = vec![None; self.n()];
        for (p, &v) in seq.iter().enumerate() {
            for &u in &self.nodes[v].inputs {
                if let Some(q) = current[u] {
                    last[q] = p;
                }
            }
            current[v] = Some(p);
        }
        let mut out: Vec<(usize, usize)> =
            seq.iter().enumerate().map(|(p, &v)| (last[p], v)).collect();
        out.sort();
        out
    }

    /// The peak memory of a node sequence under the graph tools' rule and
    /// offcert's (MODEL.md §4.7: at each step the node being computed plus
    /// every live output, its inputs included). A model value for budgets and
    /// tests; reported figures come from the checker.
    pub fn sequence_peak(&self, seq: &[usize]) -> u64 {
        let mut rel: Vec<Vec<usize>> = vec![Vec::new(); seq.len()];
        for (p, v) in self.releases(seq) {
            rel[p].push(v);
        }
        let (mut cur, mut peak) = (0u64, 0u64);
        for (p, &v) in seq.iter().enumerate() {
            cur += self.nodes[v].memory;
            peak = peak.max(cur);
            for &u in &rel[p] {
                cur -= self.nodes[u].memory;
            }
        }
        peak
    }

    /// The least GPU memory with which any schedule exists: the largest node
    /// footprint (its output and its inputs, all resident while it runs).
    pub fn least_memory(&self) -> u64 {
        self.nodes
            .iter()
            .map(|nd| nd.memory + nd.inputs.iter().map(|&j| self.nodes[j].memory).sum::<u64>())
            .max()
            .unwrap_or(0)
    }

    /// Compile to the core model (after [`Graph::validate`]).
    pub fn compile(&self) -> Result<Instance, ModelError> {
        self.validate()?;
        let offload = self.offload.is_some();
        let tensors = self
            .nodes
            .iter()
            .map(|nd| Tensor {
                name: nd.name.clone(),
                size: Bytes(nd.memory),
                kind: if nd.backward {
                    TensorKind::Gradient
                } else {
                    TensorKind::Activation
                },
                transferable: offload && nd.transferable,
                initial: Placement::Nowhere,
            })
            .collect();
        let ops = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, nd)| Op {
                name: nd.name.clone(),
                duration: Ticks(nd.duration),
                reads: nd.inputs.iter().map(|&j| self.tensor_id(j)).collect(),
                produces: vec![self.tensor_id(i)],
                consumes: vec![],
                frees: vec![],
                modifies: vec![],
                temp: Bytes(0),
                device: Device::Gpu,
                required: true,
                after: vec![],
            })
            .collect();
        let (duplex, bandwidth) = match &self.offload {
            Some(o) => (o.duplex, o.bandwidth.to_bandwidth()),
            // Nothing is transferable: the link is never used.
            None => (Duplex::HalfDuplex, crate::units::Bandwidth::new(1, 1)),
        };
        Ok(Instance {
            name: self.name.clone(),
            family: "graph".into(),
            tensors,
            ops,
            order: ComputeOrder::Free,
            machine: Machine {
                gpu_capacity: Bytes(self.gpu_memory),
                cpu_capacity: None,
                duplex,
                bandwidth,
            },
            mode: Mode::OneShot,
            release: self.release,
            allocator: self.allocator,
            groups: vec![],
        })
    }
}
