//! OFFMATE's own algorithm as a registry heuristic (`offmate-algorithm1`):
//! the ILP (1)–(23) in corrected mode, the post-processing (Algorithm 1, exact
//! SELECT), the realiser and the checker, with `offcert offmate`'s budget
//! repair ([`super::ilp_runs`], [`REPAIRS`] times). The schedule returned is
//! the first attempt the checker accepts; its note states the ILP's status in
//! its claim words (`solver-reported`: `optimal` or `feasible, gap g`).
//!
//! Limits ([`SolverLimit`]): a wall-clock limit per ILP solve (the gap
//! report's `--time-limit`), or, by default, [`MAX_NODES`] branch-and-bound
//! nodes and no clock, so that the schedule is the same on every machine and
//! at every `gap --jobs` (single-threaded HiGHS). `offcert offmate` keeps its
//! own 60 s default.
//!
//! Owns: [`Algorithm1`], [`runs`]. Must not import: exact solvers, reports.

use super::{ilp_runs, OffmateRun, PlanSource};
use crate::bound::offmate::IlpOptions;
use crate::check::{CheckOutcome, Rejected};
use crate::family::offmate::{IlpMode, Offmate, PlanStatus};
use crate::family::InstanceFile;
use crate::heuristic::{Found, Heuristic, HeuristicError, SolverLimit};
use crate::model::Instance;
use crate::schedule::Schedule;
use std::time::Duration;

/// The heuristic's name in the registry and the gap report.
pub const NAME: &str = "offmate-algorithm1";

/// Budget repairs after a refutation for GPU memory alone (`offcert
/// offmate`'s default `--repairs`).
pub const REPAIRS: usize = 3;

/// Branch-and-bound nodes per ILP solve without a time limit (the weight
/// MIP's [`crate::lp::MIP_MAX_NODES`]).
pub const MAX_NODES: i32 = crate::lp::MIP_MAX_NODES;

/// Every attempt of OFFMATE end to end (corrected ILP) under `limit`.
pub fn runs(off: &Offmate, inst: &Instance, limit: SolverLimit) -> Vec<Result<OffmateRun, String>> {
    let (time, max_nodes) = match limit {
        SolverLimit::Deterministic => (Duration::MAX, Some(MAX_NODES)),
        SolverLimit::Time(d) => (d, None),
    };
    let opts = IlpOptions {
        cpu_optimizer: true,
        max_nodes,
    };
    ilp_runs(off, inst, IlpMode::Corrected, time, opts, REPAIRS)
}

/// The ILP's status in its claim words.
pub fn status_words(status: &PlanStatus) -> String {
    match status {
        PlanStatus::Optimal => "optimal".into(),
        PlanStatus::Feasible { gap } => format!("feasible, gap {:.2}%", 100.0 * gap),
    }
}

/// The note of a run: mode, status, objective, the budget it was solved for.
fn note(run: &OffmateRun, inst: &Instance, attempt: usize, limit: SolverLimit) -> String {
    let PlanSource::Ilp {
        status,
        objective,
        budget,
        ..
    } = &run.source
    else {
        return String::new();
    };
    let mut s = format!(
        "ILP (corrected): solver-reported, {}, objective {objective:.0}",
        status_words(status)
    );
    if *budget != inst.machine.gpu_capacity {
        s.push_str(&format!(
            "; solved for {} (repair {attempt}: M_GPU less the checker's excess)",
            budget.human()
        ));
    }
    s.push_str(&match limit {
        SolverLimit::Deterministic => format!("; at most {MAX_NODES} nodes per solve"),
        SolverLimit::Time(d) => format!("; {} s per solve", d.as_secs_f64()),
    });
    s
}

/// OFFMATE's Algorithm 1 in the heuristic registry.
pub struct Algorithm1;

impl Heuristic for Algorithm1 {
    fn name(&self) -> &'static str {
        NAME
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        file.offmate().is_some()
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        self.schedule_within(file, inst, SolverLimit::Deterministic)
            .map(|f| f.schedule)
    }
    fn schedule_within(
        &self,
        file: &InstanceFile,
        inst: &Instance,
        limit: SolverLimit,
    ) -> Result<Found, HeuristicError> {
        let off = file
            .offmate()
            .ok_or_else(|| HeuristicError::NotApplicable {
                heuristic: NAME,
                family: file.family().into(),
            })?;
        let all = runs(off, inst, limit);
        let tries = all.len();
        let mut last_refuted: Option<Rejected> = None;
        let mut last_error: Option<String> = None;
        for (k, r) in all.into_iter().enumerate() {
            match r {
                Ok(run) => match &run.outcome {
                    CheckOutcome::Valid(c) => {
                        return Ok(Found {
                            schedule: c.schedule().clone(),
                            note: Some(note(&run, inst, k, limit)),
                        })
                    }
                    CheckOutcome::Invalid(rej) => last_refuted = Some(rej.clone()),
                },
                Err(e) => last_error = Some(e),
            }
        }
        match (last_refuted, last_error) {
            (_, Some(e)) => Err(HeuristicError::NoSchedule {
                heuristic: NAME,
                reason: e,
            }),
            (Some(rej), None) if super::only_capacity(&rej) => Err(HeuristicError::NoSchedule {
                heuristic: NAME,
                reason: format!(
                    "its plan does not fit after {} repair(s): {}",
                    tries.saturating_sub(1),
                    rej.violations()
                        .first()
                        .map(|v| v.describe(inst))
                        .unwrap_or_default()
                ),
            }),
            // Refuted for another rule: a bug, which `heuristic::run` reports
            // as `invalid` with the checker's reason.
            (Some(rej), None) => Ok(Found {
                schedule: rej.schedule().clone(),
                note: None,
            }),
            (None, None) => Err(HeuristicError::NoSchedule {
                heuristic: NAME,
                reason: "the ILP gave no plan".into(),
            }),
        }
    }
}
