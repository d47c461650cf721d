//! The search's nodes and their context: a [`Node`] (an instant, the next op,
//! what runs, the transfers in flight, the shared [`State`] and the trail of
//! events so far), the [`Ctx`] of one search (the instance, the fixed order,
//! the reads by position, the boundary states of a cyclic search), the
//! completions at an instant (`Ctx::complete`: transfer ends, then the op end,
//! through the shared transitions), the state key that identifies equal nodes,
//! and the admissible estimate.
//!
//! Owns: [`Node`], [`Ctx`], [`Flight`], [`Trail`], [`Boundary`] (the data of a
//! boundary state S₀; `cyclic.rs` enumerates them), the "needed later" of R6.
//! Must not import: the driver, the expansion, the cyclic enumeration, the
//! other exact methods, heuristics.

use crate::model::{Direction, Instance, OpId, TensorId};
use crate::schedule::{CyclicState, Event};
use crate::semantics::{GpuCopy, InFlight, Lookahead, State};
use crate::units::Ticks;
use std::rc::Rc;

/// "Needed later" for rule R6: read by an op at a position not yet started,
/// or (cyclic) persistent, hence always needed (MODEL.md §3). Cyclic, a
/// per-iteration tensor whose producer has not started yet is not needed: its
/// next use is that production (the value left from the last period is dead).
pub(super) struct Future<'a> {
    pub(super) reads_at: &'a [Vec<usize>],
    pub(super) always: &'a [bool],
    pub(super) born: &'a [usize],
    pub(super) next: usize,
}

impl Lookahead for Future<'_> {
    fn needed_after(&self, t: TensorId, _at: Ticks) -> bool {
        needed(self.reads_at, self.always, self.born, t, self.next)
    }
}

fn needed(
    reads_at: &[Vec<usize>],
    always: &[bool],
    born: &[usize],
    t: TensorId,
    next: usize,
) -> bool {
    always[t.ix()] || next >= born[t.ix()] && reads_at[t.ix()].iter().any(|&p| p >= next)
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Flight {
    pub(super) dir: Direction,
    pub(super) tensor: TensorId,
    pub(super) end: i64,
    pub(super) flight: InFlight,
}

/// The schedule so far, shared between nodes.
pub(super) struct Trail {
    pub(super) event: Event,
    pub(super) prev: Option<Rc<Trail>>,
}

#[derive(Clone)]
pub(super) struct Node {
    /// The instant this node stands at, before that instant's completions.
    pub(super) time: i64,
    pub(super) next: usize,
    pub(super) running: Option<(usize, i64)>,
    /// The CPU stream: the next position of the CPU order, and the CPU op
    /// running (its position and end), as `next` and `running` for the GPU.
    pub(super) cpu_next: usize,
    pub(super) cpu_running: Option<(usize, i64)>,
    pub(super) flights: Vec<Option<Flight>>,
    pub(super) state: State,
    pub(super) trail: Option<Rc<Trail>>,
    /// An op started at `time - 1`: this instant is a decision point even if
    /// nothing completes (its inputs may be deleted from here on).
    pub(super) after_start: bool,
    /// Tensors whose offload completed at `time` (after [`Ctx::complete`]):
    /// cyclic, such an offload may carry `delete` so that the copy goes before
    /// the period's zero-duration ops at P (R8).
    pub(super) offloaded_now: Vec<TensorId>,
    /// Cyclic: the boundary state this path started from (an index into
    /// `Ctx::roots`); 0 for one-shot.
    pub(super) root: usize,
}

pub(super) struct Ctx<'a> {
    pub(super) inst: &'a Instance,
    /// The GPU ops in their fixed order.
    pub(super) order: Vec<OpId>,
    pub(super) dur: Vec<i64>,
    /// The CPU ops in their fixed order (cyclic only), their durations and
    /// the CPU compute left from position k on.
    pub(super) cpu_order: Vec<OpId>,
    pub(super) cpu_dur: Vec<i64>,
    pub(super) cpu_suffix: Vec<i64>,
    pub(super) reads_at: Vec<Vec<usize>>,
    pub(super) tau: Vec<i64>,
    pub(super) cap: i128,
    pub(super) channels: Vec<crate::model::Channel>,
    /// Remaining compute from position k on.
    pub(super) suffix: Vec<i64>,
    /// Cyclic mode.
    pub(super) cyclic: bool,
    /// Tensors always needed later (cyclic: the persistent ones and those a
    /// CPU op reads; one-shot: none).
    pub(super) always: Vec<bool>,
    /// The first position from which a read of the tensor counts as a need
    /// (cyclic: one past its producer's position, whose production comes
    /// first; 0 otherwise).
    pub(super) born: Vec<usize>,
    /// Cyclic: the boundary states searched from (empty for one-shot).
    pub(super) roots: Vec<Boundary>,
    /// The default release rule (MODEL.md R10): a copy in use by a running op
    /// or transfer is not released (proofs/SEARCH.md, limits 4–6).
    pub(super) after_end: bool,
}

pub(super) fn push(trail: &mut Option<Rc<Trail>>, event: Event) {
    *trail = Some(Rc::new(Trail {
        event,
        prev: trail.take(),
    }));
}

impl Ctx<'_> {
    pub(super) fn future(&self, next: usize) -> Future<'_> {
        Future {
            reads_at: &self.reads_at,
            always: &self.always,
            born: &self.born,
            next,
        }
    }

    pub(super) fn needed(&self, t: TensorId, next: usize) -> bool {
        needed(&self.reads_at, &self.always, &self.born, t, next)
    }

    /// Under the default rule, is the GPU copy of `t` in use at `n.time` (a pin
    /// of a running op or transfer strictly covers the instant)? A release
    /// there would break R10, so the search waits for the pin's end, which is a
    /// completion and hence a decision instant. Under the relaxation nothing
    /// is held.
    pub(super) fn held(&self, n: &Node, t: TensorId) -> bool {
        self.after_end && n.state.pin_covering(t, Ticks(n.time)).is_some()
    }

    pub(super) fn channel_ix(&self, dir: Direction) -> usize {
        let c = self.inst.machine.channel(dir);
        self.channels.iter().position(|x| *x == c).unwrap_or(0)
    }

    /// Cyclic: does the op at position `k` (running, or about to run) modify
    /// `t`? Such a tensor is neither deleted nor offloaded while the op runs
    /// (proofs/SEARCH.md, limit 10: deleting it loses the update, offloading it
    /// copies a value about to be replaced).
    pub(super) fn modified_by(&self, k: Option<usize>, t: TensorId) -> bool {
        self.cyclic && k.is_some_and(|k| self.inst.op(self.order[k]).modifies.contains(&t))
    }

    /// Does the CPU op at CPU position `k` (running, or about to run) modify
    /// `t`? Its GPU copy is then not offloaded while the op runs: the offload
    /// would carry the value the op replaces onto the CPU copy the op writes
    /// (proofs/SEARCH.md, "CPU ops").
    pub(super) fn cpu_modified_by(&self, k: Option<usize>, t: TensorId) -> bool {
        k.is_some_and(|k| self.inst.op(self.cpu_order[k]).modifies.contains(&t))
    }

    /// The completions at `n.time`: transfer ends, then the op end (§2.4).
    pub(super) fn complete(&self, n: &mut Node) -> bool {
        let now = Ticks(n.time);
        n.offloaded_now.clear();
        for ch in 0..n.flights.len() {
            if let Some(f) = n.flights[ch] {
                if f.end == n.time {
                    let b = n.state.transfer_end(
                        f.dir,
                        f.tensor,
                        f.flight,
                        false,
                        now,
                        &self.future(n.next),
                    );
                    if !b.is_empty() {
                        return false;
                    }
                    n.flights[ch] = None;
                    if f.dir == Direction::Offload {
                        n.offloaded_now.push(f.tensor);
                    }
                }
            }
        }
        // Op ends in the replay's order: the op whose event came first (the
        // earlier start; at one start, the GPU op, pushed first).
        let gpu_start = n.running.map(|(k, e)| (e - self.dur[k], 0));
        let cpu_start = n.cpu_running.map(|(k, e)| (e - self.cpu_dur[k], 1));
        let mut ends = [gpu_start, cpu_start];
        ends.sort();
        for (_, device) in ends.into_iter().flatten() {
            let (order, running) = if device == 0 {
                (&self.order, &mut n.running)
            } else {
                (&self.cpu_order, &mut n.cpu_running)
            };
            if let Some((k, end)) = *running {
                if end == n.time {
                    *running = None;
                    let b = n
                        .state
                        .op_end(self.inst, order[k], now, &self.future(n.next));
                    if !b.is_empty() {
                        return false;
                    }
                }
            }
        }
        true
    }

    pub(super) fn key(&self, n: &Node) -> Vec<i64> {
        let mut k = Vec::with_capacity(9 + 5 * n.state.tensors.len());
        k.push(n.root as i64);
        k.push(n.next as i64);
        k.push(n.after_start as i64);
        k.push(n.running.map_or(-1, |(_, e)| e - n.time));
        k.push(n.cpu_next as i64);
        k.push(n.cpu_running.map_or(-1, |(_, e)| e - n.time));
        for f in &n.flights {
            match f {
                Some(f) => {
                    k.extend([f.tensor.0 as i64, f.dir as i64, f.end - n.time]);
                    k.push(f.flight.version.map_or(-1, |v| v as i64));
                }
                None => k.push(-2),
            }
        }
        for ts in &n.state.tensors {
            match ts.gpu {
                GpuCopy::Absent => k.push(-1),
                GpuCopy::Pending { ready, version } => {
                    k.extend([-2, ready.0 - n.time, version.map_or(-1, |v| v as i64)])
                }
                GpuCopy::Present(v) => k.push(v as i64),
            }
            k.push(ts.cpu.map_or(-1, |v| v as i64));
            k.extend([ts.cpu_incoming as i64, ts.latest as i64, ts.exists as i64]);
        }
        k
    }

    /// A lower bound on the makespan (period) reachable from `n` (admissible:
    /// the remaining compute of each device runs on its stream; a started
    /// transfer ends before
    /// the makespan, or, cyclic, crosses the period end with exactly the ticks
    /// left that the root's boundary state gives its channel).
    pub(super) fn estimate(&self, n: &Node) -> i64 {
        let run = n.running.map_or(0, |(_, e)| e - n.time);
        let mut f = n.time + run + self.suffix[n.next];
        let cpu_run = n.cpu_running.map_or(0, |(_, e)| e - n.time);
        f = f.max(n.time + cpu_run + self.cpu_suffix[n.cpu_next]);
        for (ch, fl) in n.flights.iter().enumerate() {
            if let Some(fl) = fl {
                let left = self.roots.get(n.root).map_or(0, |b| b.left[ch]);
                f = f.max(fl.end - left);
            }
        }
        f
    }
}

/// One boundary state S₀ with its crossing transfers.
#[derive(Clone, Debug)]
pub(super) struct Boundary {
    /// Tensors present on the GPU at time 0 (in their current version).
    pub gpu: Vec<TensorId>,
    /// Tensors whose CPU copy is current at time 0.
    pub cpu: Vec<TensorId>,
    /// Transfers in flight at time 0: direction, tensor, ticks left (≥ 1).
    pub flights: Vec<(Direction, TensorId, i64)>,
    /// Ticks left at time 0 by the crossing transfer of each channel (0: none).
    pub left: Vec<i64>,
}

impl Boundary {
    /// The schedule's `initial` field.
    pub fn state(&self) -> CyclicState {
        CyclicState {
            gpu: self.gpu.clone(),
            cpu: self.cpu.clone(),
        }
    }
}
