//! `offmate`: the OFFMATE ILP (1)–(23) as printed and corrected, solved with
//! HiGHS, and the certified lower bounds on the period of an `offmate` instance.
//!
//! The ILP is a *paper model*: its value is `solver-reported` (stating the mode)
//! and is **not** a lower bound on offcert's period, not even on the solver's
//! word. Its LP relaxation is not a relaxation of the event model (Assumption 3
//! charges a step's memory as a whole, Assumption 6 keeps activation transfers
//! in their steps, (19a)/(20) serialise self-offloads with compute, and (7)
//! makes non-trainable parameters pay an offload): `proofs/OFFMATE-ILP.md` §3
//! gives a counterexample, so no bound is derived from it. The certified bounds
//! are [`volume`]'s, [`forced`]'s and [`kept`]'s (`proofs/OFFMATE-BOUNDS.md`), re-derived in
//! exact rationals without a solver.
//!
//! Owns: [`solve_ilp`], [`OffmateIlpError`], the ILP ([`ilp`]), the bounds
//! ([`volume`], [`forced`], [`kept`]) and their registry entries. Must not import: heuristics, exact
//! solvers, the simulator. HiGHS is reached only through [`crate::lp`].

pub mod forced;
pub mod ilp;
pub mod kept;
pub mod volume;

use crate::family::offmate::{IlpMode, Offmate, PlanStatus, StepFractions, StepPlan};
use crate::lp::{self, rational, LpError, MipStatus, SolveStatus};
use crate::model::ModelError;
use num_rational::BigRational;
use num_traits::Zero;
use std::time::Duration;

pub use forced::{forced_bound, Lines, OffmateCpu, OffmateTraffic, OffmateTurnaround};
pub use ilp::{build, Ilp};
pub use kept::{kept_bound, OffmateKept};
pub use volume::{OffmateCompute, OffmateVolume};

/// Every certified OFFMATE bound, weakest first.
pub fn bounds() -> Vec<Box<dyn crate::bound::BoundMethod>> {
    let mut v = volume::bounds();
    v.extend(forced::bounds());
    v.extend(kept::bounds());
    v
}

/// Why the ILP gave no plan.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OffmateIlpError {
    #[error("the offmate instance: {0}")]
    Instance(#[from] ModelError),
    #[error(transparent)]
    Lp(#[from] LpError),
    #[error("the OFFMATE ILP ({mode:?}) is infeasible (solver-reported)")]
    Infeasible { mode: IlpMode },
    #[error("the OFFMATE ILP ({mode:?}) found no solution within {limit:?}")]
    NoSolution { mode: IlpMode, limit: Duration },
    #[error("HiGHS status {0}")]
    SolverStatus(String),
}

/// Solve the ILP (1)–(23) on `inst` in `mode` with HiGHS, stopping after
/// `time_limit`. The plan's status is `Optimal` only when HiGHS closed the gap
/// to zero; a run stopped by the limit is `Feasible { gap }`.
pub fn solve_ilp(
    inst: &Offmate,
    mode: IlpMode,
    time_limit: Duration,
) -> Result<StepPlan, OffmateIlpError> {
    solve_ilp_with(inst, mode, time_limit, IlpOptions::default())
}

/// Options of an ILP solve beyond its mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IlpOptions {
    /// May parameters be updated on the CPU? `false` fixes every Opt_t^w to 0
    /// (Table 2's "w/o CPU optim" ablation).
    pub cpu_optimizer: bool,
    /// Stop after this many branch-and-bound nodes (`None`: the time limit
    /// alone). With `Duration::MAX` as the time limit the solve is the same on
    /// every machine (the gap report's deterministic mode).
    pub max_nodes: Option<i32>,
}

impl Default for IlpOptions {
    fn default() -> Self {
        IlpOptions {
            cpu_optimizer: true,
            max_nodes: None,
        }
    }
}

/// [`solve_ilp`] with [`IlpOptions`].
pub fn solve_ilp_with(
    inst: &Offmate,
    mode: IlpMode,
    time_limit: Duration,
    opts: IlpOptions,
) -> Result<StepPlan, OffmateIlpError> {
    inst.validate()?;
    let mut model = build(inst, mode);
    if !opts.cpu_optimizer {
        for f in model.frac.iter().flatten() {
            if let Some(c) = f.opt {
                model.milp.cols[c].hi = Some(BigRational::zero());
            }
        }
    }
    let s = lp::solve_mip_limited(&model.milp, time_limit, opts.max_nodes)?;
    let status = match s.status {
        MipStatus::Optimal => PlanStatus::Optimal,
        MipStatus::Feasible { gap } => PlanStatus::Feasible { gap },
        MipStatus::Infeasible => return Err(OffmateIlpError::Infeasible { mode }),
        MipStatus::NoSolution => {
            return Err(OffmateIlpError::NoSolution {
                mode,
                limit: time_limit,
            })
        }
        MipStatus::Other(o) => return Err(OffmateIlpError::SolverStatus(o)),
    };
    Ok(read_plan(&model, &s.columns, s.objective, status))
}

/// The plan in the paper's notation from HiGHS's column values.
fn read_plan(model: &Ilp, x: &[f64], objective: f64, status: PlanStatus) -> StepPlan {
    let option = model
        .comp
        .iter()
        .map(|cols| {
            let mut best = 0;
            for (o, &c) in cols.iter().enumerate() {
                if x[c] > x[cols[best]] {
                    best = o;
                }
            }
            best
        })
        .collect();
    let fractions = model
        .frac
        .iter()
        .map(|per_step| {
            per_step
                .iter()
                .map(|f| StepFractions {
                    sto: x[f.sto],
                    ofl: x[f.ofl],
                    prf: x[f.prf],
                    sto_o: x[f.sto_o],
                    ofl_o: x[f.ofl_o],
                    prf_o: x[f.prf_o],
                    opt: f.opt.map_or(0.0, |o| x[o]),
                })
                .collect()
        })
        .collect();
    StepPlan {
        mode: model.mode,
        status,
        objective: objective + rational::f(&model.milp.constant),
        option,
        time: model.time.iter().map(|&t| x[t]).collect(),
        groups: model.groups.clone(),
        fractions,
    }
}

/// The value of the ILP's LP relaxation (HiGHS, floating point): a paper-model
/// figure, `solver-reported`; `None` when HiGHS finds the relaxation infeasible.
/// Not a bound on offcert's period (module docs).
pub fn lp_relaxation(
    inst: &Offmate,
    mode: IlpMode,
    time_limit: Duration,
) -> Result<Option<f64>, OffmateIlpError> {
    inst.validate()?;
    let model = build(inst, mode);
    let s = lp::solve_rational(&model.milp, true, time_limit)?;
    match s.status {
        SolveStatus::Optimal => Ok(Some(s.dual_bound + rational::f(&model.milp.constant))),
        SolveStatus::Infeasible => Ok(None),
        SolveStatus::ReachedTimeLimit | SolveStatus::ReachedNodeLimit => {
            Err(OffmateIlpError::NoSolution {
                mode,
                limit: time_limit,
            })
        }
        SolveStatus::Other(o) => Err(OffmateIlpError::SolverStatus(o)),
    }
}
