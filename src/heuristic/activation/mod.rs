//! Heuristics for `activation_chain` (activation paper §4.2, §5.3, §6.1): one
//! file per heuristic. Each decides *which* activations to offload (and, for
//! TFLMS, how far ahead to prefetch); the schedule is always the shared
//! simulator's ordered no-wait realisation of that decision
//! ([`crate::simulate::asap`]: whole, non-interruptible transfers), and
//! [`crate::heuristic::run`] passes it through the checker.
//!
//! Owns: the registry of activation heuristics, [`ChainHeuristic`] (which makes
//! each of them a [`Heuristic`] for `activation_chain` files) and [`simulate_plan`].
//! Must not import: exact solvers, the checker (the caller checks).

pub mod dynprog;
pub mod everything;
pub mod greedy;
pub mod tflms;
pub mod vdnn;

use super::{Heuristic, HeuristicError};
use crate::family::{ActivationChain, InstanceFile};
use crate::model::Instance;
use crate::schedule::Schedule;
use crate::simulate::{asap, Plan, SimError};

pub use dynprog::DynProg;
pub use everything::OffloadEverything;
pub use greedy::Greedy;
pub use tflms::Tflms;
pub use vdnn::Vdnn;

pub fn heuristics() -> Vec<Box<dyn Heuristic>> {
    vec![
        Box::new(Greedy),
        Box::new(DynProg::default()),
        Box::new(Vdnn),
        Box::new(Tflms),
        Box::new(OffloadEverything),
    ]
}

/// An activation heuristic: a schedule for one [`ActivationChain`]. Every such
/// type is a [`Heuristic`] named [`ChainHeuristic::NAME`] that applies to
/// `activation_chain` files and no others.
pub trait ChainHeuristic: Send + Sync {
    const NAME: &'static str;
    fn schedule_chain(
        &self,
        c: &ActivationChain,
        inst: &Instance,
    ) -> Result<Schedule, HeuristicError>;
}

impl<T: ChainHeuristic> Heuristic for T {
    fn name(&self) -> &'static str {
        T::NAME
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        matches!(file, InstanceFile::ActivationChain(_))
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        self.schedule_chain(chain(T::NAME, file)?, inst)
    }
}

/// The chain of an activation instance, or the heuristic's NotApplicable error.
fn chain<'a>(
    name: &'static str,
    file: &'a InstanceFile,
) -> Result<&'a ActivationChain, HeuristicError> {
    match file {
        InstanceFile::ActivationChain(c) => Ok(c),
        other => Err(HeuristicError::NotApplicable {
            heuristic: name,
            family: other.family().into(),
        }),
    }
}

/// The ASAP schedule that offloads the activations x_i, i ∈ `layers` (in
/// increasing order), prefetching `lookahead` ops ahead (None: as early as
/// memory allows).
pub fn simulate_plan(
    c: &ActivationChain,
    inst: &Instance,
    layers: &[usize],
    lookahead: Option<usize>,
) -> Result<Schedule, SimError> {
    let plan = Plan {
        offload: layers.iter().map(|&i| c.x_id(i)).collect(),
        lookahead,
    };
    asap(inst, &plan)
}

/// Map a simulator failure to the heuristic's error.
pub(crate) fn no_schedule(name: &'static str, e: SimError) -> HeuristicError {
    HeuristicError::NoSchedule {
        heuristic: name,
        reason: e.to_string(),
    }
}

/// The activations worth offloading: x_0 … x_{L−1} (x_L is read by F_L and
/// then at once by B_L, x_{L+1} only by B_L) with a positive size.
pub fn candidates(c: &ActivationChain) -> Vec<usize> {
    (0..c.l()).filter(|&i| c.x_size(i) > 0).collect()
}

/// Among candidate plans, the one whose simulated makespan is least (ties: the
/// earlier candidate). The winner is checked by the caller.
pub(crate) fn best_of(
    name: &'static str,
    c: &ActivationChain,
    inst: &Instance,
    plans: impl IntoIterator<Item = (Vec<usize>, Option<usize>)>,
    admissible: impl Fn(&Schedule) -> bool,
) -> Result<Schedule, HeuristicError> {
    let mut best: Option<Schedule> = None;
    let mut last_err: Option<SimError> = None;
    let mut rejected = 0usize;
    for (layers, la) in plans {
        match simulate_plan(c, inst, &layers, la) {
            Ok(s) => {
                if !admissible(&s) {
                    rejected += 1;
                    continue;
                }
                if best.as_ref().is_none_or(|b| s.last_end() < b.last_end()) {
                    best = Some(s);
                }
            }
            Err(e) => last_err = Some(e),
        }
    }
    best.ok_or_else(|| match (rejected, last_err) {
        (0, Some(e)) => no_schedule(name, e),
        (n, _) => HeuristicError::NoSchedule {
            heuristic: name,
            reason: format!(
                "no parameter setting is admissible ({n} schedules rejected: a forward op waits for memory)"
            ),
        },
    })
}
