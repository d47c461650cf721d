//! Rule *resources*: one op at a time per compute stream, one transfer at a
//! time per channel; cyclic intervals are seen on the circle.
//!
//! Owns: [`overlaps`]. Must not import: anything outside this crate.

use super::Violation;
use crate::model::{Channel, Device, Instance};
use crate::schedule::{Event, EventId, Schedule};
use crate::units::Ticks;

/// Rule *resources*: report each pair (earlier interval still running, later one
/// starting) on one stream or channel. Cyclic intervals are seen on the circle:
/// one that crosses the period end is also tried one period earlier.
pub(super) fn overlaps(inst: &Instance, s: &Schedule, out: &mut Vec<Violation>) {
    let period = s.period;
    let mut groups: std::collections::BTreeMap<(u8, u8), Vec<(Ticks, Ticks, EventId)>> =
        Default::default();
    for (i, e) in s.events.iter().enumerate() {
        let id = EventId(i as u32);
        let key = match e {
            Event::Compute { op, .. } => (0u8, inst.op(*op).device as u8),
            Event::Transfer { dir, .. } => (1u8, inst.machine.channel(*dir) as u8),
            Event::Delete { .. } => continue,
        };
        let g = groups.entry(key).or_default();
        if e.end() == e.start() {
            continue; // an empty interval occupies nothing
        }
        g.push((e.start(), e.end(), id));
        if let Some(p) = period {
            if e.end() > p {
                g.push((e.start() - p, e.end() - p, id));
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    for ((kind, which), mut iv) in groups {
        iv.sort_unstable_by_key(|x| (x.0, x.1, x.2));
        let mut best: Option<(Ticks, Ticks, EventId)> = None;
        for cur in iv {
            if let Some(b) = best {
                if cur.0 < b.1 && (b.2 != cur.2 || cur.0 != b.0) && seen.insert((b.2, cur.2)) {
                    out.push(if kind == 0 {
                        Violation::ComputeOverlap {
                            device: if which == 0 { Device::Gpu } else { Device::Cpu },
                            first: b.2,
                            second: cur.2,
                            first_end: b.1,
                            second_start: cur.0,
                        }
                    } else {
                        Violation::ChannelOverlap {
                            channel: channel_of(which),
                            first: b.2,
                            second: cur.2,
                            first_end: b.1,
                            second_start: cur.0,
                        }
                    });
                }
            }
            if best.is_none_or(|b| cur.1 > b.1) {
                best = Some(cur);
            }
        }
    }
}

fn channel_of(x: u8) -> Channel {
    match x {
        0 => Channel::Link,
        1 => Channel::DeviceToHost,
        _ => Channel::HostToDevice,
    }
}
