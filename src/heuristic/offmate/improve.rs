//! Checked improvement of a cyclic OFFMATE schedule.
//!
//! The schedule's whole-tensor plan is read back from its events
//! ([`read_plan`]: the option each block ran, where each parameter's Adam step
//! ran, which parameters and states were on the GPU at each step's block op).
//! A first-improvement hill climb then tries, on that plan, each of these
//! moves, realised by [`super::realise`] and **checked**: a block's other
//! option; a GPU-updated parameter's Adam step moved to the CPU (in any step
//! between its last gradient and its next forward, its GPU copy deleted from
//! that step until the prefetch before the forward); a CPU-updated parameter's
//! step moved back to the GPU (its states kept on the GPU, or offloaded after
//! the update and prefetched before it). A strictly shorter checked period
//! replaces the current plan. Before the climb the plan is realised at each
//! spanning pace ([`Pace::SPANS`]: transfers and CPU work across step
//! borders), checked; the best pace (move `span`) realises the climb's plans. Then [`crate::heuristic::improve::retime_cyclic`]
//! re-times the best schedule's events (cyclic: each event as early as the
//! checker accepts, then the period cut to its last event).
//!
//! The effort ([`Effort`]) counts candidates (realise + check, or one check
//! of the re-timing): with [`Effort::Candidates`] the result is the same on
//! every machine. Half goes to the moves, the rest to the re-timing.
//!
//! Owns: [`improve`], [`read_plan`], [`Improved`], [`cap`]. Must not import: exact
//! solvers, reports.

use super::postprocess::{group_steps, ParamRound, Rounded, Update};
use super::realise::{realise_paced, Pace};
use crate::check::{check, CheckOutcome, Checked};
use crate::family::offmate::Offmate;
use crate::family::offmate_compile::names;
use crate::heuristic::effort::{Effort, Meter};
use crate::model::{Direction, Instance, TensorId};
use crate::schedule::{Event, Schedule};
use crate::units::Ticks;

/// The candidates at most of one improvement given a count ([`cap`]): each
/// realises and checks a whole period (about 2,600 events on the Llama2-7B
/// instances, tens of milliseconds), so the gap report's default of 20,000
/// would take minutes per row.
pub const MAX_CANDIDATES: u64 = 2_000;

/// `effort` with a count capped at [`MAX_CANDIDATES`] (a time is kept).
pub fn cap(effort: Effort) -> Effort {
    match effort {
        Effort::Candidates(n) => Effort::Candidates(n.min(MAX_CANDIDATES)),
        t => t,
    }
}

/// A better checked schedule and what made it better.
#[derive(Clone, Debug)]
pub struct Improved {
    pub checked: Checked,
    /// Accepted moves (`span (…)` with its pace, `option`, `adam→cpu`, `adam→gpu`) and
    /// `retime`, in the order first used.
    pub moves: Vec<&'static str>,
}

/// A strictly better checked schedule than `start` (plan moves, then the
/// re-timing), or `None`.
pub fn improve(
    off: &Offmate,
    inst: &Instance,
    start: &Checked,
    effort: impl Into<Effort>,
) -> Option<Improved> {
    let effort = effort.into();
    let whole = effort.start();
    let mut first = effort.half().start();
    let mut moves: Vec<&'static str> = Vec::new();
    let planned = read_plan(off, inst, start.schedule())
        .and_then(|plan| climb(off, inst, plan, start, &mut first, &mut moves));
    let base = planned.as_ref().unwrap_or(start);
    let left = match effort {
        Effort::Candidates(n) => Effort::Candidates(n.saturating_sub(first.used())),
        Effort::Time(_) => whole.left(),
    };
    let retimed = crate::heuristic::improve::retime_cyclic(inst, base, left);
    if retimed.is_some() {
        moves.push("retime");
    }
    retimed
        .or(planned)
        .map(|checked| Improved { checked, moves })
}

/// The hill climb over plan moves; the best checked schedule if it beats `start`.
fn climb(
    off: &Offmate,
    inst: &Instance,
    mut cur: Rounded,
    start: &Checked,
    meter: &mut Meter,
    used: &mut Vec<&'static str>,
) -> Option<Checked> {
    let mut best: Option<Checked> = None;
    let mut best_p = start.makespan();
    // The plan read back, realised afresh (it may differ from `start`), then
    // at each spanning pace; the best pace realises the climb's plans.
    let mut pace = Pace::Sync;
    for p in std::iter::once(Pace::Sync).chain(Pace::SPANS) {
        if let Some(c) = try_plan(off, inst, &cur, p, best_p, meter) {
            best_p = c.makespan();
            best = Some(c);
            pace = p;
        }
    }
    if pace != Pace::Sync {
        used.push(pace.label());
    }
    let mut from = 0;
    'climb: loop {
        let cands = neighbours(off, &cur);
        if cands.is_empty() {
            break;
        }
        for k in 0..cands.len() {
            if meter.spent() {
                break 'climb;
            }
            let (what, plan) = &cands[(from + k) % cands.len()];
            if let Some(c) = try_plan(off, inst, plan, pace, best_p, meter) {
                best_p = c.makespan();
                best = Some(c);
                cur = plan.clone();
                if !used.contains(what) {
                    used.push(what);
                }
                from = (from + k) % cands.len();
                continue 'climb;
            }
        }
        break;
    }
    // The climbed plan at the other paces.
    for p in std::iter::once(Pace::Sync).chain(Pace::SPANS) {
        if p != pace && !meter.spent() {
            if let Some(c) = try_plan(off, inst, &cur, p, best_p, meter) {
                best_p = c.makespan();
                best = Some(c);
                if p != Pace::Sync && !used.contains(&p.label()) {
                    used.push(p.label());
                }
            }
        }
    }
    best
}

/// Realise `plan` at `pace` and check it; the checked schedule if its period
/// is below `bound`.
fn try_plan(
    off: &Offmate,
    inst: &Instance,
    plan: &Rounded,
    pace: Pace,
    bound: Ticks,
    meter: &mut Meter,
) -> Option<Checked> {
    meter.charge();
    let s = realise_paced(off, inst, plan, pace).ok()?.schedule;
    if s.period.is_none_or(|p| p >= bound) {
        return None;
    }
    match check(inst, &s) {
        CheckOutcome::Valid(c) if c.makespan() < bound => Some(c),
        _ => None,
    }
}

/// Every move from `r`, labelled.
fn neighbours(off: &Offmate, r: &Rounded) -> Vec<(&'static str, Rounded)> {
    let mut out = Vec::new();
    for (b, blk) in off.blocks.iter().enumerate() {
        for o in 0..blk.options.len() {
            if o != r.option[b] {
                let mut v = r.clone();
                v.option[b] = o;
                out.push(("option", v));
            }
        }
    }
    for (p, b1) in off.updated_params() {
        let (gw, fw) = group_steps(off, b1 - 1);
        let n = 2 * off.l();
        let end = (fw + n - gw) % n;
        match r.params[p].update {
            Update::Gpu => {
                for j in positions(end) {
                    out.push(("adam→cpu", to_cpu(r, p, gw, j, end, n)));
                }
            }
            Update::Cpu(s) => {
                for keep_states in [true, false] {
                    out.push(("adam→gpu", to_gpu(off, r, p, gw, keep_states)));
                }
                let at = (s + n - gw) % n;
                for j in positions(end).into_iter().filter(|&j| j != at) {
                    out.push(("adam→cpu", to_cpu(r, p, gw, j, end, n)));
                }
            }
            Update::None => {}
        }
    }
    out
}

/// The walk positions tried for a CPU update in a window of `end` steps
/// after g_w: the first, the middle and the last before f_w (a few, so that a
/// round stays short on paper-scale instances).
fn positions(end: usize) -> Vec<usize> {
    let mut v: Vec<usize> = [1, end / 2, end.saturating_sub(1)]
        .into_iter()
        .filter(|&j| j >= 1 && j < end)
        .collect();
    v.dedup();
    v
}

/// Parameter `p`'s Adam step on the CPU in the step at walk position `j`
/// after g_w; its GPU copy absent from there to the step before f_w (walk
/// position `end`), where the prefetch follows the update.
fn to_cpu(r: &Rounded, p: usize, gw: usize, j: usize, end: usize, n: usize) -> Rounded {
    let mut v = r.clone();
    let pr = &mut v.params[p];
    pr.update = Update::Cpu((gw + j) % n);
    pr.offload = None;
    for k in j..end {
        pr.resident[(gw + k) % n] = false;
    }
    pr.state_resident = vec![false; n];
    pr.state_offload = None;
    v
}

/// Parameter `p`'s Adam step back on the GPU at g_w: offloaded after it when
/// it is absent at some step; its states kept on the GPU, or offloaded after
/// the update and prefetched before g_w.
fn to_gpu(off: &Offmate, r: &Rounded, p: usize, gw: usize, keep_states: bool) -> Rounded {
    let n = 2 * off.l();
    let mut v = r.clone();
    let pr: &mut ParamRound = &mut v.params[p];
    pr.update = Update::Gpu;
    pr.offload = pr.resident.iter().any(|x| !x).then_some(gw);
    if off.optimizer.states > 0 {
        if keep_states {
            pr.state_resident = vec![true; n];
            pr.state_offload = None;
        } else {
            pr.state_resident = (0..n).map(|t| t == gw).collect();
            pr.state_offload = Some(gw);
        }
    }
    v
}

/// The whole-tensor plan a realised OFFMATE schedule follows, read from its
/// events: per block the option whose forward ran; per parameter where its
/// Adam step ran (`optG`, or `optC` in the step whose block op started last
/// at or before it), whether it and its states were on the GPU at each step's
/// block op, and in which step it and its states were offloaded. `None` when
/// the schedule is not shaped like one (a block op missing).
pub fn read_plan(off: &Offmate, inst: &Instance, s: &Schedule) -> Option<Rounded> {
    let n = 2 * off.l();
    let (t_ix, o_ix) = inst.name_maps();
    let started = |name: &str| -> Option<Ticks> {
        let id = *o_ix.get(name)?;
        s.events.iter().find_map(|e| match *e {
            Event::Compute { op, start, .. } if op == id => Some(start),
            _ => None,
        })
    };
    let option: Vec<usize> = (0..off.l())
        .map(|b| (0..off.blocks[b].options.len()).find(|&o| started(&names::f(b + 1, o)).is_some()))
        .collect::<Option<_>>()?;
    let at: Vec<Ticks> = (0..n)
        .map(|t| {
            let (b, fwd) = off.step_block(t);
            let o = option[b];
            started(&if fwd {
                names::f(b + 1, o)
            } else {
                names::b(b + 1, o)
            })
        })
        .collect::<Option<_>>()?;
    let step_of = |x: Ticks| at.iter().rposition(|&a| a <= x).unwrap_or(n - 1);
    let present = |name: &str| -> Vec<bool> {
        t_ix.get(name).map_or(vec![false; n], |&id| {
            at.iter().map(|&a| on_gpu(s, id, a)).collect()
        })
    };
    let offload_step = |name: &str| -> Option<usize> {
        let id = *t_ix.get(name)?;
        s.events.iter().find_map(|e| match *e {
            Event::Transfer {
                dir: Direction::Offload,
                tensor,
                start,
                ..
            } if tensor == id => Some(step_of(start)),
            _ => None,
        })
    };
    let params = off
        .params
        .iter()
        .map(|p| {
            let update = match (
                started(&names::opt_g(&p.name)),
                started(&names::opt_c(&p.name)),
            ) {
                (Some(_), _) => Update::Gpu,
                (None, Some(x)) => Update::Cpu(step_of(x)),
                (None, None) => Update::None,
            };
            let gpu = update == Update::Gpu && off.optimizer.states > 0;
            let m = names::m(&p.name);
            ParamRound {
                resident: present(&p.name),
                offload: (update == Update::Gpu)
                    .then(|| offload_step(&p.name))
                    .flatten(),
                update,
                state_resident: if gpu { present(&m) } else { vec![false; n] },
                state_offload: if gpu { offload_step(&m) } else { None },
            }
        })
        .collect();
    Some(Rounded { option, params })
}

/// Is `t` on the GPU at instant `a` of the period (after the completions and
/// deletes at `a`)? From S₀, the arrivals (prefetch ends) and departures
/// (deletes, offloads with delete) at or before `a`, the latest one wins.
fn on_gpu(s: &Schedule, t: TensorId, a: Ticks) -> bool {
    let mut last: Option<(Ticks, bool)> = None;
    for e in &s.events {
        let change = match *e {
            Event::Transfer {
                dir: Direction::Prefetch,
                tensor,
                end,
                ..
            } if tensor == t => Some((end, true)),
            Event::Transfer {
                dir: Direction::Offload,
                tensor,
                end,
                delete: true,
                ..
            } if tensor == t => Some((end, false)),
            Event::Delete { tensor, at } if tensor == t => Some((at, false)),
            _ => None,
        };
        if let Some((x, on)) = change {
            if x <= a && last.is_none_or(|(y, _)| x >= y) {
                last = Some((x, on));
            }
        }
    }
    match last {
        Some((_, on)) => on,
        None => s.initial.as_ref().is_some_and(|i| i.gpu.contains(&t)),
    }
}
