//! OFFMATE's schedule (§4.2, App. B): a [`StepPlan`] (the ILP's, from
//! `bound::offmate`, or an ILP-free baseline plan) is rounded to whole tensors
//! ([`postprocess`], Algorithm 1 with an exact [`select`]), realised step by
//! step as a cyclic schedule ([`realise`]) and passed through the checker. The
//! result holds the checker's verdict: a [`Checked`] (period, GPU and CPU
//! peaks) or the [`Rejected`] with its reasons; a rejection is reported, never
//! dropped.
//!
//! Owns: [`run_plan`], [`OffmateRun`], [`PlanSource`], the baseline plans,
//! Algorithm 1 as a registry heuristic ([`algorithm1`]).
//! Must not import: exact solvers, reports, the CLI.

pub mod algorithm1;
pub mod balance;
pub mod improve;
pub mod postprocess;
pub mod realise;
pub mod select;
pub mod solution;

use super::HeuristicError;
use crate::bound::offmate::{solve_ilp_with, IlpOptions};
use crate::check::{check, CheckOutcome};
use crate::family::offmate::{IlpMode, Offmate, PlanStatus, StepFractions, StepPlan};
use crate::model::Instance;
use crate::units::{Bytes, Ticks};

pub use postprocess::{round, ParamRound, Rounded, Update};
pub use realise::{realise, realise_paced, Pace, Realised};

/// The heuristic's name in errors and reports.
pub const NAME: &str = "offmate";

/// Where a plan came from.
#[derive(Clone, Debug, PartialEq)]
pub enum PlanSource {
    /// The ILP (1)–(23) in this mode; its objective is `solver-reported`.
    Ilp {
        mode: IlpMode,
        status: PlanStatus,
        objective: f64,
        /// The GPU memory the ILP was solved for (below the instance's after a
        /// budget repair).
        budget: Bytes,
        /// Was the CPU optimiser allowed?
        cpu_optimizer: bool,
    },
    /// An ILP-free baseline plan (no objective).
    Baseline(Baseline),
}

/// The ILP-free plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Baseline {
    /// Everything on the GPU, GPU Adam, the fastest option per block.
    AllGpu,
    /// ZeRO-Infinity-like: every parameter offloaded after its use and
    /// prefetched one step before it, CPU Adam wherever a gap allows, the
    /// least-memory option per block.
    OffloadAll,
    /// The same with GPU Adam and paged optimiser states (no CPU optimiser).
    OffloadAllGpuAdam,
}

impl Baseline {
    pub fn name(self) -> &'static str {
        match self {
            Baseline::AllGpu => "all-gpu",
            Baseline::OffloadAll => "offload-all",
            Baseline::OffloadAllGpuAdam => "offload-all-gpu-adam",
        }
    }
    pub fn all() -> [Baseline; 3] {
        [
            Baseline::AllGpu,
            Baseline::OffloadAll,
            Baseline::OffloadAllGpuAdam,
        ]
    }
}

/// A plan rounded, realised and checked.
#[derive(Clone, Debug)]
pub struct OffmateRun {
    pub source: PlanSource,
    pub rounded: Rounded,
    /// The post-processed plan's time in the paper's step model.
    pub step_sum: Ticks,
    /// Per step: realised length and (GPU, d2h, h2d, CPU) busy ticks.
    pub steps: Vec<(Ticks, [Ticks; 4])>,
    /// The plan's Time_t per step (solver-reported; zeros for a baseline).
    pub plan_time: Vec<f64>,
    /// The checker's verdict on the realised schedule.
    pub outcome: CheckOutcome,
}

/// Round `plan`, realise it on `inst` (the compiled `off`) and check it.
pub fn run_plan(
    off: &Offmate,
    inst: &Instance,
    plan: &StepPlan,
    source: PlanSource,
) -> Result<OffmateRun, HeuristicError> {
    let rounded = round(off, plan)?;
    let realised = realise(off, inst, &rounded)?;
    let outcome = check(inst, &realised.schedule);
    Ok(OffmateRun {
        source,
        rounded,
        step_sum: realised.step_sum,
        plan_time: plan.time.clone(),
        steps: realised
            .steps
            .iter()
            .copied()
            .zip(realised.streams.iter().copied())
            .collect(),
        outcome,
    })
}

/// The source of an ILP plan solved for `budget` bytes of GPU memory.
pub fn ilp_source(plan: &StepPlan, budget: Bytes, cpu_optimizer: bool) -> PlanSource {
    PlanSource::Ilp {
        mode: plan.mode,
        status: plan.status.clone(),
        objective: plan.objective,
        budget,
        cpu_optimizer,
    }
}

/// OFFMATE end to end: the ILP in `mode` (time limit, options), the
/// post-processing, the realiser and the checker. When the checker refutes the
/// schedule for GPU memory only, the ILP is solved again for a budget lowered
/// by the excess (the checker's peak less the capacity), at most `repairs`
/// times; every attempt is returned, refuted ones included. An ILP that gives
/// no plan ends the list with its error.
pub fn ilp_runs(
    off: &Offmate,
    inst: &Instance,
    mode: IlpMode,
    limit: std::time::Duration,
    opts: IlpOptions,
    repairs: usize,
) -> Vec<Result<OffmateRun, String>> {
    let mut out = Vec::new();
    let mut budget = off.gpu_memory;
    for _ in 0..=repairs {
        let mut solved_for = off.clone();
        solved_for.gpu_memory = budget;
        let plan = match solve_ilp_with(&solved_for, mode, limit, opts) {
            Ok(p) => p,
            Err(e) => {
                out.push(Err(format!("ILP ({mode:?}, budget {} B): {e}", budget.0)));
                break;
            }
        };
        let source = ilp_source(&plan, budget, opts.cpu_optimizer);
        let run = match run_plan(off, inst, &plan, source) {
            Ok(r) => r,
            Err(e) => {
                out.push(Err(e.to_string()));
                break;
            }
        };
        let excess = memory_excess(inst, &run.outcome);
        out.push(Ok(run));
        match excess {
            Some(x) if x.0 < budget.0 => budget = Bytes(budget.0 - x.0),
            _ => break,
        }
    }
    out
}

/// The GPU memory above the capacity when the checker refuted the schedule for
/// GPU memory and nothing else; `None` otherwise.
fn memory_excess(inst: &Instance, outcome: &CheckOutcome) -> Option<Bytes> {
    let CheckOutcome::Invalid(r) = outcome else {
        return None;
    };
    let only_memory = r
        .report()
        .violations
        .iter()
        .all(|v| matches!(v, crate::check::Violation::MemoryExceeded { .. }));
    let peak = r.report().peak_memory.0;
    let cap = inst.machine.gpu_capacity.0;
    (only_memory && peak > cap).then(|| Bytes(peak - cap))
}

/// A baseline plan in the ILP's notation (so that it goes through the same
/// post-processing).
pub fn baseline_plan(off: &Offmate, b: Baseline) -> StepPlan {
    let l = off.l();
    let n = 2 * l;
    let groups = off.param_groups();
    let option = off
        .blocks
        .iter()
        .map(|blk| {
            let key = |o: &crate::family::offmate::BlockOption| match b {
                Baseline::AllGpu => (o.t_fwd.0 + o.t_bwd.0, o.saved.0 as i64),
                _ => (o.saved.0 as i64, o.t_fwd.0 + o.t_bwd.0),
            };
            (0..blk.options.len())
                .min_by_key(|&o| key(&blk.options[o]))
                .unwrap_or(0)
        })
        .collect();
    let fractions = groups
        .iter()
        .map(|g| {
            let gw = n - 1 - g.blocks[0];
            let fw = g.blocks[0];
            let mut f = vec![StepFractions::default(); n];
            for (t, s) in f.iter_mut().enumerate() {
                let used = g.blocks.iter().any(|&bk| bk == t || n - 1 - bk == t);
                match b {
                    Baseline::AllGpu => {
                        s.sto = 1.0;
                        s.sto_o = 1.0;
                    }
                    _ => {
                        s.sto = if used { 1.0 } else { 0.0 };
                        s.sto_o = if t == gw { 1.0 } else { 0.0 };
                    }
                }
            }
            if b != Baseline::AllGpu {
                f[gw].ofl = 1.0;
                f[gw].ofl_o = 1.0;
                let next = (gw + 1) % n;
                if b == Baseline::OffloadAll && next != fw {
                    f[next].opt = 1.0;
                }
            }
            f
        })
        .collect();
    StepPlan {
        mode: IlpMode::Corrected,
        status: PlanStatus::Optimal,
        objective: f64::NAN,
        option,
        time: vec![0.0; n],
        groups,
        fractions,
    }
}

/// The baselines as registry heuristics (`offcert heuristic -n offmate-…`).
/// A baseline whose realised plan exceeds the GPU or CPU memory says `no
/// schedule` with the checker's reason (its plan fixes what lives where, so
/// there is nothing to repair); it never returns a schedule that does not fit.
/// Algorithm 1 (the ILP, [`algorithm1`]) comes first, so that it keeps the
/// credit on a tie; the step-balanced plan ([`balance`]) second.
pub fn heuristics() -> Vec<Box<dyn super::Heuristic>> {
    let mut v: Vec<Box<dyn super::Heuristic>> =
        vec![Box::new(algorithm1::Algorithm1), Box::new(balance::Balance)];
    v.extend(
        Baseline::all()
            .into_iter()
            .map(|b| Box::new(BaselineHeuristic(b)) as Box<dyn super::Heuristic>),
    );
    v
}

struct BaselineHeuristic(Baseline);

impl super::Heuristic for BaselineHeuristic {
    fn name(&self) -> &'static str {
        match self.0 {
            Baseline::AllGpu => "offmate-all-gpu",
            Baseline::OffloadAll => "offmate-offload-all",
            Baseline::OffloadAllGpuAdam => "offmate-offload-all-gpu-adam",
        }
    }
    fn applies(&self, file: &crate::family::InstanceFile) -> bool {
        file.offmate().is_some()
    }
    fn schedule(
        &self,
        file: &crate::family::InstanceFile,
        inst: &Instance,
    ) -> Result<crate::schedule::Schedule, HeuristicError> {
        let off = file
            .offmate()
            .ok_or_else(|| HeuristicError::NotApplicable {
                heuristic: self.name(),
                family: file.family().into(),
            })?;
        let rounded = round(off, &baseline_plan(off, self.0))?;
        let schedule = realise(off, inst, &rounded)?.schedule;
        match check(inst, &schedule) {
            CheckOutcome::Invalid(r) if only_capacity(&r) => Err(HeuristicError::NoSchedule {
                heuristic: self.name(),
                reason: format!(
                    "its plan does not fit: {}",
                    r.violations()
                        .first()
                        .map(|v| v.describe(inst))
                        .unwrap_or_default()
                ),
            }),
            // Valid, or refuted for another rule: a bug, which `heuristic::run`
            // reports as `invalid` with the checker's reason.
            _ => Ok(schedule),
        }
    }
}

/// Did the checker refute the schedule for the GPU or CPU capacity and
/// nothing else? (A baseline plan fixes what lives where; when that does not
/// fit, the baseline has no schedule.)
pub(crate) fn only_capacity(r: &crate::check::Rejected) -> bool {
    use crate::check::Violation;
    !r.violations().is_empty()
        && r.violations().iter().all(|v| {
            matches!(
                v,
                Violation::MemoryExceeded { .. } | Violation::CpuMemoryExceeded { .. }
            )
        })
}
