//! The measurements every report carries, valid or not: the makespan (or
//! period), the busy time of each channel and the idle time of the GPU compute
//! stream (on the circle for cyclic schedules). Peak memory is measured by the
//! sweep, where the rule *memory* is judged.
//!
//! Owns: [`Measured`]. Must not import: anything outside this crate.

use super::window::Window;
use super::ChannelBusy;
use crate::model::{Device, Instance};
use crate::schedule::{Event, Schedule};
use crate::units::Ticks;

pub(super) struct Measured {
    pub makespan: Ticks,
    pub channel_busy: Vec<ChannelBusy>,
    pub compute_idle: Ticks,
}

impl Measured {
    pub fn of(inst: &Instance, s: &Schedule, w: &Window) -> Measured {
        let makespan = if w.cyclic { w.period } else { s.last_end() };
        let circle = w.circle();
        let channel_busy = inst
            .machine
            .channels()
            .into_iter()
            .map(|ch| {
                let iv: Vec<(Ticks, Ticks)> = s
                    .events
                    .iter()
                    .filter_map(|e| match e {
                        Event::Transfer {
                            dir, start, end, ..
                        } if inst.machine.channel(*dir) == ch => Some((*start, *end)),
                        _ => None,
                    })
                    .collect();
                ChannelBusy {
                    channel: ch,
                    busy: union_length(iv, circle),
                }
            })
            .collect();
        let compute: Vec<(Ticks, Ticks)> = s
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Compute { op, start, end } if inst.op(*op).device == Device::Gpu => {
                    Some((*start, *end))
                }
                _ => None,
            })
            .collect();
        let compute_idle = Ticks((makespan.0 - union_length(compute, circle).0).max(0));
        Measured {
            makespan,
            channel_busy,
            compute_idle,
        }
    }
}

/// Length of the union of half-open intervals; on a circle of length P when
/// `circle` is given (parts past P wrap to the start).
fn union_length(mut iv: Vec<(Ticks, Ticks)>, circle: Option<Ticks>) -> Ticks {
    if let Some(p) = circle {
        let mut extra = Vec::new();
        for x in iv.iter_mut() {
            if x.1 > p {
                extra.push((Ticks(0), Ticks((x.1 .0 - p.0).min(p.0))));
                x.1 = p;
            }
        }
        iv.extend(extra);
    }
    iv.sort_unstable();
    let mut total = 0i64;
    let mut cur: Option<(Ticks, Ticks)> = None;
    for (a, b) in iv {
        match cur {
            Some((ca, cb)) if a <= cb => cur = Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                total += cb.0 - ca.0;
                cur = Some((a, b));
            }
            None => cur = Some((a, b)),
        }
    }
    if let Some((a, b)) = cur {
        total += b.0 - a.0;
    }
    Ticks(total)
}
