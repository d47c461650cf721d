//! `offmate`: OFFMATE's block-sequential LLM training step (Shilova et al., HAL
//! hal-04660745, 2024, §3–§4; design notes `FAMILIES.md` §3; mapping in
//! `models/MODEL.md` §4).
//!
//! L blocks, each with options (rockmate schedules: times, stored and offloaded
//! activation bytes, transient overheads), parameters (bytes, trainable), an
//! Adam optimiser with k states per trainable value whose step runs on the GPU
//! (speed α_G) or on the CPU (α_C), a CPU management time H per step, GPU and
//! CPU memory, β on a full-duplex link. Cyclic: the objective is the period.
//! Steps t = 0..2L (0-based here; the paper's t = 1..2L): step t < L is the
//! forward of block t, step t ≥ L the backward of block 2L−1−t.
//!
//! Also here: [`StepPlan`], the ILP's decision variables in the paper's
//! notation, which the ILP (`bound::offmate`) produces and the post-processing
//! (`heuristic::offmate`) turns into a schedule. A plan is never a verdict: the
//! schedule it leads to goes through the checker.
//!
//! Owns: the file format, its validation (errors name the field), parameter
//! groups, and the plan type. Must not import: schedules, semantics, the
//! checker, solvers.

use super::{invalid, BandwidthFile};
use crate::model::{Allocator, Duplex, ModelError, ReleaseRule};
use crate::units::{Bytes, Ticks};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// One option of a block (a rockmate schedule of its forward and backward).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockOption {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// T_f^o: forward time, including waits for its own activation transfers (§4.1).
    pub t_fwd: Ticks,
    /// T_b^o: backward time, likewise.
    pub t_bwd: Ticks,
    /// S_i^o: internal activations kept on the GPU from the forward to the backward.
    pub saved: Bytes,
    /// O_i^o: internal activations offloaded after the forward, prefetched for the backward.
    pub offloaded: Bytes,
    /// Transient memory above what is stored, during the forward.
    #[serde(default)]
    pub fwd_overhead: Bytes,
    /// Transient memory during the backward.
    #[serde(default)]
    pub bwd_overhead: Bytes,
}

/// A block: interface output, the parameters it uses, its options.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Block {
    pub name: String,
    /// Bytes of its interface output x_i (the next block's input).
    pub out: Bytes,
    /// Bytes of the gradient of x_i (default `out`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grad_out: Option<Bytes>,
    /// Names of the parameters it reads (entries of [`Offmate::params`]).
    #[serde(default)]
    pub params: Vec<String>,
    pub options: Vec<BlockOption>,
}

/// A parameter tensor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Param {
    pub name: String,
    pub bytes: Bytes,
    #[serde(default = "yes")]
    pub trainable: bool,
}

fn yes() -> bool {
    true
}

/// The Adam step: k states per trainable value, GPU and CPU update speeds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Optimizer {
    /// k (2 for Adam): optimiser-state bytes = k × trainable bytes.
    pub states: u32,
    /// α_G: parameter bytes updated per tick on the GPU.
    pub gpu_speed: BandwidthFile,
    /// α_C: parameter bytes updated per tick on the CPU.
    pub cpu_speed: BandwidthFile,
    /// Scratch memory of a GPU update, as a multiple of the parameter's bytes.
    #[serde(default)]
    pub gpu_temp_factor: u32,
}

/// An `offmate` instance file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Offmate {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Bytes of the input x_0 (a persistent GPU buffer).
    pub input: Bytes,
    /// Blocks 1..=L in forward order.
    pub blocks: Vec<Block>,
    pub params: Vec<Param>,
    pub optimizer: Optimizer,
    /// H: CPU management time per step, in ticks (0 drops it).
    #[serde(default)]
    pub cpu_management: Ticks,
    /// M_GPU in bytes (the paper's budget: VRAM − 2 GB).
    pub gpu_memory: Bytes,
    /// M_CPU in bytes.
    pub cpu_memory: Bytes,
    /// β (bytes per tick), per direction.
    pub bandwidth: BandwidthFile,
    /// The paper's link is full duplex (§1); half duplex is allowed.
    #[serde(default = "full_duplex")]
    pub duplex: Duplex,
    /// The release rule (`after_end` unless the file selects the relaxation).
    #[serde(default, skip_serializing_if = "ReleaseRule::is_default")]
    pub release: ReleaseRule,
    /// The allocator R7 counts with (`models/MODEL.md` §2.8; `exact` unless the file selects another).
    #[serde(default, skip_serializing_if = "Allocator::is_default")]
    pub allocator: Allocator,
}

fn full_duplex() -> Duplex {
    Duplex::FullDuplex
}

/// A parameter group w: the parameters used by exactly the same blocks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamGroup {
    /// Indices into [`Offmate::params`], ascending.
    pub params: Vec<usize>,
    /// The blocks that use them (0-based), ascending.
    pub blocks: Vec<usize>,
    /// |w|: total bytes.
    pub bytes: Bytes,
    /// |w|_g: trainable bytes.
    pub trainable: Bytes,
}

impl Offmate {
    /// L.
    pub fn l(&self) -> usize {
        self.blocks.len()
    }

    /// The block that step `t` (0-based, 0..2L) runs, and whether it is a forward.
    pub fn step_block(&self, t: usize) -> (usize, bool) {
        let l = self.l();
        if t < l {
            (t, true)
        } else {
            (2 * l - 1 - t, false)
        }
    }

    /// Parameter groups, ordered by their first using block, then by their
    /// first parameter's index. Parameters no block uses are left out.
    pub fn param_groups(&self) -> Vec<ParamGroup> {
        let index: HashMap<&str, usize> = self
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.as_str(), i))
            .collect();
        let mut users: Vec<Vec<usize>> = vec![Vec::new(); self.params.len()];
        for (b, block) in self.blocks.iter().enumerate() {
            for name in &block.params {
                if let Some(&p) = index.get(name.as_str()) {
                    if users[p].last() != Some(&b) {
                        users[p].push(b);
                    }
                }
            }
        }
        let mut by_users: BTreeMap<(usize, usize), ParamGroup> = BTreeMap::new();
        let mut key_of: HashMap<Vec<usize>, (usize, usize)> = HashMap::new();
        for (p, u) in users.iter().enumerate() {
            if u.is_empty() {
                continue;
            }
            let key = *key_of.entry(u.clone()).or_insert((u[0], p));
            let g = by_users.entry(key).or_insert_with(|| ParamGroup {
                params: Vec::new(),
                blocks: u.clone(),
                bytes: Bytes::ZERO,
                trainable: Bytes::ZERO,
            });
            g.params.push(p);
            g.bytes = Bytes(g.bytes.0 + self.params[p].bytes.0);
            if self.params[p].trainable {
                g.trainable = Bytes(g.trainable.0 + self.params[p].bytes.0);
            }
        }
        by_users.into_values().collect()
    }

    /// Validate the file's values, naming the offending field.
    pub fn validate(&self) -> Result<(), ModelError> {
        if self.blocks.is_empty() {
            return Err(invalid("blocks", "needs at least one block"));
        }
        let mut names = HashMap::new();
        for (i, p) in self.params.iter().enumerate() {
            if p.name.is_empty() {
                return Err(invalid(format!("params[{i}].name"), "empty name"));
            }
            if names.insert(p.name.as_str(), i).is_some() {
                return Err(ModelError::DuplicateName {
                    field: format!("params[{i}].name"),
                    name: p.name.clone(),
                });
            }
        }
        let mut block_names = HashMap::new();
        for (b, block) in self.blocks.iter().enumerate() {
            if block.name.is_empty() {
                return Err(invalid(format!("blocks[{b}].name"), "empty name"));
            }
            if block_names.insert(block.name.as_str(), b).is_some() {
                return Err(ModelError::DuplicateName {
                    field: format!("blocks[{b}].name"),
                    name: block.name.clone(),
                });
            }
            for (j, name) in block.params.iter().enumerate() {
                if !names.contains_key(name.as_str()) {
                    return Err(ModelError::UnknownName {
                        field: format!("blocks[{b}].params[{j}]"),
                        name: name.clone(),
                    });
                }
            }
            if block.options.is_empty() {
                return Err(invalid(format!("blocks[{b}].options"), "needs an option"));
            }
            for (o, opt) in block.options.iter().enumerate() {
                for (v, f) in [(opt.t_fwd, "t_fwd"), (opt.t_bwd, "t_bwd")] {
                    if v.0 < 0 {
                        return Err(invalid(
                            format!("blocks[{b}].options[{o}].{f}"),
                            "must be >= 0",
                        ));
                    }
                }
            }
        }
        if self.cpu_management.0 < 0 {
            return Err(invalid("cpu_management", "must be >= 0"));
        }
        for (bw, f) in [
            (self.bandwidth, "bandwidth"),
            (self.optimizer.gpu_speed, "optimizer.gpu_speed"),
            (self.optimizer.cpu_speed, "optimizer.cpu_speed"),
        ] {
            let b = bw.to_bandwidth();
            if b.bytes == 0 || b.ticks == 0 {
                return Err(invalid(f, "must be a positive number of bytes per tick"));
            }
        }
        self.validate_sums()
    }

    /// Every byte and tick summed once fits well inside 64 bits, so the
    /// compilation, the ILP's coefficients and the realiser cannot overflow.
    fn validate_sums(&self) -> Result<(), ModelError> {
        let k = self.optimizer.states as u128 + 2;
        let mut bytes: u128 = self.input.0 as u128;
        let mut ticks: i128 = self.cpu_management.0 as i128 * 2 * self.l() as i128;
        for p in &self.params {
            bytes += p.bytes.0 as u128 * k;
        }
        for b in &self.blocks {
            bytes += b.out.0 as u128 + b.grad_out.unwrap_or(b.out).0 as u128;
            for o in &b.options {
                bytes += (o.saved.0 + o.offloaded.0) as u128;
                bytes += o.fwd_overhead.0.max(o.bwd_overhead.0) as u128;
                ticks += o.t_fwd.0 as i128 + o.t_bwd.0 as i128;
            }
        }
        if bytes > (u64::MAX >> 2) as u128 {
            return Err(ModelError::Overflow {
                field: "params".into(),
                message: "total size exceeds 2^62 bytes".into(),
            });
        }
        if ticks > (i64::MAX >> 12) as i128 {
            return Err(ModelError::Overflow {
                field: "blocks".into(),
                message: "total duration exceeds 2^51 ticks".into(),
            });
        }
        Ok(())
    }
}

/// Which reading of the ILP (1)–(23) a plan came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IlpMode {
    /// The equations as the paper prints them.
    AsPrinted,
    /// With each correction of `proofs/OFFMATE-ILP.md`.
    Corrected,
}

/// What the solver said about a plan. Never `optimal (certified)`: a plan is a
/// paper-model value (`solver-reported`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum PlanStatus {
    /// The solver closed its own gap (solver-reported).
    Optimal,
    /// Stopped by a limit with a feasible solution; `gap` = (primal − dual) / primal.
    Feasible { gap: f64 },
}

/// The fractions of one parameter group in one step (paper eqs. (3)–(4)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepFractions {
    /// Sto_t^w: resident on the GPU during the step.
    pub sto: f64,
    /// Ofl_t^w: offloaded during the step.
    pub ofl: f64,
    /// Prf_t^w: prefetched during the step.
    pub prf: f64,
    /// StoO, OflO, PrfO: the same for its optimiser states.
    pub sto_o: f64,
    pub ofl_o: f64,
    pub prf_o: f64,
    /// Opt_t^w: optimised on the CPU during the step.
    pub opt: f64,
}

/// The ILP's solution in the paper's notation (solver output, unchecked).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepPlan {
    pub mode: IlpMode,
    pub status: PlanStatus,
    /// Σ_t Time_t as the solver reports it, in ticks (a model value).
    pub objective: f64,
    /// The chosen option per block (Comp_i^o = 1).
    pub option: Vec<usize>,
    /// Time_t per step, 0..2L.
    pub time: Vec<f64>,
    /// The parameter groups, as [`Offmate::param_groups`] returns them.
    pub groups: Vec<ParamGroup>,
    /// `fractions[w][t]`.
    pub fractions: Vec<Vec<StepFractions>>,
}
