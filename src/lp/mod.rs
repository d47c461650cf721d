//! The one LP layer: every call to HiGHS (the `highs` crate, directly and
//! through good_lp) and the LP-file writer live here.
//!
//! Owns: the integer program of the exact MILP ([`Lp`], [`Lin`], [`Var`],
//! `integer.rs`) with its solve ([`Lp::solve`]) and `.lp` writer (`write.rs`);
//! the exact rational MILP of the bounds ([`rational::Milp`]) with its solve
//! ([`solve_rational`]: status, dual bound, LP duals) and its MIP solve with the
//! incumbent ([`solve_mip`]: OFFMATE's ILP, a time-limited run labelled
//! feasible with its gap, never optimal); [`LpError`]. highs and good_lp types never leave this
//! module. Nothing here is trusted: callers replay every schedule with the
//! checker, and re-derive certified bounds in exact arithmetic.
//! Must not import: the checker, the exact methods, bounds, heuristics.
//!
//! The integer program is built with good_lp; the `highs::Model` it produces
//! (`HighsProblem::into_inner`) is then solved directly because good_lp
//! neither reports HiGHS's MIP dual bound nor tells "infeasible" apart from
//! "unbounded or infeasible", and both are needed to label results honestly.
//! The rational MILP is handed to HiGHS as a `RowProblem`.

pub mod checkmate;
mod integer;
pub mod rational;
mod write;

pub use integer::{Lin, Lp, Row, Var};

use good_lp::{variable, Expression, ProblemVariables, SolverModel};
use highs::{HighsModelStatus, RowProblem, Sense};
use rational::{f, Milp};
use std::time::{Duration, Instant};

/// Why HiGHS gave no answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LpError {
    #[error("building the HiGHS model: {0}")]
    Build(String),
    #[error("setting HiGHS option {option}: {status}")]
    Option {
        option: &'static str,
        status: String,
    },
    #[error("HiGHS failed: {0}")]
    Run(String),
    #[error("HiGHS reported optimal without a solution")]
    OptimalWithoutSolution,
    #[error("HiGHS status {0}")]
    Status(String),
    #[error("HiGHS: {0}")]
    Info(String),
}

/// What HiGHS established about an integer program.
#[derive(Clone, Debug)]
pub enum LpResult {
    /// Proven optimal with zero gap; the column values.
    Optimal(Vec<f64>),
    /// Stopped (time limit) with an incumbent.
    Feasible(Vec<f64>),
    /// Proven infeasible.
    Infeasible,
    /// Stopped without an incumbent.
    Unknown,
}

impl Lp {
    /// Solve with HiGHS, MIP gap tolerances zero. HiGHS's MIP presolve has
    /// wrongly declared feasible models infeasible (ERGO-Code/HiGHS#3090,
    /// #2388, #1164; we hit one on a 12-op weight chain), so an infeasibility
    /// found with presolve is confirmed by a second solve without it.
    pub fn solve(&self, time_limit: Duration) -> Result<LpResult, LpError> {
        let start = Instant::now();
        match self.solve_once(time_limit, true, 1) {
            Ok(LpResult::Infeasible) => {
                let left = time_limit.saturating_sub(start.elapsed());
                self.solve_once(left, false, 1)
            }
            Ok(other) => Ok(other),
            // HiGHS's run sometimes ends in its generic error status on tiny
            // models (seen: one activation chain at one horizon, every time).
            // Its answer is only ever used after our own checks, so another
            // run with presolve off, then another seed, is safe; the first
            // error is kept if those fail too.
            Err(first) => {
                for (presolve, seed) in [(false, 1), (true, 7), (false, 7)] {
                    let left = time_limit.saturating_sub(start.elapsed());
                    if let Ok(r) = self.solve_once(left, presolve, seed) {
                        if !(presolve && matches!(r, LpResult::Infeasible)) {
                            return Ok(r);
                        }
                    }
                }
                Err(first)
            }
        }
    }

    /// The program as a good_lp problem with the HiGHS backend.
    fn to_good_lp(&self) -> good_lp::solvers::highs::HighsProblem {
        let mut pv = ProblemVariables::new();
        let vars: Vec<good_lp::Variable> = self
            .cols
            .iter()
            .map(|c| {
                let d = variable().min(c.lo as f64).max(c.hi as f64);
                pv.add(if c.integer { d.integer() } else { d })
            })
            .collect();
        let mut obj = Expression::from(self.objective.constant as f64);
        for (v, c) in &self.objective.terms {
            obj += (*c as f64) * vars[v.0];
        }
        let mut problem = pv.minimise(obj).using(good_lp::highs);
        for r in &self.rows {
            let mut e = Expression::from(0.0);
            for (v, c) in &r.terms {
                e += (*c as f64) * vars[v.0];
            }
            match (r.lo, r.hi) {
                (Some(l), Some(h)) if l == h => {
                    problem.add_constraint(e.eq(l as f64));
                }
                (lo, hi) => {
                    if let Some(l) = lo {
                        problem.add_constraint(e.clone().geq(l as f64));
                    }
                    if let Some(h) = hi {
                        problem.add_constraint(e.leq(h as f64));
                    }
                }
            }
        }
        problem
    }

    fn solve_once(
        &self,
        time_limit: Duration,
        presolve: bool,
        seed: i32,
    ) -> Result<LpResult, LpError> {
        let mut model = self
            .to_good_lp()
            .try_into_inner()
            .map_err(|e| LpError::Build(e.to_string()))?;
        let secs = time_limit.as_secs_f64().max(0.01);
        model.make_quiet();
        // Exact claims need zero gap tolerances (HiGHS's defaults stop at 1e-4 relative).
        set_option(&mut model, "mip_rel_gap", 0.0)?;
        set_option(&mut model, "mip_abs_gap", 0.0)?;
        set_option(&mut model, "time_limit", secs)?;
        if !presolve {
            set_option(&mut model, "presolve", "off")?;
        }
        set_option(&mut model, "random_seed", seed)?;
        let solved = model
            .try_solve()
            .map_err(|e| LpError::Run(format!("{e:?}")))?;
        use highs::HighsSolutionStatus;
        let has_solution = solved.primal_solution_status() == HighsSolutionStatus::Feasible;
        let cols = || solved.get_solution().columns().to_vec();
        use HighsModelStatus as S;
        Ok(match solved.status() {
            S::Optimal => {
                let gap = solved.mip_gap();
                if !has_solution {
                    return Err(LpError::OptimalWithoutSolution);
                }
                if gap.is_finite() && gap > 0.0 {
                    LpResult::Feasible(cols())
                } else {
                    LpResult::Optimal(cols())
                }
            }
            S::Infeasible => LpResult::Infeasible,
            S::ReachedTimeLimit
            | S::ReachedIterationLimit
            | S::ReachedSolutionLimit
            | S::ReachedInterrupt
            | S::ReachedMemoryLimit => {
                if has_solution {
                    LpResult::Feasible(cols())
                } else {
                    LpResult::Unknown
                }
            }
            other => return Err(LpError::Status(format!("{other:?}"))),
        })
    }
}

fn set_option<V: highs::HighsOptionValue>(
    m: &mut highs::Model,
    option: &'static str,
    v: V,
) -> Result<(), LpError> {
    m.try_set_option(option, v).map_err(|e| LpError::Option {
        option,
        status: format!("{e:?}"),
    })
}

/// How a solve of a rational MILP ended, as far as the bounds need to know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SolveStatus {
    Optimal,
    Infeasible,
    ReachedTimeLimit,
    /// The MIP stopped at [`MIP_MAX_NODES`] (its dual bound still holds).
    ReachedNodeLimit,
    /// Any other HiGHS model status, by its name.
    Other(String),
}

/// What HiGHS said about a rational MILP.
#[derive(Clone, Debug)]
pub struct Solved {
    pub status: SolveStatus,
    /// MIP: the proven lower bound (without the constant); LP: the objective.
    pub dual_bound: f64,
    pub row_duals: Vec<f64>,
    /// LP (`relax = true`) solved to optimality: the primal column values
    /// (empty otherwise). Rounding heuristics read them; never trusted.
    pub columns: Vec<f64>,
}

fn row_problem(m: &Milp, relax: bool) -> RowProblem {
    let mut pb = RowProblem::default();
    let cols: Vec<highs::Col> = m
        .cols
        .iter()
        .map(|c| {
            let lo = f(&c.lo);
            let integer = c.integer && !relax;
            match &c.hi {
                Some(hi) => pb.add_column_with_integrality(f(&c.cost), lo..=f(hi), integer),
                None => pb.add_column_with_integrality(f(&c.cost), lo.., integer),
            }
        })
        .collect();
    for r in &m.rows {
        let coefs: Vec<(highs::Col, f64)> = r.coefs.iter().map(|(j, a)| (cols[*j], f(a))).collect();
        match (&r.lo, &r.hi) {
            (Some(lo), Some(hi)) => pb.add_row(f(lo)..=f(hi), coefs),
            (Some(lo), None) => pb.add_row(f(lo).., coefs),
            (None, Some(hi)) => pb.add_row(..=f(hi), coefs),
            (None, None) => pb.add_row::<f64, _, _, _>(.., coefs),
        }
    }
    pb
}

/// The branch-and-bound nodes a MIP of [`solve_rational`] may explore: a count,
/// not a clock, so that its bound is the same on every machine.
pub const MIP_MAX_NODES: i32 = 100_000;

/// Solve the rational MILP (`relax = false`) or its LP relaxation (`relax =
/// true`) in floating point. Nothing here is trusted: the MIP's dual bound is
/// `solver-reported`, and the LP's duals only feed an exact certification.
///
/// The MIP (`relax = false`) stops after [`MIP_MAX_NODES`] branch-and-bound
/// nodes, a deterministic cut (single-threaded HiGHS); `time_limit` is a
/// wall-clock cut on top (`Duration::MAX`: none).
pub fn solve_rational(m: &Milp, relax: bool, time_limit: Duration) -> Result<Solved, LpError> {
    let mut model = row_problem(m, relax).optimise(Sense::Minimise);
    model.make_quiet();
    model.set_option("time_limit", time_limit.as_secs_f64());
    model.set_option("threads", 1);
    if !relax {
        model.set_option("mip_max_nodes", MIP_MAX_NODES);
    }
    if relax {
        // A basic solution: its duals are the cleanest input for the certificate.
        model.set_option("solver", "simplex");
    }
    let solved = model
        .try_solve()
        .map_err(|e| LpError::Info(format!("{e:?}")))?;
    let status = match solved.status() {
        HighsModelStatus::Optimal => SolveStatus::Optimal,
        HighsModelStatus::Infeasible => SolveStatus::Infeasible,
        HighsModelStatus::ReachedTimeLimit => SolveStatus::ReachedTimeLimit,
        HighsModelStatus::ReachedSolutionLimit if !relax => SolveStatus::ReachedNodeLimit,
        other => SolveStatus::Other(format!("{other:?}")),
    };
    let dual_bound = if relax {
        solved.objective_value()
    } else {
        solved
            .double_info_value(c"mip_dual_bound")
            .map_err(|e| LpError::Info(format!("{e:?}")))?
    };
    let (row_duals, columns) = if relax {
        let sol = solved.get_solution();
        let columns = if status == SolveStatus::Optimal {
            sol.columns().to_vec()
        } else {
            Vec::new()
        };
        (sol.dual_rows().to_vec(), columns)
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(Solved {
        status,
        dual_bound,
        row_duals,
        columns,
    })
}

/// How a MIP solve of a rational MILP ended, with the incumbent when there is one.
#[derive(Clone, Debug, PartialEq)]
pub enum MipStatus {
    /// HiGHS closed the gap to zero (mip_rel_gap and mip_abs_gap set to 0).
    Optimal,
    /// Stopped by a limit (or HiGHS said optimal with a gap left) with an
    /// incumbent: `gap` = (primal − dual) / |primal| as HiGHS's own figures give it.
    Feasible { gap: f64 },
    /// Proven infeasible.
    Infeasible,
    /// Stopped by a limit without an incumbent.
    NoSolution,
    /// Any other HiGHS model status, by its name.
    Other(String),
}

/// What HiGHS said about a rational MILP solved to optimality (or to its limit).
#[derive(Clone, Debug)]
pub struct MipSolved {
    pub status: MipStatus,
    /// The incumbent's objective (without the constant); NaN without one.
    pub objective: f64,
    /// HiGHS's proven lower bound (without the constant).
    pub dual_bound: f64,
    /// The incumbent's column values (empty without one).
    pub columns: Vec<f64>,
}

/// (primal − dual) / |primal|, 0 when both are 0 (HiGHS's own definition of the gap).
fn relative_gap(primal: f64, dual: f64) -> f64 {
    if !dual.is_finite() {
        return f64::INFINITY;
    }
    let diff = (primal - dual).max(0.0);
    if diff == 0.0 {
        0.0
    } else {
        diff / primal.abs().max(f64::MIN_POSITIVE)
    }
}

/// Solve the rational MILP as a MIP with zero gap tolerances, returning the
/// incumbent. A run stopped by `time_limit` is [`MipStatus::Feasible`] with its
/// gap, never optimal; so is an "optimal" whose own gap is not zero. Nothing
/// here is trusted: the values are solver output (`solver-reported`).
pub fn solve_mip(m: &Milp, time_limit: Duration) -> Result<MipSolved, LpError> {
    solve_mip_limited(m, time_limit, None)
}

/// [`solve_mip`] that also stops after `max_nodes` branch-and-bound nodes
/// (`None`: no node limit). With `time_limit` = `Duration::MAX` the solve is
/// cut by the node count alone: single-threaded HiGHS then gives the same
/// incumbent on every machine and under any load (a stop by the node limit is
/// [`MipStatus::Feasible`] with its gap).
pub fn solve_mip_limited(
    m: &Milp,
    time_limit: Duration,
    max_nodes: Option<i32>,
) -> Result<MipSolved, LpError> {
    let mut model = row_problem(m, false).optimise(Sense::Minimise);
    model.make_quiet();
    model.set_option("time_limit", time_limit.as_secs_f64().max(0.001));
    model.set_option("threads", 1);
    if let Some(n) = max_nodes {
        model.set_option("mip_max_nodes", n.max(1));
    }
    model.set_option("mip_rel_gap", 0.0);
    model.set_option("mip_abs_gap", 0.0);
    let solved = model
        .try_solve()
        .map_err(|e| LpError::Run(format!("{e:?}")))?;
    let has_solution = solved.primal_solution_status() == highs::HighsSolutionStatus::Feasible;
    let dual_bound = solved
        .double_info_value(c"mip_dual_bound")
        .map_err(|e| LpError::Info(format!("{e:?}")))?;
    let (objective, columns) = if has_solution {
        (
            solved.objective_value(),
            solved.get_solution().columns().to_vec(),
        )
    } else {
        (f64::NAN, Vec::new())
    };
    use HighsModelStatus as S;
    let status = match solved.status() {
        S::Optimal if !has_solution => return Err(LpError::OptimalWithoutSolution),
        // With both gap tolerances at zero, HiGHS stops "optimal" only once the
        // bounds meet; a residual of 1e-9 relative is floating-point noise in
        // the two figures, a larger one an open gap.
        S::Optimal => match relative_gap(objective, dual_bound) {
            g if g > 1e-9 => MipStatus::Feasible { gap: g },
            _ => MipStatus::Optimal,
        },
        S::Infeasible => MipStatus::Infeasible,
        S::ReachedTimeLimit
        | S::ReachedIterationLimit
        | S::ReachedSolutionLimit
        | S::ReachedInterrupt
        | S::ReachedMemoryLimit => {
            if has_solution {
                MipStatus::Feasible {
                    gap: relative_gap(objective, dual_bound),
                }
            } else {
                MipStatus::NoSolution
            }
        }
        other => MipStatus::Other(format!("{other:?}")),
    };
    Ok(MipSolved {
        status,
        objective,
        dual_bound,
        columns,
    })
}

#[cfg(test)]
mod tests {
    use super::relative_gap;

    #[test]
    fn the_gap_is_relative_to_the_incumbent() {
        assert_eq!(relative_gap(100.0, 100.0), 0.0);
        assert_eq!(relative_gap(100.0, 90.0), 0.1);
        assert_eq!(relative_gap(0.0, 0.0), 0.0);
        assert_eq!(relative_gap(5.0, f64::NEG_INFINITY), f64::INFINITY);
    }
}
