//! Lower bounds for `weight_chain`: the MILP of the weight paper's §6,
//! eqs. (2)–(8), solved with HiGHS, and a certified bound from its LP relaxation.
//!
//! Owns: [`Sec6Milp`] (`milp-sec6`, solver-reported: HiGHS's proven MIP bound),
//! [`Sec6Certified`] (`milp-sec6-lp`, certified: Neumaier–Shcherbina from the LP
//! duals in exact rationals), the MILP ([`sec6_milp`]) and the registry.
//! The proof that the (corrected) MILP bounds every valid schedule of our model,
//! and the counterexample to the MILP as printed, are in `proofs/WEIGHT-BOUND.md`.
//! Must not import: heuristics, exact solvers. HiGHS is reached only through [`crate::lp`].

pub mod certify;
pub mod sec6_milp;

use super::{BoundError, BoundMethod, LowerBound, Strength};
use crate::family::{InstanceFile, WeightChain};
use crate::lp::{self, rational, SolveStatus};
use crate::model::Instance;
use num_bigint::BigInt;
use num_rational::BigRational;
use sec6_milp::{build, ModelIssue, Variant};
use std::time::Duration;

/// Both §6 bounds.
pub fn bounds() -> Vec<Box<dyn BoundMethod>> {
    vec![
        Box::new(Sec6Certified::default()),
        Box::new(Sec6Milp::default()),
    ]
}

fn chain<'a>(bound: &'static str, file: &'a InstanceFile) -> Result<&'a WeightChain, BoundError> {
    match file {
        InstanceFile::WeightChain(c) => Ok(c),
        other => Err(BoundError::NotApplicable {
            bound,
            family: other.family().into(),
        }),
    }
}

fn issue(bound: &'static str, e: ModelIssue) -> BoundError {
    BoundError::Failed {
        bound,
        message: match e {
            ModelIssue::OpTooBig {
                op,
                memory,
                capacity,
            } => {
                format!("op #{op} (paper numbering from B_L) alone needs {memory} B > {capacity} B: no schedule exists")
            }
            ModelIssue::Overflow => "memory sizes overflow 64 bits".into(),
        },
    }
}

/// The MIP's own bound (HiGHS's proven dual bound, which is the optimum when it
/// finishes): `solver-reported`.
#[derive(Clone, Debug)]
pub struct Sec6Milp {
    pub time_limit: Duration,
    pub variant: Variant,
}

impl Default for Sec6Milp {
    fn default() -> Sec6Milp {
        Sec6Milp {
            time_limit: Duration::from_secs(60),
            variant: Variant::Corrected,
        }
    }
}

/// The certified bound from the LP relaxation of the §6 MILP.
#[derive(Clone, Debug)]
pub struct Sec6Certified {
    pub time_limit: Duration,
    pub variant: Variant,
}

impl Default for Sec6Certified {
    fn default() -> Sec6Certified {
        Sec6Certified {
            time_limit: Duration::from_secs(60),
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
        let m = build(c, self.variant).map_err(|e| issue(name, e))?;
        let s = lp::solve_rational(&m, false, self.time_limit).map_err(|e| BoundError::Failed {
            bound: name,
            message: e.to_string(),
        })?;
        match s.status {
            SolveStatus::Optimal | SolveStatus::ReachedTimeLimit => {}
            SolveStatus::Infeasible => {
                return Err(BoundError::Failed {
                    bound: name,
                    message: "the MILP is infeasible (solver-reported)".into(),
                })
            }
            SolveStatus::Other(other) => {
                return Err(BoundError::Failed {
                    bound: name,
                    message: format!("HiGHS status {other}"),
                })
            }
        }
        if !s.dual_bound.is_finite() {
            return Err(BoundError::Failed {
                bound: name,
                message: "no finite MIP bound before the time limit".into(),
            });
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
        let m = build(c, self.variant).map_err(|e| issue(name, e))?;
        let s = lp::solve_rational(&m, true, self.time_limit).map_err(|e| BoundError::Failed {
            bound: name,
            message: e.to_string(),
        })?;
        // Any y gives a valid bound; without an optimal basis, y = 0 still gives Σu.
        let y = if s.status == SolveStatus::Optimal {
            s.row_duals
        } else {
            Vec::new()
        };
        let value = certify::certified_bound(&m, &y).map_err(|u| BoundError::Failed {
            bound: name,
            message: format!("no finite bound (column {})", u.column),
        })?;
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
        matches!(file, InstanceFile::WeightChain(_))
    }
    fn bound(&self, file: &InstanceFile, _inst: &Instance) -> Result<LowerBound, BoundError> {
        self.compute(chain(self.name(), file)?)
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
        matches!(file, InstanceFile::WeightChain(_))
    }
    fn bound(&self, file: &InstanceFile, _inst: &Instance) -> Result<LowerBound, BoundError> {
        self.compute(chain(self.name(), file)?)
    }
}
