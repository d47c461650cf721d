//! Problem families: the papers' own notations as JSON front-ends, each compiled
//! into the core [`Instance`](crate::model::Instance).
//!
//! Owns: the instance file format (tagged by `family`) and each family's mapping.
//! Must not import: schedules, semantics, the checker, solvers.
//! The mapping of each family to its paper's notation is written out in
//! `models/MODEL.md` §4.

pub mod activation_chain;
pub mod core_file;
pub mod dag;
pub mod graph;
pub mod graph_generate;
pub mod graph_import;
pub mod graph_solution;
pub mod offmate;
pub mod offmate_compile;
pub mod offmate_solution;
pub mod op_sequence;
pub mod remat_chain;
pub mod remat_import;
pub mod remat_sequence;
pub mod resnet50;
pub mod weight_chain;

use crate::model::{Allocator, Instance, ModelError, Placement, ReleaseRule, Tensor, TensorKind};
use crate::units::{Bandwidth, Bytes};
use serde::{Deserialize, Serialize};

pub use activation_chain::ActivationChain;
pub use core_file::CoreFile;
pub use graph::Graph;
pub use offmate::Offmate;
pub use op_sequence::OpSequence;
pub use remat_chain::RematChain;
pub use weight_chain::WeightChain;

/// The version of the instance file format (`docs/FORMATS.md`), the value of an
/// instance file's optional `format` field. A file without it reads as this
/// version; any other value is bad input (`io::parse_instance_file`).
pub const INSTANCE_FORMAT: &str = "offcert-instance/1";

/// An instance file, tagged by `family`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "family", rename_all = "snake_case")]
pub enum InstanceFile {
    ActivationChain(ActivationChain),
    WeightChain(WeightChain),
    RematChain(RematChain),
    Core(CoreFile),
    OpSequence(OpSequence),
    Offmate(Offmate),
    Graph(Graph),
}

impl InstanceFile {
    /// Compile to the core model and validate it.
    pub fn compile(&self) -> Result<Instance, ModelError> {
        let inst = match self {
            InstanceFile::ActivationChain(a) => a.compile()?,
            InstanceFile::WeightChain(w) => w.compile()?,
            InstanceFile::RematChain(r) => r.compile()?,
            InstanceFile::Core(c) => c.compile()?,
            InstanceFile::OpSequence(o) => o.compile()?,
            InstanceFile::Offmate(o) => o.compile()?,
            InstanceFile::Graph(g) => g.compile()?,
        };
        inst.validate()?;
        Ok(inst)
    }

    /// The file as written by offcert: its fields, `family` and
    /// `"format": "offcert-instance/1"`.
    pub fn to_json(&self) -> serde_json::Result<serde_json::Value> {
        let mut v = serde_json::to_value(self)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("format".into(), INSTANCE_FORMAT.into());
        }
        Ok(v)
    }

    /// The GPU memory the file gives, in bytes.
    pub fn gpu_memory(&self) -> u64 {
        match self {
            InstanceFile::ActivationChain(c) => c.gpu_memory,
            InstanceFile::WeightChain(w) => w.gpu_memory,
            InstanceFile::RematChain(c) => c.gpu_memory,
            InstanceFile::Core(c) => c.gpu_memory,
            InstanceFile::OpSequence(o) => o.gpu_memory,
            InstanceFile::Offmate(o) => o.gpu_memory.0,
            InstanceFile::Graph(g) => g.gpu_memory,
        }
    }

    /// How long a tick is, where the file knows it (imported programs).
    pub fn tick_unit(&self) -> Option<crate::units::TickUnit> {
        match self {
            InstanceFile::OpSequence(o) => o.tick,
            _ => None,
        }
    }

    /// The release rule the file selects (R10).
    pub fn release(&self) -> ReleaseRule {
        match self {
            InstanceFile::ActivationChain(a) => a.release,
            InstanceFile::WeightChain(w) => w.release,
            InstanceFile::RematChain(r) => r.release,
            InstanceFile::Core(c) => c.release,
            InstanceFile::OpSequence(o) => o.release,
            InstanceFile::Offmate(o) => o.release,
            InstanceFile::Graph(g) => g.release,
        }
    }

    /// Select a release rule (a CLI override).
    pub fn set_release(&mut self, r: ReleaseRule) {
        match self {
            InstanceFile::ActivationChain(a) => a.release = r,
            InstanceFile::WeightChain(w) => w.release = r,
            InstanceFile::RematChain(c) => c.release = r,
            InstanceFile::Core(c) => c.release = r,
            InstanceFile::OpSequence(o) => o.release = r,
            InstanceFile::Offmate(o) => o.release = r,
            InstanceFile::Graph(g) => g.release = r,
        }
    }

    /// The allocator the file selects (R7, `models/MODEL.md` §2.8).
    pub fn allocator(&self) -> Allocator {
        match self {
            InstanceFile::ActivationChain(a) => a.allocator,
            InstanceFile::WeightChain(w) => w.allocator,
            InstanceFile::RematChain(r) => r.allocator,
            InstanceFile::Core(c) => c.allocator,
            InstanceFile::OpSequence(o) => o.allocator,
            InstanceFile::Offmate(o) => o.allocator,
            InstanceFile::Graph(g) => g.allocator,
        }
    }

    /// Select an allocator (a CLI override).
    pub fn set_allocator(&mut self, a: Allocator) {
        match self {
            InstanceFile::ActivationChain(x) => x.allocator = a,
            InstanceFile::WeightChain(x) => x.allocator = a,
            InstanceFile::RematChain(x) => x.allocator = a,
            InstanceFile::Core(x) => x.allocator = a,
            InstanceFile::OpSequence(x) => x.allocator = a,
            InstanceFile::Offmate(x) => x.allocator = a,
            InstanceFile::Graph(x) => x.allocator = a,
        }
    }

    /// The weight chain, when the file is one.
    pub fn weight_chain(&self) -> Option<&WeightChain> {
        match self {
            InstanceFile::WeightChain(c) => Some(c),
            _ => None,
        }
    }

    /// The `offmate` instance, when the file is one.
    pub fn offmate(&self) -> Option<&Offmate> {
        match self {
            InstanceFile::Offmate(o) => Some(o),
            _ => None,
        }
    }

    /// The computation graph, when the file is one.
    pub fn graph(&self) -> Option<&Graph> {
        match self {
            InstanceFile::Graph(g) => Some(g),
            _ => None,
        }
    }

    /// The activation chain, when the file is one.
    pub fn activation_chain(&self) -> Option<&ActivationChain> {
        match self {
            InstanceFile::ActivationChain(c) => Some(c),
            _ => None,
        }
    }

    pub fn family(&self) -> &'static str {
        match self {
            InstanceFile::ActivationChain(_) => "activation_chain",
            InstanceFile::WeightChain(_) => "weight_chain",
            InstanceFile::RematChain(_) => "remat_chain",
            InstanceFile::Core(_) => "core",
            InstanceFile::OpSequence(_) => "op_sequence",
            InstanceFile::Offmate(_) => "offmate",
            InstanceFile::Graph(_) => "graph",
        }
    }
}

/// β in a file: a whole number of bytes per tick, or `{"bytes": b, "ticks": t}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum BandwidthFile {
    PerTick(u64),
    Ratio { bytes: u64, ticks: u64 },
}

impl BandwidthFile {
    pub fn to_bandwidth(self) -> Bandwidth {
        match self {
            BandwidthFile::PerTick(b) => Bandwidth::new(b, 1),
            BandwidthFile::Ratio { bytes, ticks } => Bandwidth::new(bytes, ticks),
        }
    }
    pub fn from_bandwidth(b: Bandwidth) -> BandwidthFile {
        if b.ticks == 1 {
            BandwidthFile::PerTick(b.bytes)
        } else {
            BandwidthFile::Ratio {
                bytes: b.bytes,
                ticks: b.ticks,
            }
        }
    }
}

/// A chain's activations `{prefix}0`, `{prefix}1`, …, one per size: the first
/// is the chain's input, on the GPU at time 0; the others are produced by the
/// forward pass (nowhere at time 0). Shared by the three chain families.
pub(crate) fn chain_activations(
    prefix: &'static str,
    sizes: impl IntoIterator<Item = u64>,
    transferable: bool,
) -> impl Iterator<Item = Tensor> {
    sizes.into_iter().enumerate().map(move |(i, size)| Tensor {
        name: format!("{prefix}{i}"),
        size: Bytes(size),
        kind: if i == 0 {
            TensorKind::Input
        } else {
            TensorKind::Activation
        },
        transferable,
        initial: if i == 0 {
            Placement::Gpu
        } else {
            Placement::Nowhere
        },
    })
}

pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> ModelError {
    ModelError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}
