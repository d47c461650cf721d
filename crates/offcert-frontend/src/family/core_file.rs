//! `core`: the core model written directly, with names instead of ids. This is the
//! front-end for out-of-core sequences, OFFMATE-style instances and anything the
//! chain families do not cover.
//!
//! Owns: [`CoreFile`], its file form and compilation.
//! Must not import: solvers (`lp`, `exact`), bounds, heuristics, the simulator,
//! traces, reports, the CLI.

use super::{invalid, BandwidthFile};
use crate::model::*;
use crate::units::{Bytes, Ticks};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpFile {
    pub name: String,
    pub duration: i64,
    #[serde(default)]
    pub reads: Vec<String>,
    #[serde(default)]
    pub produces: Vec<String>,
    #[serde(default)]
    pub consumes: Vec<String>,
    #[serde(default)]
    pub frees: Vec<String>,
    #[serde(default)]
    pub modifies: Vec<String>,
    #[serde(default)]
    pub temp: u64,
    #[serde(default)]
    pub device: Device,
    #[serde(default = "yes")]
    pub required: bool,
    /// Precedence (G6): op names whose latest earlier run must have ended
    /// before this op starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
}

/// A variant group (G1) by name, its members by op name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupFile {
    pub name: String,
    pub members: Vec<String>,
    #[serde(default)]
    pub runs: Multiplicity,
}

fn yes() -> bool {
    true
}

/// An op named in `field`, or the error naming that field.
fn op_id(omap: &HashMap<&str, OpId>, field: String, name: &str) -> Result<OpId, ModelError> {
    omap.get(name)
        .copied()
        .ok_or_else(|| ModelError::UnknownName {
            field,
            name: name.to_string(),
        })
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OrderFile {
    /// The literal string "free".
    Free(String),
    Fixed(Vec<String>),
    /// `{"slots": [group names]}` (G2).
    Slots {
        slots: Vec<String>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreFile {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub tensors: Vec<Tensor>,
    pub ops: Vec<OpFile>,
    /// Variant groups (G1); absent for instances without op variants.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupFile>,
    pub order: OrderFile,
    pub gpu_memory: u64,
    #[serde(default)]
    pub cpu_memory: Option<u64>,
    pub duplex: Duplex,
    pub bandwidth: BandwidthFile,
    pub mode: Mode,
    /// The release rule (`after_end` unless the file selects the relaxation).
    #[serde(default, skip_serializing_if = "ReleaseRule::is_default")]
    pub release: ReleaseRule,
    /// The allocator R7 counts with (`models/MODEL.md` §2.8; `exact` unless the file selects another).
    #[serde(default, skip_serializing_if = "Allocator::is_default")]
    pub allocator: Allocator,
}

impl CoreFile {
    /// The core model this file names: names resolved to ids, each unknown
    /// name reported with the field it appears in. Errors come in file order:
    /// ops first, then groups, then the order.
    pub fn compile(&self) -> Result<Instance, ModelError> {
        let omap: HashMap<&str, OpId> = self
            .ops
            .iter()
            .enumerate()
            .map(|(i, o)| (o.name.as_str(), OpId(i as u32)))
            .collect();
        let ops = self.compile_ops(&omap)?;
        let groups = self.compile_groups(&omap)?;
        let order = self.compile_order(&omap)?;
        Ok(Instance {
            name: self.name.clone(),
            family: "core".into(),
            tensors: self.tensors.clone(),
            ops,
            order,
            machine: Machine {
                gpu_capacity: Bytes(self.gpu_memory),
                cpu_capacity: self.cpu_memory.map(Bytes),
                duplex: self.duplex,
                bandwidth: self.bandwidth.to_bandwidth(),
            },
            mode: self.mode,
            release: self.release,
            allocator: self.allocator,
            groups,
        })
    }

    /// The ops with their tensor lists and `after` resolved; an unknown name
    /// is reported as `ops[i].LIST[j]` so the user can find it in the file.
    fn compile_ops(&self, omap: &HashMap<&str, OpId>) -> Result<Vec<Op>, ModelError> {
        let tmap: HashMap<&str, TensorId> = self
            .tensors
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.as_str(), TensorId(i as u32)))
            .collect();
        let resolve =
            |i: usize, list: &str, names: &[String]| -> Result<Vec<TensorId>, ModelError> {
                names
                    .iter()
                    .enumerate()
                    .map(|(j, n)| {
                        tmap.get(n.as_str())
                            .copied()
                            .ok_or_else(|| ModelError::UnknownName {
                                field: format!("ops[{i}].{list}[{j}]"),
                                name: n.clone(),
                            })
                    })
                    .collect()
            };
        let mut ops = Vec::with_capacity(self.ops.len());
        for (i, o) in self.ops.iter().enumerate() {
            ops.push(Op {
                name: o.name.clone(),
                duration: Ticks(o.duration),
                reads: resolve(i, "reads", &o.reads)?,
                produces: resolve(i, "produces", &o.produces)?,
                consumes: resolve(i, "consumes", &o.consumes)?,
                frees: resolve(i, "frees", &o.frees)?,
                modifies: resolve(i, "modifies", &o.modifies)?,
                temp: Bytes(o.temp),
                device: o.device,
                required: o.required,
                after: o
                    .after
                    .iter()
                    .enumerate()
                    .map(|(j, n)| op_id(omap, format!("ops[{i}].after[{j}]"), n))
                    .collect::<Result<_, _>>()?,
            });
        }
        Ok(ops)
    }

    /// The variant groups (G1) with their members resolved to op ids; an
    /// unknown member is reported as `groups[g].members[j]`.
    fn compile_groups(&self, omap: &HashMap<&str, OpId>) -> Result<Vec<Group>, ModelError> {
        self.groups
            .iter()
            .enumerate()
            .map(|(g, grp)| {
                Ok(Group {
                    name: grp.name.clone(),
                    members: grp
                        .members
                        .iter()
                        .enumerate()
                        .map(|(j, n)| op_id(omap, format!("groups[{g}].members[{j}]"), n))
                        .collect::<Result<_, _>>()?,
                    runs: grp.runs,
                })
            })
            .collect::<Result<Vec<_>, ModelError>>()
    }

    /// The compute order: "free", a list of op names, or slots of group names
    /// (G2); an unknown name is reported as `order[k]` or `order.slots[k]`.
    fn compile_order(&self, omap: &HashMap<&str, OpId>) -> Result<ComputeOrder, ModelError> {
        let gmap: HashMap<&str, GroupId> = self
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| (g.name.as_str(), GroupId(i as u32)))
            .collect();
        Ok(match &self.order {
            OrderFile::Free(s) if s == "free" => ComputeOrder::Free,
            OrderFile::Free(s) => {
                return Err(invalid(
                    "order",
                    format!("expected \"free\" or a list of op names, got \"{s}\""),
                ))
            }
            OrderFile::Fixed(names) => ComputeOrder::Fixed(
                names
                    .iter()
                    .enumerate()
                    .map(|(k, n)| {
                        omap.get(n.as_str())
                            .copied()
                            .ok_or_else(|| ModelError::UnknownName {
                                field: format!("order[{k}]"),
                                name: n.clone(),
                            })
                    })
                    .collect::<Result<_, _>>()?,
            ),
            OrderFile::Slots { slots } => ComputeOrder::Slots(
                slots
                    .iter()
                    .enumerate()
                    .map(|(k, n)| {
                        gmap.get(n.as_str())
                            .copied()
                            .ok_or_else(|| ModelError::UnknownName {
                                field: format!("order.slots[{k}]"),
                                name: n.clone(),
                            })
                    })
                    .collect::<Result<_, _>>()?,
            ),
        })
    }

    /// The file form of any instance (used to export compiled families).
    pub fn from_instance(inst: &Instance) -> CoreFile {
        let tn = |v: &[TensorId]| v.iter().map(|t| inst.tensor(*t).name.clone()).collect();
        CoreFile {
            name: inst.name.clone(),
            note: Some(format!("compiled from family {}", inst.family)),
            tensors: inst.tensors.clone(),
            ops: inst
                .ops
                .iter()
                .map(|o| OpFile {
                    name: o.name.clone(),
                    duration: o.duration.0,
                    reads: tn(&o.reads),
                    produces: tn(&o.produces),
                    consumes: tn(&o.consumes),
                    frees: tn(&o.frees),
                    modifies: tn(&o.modifies),
                    temp: o.temp.0,
                    device: o.device,
                    required: o.required,
                    after: o.after.iter().map(|q| inst.op(*q).name.clone()).collect(),
                })
                .collect(),
            groups: inst
                .groups
                .iter()
                .map(|g| GroupFile {
                    name: g.name.clone(),
                    members: g.members.iter().map(|o| inst.op(*o).name.clone()).collect(),
                    runs: g.runs,
                })
                .collect(),
            order: match &inst.order {
                ComputeOrder::Free => OrderFile::Free("free".into()),
                ComputeOrder::Fixed(v) => {
                    OrderFile::Fixed(v.iter().map(|o| inst.op(*o).name.clone()).collect())
                }
                ComputeOrder::Slots(v) => OrderFile::Slots {
                    slots: v.iter().map(|g| inst.groups[g.ix()].name.clone()).collect(),
                },
            },
            gpu_memory: inst.machine.gpu_capacity.0,
            cpu_memory: inst.machine.cpu_capacity.map(|b| b.0),
            duplex: inst.machine.duplex,
            bandwidth: BandwidthFile::from_bandwidth(inst.machine.bandwidth),
            mode: inst.mode,
            release: inst.release,
            allocator: inst.allocator,
        }
    }
}
