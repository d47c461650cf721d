//! Plan against actual: a planned schedule beside the schedule a trace shows.
//!
//! Owns: matching planned and actual events (the k-th run of an op, the k-th
//! transfer of a tensor in a direction) and their deviations. Both schedules are
//! judged by [`crate::check::check`]; the makespans reported are the checker's.
//! Must not import: solvers, heuristics, bounds.

use crate::check::{check, CheckOutcome};
use crate::model::{Direction, Instance};
use crate::schedule::{Event, Schedule};
use crate::units::Ticks;
use serde::Serialize;
use std::collections::HashMap;

/// One planned event and what happened to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Deviation {
    /// `compute`, `offload`, `prefetch` or `delete`.
    pub kind: &'static str,
    /// Op or tensor name.
    pub name: String,
    /// 0 for the first run of this op (or transfer of this tensor), 1 for the second…
    pub occurrence: u32,
    pub planned_start: Ticks,
    pub planned_duration: Ticks,
    /// `None` when the trace shows no such event.
    pub actual_start: Option<Ticks>,
    pub actual_duration: Option<Ticks>,
    /// actual − planned.
    pub start_delta: Option<i64>,
    pub duration_delta: Option<i64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PlanComparison {
    pub deviations: Vec<Deviation>,
    /// Actual events with no planned counterpart.
    pub unplanned: u64,
    /// The checker's outcome on the plan and on the run (serialized as reports).
    pub planned: CheckOutcome,
    pub actual: CheckOutcome,
    /// The checker's makespan (period, for cyclic) of the plan and of the run.
    pub planned_makespan: Ticks,
    pub actual_makespan: Ticks,
}

fn key(inst: &Instance, e: &Event) -> (&'static str, String) {
    match *e {
        Event::Compute { op, .. } => ("compute", inst.op(op).name.clone()),
        Event::Transfer {
            dir: Direction::Offload,
            tensor,
            ..
        } => ("offload", inst.tensor(tensor).name.clone()),
        Event::Transfer {
            dir: Direction::Prefetch,
            tensor,
            ..
        } => ("prefetch", inst.tensor(tensor).name.clone()),
        Event::Delete { tensor, .. } => ("delete", inst.tensor(tensor).name.clone()),
    }
}

/// Compare `plan` with `actual` (both over `inst`).
pub fn compare(inst: &Instance, plan: &Schedule, actual: &Schedule) -> PlanComparison {
    let planned = check(inst, plan);
    let actual_report = check(inst, actual);
    let group = |s: &Schedule| {
        let mut m: HashMap<(&'static str, String), Vec<Event>> = HashMap::new();
        let mut evs = s.events.clone();
        evs.sort_by_key(|e| (e.start(), e.end()));
        for e in evs {
            m.entry(key(inst, &e)).or_default().push(e);
        }
        m
    };
    let p = group(plan);
    let mut a = group(actual);
    let mut deviations = Vec::new();
    let mut order: Vec<Event> = plan.events.clone();
    order.sort_by_key(|e| (e.start(), e.end()));
    let mut seen: HashMap<(&'static str, String), u32> = HashMap::new();
    for e in &order {
        let k = key(inst, e);
        let occ = {
            let c = seen.entry(k.clone()).or_insert(0);
            *c += 1;
            *c - 1
        };
        let got = a.get(&k).and_then(|v| v.get(occ as usize)).copied();
        let dur = |e: &Event| e.end() - e.start();
        deviations.push(Deviation {
            kind: k.0,
            name: k.1.clone(),
            occurrence: occ,
            planned_start: e.start(),
            planned_duration: dur(e),
            actual_start: got.map(|g| g.start()),
            actual_duration: got.map(|g| dur(&g)),
            start_delta: got.map(|g| g.start().0 - e.start().0),
            duration_delta: got.map(|g| dur(&g).0 - dur(e).0),
        });
    }
    let mut unplanned = 0u64;
    for (k, v) in a.iter_mut() {
        let n = p.get(k).map_or(0, |x| x.len());
        unplanned += v.len().saturating_sub(n) as u64;
    }
    PlanComparison {
        deviations,
        unplanned,
        planned_makespan: planned.makespan,
        actual_makespan: actual_report.makespan,
        planned,
        actual: actual_report,
    }
}
