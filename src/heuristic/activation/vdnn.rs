//! vDNN-like baseline (activation paper §6.1, after vDNN++): layers are not
//! annotated as convolutions, so rank the activations by u_{F_i}/|x_i| and, for
//! every threshold, try offloading all activations whose ratio is at least the
//! threshold, and every other one of them; keep the best no-wait schedule.
//!
//! Owns: the vDNN-like baseline.
//! Must not import: exact solvers, traces, reports, the CLI.

use super::{best_of, candidates, ChainHeuristic};
use crate::family::ActivationChain;
use crate::heuristic::HeuristicError;
use crate::model::Instance;
use crate::schedule::Schedule;
use std::cmp::Ordering;

pub struct Vdnn;

pub const NAME: &str = "vdnn";

impl ChainHeuristic for Vdnn {
    const NAME: &'static str = NAME;
    fn schedule_chain(
        &self,
        c: &ActivationChain,
        inst: &Instance,
    ) -> Result<Schedule, HeuristicError> {
        let cands = candidates(c);
        // Ratios compared exactly: u_a/x_a vs u_b/x_b as u_a·x_b vs u_b·x_a.
        let ratio_cmp = |a: usize, b: usize| -> Ordering {
            let l = c.layers[a].u_f as i128 * c.x_size(b) as i128;
            let r = c.layers[b].u_f as i128 * c.x_size(a) as i128;
            l.cmp(&r)
        };
        let mut by_ratio = cands.clone();
        by_ratio.sort_by(|&a, &b| ratio_cmp(b, a).then(a.cmp(&b)));
        let mut plans: Vec<(Vec<usize>, Option<usize>)> = vec![(Vec::new(), None)];
        let mut k = 0;
        while k < by_ratio.len() {
            // All activations whose ratio is ≥ the k-th largest ratio (ties together).
            let mut end = k + 1;
            while end < by_ratio.len() && ratio_cmp(by_ratio[end], by_ratio[k]) == Ordering::Equal {
                end += 1;
            }
            let mut set: Vec<usize> = by_ratio[..end].to_vec();
            set.sort_unstable();
            let half: Vec<usize> = set.iter().copied().step_by(2).collect();
            plans.push((set, None));
            plans.push((half, None));
            k = end;
        }
        best_of(NAME, c, inst, plans, |_| true)
    }
}
