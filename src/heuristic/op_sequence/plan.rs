//! Action lists at two points per function (FAMILIES.md §4.5) and the realiser
//! that turns them into timed events.
//!
//! Owns: [`Action`], [`ActionPlan`], [`realise`] and a memory sweep
//! ([`peak_memory`]) the threshold baseline uses to discard candidates.
//! Must not import: the checker (the caller checks every realised schedule).
//!
//! Realiser policy (default issue point):
//! - function f starts at the latest of: the end of f−1, the end of every
//!   offload WAITed in begin(f), and the end of the last prefetch of each
//!   variable it needs;
//! - SWAP_IN(v) in begin(f) is a prefetch on h2d, FIFO, issued once f−1 has
//!   ended, every earlier WAIT of the same list has finished, and the last
//!   offload of v (if any) has ended; it lasts ⌈b/β⌉ ticks (at least 1);
//! - SWAP_OUT(v) in end(f) is an offload with `delete: true` on d2h, FIFO,
//!   from the end of f;
//! - on a half-duplex link both directions are one channel: every transfer,
//!   in the order the plan issues it, starts once the previous one (either
//!   direction) has ended, so no two transfers overlap (R4);
//! - DROP(v) in end(f) is a delete at the end of f;
//! - the period is the last end of any event (end-of-iteration wait for all:
//!   no transfer crosses the boundary); a drop that falls on that instant
//!   moves to instant 0 of the next iteration, the variable being on the GPU
//!   at the boundary (events start in [0, P), R8).

use crate::family::op_sequence::Uses;
use crate::model::{Direction, Duplex, Instance, OpId, TensorId};
use crate::schedule::{CyclicState, Event, Schedule};
use crate::semantics::transfer_ticks;
use crate::units::Ticks;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Host waits for the last offload of the variable.
    Wait(usize),
    SwapIn(usize),
    SwapOut(usize),
    Drop(usize),
}

/// What a heuristic decided, before times.
#[derive(Clone, Debug, Default)]
pub struct ActionPlan {
    pub begin: Vec<Vec<Action>>,
    /// Entries set to `None` were cancelled (swap-out cancel).
    pub end: Vec<Vec<Option<Action>>>,
    /// Variables on the GPU at time 0 (and at the period's end).
    pub gpu0: Vec<usize>,
    /// Variables whose CPU copy is current at time 0 (and at the end).
    pub cpu0: Vec<usize>,
}

impl ActionPlan {
    pub fn new(n: usize) -> ActionPlan {
        ActionPlan {
            begin: vec![Vec::new(); n],
            end: vec![Vec::new(); n],
            gpu0: vec![],
            cpu0: vec![],
        }
    }
    /// Transfers (swap-ins, live swap-outs) in the plan.
    pub fn transfers(&self) -> (usize, usize) {
        let ins = self
            .begin
            .iter()
            .flatten()
            .filter(|a| matches!(a, Action::SwapIn(_)))
            .count();
        let outs = self
            .end
            .iter()
            .flatten()
            .filter(|a| matches!(a, Some(Action::SwapOut(_))))
            .count();
        (ins, outs)
    }
}

fn dt(inst: &Instance, v: usize) -> i64 {
    transfer_ticks(inst, TensorId(v as u32)).0.max(1)
}

/// One transfer of variable `v` on its direction's link: it starts once
/// `after` has passed and the link (`link`, its busy-until instant) is free,
/// occupies the link until its end, and is pushed to `events`. Returns its end.
fn transfer(
    inst: &Instance,
    events: &mut Vec<Event>,
    link: &mut i64,
    dir: Direction,
    v: usize,
    after: i64,
) -> i64 {
    let s = after.max(*link);
    let e = s + dt(inst, v);
    *link = e;
    events.push(Event::Transfer {
        dir,
        tensor: TensorId(v as u32),
        start: Ticks(s),
        end: Ticks(e),
        // A swap-out releases the GPU copy at the offload's end.
        delete: dir == Direction::Offload,
    });
    e
}

/// Timed events for a plan (policy in the module docs).
pub fn realise(inst: &Instance, u: &Uses, plan: &ActionPlan) -> Schedule {
    let n = u.n();
    let nv = u.bytes.len();
    let mut events = Vec::new();
    let mut off_end = vec![0i64; nv];
    let mut ready = vec![0i64; nv];
    let (mut h2d, mut d2h, mut prev_end, mut last) = (0i64, 0i64, 0i64, 0i64);
    // Half duplex: one channel, so both directions share `h2d`'s busy-until.
    let half = inst.machine.duplex == Duplex::HalfDuplex;
    for f in 0..n {
        let mut gate = prev_end;
        let mut op_gate = prev_end;
        for a in &plan.begin[f] {
            match *a {
                Action::Wait(v) => {
                    gate = gate.max(off_end[v]);
                    op_gate = op_gate.max(off_end[v]);
                }
                Action::SwapIn(v) => {
                    let after = gate.max(off_end[v]);
                    let e = transfer(inst, &mut events, &mut h2d, Direction::Prefetch, v, after);
                    ready[v] = e;
                    last = last.max(e);
                }
                _ => {}
            }
        }
        let start = u.uses[f]
            .iter()
            .filter(|(_, a)| a.needs_data())
            .map(|(v, _)| ready[*v])
            .fold(op_gate, i64::max);
        let end = start + u.durations[f];
        events.push(Event::Compute {
            op: OpId(f as u32),
            start: Ticks(start),
            end: Ticks(end),
        });
        prev_end = end;
        last = last.max(end);
        for a in plan.end[f].iter().flatten() {
            match *a {
                Action::SwapOut(v) => {
                    let link = if half { &mut h2d } else { &mut d2h };
                    let e = transfer(inst, &mut events, link, Direction::Offload, v, end);
                    off_end[v] = e;
                    last = last.max(e);
                }
                Action::Drop(v) => events.push(Event::Delete {
                    tensor: TensorId(v as u32),
                    at: Ticks(end),
                }),
                _ => {}
            }
        }
    }
    let gpu0 = wrap_final_drops(&mut events, &plan.gpu0, last);
    let ids = |v: &[usize]| {
        let mut t: Vec<TensorId> = v.iter().map(|&x| TensorId(x as u32)).collect();
        t.sort();
        t.dedup();
        t
    };
    Schedule::cyclic(
        Ticks(last.max(1)),
        CyclicState {
            gpu: ids(&gpu0),
            cpu: ids(&plan.cpu0),
        },
        events,
    )
}

/// Events start in [0, P) (R8), so a drop at the period's last instant P
/// (typically the gradients the optimiser step reads last) moves to instant 0
/// of the next iteration: the variable is on the GPU at the boundary (it was
/// there until P) and is deleted at 0, before any allocation at 0. The
/// period stays the last end, where a tick more was needed before. Returns
/// the GPU set at time 0 with those variables added.
fn wrap_final_drops(events: &mut [Event], gpu0: &[usize], last: i64) -> Vec<usize> {
    let mut gpu = gpu0.to_vec();
    if last == 0 {
        return gpu;
    }
    for e in events.iter_mut() {
        if let Event::Delete { tensor, at } = e {
            if at.0 == last {
                *at = Ticks(0);
                gpu.push(tensor.0 as usize);
            }
        }
    }
    gpu
}

/// Peak GPU memory of a realised plan (releases before allocations at an
/// instant; allocations at starts, offloads release at their end, deletes at
/// their instant). Used to discard candidates; the checker has the last word.
pub fn peak_memory(u: &Uses, plan: &ActionPlan, s: &Schedule) -> u64 {
    let mut pts: Vec<(i64, i128)> = Vec::new();
    let mut evs: Vec<&Event> = s.events.iter().collect();
    evs.sort_by_key(|e| (e.start(), e.end()));
    for e in evs {
        match *e {
            Event::Compute { op, start, .. } => {
                for (v, a) in &u.uses[op.ix()] {
                    if !a.needs_data() {
                        pts.push((start.0, u.bytes[*v] as i128));
                    }
                }
            }
            Event::Transfer {
                dir,
                tensor,
                start,
                end,
                ..
            } => {
                let b = u.bytes[tensor.ix()] as i128;
                match dir {
                    Direction::Prefetch => pts.push((start.0, b)),
                    Direction::Offload => pts.push((end.0, -b)),
                }
            }
            Event::Delete { tensor, at } => pts.push((at.0, -(u.bytes[tensor.ix()] as i128))),
        }
    }
    pts.sort();
    // The schedule's own state at time 0 (the plan's, with the drops that
    // `wrap_final_drops` moved to instant 0).
    let mut cur: i128 = match &s.initial {
        Some(init) => init.gpu.iter().map(|v| u.bytes[v.ix()] as i128).sum(),
        None => plan.gpu0.iter().map(|&v| u.bytes[v] as i128).sum(),
    };
    let mut peak = cur;
    for (_, d) in pts {
        cur += d;
        peak = peak.max(cur);
    }
    peak.max(0) as u64
}
