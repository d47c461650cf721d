//! The exact columns: the exact solvers' cross-checked verdict
//! ([`crate::exact::crosscheck`]: MILP, SMT and search, every schedule replayed
//! by the checker), of which only an optimum the verdict labels optimal is
//! reported as one, with the verdict's own words for its strength (a remat
//! chain's `best within sequence limits (…)` comes back as a cell that is no
//! optimum: the gap report offers its schedule as a checked best schedule);
//! and the anytime
//! search ([`crate::exact::anytime`]), which returns within a time limit the
//! best checked schedule it knows and a certified lower bound.
//!
//! Owns: the optimum column ([`optimum`]), built from the verdict's `Checked`;
//! the anytime column ([`AnytimeCell`], [`anytime`]).
//! Must not import: the CLI.

use super::cells::OptimumCell;
use crate::check::Checked;
use crate::exact::anytime::{solve_anytime, AnytimeOptions, Progress};
use crate::exact::crosscheck::{self, Label};
use crate::exact::{Limits, Method};
use crate::model::Instance;
use crate::units::Ticks;
use serde::Serialize;
use std::time::Duration;

/// The methods the gap report runs.
pub const METHODS: [Method; 3] = [Method::Milp, Method::Smt, Method::Search];

pub fn optimum(inst: &Instance, limit: Duration) -> Option<OptimumCell> {
    let limits = Limits {
        time_limit: limit,
        ..Limits::default()
    };
    let v = crosscheck::run(inst, &METHODS, &limits);
    match v.label {
        Label::OptimalCrossChecked | Label::OptimalSolverReported => Some(OptimumCell::new(
            v.checked?,
            v.label.words(),
            format!("exact: {}", v.evidence.join("; ")),
        )),
        Label::BestWithinLimitsCrossChecked | Label::BestWithinLimitsSolverReported => {
            Some(OptimumCell::best_within_limits(
                v.checked?,
                v.label.words(),
                format!("exact: {}", v.evidence.join("; ")),
            ))
        }
        _ => None,
    }
}

/// What the anytime search established for one instance and budget. Its
/// schedule (when it found a better one than its incumbent) is the checker's.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct AnytimeCell {
    /// Why it stopped ("closed", "time_limit", …), or "error".
    pub stop: String,
    pub seconds: f64,
    pub states: u64,
    /// The search's own certified lower bound (`proofs/ANYTIME.md`); the
    /// known bound passed in is not part of it.
    pub search_bound: Option<i64>,
    /// Its best schedule meets the lower bound (the search's or the one passed in).
    pub proven_optimal: bool,
    /// The checker's makespan of a schedule the search found itself (better
    /// than the incumbent it was given).
    pub found: Option<i64>,
    /// The search's notes, or why it could not run.
    pub notes: Vec<String>,
    #[serde(skip)]
    found_checked: Option<Checked>,
}

impl AnytimeCell {
    /// The schedule the search found itself, checked.
    pub fn found_checked(&self) -> Option<&Checked> {
        self.found_checked.as_ref()
    }
}

/// The anytime search's callback for progress reports.
pub type ProgressHook<'a> = dyn Fn(&Progress) + 'a;

/// Run the anytime search within `limit`, starting from `incumbent` (the best
/// checked heuristic schedule) and told `known` (⌈best certified bound⌉).
pub fn anytime(
    inst: &Instance,
    incumbent: Option<&Checked>,
    known: Option<i64>,
    limit: Duration,
    progress: Option<&ProgressHook>,
) -> AnytimeCell {
    let opts = AnytimeOptions {
        time_limit: limit,
        incumbent: incumbent.cloned(),
        known_bound: known.map(Ticks),
        progress,
        ..AnytimeOptions::default()
    };
    match solve_anytime(inst, &opts) {
        Ok(o) => {
            let found_checked = if o.best_from_search { o.best } else { None };
            AnytimeCell {
                stop: serde_json::to_value(o.stop)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_else(|| format!("{:?}", o.stop)),
                seconds: o.elapsed.as_secs_f64(),
                states: o.states,
                search_bound: o.search_bound.map(|t| t.0),
                proven_optimal: o.proven_optimal,
                found: found_checked.as_ref().map(|c| c.makespan().0),
                notes: o.notes,
                found_checked,
            }
        }
        Err(e) => AnytimeCell {
            stop: "error".into(),
            seconds: 0.0,
            states: 0,
            search_bound: None,
            proven_optimal: false,
            found: None,
            notes: vec![e.to_string()],
            found_checked: None,
        },
    }
}
