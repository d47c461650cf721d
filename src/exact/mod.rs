//! Exact methods for small instances: time-indexed MILP, SMT and exhaustive
//! search, written independently of each other, plus the cross-check that runs
//! them and labels the result.
//!
//! Owns: [`Outcome`], [`Status`], [`Limits`], [`ExactError`] and the methods.
//! Every returned schedule is passed through [`crate::check::check`] before any
//! number is reported; the reported makespan is the checker's.
//! Backend types never leave their module: z3 stays in `smt`, and HiGHS and
//! good_lp in [`crate::lp`], the one LP layer.
//!
//! Must not import: bounds, heuristics, traces, reports, the CLI (and each
//! method none of the others: MILP, SMT and search are independent).

pub mod crosscheck;
pub mod milp;
pub mod reduction;

use crate::schedule::Schedule;
use crate::units::Ticks;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

pub mod search;
/// The anytime search (best schedule + certified lower bound within a time
/// limit): [`search::anytime`].
pub use search::anytime;
pub mod smt;

/// Which exact method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    Milp,
    Smt,
    Search,
}

/// What one method established.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The schedule is optimal by this method's own proof.
    Optimal,
    /// A schedule was found; optimality not proven (time limit).
    Feasible,
    /// No schedule exists (within the method's stated structural limits).
    Infeasible,
    /// Nothing established before the limit.
    Unknown,
}

/// Limits and controls shared by all methods.
#[derive(Clone, Debug)]
pub struct Limits {
    pub time_limit: Duration,
    /// Set to true (e.g. by Ctrl-C) to stop and return the best found so far.
    pub cancel: Arc<AtomicBool>,
    /// Print progress (elapsed, incumbent, bound) on stderr.
    pub progress: bool,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            time_limit: Duration::from_secs(60),
            cancel: Arc::new(AtomicBool::new(false)),
            progress: false,
        }
    }
}

/// The result of one method, before the checker has seen the schedule.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub method: Method,
    pub status: Status,
    /// The best schedule found (to be validated by the checker).
    pub schedule: Option<Schedule>,
    /// The method's proven lower bound on the makespan (or period), if any.
    pub bound: Option<Ticks>,
    pub elapsed: Duration,
    /// Human-readable facts: model size, structural limits assumed, etc.
    pub notes: Vec<String>,
}

/// Why a method could not run, or why its claim is out of the vote.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExactError {
    #[error("{method:?}: this instance is outside the method's scope: {reason}")]
    Unsupported { method: Method, reason: String },
    #[error("{method:?}: the time horizon ({horizon} slots) is too large (limit {limit})")]
    HorizonTooLarge {
        method: Method,
        horizon: i64,
        limit: i64,
    },
    #[error("{method:?}: solver failure: {message}")]
    Backend { method: Method, message: String },
    /// HiGHS gave no answer.
    #[error("{method:?}: solver failure: {source}")]
    Lp {
        method: Method,
        #[source]
        source: crate::lp::LpError,
    },
    /// The checker rejects the schedule the method returned.
    #[error("{method:?}: its schedule is rejected by the checker: {violations}")]
    CheckerRejected {
        method: Method,
        #[source]
        violations: Rejected,
    },
    /// The method claims a schedule but returned none.
    #[error("{method:?}: claims a schedule but returned none")]
    NoSchedule { method: Method },
}

/// The checker's violations of a schedule (at least one).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.0.iter().map(|v| format!("{} at {}", v.kind(), v.at())).collect::<Vec<_>>().join("; "))]
pub struct Rejected(pub Vec<crate::check::Violation>);

/// Rescale time so that every transfer time |t|/β is a whole number of ticks
/// (`proofs/EXACTNESS.md` §2): with β = b/τ, each new tick is 1/K old ticks,
/// K = b / gcd(b, gcd_t(|t|·τ)) over transferable tensors of positive size.
/// Durations are multiplied by K and β becomes b/(τ·K) bytes per new tick, so
/// |t|/β′ = |t|·τ·K/b is an integer. Returns the instance and K (1 when the
/// times are already whole), or `None` on overflow.
pub fn rescale(inst: &crate::model::Instance) -> Option<(crate::model::Instance, u64)> {
    use num_integer::Integer;
    let bw = inst.machine.bandwidth;
    let mut g: u128 = 0;
    for t in inst
        .tensors
        .iter()
        .filter(|t| t.transferable && t.size.0 > 0)
    {
        g = g.gcd(&((t.size.0 as u128) * (bw.ticks as u128)));
    }
    let b = bw.bytes as u128;
    let k = if g == 0 { 1 } else { b / b.gcd(&g) };
    let k64 = u64::try_from(k).ok()?;
    let mut out = inst.clone();
    for op in &mut out.ops {
        op.duration = Ticks(op.duration.0.checked_mul(i64::try_from(k64).ok()?)?);
    }
    out.machine.bandwidth = crate::units::Bandwidth::new(bw.bytes, bw.ticks.checked_mul(k64)?);
    Some((out, k64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Violation;
    use crate::model::OpId;

    #[test]
    fn a_rejection_keeps_the_checkers_violations_as_its_typed_source() {
        let e = ExactError::CheckerRejected {
            method: Method::Milp,
            violations: Rejected(vec![Violation::NeverRan { op: OpId(0) }]),
        };
        let source = std::error::Error::source(&e).expect("a source");
        let r = source.downcast_ref::<Rejected>().expect("the violations");
        assert_eq!(r.0, vec![Violation::NeverRan { op: OpId(0) }]);
        assert!(e
            .to_string()
            .starts_with("Milp: its schedule is rejected by the checker: "));
    }

    #[test]
    fn an_lp_failure_keeps_its_typed_source() {
        let e = ExactError::Lp {
            method: Method::Milp,
            source: crate::lp::LpError::OptimalWithoutSolution,
        };
        let source = std::error::Error::source(&e).expect("a source");
        assert_eq!(
            source.downcast_ref::<crate::lp::LpError>(),
            Some(&crate::lp::LpError::OptimalWithoutSolution)
        );
        assert_eq!(
            e.to_string(),
            "Milp: solver failure: HiGHS reported optimal without a solution"
        );
    }
}
