//! One gap entry: an instance at one memory budget, every applicable bound and
//! heuristic, and the optimum when an exact method (or a bound that meets a
//! checked makespan) establishes it.
//!
//! Owns: [`GapEntry`] and its cells; a heuristic or optimum cell is built from
//! a `Checked` only.
//! Must not import: the CLI.

use super::budget::position;
use crate::bound::{self, BoundError, LowerBound, Strength};
use crate::check::Checked;
use crate::family::InstanceFile;
use crate::heuristic::{self, HeuristicError};
use crate::model::Instance;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::ToPrimitive;
use serde::Serialize;
use std::time::Instant;

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
}

impl OptimumCell {
    pub fn new(checked: Checked, claim: String, by: String) -> OptimumCell {
        OptimumCell {
            makespan: checked.makespan().0,
            claim,
            by,
            checked,
        }
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

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct GapEntry {
    pub instance: String,
    pub family: String,
    /// The release rule every figure of this row was established under (R10).
    pub release: crate::model::ReleaseRule,
    /// GPU memory in bytes.
    pub budget: u64,
    /// Position of the budget from the least feasible memory (0 %) to M_peak
    /// (100 %), where the family defines them.
    pub budget_percent: Option<f64>,
    pub bounds: Vec<BoundCell>,
    pub bound_failures: Vec<BoundFailure>,
    /// The largest bound (a certified one at equal value).
    pub best_bound: Option<BoundCell>,
    pub optimum: Option<OptimumCell>,
    pub heuristics: Vec<HeuristicCell>,
    /// Set when no schedule exists at this budget (every bound says why).
    pub infeasible: Option<String>,
    /// Contradictions: a bound above a checked makespan or above the optimum,
    /// or an invalid heuristic schedule. Empty on a healthy run.
    pub problems: Vec<String>,
}

/// What an exact method established for an instance: `None` when it was not
/// run or proved nothing; the makespan is the checker's.
pub type OptimumFn<'a> = dyn Fn(&Instance) -> Option<OptimumCell> + 'a;

pub struct GapOptions<'a> {
    /// Exact optimum provider, called when `exact_for(inst)` says so.
    pub optimum: Option<&'a OptimumFn<'a>>,
    pub exact_for: &'a dyn Fn(&Instance) -> bool,
    /// Only these heuristics (by name); empty: all.
    pub only: Vec<String>,
}

fn ratio(m: i64, to: &BigRational) -> Option<f64> {
    if to <= &BigRational::from_integer(BigInt::from(0)) {
        return None;
    }
    (BigRational::from_integer(BigInt::from(m)) / to).to_f64()
}

/// Compute one entry. `file` already carries the budget.
pub fn gap(label: &str, file: &InstanceFile, inst: &Instance, opts: &GapOptions) -> GapEntry {
    let budget = super::budget::own_budget(file);
    let (bounds, failures, infeasible) = evaluate_bounds(file, inst);
    let best = bound::best(bounds.iter()).map(BoundCell::from_bound);
    let mut problems = Vec::new();
    let mut cells = Vec::new();
    for h in heuristic::all().iter().filter(|h| h.applies(file)) {
        if !opts.only.is_empty() && !opts.only.iter().any(|n| n == h.name()) {
            continue;
        }
        cells.push(heuristic_cell(
            h.as_ref(),
            file,
            inst,
            best.as_ref(),
            &mut problems,
        ));
    }
    let best_heur = cells
        .iter()
        .filter_map(|c| {
            c.checked()
                .map(|k| (k.makespan().0, c.heuristic.clone(), k))
        })
        .min_by_key(|(m, who, _)| (*m, who.clone()));
    // The optimum: from an exact method, or certified when a certified bound
    // meets a checked makespan.
    let mut optimum = None;
    if infeasible.is_none() && (opts.exact_for)(inst) {
        if let Some(f) = opts.optimum {
            optimum = f(inst);
        }
    }
    if optimum.is_none() {
        if let (Some((m, who, checked)), Some(b)) = (&best_heur, &best) {
            if b.certified && b.ceil == *m {
                optimum = Some(OptimumCell::new(
                    (*checked).clone(),
                    "optimal (certified)".into(),
                    format!("{} meets bound {}", who, b.source),
                ));
            }
        }
    }
    let best_heur = best_heur.map(|(m, who, _)| (m, who));
    for c in &mut cells {
        if let (Some(m), Some(o)) = (c.makespan(), &optimum) {
            c.ratio_to_optimum = Some(m as f64 / o.makespan() as f64);
            if m < o.makespan() {
                problems.push(format!(
                    "{} has checked makespan {m} below the claimed optimum {} ({})",
                    c.heuristic,
                    o.makespan(),
                    o.claim
                ));
            }
        }
    }
    problems.extend(bound_problems(
        &bounds,
        best_heur.as_ref(),
        optimum.as_ref(),
    ));
    GapEntry {
        instance: label.into(),
        family: file.family().into(),
        release: inst.release,
        budget,
        budget_percent: position(file, budget),
        bounds: bounds.iter().map(BoundCell::from_bound).collect(),
        bound_failures: failures,
        best_bound: best,
        optimum,
        heuristics: cells,
        infeasible,
        problems,
    }
}

/// Every applicable bound: the values, the failures, and the first reason
/// given that no schedule exists.
fn evaluate_bounds(
    file: &InstanceFile,
    inst: &Instance,
) -> (Vec<LowerBound>, Vec<BoundFailure>, Option<String>) {
    let mut bounds = Vec::new();
    let mut failures = Vec::new();
    let mut infeasible = None;
    for (name, r) in bound::evaluate(file, inst) {
        match r {
            Ok(b) => bounds.push(b),
            Err(BoundError::Infeasible { reason, .. }) => {
                infeasible.get_or_insert(reason.clone());
                failures.push(BoundFailure {
                    source: name.into(),
                    reason: format!("infeasible: {reason}"),
                });
            }
            Err(e) => failures.push(BoundFailure {
                source: name.into(),
                reason: e.to_string(),
            }),
        }
    }
    (bounds, failures, infeasible)
}

/// Run one heuristic through the checker; an invalid schedule is also a problem.
fn heuristic_cell(
    h: &dyn heuristic::Heuristic,
    file: &InstanceFile,
    inst: &Instance,
    best: Option<&BoundCell>,
    problems: &mut Vec<String>,
) -> HeuristicCell {
    let t = Instant::now();
    let r = heuristic::run(h, file, inst);
    let seconds = t.elapsed().as_secs_f64();
    let model_value = h.model_value(file);
    let failed = |verdict: &str, reason: String| {
        let mut cell = HeuristicCell::without_schedule(h.name(), verdict, reason, seconds);
        cell.model_value = model_value;
        cell
    };
    match r {
        Ok(run) => {
            let mut cell = HeuristicCell::valid(run, seconds);
            cell.model_value = model_value;
            cell.ratio_to_bound = best
                .zip(cell.makespan())
                .and_then(|(b, m)| ratio(m, &b.exact));
            cell
        }
        Err(HeuristicError::Invalid { first, .. }) => {
            problems.push(format!(
                "{}: its schedule fails the checker: {first}",
                h.name()
            ));
            failed("invalid", first)
        }
        Err(HeuristicError::NoSchedule { reason, .. }) => failed("no schedule", reason),
        Err(HeuristicError::Unsupported { feature, .. }) => {
            failed("refused", format!("does not model it: {feature}"))
        }
        Err(other) => failed("no schedule", other.to_string()),
    }
}

/// Bounds above the best checked makespan or above the optimum: contradictions.
fn bound_problems(
    bounds: &[LowerBound],
    best_heur: Option<&(i64, String)>,
    optimum: Option<&OptimumCell>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for b in bounds {
        if let Some((m, who)) = best_heur {
            if b.value > BigRational::from_integer(BigInt::from(*m)) {
                problems.push(format!(
                    "bound {} = {} exceeds {who}'s checked makespan {m}",
                    b.source, b.value
                ));
            }
        }
        if let Some(o) = optimum {
            if b.value > BigRational::from_integer(BigInt::from(o.makespan())) {
                problems.push(format!(
                    "bound {} = {} exceeds the optimum {} ({})",
                    b.source,
                    b.value,
                    o.makespan(),
                    o.claim
                ));
            }
        }
    }
    problems
}
