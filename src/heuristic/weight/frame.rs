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

struct Sim<'a> {
    l: usize,
    cap: i128,
    w: Vec<i128>,
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
}

impl Sim<'_> {
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
    fn delete(&mut self, chain: &WeightChain, k: usize, t: i64, alloc_phase: bool) {
        if alloc_phase {
            self.releasing[k] = true;
            self.deferred.push((k, t + 1));
        } else {
            self.events.push(Event::Delete {
                tensor: chain.w_id(k + 1),
                at: Ticks(t),
            });
            self.max_start = self.max_start.max(t);
            self.release(k);
        }
    }
    fn op_end(&mut self, chain: &WeightChain, plan: &Plan, idx: usize, t: i64, alloc_phase: bool) {
        let sel = plan.sel;
        match step(self.l, idx) {
            Step::B(i) => {
                let k = i - 1;
                self.cpu_cur[k] = false;
                if sel.off0[k] {
                    self.releasing[k] = true;
                    self.off_queue.push_back((k, true));
                } else if sel.off1[k] && plan.policy.uploads {
                    self.wl.push(k);
                }
            }
            Step::F(i) => {
                let k = i - 1;
                if sel.off1[k] {
                    if plan.policy.discount && self.cpu_cur[k] {
                        self.delete(chain, k, t, alloc_phase);
                    } else if plan.policy.discount
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
}

/// Simulate one period; `None` if the plan gets stuck (memory too small for it).
pub fn simulate(
    chain: &WeightChain,
    inst: &Instance,
    mem: &[u64],
    plan: &Plan,
) -> Option<Schedule> {
    let l = chain.l();
    let n = 2 * l;
    let sel = plan.sel;
    let w: Vec<i128> = chain.layers.iter().map(|ly| ly.w as i128).collect();
    let dur: Vec<i64> = (1..=l)
        .map(|k| transfer_ticks(inst, chain.w_id(k)).0)
        .collect();
    let op_dur: Vec<i64> = (0..n)
        .map(|idx| match step(l, idx) {
            Step::F(i) => chain.layers[i - 1].u_f,
            Step::B(i) => chain.layers[i - 1].u_b,
        })
        .collect();
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
    let mut plan_mem = vec![0i128; n];
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

    let held: Vec<bool> = (0..l).map(|j| !sel.off1[j] || plan.cut[j]).collect();
    let cpu_cur: Vec<bool> = (0..l).map(|j| sel.off0[j] || sel.off1[j]).collect();
    let initial = CyclicState {
        gpu: (0..=l)
            .map(|i| chain.a_id(i))
            .chain((0..l).filter(|&j| held[j]).map(|j| chain.w_id(j + 1)))
            .collect(),
        cpu: (0..l)
            .filter(|&j| cpu_cur[j])
            .map(|j| chain.w_id(j + 1))
            .collect(),
    };
    let held_total = (0..l).filter(|&j| held[j]).map(|j| w[j]).sum();

    // Prefetches in the order the data is needed: (layer, consumer step; n = end of frame).
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
            pre_queue.push((k - 1, n));
        }
    }

    let mut s = Sim {
        l,
        cap,
        w: w.clone(),
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
    };

    let mut t: i64 = 0;
    let mut next = 0usize;
    let mut running: Option<(usize, i64)> = None;
    let mut pre_ptr = 0usize;
    let mut pre_flight: Option<Flight> = None;
    let mut f_started = vec![false; l];
    // A zero-length B_1 must end strictly before F_1 starts: the period is turned
    // to start at F_1, and the checker orders zero-length ops first at an instant.
    let mut wake: Option<i64> = None;
    let mut last_zero_start: Option<(usize, i64)> = None;
    let mut boundary: Option<(i64, CyclicState)> = None;

    loop {
        // ---- releases at t: transfer ends, op end, deletes -------------------
        if let Some(f) = pre_flight {
            if f.effective <= t {
                s.present[f.k] = true;
                pre_flight = None;
            }
        }
        if let Some(f) = s.off_flight {
            if f.effective <= t {
                s.cpu_cur[f.k] = true;
                if f.delete {
                    s.release(f.k);
                }
                s.off_flight = None;
                if f.upload && s.delete_after_upload == Some(f.k) {
                    s.delete_after_upload = None;
                    // A zero-length upload ended in an allocation phase.
                    let alloc = f.effective != f.end;
                    s.delete(chain, f.k, t, alloc);
                }
            }
        }
        if let Some((idx, end)) = running {
            if end <= t {
                running = None;
                s.op_end(chain, plan, idx, t, false);
            }
        }
        let due: Vec<(usize, i64)> = s.deferred.iter().copied().filter(|d| d.1 <= t).collect();
        s.deferred.retain(|d| d.1 > t);
        for (k, at) in due {
            s.delete(chain, k, at, false);
        }

        if wake.is_some_and(|x| x <= t) {
            wake = None;
        }

        // ---- allocations at t: op starts first, then transfer starts ----------
        if running.is_none() && next == idx_f(l, 1) && boundary.as_ref().is_none_or(|b| b.0 < t) {
            // The state at F_1's start, after this instant's releases: the period's S₀.
            boundary = Some((
                t,
                CyclicState {
                    gpu: std::iter::once(chain.a_id(0))
                        .chain((0..l).filter(|&j| s.present[j]).map(|j| chain.w_id(j + 1)))
                        .collect(),
                    cpu: (0..l)
                        .filter(|&j| s.cpu_cur[j])
                        .map(|j| chain.w_id(j + 1))
                        .collect(),
                },
            ));
        }
        while running.is_none() && next < n {
            let k = layer(l, next) - 1;
            if next == idx_f(l, 1) && last_zero_start == Some((next - 1, t)) {
                wake = Some(t + 1);
                break;
            }
            if !s.present[k]
                || s.releasing[k]
                || s.mem[next] as i128 + s.held_total - s.w[k] > s.cap
            {
                break;
            }
            let idx = next;
            let end = t + op_dur[idx];
            let op = match step(l, idx) {
                Step::F(i) => chain.f_id(i),
                Step::B(i) => chain.b_id(i),
            };
            s.events.push(Event::Compute {
                op,
                start: Ticks(t),
                end: Ticks(end),
            });
            s.max_start = s.max_start.max(t);
            s.horizon = s.horizon.max(end);
            if let Step::F(i) = step(l, idx) {
                f_started[i - 1] = true;
                s.wl.retain(|&x| x != i - 1);
            }
            next += 1;
            if op_dur[idx] == 0 {
                last_zero_start = Some((idx, t));
                s.op_end(chain, plan, idx, t, true);
            } else {
                running = Some((idx, end));
            }
        }

        if s.off_flight.is_none() {
            if let Some((k, delete)) = s.off_queue.pop_front() {
                let end = t + dur[k];
                s.events.push(Event::Transfer {
                    dir: Direction::Offload,
                    tensor: chain.w_id(k + 1),
                    start: Ticks(t),
                    end: Ticks(end),
                    delete,
                });
                s.max_start = s.max_start.max(t);
                s.horizon = s.horizon.max(end);
                s.off_flight = Some(Flight {
                    k,
                    end,
                    effective: end.max(t + 1),
                    delete,
                    upload: false,
                });
            } else if let (true, Some((_, op_end))) = (plan.policy.uploads, running) {
                // Waiting list: the smallest weight whose upload ends before the running op.
                let pick =
                    s.wl.iter()
                        .copied()
                        .filter(|&k| {
                            !s.cpu_cur[k]
                                && s.present[k]
                                && !f_started[k]
                                && dur[k] > 0
                                && t + dur[k] <= op_end
                        })
                        .min_by_key(|&k| (s.w[k], k));
                if let Some(k) = pick {
                    s.wl.retain(|&x| x != k);
                    let end = t + dur[k];
                    s.events.push(Event::Transfer {
                        dir: Direction::Offload,
                        tensor: chain.w_id(k + 1),
                        start: Ticks(t),
                        end: Ticks(end),
                        delete: false,
                    });
                    s.max_start = s.max_start.max(t);
                    s.horizon = s.horizon.max(end);
                    s.off_flight = Some(Flight {
                        k,
                        end,
                        effective: end,
                        delete: false,
                        upload: true,
                    });
                }
            }
        }

        if pre_flight.is_none() && pre_ptr < pre_queue.len() {
            let (k, consumer) = pre_queue[pre_ptr];
            let mut ok = !s.held[k] && s.cpu_cur[k];
            if ok && plan.policy.just_in_time {
                ok = running.is_none() && next == consumer.min(n);
            }
            if ok {
                // Memory now: the running op (or, idle, the next one) plus what is held.
                let base = match running {
                    Some((idx, _)) => s.mem[idx] as i128 - s.w[layer(l, idx) - 1],
                    None => {
                        let idx = if next < n { next } else { 0 };
                        s.mem[idx] as i128 - s.w[layer(l, idx) - 1]
                    }
                };
                ok = base + s.held_total + s.w[k] <= s.cap
                    && (next..consumer.min(n))
                        .all(|o| s.plan_mem[o] + s.extra[o] + s.w[k] <= s.cap);
            }
            if ok {
                for o in next..consumer.min(n) {
                    s.extra[o] += s.w[k];
                }
                let end = t + dur[k];
                s.events.push(Event::Transfer {
                    dir: Direction::Prefetch,
                    tensor: chain.w_id(k + 1),
                    start: Ticks(t),
                    end: Ticks(end),
                    delete: false,
                });
                s.max_start = s.max_start.max(t);
                s.horizon = s.horizon.max(end);
                s.held[k] = true;
                s.held_total += s.w[k];
                pre_flight = Some(Flight {
                    k,
                    end,
                    effective: end.max(t + 1),
                    delete: false,
                    upload: false,
                });
                pre_ptr += 1;
            }
        }

        // ---- done, or the next instant -----------------------------------------
        let done = next == n
            && running.is_none()
            && pre_ptr == pre_queue.len()
            && pre_flight.is_none()
            && s.off_flight.is_none()
            && s.off_queue.is_empty()
            && s.deferred.is_empty()
            && s.delete_after_upload.is_none();
        if done {
            break;
        }
        let candidates = [
            running.map(|r| r.1),
            pre_flight.map(|f| f.effective),
            s.off_flight.map(|f| f.effective),
            s.deferred.iter().map(|d| d.1).min(),
            wake,
        ];
        // Nothing will happen any more: the plan is stuck (memory too small for it).
        t = candidates
            .iter()
            .flatten()
            .copied()
            .filter(|&x| x > t)
            .min()?;
    }
    let period = s.horizon.max(s.max_start + 1).max(1);
    let _ = initial;
    let (shift, initial) = boundary.expect("F_1 started, so its boundary state was taken");
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
