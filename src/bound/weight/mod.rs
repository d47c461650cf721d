//! Lower bounds for `weight_chain`: the MILP of the weight paper's §6,
//! eqs. (2)–(8), solved with HiGHS, and a certified bound from its LP relaxation.
//!
//! Owns: [`Sec6Milp`] (`milp-sec6`, solver-reported: HiGHS's proven MIP bound),
//! [`Sec6Certified`] (`milp-sec6-lp`, certified: Neumaier–Shcherbina from the LP
//! duals in exact rationals), the MILP ([`sec6_milp`]), the turnaround bound
//! ([`turnaround`], certified, integer arithmetic) and the registry.
//! The proof that the (corrected) MILP bounds every valid schedule of our model,
//! and the counterexample to the MILP as printed, are in `proofs/WEIGHT-BOUND.md`.
//! Must not import: heuristics, exact solvers. HiGHS is reached only through [`crate::lp`].

pub mod certify;
pub mod sec6_milp;
pub mod turnaround;

use super::{BoundError, BoundMethod, Failure, LowerBound, Strength};
use crate::family::{InstanceFile, WeightChain};
use crate::lp::{self, rational, SolveStatus};
use crate::model::Instance;
use num_bigint::BigInt;
use num_rational::BigRational;
use sec6_milp::{build, Variant};
use std::time::Duration;

/// Both §6 bounds and the turnaround bound.
pub fn bounds() -> Vec<Box<dyn BoundMethod>> {
    vec![
        Box::new(Sec6Certified::default()),
        Box::new(Sec6Milp::default()),
        Box::new(turnaround::Turnaround),
    ]
}

/// The bound's failure with its typed cause.
fn failed(bound: &'static str, cause: impl Into<Failure>) -> BoundError {
    BoundError::Failed {
        bound,
        cause: cause.into(),
    }
}

/// The MIP's own bound (HiGHS's proven dual bound, which is the optimum when it
/// finishes): `solver-reported`. By default it runs without a clock: the
/// search is cut by a count of branch-and-bound nodes
/// ([`lp::MIP_MAX_NODES`], single-threaded HiGHS), so that the bound does not
/// depend on the machine's speed or load (the gap report's `--jobs`).
#[derive(Clone, Debug)]
pub struct Sec6Milp {
    /// A wall-clock cut on top of the node count (default: none, `Duration::MAX`).
    pub time_limit: Duration,
    pub variant: Variant,
}

impl Default for Sec6Milp {
    fn default() -> Sec6Milp {
        Sec6Milp {
            time_limit: Duration::MAX,
            variant: Variant::Corrected,
        }
    }
}

/// The certified bound from the LP relaxation of the §6 MILP. By default the
/// LP runs to its end, without a clock (an LP always ends), so that the bound
/// does not depend on the machine's speed or load; under a time limit that
/// stops it, the bound falls back to Σu (dual vector 0).
#[derive(Clone, Debug)]
pub struct Sec6Certified {
    /// A wall-clock cut (default: none, `Duration::MAX`).
    pub time_limit: Duration,
    pub variant: Variant,
}

impl Default for Sec6Certified {
    fn default() -> Sec6Certified {
        Sec6Certified {
            time_limit: Duration::MAX,
            variant: Variant::Corrected,
        }
    }
}

/// An f64 from the solver as a rational; within 1e-6 of an integer it is that
/// integer (solver tolerances, not information).
fn solver_value(x: f64) -> BigRational {
    let r = x.round();
    if (x - r).abs() <= 1e-6 * x.abs().max(1.0) {
        BigRational::from_integer(BigInt::from(r as i128))
    } else {
        BigRational::from_float(x).unwrap_or_default()
    }
}

impl Sec6Milp {
    pub fn compute(&self, c: &WeightChain) -> Result<LowerBound, BoundError> {
        let name = self.name();
        let m = build(c, self.variant).map_err(|e| failed(name, e))?;
        let s = lp::solve_rational(&m, false, self.time_limit).map_err(|e| failed(name, e))?;
        match s.status {
            SolveStatus::Optimal
            | SolveStatus::ReachedTimeLimit
            | SolveStatus::ReachedNodeLimit => {}
            SolveStatus::Infeasible => return Err(failed(name, Failure::MilpInfeasible)),
            SolveStatus::Other(other) => return Err(failed(name, Failure::SolverStatus(other))),
        }
        if !s.dual_bound.is_finite() {
            return Err(failed(name, Failure::NoMipBound));
        }
        let value = solver_value(s.dual_bound + rational::f(&m.constant));
        Ok(LowerBound {
            value,
            source: name.into(),
            strength: Strength::SolverReported,
        })
    }
}

impl Sec6Certified {
    pub fn compute(&self, c: &WeightChain) -> Result<LowerBound, BoundError> {
        let name = self.name();
        let m = build(c, self.variant).map_err(|e| failed(name, e))?;
        let s = lp::solve_rational(&m, true, self.time_limit).map_err(|e| failed(name, e))?;
        // Any y gives a valid bound; without an optimal basis, y = 0 still gives Σu.
        let y = if s.status == SolveStatus::Optimal {
            s.row_duals
        } else {
            Vec::new()
        };
        let value = certify::certified_bound(&m, &y).map_err(|u| failed(name, u))?;
        Ok(LowerBound {
            value,
            source: name.into(),
            strength: Strength::Certified,
        })
    }
}

impl BoundMethod for Sec6Milp {
    fn name(&self) -> &'static str {
        match self.variant {
            Variant::Corrected => "milp-sec6",
            Variant::Literal => "milp-sec6-as-printed",
        }
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        file.weight_chain().is_some()
    }
    fn bound(&self, file: &InstanceFile, _inst: &Instance) -> Result<LowerBound, BoundError> {
        self.compute(super::weight_chain(self.name(), file)?)
    }
}

impl BoundMethod for Sec6Certified {
    fn name(&self) -> &'static str {
        match self.variant {
            Variant::Corrected => "milp-sec6-lp",
            Variant::Literal => "milp-sec6-lp-as-printed",
        }
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        file.weight_chain().is_some()
    }
    fn bound(&self, file: &InstanceFile, _inst: &Instance) -> Result<LowerBound, BoundError> {
        self.compute(super::weight_chain(self.name(), file)?)
    }
}
