//! One gap entry: an instance at one memory budget, every applicable bound and
//! heuristic, the anytime search where asked for, the best checked schedule,
//! the best *certified* bound (solver-reported bounds are shown beside it,
//! never in its place), the certified gap between them in exact arithmetic,
//! and the optimum when an exact method (or a certified bound that meets a
//! checked makespan) establishes it.
//!
//! Owns: [`GapEntry`] (its cells are [`super::cells`]), [`CarryOver`].
//! Must not import: the CLI.

use super::budget::position;
pub use super::cells::{
    percent_up, BestCell, BoundCell, BoundFailure, GapCell, HeuristicCell, OptimumCell,
};
use super::exact::{self, AnytimeCell, ProgressHook};
use crate::bound::{self, best_of, BoundError, LowerBound, Strength};
use crate::check::Checked;
use crate::family::InstanceFile;
use crate::heuristic::effort::Effort;
use crate::heuristic::{self, HeuristicError, SolverLimit};
use crate::model::Instance;
use num_bigint::BigInt;
use num_rational::BigRational;
use serde::Serialize;
use std::time::{Duration, Instant};

/// The source name of the anytime search's own certified bound.
pub const ANYTIME_SOURCE: &str = "anytime-search";

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct GapEntry {
    pub instance: String,
    pub family: String,
    /// The release rule every figure of this row was established under (R10).
    pub release: crate::model::ReleaseRule,
    /// The allocator the row's schedules were judged under at the end
    /// (`gap --allocator`, MODEL.md §2.8; [`super::allocated::restrict`]):
    /// bounds and exact methods are in the `exact` model.
    #[serde(skip_serializing_if = "crate::model::Allocator::is_default")]
    pub allocator: crate::model::Allocator,
    /// Schedules valid under `exact` that the allocator refused (the best
    /// schedule, the optimum), each with the reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allocator_refused: Vec<String>,
    /// How long a tick is, where the instance file says (imported programs):
    /// the text report then gives every whole number of ticks in time too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tick: Option<crate::units::TickUnit>,
    /// GPU memory in bytes.
    pub budget: u64,
    /// Position of the budget from the least feasible memory (0 %) to M_peak
    /// (100 %), where the family defines them.
    pub budget_percent: Option<f64>,
    /// Every bound, certified and solver-reported (the anytime search's own
    /// included, as `anytime-search`).
    pub bounds: Vec<BoundCell>,
    pub bound_failures: Vec<BoundFailure>,
    /// The largest *certified* bound: ratios and the certified gap use it.
    pub best_certified_bound: Option<BoundCell>,
    /// The largest solver-reported bound, shown beside the certified one and
    /// never used in its place.
    pub best_solver_reported: Option<BoundCell>,
    /// The best checked schedule: heuristics, exact methods, anytime search.
    pub best_schedule: Option<BestCell>,
    pub certified_gap: Option<GapCell>,
    pub optimum: Option<OptimumCell>,
    /// The anytime search, when it ran (`--time-limit`, open gap).
    pub anytime: Option<AnytimeCell>,
    pub heuristics: Vec<HeuristicCell>,
    /// Set when no schedule exists at this budget (every bound says why).
    pub infeasible: Option<String>,
    /// Contradictions: a bound above a checked makespan or above the optimum,
    /// or an invalid heuristic schedule. Empty on a healthy run.
    pub problems: Vec<String>,
}

/// What an exact method established for an instance: `None` when it was not
/// run or proved nothing; the makespan is the checker's.
pub type OptimumFn<'a> = dyn Fn(&Instance) -> Option<OptimumCell> + Sync + 'a;

pub struct GapOptions<'a> {
    /// Exact optimum provider, called when `exact_for(inst)` says so.
    pub optimum: Option<&'a OptimumFn<'a>>,
    pub exact_for: &'a dyn Fn(&Instance) -> bool,
    /// Only these heuristics (by name); empty: all.
    pub only: Vec<String>,
    /// Run the anytime search, within this limit, on every instance and
    /// budget whose gap is still open; `None`: not run.
    pub anytime: Option<Duration>,
    /// The anytime search's progress reports.
    pub progress: Option<&'a ProgressHook<'a>>,
    /// Local improvement of the best checked schedule (`weight_chain`:
    /// `heuristic::weight::replan`; one-shot fixed-order instances:
    /// `heuristic::improve`), within this limit, on every instance
    /// and budget whose gap is still open, before the anytime search (which
    /// gets what is left of its own limit); `None`: not run. A count of
    /// candidates ([`Effort::Candidates`]) makes the row independent of the
    /// machine's speed and load.
    pub improve: Option<Effort>,
    /// How long a heuristic that runs a solver (OFFMATE's Algorithm 1) may
    /// run it: the row's `--time-limit`, or its deterministic default (a node
    /// count), which keeps the row independent of the machine.
    pub solver_limit: SolverLimit,
}

/// m / ⌈b⌉ (display only).
fn ratio(m: i64, to: &BoundCell) -> Option<f64> {
    (to.ceil > 0).then(|| m as f64 / to.ceil as f64)
}

/// Compute one entry. `file` already carries the budget.
pub fn gap(label: &str, file: &InstanceFile, inst: &Instance, opts: &GapOptions) -> GapEntry {
    gap_with_carry(label, file, inst, opts, None)
}

/// A row's best schedule offered to the next, larger budget of the same
/// instance: with more memory every rule but the capacity is unchanged, so the
/// schedule usually stays valid there. It is checked again on the new
/// instance, never assumed.
pub struct Carried<'a> {
    pub checked: &'a Checked,
    /// Who found it, and at which budget.
    pub by: String,
}

/// The best schedule found so far over the budgets of one instance, with who
/// found it and at which budget: each next row gets it as a [`Carried`].
#[derive(Default)]
pub struct CarryOver {
    best: Option<(String, Checked)>,
}

impl CarryOver {
    /// What the next budget's row is offered.
    pub fn carried(&self) -> Option<Carried<'_>> {
        self.best.as_ref().map(|(by, checked)| Carried {
            checked,
            by: by.clone(),
        })
    }

    /// Remember the row's best schedule, unless it is the carried one itself.
    pub fn keep(&mut self, entry: &GapEntry, budget_label: &str) {
        if let Some(best) = &entry.best_schedule {
            if self.best.as_ref().is_none_or(|(by, _)| *by != best.by) {
                let by = format!("{} (carried from {budget_label})", best.by);
                self.best = Some((by, best.checked().clone()));
            }
        }
    }
}

/// [`gap`], with the best schedule of a smaller budget as one more candidate.
pub fn gap_with_carry(
    label: &str,
    file: &InstanceFile,
    inst: &Instance,
    opts: &GapOptions,
    carried: Option<Carried>,
) -> GapEntry {
    let budget = super::budget::own_budget(file);
    let (mut bounds, failures, infeasible) = evaluate_bounds(file, inst);
    let mut problems = Vec::new();
    let mut cells = heuristic_cells(file, inst, opts, &mut problems);
    let mut best: Option<BestCell> = None;
    for c in &cells {
        if let Some(k) = c.checked() {
            offer(&mut best, k, &c.heuristic);
        }
    }
    if let Some(c) = carried {
        if let crate::check::CheckOutcome::Valid(k) =
            crate::check::check(inst, c.checked.schedule())
        {
            offer(&mut best, &k, &c.by);
        }
    }
    let mut optimum = None;
    if infeasible.is_none() && (opts.exact_for)(inst) {
        if let Some(f) = opts.optimum {
            optimum = f(inst);
        }
    }
    if let Some(o) = optimum.take_if(|o| !o.is_optimal()) {
        // Best within limits that lose optima: a checked schedule, not an
        // optimum (never the optimum column, never a ratio's denominator).
        offer(&mut best, o.checked(), &format!("exact ({})", o.claim));
    }
    if let Some(o) = &optimum {
        offer(&mut best, o.checked(), "exact");
    }
    let mut anytime = None;
    let certified_ceil =
        |bs: &[LowerBound]| best_of(bs, Strength::Certified).map(|b| b.ceil_ticks());
    let closed = |best: &Option<BestCell>| {
        best.as_ref()
            .zip(certified_ceil(&bounds))
            .is_some_and(|(b, c)| b.makespan() <= c)
    };
    let began = Instant::now();
    if let (None, None, false, Some(limit)) = (&infeasible, &optimum, closed(&best), opts.improve) {
        let target = certified_ceil(&bounds);
        improve_best(file, inst, &mut best, &cells, target, limit);
    }
    // The anytime search gets what the improvement left of the row's limit.
    let left = opts.anytime.map(|l| l.saturating_sub(began.elapsed()));
    if let (None, None, false, Some(limit)) = (&infeasible, &optimum, closed(&best), left) {
        let known = certified_ceil(&bounds);
        let incumbent = best.as_ref().map(BestCell::checked);
        // A free-order remat chain: the search runs on the best schedule's
        // op sequence, and its bound is that sequence's (not pushed below).
        let cell = if matches!(file, InstanceFile::RematChain(_)) {
            // The best schedule's sequence first, then the heuristics'.
            let from: Vec<&Checked> = incumbent
                .into_iter()
                .chain(cells.iter().filter_map(HeuristicCell::checked))
                .collect();
            exact::anytime_remat(inst, &from, known, limit, opts.progress)
        } else {
            exact::anytime(inst, incumbent, known, limit, opts.progress)
        };
        if let Some(sb) = cell.search_bound {
            bounds.push(LowerBound::from_ticks(
                sb,
                ANYTIME_SOURCE,
                Strength::Certified,
            ));
        }
        if let Some(k) = cell.found_checked() {
            offer(&mut best, k, ANYTIME_SOURCE);
        }
        anytime = Some(cell);
    }
    let (best_certified, best_reported, certified_gap) =
        certified_columns(&bounds, best.as_ref().map(BestCell::makespan));
    if optimum.is_none() {
        optimum = meets(best.as_ref(), best_certified.as_ref());
    }
    ratios(
        &mut cells,
        best_certified.as_ref(),
        optimum.as_ref(),
        &mut problems,
    );
    let best_m = best.as_ref().map(|b| (b.makespan(), b.by.clone()));
    problems.extend(bound_problems(&bounds, best_m.as_ref(), optimum.as_ref()));
    GapEntry {
        instance: label.into(),
        family: file.family().into(),
        release: inst.release,
        allocator: Default::default(),
        allocator_refused: Vec::new(),
        tick: file.tick_unit(),
        budget,
        budget_percent: position(file, budget),
        bounds: bounds.iter().map(BoundCell::from_bound).collect(),
        bound_failures: failures,
        best_certified_bound: best_certified,
        best_solver_reported: best_reported,
        best_schedule: best,
        certified_gap,
        optimum,
        anytime,
        heuristics: cells,
        infeasible,
        problems,
    }
}

/// The best certified bound, the best solver-reported bound (shown beside it,
/// never used for the gap) and the certified gap of `best` (a checked
/// makespan) against ⌈best certified bound⌉.
pub fn certified_columns(
    bounds: &[LowerBound],
    best: Option<i64>,
) -> (Option<BoundCell>, Option<BoundCell>, Option<GapCell>) {
    let certified = best_of(bounds, Strength::Certified).map(BoundCell::from_bound);
    let reported = best_of(bounds, Strength::SolverReported).map(BoundCell::from_bound);
    let gap = best
        .zip(certified.as_ref())
        .and_then(|(m, b)| GapCell::new(m, b.ceil));
    (certified, reported, gap)
}

/// Local improvement of the best checked schedule, where the family has one
/// (`weight_chain`: re-planning its transfers, stopping at ⌈best certified
/// bound⌉; `offmate`: [`heuristic::offmate::improve::improve`], plan moves and
/// the cyclic re-timing; `op_sequence`:
/// [`heuristic::improve::improve_op_sequence`]; computation graphs:
/// [`heuristic::graph::improve::improve`]; one-shot fixed-order instances
/// such as `activation_chain`: [`heuristic::improve::improve`]); the result is
/// offered as `<origin>+improve`.
fn improve_best(
    file: &InstanceFile,
    inst: &Instance,
    best: &mut Option<BestCell>,
    cells: &[HeuristicCell],
    target: Option<i64>,
    limit: Effort,
) {
    if let InstanceFile::RematChain(c) = file {
        return improve_remat(c, inst, best, target, limit);
    }
    let Some(start) = best.as_ref() else {
        return;
    };
    if let Some(c) = file.weight_chain() {
        if let Some((by, k)) =
            heuristic::weight::replan::improve(c, inst, start.checked(), target, limit)
        {
            offer(best, &k, &by);
        }
    } else if let Some(off) = file.offmate() {
        improve_offmate(off, inst, best, &offmate_starts(cells), limit);
    } else if let crate::family::InstanceFile::OpSequence(seq) = file {
        // Cyclic programs: re-plan the evictions, re-time, cut the period.
        if let Some(k) = heuristic::improve::improve_op_sequence(seq, inst, start.checked(), limit)
        {
            let by = format!("{}+improve", start.by);
            offer(best, &k, &by);
        }
    } else if crate::family::dag::Dag::of(inst).is_ok() {
        // Computation graphs: drop repeated computations while the memory
        // fits, then re-time back to back (`heuristic::graph::improve`).
        if let Some(k) = heuristic::graph::improve::improve(inst, start.checked(), limit) {
            let by = format!("{}+improve", start.by);
            offer(best, &k, &by);
        }
    } else if let Some(k) = heuristic::improve::improve(inst, start.checked(), limit) {
        // One-shot, fixed-order instances (`activation_chain` and the like):
        // re-plan and re-time the transfers (`heuristic::improve`).
        let by = format!("{}+improve", start.by);
        offer(best, &k, &by);
    }
}

/// A cell per heuristic that applies to `file` (those of `opts.only` when
/// given), under the row's solver limit.
fn heuristic_cells(
    file: &InstanceFile,
    inst: &Instance,
    opts: &GapOptions,
    problems: &mut Vec<String>,
) -> Vec<HeuristicCell> {
    let mut cells = Vec::new();
    for h in heuristic::all().iter().filter(|h| h.applies(file)) {
        if opts.only.is_empty() || opts.only.iter().any(|n| n == h.name()) {
            let limit = opts.solver_limit;
            cells.push(heuristic_cell(h.as_ref(), file, inst, limit, problems));
        }
    }
    cells
}

/// The OFFMATE plan sources whose schedules the improvement starts from
/// besides the best one ([`improve_offmate`]).
const OFFMATE_SOURCES: [&str; 2] = [
    heuristic::offmate::algorithm1::NAME,
    heuristic::offmate::balance::NAME,
];

/// The checked schedules of the OFFMATE plan sources among `cells`.
fn offmate_starts(cells: &[HeuristicCell]) -> Vec<(String, Checked)> {
    cells
        .iter()
        .filter(|c| OFFMATE_SOURCES.contains(&c.heuristic.as_str()))
        .filter_map(|c| c.checked().map(|k| (c.heuristic.clone(), k.clone())))
        .collect()
}

/// Cyclic OFFMATE schedules: plan moves (a block's option, an Adam step
/// between GPU and CPU), then the re-timing, every candidate checked
/// (`heuristic::offmate::improve`), from the best schedule and from each
/// other plan source's (`starts`: a plan a little longer may improve further,
/// as Algorithm 1's does on the RTX 3060 row without activation offload).
/// Each start gets the capped count, or its share of the time limit.
fn improve_offmate(
    off: &crate::family::offmate::Offmate,
    inst: &Instance,
    best: &mut Option<BestCell>,
    starts: &[(String, Checked)],
    limit: Effort,
) {
    let Some(first) = best.as_ref().map(|b| (b.by.clone(), b.checked().clone())) else {
        return;
    };
    let mut all = vec![first];
    for (by, k) in starts {
        if all.iter().all(|(_, c)| c.schedule() != k.schedule()) {
            all.push((by.clone(), k.clone()));
        }
    }
    let each = match heuristic::offmate::improve::cap(limit) {
        Effort::Time(d) => Effort::Time(d / all.len() as u32),
        n => n,
    };
    for (by, start) in all {
        if let Some(k) = heuristic::offmate::improve::improve(off, inst, &start, each) {
            let by = format!("{by}+improve ({})", k.moves.join(", "));
            offer(best, &k.checked, &by);
        }
    }
}

/// The most candidates [`improve_remat`] gives the re-timing (count mode).
const RETIME_REMAT: u64 = 1000;

/// `remat_chain`: re-plan the checkpoints and offloads
/// ([`heuristic::remat::replan`], half the effort; also where no heuristic
/// found a schedule), then re-time the best
/// schedule's events ([`heuristic::improve::retime`], the rest) where it has
/// transfers to move (a schedule without any is already left-shifted by the
/// simulator). Offered as `<finder>+retime`.
fn improve_remat(
    c: &crate::family::remat_chain::RematChain,
    inst: &Instance,
    best: &mut Option<BestCell>,
    target: Option<i64>,
    limit: Effort,
) {
    let began = Instant::now();
    let start = best.as_ref().map(BestCell::checked);
    if let Some((by, k)) = heuristic::remat::replan::improve(c, inst, start, target, limit.half()) {
        offer(best, &k, &by);
    }
    let Some(start) = best.as_ref() else { return };
    let moves = start
        .checked()
        .schedule()
        .events
        .iter()
        .any(|e| matches!(e, crate::schedule::Event::Transfer { .. }));
    if !moves || target.is_some_and(|t| start.makespan() <= t) {
        return;
    }
    // Re-timing a long chain checks the whole schedule per move: at most
    // RETIME_REMAT candidates (on the bundled chains it has not yet moved a
    // re-planned schedule, whose prefetches the simulator starts as early as
    // memory allows).
    let left = match limit {
        Effort::Candidates(n) => Effort::Candidates((n - n / 2).min(RETIME_REMAT)),
        Effort::Time(d) => Effort::Time(d.saturating_sub(began.elapsed())),
    };
    if let Some(k) = heuristic::improve::retime(inst, start.checked(), left) {
        let by = format!("{}+retime", start.by);
        offer(best, &k, &by);
    }
}

/// Keep `checked` as the best schedule if it ends strictly earlier (ties: the
/// first offered, so heuristics keep the credit before the exact methods).
fn offer(best: &mut Option<BestCell>, checked: &Checked, by: &str) {
    let m = checked.makespan().0;
    if best.as_ref().is_none_or(|b| m < b.makespan()) {
        *best = Some(BestCell::new(checked.clone(), by.into()));
    }
}

/// `optimal (certified)` when the best checked makespan meets ⌈best certified bound⌉.
fn meets(best: Option<&BestCell>, bound: Option<&BoundCell>) -> Option<OptimumCell> {
    let (s, b) = (best?, bound?);
    (b.ceil == s.makespan()).then(|| {
        OptimumCell::new(
            s.checked().clone(),
            "optimal (certified)".into(),
            format!("{} meets bound {}", s.by, b.source),
        )
    })
}

/// Each heuristic's ratios to ⌈best certified bound⌉ and to the optimum; a
/// makespan below the claimed optimum is a problem.
fn ratios(
    cells: &mut [HeuristicCell],
    bound: Option<&BoundCell>,
    optimum: Option<&OptimumCell>,
    problems: &mut Vec<String>,
) {
    for c in cells {
        let Some(m) = c.makespan() else { continue };
        c.ratio_to_bound = bound.and_then(|b| ratio(m, b));
        if let Some(o) = optimum {
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
    limit: SolverLimit,
    problems: &mut Vec<String>,
) -> HeuristicCell {
    let t = Instant::now();
    let r = heuristic::run_within(h, file, inst, limit);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn lb(num: i64, den: i64, source: &str, strength: Strength) -> LowerBound {
        LowerBound::from_ratio(num, den, source, strength)
    }

    /// bert-L144-b16 (issue 14): the solver-reported `milp-sec6` 10933790 is
    /// above the certified LP bound 10933789.83…; GREEDY* reaches 11289351.
    /// The gap is measured against ⌈10933789.83…⌉ = 10933790 from the
    /// certified bound: (11289351 − 10933790) / 10933790 = 355561/10933790
    /// (in lowest terms: 355561 = 107·3323, 10933790 = 2·5·7·109·1433), 3.2519…%,
    /// printed rounded up as 3.252.
    #[test]
    fn the_bert_gap_uses_the_certified_lp_bound() {
        let bounds = vec![
            lb(10933790, 1, "milp-sec6", Strength::SolverReported),
            lb(1093378983, 100, "milp-sec6-lp", Strength::Certified),
        ];
        let (c, r, g) = certified_columns(&bounds, Some(11289351));
        let c = c.unwrap();
        assert_eq!(
            (c.source.as_str(), c.certified, c.ceil),
            ("milp-sec6-lp", true, 10933790)
        );
        assert_eq!(r.unwrap().source, "milp-sec6");
        let g = g.unwrap();
        assert_eq!(g.exact, "355561/10933790");
        assert_eq!(g.percent, "3.252");
        assert_eq!(
            g.value,
            BigRational::new(BigInt::from(355561), BigInt::from(10933790))
        );
    }

    /// A solver-reported bound equal to the best makespan would "prove" it
    /// optimal; it is not the certified bound, so the gap stays open.
    #[test]
    fn a_solver_reported_bound_never_closes_the_gap() {
        let bounds = vec![
            lb(100, 1, "solver", Strength::SolverReported),
            lb(161, 2, "certified", Strength::Certified),
        ];
        let (c, _, g) = certified_columns(&bounds, Some(100));
        assert_eq!(c.unwrap().ceil, 81);
        // (100 − 81)/81 = 19/81 = 23.456790…%, rounded up 23.457.
        let g = g.unwrap();
        assert_eq!((g.exact.as_str(), g.percent.as_str()), ("19/81", "23.457"));
        // Only a solver-reported bound: no certified bound, no gap.
        let (c, r, g) = certified_columns(&bounds[..1], Some(100));
        assert!(c.is_none() && g.is_none());
        assert_eq!(r.unwrap().ceil, 100);
    }
}

#[cfg(test)]
mod carry_tests {
    use super::*;

    fn chain3_at(bytes: u64) -> (InstanceFile, Instance) {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/instances/examples/chain3.json"
        );
        let text = std::fs::read_to_string(path).expect("bundled example");
        let file = crate::io::parse_instance_file(path, &text).expect("parses");
        let f = super::super::budget::with_budget(&file, bytes);
        let inst = f.compile().expect("compiles");
        (f, inst)
    }

    fn opts<'a>(only: Vec<String>, never: &'a dyn Fn(&Instance) -> bool) -> GapOptions<'a> {
        GapOptions {
            optimum: None,
            exact_for: never,
            only,
            anytime: None,
            progress: None,
            improve: None,
            solver_limit: SolverLimit::Deterministic,
        }
    }

    /// chain3 (see its note): 15 at 16 B with nothing offloaded, 19 at 8 B.
    #[test]
    fn a_carried_schedule_is_checked_again_at_the_new_budget() {
        let never = |_: &Instance| false;
        let (f16, i16) = chain3_at(16);
        let big = gap("chain3", &f16, &i16, &opts(vec![], &never));
        let big = big.best_schedule.expect("a schedule at the peak");
        assert_eq!(big.makespan(), 15);
        // Down to 8 B the no-offload schedule breaks the capacity: not offered.
        let (f8, i8) = chain3_at(8);
        let carried = Carried {
            checked: big.checked(),
            by: "test (carried from 16 B)".into(),
        };
        let small = gap_with_carry("chain3", &f8, &i8, &opts(vec![], &never), Some(carried));
        let small = small.best_schedule.expect("a schedule at 8 B");
        assert_ne!(small.by, "test (carried from 16 B)");
        assert!(
            small.makespan() >= 19,
            "the default rule's optimum at 8 B is 19"
        );
        // Up to 12 B with no heuristic run: the carried schedule is re-checked
        // there, valid, and the row's best.
        let (f12, i12) = chain3_at(12);
        let carried = Carried {
            checked: small.checked(),
            by: "test (carried from 8 B)".into(),
        };
        let none = vec!["no-such-heuristic".to_string()];
        let up = gap_with_carry("chain3", &f12, &i12, &opts(none, &never), Some(carried));
        let up = up.best_schedule.expect("the carried schedule");
        assert_eq!(up.by, "test (carried from 8 B)");
        assert_eq!(up.makespan(), small.makespan());
        // Checked on the 12 B instance, not the 8 B one it came from.
        assert_ne!(
            up.checked().report().instance_sha256,
            small.checked().report().instance_sha256
        );
    }
}
