//! A gap row judged again under a stricter allocator (`models/MODEL.md`
//! §2.8, `gap --allocator`). The row is computed in the `exact` model (bounds,
//! exact methods and heuristics know no allocator); then every schedule it
//! shows is checked again under the allocator. A heuristic's schedule that
//! fails there counts as no schedule for the row, with the reason; the best
//! schedule and the optimum are kept only if they pass (an `exact` optimum
//! valid under the stricter allocator is optimal under it too, since every
//! schedule valid under it is valid under `exact`); bounds stay, since a
//! bound under `exact` is a lower bound under every stricter allocator.
//!
//! Owns: [`restrict`]. Must not import: `cli`.

use super::cells::{BestCell, GapCell, HeuristicCell};
use super::gap::GapEntry;
use crate::check::{check, CheckOutcome, Checked};
use crate::model::{Allocator, Instance};

/// Why `k` (valid under `exact`) fails under the allocator of `strict`, or
/// `None` if it passes.
pub fn refused(strict: &Instance, k: &Checked) -> Option<String> {
    match check(strict, k.schedule()) {
        CheckOutcome::Valid(_) => None,
        CheckOutcome::Invalid(r) => Some(format!(
            "valid under exact, not under allocator {}: {}",
            strict.allocator,
            r.violations()
                .first()
                .map_or(String::new(), |v| v.describe(strict))
        )),
    }
}

/// Judge `entry` (computed on `inst`, in the `exact` model) under `a`. Under
/// `exact` nothing changes.
pub fn restrict(entry: &mut GapEntry, inst: &Instance, a: Allocator) {
    if a.is_default() {
        return;
    }
    let mut strict = inst.clone();
    strict.allocator = a;
    entry.allocator = a;
    for c in &mut entry.heuristics {
        let Some(why) = c.checked().and_then(|k| refused(&strict, k)) else {
            continue;
        };
        let mut cell = HeuristicCell::without_schedule(&c.heuristic, "no schedule", why, c.seconds);
        cell.model_value = c.model_value;
        *c = cell;
    }
    if let Some(o) = &entry.optimum {
        if let Some(why) = refused(&strict, o.checked()) {
            entry
                .allocator_refused
                .push(format!("{} ({}): {why}", o.claim, o.by));
            entry.optimum = None;
        }
    }
    if let Some(b) = &entry.best_schedule {
        if let Some(why) = refused(&strict, b.checked()) {
            entry
                .allocator_refused
                .push(format!("best schedule ({}): {why}", b.by));
            entry.best_schedule = best_passing(entry);
        }
    }
    let best = entry.best_schedule.as_ref().map(BestCell::makespan);
    entry.certified_gap = best
        .zip(entry.best_certified_bound.as_ref())
        .and_then(|(m, b)| GapCell::new(m, b.ceil));
    let optimum = entry.optimum.as_ref().map(|o| o.makespan());
    for c in &mut entry.heuristics {
        if c.makespan().is_none() {
            c.ratio_to_bound = None;
        }
        c.ratio_to_optimum = c.makespan().zip(optimum).map(|(m, o)| m as f64 / o as f64);
    }
}

/// The best schedule left once the row's best failed: the optimum (it passed)
/// or the best heuristic schedule that passed.
fn best_passing(entry: &GapEntry) -> Option<BestCell> {
    if let Some(o) = &entry.optimum {
        return Some(BestCell::new(o.checked().clone(), "exact".into()));
    }
    let cells = entry.heuristics.iter();
    let passing = cells.filter_map(|c| c.checked().map(|k| (k, &c.heuristic)));
    passing
        .min_by_key(|(k, _)| k.makespan())
        .map(|(k, by)| BestCell::new(k.clone(), by.clone()))
}
