//! Greedy (weight paper §5): Algorithm 1 selects the offloading choices,
//! Algorithm 2 schedules them; every cutting point is tried and the shortest
//! period kept. Greedy* is the same without the discount: every choice is priced
//! at two transfers, and a (k, 1) weight is offloaded again after F_k even when
//! its CPU copy from the offload after B_k is still current.
//!
//! Adaptation: Algorithm 1 runs under the full memory and under budgets that
//! reserve room for one or two weights in flight (an offload holds its weight
//! until it ends, a prefetch from its start; the selection sees neither, so a
//! selection that fills the memory exactly makes ops wait for offloads). The
//! shortest simulated period over all selections and cuts is kept.
//!
//! Owns: Greedy and Greedy*.
//! Must not import: exact solvers, traces, reports, the CLI.

use super::frame::{simulate, Plan, Policy};
use super::selection::{select_within, NoSelection, Selection};
use super::{chain, too_big};
use crate::family::{InstanceFile, WeightChain};
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

/// The cutting points of `sel`: the first `cut` of the (k, 1) prefetches, in
/// order of need (B_L first), move to the end of the previous period.
pub(super) fn cut_masks(l: usize, sel: &Selection) -> Vec<Vec<bool>> {
    let order: Vec<usize> = (0..l).rev().filter(|&j| sel.off1[j]).collect();
    (0..=order.len())
        .map(|cut| {
            let mut mask = vec![false; l];
            for &j in &order[..cut] {
                mask[j] = true;
            }
            mask
        })
        .collect()
}

/// Algorithm 2 for every cutting point; keeps the shortest period in `best`.
fn schedule_all_cuts(
    c: &WeightChain,
    inst: &Instance,
    mem: &[u64],
    sel: &Selection,
    policy: Policy,
    best: &mut Option<Schedule>,
) {
    for mask in cut_masks(c.l(), sel) {
        let plan = Plan {
            sel,
            cut: mask,
            policy,
        };
        if let Some(s) = simulate(c, inst, mem, &plan) {
            if best.as_ref().is_none_or(|b| s.period < b.period) {
                *best = Some(s);
            }
        }
    }
}

impl Greedy {
    /// The policy Algorithm 2 runs under.
    pub(super) fn policy(&self) -> Policy {
        Policy {
            discount: self.discount,
            uploads: self.discount,
            just_in_time: false,
        }
    }

    /// Algorithm 1 under the full memory and under budgets that reserve room
    /// for one or two weights in flight: the distinct selections, and the
    /// first failure (if any).
    pub(super) fn selections(&self, c: &WeightChain) -> (Vec<Selection>, Option<NoSelection>) {
        let max_w = c.layers.iter().map(|x| x.w).max().unwrap_or(0);
        let mut selections: Vec<Selection> = Vec::new();
        let mut first_error = None;
        for reserve in 0..=2u64 {
            let Some(budget) = c.gpu_memory.checked_sub(reserve * max_w) else {
                break;
            };
            match select_within(c, budget, self.discount) {
                Ok(sel) if !selections.contains(&sel) => selections.push(sel),
                Ok(_) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        (selections, first_error)
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
        file.weight_chain().is_some()
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let name = self.name();
        let c = chain(name, file)?;
        let mem = too_big(name, c)?;
        let (selections, first_error) = self.selections(c);
        let policy = self.policy();
        let mut best: Option<Schedule> = None;
        for sel in &selections {
            schedule_all_cuts(c, inst, &mem, sel, policy, &mut best);
        }
        best.ok_or_else(|| HeuristicError::NoSchedule {
            heuristic: name,
            reason: match first_error {
                Some(e) => format!(
                    "no selection removes the excess of {} B at step {}",
                    e.excess, e.step
                ),
                None => "every cutting point got stuck on memory".into(),
            },
        })
    }
}
