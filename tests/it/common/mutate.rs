//! The schedule mutations of the property tests. Each returns None when the
//! schedule offers nothing to mutate; `pick` chooses among the candidates.

use offcert::model::{Direction, Instance, TensorId};
use offcert::schedule::{Event, Schedule};
use offcert::units::Ticks;

/// The indices of the transfer events of `s`.
pub fn transfers(s: &Schedule) -> Vec<usize> {
    (0..s.events.len())
        .filter(|i| matches!(s.events[*i], Event::Transfer { .. }))
        .collect()
}

/// Shorten a transfer to one tick less than size/β allows.
pub fn shorten_transfer(inst: &Instance, s: &Schedule, pick: usize) -> Option<(Schedule, usize)> {
    let cands: Vec<usize> = transfers(s)
        .into_iter()
        .filter(|i| {
            let Event::Transfer { tensor, .. } = s.events[*i] else {
                unreachable!()
            };
            inst.machine
                .bandwidth
                .min_ticks(inst.tensor(tensor).size)
                .unwrap()
                >= Ticks(1)
        })
        .collect();
    let i = *cands.get(pick % cands.len().max(1))?;
    let mut m = s.clone();
    if let Event::Transfer {
        tensor, start, end, ..
    } = &mut m.events[i]
    {
        let least = inst
            .machine
            .bandwidth
            .min_ticks(inst.tensor(*tensor).size)
            .unwrap();
        *end = *start + least - Ticks(1);
    }
    Some((m, i))
}

/// Move the first reader after a prefetch (with a positive duration) to start one
/// tick before the prefetch ends. Returns the mutated schedule, the compute event
/// and the tensor.
pub fn start_before_prefetch_ends(
    inst: &Instance,
    s: &Schedule,
    pick: usize,
) -> Option<(Schedule, usize, TensorId)> {
    let mut cands = Vec::new();
    for i in transfers(s) {
        let Event::Transfer {
            dir: Direction::Prefetch,
            tensor,
            start,
            end,
            ..
        } = s.events[i]
        else {
            continue;
        };
        if end <= start {
            continue;
        }
        // The first op (by start) that reads it at or after the prefetch's end.
        let reader = (0..s.events.len())
            .filter(|j| match s.events[*j] {
                Event::Compute { op, start: os, .. } => {
                    os >= end && inst.op(op).reads.contains(&tensor)
                }
                _ => false,
            })
            .min_by_key(|j| (s.events[*j].start(), *j));
        if let Some(j) = reader {
            // Only if nothing re-lands the tensor between the prefetch and the reader.
            cands.push((j, tensor, end));
        }
    }
    let &(j, tensor, end) = cands.get(pick % cands.len().max(1))?;
    let mut m = s.clone();
    if let Event::Compute { start, end: oe, .. } = &mut m.events[j] {
        let d = *oe - *start;
        *start = end - Ticks(1);
        *oe = *start + d;
    }
    Some((m, j, tensor))
}

/// Insert a delete of a tensor at an instant when its GPU copy holds the only
/// current value and it is still needed: an activation right after the forward
/// op that produces it, or a weight right after the backward op that updates it.
pub fn delete_without_cpu_copy(
    inst: &Instance,
    s: &Schedule,
    pick: usize,
) -> Option<(Schedule, TensorId)> {
    let cyclic = s.period.is_some();
    let mut cands = Vec::new();
    for e in &s.events {
        let Event::Compute { op, start, end } = *e else {
            continue;
        };
        // A delete is a release: at the instant a zero-length op runs it comes
        // before the op, and would find nothing to delete.
        if end == start {
            continue;
        }
        let o = inst.op(op);
        let targets: Vec<TensorId> = if cyclic {
            // Only weights that move: a resident weight deleted in the first
            // (warm-up) period is simply absent in the reported one.
            o.modifies
                .iter()
                .copied()
                .filter(|t| {
                    s.events.iter().any(|f| {
                        matches!(f, Event::Transfer { dir: Direction::Prefetch, tensor, .. } if tensor == t)
                    })
                })
                .collect()
        } else {
            o.produces
                .iter()
                .copied()
                .filter(|t| {
                    inst.tensor(*t).transferable
                        && inst.tensor(*t).size.0 > 0
                        && s.events.iter().any(|f| matches!(f, Event::Compute { op: p, start, .. } if *start > end && inst.op(*p).reads.contains(t)))
                })
                .collect()
        };
        for t in targets {
            cands.push((t, end));
        }
    }
    let &(t, at) = cands.get(pick % cands.len().max(1))?;
    let mut m = s.clone();
    m.events.push(Event::Delete { tensor: t, at });
    Some((m, t))
}

/// Move a transfer onto the start of another one on the same channel.
pub fn overlap_transfers(inst: &Instance, s: &Schedule, pick: usize) -> Option<Schedule> {
    let ts: Vec<usize> = transfers(s)
        .into_iter()
        .filter(|i| s.events[*i].end() > s.events[*i].start())
        .collect();
    let mut cands = Vec::new();
    for &a in &ts {
        for &b in &ts {
            let (Event::Transfer { dir: da, .. }, Event::Transfer { dir: db, .. }) =
                (s.events[a], s.events[b])
            else {
                unreachable!()
            };
            if a != b && inst.machine.channel(da) == inst.machine.channel(db) {
                cands.push((a, b));
            }
        }
    }
    let &(a, b) = cands.get(pick % cands.len().max(1))?;
    let mut m = s.clone();
    let a_start = s.events[a].start();
    if let Event::Transfer { start, end, .. } = &mut m.events[b] {
        let d = *end - *start;
        *start = a_start;
        *end = a_start + d;
    }
    Some(m)
}
