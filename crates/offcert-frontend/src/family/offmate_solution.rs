//! OFFMATE's own plan for an `offmate` instance, as `scripts/export_offmate.py
//! --solution` writes it from a solved rockmate `ModelPULPOffload` (rockmate's
//! `solvers/ilp/ilp_schedule.py`: the per-step `opt_ops`, `ofl_ops`,
//! `del_ops`, `prf_ops` that `schedule_offload` builds, and the option whose
//! `Comp` is 1 per block).
//!
//! ```json
//! { "format": "offmate-solution/1", "instance": "NAME",
//!   "options": [0, 2, …],                        // per block, the option index
//!   "initial": {"params": [names on the GPU at step 0],
//!               "states": [names whose optimiser states are on the GPU]},
//!   "steps": [ {"ops": [ {"op": "optimize", "param": "P", "device": "cpu"},
//!                        {"op": "offload",  "param": "P", "tensor": "grad"},
//!                        {"op": "delete",   "param": "P"},
//!                        {"op": "prefetch", "param": "P", "tensor": "states"} ]} ] }
//! ```
//!
//! `steps` has one entry per offcert step t = 0..2L (the forward of block t,
//! then the backwards from block L down to 1); each step's ops follow its
//! block op, in rockmate's order. `tensor` is `param` (default), `grad` or
//! `states`; `device` (optimize only) `gpu` (default) or `cpu`.
//!
//! Owns: [`OffmateSolution`] and its validation against an instance (errors
//! name the field). Turning it into whole-tensor decisions is the heuristic
//! layer's (`heuristic::offmate::solution`). Must not import: schedules, the
//! checker, solvers.

use super::invalid;
use super::offmate::Offmate;
use crate::model::ModelError;
use serde::{Deserialize, Serialize};

/// The format word this build reads.
pub const SOLUTION_FORMAT: &str = "offmate-solution/1";

/// What an op moves or updates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SolutionTensor {
    #[default]
    Param,
    Grad,
    States,
}

/// Where an optimizer step runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SolutionDevice {
    #[default]
    Gpu,
    Cpu,
}

/// The kind of a parameter op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SolutionOpKind {
    Optimize,
    Offload,
    Prefetch,
    Delete,
}

/// One op of a step, on one parameter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolutionOp {
    pub op: SolutionOpKind,
    pub param: String,
    #[serde(default)]
    pub tensor: SolutionTensor,
    #[serde(default)]
    pub device: SolutionDevice,
}

/// One step's ops after its block op.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolutionStep {
    #[serde(default)]
    pub ops: Vec<SolutionOp>,
}

/// What is on the GPU at step 0.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolutionInitial {
    #[serde(default)]
    pub params: Vec<String>,
    #[serde(default)]
    pub states: Vec<String>,
}

/// OFFMATE's plan: per block the option, the state at step 0, per step the
/// parameter ops in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffmateSolution {
    pub format: String,
    /// The instance's `name` (informative; not checked).
    #[serde(default)]
    pub instance: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
    pub options: Vec<usize>,
    #[serde(default)]
    pub initial: SolutionInitial,
    pub steps: Vec<SolutionStep>,
}

impl OffmateSolution {
    /// Check the plan's shape against `off`: the format word, one option per
    /// block within its options, 2L steps, every parameter name known.
    pub fn validate(&self, off: &Offmate) -> Result<(), ModelError> {
        if self.format != SOLUTION_FORMAT {
            return Err(invalid(
                "format",
                format!("`{}` (this build reads `{SOLUTION_FORMAT}`)", self.format),
            ));
        }
        if self.options.len() != off.l() {
            return Err(invalid(
                "options",
                format!("{} options for {} blocks", self.options.len(), off.l()),
            ));
        }
        for (b, &o) in self.options.iter().enumerate() {
            if o >= off.blocks[b].options.len() {
                return Err(invalid(
                    format!("options[{b}]"),
                    format!(
                        "{o} is not an option of block `{}` ({} options)",
                        off.blocks[b].name,
                        off.blocks[b].options.len()
                    ),
                ));
            }
        }
        if self.steps.len() != 2 * off.l() {
            return Err(invalid(
                "steps",
                format!(
                    "{} steps, the instance has 2L = {}",
                    self.steps.len(),
                    2 * off.l()
                ),
            ));
        }
        let known = |n: &str| off.params.iter().any(|p| p.name == n);
        for (what, names) in [
            ("initial.params", &self.initial.params),
            ("initial.states", &self.initial.states),
        ] {
            if let Some((i, n)) = names.iter().enumerate().find(|(_, n)| !known(n)) {
                return Err(invalid(
                    format!("{what}[{i}]"),
                    format!("unknown parameter `{n}`"),
                ));
            }
        }
        for (t, s) in self.steps.iter().enumerate() {
            for (i, op) in s.ops.iter().enumerate() {
                if !known(&op.param) {
                    return Err(invalid(
                        format!("steps[{t}].ops[{i}].param"),
                        format!("unknown parameter `{}`", op.param),
                    ));
                }
            }
        }
        Ok(())
    }
}
