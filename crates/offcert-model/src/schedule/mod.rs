//! The answer a runtime, heuristic or solver gives: timed compute, transfer and
//! delete events, plus (for cyclic schedules) the period and the state at time 0.
//!
//! Owns: [`Schedule`] (ids, used by every algorithm) and [`ScheduleFile`] (names,
//! the JSON format), and the conversion between them. It checks only the *form*
//! of a schedule (names exist, times are ordered, no overflow); whether the
//! schedule obeys the rules is the checker's business.
//! Must not import: semantics, the checker, solvers.

use crate::model::{Direction, Instance, Mode, OpId, TensorId};
use crate::units::Ticks;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Index of an event in [`Schedule::events`] (and in the file's `events` array).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EventId(pub u32);

impl EventId {
    pub fn ix(self) -> usize {
        self.0 as usize
    }
}

/// One timed event. Intervals are half-open: `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Event {
    Compute {
        op: OpId,
        start: Ticks,
        end: Ticks,
    },
    Transfer {
        dir: Direction,
        tensor: TensorId,
        start: Ticks,
        end: Ticks,
        /// Offloads only: the GPU copy is released at the end of the transfer.
        delete: bool,
    },
    /// Release the GPU copy at this instant.
    Delete {
        tensor: TensorId,
        at: Ticks,
    },
}

impl Event {
    pub fn start(&self) -> Ticks {
        match *self {
            Event::Compute { start, .. } | Event::Transfer { start, .. } => start,
            Event::Delete { at, .. } => at,
        }
    }
    pub fn end(&self) -> Ticks {
        match *self {
            Event::Compute { end, .. } | Event::Transfer { end, .. } => end,
            Event::Delete { at, .. } => at,
        }
    }
    /// The same compute or transfer moved to start at `t`, its duration kept.
    /// A delete is returned unchanged (it has no duration and no start to
    /// move; compare [`Event::shifted`], which moves every event, deletes
    /// included, *by* an offset).
    pub fn starting_at(&self, t: Ticks) -> Event {
        match *self {
            Event::Compute { .. } | Event::Transfer { .. } => self.shifted(t - self.start()),
            Event::Delete { .. } => *self,
        }
    }
    /// The same event moved by `dt` ticks (cyclic replays shift periods).
    pub fn shifted(&self, dt: Ticks) -> Event {
        let mut e = *self;
        match &mut e {
            Event::Compute { start, end, .. } | Event::Transfer { start, end, .. } => {
                *start = *start + dt;
                *end = *end + dt;
            }
            Event::Delete { at, .. } => *at = *at + dt,
        }
        e
    }
}

/// The state of a cyclic schedule at time 0 of every period. A tensor with a
/// prefetch crossing the boundary is *not* on the GPU at time 0 (its memory is
/// held by the transfer); a tensor with an offload crossing it still is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct CyclicState {
    /// Tensors resident on the GPU, in their current version.
    pub gpu: Vec<TensorId>,
    /// Tensors whose CPU copy holds the current version.
    pub cpu: Vec<TensorId>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// `Some(P)` for cyclic schedules.
    pub period: Option<Ticks>,
    /// Cyclic schedules only.
    pub initial: Option<CyclicState>,
    pub events: Vec<Event>,
}

impl Schedule {
    pub fn one_shot(events: Vec<Event>) -> Schedule {
        Schedule {
            period: None,
            initial: None,
            events,
        }
    }
    pub fn cyclic(period: Ticks, initial: CyclicState, events: Vec<Event>) -> Schedule {
        Schedule {
            period: Some(period),
            initial: Some(initial),
            events,
        }
    }
    /// The last end time of any event (the makespan of a one-shot schedule).
    pub fn last_end(&self) -> Ticks {
        self.events
            .iter()
            .map(|e| e.end())
            .max()
            .unwrap_or(Ticks::ZERO)
    }
}

// ---------------------------------------------------------------------------
// File format (names instead of ids).

/// One event as written in a schedule file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type", deny_unknown_fields)]
pub enum EventFile {
    Compute {
        op: String,
        start: i64,
        /// Defaults to `start + duration`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        end: Option<i64>,
    },
    Offload {
        tensor: String,
        start: i64,
        end: i64,
        /// Release the GPU copy when the transfer ends (default true).
        #[serde(default = "yes")]
        delete: bool,
    },
    Prefetch {
        tensor: String,
        start: i64,
        end: i64,
    },
    Delete {
        tensor: String,
        at: i64,
    },
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CyclicStateFile {
    #[serde(default)]
    pub gpu: Vec<String>,
    #[serde(default)]
    pub cpu: Vec<String>,
}

/// The version of the schedule file format (`docs/FORMATS.md`). A file without
/// `format` reads as [`ScheduleFormat::V1`]; any other value is bad input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum ScheduleFormat {
    /// `"offcert-schedule/1"`: the format described in `docs/FORMATS.md`.
    #[default]
    #[serde(rename = "offcert-schedule/1")]
    V1,
}

impl ScheduleFormat {
    /// The version this build writes.
    pub const CURRENT: ScheduleFormat = ScheduleFormat::V1;
    /// The value of the `format` field.
    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleFormat::V1 => "offcert-schedule/1",
        }
    }
}

/// A schedule file: `{"format": "offcert-schedule/1"?, "period": P?, "initial": {...}?, "events": [...]}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleFile {
    /// The file format's version; missing reads as `offcert-schedule/1`.
    /// Files written by offcert carry it.
    #[serde(default)]
    pub format: ScheduleFormat,
    /// Free text: what produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial: Option<CyclicStateFile>,
    pub events: Vec<EventFile>,
}

/// Why a schedule is malformed for its instance. `field` is a path such as
/// `events[12].tensor`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScheduleError {
    #[error("{field}: unknown {what} `{name}`")]
    UnknownName {
        field: String,
        what: &'static str,
        name: String,
    },
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
}

fn bad(field: String, message: &str) -> ScheduleError {
    ScheduleError::Invalid {
        field,
        message: message.to_string(),
    }
}

/// The instance's tensor and op names.
struct Names<'a> {
    tensors: HashMap<&'a str, TensorId>,
    ops: HashMap<&'a str, OpId>,
}

impl<'a> Names<'a> {
    fn of(inst: &'a Instance) -> Names<'a> {
        let (tensors, ops) = inst.name_maps();
        Names { tensors, ops }
    }

    fn tensor(&self, field: String, name: &str) -> Result<TensorId, ScheduleError> {
        self.tensors
            .get(name)
            .copied()
            .ok_or_else(|| ScheduleError::UnknownName {
                field,
                what: "tensor",
                name: name.to_string(),
            })
    }

    fn op(&self, field: String, name: &str) -> Result<OpId, ScheduleError> {
        self.ops
            .get(name)
            .copied()
            .ok_or_else(|| ScheduleError::UnknownName {
                field,
                what: "operation",
                name: name.to_string(),
            })
    }
}

/// One event of the file, resolved, with every time checked.
fn resolve_event(
    inst: &Instance,
    names: &Names,
    i: usize,
    e: &EventFile,
) -> Result<Event, ScheduleError> {
    let f = |k: &str| format!("events[{i}].{k}");
    let nonneg = |k: &str, v: i64| {
        if v < 0 {
            Err(bad(f(k), "must be >= 0"))
        } else {
            Ok(Ticks(v))
        }
    };
    let ends_before = || Err(bad(f("end"), "ends before it starts"));
    let ev = match e {
        EventFile::Compute { op, start, end } => {
            let id = names.op(f("op"), op)?;
            let start = nonneg("start", *start)?;
            let end = match end {
                Some(e) => nonneg("end", *e)?,
                None => start
                    .checked_add(inst.op(id).duration)
                    .ok_or_else(|| bad(f("start"), "start + duration overflows"))?,
            };
            if end < start {
                return ends_before();
            }
            Event::Compute { op: id, start, end }
        }
        EventFile::Offload {
            tensor: t,
            start,
            end,
            delete,
        } => {
            let ev = Event::Transfer {
                dir: Direction::Offload,
                tensor: names.tensor(f("tensor"), t)?,
                start: nonneg("start", *start)?,
                end: nonneg("end", *end)?,
                delete: *delete,
            };
            if end < start {
                return ends_before();
            }
            ev
        }
        EventFile::Prefetch {
            tensor: t,
            start,
            end,
        } => {
            if end < start {
                return ends_before();
            }
            Event::Transfer {
                dir: Direction::Prefetch,
                tensor: names.tensor(f("tensor"), t)?,
                start: nonneg("start", *start)?,
                end: nonneg("end", *end)?,
                delete: false,
            }
        }
        EventFile::Delete { tensor: t, at } => Event::Delete {
            tensor: names.tensor(f("tensor"), t)?,
            at: nonneg("at", *at)?,
        },
    };
    // Keep all times far from i64::MAX so that shifting by a period and
    // summing durations cannot overflow anywhere downstream.
    if ev.end().0 > MAX_TIME {
        return Err(bad(f("end"), "time exceeds 2^61 ticks"));
    }
    Ok(ev)
}

impl ScheduleFile {
    /// Resolve names against `inst` and check the schedule's form.
    pub fn resolve(&self, inst: &Instance) -> Result<Schedule, ScheduleError> {
        let names = Names::of(inst);
        let cyclic = inst.mode == Mode::Cyclic;
        self.check_form(cyclic)?;
        let initial = match cyclic {
            true => Some(self.resolve_initial(&names)?),
            false => None,
        };
        if self.events.len() > u32::MAX as usize {
            return Err(bad("events".into(), "too many events"));
        }
        let mut events = Vec::with_capacity(self.events.len());
        for (i, e) in self.events.iter().enumerate() {
            events.push(resolve_event(inst, &names, i, e)?);
        }
        if let Some(p) = self.period {
            if p > MAX_TIME {
                return Err(bad("period".into(), "exceeds 2^61 ticks"));
            }
        }
        Ok(Schedule {
            period: self.period.map(Ticks),
            initial,
            events,
        })
    }

    /// A period exactly for cyclic instances; `initial` only for them.
    fn check_form(&self, cyclic: bool) -> Result<(), ScheduleError> {
        match (cyclic, self.period) {
            (true, None) => return Err(bad("period".into(), "a cyclic instance needs a period")),
            (false, Some(_)) => {
                return Err(bad("period".into(), "a one-shot instance takes no period"))
            }
            (true, Some(p)) if p <= 0 => return Err(bad("period".into(), "must be > 0")),
            _ => {}
        }
        if !cyclic && self.initial.is_some() {
            return Err(bad(
                "initial".into(),
                "a one-shot schedule starts from the instance's `initial` placements",
            ));
        }
        Ok(())
    }

    /// The declared boundary state of a cyclic schedule (empty when absent).
    fn resolve_initial(&self, names: &Names) -> Result<CyclicState, ScheduleError> {
        let s = self.initial.clone().unwrap_or_default();
        let mut st = CyclicState::default();
        for (i, n) in s.gpu.iter().enumerate() {
            st.gpu.push(names.tensor(format!("initial.gpu[{i}]"), n)?);
        }
        for (i, n) in s.cpu.iter().enumerate() {
            st.cpu.push(names.tensor(format!("initial.cpu[{i}]"), n)?);
        }
        Ok(st)
    }

    /// The file form of a schedule (names from `inst`).
    pub fn from_schedule(s: &Schedule, inst: &Instance) -> ScheduleFile {
        let tn = |t: TensorId| inst.tensor(t).name.clone();
        let events = s
            .events
            .iter()
            .map(|e| match *e {
                Event::Compute { op, start, end } => EventFile::Compute {
                    op: inst.op(op).name.clone(),
                    start: start.0,
                    end: Some(end.0),
                },
                Event::Transfer {
                    dir: Direction::Offload,
                    tensor,
                    start,
                    end,
                    delete,
                } => EventFile::Offload {
                    tensor: tn(tensor),
                    start: start.0,
                    end: end.0,
                    delete,
                },
                Event::Transfer {
                    dir: Direction::Prefetch,
                    tensor,
                    start,
                    end,
                    ..
                } => EventFile::Prefetch {
                    tensor: tn(tensor),
                    start: start.0,
                    end: end.0,
                },
                Event::Delete { tensor, at } => EventFile::Delete {
                    tensor: tn(tensor),
                    at: at.0,
                },
            })
            .collect();
        ScheduleFile {
            format: ScheduleFormat::CURRENT,
            note: None,
            period: s.period.map(|p| p.0),
            initial: s.initial.as_ref().map(|st| CyclicStateFile {
                gpu: st.gpu.iter().map(|t| tn(*t)).collect(),
                cpu: st.cpu.iter().map(|t| tn(*t)).collect(),
            }),
            events,
        }
    }
}

/// Largest time accepted in a file: 2^61 ticks, so that `t + 2P` never overflows i64.
pub const MAX_TIME: i64 = 1 << 61;

#[cfg(test)]
mod tests {
    use super::*;

    /// `starting_at` moves to an instant (duration kept, deletes stay);
    /// `shifted` moves by an offset (deletes too).
    #[test]
    fn starting_at_moves_to_an_instant_and_keeps_deletes() {
        let c = Event::Compute {
            op: OpId(0),
            start: Ticks(5),
            end: Ticks(9),
        };
        let t = Event::Transfer {
            dir: Direction::Prefetch,
            tensor: TensorId(1),
            start: Ticks(7),
            end: Ticks(10),
            delete: false,
        };
        let d = Event::Delete {
            tensor: TensorId(1),
            at: Ticks(12),
        };
        assert_eq!(
            (
                c.starting_at(Ticks(2)).start(),
                c.starting_at(Ticks(2)).end()
            ),
            (Ticks(2), Ticks(6))
        );
        assert_eq!(
            (
                t.starting_at(Ticks(11)).start(),
                t.starting_at(Ticks(11)).end()
            ),
            (Ticks(11), Ticks(14))
        );
        assert_eq!(d.starting_at(Ticks(3)), d);
        assert_eq!(d.shifted(Ticks(3)).start(), Ticks(15));
    }
}
