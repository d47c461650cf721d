//! The core model into which every problem family compiles: tensors, compute
//! operations, compute streams, the transfer link and the machine's capacities.
//!
//! Owns: [`Instance`] and its invariants (checked once, in [`Instance::validate`]).
//! Must not import: schedules, semantics, the checker, solvers or front-ends.
//! Front-ends (`crate::family`) build an `Instance`; everything downstream reads it.
//!
//! Extension points for later families, so they fit without a rewrite:
//! - rematerialisation: an op may appear several times in a [`ComputeOrder::Fixed`]
//!   sequence, or run freely under [`ComputeOrder::Free`]; forward variants are
//!   separate ops with `required: false`;
//! - OFFMATE: tensor kinds for parameters and optimizer states, and ops placed on a
//!   CPU stream ([`Device::Cpu`]) that read and modify CPU copies;
//! - out-of-core: any topologically ordered op sequence over shared tensors is a
//!   `Fixed` order in the `core` family.

use crate::units::{Bandwidth, Bytes, Ticks};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

mod allocator;
pub use allocator::Allocator;

/// Index of a tensor in [`Instance::tensors`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TensorId(pub u32);

/// Index of an operation in [`Instance::ops`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OpId(pub u32);

/// Index of a variant group in [`Instance::groups`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GroupId(pub u32);

impl GroupId {
    pub fn ix(self) -> usize {
        self.0 as usize
    }
}

impl TensorId {
    pub fn ix(self) -> usize {
        self.0 as usize
    }
}
impl OpId {
    pub fn ix(self) -> usize {
        self.0 as usize
    }
}

/// What a tensor is; informative except where a rule says otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TensorKind {
    #[default]
    Activation,
    Gradient,
    Weight,
    WeightGradient,
    OptimizerState,
    Input,
    Other,
}

/// Where a tensor has a copy before the first event of a one-shot schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Not materialised: some op produces it.
    #[default]
    Nowhere,
    Gpu,
    Cpu,
    Both,
}

impl Placement {
    pub fn on_gpu(self) -> bool {
        matches!(self, Placement::Gpu | Placement::Both)
    }
    pub fn on_cpu(self) -> bool {
        matches!(self, Placement::Cpu | Placement::Both)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tensor {
    pub name: String,
    pub size: Bytes,
    #[serde(default)]
    pub kind: TensorKind,
    /// May the schedule move it over the link? (Activation paper, assumption (A): y is never transferred.)
    #[serde(default = "yes")]
    pub transferable: bool,
    /// Copies at time 0 of a one-shot schedule (cyclic schedules declare their own state).
    #[serde(default)]
    pub initial: Placement,
}

fn yes() -> bool {
    true
}

/// Which processor runs an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Device {
    /// The GPU compute stream: inputs must be resident on the GPU.
    #[default]
    Gpu,
    /// A CPU resource (OFFMATE's CPU optimiser): inputs must have current CPU copies.
    Cpu,
}

/// One compute operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    pub name: String,
    pub duration: Ticks,
    /// Tensors that must be present, in their current version, when it starts.
    #[serde(default)]
    pub reads: Vec<TensorId>,
    /// Tensors it creates: allocated at its start, ready at its end.
    #[serde(default)]
    pub produces: Vec<TensorId>,
    /// Tensors read and then released at its start, before its outputs take memory
    /// (in-place style; gives the weight paper's eq. (1) exactly).
    #[serde(default)]
    pub consumes: Vec<TensorId>,
    /// Tensors released at its end.
    #[serde(default)]
    pub frees: Vec<TensorId>,
    /// Tensors whose value it changes: a new version exists at its end.
    #[serde(default)]
    pub modifies: Vec<TensorId>,
    /// Scratch memory held while it runs.
    #[serde(default)]
    pub temp: Bytes,
    #[serde(default)]
    pub device: Device,
    /// Must it run (at least once)? Variants of a rematerialised op may be optional.
    /// A member of a variant group must not be `required` (the group decides).
    #[serde(default = "yes")]
    pub required: bool,
    /// Precedence without data (G6, OFFMATE's CPU management time H): every run
    /// of this op starts at or after the end of the latest run of each listed op
    /// that started before it (`models/MODEL.md` §2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<OpId>,
}

/// How often the members of a variant group run, together, per schedule
/// (one-shot) or per period (cyclic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Multiplicity {
    /// Exactly one run of exactly one member (a block's option; the GPU or the
    /// CPU Adam step of one parameter: a double update is a violation).
    #[default]
    ExactlyOnce,
    /// At least one run of some member.
    AtLeastOnce,
}

/// A variant group (G1): interchangeable ops, of which the schedule runs one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub name: String,
    /// Its member ops; an op belongs to at most one group.
    pub members: Vec<OpId>,
    #[serde(default)]
    pub runs: Multiplicity,
}

/// A core-model feature that the exact methods and the simulator do not encode
/// (they refuse an instance that uses one, naming it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Extension {
    /// Variant groups (G1, R11).
    Groups,
    /// A slotted compute order (G2, R12).
    Slots,
    /// Precedences without data, `Op.after` (G6, R13).
    After,
}

impl std::fmt::Display for Extension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Extension::Groups => "variant groups (R11)",
            Extension::Slots => "a slotted compute order (R12)",
            Extension::After => "precedences without data, `after` (R13)",
        })
    }
}

/// How the GPU↔CPU link is shared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Duplex {
    /// One link for both directions: at most one transfer at a time.
    HalfDuplex,
    /// One offload and one prefetch may run at once.
    FullDuplex,
}

/// Direction of a transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// GPU → CPU.
    Offload,
    /// CPU → GPU.
    Prefetch,
}

/// A transfer channel: the shared link, or one direction of a full-duplex link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    Link,
    DeviceToHost,
    HostToDevice,
}

impl Channel {
    pub fn name(self) -> &'static str {
        match self {
            Channel::Link => "link",
            Channel::DeviceToHost => "d2h",
            Channel::HostToDevice => "h2d",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    pub gpu_capacity: Bytes,
    #[serde(default)]
    pub cpu_capacity: Option<Bytes>,
    pub duplex: Duplex,
    pub bandwidth: Bandwidth,
}

impl Machine {
    /// The channel a transfer in `dir` occupies.
    pub fn channel(&self, dir: Direction) -> Channel {
        match (self.duplex, dir) {
            (Duplex::HalfDuplex, _) => Channel::Link,
            (Duplex::FullDuplex, Direction::Offload) => Channel::DeviceToHost,
            (Duplex::FullDuplex, Direction::Prefetch) => Channel::HostToDevice,
        }
    }
    pub fn channels(&self) -> Vec<Channel> {
        match self.duplex {
            Duplex::HalfDuplex => vec![Channel::Link],
            Duplex::FullDuplex => vec![Channel::DeviceToHost, Channel::HostToDevice],
        }
    }
}

/// The order in which ops run on their stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "ops")]
pub enum ComputeOrder {
    /// Exactly this sequence (per device, the subsequence of its ops), each entry once.
    Fixed(Vec<OpId>),
    /// Any order the dependencies allow; every required op at least once.
    Free,
    /// A GPU sequence of slots (G2), each a group: the GPU runs of slotted
    /// groups' members, in start order, fill the slots in order, one member
    /// each; a slot whose group ran on another device (the CPU Adam step) is
    /// skipped. Ops outside slotted groups are unordered (and run at least once
    /// if `required`).
    Slots(Vec<GroupId>),
}

/// One-shot (a single training step, minimise its makespan) or cyclic
/// (steady-state iterations, minimise the period).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    OneShot,
    Cyclic,
}

/// When an operation lets go of the tensors it uses (`models/MODEL.md` §2.5, R10).
///
/// The default, [`ReleaseRule::AfterEnd`], is what a GPU can run: an op holds
/// its operands (reads it does not consume, productions, modifications) until it
/// ends, and a transfer holds its GPU buffer until it ends. [`ReleaseRule::AfterStart`]
/// is a named relaxation, optimistic and never the default: "an op needs its
/// inputs only at its start", so a release may fall while the op still reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReleaseRule {
    #[default]
    AfterEnd,
    AfterStart,
}

impl ReleaseRule {
    pub fn is_default(&self) -> bool {
        *self == ReleaseRule::AfterEnd
    }
    pub fn as_str(self) -> &'static str {
        match self {
            ReleaseRule::AfterEnd => "after_end",
            ReleaseRule::AfterStart => "after_start",
        }
    }
    /// What a report says next to the rule's name.
    pub fn describe(self) -> &'static str {
        match self {
            ReleaseRule::AfterEnd => "an operation holds its operands until it ends",
            ReleaseRule::AfterStart => {
                "relaxation (optimistic): an op needs its inputs only at its start"
            }
        }
    }
}

impl std::fmt::Display for ReleaseRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ReleaseRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "after_end" => Ok(ReleaseRule::AfterEnd),
            "after_start" => Ok(ReleaseRule::AfterStart),
            _ => Err(format!(
                "unknown release rule `{s}` (after_end or after_start)"
            )),
        }
    }
}

/// A compiled problem instance. Build it with a front-end or [`Instance::validate`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instance {
    pub name: String,
    /// The family it came from ("activation_chain", "weight_chain", "core").
    pub family: String,
    pub tensors: Vec<Tensor>,
    pub ops: Vec<Op>,
    pub order: ComputeOrder,
    pub machine: Machine,
    pub mode: Mode,
    /// Which release rule the replay applies (the digest covers it).
    #[serde(default)]
    pub release: ReleaseRule,
    /// Which allocator R7 counts with (`models/MODEL.md` §2.8; the digest
    /// covers it when it is not the default `exact`).
    #[serde(default, skip_serializing_if = "Allocator::is_default")]
    pub allocator: Allocator,
    /// Variant groups (G1); empty for families without op variants.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<Group>,
}

/// Why an instance is not well formed. The `field` is a path into the instance
/// (for example `ops[3].reads[1]`), so a user can find the offending value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelError {
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("{field}: duplicate name `{name}`")]
    DuplicateName { field: String, name: String },
    #[error("{field}: unknown name `{name}`")]
    UnknownName { field: String, name: String },
    #[error("{field}: arithmetic overflow ({message})")]
    Overflow { field: String, message: String },
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> ModelError {
    ModelError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

impl Instance {
    pub fn tensor(&self, t: TensorId) -> &Tensor {
        &self.tensors[t.ix()]
    }
    pub fn op(&self, o: OpId) -> &Op {
        &self.ops[o.ix()]
    }
    pub fn tensor_by_name(&self, name: &str) -> Option<TensorId> {
        self.tensors
            .iter()
            .position(|t| t.name == name)
            .map(|i| TensorId(i as u32))
    }
    pub fn op_by_name(&self, name: &str) -> Option<OpId> {
        self.ops
            .iter()
            .position(|o| o.name == name)
            .map(|i| OpId(i as u32))
    }
    /// Name → id maps, built once for parsers that resolve many names.
    pub fn name_maps(&self) -> (HashMap<&str, TensorId>, HashMap<&str, OpId>) {
        let t = self
            .tensors
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.as_str(), TensorId(i as u32)))
            .collect();
        let o = self
            .ops
            .iter()
            .enumerate()
            .map(|(i, o)| (o.name.as_str(), OpId(i as u32)))
            .collect();
        (t, o)
    }

    /// Is the tensor persistent across iterations (no op produces it)? Such tensors
    /// (weights, the input buffer) are needed in every period of a cyclic schedule.
    pub fn persistent(&self) -> Vec<bool> {
        let mut p = vec![true; self.tensors.len()];
        for op in &self.ops {
            for t in &op.produces {
                p[t.ix()] = false;
            }
        }
        p
    }

    /// The ops every schedule runs: the fixed order (with repeats), or every
    /// required op of a free or slotted order (group members are never
    /// `required`; their groups are counted by [`Instance::group_minimum`]).
    fn ops_that_run(&self) -> Vec<OpId> {
        match &self.order {
            ComputeOrder::Fixed(v) => v.clone(),
            ComputeOrder::Free | ComputeOrder::Slots(_) => (0..self.ops.len() as u32)
                .map(OpId)
                .filter(|o| self.op(*o).required)
                .collect(),
        }
    }

    /// The extensions (groups, slots, `after`) this instance uses, in that
    /// order; empty for every instance of the chain families.
    pub fn extensions(&self) -> Vec<Extension> {
        let mut v = Vec::new();
        if !self.groups.is_empty() {
            v.push(Extension::Groups);
        }
        if matches!(self.order, ComputeOrder::Slots(_)) {
            v.push(Extension::Slots);
        }
        if self.ops.iter().any(|o| !o.after.is_empty()) {
            v.push(Extension::After);
        }
        v
    }

    /// The group an op belongs to, if any.
    pub fn group_of(&self, o: OpId) -> Option<GroupId> {
        self.groups
            .iter()
            .position(|g| g.members.contains(&o))
            .map(|i| GroupId(i as u32))
    }

    /// The least duration among a group's members, and the device they all run
    /// on (`None` when members sit on different devices).
    pub fn group_minimum(&self, g: GroupId) -> (Ticks, Option<Device>) {
        let members = &self.groups[g.ix()].members;
        let least = members
            .iter()
            .map(|o| self.op(*o).duration)
            .min()
            .unwrap_or(Ticks::ZERO);
        let first = members.first().map(|o| self.op(*o).device);
        let same = members.iter().all(|o| Some(self.op(*o).device) == first);
        (least, if same { first } else { None })
    }

    /// Sum of all compute durations in the fixed order (or of required ops),
    /// plus each group's cheapest member (G10).
    pub fn total_compute(&self) -> Ticks {
        let ops: i64 = self
            .ops_that_run()
            .iter()
            .map(|o| self.op(*o).duration.0)
            .sum();
        let groups: i64 = (0..self.groups.len() as u32)
            .map(|g| self.group_minimum(GroupId(g)).0 .0)
            .sum();
        Ticks(ops + groups)
    }

    /// The compute on the busiest device: each device runs one op at a time
    /// (R2), so this bounds every makespan (and period) from below, whereas
    /// [`Instance::total_compute`] does not once CPU and GPU ops overlap. A
    /// group counts on a device only when all its members run there, at its
    /// cheapest member's duration.
    pub fn busiest_device_compute(&self) -> Ticks {
        let ids = self.ops_that_run();
        let on = |d: Device| -> i64 {
            let ops: i64 = ids
                .iter()
                .map(|o| self.op(*o))
                .filter(|op| op.device == d)
                .map(|op| op.duration.0)
                .sum();
            let groups: i64 = (0..self.groups.len() as u32)
                .map(|g| self.group_minimum(GroupId(g)))
                .filter(|(_, dev)| *dev == Some(d))
                .map(|(t, _)| t.0)
                .sum();
            ops + groups
        };
        Ticks(on(Device::Gpu).max(on(Device::Cpu)))
    }

    /// Check every invariant the rest of the crate relies on: ids in range, names
    /// unique, positive bandwidth, non-negative durations, and no sum of sizes or
    /// durations that overflows 64 bits.
    pub fn validate(&self) -> Result<(), ModelError> {
        let nt = self.tensors.len();
        let no = self.ops.len();
        if nt > u32::MAX as usize || no > u32::MAX as usize {
            return Err(invalid("tensors", "too many tensors or ops"));
        }
        let mut total = self.validate_tensors()?;
        let mut seen = HashMap::new();
        let mut time = Ticks::ZERO;
        for (i, op) in self.ops.iter().enumerate() {
            if op.name.is_empty() {
                return Err(invalid(format!("ops[{i}].name"), "empty name"));
            }
            if seen.insert(op.name.as_str(), i).is_some() {
                return Err(ModelError::DuplicateName {
                    field: format!("ops[{i}].name"),
                    name: op.name.clone(),
                });
            }
            if op.duration.0 < 0 {
                return Err(invalid(format!("ops[{i}].duration"), "must be >= 0"));
            }
            time = time
                .checked_add(op.duration)
                .ok_or_else(|| ModelError::Overflow {
                    field: format!("ops[{i}].duration"),
                    message: "total duration exceeds 2^63-1 ticks".into(),
                })?;
            total = total
                .checked_add(op.temp)
                .ok_or_else(|| ModelError::Overflow {
                    field: format!("ops[{i}].temp"),
                    message: "total memory exceeds 2^64-1 bytes".into(),
                })?;
            validate_op_tensors(i, op, nt)?;
        }
        self.validate_order()?;
        self.validate_groups()?;
        self.validate_bandwidth()
    }

    /// Groups (G1), slots (G2) and precedences (G6): ids in range, names
    /// unique, an op in at most one group, members not `required`, a slot
    /// names a group at most once, and an op is not its own predecessor.
    fn validate_groups(&self) -> Result<(), ModelError> {
        let no = self.ops.len();
        let mut owner: Vec<Option<usize>> = vec![None; no];
        let mut names = HashMap::new();
        for (g, grp) in self.groups.iter().enumerate() {
            if grp.name.is_empty() {
                return Err(invalid(format!("groups[{g}].name"), "empty name"));
            }
            if names.insert(grp.name.as_str(), g).is_some() {
                return Err(ModelError::DuplicateName {
                    field: format!("groups[{g}].name"),
                    name: grp.name.clone(),
                });
            }
            if grp.members.is_empty() {
                return Err(invalid(format!("groups[{g}].members"), "empty group"));
            }
            for (j, o) in grp.members.iter().enumerate() {
                let field = format!("groups[{g}].members[{j}]");
                if o.ix() >= no {
                    return Err(invalid(field, format!("op id {} out of range", o.0)));
                }
                if let Some(h) = owner[o.ix()] {
                    return Err(invalid(field, format!("op already in group {h}")));
                }
                owner[o.ix()] = Some(g);
                if self.ops[o.ix()].required {
                    return Err(invalid(
                        field,
                        "a group member must have `required: false` (its group decides)",
                    ));
                }
            }
        }
        if let ComputeOrder::Slots(slots) = &self.order {
            let mut seen = vec![false; self.groups.len()];
            for (k, g) in slots.iter().enumerate() {
                if g.ix() >= self.groups.len() {
                    return Err(invalid(
                        format!("order[{k}]"),
                        format!("group id {} out of range", g.0),
                    ));
                }
                if std::mem::replace(&mut seen[g.ix()], true) {
                    return Err(invalid(format!("order[{k}]"), "a group fills one slot"));
                }
            }
        }
        for (i, op) in self.ops.iter().enumerate() {
            for (j, q) in op.after.iter().enumerate() {
                let field = format!("ops[{i}].after[{j}]");
                if q.ix() >= no {
                    return Err(invalid(field, format!("op id {} out of range", q.0)));
                }
                if q.ix() == i {
                    return Err(invalid(field, "an op cannot follow itself"));
                }
            }
        }
        Ok(())
    }

    /// Tensor names non-empty and unique; the total size fits 64 bits.
    fn validate_tensors(&self) -> Result<Bytes, ModelError> {
        let mut seen = HashMap::new();
        let mut total = Bytes::ZERO;
        for (i, t) in self.tensors.iter().enumerate() {
            if t.name.is_empty() {
                return Err(invalid(format!("tensors[{i}].name"), "empty name"));
            }
            if seen.insert(t.name.as_str(), i).is_some() {
                return Err(ModelError::DuplicateName {
                    field: format!("tensors[{i}].name"),
                    name: t.name.clone(),
                });
            }
            total = total
                .checked_add(t.size)
                .ok_or_else(|| ModelError::Overflow {
                    field: format!("tensors[{i}].size"),
                    message: "total tensor size exceeds 2^64-1 bytes".into(),
                })?;
        }
        Ok(total)
    }

    /// A fixed order names existing ops, and its total duration fits 63 bits.
    fn validate_order(&self) -> Result<(), ModelError> {
        if let ComputeOrder::Fixed(seq) = &self.order {
            for (k, o) in seq.iter().enumerate() {
                if o.ix() >= self.ops.len() {
                    return Err(invalid(
                        format!("order[{k}]"),
                        format!("op id {} out of range", o.0),
                    ));
                }
            }
            // Repeated ops would overflow too if the total is huge.
            let mut sum = Ticks::ZERO;
            for (k, o) in seq.iter().enumerate() {
                sum =
                    sum.checked_add(self.op(*o).duration)
                        .ok_or_else(|| ModelError::Overflow {
                            field: format!("order[{k}]"),
                            message: "total duration exceeds 2^63-1 ticks".into(),
                        })?;
            }
        }
        Ok(())
    }

    /// A positive bandwidth, and every transfer time fits 63 bits.
    fn validate_bandwidth(&self) -> Result<(), ModelError> {
        let bw = self.machine.bandwidth;
        if bw.bytes == 0 || bw.ticks == 0 {
            return Err(invalid(
                "machine.bandwidth",
                "bandwidth must be a positive fraction bytes/ticks",
            ));
        }
        for (i, t) in self.tensors.iter().enumerate() {
            if bw.min_ticks(t.size).is_none() {
                return Err(ModelError::Overflow {
                    field: format!("tensors[{i}].size"),
                    message: "transfer time exceeds 2^63-1 ticks".into(),
                });
            }
        }
        Ok(())
    }
}

/// An op's tensor lists name existing tensors; a consumed tensor is read; a
/// produced one is not.
fn validate_op_tensors(i: usize, op: &Op, nt: usize) -> Result<(), ModelError> {
    for (list, name) in [
        (&op.reads, "reads"),
        (&op.produces, "produces"),
        (&op.consumes, "consumes"),
        (&op.frees, "frees"),
        (&op.modifies, "modifies"),
    ] {
        for (j, t) in list.iter().enumerate() {
            if t.ix() >= nt {
                return Err(invalid(
                    format!("ops[{i}].{name}[{j}]"),
                    format!("tensor id {} out of range", t.0),
                ));
            }
        }
    }
    for (j, t) in op.consumes.iter().enumerate() {
        if !op.reads.contains(t) {
            return Err(invalid(
                format!("ops[{i}].consumes[{j}]"),
                "a consumed tensor must also be read",
            ));
        }
    }
    for (j, t) in op.produces.iter().enumerate() {
        if op.reads.contains(t) {
            return Err(invalid(
                format!("ops[{i}].produces[{j}]"),
                "an op cannot read what it produces (use `modifies`)",
            ));
        }
    }
    Ok(())
}
