//! TFLMS-like baseline (activation paper §6.1, after TFLMS / Le et al. 2018):
//! two parameters and no profiling: offload the first `n` activations and
//! prefetch each `k` ops ahead of its reader; the best (n, k) is kept.
//!
//! TFLMS rewrites the graph with swap-out/swap-in ops but "is unable to delay
//! forward computations until enough memory is made available through
//! offloading" (§6.2). We model that literally: a setting is admissible only if
//! no forward op waits (each F_i starts when F_{i−1} ends); otherwise TFLMS would
//! run out of memory. So TFLMS finds no schedule at low memory, as in Figure 5.
//!
//! Look-aheads tried: 1 … 8, then powers of two up to the number of ops.
//!
//! Owns: the TFLMS-like baseline.
//! Must not import: exact solvers, traces, reports, the CLI.

use super::{best_of, candidates, ChainHeuristic};
use crate::family::ActivationChain;
use crate::heuristic::HeuristicError;
use crate::model::Instance;
use crate::schedule::{Event, Schedule};
use crate::units::Ticks;

pub struct Tflms;

pub const NAME: &str = "tflms";

/// The look-ahead values tried for a chain with `ops` ops.
pub fn lookaheads(ops: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (1..=8.min(ops.max(1))).collect();
    let mut k = 16;
    while k < ops {
        v.push(k);
        k *= 2;
    }
    if ops > 8 {
        v.push(ops);
    }
    v
}

impl ChainHeuristic for Tflms {
    const NAME: &'static str = NAME;
    fn schedule_chain(
        &self,
        c: &ActivationChain,
        inst: &Instance,
    ) -> Result<Schedule, HeuristicError> {
        let cands = candidates(c);
        let n_layers = c.layers.len();
        let forward: Vec<crate::model::OpId> = (0..n_layers).map(|i| c.f_id(i)).collect();
        let no_forward_wait = |s: &Schedule| -> bool {
            let mut start = vec![Ticks::ZERO; n_layers];
            let mut end = vec![Ticks::ZERO; n_layers];
            for e in &s.events {
                if let Event::Compute {
                    op,
                    start: a,
                    end: b,
                } = e
                {
                    if let Some(i) = forward.iter().position(|f| f == op) {
                        start[i] = *a;
                        end[i] = *b;
                    }
                }
            }
            start[0] == Ticks::ZERO && (1..n_layers).all(|i| start[i] == end[i - 1])
        };
        let las = lookaheads(2 * n_layers);
        let plans = (0..=cands.len()).flat_map(|n| {
            let set = cands[..n].to_vec();
            las.iter().map(move |&k| (set.clone(), Some(k)))
        });
        best_of(NAME, c, inst, plans, no_forward_wait)
    }
}
