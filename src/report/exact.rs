//! The exact columns: the exact solvers' cross-checked verdict
//! ([`crate::exact::crosscheck`]: MILP, SMT and search, every schedule replayed
//! by the checker), of which only an optimum the verdict labels optimal is
//! reported as one, with the verdict's own words for its strength (a remat
//! chain's `best within sequence limits (…)` comes back as a cell that is no
//! optimum: the gap report offers its schedule as a checked best schedule);
//! and the anytime
//! search ([`crate::exact::anytime`]), which returns within a time limit the
//! best checked schedule it knows and a certified lower bound. On a
//! `remat_chain` row (free order) the search runs on op sequences of checked
//! schedules ([`anytime_remat`]), and its bounds are those sequences', never
//! the instance's.
//!
//! Owns: the optimum column ([`optimum`]), built from the verdict's `Checked`;
//! the anytime column ([`AnytimeCell`], [`anytime`], [`anytime_remat`] with
//! the carrying of a schedule onto its renamed sequence).
//! Must not import: the CLI.

use super::cells::OptimumCell;
use crate::check::{check, CheckOutcome, Checked};
use crate::exact::anytime::{solve_anytime, AnytimeOptions, Progress};
use crate::exact::crosscheck::{self, Label};
use crate::exact::remat::{self, sequences};
use crate::exact::{Limits, Method};
use crate::model::{Instance, OpId, TensorId};
use crate::schedule::{Event, Schedule};
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
    /// `remat_chain` rows ([`anytime_remat`]): the search ran on one op
    /// sequence (the best schedule's), and this is its certified bound *for
    /// that sequence only*: no bound of the instance, never in the bound
    /// columns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence_bound: Option<i64>,
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
                sequence_bound: None,
                found_checked,
            }
        }
        Err(e) => error_cell(e.to_string()),
    }
}

fn error_cell(why: String) -> AnytimeCell {
    AnytimeCell {
        stop: "error".into(),
        seconds: 0.0,
        states: 0,
        search_bound: None,
        proven_optimal: false,
        found: None,
        notes: vec![why],
        sequence_bound: None,
        found_checked: None,
    }
}

/// The most op sequences [`anytime_remat`] searches in one row.
pub const REMAT_SEQUENCES: usize = 4;

/// The anytime search on a `remat_chain` row (free order). The search works
/// on fixed orders, so it runs on op sequences: those of `candidates` (the
/// row's best checked schedule first, then the other heuristics' schedules;
/// at most [`REMAT_SEQUENCES`] distinct ones) whose total compute is below
/// the best makespan (a sequence whose compute reaches it cannot beat it: one
/// GPU stream), each renamed into a fixed-order instance
/// ([`sequences::rename`]: one op per run, one tensor per value, a value freed
/// by its last reader), with an equal share of `limit`. A schedule's own
/// sequence starts from that schedule, carried over (dropped if the checker
/// rejects it there); every search prunes at the best makespan so far
/// ([`AnytimeOptions::cutoff`]). A better schedule is mapped back
/// ([`remat::map_back`]) and **checked on the original instance**. Each
/// search's own bound holds for its sequence only: the least over the
/// sequences searched is [`AnytimeCell::sequence_bound`], never a bound of the
/// instance, and the cell never claims an optimum (`known`, the instance's
/// ⌈best certified bound⌉, is a bound of every sequence and may end a search
/// early). Chains outside the reduction's scope ([`remat::scope`]: a layer op
/// of duration 0, `after_start`) are refused with the reason.
pub fn anytime_remat(
    inst: &Instance,
    candidates: &[&Checked],
    known: Option<i64>,
    limit: Duration,
    progress: Option<&ProgressHook>,
) -> AnytimeCell {
    let Some(first) = candidates.first() else {
        return error_cell(
            "remat_chain: the anytime search runs on checked schedules' op sequences, and this row has none".into(),
        );
    };
    // The reduction's scope (positive-duration layer ops, after_end): where a
    // last reader's release can be written as a delete at its end.
    if let Err(e) = remat::scope(inst, Method::Search) {
        return error_cell(format!("remat_chain: {e}"));
    }
    let started = std::time::Instant::now();
    let mut best: Checked = (*first).clone();
    let mut found: Option<Checked> = None;
    let mut seqs: Vec<(Vec<OpId>, &Checked)> = vec![];
    for k in candidates {
        let seq = op_sequence(k.schedule());
        if seqs.len() < REMAT_SEQUENCES
            && compute(inst, &seq) < best.makespan().0
            && !seqs.iter().any(|(s, _)| *s == seq)
        {
            seqs.push((seq, *k));
        }
    }
    let mut notes = vec![format!(
        "remat_chain: the search ran on {} op sequence(s) of checked schedules whose compute is below the best makespan {}, each as a fixed order; its bounds hold for those sequences only",
        seqs.len(),
        best.makespan().0
    )];
    let (mut states, mut seq_bound, mut last_stop) = (0u64, None::<i64>, None);
    let n = seqs.len();
    for (i, (seq, from)) in seqs.iter().enumerate() {
        let share = limit.saturating_sub(started.elapsed()) / (n - i) as u32;
        let r = sequences::rename(inst, seq);
        let carried = match check(&r.inst, &carry_to_sequence(&r, from.schedule())) {
            CheckOutcome::Valid(k) => Some(k),
            CheckOutcome::Invalid(_) => None,
        };
        let opts = AnytimeOptions {
            time_limit: share,
            incumbent: carried.clone(),
            known_bound: known.map(Ticks),
            cutoff: Some(best.makespan()),
            progress,
            ..AnytimeOptions::default()
        };
        let o = match solve_anytime(&r.inst, &opts) {
            Ok(o) => o,
            Err(e) => {
                notes.push(format!("sequence {}: {e}", i + 1));
                continue;
            }
        };
        states += o.states;
        last_stop = Some(o.stop);
        let b = o.search_bound.map_or(best.makespan().0, |t| t.0);
        seq_bound = Some(seq_bound.map_or(b, |x: i64| x.min(b)));
        let mapped = o
            .best
            .as_ref()
            .filter(|_| o.best_from_search)
            .map(|k| remat::map_back(&r, k.schedule()));
        let better = mapped.and_then(|s| match check(inst, &s) {
            CheckOutcome::Valid(k) => Some(k),
            CheckOutcome::Invalid(rej) => {
                notes.push(format!(
                    "sequence {}: the search's schedule, mapped back, fails the checker: {}",
                    i + 1,
                    rej.violations()
                        .first()
                        .map(|v| v.describe(inst))
                        .unwrap_or_default()
                ));
                None
            }
        });
        notes.push(format!(
            "sequence {} ({} ops, compute {}{}): {:?} after {:.1} s, {} states, bound {b} within it{}",
            i + 1,
            seq.len(),
            compute(inst, seq),
            if carried.is_some() { ", from its schedule" } else { "" },
            o.stop,
            o.elapsed.as_secs_f64(),
            o.states,
            better
                .as_ref()
                .map_or(String::new(), |k| format!(", found {}", k.makespan().0)),
        ));
        if let Some(k) = better.filter(|k| k.makespan() < best.makespan()) {
            best = k.clone();
            found = Some(k);
        }
    }
    AnytimeCell {
        stop: last_stop
            .and_then(|st| serde_json::to_value(st).ok())
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "no_sequence".into()),
        seconds: started.elapsed().as_secs_f64(),
        states,
        search_bound: None,
        proven_optimal: false,
        found: found.as_ref().map(|c| c.makespan().0),
        notes,
        sequence_bound: seq_bound,
        found_checked: found,
    }
}

/// The total compute of an op sequence (one GPU stream: a lower bound on
/// every schedule that runs it).
fn compute(inst: &Instance, seq: &[OpId]) -> i64 {
    seq.iter().map(|o| inst.op(*o).duration.0).sum()
}

/// A schedule's GPU op sequence: its compute events in start order.
pub fn op_sequence(s: &Schedule) -> Vec<OpId> {
    let mut ops: Vec<(Ticks, OpId)> = s
        .events
        .iter()
        .filter_map(|e| match *e {
            Event::Compute { op, start, .. } => Some((start, op)),
            _ => None,
        })
        .collect();
    ops.sort_by_key(|x| x.0);
    ops.into_iter().map(|x| x.1).collect()
}

/// `s` (a schedule of the original instance whose op sequence `r` renames)
/// as a schedule of the renamed instance: each transfer or delete names the
/// value of its tensor current at its instant (a transfer starting with the
/// value's producer sees the new value: op starts come first; a delete at a
/// producer's start the old one: releases come first); deletes and
/// transfers of a value from its last reader's end on are dropped (the
/// renamed last reader frees it). The caller checks the result.
pub fn carry_to_sequence(r: &sequences::Renamed, s: &Schedule) -> Schedule {
    let nt = r.tensor_of.iter().map(|t| t.ix() + 1).max().unwrap_or(0);
    // Per original tensor: (start of the value's producer, value), in order.
    let mut values: Vec<Vec<(Ticks, usize)>> = vec![vec![]; nt];
    let mut freed_at: Vec<Option<Ticks>> = vec![None; r.tensor_of.len()];
    let mut pos = 0usize;
    let mut events = vec![];
    for e in &s.events {
        if let Event::Compute { start, end, .. } = *e {
            events.push((start, pos, end));
            pos += 1;
        }
    }
    events.sort();
    let mut out = vec![];
    // Initial values (produced by nobody) start at time 0.
    let mut produced: Vec<bool> = vec![false; r.tensor_of.len()];
    for (p, (start, _, end)) in events.iter().enumerate() {
        let op = r.inst.op(OpId(p as u32));
        for v in &op.produces {
            produced[v.ix()] = true;
            values[r.tensor_of[v.ix()].ix()].push((*start, v.ix()));
        }
        for v in &op.frees {
            freed_at[v.ix()] = Some(*end);
        }
        out.push(Event::Compute {
            op: OpId(p as u32),
            start: *start,
            end: *end,
        });
    }
    for (v, t) in r.tensor_of.iter().enumerate() {
        if !produced[v] {
            values[t.ix()].insert(0, (Ticks(i64::MIN), v));
        }
    }
    let value_at = |t: TensorId, at: Ticks, inclusive: bool| {
        values.get(t.ix())?.iter().rev().find(
            |(from, _)| {
                if inclusive {
                    *from <= at
                } else {
                    *from < at
                }
            },
        )
    };
    let live = |v: usize, at: Ticks| freed_at[v].is_none_or(|f| at < f);
    for e in &s.events {
        match *e {
            Event::Compute { .. } => {}
            Event::Transfer {
                dir,
                tensor,
                start,
                end,
                delete,
            } => {
                if let Some(&(_, v)) = value_at(tensor, start, true).filter(|x| live(x.1, end)) {
                    out.push(Event::Transfer {
                        dir,
                        tensor: TensorId(v as u32),
                        start,
                        end,
                        delete,
                    });
                }
            }
            Event::Delete { tensor, at } => {
                if let Some(&(_, v)) = value_at(tensor, at, false).filter(|x| live(x.1, at)) {
                    out.push(Event::Delete {
                        tensor: TensorId(v as u32),
                        at,
                    });
                }
            }
        }
    }
    Schedule::one_shot(out)
}
