//! Offload everything: every activation that can usefully be offloaded
//! (x₀ … x_{L−1}), prefetched as early as memory allows. The baseline of
//! vDNN's "offload all" mode.
//!
//! Owns: the offload-everything baseline.
//! Must not import: exact solvers, traces, reports, the CLI.

use super::{candidates, no_schedule, simulate_plan, ChainHeuristic};
use crate::family::ActivationChain;
use crate::heuristic::HeuristicError;
use crate::model::Instance;
use crate::schedule::Schedule;

pub struct OffloadEverything;

pub const NAME: &str = "offload-all";

impl ChainHeuristic for OffloadEverything {
    const NAME: &'static str = NAME;
    fn schedule_chain(
        &self,
        c: &ActivationChain,
        inst: &Instance,
    ) -> Result<Schedule, HeuristicError> {
        simulate_plan(c, inst, &candidates(c), None).map_err(|e| no_schedule(NAME, e))
    }
}
