//! The picture of a checked schedule: one lane per compute device and per
//! transfer channel, the GPU memory in use from the checker's own replay
//! ([`crate::check::check_with_profile`]), and every violation witness as a
//! numbered red marker where it happens, with the checker's own sentence
//! ([`crate::check::Violation::describe`]) in the legend.
//!
//! Owns: [`schedule_picture`], [`schedule_svg`]. Draws only what the checker
//! reported: no rule is judged here. Must not import: the CLI, solvers.

use super::svg::{self, Bar, Kind, Lane, Marker, Memory, Picture, Place};
use crate::check::{CheckOutcome, MemoryProfile, Report, Violation};
use crate::model::{Channel, Device, Direction, Instance};
use crate::schedule::{Event, EventId, Schedule};
use crate::units::Ticks;

/// Lane indices: compute devices first, then channels, then deletes.
struct Lanes {
    compute: Vec<Device>,
    channels: Vec<Channel>,
}

impl Lanes {
    fn of(inst: &Instance) -> Lanes {
        let mut compute = vec![Device::Gpu];
        if inst.ops.iter().any(|o| o.device == Device::Cpu) {
            compute.push(Device::Cpu);
        }
        Lanes {
            compute,
            channels: inst.machine.channels(),
        }
    }
    fn device(&self, d: Device) -> usize {
        self.compute.iter().position(|x| *x == d).unwrap_or(0)
    }
    fn channel(&self, c: Channel) -> usize {
        self.compute.len() + self.channels.iter().position(|x| *x == c).unwrap_or(0)
    }
    fn deletes(&self) -> usize {
        self.compute.len() + self.channels.len()
    }
    fn of_event(&self, inst: &Instance, e: &Event) -> usize {
        match e {
            Event::Compute { op, .. } => self.device(inst.op(*op).device),
            Event::Transfer { dir, .. } => self.channel(inst.machine.channel(*dir)),
            Event::Delete { .. } => self.deletes(),
        }
    }
}

fn device_name(d: Device) -> &'static str {
    match d {
        Device::Gpu => "GPU compute",
        Device::Cpu => "CPU compute",
    }
}

/// The picture of the schedule the checker judged against `inst`: `outcome`
/// and `profile` must come from one [`crate::check::check_with_profile`] call.
pub fn schedule_picture(
    inst: &Instance,
    outcome: &CheckOutcome,
    profile: &MemoryProfile,
    schedule_name: &str,
) -> Picture {
    let (s, report) = (outcome.schedule(), outcome.report());
    let lanes_ix = Lanes::of(inst);
    let (lanes, t_start, events_end) = event_lanes(inst, s, &lanes_ix);
    let mut t_end = report.makespan.0.max(s.last_end().0).max(events_end);
    for &(t, _) in &profile.samples {
        t_end = t_end.max(t.0);
    }
    for v in &report.violations {
        t_end = t_end.max(v.at().0);
    }
    let t_end = t_end.max(t_start + 1);
    let markers = report
        .violations
        .iter()
        .map(|v| Marker {
            place: place(inst, s, &lanes_ix, v),
            text: format!("[{}:{}] {}", v.rule(), v.kind(), v.describe(inst)),
        })
        .collect();
    Picture {
        heading: heading(inst, report, schedule_name),
        t0: t_start as f64,
        t1: t_end as f64,
        axis: "time (ticks)".into(),
        period: s.period.map(|p| p.0 as f64),
        lanes,
        memory: Some(memory_panel(inst, report, profile)),
        markers,
        footer: report
            .warnings
            .iter()
            .map(|w| format!("warning: {}", w.describe(inst)))
            .collect(),
    }
}

/// One lane per compute device, channel and the deletes, with every event of
/// `s` on its lane; the earliest start (at most 0) and the latest end.
fn event_lanes(inst: &Instance, s: &Schedule, lanes_ix: &Lanes) -> (Vec<Lane>, i64, i64) {
    let mut lanes: Vec<Lane> = lanes_ix
        .compute
        .iter()
        .map(|d| Lane {
            name: device_name(*d).into(),
            ..Lane::default()
        })
        .chain(lanes_ix.channels.iter().map(|c| Lane {
            name: format!("channel {}", c.name()),
            ..Lane::default()
        }))
        .chain(std::iter::once(Lane {
            name: "deletes".into(),
            ..Lane::default()
        }))
        .collect();
    let (mut t_start, mut t_end) = (0i64, i64::MIN);
    for (i, e) in s.events.iter().enumerate() {
        t_start = t_start.min(e.start().0);
        t_end = t_end.max(e.end().0);
        let lane = &mut lanes[lanes_ix.of_event(inst, e)];
        match *e {
            Event::Compute { op, start, end } => lane.bars.push(Bar {
                start: start.0 as f64,
                end: end.0 as f64,
                kind: Kind::Compute,
                label: inst.op(op).name.clone(),
                title: format!("events[{i}]: {} [{start}, {end})", inst.op(op).name),
                wrapped: false,
            }),
            Event::Transfer { .. } => transfer_bars(inst, s.period, i, e, lane),
            Event::Delete { tensor, at } => lane.marks.push(svg::Mark {
                at: at.0 as f64,
                kind: Kind::Delete,
                label: inst.tensor(tensor).name.clone(),
                title: format!("events[{i}]: delete {} at {at}", inst.tensor(tensor).name),
            }),
        }
    }
    (lanes, t_start, t_end)
}

/// The bar of transfer `events[i]` and, in a cyclic schedule, the part past the
/// period, which is the next period's copy seen at 0.
fn transfer_bars(inst: &Instance, period: Option<Ticks>, i: usize, e: &Event, lane: &mut Lane) {
    let Event::Transfer {
        dir,
        tensor,
        start,
        end,
        delete,
    } = *e
    else {
        return;
    };
    let (kind, word) = match dir {
        Direction::Offload => (Kind::Offload, "offload"),
        Direction::Prefetch => (Kind::Prefetch, "prefetch"),
    };
    let name = &inst.tensor(tensor).name;
    let arrow = match dir {
        Direction::Offload => "↑",
        Direction::Prefetch => "↓",
    };
    let del = if dir == Direction::Offload && !delete {
        " (keeps the GPU copy)"
    } else {
        ""
    };
    let title = format!("events[{i}]: {word} of {name} [{start}, {end}){del}");
    lane.bars.push(Bar {
        start: start.0 as f64,
        end: end.0 as f64,
        kind,
        label: format!("{arrow}{name}"),
        title: title.clone(),
        wrapped: false,
    });
    if let Some(p) = period {
        if end > p && start < p {
            lane.bars.push(Bar {
                start: 0.0,
                end: (end.0 - p.0) as f64,
                kind,
                label: format!("{arrow}{name}"),
                title: format!(
                    "{title}: crosses the period boundary; in flight over [0, {}) of every period",
                    end.0 - p.0
                ),
                wrapped: true,
            });
        }
    }
}

fn heading(inst: &Instance, report: &Report, schedule_name: &str) -> Vec<String> {
    let verdict = if report.valid {
        "valid (the exact replay passed)".to_string()
    } else {
        format!("INVALID, {} violation(s)", report.violations.len())
    };
    vec![
        format!("{} ({}) — schedule {schedule_name}", inst.name, inst.family),
        format!(
            "verdict: {verdict}; {} {}; release rule {}; peak GPU memory {} at t={} (capacity {})",
            if report.cyclic { "period" } else { "makespan" },
            report.makespan.human(None),
            report.release,
            report.peak_memory.human(),
            report.peak_at,
            inst.machine.gpu_capacity.human()
        ),
        format!(
            "compute blue; offload ↑ orange; prefetch ↓ green; deletes ▼ purple; red: violations{}",
            if report.cyclic {
                "; pale dashed: a transfer crossing the period boundary, shown again at 0"
            } else {
                ""
            }
        ),
        "memory: at one instant, releases come before allocations (the short dips)".into(),
    ]
}

/// The checker's replay of GPU memory, with the capacity and the reported peak.
fn memory_panel(inst: &Instance, report: &Report, profile: &MemoryProfile) -> Memory {
    Memory {
        title: format!(
            "GPU memory in use (the checker's replay{})",
            if report.cyclic {
                ", one steady period"
            } else {
                ""
            }
        ),
        samples: profile
            .samples
            .iter()
            .map(|(t, b)| (t.0 as f64, b.0))
            .collect(),
        capacity: Some((
            inst.machine.gpu_capacity.0,
            format!("capacity {}", inst.machine.gpu_capacity.human()),
        )),
        peak: Some((
            report.peak_memory.0,
            report.peak_at.0 as f64,
            format!(
                "peak {} at t={}",
                report.peak_memory.human(),
                report.peak_at
            ),
        )),
        others: Vec::new(),
    }
}

/// Where a witness is drawn: its event's lane at its instant, the memory curve
/// for memory witnesses, the end of the device's lane for ops that never run.
fn place(inst: &Instance, s: &Schedule, lanes: &Lanes, v: &Violation) -> Place {
    use Violation::*;
    let ev = |e: &EventId| s.events.get(e.ix());
    let on_event = |e: &EventId, at: Ticks| match ev(e) {
        Some(x) => Place::Lane(lanes.of_event(inst, x), at.0 as f64),
        None => Place::LaneEnd(0),
    };
    let start_of = |e: &EventId| ev(e).map_or(Ticks(0), |x| x.start());
    let p = s.period.unwrap_or(Ticks(0)).0 as f64;
    match v {
        ComputeOverlap {
            device,
            second_start,
            ..
        } => Place::Lane(lanes.device(*device), second_start.0 as f64),
        ChannelOverlap {
            channel,
            second_start,
            ..
        } => Place::Lane(lanes.channel(*channel), second_start.0 as f64),
        WrongDuration { event, start, .. } | OutsidePeriod { event, start, .. } => {
            on_event(event, *start)
        }
        TransferTooFast { event, .. } => on_event(event, start_of(event)),
        NotTransferable { event, at, .. }
        | InputNotResident { event, at, .. }
        | InputStale { event, at, .. }
        | CpuInputMissing { event, at, .. }
        | ProducesResident { event, at, .. }
        | OffloadAbsent { event, at, .. }
        | PrefetchWithoutCpuCopy { event, at, .. }
        | PrefetchResident { event, at, .. }
        | DeleteAbsent { event, at, .. }
        | ReleasedWhileInUse { event, at, .. }
        | DataLoss { event, at, .. } => on_event(event, *at),
        MemoryExceeded { at, used, .. } => Place::Curve(at.0 as f64, used.0),
        CpuMemoryExceeded { at, .. } => Place::MemoryTop(at.0 as f64),
        OutOfOrder { event, .. } | ExtraOp { event, .. } => on_event(event, start_of(event)),
        MissingOp { device, .. } => Place::LaneEnd(lanes.device(*device)),
        NeverRan { op } => Place::LaneEnd(lanes.device(inst.op(*op).device)),
        StateMismatch { .. } => Place::MemoryTop(p),
        NotSteady { event, .. } => match ev(event) {
            Some(x) => Place::Lane(lanes.of_event(inst, x), p),
            None => Place::LaneEnd(0),
        },
        // A rule added later: at the end of the first lane, still numbered.
        #[allow(unreachable_patterns)]
        _ => Place::LaneEnd(0),
    }
}

/// The SVG text of [`schedule_picture`].
pub fn schedule_svg(
    inst: &Instance,
    outcome: &CheckOutcome,
    profile: &MemoryProfile,
    schedule_name: &str,
) -> String {
    svg::render(&schedule_picture(inst, outcome, profile, schedule_name))
}
