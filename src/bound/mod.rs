//! Lower bounds on the optimal makespan (or period): one file per bound.
//!
//! Owns: [`LowerBound`], [`Strength`], the [`BoundMethod`] trait and the registry.
//! A bound is `certified` only when our own code re-derives it in exact
//! arithmetic; a number taken from a solver's word is `solver-reported`.
//! Must not import: heuristics, exact solvers' internals.

pub mod activation;
pub mod graph;
pub mod offmate;
pub mod op_sequence;
pub mod remat;
pub mod weight;

use crate::family::{ActivationChain, InstanceFile, WeightChain};
use crate::model::Instance;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, ToPrimitive};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strength {
    /// Re-derived by our own code in exact arithmetic: "lower bound (certified)".
    Certified,
    /// Taken from a solver's word: "solver-reported".
    SolverReported,
}

impl Strength {
    pub fn words(self) -> &'static str {
        match self {
            Strength::Certified => "lower bound (certified)",
            Strength::SolverReported => "solver-reported",
        }
    }
}

/// A lower bound on the makespan (one-shot) or period (cyclic), in ticks, as an
/// exact rational. Schedules have integer event times, so ⌈value⌉ is also a bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LowerBound {
    pub value: BigRational,
    /// Which bound (e.g. "prop3", "fractional-thm2", "milp-sec6").
    pub source: String,
    pub strength: Strength,
}

impl LowerBound {
    /// ⌈value⌉ as an integer number of ticks (saturating at i64::MAX).
    pub fn ceil_ticks(&self) -> i64 {
        let c = self.value.ceil().to_integer();
        c.to_i64()
            .unwrap_or(if c.is_negative() { i64::MIN } else { i64::MAX })
    }
    pub fn from_ticks(t: i64, source: &str, strength: Strength) -> LowerBound {
        LowerBound::from_ratio(t, 1, source, strength)
    }
    /// The bound num/den ticks (den > 0).
    pub fn from_ratio(num: i64, den: i64, source: &str, strength: Strength) -> LowerBound {
        LowerBound {
            value: BigRational::new(BigInt::from(num), BigInt::from(den)),
            source: source.into(),
            strength,
        }
    }
    /// Decimal rendering with up to 3 fractional digits (display only).
    pub fn display(&self) -> String {
        if self.value.denom() == &BigInt::from(1) {
            return self.value.numer().to_string();
        }
        let scaled = (&self.value * BigRational::from_integer(BigInt::from(1000)))
            .floor()
            .to_integer();
        let s = scaled.to_string();
        let (neg, digits) = if let Some(d) = s.strip_prefix('-') {
            (true, d.to_string())
        } else {
            (false, s)
        };
        let digits = format!("{digits:0>4}");
        let (i, f) = digits.split_at(digits.len() - 3);
        format!("{}{}.{}…", if neg { "-" } else { "" }, i, f)
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BoundError {
    #[error("bound {bound} does not apply to family {family}")]
    NotApplicable { bound: &'static str, family: String },
    #[error("bound {bound}: {cause}")]
    Failed {
        bound: &'static str,
        #[source]
        cause: Failure,
    },
    /// No schedule exists at all (e.g. an op alone needs more than the GPU
    /// memory), so no finite bound is meaningful.
    #[error("bound {bound}: the instance has no valid schedule: {reason}")]
    Infeasible { bound: &'static str, reason: String },
}

/// Why a bound could not be computed (the cause of [`BoundError::Failed`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// The §6 MILP cannot be built.
    #[error(transparent)]
    Model(#[from] weight::sec6_milp::ModelIssue),
    /// HiGHS gave no answer.
    #[error(transparent)]
    Lp(#[from] crate::lp::LpError),
    #[error("the MILP is infeasible (solver-reported)")]
    MilpInfeasible,
    /// Any other HiGHS model status, by its name.
    #[error("HiGHS status {0}")]
    SolverStatus(String),
    #[error("no finite MIP bound before the time limit")]
    NoMipBound,
    /// A `remat_chain` feature the bound's proof does not cover.
    #[error("not proved for this instance: {0}")]
    Unsupported(crate::family::remat_chain::RematFeature),
    /// The certificate's dual vector leaves a column unbounded.
    #[error(transparent)]
    Unbounded(#[from] weight::certify::Unbounded),
    /// The fractional sweep (internal error).
    #[error("ended with {0} B still on the CPU")]
    LeftOnCpu(BigRational),
    /// The fractional sweep (internal error).
    #[error("stuck at t={at} before {op} with {cpu} B on the CPU")]
    Stuck {
        at: Box<BigRational>,
        op: String,
        cpu: Box<BigRational>,
    },
    /// The fractional sweep (internal error).
    #[error("did not converge (internal error)")]
    NoConvergence,
    /// The instance file does not describe a well-formed instance.
    #[error(transparent)]
    Instance(#[from] crate::model::ModelError),
    /// Not a computation graph, or one the bound does not take (its reason).
    #[error("{0}")]
    Graph(String),
    /// What a search-based bound does not model, or an instance too large
    /// for it (its reason).
    #[error("{0}")]
    OutsideSearch(String),
    /// The instance's byte sizes overflow `u64` when added up.
    #[error("sizes overflow")]
    SizesOverflow,
}

/// A lower-bound method.
pub trait BoundMethod: Send + Sync {
    fn name(&self) -> &'static str;
    /// Does it apply to this instance file's family?
    fn applies(&self, file: &InstanceFile) -> bool;
    fn bound(&self, file: &InstanceFile, inst: &Instance) -> Result<LowerBound, BoundError>;
}

/// The weight chain of `file`, or `bound`'s NotApplicable error.
fn weight_chain<'a>(
    bound: &'static str,
    file: &'a InstanceFile,
) -> Result<&'a WeightChain, BoundError> {
    file.weight_chain()
        .ok_or_else(|| BoundError::NotApplicable {
            bound,
            family: file.family().into(),
        })
}

/// The activation chain of `file`, or `bound`'s NotApplicable error.
fn activation_chain<'a>(
    bound: &'static str,
    file: &'a InstanceFile,
) -> Result<&'a ActivationChain, BoundError> {
    file.activation_chain()
        .ok_or_else(|| BoundError::NotApplicable {
            bound,
            family: file.family().into(),
        })
}

/// The width of the name column of `offcert bound`: every registered bound's
/// name fits (`tests/it/remat_bound.rs` checks it).
pub const NAME_WIDTH: usize = 20;

/// Every bound method, both families.
pub fn all() -> Vec<Box<dyn BoundMethod>> {
    let mut v = activation::bounds();
    v.extend(weight::bounds());
    v.extend(op_sequence::bounds());
    v.extend(remat::bounds());
    v.extend(offmate::bounds());
    v.extend(graph::bounds());
    v
}

/// Every applicable bound's outcome for one instance, in registry order.
pub fn evaluate(
    file: &InstanceFile,
    inst: &Instance,
) -> Vec<(&'static str, Result<LowerBound, BoundError>)> {
    all()
        .iter()
        .filter(|b| b.applies(file))
        .map(|b| (b.name(), b.bound(file, inst)))
        .collect()
}

/// The largest bound of one strength. The gap report takes its best bound
/// with `Strength::Certified` only: a `solver-reported` value, however
/// large, is shown beside it and never used in its place.
pub fn best_of<'a>(
    bounds: impl IntoIterator<Item = &'a LowerBound>,
    strength: Strength,
) -> Option<&'a LowerBound> {
    bounds.into_iter().filter(|b| b.strength == strength).fold(
        None,
        |best: Option<&LowerBound>, b| match best {
            Some(cur) if cur.value >= b.value => Some(cur),
            _ => Some(b),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lb(num: i64, den: i64, source: &str, strength: Strength) -> LowerBound {
        LowerBound::from_ratio(num, den, source, strength)
    }

    /// bert-L144-b16 (issue 14): the solver-reported MILP value 10933790 is
    /// above the certified LP bound 10933789.83…; the best certified bound is
    /// the LP's, and the best solver-reported one is the MILP's.
    #[test]
    fn a_larger_solver_reported_bound_is_never_the_best_certified_one() {
        let v = vec![
            lb(10933790, 1, "milp-sec6", Strength::SolverReported),
            lb(1093378983, 100, "milp-sec6-lp", Strength::Certified),
            lb(5, 1, "trivial", Strength::Certified),
        ];
        let c = best_of(&v, Strength::Certified).unwrap();
        assert_eq!(c.source, "milp-sec6-lp");
        assert_eq!(
            best_of(&v, Strength::SolverReported).unwrap().source,
            "milp-sec6"
        );
        assert!(best_of(&v[..1], Strength::Certified).is_none());
    }

    #[test]
    fn a_failed_bound_keeps_its_typed_cause() {
        let e = BoundError::Failed {
            bound: "milp-sec6",
            cause: Failure::from(weight::sec6_milp::ModelIssue::Overflow),
        };
        let cause = std::error::Error::source(&e).expect("a cause");
        assert!(matches!(
            cause.downcast_ref::<Failure>(),
            Some(Failure::Model(weight::sec6_milp::ModelIssue::Overflow))
        ));
        assert_eq!(
            e.to_string(),
            "bound milp-sec6: memory sizes overflow 64 bits"
        );
    }
}
