//! Greedy (weight paper §5): Algorithm 1 selects the offloading choices,
//! Algorithm 2 schedules them; every cutting point is tried and the shortest
//! period kept. Greedy* is the same without the discount: every choice is priced
//! at two transfers, and a (k, 1) weight is offloaded again after F_k even when
//! its CPU copy from the offload after B_k is still current.

use super::frame::{simulate, Plan, Policy};
use super::selection::select;
use super::{chain, too_big};
use crate::family::InstanceFile;
use crate::heuristic::{Heuristic, HeuristicError};
use crate::model::Instance;
use crate::schedule::Schedule;

#[derive(Clone, Copy, Debug)]
pub struct Greedy {
    discount: bool,
}

impl Greedy {
    /// The paper's Greedy (with the discount).
    pub fn paper() -> Greedy {
        Greedy { discount: true }
    }
    /// Greedy*: no discount.
    pub fn no_discount() -> Greedy {
        Greedy { discount: false }
    }
}

impl Heuristic for Greedy {
    fn name(&self) -> &'static str {
        if self.discount {
            "greedy"
        } else {
            "greedy-star"
        }
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        matches!(file, InstanceFile::WeightChain(_))
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let name = self.name();
        let c = chain(name, file)?;
        let mem = too_big(name, c)?;
        let sel = select(c, self.discount).map_err(|e| HeuristicError::NoSchedule {
            heuristic: name,
            reason: format!(
                "no selection removes the excess of {} B at step {}",
                e.excess, e.step
            ),
        })?;
        let policy = Policy {
            discount: self.discount,
            uploads: self.discount,
            just_in_time: false,
        };
        // The cutting points: the first `cut` of the (k, 1) prefetches, in order
        // of need (B_L first), move to the end of the previous period.
        let order: Vec<usize> = (0..c.l()).rev().filter(|&j| sel.off1[j]).collect();
        let mut best: Option<Schedule> = None;
        for cut in 0..=order.len() {
            let mut mask = vec![false; c.l()];
            for &j in &order[..cut] {
                mask[j] = true;
            }
            let plan = Plan {
                sel: &sel,
                cut: mask,
                policy,
            };
            if let Some(s) = simulate(c, inst, &mem, &plan) {
                if best.as_ref().is_none_or(|b| s.period < b.period) {
                    best = Some(s);
                }
            }
        }
        best.ok_or_else(|| HeuristicError::NoSchedule {
            heuristic: name,
            reason: "every cutting point got stuck on memory".into(),
        })
    }
}
