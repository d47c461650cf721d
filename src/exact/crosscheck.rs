//! Run exact methods, replay every schedule they return with the checker, and
//! label the result with the project's words for claim strength.
//!
//! Owns: [`Verdict`], [`Label`], [`run`]. A number shown to a user comes from
//! here only after [`crate::check::check`] has accepted its schedule; a method's
//! own makespan is never used. Every method runs through the front door
//! ([`super::solve`]); the MILP's one-frame refutation ([`milp::refute`]) is
//! the second route beside z3's. Must not import: heuristics, bounds.
//!
//! Labels:
//! - `optimal (cross-checked)`: two methods prove the same optimum, or z3 proves
//!   it (by refuting T*−1) and the MILP independently refutes T*−1;
//! - `optimal (solver-reported)`: one method proves it;
//! - `feasible, gap g`: a checked schedule and the best proven bound;
//! - `infeasible (cross-checked)`: two or more methods ran and every one says
//!   so, with its evidence, and no method contests it;
//! - `infeasible (solver-reported)`: one method says so, or the infeasibility is
//!   contested (a method returned a schedule the checker rejects);
//! - `unknown`: nothing established within the limits.
//! - `best within sequence limits (cross-checked)` / `(solver-reported)`: on a
//!   free-order (`remat_chain`) instance, where the methods prove an optimum
//!   only over the op sequences of `proofs/REMAT-EXACT.md` §3, whose limit 4
//!   loses optima (issue 23, `instances/regressions/remat/limit4.json`): a
//!   checked schedule, never an optimum nor a bound. The verdict's bound there
//!   is the compute of the ops every schedule runs, not the methods' value.
//! - `no schedule within sequence limits (cross-checked)` / `(solver-reported)`:
//!   on a free-order instance, the methods refuted every op sequence within
//!   those limits: no proof that no schedule exists (`infeasible` is kept only
//!   where each method proved it over every schedule: an op every schedule
//!   runs does not fit).
//!
//! A method whose schedule the checker rejects (or that claims a schedule and
//! returns none) is kept out of the vote, but never silently: its claim stays in
//! [`MethodResult::rejected_claim`] and is reported as a disagreement.

use super::{milp, ExactError, Limits, Method, Outcome, Status};
use crate::check::{check, CheckOutcome, Checked};
use crate::model::Instance;
use crate::units::Ticks;
use std::time::Duration;

/// A method's entry point (the door for one method, or a planted one).
pub use super::SolveFn;

/// The entry point of each method: the front door ([`super::solve`]) for it.
pub fn solver(m: Method) -> SolveFn {
    match m {
        Method::Milp => |i, l| super::solve(Method::Milp, i, l),
        Method::Smt => |i, l| super::solve(Method::Smt, i, l),
        Method::Search => |i, l| super::solve(Method::Search, i, l),
        Method::Checkmate => |i, l| super::solve(Method::Checkmate, i, l),
        Method::GraphSearch => |i, l| super::solve(Method::GraphSearch, i, l),
    }
}

/// The label of a cross-checked result.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "label")]
pub enum Label {
    OptimalCrossChecked,
    OptimalSolverReported,
    Feasible {
        gap: Ticks,
    },
    /// Two or more methods prove infeasibility and none contests it.
    Infeasible,
    /// One method proves infeasibility, or it is contested.
    InfeasibleSolverReported,
    Unknown,
    /// Two methods prove the same best makespan over the same limited op
    /// sequences (free order): not an optimum.
    BestWithinLimitsCrossChecked,
    /// One method proves the best makespan over the limited op sequences.
    BestWithinLimitsSolverReported,
    /// Two methods find no schedule over the limited op sequences (free
    /// order): not a proof that none exists.
    NoneWithinLimitsCrossChecked,
    /// One method finds no schedule over the limited op sequences.
    NoneWithinLimitsSolverReported,
}

impl Label {
    pub fn is_infeasible(&self) -> bool {
        matches!(self, Label::Infeasible | Label::InfeasibleSolverReported)
    }

    pub fn is_optimal(&self) -> bool {
        matches!(
            self,
            Label::OptimalCrossChecked | Label::OptimalSolverReported
        )
    }

    /// The words shown to users.
    pub fn words(&self) -> String {
        match self {
            Label::OptimalCrossChecked => "optimal (cross-checked)".into(),
            Label::OptimalSolverReported => "optimal (solver-reported)".into(),
            Label::Feasible { gap } => format!("feasible, gap {gap}"),
            Label::Infeasible => "infeasible (cross-checked)".into(),
            Label::InfeasibleSolverReported => "infeasible (solver-reported)".into(),
            Label::Unknown => "unknown".into(),
            Label::BestWithinLimitsCrossChecked => {
                "best within sequence limits (cross-checked)".into()
            }
            Label::BestWithinLimitsSolverReported => {
                "best within sequence limits (solver-reported)".into()
            }
            Label::NoneWithinLimitsCrossChecked => {
                "no schedule within sequence limits (cross-checked)".into()
            }
            Label::NoneWithinLimitsSolverReported => {
                "no schedule within sequence limits (solver-reported)".into()
            }
        }
    }

    /// The best over a limited search space: a checked schedule, no optimum.
    pub fn is_best_within_limits(&self) -> bool {
        matches!(
            self,
            Label::BestWithinLimitsCrossChecked | Label::BestWithinLimitsSolverReported
        )
    }

    /// No schedule over a limited search space: no proof that none exists.
    pub fn is_none_within_limits(&self) -> bool {
        matches!(
            self,
            Label::NoneWithinLimitsCrossChecked | Label::NoneWithinLimitsSolverReported
        )
    }
}

/// What one method contributed, after the checker saw its schedule.
#[derive(Clone, Debug, serde::Serialize)]
pub struct MethodResult {
    pub method: Method,
    /// The method's claim; `None` if it failed (see `error`).
    pub status: Option<Status>,
    /// Its schedule once the checker accepted it (serialized as its makespan).
    #[serde(rename = "makespan", serialize_with = "makespan_of")]
    pub checked: Option<Checked>,
    pub bound: Option<Ticks>,
    pub elapsed_ms: u128,
    pub notes: Vec<String>,
    /// Why the method failed, or why its claim is out of the vote.
    #[serde(serialize_with = "as_text")]
    pub error: Option<ExactError>,
    /// The method's own claim when the checker rejected its schedule (or it
    /// claimed a schedule and returned none): out of the vote, reported as a
    /// disagreement.
    pub rejected_claim: Option<Status>,
}

impl MethodResult {
    /// The checker's makespan (period) of its schedule.
    pub fn makespan(&self) -> Option<Ticks> {
        self.checked.as_ref().map(Checked::makespan)
    }
}

fn makespan_of<S: serde::Serializer>(c: &Option<Checked>, s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&c.as_ref().map(Checked::makespan), s)
}

#[derive(Clone, Debug)]
pub struct Verdict {
    pub label: Label,
    /// The best proven lower bound (equal to the makespan when optimal).
    pub bound: Option<Ticks>,
    /// The best schedule any method found, as the checker accepted it.
    pub checked: Option<Checked>,
    pub methods: Vec<MethodResult>,
    /// Why the label holds: which methods agree, refutations, infeasibility witnesses.
    pub evidence: Vec<String>,
    /// Claims refuted by another method's checked schedule, or conflicting claims.
    pub disagreements: Vec<String>,
    pub elapsed: Duration,
}

impl Verdict {
    /// The checker's makespan (period) of the best schedule.
    pub fn makespan(&self) -> Option<Ticks> {
        self.checked.as_ref().map(Checked::makespan)
    }
}

/// An error as its message (the report's JSON field is text).
fn as_text<S: serde::Serializer>(e: &Option<ExactError>, s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&e.as_ref().map(|e| e.to_string()), s)
}

/// Run one method and replay its schedule.
pub fn run_one(inst: &Instance, m: Method, limits: &Limits) -> MethodResult {
    run_one_with(inst, m, solver(m), limits)
}

/// [`run_one`] with the entry point given.
pub fn run_one_with(inst: &Instance, m: Method, f: SolveFn, limits: &Limits) -> MethodResult {
    let started = std::time::Instant::now();
    match f(inst, limits) {
        Ok(o) => replay(inst, m, o),
        // The method replayed its own schedule and the checker rejected it: a
        // claim that a schedule exists, out of the vote but not silently.
        Err(e) => MethodResult {
            method: m,
            status: None,
            checked: None,
            bound: None,
            elapsed_ms: started.elapsed().as_millis(),
            notes: vec![],
            rejected_claim: matches!(e, ExactError::CheckerRejected { .. })
                .then_some(Status::Feasible),
            error: Some(e),
        },
    }
}

/// A method's outcome after the checker saw its schedule.
fn replay(inst: &Instance, m: Method, o: Outcome) -> MethodResult {
    let mut r = MethodResult {
        method: m,
        status: Some(o.status),
        checked: None,
        bound: o.bound,
        elapsed_ms: o.elapsed.as_millis(),
        notes: o.notes,
        error: None,
        rejected_claim: None,
    };
    if let Some(s) = o.schedule {
        match check(inst, &s) {
            CheckOutcome::Valid(c) => r.checked = Some(c),
            CheckOutcome::Invalid(rep) => {
                r.error = Some(ExactError::CheckerRejected {
                    method: m,
                    rejected: Box::new(rep),
                });
                r.rejected_claim = r.status.take();
            }
        }
    } else if matches!(o.status, Status::Optimal | Status::Feasible) {
        r.error = Some(ExactError::NoSchedule { method: m });
        r.rejected_claim = r.status.take();
    }
    r
}

/// Run `methods` in turn (each with the full limits) and label the result.
pub fn run(inst: &Instance, methods: &[Method], limits: &Limits) -> Verdict {
    let with: Vec<(Method, SolveFn)> = methods.iter().map(|&m| (m, solver(m))).collect();
    run_with(inst, &with, limits)
}

/// [`run`] with each method's entry point given (tests plant faulty methods).
pub fn run_with(inst: &Instance, methods: &[(Method, SolveFn)], limits: &Limits) -> Verdict {
    let started = std::time::Instant::now();
    let mut results = Vec::new();
    for &(m, f) in methods {
        if limits.cancel.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
        if limits.progress {
            eprintln!("solve: running {m:?}");
        }
        results.push(run_one_with(inst, m, f, limits));
    }
    let mut v = label(inst, results, limits);
    v.elapsed = started.elapsed();
    // The graph methods prove their optima over every schedule (no
    // reduction): only the methods run through the free-order reduction are
    // limited to its op sequences.
    if matches!(inst.order, crate::model::ComputeOrder::Free)
        && v.methods
            .iter()
            .any(|m| m.status.is_some() && !m.method.over_every_schedule())
    {
        within_sequence_limits(inst, &mut v);
    }
    v
}

/// remat_chain (free order): the methods search only the op sequences of
/// `proofs/REMAT-EXACT.md` §3, and limit 4 loses optima (issue 23), so an
/// "optimum" is the best within those limits and the methods' bounds hold
/// only over them. The label says so, and the bound is the compute of the
/// ops every schedule runs (one GPU stream), which holds over every schedule.
fn within_sequence_limits(inst: &Instance, v: &mut Verdict) {
    let relaxed = v.methods.iter().any(|m| {
        m.notes
            .iter()
            .any(|n| n.starts_with(super::remat::RELAXED_NOTE))
    });
    v.evidence.push(if relaxed {
        super::remat::SCOPE_WORDS_RELAXED.into()
    } else {
        super::remat::SCOPE_WORDS.into()
    });
    // Infeasible over every schedule only where each method that says so
    // proved it over every schedule (not by refuting each limited sequence).
    let limited = v.methods.iter().any(|m| {
        m.status == Some(Status::Infeasible)
            && m.notes
                .iter()
                .any(|n| n.starts_with(super::remat::NONE_WITHIN_LIMITS_NOTE))
    });
    v.label = match v.label.clone() {
        Label::OptimalCrossChecked => Label::BestWithinLimitsCrossChecked,
        Label::OptimalSolverReported => Label::BestWithinLimitsSolverReported,
        Label::Infeasible if limited => Label::NoneWithinLimitsCrossChecked,
        Label::InfeasibleSolverReported if limited => Label::NoneWithinLimitsSolverReported,
        l => l,
    };
    for e in &mut v.evidence {
        *e = e
            .replace(
                "proves no schedule exists",
                "finds no schedule within the sequence limits",
            )
            .replace(
                "each prove optimum",
                "each prove the best within the sequence limits,",
            )
            .replace(
                "proves optimum",
                "proves the best within the sequence limits,",
            );
    }
    let Some(m) = v.makespan() else { return };
    let c = inst.busiest_device_compute().min(m);
    v.bound = Some(c);
    v.evidence.push(format!(
        "bound {c}: compute of the ops every schedule runs (the methods' values hold only within the sequence limits, and are not bounds)"
    ));
    if let Label::Feasible { .. } = v.label {
        v.label = Label::Feasible {
            gap: Ticks(m.0 - c.0),
        };
    }
}

/// Combine checked method results into a verdict.
pub fn label(inst: &Instance, results: Vec<MethodResult>, limits: &Limits) -> Verdict {
    let mut evidence = Vec::new();
    // The best checked schedule wins, whoever found it.
    let best = results
        .iter()
        .filter(|r| r.checked.is_some())
        .min_by_key(|r| r.makespan());
    let best_ms = best.and_then(|r| r.makespan());
    let checked = best.and_then(|r| r.checked.clone());
    let mut disagreements = rejected_claims(&results, best_ms);
    let agree = contested_claims(&results, best_ms, &mut disagreements);
    let bound = proven_bound(inst, &results, best_ms, &mut evidence);
    let label = match best_ms {
        Some(m) => {
            let mut label = optimal_label(
                inst,
                &results,
                &agree,
                (m, bound),
                limits,
                (&mut evidence, &mut disagreements),
            );
            if !disagreements.is_empty() && label == Label::OptimalCrossChecked {
                // Never call a contested optimum cross-checked.
                label = Label::OptimalSolverReported;
            }
            label
        }
        None => infeasible_label(&results, &disagreements, &mut evidence),
    };
    let bound = match label {
        Label::OptimalCrossChecked | Label::OptimalSolverReported => best_ms,
        _ => bound,
    };
    Verdict {
        label,
        bound,
        checked,
        methods: results,
        evidence,
        disagreements,
        elapsed: Duration::ZERO,
    }
}

/// Methods whose schedule the checker rejected: out of the vote, not silently.
fn rejected_claims(results: &[MethodResult], best_ms: Option<Ticks>) -> Vec<String> {
    let said_infeasible: Vec<Method> = results
        .iter()
        .filter(|r| r.status == Some(Status::Infeasible))
        .map(|r| r.method)
        .collect();
    let mut disagreements = Vec::new();
    for r in results {
        let Some(c) = r.rejected_claim else { continue };
        let prefix = format!("{:?}: ", r.method);
        let why = r
            .error
            .as_ref()
            .map(|e| e.to_string())
            .unwrap_or("its schedule is rejected".into());
        let why = why.strip_prefix(&prefix).unwrap_or(&why);
        let claim = match c {
            Status::Optimal => "an optimum",
            Status::Feasible => "a schedule",
            Status::Infeasible => "infeasibility",
            Status::Unknown => "nothing",
        };
        let mut d = format!(
            "{:?} claims {claim} but {why}; its claim is not counted",
            r.method
        );
        if best_ms.is_none() && !said_infeasible.is_empty() {
            d.push_str(&format!(
                ", while {said_infeasible:?} say no schedule exists"
            ));
        }
        disagreements.push(d);
    }
    disagreements
}

/// The methods whose optimum is the best checked makespan; every claim a
/// checked schedule contradicts goes to `disagreements`.
fn contested_claims(
    results: &[MethodResult],
    best_ms: Option<Ticks>,
    disagreements: &mut Vec<String>,
) -> Vec<Method> {
    let mut agree = Vec::new();
    for r in results {
        match r.status {
            Some(Status::Optimal) => {
                if r.makespan() == best_ms {
                    agree.push(r.method);
                } else {
                    disagreements.push(format!(
                        "{:?} claims optimum {} but a checked schedule of makespan {} exists",
                        r.method,
                        r.makespan().map(|m| m.to_string()).unwrap_or("-".into()),
                        best_ms.map(|m| m.to_string()).unwrap_or("-".into())
                    ));
                }
            }
            Some(Status::Infeasible) if best_ms.is_some() => disagreements.push(format!(
                "{:?} claims infeasible but a checked schedule exists",
                r.method
            )),
            _ => {}
        }
        // A method's proven bound above a checked makespan is a contradiction.
        if let (Some(b), Some(m)) = (r.bound, best_ms) {
            if b > m && r.status != Some(Status::Infeasible) {
                disagreements.push(format!(
                    "{:?} reports lower bound {b} above the checked makespan {m}",
                    r.method
                ));
            }
        }
    }
    agree
}

/// The best bound a method proved (not above the checked makespan); with a
/// schedule but no method's bound, the total compute on the busiest device
/// still bounds the makespan (period) from below, solver-free.
fn proven_bound(
    inst: &Instance,
    results: &[MethodResult],
    best_ms: Option<Ticks>,
    evidence: &mut Vec<String>,
) -> Option<Ticks> {
    let solver_bound = results
        .iter()
        .filter(|r| r.status.is_some() && r.status != Some(Status::Infeasible))
        .filter_map(|r| r.bound)
        .filter(|b| best_ms.is_none_or(|m| *b <= m))
        .max();
    match (solver_bound, best_ms) {
        (None, Some(_)) => {
            let c = inst.busiest_device_compute();
            evidence.push(format!(
                "bound {c}: total compute on the busiest device (no method proved a bound)"
            ));
            Some(c)
        }
        (b, _) => b,
    }
}

/// The label when a checked schedule of makespan `m` exists.
fn optimal_label(
    inst: &Instance,
    results: &[MethodResult],
    agree: &[Method],
    (m, bound): (Ticks, Option<Ticks>),
    limits: &Limits,
    (evidence, disagreements): (&mut Vec<String>, &mut Vec<String>),
) -> Label {
    if agree.len() >= 2 {
        evidence.push(format!("{agree:?} each prove optimum {m}"));
        return Label::OptimalCrossChecked;
    }
    if agree.len() == 1 {
        evidence.push(format!("{:?} proves optimum {m}", agree[0]));
        // Second route: z3 refutes T*-1 and the MILP refutes it too.
        let asked_milp = results.iter().any(|r| r.method == Method::Milp);
        if agree[0] == Method::Smt && asked_milp {
            return milp_second_route(inst, m, limits, evidence, disagreements);
        }
        return Label::OptimalSolverReported;
    }
    let b = bound.unwrap_or(Ticks(0));
    Label::Feasible {
        gap: Ticks(m.0 - b.0),
    }
}

/// z3 proved optimum `m` (refuting m−1): cross-checked when the MILP refutes
/// m−1 independently.
fn milp_second_route(
    inst: &Instance,
    m: Ticks,
    limits: &Limits,
    evidence: &mut Vec<String>,
    disagreements: &mut Vec<String>,
) -> Label {
    match milp::refute(inst, Ticks(m.0 - 1), limits) {
        Ok(milp::Refutation::Refuted) => {
            evidence.push(format!(
                "z3 refutes makespan <= {} and the MILP refutes it independently",
                m.0 - 1
            ));
            return Label::OptimalCrossChecked;
        }
        Ok(milp::Refutation::Feasible(_)) => disagreements.push(format!(
            "the MILP finds a schedule of makespan <= {} that z3 excludes",
            m.0 - 1
        )),
        Ok(milp::Refutation::Unknown) => {}
        Err(e) => evidence.push(format!("MILP refutation unavailable: {e}")),
    }
    Label::OptimalSolverReported
}

/// The label when no checked schedule exists: infeasible when every method
/// that ran says so (cross-checked only when two prove it and nobody
/// contests it), else unknown.
fn infeasible_label(
    results: &[MethodResult],
    disagreements: &[String],
    evidence: &mut Vec<String>,
) -> Label {
    let ran: Vec<&MethodResult> = results.iter().filter(|r| r.status.is_some()).collect();
    if ran.is_empty() || !ran.iter().all(|r| r.status == Some(Status::Infeasible)) {
        return Label::Unknown;
    }
    for r in &ran {
        let why: Vec<&str> = r
            .notes
            .iter()
            .filter(|n| n.starts_with("infeasible"))
            .map(|s| s.as_str())
            .collect();
        evidence.push(format!(
            "{:?}: {}",
            r.method,
            if why.is_empty() {
                "proves no schedule exists".to_string()
            } else {
                why.join("; ")
            }
        ));
    }
    if ran.len() >= 2 && disagreements.is_empty() {
        Label::Infeasible
    } else {
        Label::InfeasibleSolverReported
    }
}
