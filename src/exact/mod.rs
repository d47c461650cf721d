//! Exact methods for small instances: time-indexed MILP, SMT and exhaustive
//! search, written independently of each other, plus the cross-check that runs
//! them and labels the result.
//!
//! Owns: [`Outcome`], [`Status`], [`Limits`], [`ExactError`] and the methods.
//! Every returned schedule is passed through [`crate::check::check`] before any
//! number is reported; the reported makespan is the checker's.
//! Backend types (good_lp, highs, z3) never leave their submodule.

use crate::schedule::Schedule;
use crate::units::Ticks;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

pub mod search;
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

/// Why a method could not run.
#[derive(Debug, thiserror::Error)]
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
    #[error("{method:?}: returned a schedule the checker rejects: {violations:?}")]
    CheckerRejected {
        method: Method,
        violations: Vec<String>,
    },
}
