//! Algorithm 2 of the weight paper (§5, scheduling phase) as an event-driven
//! simulation of one period, from B_L to the end of F_L.
//!
//! The period starts with B_L, as in Algorithm 2, in a state fixed by the plan
//! (which weights are on the GPU, which have a current CPU copy); every event of
//! the frame ends by the period P (a barrier), and the state at P equals the state
//! at 0, so the frame is a cyclic schedule with period P. The "cutting point" of
//! the paper is the set of (k, 1) weights whose prefetch for B_k is done at the
//! end of the previous period (the tail of this frame) instead of at its start.
//!
//! Rules of the simulation (the paper's ordering rules, made exact):
//! - ops run in the fixed order, each as soon as the previous one ended, its
//!   weight is present and memory holds it (`M_o` of eq. (1) plus the other
//!   weights held);
//! - prefetches run in the order the data is needed, each as soon as the link is
//!   free, the weight has left the GPU, and memory holds it now *and* at every op
//!   still to start before its consumer (the plan's memory of that op plus the
//!   weights already prefetched early for later ops): a prefetch never blocks an op
//!   that must run before its use;
//! - offloads run FIFO as soon as their source op ended (B_k for (k, 0); F_k for
//!   (k, 1) when no current CPU copy exists); the GPU copy is released at the end of
//!   the offload (memory is held until then, as in the paper);
//! - with the discount, a (k, 1) weight whose CPU copy is current is deleted right
//!   after F_k; Algorithm 2's waiting list (best-effort uploads of (k, 1)-only
//!   weights during ops, finishing before the running op ends) provides such
//!   copies.
//!
//! Zero-length events: an event of zero ticks is placed so that the checker's
//! same-instant order (releases, then op starts, then transfer starts) sees it in
//! the intended order; when that is impossible at one instant it waits one tick.
//!
//! Memory here is the eq. (1) accounting of the family (`WeightChain::mf/mb`), an
//! estimate used for decisions only: every schedule goes through the checker.
//!
//! Owns: Algorithm 2, the period simulation.
//! Must not import: exact solvers, traces, reports, the CLI.

use super::selection::{idx_b, idx_f, layer, step, Selection, Step};
use crate::family::WeightChain;
use crate::model::{Direction, Instance};
use crate::schedule::{CyclicState, Event, Schedule};
use crate::semantics::transfer_ticks;
use crate::units::Ticks;
use std::collections::VecDeque;

/// How transfers are scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// One offload after B_k serves the prefetches before F_k and B_k.
    pub discount: bool,
    /// Algorithm 2's waiting list of best-effort uploads.
    pub uploads: bool,
    /// L2L: a weight is fetched only once the op before its consumer has ended.
    pub just_in_time: bool,
}

/// A selection, a cut and a policy.
#[derive(Clone, Debug)]
pub struct Plan<'a> {
    pub sel: &'a Selection,
    /// Per layer: a (k, 1) weight prefetched at the end of the previous period.
    pub cut: Vec<bool>,
    pub policy: Policy,
}

#[derive(Clone, Copy, Debug)]
struct Flight {
    k: usize,
    /// End of the transfer in the schedule.
    end: i64,
    /// When the simulation lets its effect be used (end, or end + 1 for a
    /// zero-length transfer, which the checker completes after the op starts).
    effective: i64,
    delete: bool,
    upload: bool,
}

/// The simulation's state. Weights are indexed by layer `k - 1`, ops by step
/// (`selection::step`).
struct Sim<'a> {
    chain: &'a WeightChain,
    plan: &'a Plan<'a>,
    l: usize,
    /// Number of ops, 2L.
    n: usize,
    cap: i128,
    w: Vec<i128>,
    /// Transfer time of each weight.
    dur: Vec<i64>,
    /// Duration of each op.
    op_dur: Vec<i64>,
    mem: &'a [u64],
    plan_mem: Vec<i128>,
    extra: Vec<i128>,
    held: Vec<bool>,
    present: Vec<bool>,
    /// An offload that deletes it is in flight: present, but gone before long.
    releasing: Vec<bool>,
    cpu_cur: Vec<bool>,
    held_total: i128,
    events: Vec<Event>,
    deferred: Vec<(usize, i64)>,
    off_queue: VecDeque<(usize, bool)>,
    wl: Vec<usize>,
    delete_after_upload: Option<usize>,
    off_flight: Option<Flight>,
    horizon: i64,
    max_start: i64,
    /// The next op to start, and the op running (with its end).
    next: usize,
    running: Option<(usize, i64)>,
    f_started: Vec<bool>,
    /// A zero-length B_1 must end strictly before F_1 starts: the period is turned
    /// to start at F_1, and the checker orders zero-length ops first at an instant.
    wake: Option<i64>,
    last_zero_start: Option<(usize, i64)>,
    /// F_1's start and the state then: the period's S₀.
    boundary: Option<(i64, CyclicState)>,
    /// Prefetches in the order the data is needed: (layer, consumer step; n = end of frame).
    pre_queue: Vec<(usize, usize)>,
    pre_ptr: usize,
    pre_flight: Option<Flight>,
}

/// The plan's memory of every op: `M_o` plus the other weights the plan keeps on
/// the GPU during it; `None` if one exceeds the GPU memory.
fn plan_memory(chain: &WeightChain, mem: &[u64], plan: &Plan, w: &[i128]) -> Option<Vec<i128>> {
    let l = chain.l();
    let sel = plan.sel;
    let cap = chain.gpu_memory as i128;
    // The plan's residency: is w_j (0-based) on the GPU during step idx?
    let on = |j: usize, idx: usize| -> bool {
        let k = j + 1;
        if layer(l, idx) == k {
            return true;
        }
        if sel.off0[j] && idx > idx_b(l, k) && idx < idx_f(l, k) {
            return false;
        }
        if sel.off1[j] {
            let tail = idx > idx_f(l, k);
            let head = idx < idx_b(l, k);
            if tail || (head && !plan.cut[j]) {
                return false;
            }
        }
        true
    };
    let mut plan_mem = vec![0i128; 2 * l];
    for (idx, pm) in plan_mem.iter_mut().enumerate() {
        let own = layer(l, idx) - 1;
        *pm = mem[idx] as i128
            + (0..l)
                .filter(|&j| j != own && on(j, idx))
                .map(|j| w[j])
                .sum::<i128>();
        if *pm > cap {
            return None;
        }
    }
    Some(plan_mem)
}

/// Prefetches in the order the data is needed: the (k, 1) weights for B_L … B_1,
/// the (k, 0) weights for F_1 … F_L, then the cut's weights for the next period.
fn prefetch_order(l: usize, plan: &Plan) -> Vec<(usize, usize)> {
    let sel = plan.sel;
    let mut pre_queue: Vec<(usize, usize)> = Vec::new();
    for k in (1..=l).rev() {
        if sel.off1[k - 1] && !plan.cut[k - 1] {
            pre_queue.push((k - 1, idx_b(l, k)));
        }
    }
    for k in 1..=l {
        if sel.off0[k - 1] {
            pre_queue.push((k - 1, idx_f(l, k)));
        }
    }
    for k in (1..=l).rev() {
        if plan.cut[k - 1] {
            pre_queue.push((k - 1, 2 * l));
        }
    }
    pre_queue
}

impl<'a> Sim<'a> {
    /// The state at the start of the frame (B_L at 0); `None` if the plan's
    /// memory exceeds the GPU's.
    fn new(
        chain: &'a WeightChain,
        inst: &Instance,
        mem: &'a [u64],
        plan: &'a Plan<'a>,
    ) -> Option<Self> {
        let l = chain.l();
        let n = 2 * l;
        let sel = plan.sel;
        let w: Vec<i128> = chain.layers.iter().map(|ly| ly.w as i128).collect();
        let dur = (1..=l)
            .map(|k| transfer_ticks(inst, chain.w_id(k)).0)
            .collect();
        let op_dur = (0..n)
            .map(|idx| match step(l, idx) {
                Step::F(i) => chain.layers[i - 1].u_f,
                Step::B(i) => chain.layers[i - 1].u_b,
            })
            .collect();
        let plan_mem = plan_memory(chain, mem, plan, &w)?;
        let held: Vec<bool> = (0..l).map(|j| !sel.off1[j] || plan.cut[j]).collect();
        let cpu_cur = (0..l).map(|j| sel.off0[j] || sel.off1[j]).collect();
        let held_total = (0..l).filter(|&j| held[j]).map(|j| w[j]).sum();
        Some(Sim {
            chain,
            plan,
            l,
            n,
            cap: chain.gpu_memory as i128,
            w,
            dur,
            op_dur,
            mem,
            plan_mem,
            extra: vec![0; n],
            present: held.clone(),
            releasing: vec![false; l],
            held,
            cpu_cur,
            held_total,
            events: Vec::with_capacity(4 * n),
            deferred: Vec::new(),
            off_queue: VecDeque::new(),
            wl: Vec::new(),
            delete_after_upload: None,
            off_flight: None,
            horizon: 0,
            max_start: 0,
            next: 0,
            running: None,
            f_started: vec![false; l],
            wake: None,
            last_zero_start: None,
            boundary: None,
            pre_queue: prefetch_order(l, plan),
            pre_ptr: 0,
            pre_flight: None,
        })
    }

    fn release(&mut self, k: usize) {
        if self.held[k] {
            self.held[k] = false;
            self.held_total -= self.w[k];
        }
        self.present[k] = false;
        self.releasing[k] = false;
    }
    /// Delete w_k at `t`; in the allocation phase of `t` the checker would run
    /// the delete before the op that triggered it, so it moves to `t + 1`.
    fn delete(&mut self, k: usize, t: i64, alloc_phase: bool) {
        if alloc_phase {
            self.releasing[k] = true;
            self.deferred.push((k, t + 1));
        } else {
            self.events.push(Event::Delete {
                tensor: self.chain.w_id(k + 1),
                at: Ticks(t),
            });
            self.max_start = self.max_start.max(t);
            self.release(k);
        }
    }
    fn op_end(&mut self, idx: usize, t: i64, alloc_phase: bool) {
        let sel = self.plan.sel;
        let policy = self.plan.policy;
        match step(self.l, idx) {
            Step::B(i) => {
                let k = i - 1;
                self.cpu_cur[k] = false;
                if sel.off0[k] {
                    self.releasing[k] = true;
                    self.off_queue.push_back((k, true));
                } else if sel.off1[k] && policy.uploads {
                    self.wl.push(k);
                }
            }
            Step::F(i) => {
                let k = i - 1;
                if sel.off1[k] {
                    if policy.discount && self.cpu_cur[k] {
                        self.delete(k, t, alloc_phase);
                    } else if policy.discount
                        && self.off_flight.is_some_and(|f| f.upload && f.k == k)
                    {
                        self.delete_after_upload = Some(k);
                        self.releasing[k] = true;
                    } else {
                        self.releasing[k] = true;
                        self.off_queue.push_back((k, true));
                    }
                }
            }
        }
    }

    /// Releases at `t`: transfer ends, the op's end, due deletes.
    fn releases(&mut self, t: i64) {
        if let Some(f) = self.pre_flight {
            if f.effective <= t {
                self.present[f.k] = true;
                self.pre_flight = None;
            }
        }
        if let Some(f) = self.off_flight {
            if f.effective <= t {
                self.cpu_cur[f.k] = true;
                if f.delete {
                    self.release(f.k);
                }
                self.off_flight = None;
                if f.upload && self.delete_after_upload == Some(f.k) {
                    self.delete_after_upload = None;
                    // A zero-length upload ended in an allocation phase.
                    let alloc = f.effective != f.end;
                    self.delete(f.k, t, alloc);
                }
            }
        }
        if let Some((idx, end)) = self.running {
            if end <= t {
                self.running = None;
                self.op_end(idx, t, false);
            }
        }
        let due: Vec<(usize, i64)> = self.deferred.iter().copied().filter(|d| d.1 <= t).collect();
        self.deferred.retain(|d| d.1 > t);
        for (k, at) in due {
            self.delete(k, at, false);
        }
        if self.wake.is_some_and(|x| x <= t) {
            self.wake = None;
        }
    }

    /// The state at F_1's start, after this instant's releases: the period's S₀.
    fn take_boundary(&mut self, t: i64) {
        let (l, chain) = (self.l, self.chain);
        if self.running.is_none()
            && self.next == idx_f(l, 1)
            && self.boundary.as_ref().is_none_or(|b| b.0 < t)
        {
            let state = CyclicState {
                gpu: std::iter::once(chain.a_id(0))
                    .chain(
                        (0..l)
                            .filter(|&j| self.present[j])
                            .map(|j| chain.w_id(j + 1)),
                    )
                    .collect(),
                cpu: (0..l)
                    .filter(|&j| self.cpu_cur[j])
                    .map(|j| chain.w_id(j + 1))
                    .collect(),
            };
            self.boundary = Some((t, state));
        }
    }

    /// Op starts at `t`, in the fixed order, while each one's weight is present
    /// and memory holds it.
    fn start_ops(&mut self, t: i64) {
        while self.running.is_none() && self.next < self.n {
            let idx = self.next;
            let k = layer(self.l, idx) - 1;
            if idx == idx_f(self.l, 1) && self.last_zero_start == Some((idx - 1, t)) {
                self.wake = Some(t + 1);
                break;
            }
            if !self.present[k]
                || self.releasing[k]
                || self.mem[idx] as i128 + self.held_total - self.w[k] > self.cap
            {
                break;
            }
            self.start_op(idx, t);
        }
    }

    fn start_op(&mut self, idx: usize, t: i64) {
        let end = t + self.op_dur[idx];
        let op = match step(self.l, idx) {
            Step::F(i) => self.chain.f_id(i),
            Step::B(i) => self.chain.b_id(i),
        };
        self.events.push(Event::Compute {
            op,
            start: Ticks(t),
            end: Ticks(end),
        });
        self.max_start = self.max_start.max(t);
        self.horizon = self.horizon.max(end);
        if let Step::F(i) = step(self.l, idx) {
            self.f_started[i - 1] = true;
            self.wl.retain(|&x| x != i - 1);
        }
        self.next += 1;
        if self.op_dur[idx] == 0 {
            self.last_zero_start = Some((idx, t));
            self.op_end(idx, t, true);
        } else {
            self.running = Some((idx, end));
        }
    }

    /// Put a transfer of w_k starting at `t` in the schedule; its end.
    fn push_transfer(&mut self, dir: Direction, k: usize, t: i64, delete: bool) -> i64 {
        let end = t + self.dur[k];
        self.events.push(Event::Transfer {
            dir,
            tensor: self.chain.w_id(k + 1),
            start: Ticks(t),
            end: Ticks(end),
            delete,
        });
        self.max_start = self.max_start.max(t);
        self.horizon = self.horizon.max(end);
        end
    }

    /// The link's offload side at `t`: the FIFO of offloads, else (waiting list)
    /// the smallest weight whose upload ends before the running op.
    fn start_offload(&mut self, t: i64) {
        if self.off_flight.is_some() {
            return;
        }
        if let Some((k, delete)) = self.off_queue.pop_front() {
            let end = self.push_transfer(Direction::Offload, k, t, delete);
            self.off_flight = Some(Flight {
                k,
                end,
                effective: end.max(t + 1),
                delete,
                upload: false,
            });
        } else if let (true, Some((_, op_end))) = (self.plan.policy.uploads, self.running) {
            let pick = self
                .wl
                .iter()
                .copied()
                .filter(|&k| {
                    !self.cpu_cur[k]
                        && self.present[k]
                        && !self.f_started[k]
                        && self.dur[k] > 0
                        && t + self.dur[k] <= op_end
                })
                .min_by_key(|&k| (self.w[k], k));
            if let Some(k) = pick {
                self.wl.retain(|&x| x != k);
                let end = self.push_transfer(Direction::Offload, k, t, false);
                self.off_flight = Some(Flight {
                    k,
                    end,
                    effective: end,
                    delete: false,
                    upload: true,
                });
            }
        }
    }

    /// May the prefetch of w_k for op `consumer` start now? Memory must hold it
    /// now and at every op still to start before its consumer.
    fn prefetch_fits(&self, k: usize, consumer: usize) -> bool {
        let n = self.n;
        let mut ok = !self.held[k] && self.cpu_cur[k];
        if ok && self.plan.policy.just_in_time {
            ok = self.running.is_none() && self.next == consumer.min(n);
        }
        if !ok {
            return false;
        }
        // Memory now: the running op (or, idle, the next one) plus what is held.
        let idx = match self.running {
            Some((idx, _)) => idx,
            None if self.next < n => self.next,
            None => 0,
        };
        let base = self.mem[idx] as i128 - self.w[layer(self.l, idx) - 1];
        base + self.held_total + self.w[k] <= self.cap
            && (self.next..consumer.min(n))
                .all(|o| self.plan_mem[o] + self.extra[o] + self.w[k] <= self.cap)
    }

    /// The link's prefetch side at `t`: the next prefetch in order, if it fits.
    fn start_prefetch(&mut self, t: i64) {
        if self.pre_flight.is_some() || self.pre_ptr >= self.pre_queue.len() {
            return;
        }
        let (k, consumer) = self.pre_queue[self.pre_ptr];
        if !self.prefetch_fits(k, consumer) {
            return;
        }
        for o in self.next..consumer.min(self.n) {
            self.extra[o] += self.w[k];
        }
        let end = self.push_transfer(Direction::Prefetch, k, t, false);
        self.held[k] = true;
        self.held_total += self.w[k];
        self.pre_flight = Some(Flight {
            k,
            end,
            effective: end.max(t + 1),
            delete: false,
            upload: false,
        });
        self.pre_ptr += 1;
    }

    fn done(&self) -> bool {
        self.next == self.n
            && self.running.is_none()
            && self.pre_ptr == self.pre_queue.len()
            && self.pre_flight.is_none()
            && self.off_flight.is_none()
            && self.off_queue.is_empty()
            && self.deferred.is_empty()
            && self.delete_after_upload.is_none()
    }

    /// The next instant something happens; `None` if nothing will any more.
    fn next_instant(&self, t: i64) -> Option<i64> {
        let candidates = [
            self.running.map(|r| r.1),
            self.pre_flight.map(|f| f.effective),
            self.off_flight.map(|f| f.effective),
            self.deferred.iter().map(|d| d.1).min(),
            self.wake,
        ];
        candidates
            .iter()
            .flatten()
            .copied()
            .filter(|&x| x > t)
            .min()
    }
}

/// Simulate one period; `None` if the plan gets stuck (memory too small for it).
pub fn simulate(
    chain: &WeightChain,
    inst: &Instance,
    mem: &[u64],
    plan: &Plan,
) -> Option<Schedule> {
    let mut s = Sim::new(chain, inst, mem, plan)?;
    let mut t: i64 = 0;
    loop {
        // Releases at t, then allocations: op starts first, then transfer starts.
        s.releases(t);
        s.take_boundary(t);
        s.start_ops(t);
        s.start_offload(t);
        s.start_prefetch(t);
        if s.done() {
            break;
        }
        // Nothing will happen any more: the plan is stuck (memory too small for it).
        t = s.next_instant(t)?;
    }
    let period = s.horizon.max(s.max_start + 1).max(1);
    let (shift, initial) = s
        .boundary
        .expect("F_1 started, so its boundary state was taken");
    Some(rotate(chain, s.events, shift, period, initial))
}

/// Turn the frame (B_L at 0) into a period that starts with F_1 at 0, as the
/// checker's fixed order F_1 … F_L, B_L … B_1 requires.
fn rotate(
    chain: &WeightChain,
    events: Vec<Event>,
    shift: i64,
    period: i64,
    initial: CyclicState,
) -> Schedule {
    let l = chain.l();
    let wrap = |x: i64| (x - shift).rem_euclid(period);
    // Position of an op in the rotated order, to break ties between zero-length ops.
    let pos = |op: crate::model::OpId| -> usize {
        let o = op.0 as usize;
        if o < l {
            o // F_{o+1}
        } else {
            l + (2 * l - 1 - o) // B_{o-l+1}: B_L first
        }
    };
    let mut out: Vec<(i64, usize, usize, Event)> = events
        .into_iter()
        .enumerate()
        .map(|(e, ev)| {
            let start = wrap(ev.start().0);
            let moved = ev.shifted(Ticks(start - ev.start().0));
            let key = match ev {
                Event::Compute { op, .. } => pos(op),
                _ => 2 * l + e,
            };
            (
                start,
                if matches!(ev, Event::Compute { .. }) {
                    0
                } else {
                    1
                },
                key,
                moved,
            )
        })
        .collect();
    out.sort_by_key(|x| (x.0, x.1, x.2));
    Schedule::cyclic(
        Ticks(period),
        initial,
        out.into_iter().map(|x| x.3).collect(),
    )
}
