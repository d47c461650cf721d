//! Export a schedule as a Chrome-trace JSON (opens in Perfetto and chrome://tracing),
//! shaped like a Kineto trace so that `offcert audit` reads it back.
//!
//! Owns: the track layout and the memory timeline's sampling. One track per
//! resource: the GPU compute stream (tid 7), the copy channels (tid 20 for the
//! shared link or device→host, 21 for host→device), deletes (tid 30), the CPU
//! compute stream (pid 100), and a memory counter track. The memory values come
//! from replaying the schedule through [`crate::semantics::State`] in the
//! checker's same-instant order (releases before allocations; models/MODEL.md
//! §2.4), never from a private copy of the rules.
//! Must not import: solvers, heuristics, bounds.

use super::{ExportMeta, Nanos, TraceError};
use crate::model::{Channel, Device, Direction, Instance, Mode, TensorId};
use crate::schedule::{CyclicStateFile, Event, Schedule};
use crate::semantics::{InFlight, Lookahead, State};
use crate::units::Ticks;
use serde_json::json;
use std::io::Write;

/// GPU compute stream id in exported traces.
pub const COMPUTE_STREAM: i64 = 7;
/// Deletes track.
pub const DELETE_STREAM: i64 = 30;
/// Host process id (CPU ops).
pub const HOST_PID: i64 = 100;

pub fn channel_stream(ch: Channel) -> i64 {
    match ch {
        Channel::Link | Channel::DeviceToHost => 20,
        Channel::HostToDevice => 21,
    }
}

#[derive(Clone, Copy, Debug)]
pub struct ExportOptions {
    /// Nanoseconds per tick (default 1000: one tick is one microsecond).
    pub tick_ns: i64,
    /// Trace time of model time 0, in nanoseconds.
    pub origin_ns: i64,
}

impl Default for ExportOptions {
    fn default() -> ExportOptions {
        ExportOptions {
            tick_ns: 1000,
            origin_ns: 0,
        }
    }
}

/// What was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportSummary {
    pub events: u64,
    pub memory_samples: u64,
    pub peak_memory: i128,
}

/// Release order convention at one instant (the checker's, models/MODEL.md §2.4).
const TRANSFER_END: u8 = 0;
const OP_END: u8 = 1;
const DELETE: u8 = 2;
const TRANSFER_START: u8 = 3;
const OP_START: u8 = 4;

/// The memory timeline does not report breaches, so nothing is "needed later".
struct NoLookahead;
impl Lookahead for NoLookahead {
    fn needed_after(&self, _t: TensorId, _at: Ticks) -> bool {
        false
    }
}

/// GPU memory in use after each instant, replayed through [`State`]: `(time,
/// bytes)` with the first sample at time 0 (or the first event, if earlier). For
/// cyclic schedules, the steady state: periods −1, 0 and 1 are replayed and the
/// samples of period 1 are shifted back to `[0, P)`.
pub fn memory_timeline(inst: &Instance, s: &Schedule) -> Vec<(Ticks, i128)> {
    let cyclic = inst.mode == Mode::Cyclic && s.period.is_some();
    let p = s.period.unwrap_or(Ticks::ZERO);
    let mut copies: Vec<Event> = Vec::new();
    for e in &s.events {
        if cyclic {
            copies.push(*e);
            copies.push(e.shifted(p));
            if e.end() > p {
                copies.push(e.shifted(Ticks(-p.0)));
            }
        } else {
            copies.push(*e);
        }
    }
    let state = match (&s.initial, cyclic) {
        (Some(st), true) => State::from_cyclic(inst, st),
        _ => State::initial(inst),
    };
    let samples = replay(inst, &copies, state);
    if !cyclic {
        return samples;
    }
    let at_p = samples
        .iter()
        .rev()
        .find(|(t, _)| *t <= p)
        .map(|x| x.1)
        .unwrap_or(0);
    let mut out = vec![(Ticks::ZERO, at_p)];
    out.extend(
        samples
            .iter()
            .filter(|(t, _)| *t > p && t.0 < 2 * p.0)
            .map(|(t, v)| (Ticks(t.0 - p.0), *v)),
    );
    out
}

/// Replay `events` from `state` in the checker's same-instant order; the memory
/// in use first (at time 0 or the first action, if earlier) and after each instant.
fn replay(inst: &Instance, events: &[Event], mut state: State) -> Vec<(Ticks, i128)> {
    let mut actions: Vec<(Ticks, u8, usize)> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        match *e {
            Event::Compute { start, end, .. } => {
                actions.push((start, OP_START, i));
                actions.push((end, OP_END, i));
            }
            Event::Transfer { start, end, .. } => {
                actions.push((start, TRANSFER_START, i));
                actions.push((end, TRANSFER_END, i));
            }
            Event::Delete { at, .. } => actions.push((at, DELETE, i)),
        }
    }
    actions.sort_unstable();
    let look = NoLookahead;
    let mut flights: Vec<InFlight> = vec![InFlight { version: None }; events.len()];
    let mut samples: Vec<(Ticks, i128)> = Vec::new();
    let first = actions.first().map(|a| a.0).unwrap_or(Ticks::ZERO);
    samples.push((first.min(Ticks::ZERO), state.gpu_used));
    let mut k = 0;
    while k < actions.len() {
        let now = actions[k].0;
        while k < actions.len() && actions[k].0 == now {
            let (_, phase, i) = actions[k];
            match (events[i], phase) {
                (Event::Compute { op, end, .. }, OP_START) => {
                    state.op_start(inst, op, now, end, &look);
                }
                (Event::Compute { op, .. }, _) => {
                    state.op_end(inst, op, now, &look);
                }
                (
                    Event::Transfer {
                        dir, tensor, end, ..
                    },
                    TRANSFER_START,
                ) => {
                    flights[i] = state.transfer_start(inst, dir, tensor, now, end).0;
                }
                (
                    Event::Transfer {
                        dir,
                        tensor,
                        delete,
                        ..
                    },
                    _,
                ) => {
                    let release = delete && dir == Direction::Offload;
                    state.transfer_end(dir, tensor, flights[i], release, now, &look);
                }
                (Event::Delete { tensor, .. }, _) => {
                    state.delete(tensor, now, &look);
                }
            }
            k += 1;
        }
        samples.push((now, state.gpu_used));
    }
    samples
}

/// Write the Chrome trace of `s` to `w`. `file` names the output in errors.
pub fn write_chrome_trace<W: Write>(
    w: W,
    file: &str,
    inst: &Instance,
    s: &Schedule,
    opts: ExportOptions,
) -> Result<ExportSummary, TraceError> {
    if opts.tick_ns <= 0 {
        return Err(TraceError::Format {
            file: file.into(),
            message: "tick_ns must be > 0".into(),
        });
    }
    let mut out = Out {
        w: std::io::BufWriter::new(w),
        file,
        opts,
        n: 0,
    };
    out.head(inst, s)?;
    out.track_names(inst)?;
    let mut events: Vec<&Event> = s.events.iter().collect();
    events.sort_by_key(|e| (e.start(), e.end()));
    for (k, e) in events.into_iter().enumerate() {
        out.event(inst, e, k as u64 + 1)?;
    }
    let timeline = memory_timeline(inst, s);
    let peak = out.memory(&timeline)?;
    out.w.write_all(b"\n]}\n").map_err(|e| out.write_error(e))?;
    out.w.flush().map_err(|e| out.write_error(e))?;
    Ok(ExportSummary {
        events: out.n,
        memory_samples: timeline.len() as u64,
        peak_memory: peak,
    })
}

/// The trace being written: the output, and how many events it holds so far.
struct Out<'a, W: Write> {
    w: std::io::BufWriter<W>,
    file: &'a str,
    opts: ExportOptions,
    n: u64,
}

impl<W: Write> Out<'_, W> {
    fn write_error(&self, e: std::io::Error) -> TraceError {
        TraceError::Write {
            file: self.file.into(),
            error: e,
        }
    }

    fn format_error(&self, message: String) -> TraceError {
        TraceError::Format {
            file: self.file.into(),
            message,
        }
    }

    /// Model time `t` as trace nanoseconds.
    fn at(&self, t: Ticks) -> Result<Nanos, TraceError> {
        let v = (t.0 as i128) * (self.opts.tick_ns as i128) + self.opts.origin_ns as i128;
        i64::try_from(v).map(Nanos).map_err(|_| {
            self.format_error("a time in nanoseconds overflows 64 bits (lower --tick-ns)".into())
        })
    }

    fn emit(&mut self, v: &Ev) -> Result<(), TraceError> {
        if self.n > 0 {
            self.w.write_all(b",\n").map_err(|e| self.write_error(e))?;
        }
        serde_json::to_writer(&mut self.w, v).map_err(|e| self.format_error(e.to_string()))?;
        self.n += 1;
        Ok(())
    }

    /// The object's fields before `traceEvents`: the device and [`ExportMeta`].
    fn head(&mut self, inst: &Instance, s: &Schedule) -> Result<(), TraceError> {
        let names = |ts: &[TensorId]| -> Vec<String> {
            ts.iter().map(|t| inst.tensor(*t).name.clone()).collect()
        };
        let meta = ExportMeta {
            instance: inst.name.clone(),
            tick_ns: self.opts.tick_ns,
            origin_ns: self.opts.origin_ns,
            period: s.period.map(|p| p.0),
            initial: s.initial.as_ref().map(|st| CyclicStateFile {
                gpu: names(&st.gpu),
                cpu: names(&st.cpu),
            }),
        };
        let head = json!({
            "schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": format!("offcert model GPU ({} B)", inst.machine.gpu_capacity.0)}],
            "offcert": meta,
        });
        let head = serde_json::to_string(&head).map_err(|e| self.format_error(e.to_string()))?;
        // Open the object, keep its fields, and append traceEvents.
        write!(self.w, "{},\n\"traceEvents\": [\n", &head[..head.len() - 1])
            .map_err(|e| self.write_error(e))
    }

    /// Process and thread names of every track.
    fn track_names(&mut self, inst: &Instance) -> Result<(), TraceError> {
        let meta_ev = |pid: i64, tid: i64, what: &'static str, name: String| Ev {
            ph: "M",
            name: what.into(),
            pid,
            tid,
            args: json!({ "name": name }),
            ..Ev::default()
        };
        self.emit(&meta_ev(
            0,
            0,
            "process_name",
            format!("GPU 0: {}", inst.name),
        ))?;
        self.emit(&meta_ev(
            0,
            COMPUTE_STREAM,
            "thread_name",
            "compute (GPU stream)".into(),
        ))?;
        for ch in inst.machine.channels() {
            self.emit(&meta_ev(
                0,
                channel_stream(ch),
                "thread_name",
                format!("channel {}", ch.name()),
            ))?;
        }
        self.emit(&meta_ev(0, DELETE_STREAM, "thread_name", "deletes".into()))?;
        self.emit(&meta_ev(HOST_PID, 0, "process_name", "CPU".into()))?;
        self.emit(&meta_ev(HOST_PID, 1, "thread_name", "compute (CPU)".into()))
    }

    /// One schedule event: its annotation range and, on the GPU, the kernel or
    /// copy inside it, with correlation id `corr`.
    fn event(&mut self, inst: &Instance, e: &Event, corr: u64) -> Result<(), TraceError> {
        let null = serde_json::Value::Null;
        match *e {
            Event::Compute { op, start, end } => {
                let o = inst.op(op);
                let (ts, te) = (self.at(start)?, self.at(end)?);
                let label = format!("compute:{}", o.name);
                match o.device {
                    Device::Gpu => {
                        let range = ("gpu_user_annotation", label, 0, COMPUTE_STREAM);
                        self.emit(&span(range, ts, te, null))?;
                        let args =
                            json!({"device": 0, "stream": COMPUTE_STREAM, "correlation": corr});
                        let kernel = ("kernel", o.name.clone(), 0, COMPUTE_STREAM);
                        self.emit(&span(kernel, ts, te, args))
                    }
                    Device::Cpu => {
                        self.emit(&span(("user_annotation", label, HOST_PID, 1), ts, te, null))
                    }
                }
            }
            Event::Transfer {
                dir,
                tensor,
                start,
                end,
                delete,
            } => {
                let t = inst.tensor(tensor);
                let (ts, te) = (self.at(start)?, self.at(end)?);
                let tid = channel_stream(inst.machine.channel(dir));
                let (label, copy) = match dir {
                    Direction::Offload if delete => (
                        format!("offload:{}", t.name),
                        "Memcpy DtoH (Device -> Pinned)",
                    ),
                    Direction::Offload => (
                        format!("offload-keep:{}", t.name),
                        "Memcpy DtoH (Device -> Pinned)",
                    ),
                    Direction::Prefetch => (
                        format!("prefetch:{}", t.name),
                        "Memcpy HtoD (Pinned -> Device)",
                    ),
                };
                self.emit(&span(("gpu_user_annotation", label, 0, tid), ts, te, null))?;
                let args =
                    json!({"device": 0, "stream": tid, "correlation": corr, "bytes": t.size.0});
                self.emit(&span(("gpu_memcpy", copy.into(), 0, tid), ts, te, args))
            }
            Event::Delete { tensor, at: t } => {
                let ts = self.at(t)?;
                let label = format!("delete:{}", inst.tensor(tensor).name);
                let range = ("gpu_user_annotation", label, 0, DELETE_STREAM);
                self.emit(&span(range, ts, ts, null))
            }
        }
    }

    /// The memory counter track, and the same values as Kineto `[memory]` events
    /// (deltas with the running total) so that the audit reads them back. The peak.
    fn memory(&mut self, timeline: &[(Ticks, i128)]) -> Result<i128, TraceError> {
        let mut prev: i128 = 0;
        let mut peak: i128 = 0;
        for (t, v) in timeline {
            let ts = self.at(*t)?.as_micros_text();
            peak = peak.max(*v);
            let counter = Ev {
                ph: "C",
                name: "GPU memory".into(),
                ts: Some(ts.clone()),
                args: json!({ "allocated": *v as i64 }),
                ..Ev::default()
            };
            self.emit(&counter)?;
            if *v != prev {
                let args = json!({"Device Type": super::CUDA_DEVICE_TYPE, "Device Id": 0, "Bytes": (*v - prev) as i64, "Total Allocated": *v as i64});
                let mem = Ev {
                    ph: "i",
                    s: Some("t"),
                    cat: Some("cpu_instant_event"),
                    name: "[memory]".into(),
                    ts: Some(ts),
                    args,
                    ..Ev::default()
                };
                self.emit(&mem)?;
            }
            prev = *v;
        }
        Ok(peak)
    }
}

/// A complete event `(category, name, pid, tid)` from `ts` to `te`.
fn span(
    (cat, name, pid, tid): (&'static str, String, i64, i64),
    ts: Nanos,
    te: Nanos,
    args: serde_json::Value,
) -> Ev {
    Ev {
        ph: "X",
        cat: Some(cat),
        name,
        pid,
        tid,
        ts: Some(ts.as_micros_text()),
        dur: Some(Nanos(te.0 - ts.0).as_micros_text()),
        args,
        ..Ev::default()
    }
}

/// One Chrome-trace event as written. Times are decimal microseconds written as
/// raw JSON numbers, exactly (never through `f64`).
#[derive(serde::Serialize, Default)]
struct Ev {
    ph: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    name: String,
    pid: i64,
    tid: i64,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "raw_number")]
    ts: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "raw_number")]
    dur: Option<String>,
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    args: serde_json::Value,
}

fn raw_number<S: serde::Serializer>(v: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    use serde::Serialize;
    let text = v.as_deref().unwrap_or("0");
    match serde_json::value::RawValue::from_string(text.to_string()) {
        Ok(raw) => raw.serialize(s),
        Err(e) => Err(serde::ser::Error::custom(e)),
    }
}
