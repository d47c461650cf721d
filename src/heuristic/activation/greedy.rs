//! GREEDY (activation paper §4.2): round Theorem 2's fractional optimum up to
//! whole activations: offload x₀ … x_k entirely, k the smallest index with
//! Σ_{i≤k} |x_i| ≥ M_peak − M_GPU, in the no-wait ordered schedule.
//!
//! Owns: GREEDY.
//! Must not import: exact solvers, traces, reports, the CLI.

use super::{no_schedule, simulate_plan, ChainHeuristic};
use crate::bound::activation::ChainProfile;
use crate::family::ActivationChain;
use crate::heuristic::HeuristicError;
use crate::model::Instance;
use crate::schedule::Schedule;

pub struct Greedy;

pub const NAME: &str = "greedy";

/// The layers GREEDY offloads: the shortest prefix holding M_peak − M_GPU bytes
/// (all of x₀ … x_{L−1} when even that is not enough).
pub fn selection(c: &ActivationChain) -> Vec<usize> {
    let prof = ChainProfile::new(c);
    let q = prof.m_peak().saturating_sub(c.gpu_memory as u128);
    let mut out = Vec::new();
    let mut sum: u128 = 0;
    for i in 0..c.l() {
        if sum >= q {
            break;
        }
        out.push(i);
        sum += c.x_size(i) as u128;
    }
    out
}

impl ChainHeuristic for Greedy {
    const NAME: &'static str = NAME;
    fn schedule_chain(
        &self,
        c: &ActivationChain,
        inst: &Instance,
    ) -> Result<Schedule, HeuristicError> {
        simulate_plan(c, inst, &selection(c), None).map_err(|e| no_schedule(NAME, e))
    }
}
