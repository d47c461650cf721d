//! The mapped audit: the trace read as a schedule of the instance, judged by the
//! checker.
//!
//! Owns: [`audit_mapped`], [`MappedAudit`] and what it picks out of the checker's
//! report: races (an op that starts before the prefetch of its input ends),
//! deletes without a CPU copy, the release races judged on the trace's own
//! nanoseconds so that rounding to ticks alone makes none ([`release_races`]),
//! and the waste ([`waste`]: offloads never prefetched, prefetches never used).
//! The mapped rules do not restate the model's rules: they reconstruct a
//! [`Schedule`] ([`crate::trace::mapping`]) and run [`crate::check::check`] on it.
//! Must not import: the trace-only audit (`super::trace`), solvers, heuristics,
//! bounds.

use super::{Line, Spot};
use crate::check::{check, CheckOutcome, Violation};
use crate::model::{Direction, Instance, ReleaseRule};
use crate::schedule::{Event, EventId, Schedule};
use crate::trace::mapping::{reconstruct, Mapping, MappingNote, Reconstruction};
use crate::trace::{CopyKind, Nanos, Trace, TraceError};
use crate::units::Ticks;
use serde::Serialize;

/// A compute op that started before the prefetch of its input finished (the
/// checker's `InputNotResident` whose pending copy is a prefetch).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Race {
    pub event: EventId,
    pub op: String,
    pub tensor: String,
    pub start: Ticks,
    pub prefetch_ends: Ticks,
}

/// A release of a tensor's GPU copy while an op or a transfer still uses it
/// (rule *released while in use*, `release: after_end`), judged on the trace's own
/// nanoseconds: the release instant r lies strictly inside the holder's interval,
/// s < r < e. The tick times are those of the reconstructed schedule, for reference.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReleaseRace {
    pub tensor: String,
    /// The releasing event: an explicit delete, or an op that consumes the tensor
    /// (at its start) or frees it (at its end).
    pub release: EventId,
    /// `delete`, `consume by OP` or `free by OP`.
    pub released_by: String,
    pub at_ns: Nanos,
    /// The event that holds the tensor: a GPU op that reads (without consuming),
    /// produces or modifies it, or a transfer of it.
    pub holder: EventId,
    /// The op's name, or `offload T` / `prefetch T`.
    pub held_by: String,
    pub held_from_ns: Nanos,
    pub held_to_ns: Nanos,
    pub at: Ticks,
    pub held_from: Ticks,
    pub held_to: Ticks,
}

/// A release of a tensor's GPU copy while no CPU copy holds its latest value and it
/// is needed later (the checker's `DataLoss`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LostDelete {
    pub event: EventId,
    pub tensor: String,
    pub at: Ticks,
}

/// Results of the mapped audit.
#[derive(Clone, Debug, Serialize)]
pub struct MappedAudit {
    pub tick_ns: i64,
    pub origin_ns: i64,
    pub matched: std::collections::BTreeMap<String, u64>,
    pub mapping_notes: Vec<MappingNote>,
    /// The checker's outcome on the reconstructed schedule (which it holds;
    /// serialized as its report).
    pub report: CheckOutcome,
    /// The release rule the checker and the release races follow.
    pub release_rule: ReleaseRule,
    pub races: Vec<Race>,
    /// Releases inside a holder's interval in the trace's nanoseconds (none under
    /// the relaxation `after_start`, which allows them).
    pub release_races: Vec<ReleaseRace>,
    /// The checker's `released-while-in-use` witnesses on the tick schedule that
    /// the nanoseconds do not confirm: rounding to ticks (starts down, ends up)
    /// alone put the release inside. Not races.
    pub release_rounding_only: Vec<Violation>,
    pub deletes_without_cpu_copy: Vec<LostDelete>,
    /// Offloads of a tensor that no later prefetch brings back.
    pub offloads_never_prefetched: Vec<EventId>,
    /// Prefetches that no op reads before the next prefetch of the tensor.
    pub prefetches_never_used: Vec<EventId>,
    /// The checker's violations that the verdict holds against the run (all but
    /// `release_rounding_only`), each as the checker prints it, placed in the
    /// trace's nanoseconds.
    #[serde(skip)]
    pub findings: Vec<Line>,
    #[serde(skip)]
    pub reconstruction: Option<Reconstruction>,
}

/// Reconstruct the schedule with `mapping` and run the checker on it.
pub fn audit_mapped(
    trace: &Trace,
    mapping: &Mapping,
    inst: &Instance,
    mapping_file: &str,
) -> Result<MappedAudit, TraceError> {
    let rec = reconstruct(trace, mapping, inst, mapping_file)?;
    let s = rec.schedule.clone();
    let report = check(inst, &s);
    let period = s.period.map(|p| p.0).unwrap_or(0);
    let same = |a: Ticks, b: Ticks| a == b || (period > 0 && (a.0 - b.0).rem_euclid(period) == 0);
    let mut races = Vec::new();
    let mut lost = Vec::new();
    for v in &report.violations {
        match v {
            Violation::InputNotResident {
                event,
                at,
                op,
                tensor,
                ready_at: Some(r),
            } => {
                let by_prefetch = s.events.iter().any(|e| matches!(e, Event::Transfer { dir: Direction::Prefetch, tensor: t, end, .. } if t == tensor && same(*end, *r)));
                if by_prefetch {
                    races.push(Race {
                        event: *event,
                        op: inst.op(*op).name.clone(),
                        tensor: inst.tensor(*tensor).name.clone(),
                        start: *at,
                        prefetch_ends: *r,
                    });
                }
            }
            Violation::DataLoss {
                event, at, tensor, ..
            } => lost.push(LostDelete {
                event: *event,
                tensor: inst.tensor(*tensor).name.clone(),
                at: *at,
            }),
            _ => {}
        }
    }
    let release_races = if inst.release == ReleaseRule::AfterEnd {
        release_races(inst, &s, &rec)
    } else {
        Vec::new()
    };
    let confirmed = |ev: &EventId, t: &crate::model::TensorId| {
        release_races
            .iter()
            .any(|r| r.release == *ev && r.tensor == inst.tensor(*t).name)
    };
    let release_rounding_only: Vec<Violation> = report
        .violations
        .iter()
        .filter(|v| {
            matches!(v, Violation::ReleasedWhileInUse { event, tensor, .. } if !confirmed(event, tensor))
        })
        .cloned()
        .collect();
    let (never_prefetched, never_used) = waste(inst, &s);
    let findings = report
        .violations
        .iter()
        .filter(|v| !release_rounding_only.contains(v))
        .map(|v| Line {
            text: format!("[{}:{}] {}", v.rule(), v.kind(), v.describe(inst)),
            spot: spot(v, &s, &rec),
        })
        .collect();
    Ok(MappedAudit {
        findings,
        tick_ns: rec.tick_ns,
        origin_ns: rec.origin_ns,
        release_rule: inst.release,
        release_races,
        release_rounding_only,
        matched: rec
            .matched
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        mapping_notes: rec.notes.clone(),
        report,
        races,
        deletes_without_cpu_copy: lost,
        offloads_never_prefetched: never_prefetched,
        prefetches_never_used: never_used,
        reconstruction: Some(rec),
    })
}

/// Where the checker's witness `v` happened in the trace: its event's lane (a
/// compute op on a kernel lane, a prefetch on HtoD, an offload on DtoH, a delete on
/// the memory curve) at the witness's instant, converted back from ticks.
fn spot(v: &Violation, s: &Schedule, rec: &Reconstruction) -> Spot {
    use Violation::*;
    let event = match v {
        NotTransferable { event, .. }
        | InputNotResident { event, .. }
        | InputStale { event, .. }
        | CpuInputMissing { event, .. }
        | ProducesResident { event, .. }
        | OffloadAbsent { event, .. }
        | PrefetchWithoutCpuCopy { event, .. }
        | PrefetchResident { event, .. }
        | DeleteAbsent { event, .. }
        | ReleasedWhileInUse { event, .. }
        | DataLoss { event, .. }
        | WrongDuration { event, .. }
        | OutsidePeriod { event, .. }
        | TransferTooFast { event, .. }
        | OutOfOrder { event, .. }
        | ExtraOp { event, .. }
        | NotSteady { event, .. } => Some(*event),
        ComputeOverlap { second, .. } | ChannelOverlap { second, .. } => Some(*second),
        _ => None,
    };
    let e = event.and_then(|e| s.events.get(e.ix()));
    let at = match (v.at(), e) {
        (t, _) if t.0 >= 0 => t,
        (_, Some(e)) => e.start(),
        (_, None) => return Spot::Nowhere,
    };
    let ns = (rec.origin_ns as i128 + at.0 as i128 * rec.tick_ns as i128)
        .clamp(i64::MIN as i128, i64::MAX as i128);
    let at = Nanos(ns as i64);
    match (v, e) {
        (MemoryExceeded { .. } | CpuMemoryExceeded { .. }, _) => Spot::Memory { device: None, at },
        (_, Some(Event::Compute { .. })) => Spot::Compute { at },
        (_, Some(Event::Transfer { dir, .. })) => Spot::Copy {
            device: None,
            kind: match dir {
                Direction::Prefetch => CopyKind::HtoD,
                Direction::Offload => CopyKind::DtoH,
            },
            at,
        },
        (_, Some(Event::Delete { .. })) => Spot::Memory { device: None, at },
        _ => Spot::Nowhere,
    }
}

impl MappedAudit {
    /// The note on the checker's `released-while-in-use` witnesses that rounding
    /// to ticks alone made, if any (as printed and drawn).
    pub fn rounding_note(&self) -> Option<String> {
        (!self.release_rounding_only.is_empty()).then(|| format!(
            "note: {} released-while-in-use witness(es) of the checker come from rounding to ticks alone (the trace's nanoseconds put the release at or after the holder's end, or at or before its start): not races",
            self.release_rounding_only.len()
        ))
    }

    /// The waste found, as printed and drawn: offloads never prefetched and
    /// prefetches never used (not violations).
    pub fn warnings(&self) -> Vec<String> {
        let a = self.offloads_never_prefetched.iter().map(|e| {
            format!(
                "warning: events[{}] offloads a tensor that is never prefetched",
                e.0
            )
        });
        let b = self.prefetches_never_used.iter().map(|e| {
            format!(
                "warning: events[{}] prefetches a tensor no op reads afterwards",
                e.0
            )
        });
        a.chain(b).collect()
    }

    /// The reconstructed schedule the checker judged.
    pub fn schedule(&self) -> &Schedule {
        self.report.schedule()
    }

    /// The checker's verdict, less the violations that rounding to ticks alone
    /// made (`release_rounding_only`): the reconstructed run obeys the model when
    /// judged on the trace's own nanoseconds.
    pub fn valid(&self) -> bool {
        self.report.valid
            || self
                .report
                .violations
                .iter()
                .all(|v| self.release_rounding_only.contains(v))
    }
}

/// Releases strictly inside a holder's interval, on the trace's nanoseconds
/// (`models/MODEL.md`, rule *released while in use*). Holders: a GPU op holds
/// what it reads and does not consume, what it produces and what it modifies over
/// its interval; a transfer holds its tensor's GPU buffer. Releases: explicit
/// deletes, consumes (at the consumer's start) and frees (at the op's end) by
/// another event. An offload's own release (`delete: true`) is deferred to the end
/// of the holder by the rule, never a race. Cyclic schedules also compare the
/// release one period (P · tick_ns) earlier and later.
pub fn release_races(inst: &Instance, s: &Schedule, rec: &Reconstruction) -> Vec<ReleaseRace> {
    use crate::model::{Device, TensorId};
    let ns = |i: usize| rec.event_ns.get(i).copied();
    let mut holds: Vec<(TensorId, usize, String)> = Vec::new();
    let mut releases: Vec<(TensorId, usize, String, Nanos, Ticks)> = Vec::new();
    for (i, e) in s.events.iter().enumerate() {
        let Some((a, b)) = ns(i) else { continue };
        match *e {
            Event::Compute { op, start, end } => {
                let o = inst.op(op);
                if o.device == Device::Gpu {
                    for t in o.reads.iter().filter(|t| !o.consumes.contains(t)) {
                        holds.push((*t, i, o.name.clone()));
                    }
                    for t in o.produces.iter().chain(&o.modifies) {
                        holds.push((*t, i, o.name.clone()));
                    }
                }
                for t in &o.consumes {
                    releases.push((*t, i, format!("consume by {}", o.name), a, start));
                }
                for t in &o.frees {
                    releases.push((*t, i, format!("free by {}", o.name), b, end));
                }
            }
            Event::Transfer { dir, tensor, .. } => {
                let what = match dir {
                    Direction::Offload => "offload",
                    Direction::Prefetch => "prefetch",
                };
                holds.push((tensor, i, format!("{what} {}", inst.tensor(tensor).name)));
            }
            Event::Delete { tensor, at } => {
                releases.push((tensor, i, "delete".into(), a, at));
            }
        }
    }
    let period_ns = s.period.map(|p| p.0 as i128 * rec.tick_ns as i128);
    let mut out = Vec::new();
    for (t, ri, by, r, at) in &releases {
        for (ht, hi, name) in &holds {
            if ht != t || hi == ri {
                continue;
            }
            let Some((hs, he)) = ns(*hi) else { continue };
            let inside = |r: i128| (hs.0 as i128) < r && r < (he.0 as i128);
            let r0 = r.0 as i128;
            let hit = inside(r0)
                || period_ns.is_some_and(|p| p > 0 && (inside(r0 + p) || inside(r0 - p)));
            if hit {
                let h = &s.events[*hi];
                out.push(ReleaseRace {
                    tensor: inst.tensor(*t).name.clone(),
                    release: EventId(*ri as u32),
                    released_by: by.clone(),
                    at_ns: *r,
                    holder: EventId(*hi as u32),
                    held_by: name.clone(),
                    held_from_ns: hs,
                    held_to_ns: he,
                    at: *at,
                    held_from: h.start(),
                    held_to: h.end(),
                });
            }
        }
    }
    out
}

/// Offloads with no later prefetch of the tensor (anywhere in the period for cyclic
/// schedules), and prefetches that no op reads before the tensor's next prefetch.
pub fn waste(inst: &Instance, s: &Schedule) -> (Vec<EventId>, Vec<EventId>) {
    let cyclic = s.period.is_some();
    let mut never_prefetched = Vec::new();
    let mut never_used = Vec::new();
    for (i, e) in s.events.iter().enumerate() {
        match *e {
            Event::Transfer {
                dir: Direction::Offload,
                tensor,
                start,
                ..
            } => {
                let back = s.events.iter().any(|f| matches!(*f, Event::Transfer { dir: Direction::Prefetch, tensor: t, start: ps, .. } if t == tensor && (cyclic || ps >= start)));
                if !back {
                    never_prefetched.push(EventId(i as u32));
                }
            }
            Event::Transfer {
                dir: Direction::Prefetch,
                tensor,
                start,
                ..
            } => {
                let next = s
                    .events
                    .iter()
                    .filter_map(|f| match *f {
                        Event::Transfer {
                            dir: Direction::Prefetch,
                            tensor: t,
                            start: ps,
                            ..
                        } if t == tensor && ps > start => Some(ps),
                        _ => None,
                    })
                    .min();
                let used = s.events.iter().any(|f| match *f {
                    Event::Compute { op, start: cs, .. } => {
                        inst.op(op).reads.contains(&tensor)
                            && (cyclic || (cs >= start && next.is_none_or(|n| cs < n)))
                    }
                    _ => false,
                });
                if !used {
                    never_used.push(EventId(i as u32));
                }
            }
            _ => {}
        }
    }
    (never_prefetched, never_used)
}
