//! The cells of a gap row: a bound as shown, a bound that gave no value, a
//! heuristic's run, the best checked schedule, the optimum and the certified
//! gap. A heuristic, best-schedule or optimum cell is built from a `Checked`
//! only; the gap is exact.
//!
//! Owns: [`BoundCell`], [`BoundFailure`], [`HeuristicCell`], [`BestCell`],
//! [`OptimumCell`], [`GapCell`], [`percent_up`].
//! Must not import: the CLI, the rest of the report (cells are leaves).

use crate::bound::{LowerBound, Strength};
use crate::check::Checked;
use crate::heuristic;
use num_bigint::BigInt;
use num_rational::BigRational;
use serde::Serialize;

/// A bound as shown: exact value (`p/q` or an integer), display form, source and
/// strength words.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BoundCell {
    pub source: String,
    /// "lower bound (certified)" or "solver-reported".
    pub strength: String,
    /// Exact value in ticks, as an integer or `p/q`.
    pub value: String,
    /// ⌈value⌉: also a bound, since event times are integers.
    pub ceil: i64,
    pub display: String,
    #[serde(skip)]
    pub exact: BigRational,
    #[serde(skip)]
    pub certified: bool,
}

impl BoundCell {
    pub fn from_bound(b: &LowerBound) -> BoundCell {
        BoundCell {
            source: b.source.clone(),
            strength: b.strength.words().into(),
            value: b.value.to_string(),
            ceil: b.ceil_ticks(),
            display: b.display(),
            exact: b.value.clone(),
            certified: b.strength == Strength::Certified,
        }
    }
}

/// A bound method that gave no value, and why.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BoundFailure {
    pub source: String,
    pub reason: String,
}

/// The optimum, when known, with the words for its claim strength. Built only
/// from a [`Checked`] schedule that attains it ([`OptimumCell::new`]).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct OptimumCell {
    /// The checker's makespan (period) of `checked`.
    makespan: i64,
    /// "optimal (certified)", "optimal (cross-checked)", "optimal (solver-reported)".
    pub claim: String,
    /// Who established it (e.g. "exact: milp+smt+search", "bound fractional-thm2 = greedy").
    pub by: String,
    #[serde(skip)]
    checked: Checked,
    /// False for an exact method's best within limits that lose optima
    /// (`best within sequence limits (…)`): a checked schedule, not an optimum.
    #[serde(skip)]
    optimal: bool,
}

impl OptimumCell {
    pub fn new(checked: Checked, claim: String, by: String) -> OptimumCell {
        OptimumCell {
            makespan: checked.makespan().0,
            claim,
            by,
            checked,
            optimal: true,
        }
    }
    /// An exact method's best over a limited search space: offered as a
    /// checked schedule, never shown or used as an optimum.
    pub fn best_within_limits(checked: Checked, claim: String, by: String) -> OptimumCell {
        OptimumCell {
            optimal: false,
            ..OptimumCell::new(checked, claim, by)
        }
    }
    /// Whether the cell is an optimum (not a best within limits).
    pub fn is_optimal(&self) -> bool {
        self.optimal
    }
    /// The checker's makespan (or period) of the optimal schedule.
    pub fn makespan(&self) -> i64 {
        self.makespan
    }
    pub fn checked(&self) -> &Checked {
        &self.checked
    }
}

/// One heuristic at one budget. Its figures are the checker's: they are set
/// only from a [`Checked`] run ([`HeuristicCell::valid`]).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct HeuristicCell {
    pub heuristic: String,
    /// "valid" (checked), "no schedule" or "invalid" (a bug: its schedule failed the checker).
    pub verdict: String,
    /// The checker's makespan (or period).
    makespan: Option<i64>,
    /// makespan / ⌈best certified bound⌉ (display only).
    pub ratio_to_bound: Option<f64>,
    pub ratio_to_optimum: Option<f64>,
    pub reason: Option<String>,
    schedule_sha256: Option<String>,
    pub seconds: f64,
    /// The heuristic's own objective in its paper's model (pofo's DP value,
    /// fluid transfers): `solver-reported (paper model, fluid transfers)`,
    /// never a makespan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_value: Option<f64>,
    /// How a checked schedule was found, where the heuristic says (OFFMATE's
    /// Algorithm 1: its ILP's status, `solver-reported`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip)]
    checked: Option<Checked>,
}

impl HeuristicCell {
    /// A checked run.
    pub fn valid(run: heuristic::HeuristicRun, seconds: f64) -> HeuristicCell {
        HeuristicCell {
            heuristic: run.name.into(),
            verdict: "valid".into(),
            makespan: Some(run.checked.makespan().0),
            ratio_to_bound: None,
            ratio_to_optimum: None,
            reason: None,
            schedule_sha256: Some(run.checked.report().schedule_sha256.clone()),
            seconds,
            model_value: None,
            note: run.note,
            checked: Some(run.checked),
        }
    }
    /// No checked schedule: `verdict` says why ("invalid", "no schedule").
    pub fn without_schedule(
        heuristic: &str,
        verdict: &str,
        reason: String,
        seconds: f64,
    ) -> HeuristicCell {
        HeuristicCell {
            heuristic: heuristic.into(),
            verdict: verdict.into(),
            makespan: None,
            ratio_to_bound: None,
            ratio_to_optimum: None,
            reason: Some(reason),
            schedule_sha256: None,
            seconds,
            model_value: None,
            note: None,
            checked: None,
        }
    }
    /// The checker's makespan (or period), when the run was checked.
    pub fn makespan(&self) -> Option<i64> {
        self.makespan
    }
    pub fn schedule_sha256(&self) -> Option<&str> {
        self.schedule_sha256.as_deref()
    }
    pub fn checked(&self) -> Option<&Checked> {
        self.checked.as_ref()
    }
}

/// The best checked schedule of a row and the method that found it (a
/// heuristic's name, `exact`, or `anytime-search`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BestCell {
    /// The checker's makespan (or period).
    makespan: i64,
    pub by: String,
    #[serde(skip)]
    checked: Checked,
}

impl BestCell {
    /// `checked` as a row's best schedule, found by `by`.
    pub fn new(checked: Checked, by: String) -> BestCell {
        BestCell {
            makespan: checked.makespan().0,
            by,
            checked,
        }
    }
    pub fn makespan(&self) -> i64 {
        self.makespan
    }
    pub fn checked(&self) -> &Checked {
        &self.checked
    }
}

/// The certified gap (m − ⌈b⌉) / ⌈b⌉: m the best checked makespan, b the best
/// certified bound (⌈b⌉ is a bound too, event times being integers). Exact.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct GapCell {
    pub makespan: i64,
    /// ⌈best certified bound⌉.
    pub bound: i64,
    /// The gap as an exact fraction (`p/q`, or `0`).
    pub exact: String,
    /// 100 × the gap, rounded *up* to three decimals (never below the exact gap).
    pub percent: String,
    #[serde(skip)]
    pub value: BigRational,
}

impl GapCell {
    /// `None` when the bound is not positive.
    pub fn new(makespan: i64, bound: i64) -> Option<GapCell> {
        if bound <= 0 {
            return None;
        }
        let b = BigRational::from_integer(BigInt::from(bound));
        let value = (BigRational::from_integer(BigInt::from(makespan)) - &b) / b;
        Some(GapCell {
            makespan,
            bound,
            exact: value.to_string(),
            percent: percent_up(&value),
            value,
        })
    }
}

/// 100·v rounded up to three decimals, as text (exact: no float involved).
pub fn percent_up(v: &BigRational) -> String {
    let milli = (v * BigRational::from_integer(BigInt::from(100_000)))
        .ceil()
        .to_integer();
    let neg = milli < BigInt::from(0);
    let digits = format!("{:0>4}", if neg { -&milli } else { milli.clone() });
    let (i, f) = digits.split_at(digits.len() - 3);
    format!("{}{i}.{f}", if neg { "-" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_up_exactly() {
        let r = |n: i64, d: i64| BigRational::new(BigInt::from(n), BigInt::from(d));
        assert_eq!(percent_up(&r(0, 1)), "0.000");
        assert_eq!(percent_up(&r(1, 100_000)), "0.001");
        assert_eq!(percent_up(&r(1, 100_001)), "0.001");
        assert_eq!(percent_up(&r(1, 3)), "33.334");
        assert_eq!(percent_up(&r(1, 100)), "1.000");
        assert_eq!(percent_up(&r(7, 5)), "140.000");
        assert_eq!(GapCell::new(5, 0), None);
    }
}
