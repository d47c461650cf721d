//! From a MILP solution to a [`Schedule`]. The schedule is then replayed by the
//! checker like any other; nothing here decides validity.
//!
//! Owns: [`decode`].

use super::encode::Encoding;
use super::structure::Structure;
use crate::model::{Direction, TensorId};
use crate::schedule::{CyclicState, Event, Schedule};
use crate::units::Ticks;

pub fn decode(st: &Structure, enc: &Encoding, x: &[f64]) -> Schedule {
    let n = st.n();
    let cyc = st.cyclic;
    let p = enc.len;
    let wrap = |u: i64| if cyc { u.rem_euclid(p) } else { u };
    let mut events = Vec::new();
    let start: Vec<i64> = (0..n)
        .map(|k| enc.ops[k].value(x).unwrap_or(enc.ops[k].lo))
        .collect();
    for k in 0..n {
        let s = start[k];
        events.push(Event::Compute {
            op: st.seq[k],
            start: Ticks(s),
            end: Ticks(s + st.dur[k]),
        });
    }
    // Early frees (relaxation only): a delete while the last reader runs.
    for (i, q) in enc.frees.iter().enumerate() {
        let Some(q) = q else { continue };
        let Some(at) = q.value(x) else { continue };
        if let super::structure::Base::Initial(Some(super::structure::Release::Freed(f)))
        | super::structure::Base::Produced(_, Some(super::structure::Release::Freed(f))) =
            st.base[i]
        {
            let end = enc.ops[f].value(x).unwrap_or(enc.ops[f].lo) + st.dur[f];
            if at < end {
                events.push(Event::Delete {
                    tensor: TensorId(i as u32),
                    at: Ticks(wrap(at)),
                });
            }
        }
    }
    // Offload per epoch (unrolled start) and evictions per window.
    let mut off_at: Vec<Option<i64>> = vec![None; st.epochs.len()];
    for (e, o) in enc.offloads.iter().enumerate() {
        if let Some(o) = o {
            off_at[e] = o.value(x);
        }
    }
    // Per tensor: unrolled intervals [release, prefetch end) during which it is
    // not present, for the cyclic boundary state.
    let mut away: Vec<Vec<(i64, i64, bool)>> = vec![Vec::new(); st.size.len()];
    let mut evictions = Vec::new();
    for (wi, w) in enc.windows.iter().enumerate() {
        let Some(w) = w else { continue };
        if x[w.z.0] < 0.5 {
            continue;
        }
        let win = &st.windows[wi];
        let t = win.tensor;
        let d = st.dt[t.ix()];
        let (Some(r), Some(pf)) = (w.release.value(x), w.prefetch.value(x)) else {
            continue;
        };
        evictions.push((wi, t, r, pf, d, false));
    }
    // Unrolled start of the op at position q.
    let ustart = |q: usize| start[q % n] + (q / n) as i64 * p;
    for (e, o) in off_at.iter().enumerate() {
        let Some(o) = *o else { continue };
        let t = st.epochs[e].tensor;
        let d = st.dt[t.ix()];
        // Release at the offload's end: written as the offload's `delete` flag,
        // except at the cyclic boundary when the window's reader is itself a
        // zero-duration op at P: the release must follow it, so it is the next
        // period's time-0 delete (models/MODEL.md R8).
        let first = evictions.iter().position(|(wi, _, r, _, _, _)| {
            let w = &st.windows[*wi];
            let reader_at_p = cyc
                && *r == p
                && matches!(w.from, super::structure::Anchor::Read(a) if ustart(a) == p);
            w.epoch == e && *r == o + d && !reader_at_p
        });
        let delete = first.is_some();
        if let Some(i) = first {
            evictions[i].5 = true; // the release is written by the offload
        }
        events.push(Event::Transfer {
            dir: Direction::Offload,
            tensor: t,
            start: Ticks(wrap(o)),
            end: Ticks(wrap(o) + d),
            delete,
        });
    }
    for (_, t, r, pf, d, flagged) in &evictions {
        away[t.ix()].push((*r, pf + d, *flagged));
        if !flagged {
            events.push(Event::Delete {
                tensor: *t,
                at: Ticks(wrap(*r)),
            });
        }
        events.push(Event::Transfer {
            dir: Direction::Prefetch,
            tensor: *t,
            start: Ticks(wrap(*pf)),
            end: Ticks(wrap(*pf) + d),
            delete: false,
        });
    }
    if !cyc {
        return Schedule::one_shot(events);
    }
    // The state at the boundary, after its releases (models/MODEL.md §2.6).
    let mut gpu = Vec::new();
    let mut cpu = Vec::new();
    for (i, b) in st.base.iter().enumerate() {
        if *b != super::structure::Base::Always {
            continue;
        }
        let t = TensorId(i as u32);
        // Away over [release, prefetch end). The state is read after the
        // completions at the boundary and before its time-0 deletes (models/
        // MODEL.md §2.6): a release at the boundary instant itself counts only
        // when it is an offload's delete flag (a transfer completion).
        let absent = away[i].iter().any(|&(r, end, flagged)| {
            [0, p, 2 * p]
                .iter()
                .any(|&u| (r < u || r == u && flagged) && u < end)
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
        if let Some(e) = st.epochs.iter().position(|e| e.tensor == t) {
            if let Some(o) = off_at[e] {
                if o + st.dt[i] <= p {
                    cpu.push(t);
                }
            }
        }
    }
    Schedule::cyclic(Ticks(p), CyclicState { gpu, cpu }, events)
}
