//! L2L (Pudipeddi et al., the weight paper's baseline): each layer's weights are
//! on the GPU only while in use. Every w_k is fetched just before each op that
//! uses it, once the previous op has ended (so nothing else is resident), deleted
//! after F_k (its CPU copy is current) and offloaded after B_k, the update being
//! folded into B_k. w_L stays between F_L and B_L, which use it back to back.
//!
//! Owns: the L2L baseline.
//! Must not import: exact solvers, traces, reports, the CLI.

use super::frame::{simulate, Plan, Policy};
use super::selection::Selection;
use super::{chain, too_big};
use crate::family::InstanceFile;
use crate::heuristic::{Heuristic, HeuristicError};
use crate::model::Instance;
use crate::schedule::Schedule;

#[derive(Clone, Copy, Debug)]
pub struct L2l;

impl Heuristic for L2l {
    fn name(&self) -> &'static str {
        "l2l"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        file.weight_chain().is_some()
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let c = chain(self.name(), file)?;
        let mem = too_big(self.name(), c)?;
        let l = c.l();
        let sel = Selection {
            off0: vec![true; l],
            off1: (1..=l).map(|k| k < l).collect(),
        };
        let plan = Plan {
            sel: &sel,
            cut: vec![false; l],
            policy: Policy {
                discount: true,
                uploads: false,
                just_in_time: true,
            },
        };
        simulate(c, inst, &mem, &plan).ok_or_else(|| HeuristicError::NoSchedule {
            heuristic: self.name(),
            reason: "stuck on memory".into(),
        })
    }
}
