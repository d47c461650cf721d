//! From a MILP solution to a [`Schedule`]. The schedule is then replayed by the
//! checker like any other; nothing here decides validity.
//!
//! Owns: [`decode`].
//!
//! Must not import: bounds, heuristics, traces, reports, the CLI.

use super::encode::Encoding;
use super::structure::{Anchor, Base, Release, Structure};
use crate::model::{Direction, TensorId};
use crate::schedule::{CyclicState, Event, Schedule};
use crate::units::Ticks;

/// A chosen eviction: window `wi` releases `tensor` at `release` and
/// prefetches it at `prefetch` (unrolled instants).
struct Eviction {
    wi: usize,
    tensor: TensorId,
    release: i64,
    prefetch: i64,
    /// Transfer ticks.
    d: i64,
    /// The release is written as an offload's `delete` flag.
    flagged: bool,
}

/// The solution's instants, read once.
struct Solution<'a> {
    st: &'a Structure,
    enc: &'a Encoding,
    x: &'a [f64],
    /// Op starts by position.
    start: Vec<i64>,
}

impl Solution<'_> {
    /// An unrolled instant within the frame (cyclic: modulo P).
    fn wrap(&self, u: i64) -> i64 {
        if self.st.cyclic {
            u.rem_euclid(self.enc.len)
        } else {
            u
        }
    }
    /// Unrolled start of the op at position q.
    fn ustart(&self, q: usize) -> i64 {
        let n = self.st.n();
        self.start[q % n] + (q / n) as i64 * self.enc.len
    }
}

pub fn decode(st: &Structure, enc: &Encoding, x: &[f64]) -> Schedule {
    let sol = Solution {
        st,
        enc,
        x,
        start: (0..st.n())
            .map(|k| enc.ops[k].value(x).unwrap_or(enc.ops[k].lo))
            .collect(),
    };
    let mut events: Vec<Event> = (0..st.n())
        .map(|k| Event::Compute {
            op: st.seq[k],
            start: Ticks(sol.start[k]),
            end: Ticks(sol.start[k] + st.dur[k]),
        })
        .collect();
    cpu_events(&sol, &mut events);
    early_frees(&sol, &mut events);
    let dropped_at_p = drops(&sol, &mut events);
    // Offload per epoch (unrolled start) and evictions per window.
    let off_at: Vec<Option<i64>> = enc
        .offloads
        .iter()
        .map(|o| o.as_ref().and_then(|o| o.value(x)))
        .collect();
    let mut evictions = chosen_evictions(&sol);
    offload_events(&sol, &off_at, &mut evictions, &mut events);
    for ev in &evictions {
        if !ev.flagged {
            events.push(Event::Delete {
                tensor: ev.tensor,
                at: Ticks(sol.wrap(ev.release)),
            });
        }
        events.push(Event::Transfer {
            dir: Direction::Prefetch,
            tensor: ev.tensor,
            start: Ticks(sol.wrap(ev.prefetch)),
            end: Ticks(sol.wrap(ev.prefetch) + ev.d),
            delete: false,
        });
    }
    if !st.cyclic {
        return Schedule::one_shot(events);
    }
    let mut state = boundary_state(st, enc.len, &off_at, &evictions);
    state.gpu.extend(dropped_at_p);
    host_state(&sol, &evictions, &mut state);
    state.gpu.sort();
    state.gpu.dedup();
    state.cpu.sort();
    state.cpu.dedup();
    Schedule::cyclic(Ticks(enc.len), state, events)
}

/// The CPU ops, and each host input's offload and delete (unrolled instants
/// wrapped into the period).
fn cpu_events(sol: &Solution, events: &mut Vec<Event>) {
    let (st, enc, x) = (sol.st, sol.enc, sol.x);
    for (c, s) in enc.cpu.iter().enumerate() {
        let start = s.value(x).unwrap_or(s.lo);
        events.push(Event::Compute {
            op: st.cpu.seq[c],
            start: Ticks(start),
            end: Ticks(start + st.cpu.dur[c]),
        });
    }
    for (inp, v) in st.cpu.inputs.iter().zip(&enc.inputs) {
        let d = st.dt[inp.tensor.ix()];
        let o = sol.wrap(v.offload.value(x).unwrap_or(v.offload.lo));
        events.push(Event::Transfer {
            dir: Direction::Offload,
            tensor: inp.tensor,
            start: Ticks(o),
            end: Ticks(o + d),
            delete: false,
        });
        let r = v.release.value(x).unwrap_or(v.release.lo);
        events.push(Event::Delete {
            tensor: inp.tensor,
            at: Ticks(sol.wrap(r)),
        });
    }
}

/// The boundary state of what the CPU ops touch (models/MODEL.md §2.6, read
/// after the completions at P and before the time-0 deletes): persistent
/// tensors a CPU op reads are current on the CPU throughout; a host input is
/// on the GPU iff its delete is at or after P, current on the CPU iff its
/// offload (of this period's value) ended by P; a host-updated tensor present
/// at P is current there only if the copy was prefetched at or after the
/// update (which ends by P), and is dropped from the GPU set otherwise.
fn host_state(sol: &Solution, evictions: &[Eviction], state: &mut CyclicState) {
    let (st, enc, x) = (sol.st, sol.enc, sol.x);
    let p = enc.len;
    state.cpu.extend(st.cpu.current.iter().copied());
    for (inp, v) in st.cpu.inputs.iter().zip(&enc.inputs) {
        let d = st.dt[inp.tensor.ix()];
        if v.release.value(x).is_some_and(|r| r >= p) {
            state.gpu.push(inp.tensor);
        }
        if v.offload.value(x).is_some_and(|o| o + d <= p) {
            state.cpu.push(inp.tensor);
        }
    }
    for (i, by) in st.cpu.updated_by.iter().enumerate() {
        let Some(c) = *by else { continue };
        let t = TensorId(i as u32);
        let end = enc.cpu[c].value(x).unwrap_or(enc.cpu[c].lo) + st.cpu.dur[c];
        // The latest prefetch (any period's copy of it) that has ended by P.
        let last = evictions
            .iter()
            .filter(|ev| ev.tensor == t)
            .flat_map(|ev| [-1, 0, 1].map(|k| ev.prefetch - k * p + ev.d))
            .filter(|&e| e <= p)
            .max();
        let current = evictions
            .iter()
            .filter(|ev| ev.tensor == t)
            .flat_map(|ev| [-1, 0, 1].map(|k| (ev.prefetch - k * p, ev.d)))
            .filter(|&(s, d)| Some(s + d) == last && s >= end)
            .count()
            > 0;
        if !current {
            state.gpu.retain(|g| *g != t);
        }
    }
}

/// The releases of dropped per-iteration tensors (`Structure::dropped`): an
/// explicit delete at the instant the model frees them (the end of their last
/// use, or an early free under the relaxation). A release at P itself is the
/// next period's time-0 delete (a delete at P is outside the period, MODEL.md
/// R8): the copy is then on the GPU at the boundary, and so in S₀ (returned).
fn drops(sol: &Solution, events: &mut Vec<Event>) -> Vec<TensorId> {
    let (st, enc, x) = (sol.st, sol.enc, sol.x);
    let mut at_p = vec![];
    for (i, b) in st.base.iter().enumerate() {
        let Base::Produced(_, Some(Release::Freed(f))) = *b else {
            continue;
        };
        if !st.dropped[i] {
            continue;
        }
        let t = TensorId(i as u32);
        let end = sol.start[f] + st.dur[f];
        let at = enc.frees[i]
            .as_ref()
            .and_then(|q| q.value(x))
            .map_or(end, |q| q.min(end));
        if st.cyclic && at == enc.len {
            at_p.push(t);
        }
        events.push(Event::Delete {
            tensor: t,
            at: Ticks(sol.wrap(at)),
        });
    }
    at_p
}

/// Early frees (relaxation only): a delete while the last reader runs.
fn early_frees(sol: &Solution, events: &mut Vec<Event>) {
    let (st, enc, x) = (sol.st, sol.enc, sol.x);
    for (i, q) in enc.frees.iter().enumerate() {
        let Some(q) = q else { continue };
        let Some(at) = q.value(x) else { continue };
        if st.dropped[i] {
            continue; // written by `drops`
        }
        if let Base::Initial(Some(Release::Freed(f))) | Base::Produced(_, Some(Release::Freed(f))) =
            st.base[i]
        {
            let end = enc.ops[f].value(x).unwrap_or(enc.ops[f].lo) + st.dur[f];
            if at < end {
                events.push(Event::Delete {
                    tensor: TensorId(i as u32),
                    at: Ticks(sol.wrap(at)),
                });
            }
        }
    }
}

/// The windows whose eviction the solution chose.
fn chosen_evictions(sol: &Solution) -> Vec<Eviction> {
    let (st, x) = (sol.st, sol.x);
    let mut evictions = Vec::new();
    for (wi, w) in sol.enc.windows.iter().enumerate() {
        let Some(w) = w else { continue };
        if x[w.z.0] < 0.5 {
            continue;
        }
        let t = st.windows[wi].tensor;
        let (Some(r), Some(pf)) = (w.release.value(x), w.prefetch.value(x)) else {
            continue;
        };
        evictions.push(Eviction {
            wi,
            tensor: t,
            release: r,
            prefetch: pf,
            d: st.dt[t.ix()],
            flagged: false,
        });
    }
    evictions
}

/// One offload per epoch, carrying the `delete` flag of the first eviction
/// released at its end.
fn offload_events(
    sol: &Solution,
    off_at: &[Option<i64>],
    evictions: &mut [Eviction],
    events: &mut Vec<Event>,
) {
    let st = sol.st;
    let p = sol.enc.len;
    for (e, o) in off_at.iter().enumerate() {
        let Some(o) = *o else { continue };
        let t = st.epochs[e].tensor;
        let d = st.dt[t.ix()];
        // Release at the offload's end: written as the offload's `delete` flag,
        // except at the cyclic boundary when the window's reader is itself a
        // zero-duration op at P: the release must follow it, so it is the next
        // period's time-0 delete (models/MODEL.md R8).
        let first = evictions.iter().position(|ev| {
            let w = &st.windows[ev.wi];
            let reader_at_p = st.cyclic
                && ev.release == p
                && matches!(w.from, Anchor::Read(a) if sol.ustart(a) == p);
            w.epoch == e && ev.release == o + d && !reader_at_p
        });
        if let Some(i) = first {
            evictions[i].flagged = true; // the release is written by the offload
        }
        events.push(Event::Transfer {
            dir: Direction::Offload,
            tensor: t,
            start: Ticks(sol.wrap(o)),
            end: Ticks(sol.wrap(o) + d),
            delete: first.is_some(),
        });
    }
}

/// The state at the boundary, after its releases (models/MODEL.md §2.6).
fn boundary_state(
    st: &Structure,
    p: i64,
    off_at: &[Option<i64>],
    evictions: &[Eviction],
) -> CyclicState {
    let mut gpu = Vec::new();
    let mut cpu = Vec::new();
    // Current on the CPU at P iff the epoch's offload ended by P.
    let offloaded_by_p = |i: usize| {
        st.epochs
            .iter()
            .position(|e| e.tensor.ix() == i)
            .and_then(|e| off_at[e])
            .is_some_and(|o| o + st.dt[i] <= p)
    };
    for (i, b) in st.base.iter().enumerate() {
        let t = TensorId(i as u32);
        if let Base::Produced(..) = b {
            // A temporary is produced and released inside the period, so it
            // is never on the GPU at the boundary; but once offloaded, its
            // host copy stays current after the release until the next
            // period's producer overwrites it: it is in S₀'s CPU set.
            if offloaded_by_p(i) {
                cpu.push(t);
            }
            continue;
        }
        if *b != Base::Always {
            continue;
        }
        // Away over [release, prefetch end). The state is read after the
        // completions at the boundary and before its time-0 deletes (models/
        // MODEL.md §2.6): a release at the boundary instant itself counts only
        // when it is an offload's delete flag (a transfer completion).
        let absent = evictions.iter().filter(|ev| ev.tensor == t).any(|ev| {
            let end = ev.prefetch + ev.d;
            [0, p, 2 * p]
                .iter()
                .any(|&u| (ev.release < u || ev.release == u && ev.flagged) && u < end)
        });
        if !absent {
            gpu.push(t);
        }
        if st.unmodified_persistent.contains(&t) {
            // Never modified: its CPU copy, once declared current, stays so.
            if st.epochs.iter().any(|e| e.tensor == t) {
                cpu.push(t);
            }
            continue;
        }
        // Modified: current on the CPU iff this epoch's offload ended by P.
        if offloaded_by_p(i) {
            cpu.push(t);
        }
    }
    CyclicState { gpu, cpu }
}
