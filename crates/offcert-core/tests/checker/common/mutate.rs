//! The random schedule mutations that compare the checker and the re-check on
//! invalid input ([`mutate_up_to_three`], [`random_mutation`]).

use offcert_core::model::Direction;
use offcert_core::schedule::{Event, Schedule};
use offcert_core::units::Ticks;

/// Apply up to three random mutations ([`random_mutation`], one per entry of
/// `muts`) to `s` in turn, calling `after` on each mutated schedule; returns the
/// last one.
pub fn mutate_up_to_three(
    s: Schedule,
    muts: Vec<(u8, usize, i8)>,
    mut after: impl FnMut(&Schedule),
) -> Schedule {
    let mut m = s;
    for (w, i, d) in muts.into_iter().take(3) {
        if let Some(x) = random_mutation(&m, w, i, d) {
            m = x;
            after(&m);
        }
    }
    m
}

/// A random small change: move an event, stretch or shrink it, drop it, or
/// duplicate it. Used to compare the checker and the re-check on invalid input.
pub fn random_mutation(s: &Schedule, which: u8, idx: usize, delta: i8) -> Option<Schedule> {
    if s.events.is_empty() {
        return None;
    }
    let i = idx % s.events.len();
    let mut m = s.clone();
    let d = Ticks(delta as i64 % 6);
    let clamp = |t: Ticks| Ticks(t.0.max(0));
    match which % 6 {
        0 => {
            // shift
            let e = &mut m.events[i];
            let len = e.end() - e.start();
            let ns = clamp(e.start() + d);
            *e = set_times(*e, ns, ns + len);
        }
        1 => {
            // change the end
            let e = &mut m.events[i];
            let ne = (e.end() + d).max(e.start());
            *e = set_times(*e, e.start(), ne);
        }
        2 => {
            m.events.remove(i);
        }
        3 => {
            let e = m.events[i];
            m.events.push(e);
        }
        4 => {
            // flip an offload's delete flag, or turn a delete into a later one
            match &mut m.events[i] {
                Event::Transfer { delete, dir, .. } if *dir == Direction::Offload => {
                    *delete = !*delete
                }
                Event::Delete { at, .. } => *at = clamp(*at + d),
                _ => return None,
            }
        }
        _ => {
            // change the period or the initial state
            match (&mut m.period, &mut m.initial) {
                (Some(p), Some(st)) => {
                    if delta % 2 == 0 {
                        *p = Ticks((p.0 + d.0).max(1));
                    } else if !st.gpu.is_empty() && delta > 0 {
                        st.gpu.remove(idx % st.gpu.len());
                    } else if !st.cpu.is_empty() {
                        st.cpu.remove(idx % st.cpu.len());
                    } else {
                        return None;
                    }
                }
                _ => return None,
            }
        }
    }
    Some(m)
}

fn set_times(e: Event, start: Ticks, end: Ticks) -> Event {
    match e {
        Event::Compute { op, .. } => Event::Compute { op, start, end },
        Event::Transfer {
            dir,
            tensor,
            delete,
            ..
        } => Event::Transfer {
            dir,
            tensor,
            start,
            end,
            delete,
        },
        Event::Delete { tensor, .. } => Event::Delete { tensor, at: start },
    }
}
