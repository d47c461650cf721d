//! The certified checker: replays a schedule against the rules of
//! [`crate::semantics`] as one event sweep (O(n log n) in the number of events)
//! and returns a [`CheckOutcome`]: a [`Checked`] schedule (only this module can
//! build one) or the [`Rejected`] schedule with every violation and its witness;
//! both carry the full [`Report`] of measurements.
//!
//! Owns: the sweep, the resource-overlap scan, the verdict, [`Checked`],
//! [`Certificate`].
//! Must not import: solvers (`exact`), heuristics, bounds, good_lp, z3. A test
//! (`tests/isolation.rs`) enforces this.
//!
//! Same-instant convention (models/MODEL.md §2.4): at one instant, transfer
//! completions come first, then op completions, then deletes (all releases), then
//! op starts, then transfer starts (allocations). A zero-duration op or transfer
//! starts and ends at once, in the allocation phase (zero-duration ops before
//! others, then in file order). Memory is measured after every allocation, so the
//! instantaneous need of a zero-duration op counts too.

mod digest;
mod profile;
mod violation;

pub use digest::{instance_digest, schedule_digest};

pub use profile::MemoryProfile;
pub use violation::{Violation, Warning};

use crate::model::{Channel, Device, Direction, Instance, Mode, OpId, ReleaseRule, TensorId};
use crate::schedule::{Event, EventId, Schedule};
use crate::semantics::{order, Breach, Holder, InFlight, Lookahead, State};
use crate::units::{Bytes, Ticks};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Proof that a schedule passed the exact replay, carried by [`Checked`]. Only
/// [`check`] builds one, so code that takes `&Certificate` cannot show an
/// unchecked makespan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Certificate {
    makespan: Ticks,
    cyclic: bool,
    release: ReleaseRule,
    instance_sha256: String,
    schedule_sha256: String,
}

impl Certificate {
    /// The validated makespan (one-shot) or period (cyclic).
    pub fn makespan(&self) -> Ticks {
        self.makespan
    }
    pub fn cyclic(&self) -> bool {
        self.cyclic
    }
    /// The release rule the replay applied (R10).
    pub fn release(&self) -> ReleaseRule {
        self.release
    }
    pub fn instance_sha256(&self) -> &str {
        &self.instance_sha256
    }
    pub fn schedule_sha256(&self) -> &str {
        &self.schedule_sha256
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelBusy {
    pub channel: Channel,
    pub busy: Ticks,
}

/// The checker's verdict and measurements.
///
/// Only the checker builds one (`#[non_exhaustive]`: no struct literal outside
/// this crate), and code outside reaches it through [`CheckOutcome`],
/// [`Checked`] or [`Rejected`], each of which hands out `&Report` only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// `valid`: the exact replay passed.
    pub valid: bool,
    pub cyclic: bool,
    /// The release rule the replay applied (R10): every verdict states it.
    pub release: ReleaseRule,
    /// Last event end (one-shot), or the period (cyclic).
    pub makespan: Ticks,
    pub peak_memory: Bytes,
    pub peak_at: Ticks,
    pub channel_busy: Vec<ChannelBusy>,
    /// Time within the makespan (or period) the GPU compute stream is idle.
    pub compute_idle: Ticks,
    pub violations: Vec<Violation>,
    pub warnings: Vec<Warning>,
    /// SHA-256 of the canonical encodings of the compiled instance and the
    /// schedule (models/MODEL.md §6).
    pub instance_sha256: String,
    pub schedule_sha256: String,
}

/// A schedule that passed the exact replay: the schedule, the checker's
/// measurements and its [`Certificate`].
///
/// Only [`check`] builds one, so code that takes a `Checked` (heuristic runs,
/// exact-method results, verdicts, every report and CLI output) cannot show an
/// unchecked schedule or an unchecked figure. Outside this module it cannot be
/// constructed:
///
/// ```compile_fail,E0451
/// use offcert_core::check::{Checked, Report, Certificate};
/// use offcert_core::schedule::Schedule;
/// fn forge(schedule: Schedule, report: Report, certificate: Certificate) -> Checked {
///     Checked { schedule, report, certificate }
/// }
/// ```
///
/// and a `Report` cannot be forged to stand in for one either:
///
/// ```compile_fail,E0639
/// use offcert_core::check::Report;
/// use offcert_core::model::ReleaseRule;
/// use offcert_core::units::{Bytes, Ticks};
/// let r = Report {
///     valid: true, cyclic: false, release: ReleaseRule::AfterEnd, makespan: Ticks(1),
///     peak_memory: Bytes(0), peak_at: Ticks(0), channel_busy: vec![],
///     compute_idle: Ticks(0), violations: vec![], warnings: vec![],
///     instance_sha256: String::new(), schedule_sha256: String::new(),
/// };
/// ```
///
/// The only way in is the checker:
///
/// ```
/// use offcert_core::check::{check, CheckOutcome};
/// use offcert_core::model::Instance;
/// use offcert_core::schedule::Schedule;
/// # fn demo(inst: &Instance, s: &Schedule) {
/// match check(inst, s) {
///     CheckOutcome::Valid(c) => println!("makespan {}", c.makespan()),
///     CheckOutcome::Invalid(r) => println!("{} violations", r.report().violations.len()),
/// }
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    schedule: Schedule,
    report: Report,
    certificate: Certificate,
}

impl Checked {
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }
    /// The checker's measurements (`report().valid` is true).
    pub fn report(&self) -> &Report {
        &self.report
    }
    pub fn certificate(&self) -> &Certificate {
        &self.certificate
    }
    /// The validated makespan (one-shot) or period (cyclic).
    pub fn makespan(&self) -> Ticks {
        self.certificate.makespan
    }
    /// Give up the proof and keep the schedule (e.g. to export it).
    pub fn into_schedule(self) -> Schedule {
        self.schedule
    }
}

/// Serialized as its report.
impl Serialize for Checked {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.report.serialize(s)
    }
}

/// A schedule the checker rejected, with every violation (and the same
/// measurements a valid schedule gets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    schedule: Schedule,
    report: Report,
}

impl Rejected {
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }
    /// The checker's measurements (`report().valid` is false).
    pub fn report(&self) -> &Report {
        &self.report
    }
    pub fn violations(&self) -> &[Violation] {
        &self.report.violations
    }
    pub fn into_schedule(self) -> Schedule {
        self.schedule
    }
}

/// What [`check`] says: a [`Checked`] schedule, or the violations.
///
/// It dereferences to the [`Report`] so that the measurements of either case
/// read the same (`outcome.valid`, `outcome.violations`, `outcome.makespan`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckOutcome {
    Valid(Checked),
    Invalid(Rejected),
}

impl CheckOutcome {
    pub fn report(&self) -> &Report {
        match self {
            CheckOutcome::Valid(c) => &c.report,
            CheckOutcome::Invalid(r) => &r.report,
        }
    }
    pub fn schedule(&self) -> &Schedule {
        match self {
            CheckOutcome::Valid(c) => &c.schedule,
            CheckOutcome::Invalid(r) => &r.schedule,
        }
    }
    pub fn is_valid(&self) -> bool {
        matches!(self, CheckOutcome::Valid(_))
    }
    /// Present exactly when the schedule is valid.
    pub fn certificate(&self) -> Option<&Certificate> {
        self.checked().map(Checked::certificate)
    }
    pub fn checked(&self) -> Option<&Checked> {
        match self {
            CheckOutcome::Valid(c) => Some(c),
            CheckOutcome::Invalid(_) => None,
        }
    }
    pub fn into_checked(self) -> Option<Checked> {
        self.into_result().ok()
    }
    pub fn into_result(self) -> Result<Checked, Rejected> {
        match self {
            CheckOutcome::Valid(c) => Ok(c),
            CheckOutcome::Invalid(r) => Err(r),
        }
    }
    pub fn into_schedule(self) -> Schedule {
        match self {
            CheckOutcome::Valid(c) => c.schedule,
            CheckOutcome::Invalid(r) => r.schedule,
        }
    }
}

impl std::ops::Deref for CheckOutcome {
    type Target = Report;
    fn deref(&self) -> &Report {
        self.report()
    }
}

/// Serialized as its report.
impl Serialize for CheckOutcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.report().serialize(s)
    }
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// SHA-256 of raw bytes, as lowercase hex (used for file digests).
pub fn sha256_bytes(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

// Phases at one instant: releases before allocations.
const TRANSFER_END: u8 = 0;
const OP_END: u8 = 1;
const DELETE: u8 = 2;
const OP_START: u8 = 3;
const TRANSFER_START: u8 = 4;

/// One action of the unrolled replay.
#[derive(Clone, Copy, Debug)]
struct Action {
    time: Ticks,
    /// 1 for a delete or a start at time 0 of a cyclic period (it belongs to the
    /// period that begins at this instant), else 0. At a period boundary the
    /// ending period goes first: its completions, then its zero-duration ops at
    /// P (R8); then the boundary state is read; then the next period's time-0
    /// deletes and starts (a delete at time 0 belongs to the next period, as it
    /// does to the first one, which starts from S₀).
    opens: u8,
    phase: u8,
    /// 0 for a zero-duration event (it starts and ends in this one action), 1 otherwise.
    positive: u8,
    /// Index into the unrolled event list.
    unrolled: u32,
}

/// An event of the unrolled replay: which schedule event, which period copy
/// (-1, 0, 1 for cyclic; 0 for one-shot), and its shifted times.
#[derive(Clone, Copy, Debug)]
struct Copy {
    event: EventId,
    period: i8,
    ev: Event,
}

/// Per-tensor times at which it is read or (re)produced, for "needed later".
struct Uses {
    /// (time, is_read), sorted by time.
    per_tensor: Vec<Vec<(Ticks, bool)>>,
    always: Vec<bool>,
}

impl Lookahead for Uses {
    fn needed_after(&self, t: TensorId, at: Ticks) -> bool {
        if self.always[t.ix()] {
            return true;
        }
        let v = &self.per_tensor[t.ix()];
        // A re-production starting at `at` comes after every release at `at`
        // (releases before allocations): the released value is dead.
        let from = v.partition_point(|(time, _)| *time < at);
        if v[from..]
            .iter()
            .take_while(|(time, _)| *time == at)
            .any(|(_, read)| !*read)
        {
            return false;
        }
        let i = v.partition_point(|(time, _)| *time <= at);
        // Needed if the next use after `at` reads it (a re-production first means
        // the old value is dead).
        v.get(i).is_some_and(|(_, read)| *read)
    }
}

/// Replay `s` against `inst`: a [`Checked`] schedule when every rule holds,
/// else every violation with its witness ([`Rejected`]). Both carry the full
/// measurements.
pub fn check(inst: &Instance, s: &Schedule) -> CheckOutcome {
    let report = replay(inst, s, None);
    outcome(inst, s, report)
}

/// [`check`], also recording the replay's GPU-memory profile.
pub fn check_with_profile(inst: &Instance, s: &Schedule) -> (CheckOutcome, MemoryProfile) {
    let mut p = MemoryProfile::default();
    let report = replay(inst, s, Some(&mut p));
    (outcome(inst, s, report), p)
}

/// The only place a [`Checked`] (and a [`Rejected`]) is built.
fn outcome(inst: &Instance, s: &Schedule, report: Report) -> CheckOutcome {
    match certify(inst, &report) {
        Some(certificate) => CheckOutcome::Valid(Checked {
            schedule: s.clone(),
            report,
            certificate,
        }),
        None => CheckOutcome::Invalid(Rejected {
            schedule: s.clone(),
            report,
        }),
    }
}

/// The certificate of a report without violations.
fn certify(inst: &Instance, r: &Report) -> Option<Certificate> {
    r.valid.then(|| Certificate {
        makespan: r.makespan,
        cyclic: r.cyclic,
        release: inst.release,
        instance_sha256: r.instance_sha256.clone(),
        schedule_sha256: r.schedule_sha256.clone(),
    })
}

/// The exact replay: every violation and the measurements (and, when asked,
/// the GPU-memory profile).
fn replay(inst: &Instance, s: &Schedule, mut profile: Option<&mut MemoryProfile>) -> Report {
    let cyclic = inst.mode == Mode::Cyclic;
    let period = s.period.unwrap_or(Ticks::ZERO);
    let mut violations = Vec::new();
    let mut warnings = Vec::new();

    // --- static rules: duration, bandwidth, period bounds ------------------
    for (i, e) in s.events.iter().enumerate() {
        let event = EventId(i as u32);
        match *e {
            Event::Compute { op, start, end } => {
                let d = inst.op(op).duration;
                if end - start != d {
                    violations.push(Violation::WrongDuration {
                        event,
                        op,
                        start,
                        end,
                        duration: d,
                    });
                }
            }
            Event::Transfer {
                tensor, start, end, ..
            } => {
                let bytes = inst.tensor(tensor).size;
                let bw = inst.machine.bandwidth;
                if !bw.allows(bytes, end - start) {
                    violations.push(Violation::TransferTooFast {
                        event,
                        tensor,
                        bytes,
                        took: end - start,
                        needs_at_least: bw.min_ticks(bytes).unwrap_or(Ticks(i64::MAX)),
                        bandwidth: bw,
                    });
                }
            }
            Event::Delete { .. } => {}
        }
        if cyclic {
            let out = match e {
                // R8: a zero-duration op may sit at P itself, at the end of its period.
                Event::Compute { start, end, .. } => {
                    (*start >= period && !(*start == period && *end == period)) || *end > period
                }
                _ => e.start() >= period,
            };
            if out {
                violations.push(Violation::OutsidePeriod {
                    event,
                    start: e.start(),
                    end: e.end(),
                    period,
                });
            }
        }
    }

    // --- the unrolled event list -------------------------------------------
    let mut copies: Vec<Copy> = Vec::with_capacity(if cyclic {
        2 * s.events.len() + 8
    } else {
        s.events.len()
    });
    for (i, e) in s.events.iter().enumerate() {
        let event = EventId(i as u32);
        if cyclic {
            for k in 0..2i8 {
                copies.push(Copy {
                    event,
                    period: k,
                    ev: e.shifted(Ticks(period.0 * k as i64)),
                });
            }
            if e.end() > period {
                copies.push(Copy {
                    event,
                    period: -1,
                    ev: e.shifted(Ticks(-period.0)),
                });
            }
        } else {
            copies.push(Copy {
                event,
                period: 0,
                ev: *e,
            });
        }
    }

    // --- rule resources: one op per stream, one transfer per channel ---------
    overlaps(inst, s, &mut violations);

    // --- rule completeness: the order of ops -------------------------------
    let mut runs: Vec<(usize, OpId, Ticks, bool)> = s
        .events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Event::Compute { op, start, end } => Some((i, *op, *start, end > start)),
            _ => None,
        })
        .collect();
    // The same order as the sweep: by start, zero-duration ops first, then file order.
    runs.sort_by_key(|r| (r.2, r.3, r.0));
    let runs: Vec<(usize, OpId)> = runs.into_iter().map(|(i, o, _, _)| (i, o)).collect();
    for b in order::check_order(inst, &runs) {
        violations.push(match b {
            order::OrderBreach::OutOfOrder {
                device,
                position,
                expected,
                found,
                found_index,
            } => Violation::OutOfOrder {
                device,
                position,
                expected,
                found,
                event: EventId(found_index as u32),
            },
            order::OrderBreach::Missing {
                device,
                position,
                expected,
            } => Violation::MissingOp {
                device,
                position,
                expected,
            },
            order::OrderBreach::Extra {
                device,
                position,
                found,
                found_index,
            } => Violation::ExtraOp {
                device,
                position,
                found,
                event: EventId(found_index as u32),
            },
            order::OrderBreach::NeverRan { op } => Violation::NeverRan { op },
        });
    }

    // --- the sweep ----------------------------------------------------------
    let uses = uses(inst, &copies, cyclic);
    let opens = |c: &Copy, at: Ticks| u8::from(cyclic && at.0 == period.0 * c.period as i64);
    let mut actions: Vec<Action> = Vec::with_capacity(copies.len() * 2);
    for (u, c) in copies.iter().enumerate() {
        let u = u as u32;
        let positive = u8::from(c.ev.end() > c.ev.start());
        match c.ev {
            Event::Compute { start, end, .. } => {
                actions.push(Action {
                    time: start,
                    opens: opens(c, start),
                    phase: OP_START,
                    positive,
                    unrolled: u,
                });
                if positive == 1 {
                    actions.push(Action {
                        time: end,
                        opens: 0,
                        phase: OP_END,
                        positive,
                        unrolled: u,
                    });
                }
            }
            Event::Transfer { start, end, .. } => {
                actions.push(Action {
                    time: start,
                    opens: opens(c, start),
                    phase: TRANSFER_START,
                    positive,
                    unrolled: u,
                });
                if positive == 1 {
                    actions.push(Action {
                        time: end,
                        opens: 0,
                        phase: TRANSFER_END,
                        positive,
                        unrolled: u,
                    });
                }
            }
            Event::Delete { at, .. } => actions.push(Action {
                time: at,
                opens: opens(c, at),
                phase: DELETE,
                positive: 1,
                unrolled: u,
            }),
        }
    }
    actions.sort_unstable_by_key(|a| (a.time, a.opens, a.phase, a.positive, a.unrolled));

    let initial = match (&s.initial, cyclic) {
        (Some(st), true) => State::from_cyclic(inst, st),
        _ => State::initial(inst),
    };
    let start_boundary = initial.boundary();
    let mut state = initial;
    let mut flights: Vec<Option<InFlight>> = vec![None; copies.len()];
    // For NotSteady: did a crossing transfer read the latest value, per period copy?
    let mut reads_latest: Vec<[Option<bool>; 2]> = if cyclic {
        vec![[None, None]; s.events.len()]
    } else {
        vec![]
    };
    // Running ops (unrolled index) for memory witnesses.
    let mut running: Vec<u32> = Vec::new();
    let mut snapshots: Vec<(Vec<bool>, Vec<bool>)> = Vec::new();
    let (win_lo, win_hi) = if cyclic {
        (period, Ticks(2 * period.0))
    } else {
        (Ticks(i64::MIN), Ticks(i64::MAX))
    };
    let mut peak = (state.gpu_bytes(), Ticks::ZERO);
    if let Some(p) = profile.as_mut() {
        p.push(Ticks::ZERO, state.gpu_used);
    }
    let cap = inst.machine.gpu_capacity.0 as i128;
    let cpu_cap = inst.machine.cpu_capacity.map(|c| c.0 as i128);
    let rel = |t: Ticks| if cyclic { Ticks(t.0 - period.0) } else { t };

    let mut i = 0;
    while i < actions.len() {
        let now = actions[i].time;
        // Snapshot the cyclic boundary states at P and 2P: after the releases of
        // that instant, before its allocations.
        let mut j = i;
        while j < actions.len() && actions[j].time == now {
            j += 1;
        }
        let mut exceeded_now = false;
        let mut cpu_exceeded_now = false;
        // Boundaries strictly before this instant: every action up to them is done.
        while cyclic && snapshots.len() < 2 && now > Ticks(period.0 * (snapshots.len() as i64 + 1))
        {
            snapshots.push(state.boundary());
        }
        for a in &actions[i..j] {
            // A boundary at this very instant: after the ending period's completions.
            if cyclic && a.opens == 1 {
                while snapshots.len() < 2 && now >= Ticks(period.0 * (snapshots.len() as i64 + 1)) {
                    snapshots.push(state.boundary());
                }
            }
            let c = copies[a.unrolled as usize];
            // Which copy's breaches belong to the reported period (models/MODEL.md
            // §2.6): copy 1, except the ends of its transfers that cross 2P, which
            // copy 0's crossing transfers stand for.
            let is_end = a.phase == TRANSFER_END;
            let report = !cyclic
                || match (c.period, is_end) {
                    (1, true) => a.time <= win_hi,
                    (1, false) => true,
                    (0, true) => a.time > win_lo,
                    _ => false,
                };
            let event = c.event;
            let at = rel(a.time);
            let mut breaches: Vec<Breach>;
            let mut op_of = None;
            let mut allocated = false;
            match (c.ev, a.phase) {
                (Event::Compute { op, end, .. }, OP_START) => {
                    op_of = Some(op);
                    breaches = state.op_start(inst, op, a.time, end, &uses);
                    allocated = true;
                    if a.positive == 1 {
                        running.push(a.unrolled);
                    }
                }
                (Event::Compute { op, .. }, _) => {
                    op_of = Some(op);
                    breaches = state.op_end(inst, op, a.time, &uses);
                    if let Some(p) = running.iter().position(|u| *u == a.unrolled) {
                        running.swap_remove(p);
                    }
                }
                (
                    Event::Transfer {
                        dir,
                        tensor,
                        end,
                        start,
                        ..
                    },
                    TRANSFER_START,
                ) => {
                    if dir == Direction::Offload && state.offload_is_redundant(tensor) && report {
                        warnings.push(Warning::RedundantOffload {
                            event,
                            tensor,
                            bytes: inst.tensor(tensor).size,
                            ticks: end - start,
                        });
                    }
                    let (fl, b) = state.transfer_start(inst, dir, tensor, a.time, end);
                    if cyclic && c.period >= 0 && s.events[event.ix()].end() > period {
                        let ts = state.tensor(tensor);
                        reads_latest[event.ix()][c.period as usize] =
                            Some(fl.version == Some(ts.latest) && ts.exists);
                    }
                    flights[a.unrolled as usize] = Some(fl);
                    breaches = b;
                    allocated = true;
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
                    let fl = flights[a.unrolled as usize]
                        .take()
                        .unwrap_or(InFlight { version: None });
                    breaches = state.transfer_end(
                        dir,
                        tensor,
                        fl,
                        delete && dir == Direction::Offload,
                        a.time,
                        &uses,
                    );
                }
                (Event::Delete { tensor, .. }, _) => {
                    breaches = state.delete(tensor, a.time, &uses);
                }
            }
            // Rule memory: measured after every allocation (before a zero-duration
            // event's own release), once the instant's releases are done.
            if allocated && now >= win_lo && now < win_hi {
                let used = state.gpu_used;
                if let Some(p) = profile.as_mut() {
                    p.push(rel(now), used);
                }
                if used > peak.0 .0 as i128 {
                    peak = (Bytes(used as u64), rel(now));
                }
                if used > cap && !exceeded_now {
                    exceeded_now = true;
                    let resident: Vec<TensorId> = state
                        .tensors
                        .iter()
                        .enumerate()
                        .filter(|(_, t)| t.on_gpu())
                        .map(|(k, _)| TensorId(k as u32))
                        .collect();
                    // GPU ops only: their scratch is what counts against the GPU.
                    let on_gpu = |e: &Event| matches!(e, Event::Compute { op, .. } if inst.op(*op).device == Device::Gpu);
                    let mut run: Vec<EventId> = running
                        .iter()
                        .map(|u| copies[*u as usize])
                        .filter(|c| on_gpu(&c.ev))
                        .map(|c| c.event)
                        .collect();
                    if a.positive == 0 && a.phase == OP_START && on_gpu(&c.ev) {
                        run.push(event);
                    }
                    run.sort();
                    violations.push(Violation::MemoryExceeded {
                        at: rel(now),
                        used: Bytes(used as u64),
                        capacity: inst.machine.gpu_capacity,
                        resident,
                        running: run,
                    });
                }
                if let Some(cc) = cpu_cap {
                    if state.cpu_used > cc && !cpu_exceeded_now {
                        cpu_exceeded_now = true;
                        violations.push(Violation::CpuMemoryExceeded {
                            at: rel(now),
                            used: Bytes(state.cpu_used as u64),
                            capacity: Bytes(cc as u64),
                        });
                    }
                }
            }
            // A zero-duration event ends in the same action, right after its start.
            if a.positive == 0 {
                match c.ev {
                    Event::Compute { op, .. } => {
                        breaches.extend(state.op_end(inst, op, a.time, &uses))
                    }
                    Event::Transfer {
                        dir,
                        tensor,
                        delete,
                        ..
                    } => {
                        let fl = flights[a.unrolled as usize]
                            .take()
                            .unwrap_or(InFlight { version: None });
                        breaches.extend(state.transfer_end(
                            dir,
                            tensor,
                            fl,
                            delete && dir == Direction::Offload,
                            a.time,
                            &uses,
                        ));
                    }
                    Event::Delete { .. } => {}
                }
            }
            if let Some(p) = profile.as_mut() {
                if (!allocated || a.positive == 0) && now >= win_lo && now < win_hi {
                    p.push(rel(now), state.gpu_used);
                }
            }
            if report {
                for b in breaches {
                    violations.push(to_violation(b, event, at, op_of, s, &rel));
                }
            }
        }
        i = j;
    }

    if cyclic {
        while snapshots.len() < 2 {
            snapshots.push(state.boundary());
        }
        let (g0, c0) = &start_boundary;
        let mut flagged = vec![false; inst.tensors.len()];
        for (g1, c1) in &snapshots {
            for k in 0..inst.tensors.len() {
                if !flagged[k] && (g0[k] != g1[k] || c0[k] != c1[k]) {
                    flagged[k] = true;
                    violations.push(Violation::StateMismatch {
                        tensor: TensorId(k as u32),
                        start_gpu: g0[k],
                        start_cpu: c0[k],
                        end_gpu: g1[k],
                        end_cpu: c1[k],
                    });
                }
            }
        }
        for (k, r) in reads_latest.iter().enumerate() {
            if let [Some(a), Some(b)] = r {
                if a != b {
                    if let Event::Transfer { tensor, .. } = s.events[k] {
                        violations.push(Violation::NotSteady {
                            event: EventId(k as u32),
                            tensor,
                        });
                    }
                }
            }
        }
    }

    violations.sort_by_key(|v| v.at());
    warnings.sort_by_key(|w| match w {
        Warning::RedundantOffload { event, .. } => s.events[event.ix()].start(),
    });

    // --- measurements ---------------------------------------------------------
    let makespan = if cyclic { period } else { s.last_end() };
    let circle = if cyclic { Some(period) } else { None };
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

    let instance_sha256 = instance_digest(inst);
    let schedule_sha256 = schedule_digest(s);
    let valid = violations.is_empty();
    Report {
        valid,
        cyclic,
        release: inst.release,
        makespan,
        peak_memory: peak.0,
        peak_at: peak.1,
        channel_busy,
        compute_idle,
        violations,
        warnings,
        instance_sha256,
        schedule_sha256,
    }
}

/// A breach as a witness: `rel` maps replay ticks into the period.
fn to_violation(
    b: Breach,
    event: EventId,
    at: Ticks,
    op: Option<OpId>,
    s: &Schedule,
    rel: &dyn Fn(Ticks) -> Ticks,
) -> Violation {
    let op = op.unwrap_or(OpId(0));
    match b {
        Breach::InputNotResident { tensor, ready_at } => Violation::InputNotResident {
            event,
            at,
            op,
            tensor,
            // In the period, as `at` is.
            ready_at: ready_at.map(rel),
        },
        Breach::InputStale {
            tensor,
            held,
            latest,
        } => Violation::InputStale {
            event,
            at,
            op,
            tensor,
            held,
            latest,
        },
        Breach::CpuInputMissing {
            tensor,
            held,
            latest,
        } => Violation::CpuInputMissing {
            event,
            at,
            op,
            tensor,
            held,
            latest,
        },
        Breach::ProducesResident { tensor } => Violation::ProducesResident {
            event,
            at,
            op,
            tensor,
        },
        Breach::NotTransferable { tensor } => Violation::NotTransferable { event, at, tensor },
        Breach::OffloadAbsent { tensor } => Violation::OffloadAbsent { event, at, tensor },
        Breach::PrefetchWithoutCpuCopy { tensor } => {
            Violation::PrefetchWithoutCpuCopy { event, at, tensor }
        }
        Breach::PrefetchResident { tensor } => Violation::PrefetchResident { event, at, tensor },
        Breach::DeleteAbsent { tensor } => Violation::DeleteAbsent { event, at, tensor },
        Breach::DataLoss {
            tensor,
            gpu,
            cpu,
            latest,
        } => Violation::DataLoss {
            event,
            at,
            tensor,
            gpu_version: gpu,
            cpu_version: cpu,
            latest,
        },
        Breach::ReleasedWhileInUse {
            tensor,
            holder,
            from,
            until,
        } => Violation::ReleasedWhileInUse {
            event,
            at,
            tensor,
            holder,
            holder_event: locate_holder(s, holder, tensor, rel(from), rel(until)),
            from: rel(from),
            until: rel(until),
        },
    }
}

/// The schedule event that holds `tensor` from `from` (a time in the period for
/// cyclic schedules, possibly negative for a transfer crossing in from the
/// period before): for the witness of rule R10.
fn locate_holder(
    s: &Schedule,
    holder: Holder,
    tensor: TensorId,
    from: Ticks,
    until: Ticks,
) -> Option<EventId> {
    // The same start (up to whole periods) and the same length: two runs of one
    // op that start together are told apart by their ends.
    let same = |a: Ticks, b: Ticks| {
        b - a == until - from
            && match s.period {
                Some(p) if p.0 > 0 => (a.0 - from.0).rem_euclid(p.0) == 0,
                _ => a == from,
            }
    };
    s.events
        .iter()
        .position(|e| match (*e, holder) {
            (Event::Compute { op, start, end }, Holder::Op(h)) => op == h && same(start, end),
            (
                Event::Transfer {
                    tensor: t,
                    dir,
                    start,
                    end,
                    ..
                },
                Holder::Transfer(d),
            ) => t == tensor && dir == d && same(start, end),
            _ => false,
        })
        .map(|i| EventId(i as u32))
}

/// Reads and productions per tensor over the unrolled ops, for "needed later".
fn uses(inst: &Instance, copies: &[Copy], cyclic: bool) -> Uses {
    let mut per_tensor: Vec<Vec<(Ticks, bool)>> = vec![Vec::new(); inst.tensors.len()];
    for c in copies {
        if let Event::Compute { op, start, .. } = c.ev {
            let o = inst.op(op);
            for t in &o.reads {
                per_tensor[t.ix()].push((start, true));
            }
            for t in &o.produces {
                per_tensor[t.ix()].push((start, false));
            }
        }
    }
    for v in &mut per_tensor {
        // At one instant a read comes before a re-production (an op cannot read
        // what it produces, so a tie is between different ops).
        v.sort_unstable_by_key(|(t, read)| (*t, !*read));
    }
    let always = if cyclic {
        inst.persistent()
    } else {
        vec![false; inst.tensors.len()]
    };
    Uses { per_tensor, always }
}

/// Rule *resources*: report each pair (earlier interval still running, later one
/// starting) on one stream or channel. Cyclic intervals are seen on the circle:
/// one that crosses the period end is also tried one period earlier.
fn overlaps(inst: &Instance, s: &Schedule, out: &mut Vec<Violation>) {
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
