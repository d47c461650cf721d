//! Offload everything: every activation that can usefully be offloaded
//! (x₀ … x_{L−1}), prefetched as early as memory allows. The baseline of
//! vDNN's "offload all" mode.

use super::{candidates, chain, no_schedule, simulate_plan};
use crate::family::InstanceFile;
use crate::heuristic::{Heuristic, HeuristicError};
use crate::model::Instance;
use crate::schedule::Schedule;

pub struct OffloadEverything;

pub const NAME: &str = "offload-all";

impl Heuristic for OffloadEverything {
    fn name(&self) -> &'static str {
        NAME
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        matches!(file, InstanceFile::ActivationChain(_))
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let c = chain(NAME, file)?;
        simulate_plan(c, inst, &candidates(c), None).map_err(|e| no_schedule(NAME, e))
    }
}
