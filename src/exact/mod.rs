//! Exact methods for small instances: time-indexed MILP, SMT and exhaustive
//! search, written independently of each other, plus the cross-check that runs
//! them and labels the result.
//!
//! Owns: the one front door [`solve`], [`Outcome`], [`Status`], [`Limits`],
//! [`ExactError`], and the table that ties each [`Method`] to its scope
//! ([`scope::Scope`]), its plain solver and its one-frame refutation.
//! Every returned schedule is passed through [`crate::check::check`] before any
//! number is reported; the reported makespan is the checker's.
//! Backend types never leave their module: z3 stays in `smt`, and HiGHS and
//! good_lp in [`crate::lp`], the one LP layer.
//!
//! The door derives the instance's features once ([`scope::Features::of`]),
//! compares them with the method's declared scope, refuses with the method's
//! typed reason ([`ExactError::Unencoded`], naming the feature), applies the
//! reduction the scope names (a free order through [`remat`]) and calls the
//! method's plain solver. The imports run one way: the door and the
//! cross-check know the methods and the reductions; a method knows neither the
//! door, the cross-check nor the reduction that wraps it; a reduction gets the
//! plain solver as an argument.
//!
//! Must not import: bounds, heuristics, traces, reports, the CLI (and each
//! method none of the others: MILP, SMT and search are independent).

pub mod certificate;
pub mod checkmate;
pub mod crosscheck;
pub mod graph_limits;
pub mod graph_search;
pub mod milp;
pub mod reduction;
pub mod scope;

use crate::check::{Checked, Rejected};
use crate::model::Instance;
use crate::schedule::Schedule;
use crate::units::Ticks;
use remat::sequences::SequenceLimits;
use remat::{Below, BelowFn};
use scope::{Features, Reduction, Route, Scope};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

pub mod remat;
pub mod search;
/// The anytime search (best schedule + certified lower bound within a time
/// limit): [`search::anytime`].
pub use search::anytime;
pub mod smt;
pub mod variants;

/// A method's solver: the front door for one method, a plain solver, or a
/// planted one in tests.
pub type SolveFn = fn(&Instance, &Limits) -> Result<Outcome, ExactError>;

/// Run `method` on `inst`: the one front door to the exact methods. Refuses,
/// naming the feature, an instance outside the method's scope; reduces a free
/// order through [`remat`] where the scope says so; otherwise calls the
/// method's plain solver. A free order's op-sequence limits are
/// [`SequenceLimits::default_for`] (limit 4 relaxed on chains of ≤ 2 layers).
pub fn solve(method: Method, inst: &Instance, limits: &Limits) -> Result<Outcome, ExactError> {
    solve_within(method, inst, limits, SequenceLimits::default_for(inst))
}

/// [`solve`] with the op-sequence limits of the free-order reduction given
/// (limit 4 of `proofs/REMAT-EXACT.md` kept or relaxed); they matter only
/// where the route goes through [`remat`].
pub fn solve_within(
    method: Method,
    inst: &Instance,
    limits: &Limits,
    sequences: SequenceLimits,
) -> Result<Outcome, ExactError> {
    match method.scope().admit(method, &Features::of(inst))? {
        Route::Direct => method.plain()(inst, limits),
        Route::Through(Reduction::Remat) => remat::solve_with(
            inst,
            limits,
            (method, method.plain(), method.below()),
            sequences,
        ),
    }
}

/// The MILP's one-frame refutation in the form the free-order reduction takes.
fn milp_below(inst: &Instance, b: Ticks, limits: &Limits) -> Result<Below, ExactError> {
    Ok(match milp::refute(inst, b, limits)? {
        milp::Refutation::Refuted => Below::Refuted,
        milp::Refutation::Feasible(_) => Below::Found,
        milp::Refutation::Unknown => Below::Unknown,
    })
}

impl Method {
    /// What the method accepts: the features its plain solver encodes and
    /// the reductions it is run through.
    pub fn scope(self) -> &'static Scope {
        match self {
            Method::Milp => &milp::SCOPE,
            Method::Smt => &smt::SCOPE,
            Method::Search => &search::SCOPE,
            Method::Checkmate => &checkmate::SCOPE,
            Method::GraphSearch => &graph_search::SCOPE,
        }
    }

    /// The plain solver (only the door calls it, after the scope check).
    fn plain(self) -> SolveFn {
        match self {
            Method::Milp => milp::solve,
            Method::Smt => smt::solve,
            Method::Search => search::solve,
            Method::Checkmate => checkmate::solve,
            Method::GraphSearch => graph_search::solve,
        }
    }

    /// Whether the method's optima and bounds hold over every schedule of a
    /// free-order instance it solves (the graph methods, which encode the
    /// free order themselves), rather than over the op sequences of a
    /// reduction.
    pub fn over_every_schedule(self) -> bool {
        matches!(self, Method::Checkmate | Method::GraphSearch)
    }

    /// The one-frame refutation the free-order reduction uses to skip a
    /// sequence that cannot beat the best makespan, where the method has one.
    fn below(self) -> Option<BelowFn> {
        match self {
            Method::Milp => Some(milp_below),
            Method::Smt | Method::Search | Method::Checkmate | Method::GraphSearch => None,
        }
    }
}

/// Which exact method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    Milp,
    Smt,
    Search,
    /// Checkmate's MILP on computation graphs (`checkmate`).
    Checkmate,
    /// The exhaustive search on computation graphs (`graph_search`).
    GraphSearch,
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
    /// The instance uses a feature (a core-model extension, a free order, a
    /// CPU op, ...) that the method's scope ([`Method::scope`]) does not
    /// encode: refused, never solved without it.
    #[error("{method:?}: this instance uses {feature}, which the method does not encode")]
    Unencoded {
        method: Method,
        feature: scope::Feature,
    },
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
    /// The checker rejects the schedule the method returned (the checker's
    /// own [`Rejected`]: the schedule, every violation and the measurements;
    /// boxed, as it carries the whole report, so the
    /// typed `source` downcasts to `Box<Rejected>`).
    #[error("{method:?}: its schedule is rejected by the checker: {rejected}")]
    CheckerRejected {
        method: Method,
        #[source]
        rejected: Box<Rejected>,
    },
    /// The method claims a schedule but returned none.
    #[error("{method:?}: claims a schedule but returned none")]
    NoSchedule { method: Method },
}

impl ExactError {
    /// The checker's verdict on a method's schedule: `Ok` when valid, else
    /// [`ExactError::CheckerRejected`] carrying the checker's [`Rejected`].
    pub fn checked(
        method: Method,
        inst: &crate::model::Instance,
        s: &Schedule,
    ) -> Result<Checked, ExactError> {
        crate::check::check(inst, s)
            .into_result()
            .map_err(|rejected| ExactError::CheckerRejected { method, rejected })
    }
}

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
        // A schedule that runs none of act3's ops.
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/instances/fixtures/act3.json"
        ))
        .unwrap();
        let (_, inst) = crate::io::parse_instance("act3.json", &text).unwrap();
        let e = ExactError::checked(Method::Milp, &inst, &Schedule::one_shot(vec![]))
            .expect_err("rejected");
        let source = std::error::Error::source(&e).expect("a source");
        let r = source
            .downcast_ref::<Box<Rejected>>()
            .expect("the checker's rejection");
        // act3's order is fixed: the first op of the order is missing.
        assert!(
            matches!(
                r.violations().first(),
                Some(Violation::MissingOp {
                    position: 0,
                    expected: OpId(0),
                    ..
                })
            ),
            "{:?}",
            r.violations()
        );
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
