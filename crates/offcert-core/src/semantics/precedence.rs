//! Rule *precedence* (R13, G6: OFFMATE's CPU management time H): every run of
//! an op `o` starts at or after the end of the latest run of each `q` in
//! `o.after` that started before it. "Before" is the replay's start order
//! (models/MODEL.md §2.4): by start, a zero-duration run before a positive one
//! at the same instant, then file order. In a cyclic schedule the runs of `q`
//! repeat every period, `s + kP` for every integer `k`, so a run of `o` always
//! has a predecessor run once `q` runs at all; in a one-shot schedule a run of
//! `o` with no run of `q` started before it breaks the rule too.
//!
//! Owns: [`Run`], [`check_after`] and [`PrecedenceBreach`].
//! Must not import: anything outside offcert-core (no solver, heuristic or
//! `offcert` module; Cargo enforces it).

use crate::model::{Instance, OpId};
use crate::units::Ticks;
use serde::{Deserialize, Serialize};

/// One run of an op: its index among the schedule's events and its times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub index: usize,
    pub op: OpId,
    pub start: Ticks,
    pub end: Ticks,
}

/// A run of `op` (run `index`, starting at `start`) that does not wait for
/// `after`: the latest earlier run of `after` (run `pred_index`, shifted by
/// whole periods to end at `pred_end`) ends after `start`, or (`None`) no run
/// of `after` started before it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrecedenceBreach {
    pub op: OpId,
    pub index: usize,
    pub start: Ticks,
    pub after: OpId,
    pub pred: Option<(usize, Ticks)>,
}

impl Run {
    /// Its place in the replay's start order at start time `start`.
    fn key(&self, start: Ticks) -> (Ticks, bool, usize) {
        (start, self.end > self.start, self.index)
    }
}

/// The copy of run `q` that starts last before run `r`: the run itself
/// (one-shot), or shifted by the greatest whole number of periods `k` that
/// puts it before `r` (cyclic, `period > 0`).
fn latest_copy_before(q: &Run, r: &Run, period: Option<Ticks>) -> Option<(Ticks, Ticks)> {
    let before = |start: Ticks| q.key(start) < r.key(r.start);
    match period {
        Some(p) if p.0 > 0 => {
            // The greatest k with q.start + kP < r.start, or one more when that
            // copy starts at r.start itself and comes first at the tie.
            let mut k = (r.start.0 - q.start.0 - 1).div_euclid(p.0);
            if before(Ticks(q.start.0 + (k + 1) * p.0)) {
                k += 1;
            }
            Some((Ticks(q.start.0 + k * p.0), Ticks(q.end.0 + k * p.0)))
        }
        _ => before(q.start).then_some((q.start, q.end)),
    }
}

/// Every breach of R13, in the order of `runs` then of `after` lists.
/// `period` is `Some(P)` for a cyclic schedule.
pub fn check_after(inst: &Instance, runs: &[Run], period: Option<Ticks>) -> Vec<PrecedenceBreach> {
    let mut out = Vec::new();
    if inst.ops.iter().all(|o| o.after.is_empty()) {
        return out;
    }
    let mut by_op: Vec<Vec<Run>> = vec![Vec::new(); inst.ops.len()];
    for r in runs {
        by_op[r.op.ix()].push(*r);
    }
    for r in runs {
        for &after in &inst.op(r.op).after {
            // The latest start before r.start; at a tie the latest end.
            let pred = by_op[after.ix()]
                .iter()
                .filter_map(|q| latest_copy_before(q, r, period).map(|(s, e)| (s, e, q.index)))
                .max_by_key(|&(s, e, _)| (s, e));
            match pred {
                Some((_, end, _)) if end <= r.start => {}
                _ => out.push(PrecedenceBreach {
                    op: r.op,
                    index: r.index,
                    start: r.start,
                    after,
                    pred: pred.map(|(_, e, i)| (i, e)),
                }),
            }
        }
    }
    out
}
