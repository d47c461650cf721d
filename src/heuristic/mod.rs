//! The papers' production heuristics: one file per heuristic.
//!
//! Owns: the [`Heuristic`] trait, the registry and [`run`], which passes every
//! schedule through the checker; a heuristic's makespan is the checker's.
//! Must not import: exact solvers.

pub mod activation;
pub mod effort;
pub mod graph;
pub mod improve;
pub mod offmate;
pub mod op_sequence;
pub mod remat;
pub mod weight;

use crate::check::{check, CheckOutcome, Checked, Rejected};
use crate::family::InstanceFile;
use crate::model::Instance;
use crate::schedule::Schedule;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HeuristicError {
    #[error("heuristic {heuristic} does not apply to family {family}")]
    NotApplicable {
        heuristic: &'static str,
        family: String,
    },
    /// No schedule (e.g. the memory is below what any op needs).
    #[error("heuristic {heuristic} found no schedule: {reason}")]
    NoSchedule {
        heuristic: &'static str,
        reason: String,
    },
    /// The instance has a feature the heuristic does not model: refused,
    /// never approximated. (No remat heuristic refuses any more: all take
    /// several options per block and a distinct fast forward.)
    #[error("heuristic {heuristic} does not model this instance: {feature}")]
    Unsupported {
        heuristic: &'static str,
        feature: crate::family::remat_chain::RematFeature,
    },
    /// A bug: the heuristic's schedule fails the checker.
    #[error("heuristic {heuristic} built a schedule the checker rejects: {first}")]
    Invalid {
        heuristic: &'static str,
        first: String,
        /// The schedule and every violation.
        rejected: Box<Rejected>,
    },
}

/// How long a heuristic that runs a solver (OFFMATE's Algorithm 1, its ILP)
/// may run it. Heuristics without a solver ignore it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SolverLimit {
    /// The heuristic's deterministic default: a count (branch-and-bound
    /// nodes), never a clock, so the schedule is the same on every machine,
    /// under any load and at any `gap --jobs`.
    #[default]
    Deterministic,
    /// A wall-clock limit per solve (the gap report's `--time-limit`).
    Time(std::time::Duration),
}

/// A heuristic's schedule with a note on how it was found (e.g. the ILP's
/// status in its claim words), before the checker has seen it.
#[derive(Clone, Debug)]
pub struct Found {
    pub schedule: Schedule,
    pub note: Option<String>,
}

/// A heuristic builds a schedule; [`run`] checks it.
pub trait Heuristic: Send + Sync {
    fn name(&self) -> &'static str;
    fn applies(&self, file: &InstanceFile) -> bool;
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError>;
    /// [`Heuristic::schedule`] under a solver limit, with a note; the default
    /// ignores the limit and has no note.
    fn schedule_within(
        &self,
        file: &InstanceFile,
        inst: &Instance,
        _limit: SolverLimit,
    ) -> Result<Found, HeuristicError> {
        Ok(Found {
            schedule: self.schedule(file, inst)?,
            note: None,
        })
    }
    /// The algorithm's own objective value in its paper's model, when it has one
    /// (reported as `solver-reported`, never as a makespan).
    fn model_value(&self, _file: &InstanceFile) -> Option<f64> {
        None
    }
}

/// A heuristic's checked result: only the checker can build the [`Checked`].
#[derive(Clone, Debug)]
pub struct HeuristicRun {
    pub name: &'static str,
    pub checked: Checked,
    /// How the schedule was found, where the heuristic says (an ILP's status
    /// in its claim words).
    pub note: Option<String>,
}

/// Run `h` and pass its schedule through the checker.
pub fn run(
    h: &dyn Heuristic,
    file: &InstanceFile,
    inst: &Instance,
) -> Result<HeuristicRun, HeuristicError> {
    run_within(h, file, inst, SolverLimit::Deterministic)
}

/// [`run`] under a solver limit (heuristics that run a solver use it).
pub fn run_within(
    h: &dyn Heuristic,
    file: &InstanceFile,
    inst: &Instance,
    limit: SolverLimit,
) -> Result<HeuristicRun, HeuristicError> {
    let Found { schedule, note } = h.schedule_within(file, inst, limit)?;
    match check(inst, &schedule) {
        CheckOutcome::Valid(checked) => Ok(HeuristicRun {
            name: h.name(),
            checked,
            note,
        }),
        CheckOutcome::Invalid(rejected) => Err(HeuristicError::Invalid {
            heuristic: h.name(),
            first: rejected
                .violations()
                .first()
                .map(|v| v.describe(inst))
                .unwrap_or_default(),
            rejected: Box::new(rejected),
        }),
    }
}

/// Every heuristic, every family (registry order).
pub fn all() -> Vec<Box<dyn Heuristic>> {
    by_family().into_iter().flat_map(|(_, v)| v).collect()
}

/// The registry per instance family (the `family` tag each one applies to).
/// A name may recur in two families (`greedy`: activation and weight).
pub fn by_family() -> Vec<(&'static str, Vec<Box<dyn Heuristic>>)> {
    vec![
        ("activation_chain", activation::heuristics()),
        ("weight_chain", weight::heuristics()),
        ("op_sequence", op_sequence::heuristics()),
        ("remat_chain", remat::heuristics()),
        ("offmate", offmate::heuristics()),
        ("graph", graph::heuristics()),
    ]
}

/// The best checked run of every applicable heuristic (least makespan; ties:
/// registry order), or `None` if none gives a valid schedule.
pub fn best_run(file: &InstanceFile, inst: &Instance) -> Option<HeuristicRun> {
    let mut best: Option<HeuristicRun> = None;
    for h in all().iter().filter(|h| h.applies(file)) {
        if let Ok(r) = run(h.as_ref(), file, inst) {
            if best
                .as_ref()
                .is_none_or(|b| r.checked.makespan() < b.checked.makespan())
            {
                best = Some(r);
            }
        }
    }
    best
}
