//! The decoding of an SMT model (the values of the encoding's constants) back
//! into a [`Schedule`], which the caller then replays with the checker.
//!
//! Owns: [`Values`] and `Encoding::decode`.
//! Must not import: bounds, heuristics, traces, reports, the CLI, the z3 crate
//! (the solver passes the model's values in through [`Values`]), the other
//! exact methods.

use super::encode::{s, Alloc, Encoding};
use crate::model::{Direction, TensorId};
use crate::schedule::{CyclicState, Event, Schedule};
use crate::units::Ticks;

/// Values of the SMT constants in a model.
pub(crate) trait Values {
    fn int(&self, name: &str) -> Option<i64>;
    fn bool(&self, name: &str) -> Option<bool>;
}

impl<F: Fn(&str) -> Option<i64>, G: Fn(&str) -> Option<bool>> Values for (F, G) {
    fn int(&self, name: &str) -> Option<i64> {
        (self.0)(name)
    }
    fn bool(&self, name: &str) -> Option<bool> {
        (self.1)(name)
    }
}

impl Encoding {
    /// Build the schedule a model describes.
    pub fn decode(&self, v: &dyn Values) -> Option<Schedule> {
        let get = |x: &str| v.int(x);
        let on = |x: &str| v.bool(x).unwrap_or(false);
        let p = if self.cyclic { Some(get("C")?) } else { None };
        let norm = |x: i64| match p {
            Some(p) if x >= p => x - p,
            _ => x,
        };
        let mut events = vec![];
        for (k, o) in self.order.iter().enumerate() {
            let st = get(&s(k))?;
            events.push(Event::Compute {
                op: *o,
                start: Ticks(st),
                end: Ticks(st + self.dur[k]),
            });
        }
        // A release exactly at the period boundary is the offload's own delete
        // flag when the offload ends there and the gap's reader is not at P;
        // otherwise it is the next period's time-0 delete (models/SMT.md §4).
        let mut flagged = vec![false; self.offloads.len()];
        let mut skip = vec![false; self.gaps.len()];
        if let Some(p) = p {
            for (gi, g) in self.gaps.iter().enumerate() {
                if let (true, Some(v), Some(b)) = (g.wraps && on(&g.e), g.version, g.before) {
                    let of = &self.offloads[v];
                    if get(&g.d)? == p && on(&of.f) && get(&of.o)? + of.tau == p && get(&s(b))? < p
                    {
                        flagged[v] = true;
                        skip[gi] = true;
                    }
                }
            }
        }
        for (v, of) in self.offloads.iter().enumerate() {
            if on(&of.f) {
                let o = norm(get(&of.o)?);
                events.push(Event::Transfer {
                    dir: Direction::Offload,
                    tensor: of.tensor,
                    start: Ticks(o),
                    end: Ticks(o + of.tau),
                    delete: flagged[v],
                });
            }
        }
        for (gi, g) in self.gaps.iter().enumerate() {
            if on(&g.e) {
                let (d, a) = (norm(get(&g.d)?), norm(get(&g.a)?));
                if !skip[gi] {
                    events.push(Event::Delete {
                        tensor: g.tensor,
                        at: Ticks(d),
                    });
                }
                events.push(Event::Transfer {
                    dir: Direction::Prefetch,
                    tensor: g.tensor,
                    start: Ticks(a),
                    end: Ticks(a + g.tau),
                    delete: false,
                });
            }
        }
        for tl in &self.tails {
            if on(&tl.k) {
                events.push(Event::Delete {
                    tensor: tl.tensor,
                    at: Ticks(get(&tl.t)?),
                });
            }
        }
        let Some(p) = p else {
            return Some(Schedule::one_shot(events));
        };
        // The state at time 0 (= at P, after its releases): models/SMT.md §4.
        let mut st = CyclicState::default();
        for (i, plan) in self.plans.iter().enumerate() {
            let t = TensorId(i as u32);
            if plan.alloc != Some(Alloc::Persistent) {
                continue;
            }
            // Read after the completions at P, before the time-0 deletes: a
            // release at P counts only when it is a delete flag.
            let away = plan.gaps.iter().any(|&g| {
                let gp = &self.gaps[g];
                on(&gp.e)
                    && get(&gp.d).is_some_and(|d| d < p || d == p && skip[g])
                    && get(&gp.a).is_some_and(|a| p < a + gp.tau)
            });
            if !away {
                st.gpu.push(t);
            }
            let cpu = plan.cpu_free && !plan.gaps.is_empty()
                || plan.last_version.is_some_and(|v| {
                    let of = &self.offloads[v];
                    on(&of.f) && get(&of.o).is_some_and(|o| o + of.tau <= p)
                });
            if cpu {
                st.cpu.push(t);
            }
        }
        Some(Schedule::cyclic(Ticks(p), st, events))
    }
}
