//! The independent re-check: a second, deliberately plain implementation of the
//! rules of `models/MODEL.md` (R1–R10), used to cross-check the certified checker
//! on fixtures and on random schedules.
//!
//! Owns: [`recheck`], [`Verdict`], [`Finding`].
//! Must not import: `crate::semantics`, `crate::check` (the whole point is a second
//! route to the same verdict), solvers, heuristics. It reads only `model`,
//! `schedule` and `units`.
//!
//! How it differs from the checker's sweep:
//! - resources: every pair of events on one stream or channel is compared
//!   (O(n²)), on the circle for cyclic schedules, instead of one sorted scan;
//! - memory: after every allocation the GPU (and CPU) memory in use is summed from
//!   scratch over the copies and running operations, instead of a running counter;
//! - "needed later": a scan of every compute event, instead of a binary search;
//! - completeness: the sequence of ops that ran is compared with the order as a
//!   whole; the cyclic boundary state is compared tensor by tensor;
//! - the state is its own small model of copies and versions, written from the
//!   transition table of MODEL.md §2.3 rather than from `semantics`;
//! - "in use" (R10): no list of pins; at a release it scans every unrolled op
//!   and transfer for one whose interval strictly contains the instant.
//!
//! It is quadratic on purpose and meant for small schedules (tests), not for the
//! million-event benchmark.

use crate::model::{ComputeOrder, Device, Direction, Instance, Mode, OpId, ReleaseRule, TensorId};
use crate::schedule::{Event, EventId, Schedule};
use crate::units::{Bytes, Ticks};
use std::collections::BTreeSet;

/// One broken rule, as the re-check sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The rule's name, as `Violation::rule()`: resources, duration, bandwidth,
    /// dependencies, no-data-loss, memory, completeness.
    pub rule: &'static str,
    /// The variant's name, as `Violation::kind()`.
    pub kind: &'static str,
    pub event: Option<EventId>,
    /// Within the period for cyclic schedules.
    pub at: Option<Ticks>,
    pub tensor: Option<TensorId>,
}

/// The re-check's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub valid: bool,
    pub findings: Vec<Finding>,
    /// Highest GPU memory in use (the initial state included).
    pub peak_memory: Bytes,
    /// Offloads whose CPU copy was already current when they started.
    pub redundant_offloads: Vec<EventId>,
}

impl Verdict {
    /// The names of the rules found broken.
    pub fn broken_rules(&self) -> BTreeSet<&'static str> {
        self.findings.iter().map(|f| f.rule).collect()
    }
    /// The kinds of violation found.
    pub fn kinds(&self) -> BTreeSet<&'static str> {
        self.findings.iter().map(|f| f.kind).collect()
    }
}

// The version of a value no copy could hold: what a prefetch with nothing to
// read from lands on the GPU.
const NO_VALUE: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gpu {
    Off,
    /// Memory taken, value arriving at `ready` (a producing op or a prefetch
    /// carrying `carries`).
    Coming {
        ready: Ticks,
    },
    On(u64),
}

#[derive(Clone, Copy, Debug)]
struct Copies {
    gpu: Gpu,
    cpu: Option<u64>,
    offloads_in_flight: u32,
    latest: u64,
    /// Has the value ever been materialised?
    born: bool,
    /// GPU buffers taken so far (the identity of the copy a modifier started on).
    buffers: u64,
    /// An offload's delete waits for the copy's users to end (R10).
    waiting_release: bool,
}

impl Copies {
    fn gpu_current(&self) -> bool {
        self.gpu == Gpu::On(self.latest)
    }
    fn cpu_current(&self) -> bool {
        self.born && self.cpu == Some(self.latest)
    }
}

/// One unrolled copy of an event: the event shifted by `period_index` periods.
#[derive(Clone, Copy, Debug)]
struct Unrolled {
    event: usize,
    period_index: i64,
    ev: Event,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Half {
    /// Transfer completion (release phase, first).
    TransferEnd,
    /// Op completion (release phase, second).
    OpEnd,
    /// Explicit delete (release phase, third).
    Delete,
    /// Op start (allocation phase).
    OpStart,
    /// Transfer start (allocation phase, last).
    TransferStart,
}

impl Half {
    fn allocates(self) -> bool {
        matches!(self, Half::OpStart | Half::TransferStart)
    }
}

#[derive(Clone, Copy, Debug)]
struct Step {
    time: Ticks,
    /// A delete or start at time 0 of its period (R8: it comes after everything
    /// else of the instant where the period before ends).
    opens: bool,
    half: Half,
    /// Zero-length events start and end in this one step.
    instant: bool,
    copy: usize,
}

struct Replay<'a> {
    inst: &'a Instance,
    cyclic: bool,
    period: i64,
    persistent: Vec<bool>,
    copies: Vec<Unrolled>,
    tensors: Vec<Copies>,
    /// Version read by each copy's transfer (set at its start).
    carried: Vec<Option<u64>>,
    /// Per copy of a GPU op: the buffer of each tensor it modifies, at its start.
    modified_buffers: Vec<Vec<(TensorId, u64)>>,
    /// Copies of positive-length ops that have started and not ended.
    running: BTreeSet<usize>,
    /// Copies of positive-length transfers that have started and not ended.
    flying: BTreeSet<usize>,
    findings: Vec<Finding>,
}

/// Re-check `s` against `inst`.
pub fn recheck(inst: &Instance, s: &Schedule) -> Verdict {
    let cyclic = inst.mode == Mode::Cyclic;
    let period = s.period.map_or(0, |p| p.0);
    let mut findings = Vec::new();

    static_rules(inst, s, cyclic, period, &mut findings);
    resources(inst, s, cyclic, period, &mut findings);
    order(inst, s, &mut findings);

    // Persistent tensors: produced by no op at all.
    let mut persistent = vec![true; inst.tensors.len()];
    for op in &inst.ops {
        for t in &op.produces {
            persistent[t.ix()] = false;
        }
    }

    let mut copies = Vec::new();
    for (i, e) in s.events.iter().enumerate() {
        if cyclic {
            for k in [0i64, 1] {
                copies.push(Unrolled {
                    event: i,
                    period_index: k,
                    ev: e.shifted(Ticks(k * period)),
                });
            }
            if e.end().0 > period {
                copies.push(Unrolled {
                    event: i,
                    period_index: -1,
                    ev: e.shifted(Ticks(-period)),
                });
            }
        } else {
            copies.push(Unrolled {
                event: i,
                period_index: 0,
                ev: *e,
            });
        }
    }

    let opens = |u: &Unrolled| cyclic && u.ev.start().0 == u.period_index * period;
    let mut steps = Vec::new();
    for (c, u) in copies.iter().enumerate() {
        let (start, end) = (u.ev.start(), u.ev.end());
        let instant = end == start;
        match u.ev {
            Event::Compute { .. } => {
                steps.push(Step {
                    time: start,
                    opens: opens(u),
                    half: Half::OpStart,
                    instant,
                    copy: c,
                });
                if !instant {
                    steps.push(Step {
                        time: end,
                        opens: false,
                        half: Half::OpEnd,
                        instant,
                        copy: c,
                    });
                }
            }
            Event::Transfer { .. } => {
                steps.push(Step {
                    time: start,
                    opens: opens(u),
                    half: Half::TransferStart,
                    instant,
                    copy: c,
                });
                if !instant {
                    steps.push(Step {
                        time: end,
                        opens: false,
                        half: Half::TransferEnd,
                        instant,
                        copy: c,
                    });
                }
            }
            Event::Delete { .. } => steps.push(Step {
                time: start,
                opens: opens(u),
                half: Half::Delete,
                instant: false,
                copy: c,
            }),
        }
    }
    // Same-instant convention (MODEL.md §2.4): releases, then allocations;
    // zero-length events first within their phase, then file order.
    steps.sort_by_key(|st| {
        (
            st.time,
            st.opens,
            st.half,
            !st.instant,
            copies[st.copy].event,
            copies[st.copy].period_index,
        )
    });

    let mut tensors: Vec<Copies> = vec![
        Copies {
            gpu: Gpu::Off,
            cpu: None,
            offloads_in_flight: 0,
            latest: 0,
            born: false,
            buffers: 0,
            waiting_release: false,
        };
        inst.tensors.len()
    ];
    if cyclic {
        for (k, t) in tensors.iter_mut().enumerate() {
            t.born = persistent[k];
        }
        if let Some(st) = &s.initial {
            for t in &st.gpu {
                tensors[t.ix()].gpu = Gpu::On(0);
                tensors[t.ix()].born = true;
            }
            for t in &st.cpu {
                tensors[t.ix()].cpu = Some(0);
                tensors[t.ix()].born = true;
            }
        }
    } else {
        for (k, t) in inst.tensors.iter().enumerate() {
            if t.initial.on_gpu() {
                tensors[k].gpu = Gpu::On(0);
                tensors[k].born = true;
            }
            if t.initial.on_cpu() {
                tensors[k].cpu = Some(0);
                tensors[k].born = true;
            }
        }
    }
    let boundary = |ts: &[Copies]| -> Vec<(bool, bool)> {
        ts.iter()
            .map(|t| (t.gpu_current(), t.cpu_current()))
            .collect()
    };
    let at_start = boundary(&tensors);

    let mut r = Replay {
        inst,
        cyclic,
        period,
        persistent,
        carried: vec![None; copies.len()],
        modified_buffers: vec![Vec::new(); copies.len()],
        copies,
        tensors,
        running: BTreeSet::new(),
        flying: BTreeSet::new(),
        findings: Vec::new(),
    };
    let mut peak = r.gpu_in_use(None);
    let mut redundant = Vec::new();
    let mut at_boundaries: Vec<Vec<(bool, bool)>> = Vec::new();
    // Per crossing transfer: did the copy of period 0 / 1 read the latest value?
    let mut reads_latest: Vec<[Option<bool>; 2]> = vec![[None, None]; s.events.len()];
    let mut gpu_over_at: Option<Ticks> = None;
    let mut cpu_over_at: Option<Ticks> = None;
    // Memory is judged by the instant (the reported period's), not by the event
    // copy, so its findings are kept apart from the per-copy filter below.
    let mut memory = Vec::new();

    for st in &steps {
        // The boundary state at kP: after every step before kP and the releases
        // at kP, before the allocations at kP.
        while cyclic && at_boundaries.len() < 2 {
            let b = period * (at_boundaries.len() as i64 + 1);
            if st.time.0 > b || (st.time.0 == b && st.opens) {
                at_boundaries.push(boundary(&r.tensors));
            } else {
                break;
            }
        }
        let u = r.copies[st.copy];
        // Which breaches count (MODEL.md §2.6): the second period's, where the
        // completions of transfers crossing 2P are stood for by the first
        // period's completions after P.
        let counts = !cyclic
            || match (u.period_index, st.half == Half::TransferEnd) {
                (1, true) => st.time.0 <= 2 * period,
                (1, false) => true,
                (0, true) => st.time.0 > period,
                _ => false,
            };
        let before = r.findings.len();
        match (u.ev, st.half) {
            (Event::Compute { op, end, .. }, Half::OpStart) => {
                r.op_start(op, st.time, end, st.copy);
                if !st.instant {
                    r.running.insert(st.copy);
                }
            }
            (Event::Compute { op, .. }, _) => {
                r.running.remove(&st.copy);
                r.op_end(op, st.time, st.copy);
            }
            (
                Event::Transfer {
                    dir, tensor, end, ..
                },
                Half::TransferStart,
            ) => {
                let t = r.tensors[tensor.ix()];
                if counts && dir == Direction::Offload {
                    if let Gpu::On(v) = t.gpu {
                        if t.cpu == Some(v) {
                            redundant.push(EventId(u.event as u32));
                        }
                    }
                }
                r.transfer_start(dir, tensor, end, st.copy);
                if !st.instant {
                    r.flying.insert(st.copy);
                }
                let crossing = s.events[u.event].end().0 > period;
                if cyclic && crossing && u.period_index >= 0 {
                    let t = r.tensors[tensor.ix()];
                    reads_latest[u.event][u.period_index as usize] =
                        Some(t.born && r.carried[st.copy] == Some(t.latest));
                }
            }
            (Event::Transfer { dir, tensor, .. }, _) => {
                r.flying.remove(&st.copy);
                r.transfer_end(dir, tensor, st.time, st.copy);
            }
            (Event::Delete { tensor, .. }, _) => {
                if r.tensors[tensor.ix()].gpu == Gpu::Off {
                    r.found("dependencies", "delete_absent", st.copy, st.time, tensor);
                } else {
                    r.release_explicitly(tensor, st.time, st.copy);
                }
            }
        }
        // Rule memory, after every allocation (before a zero-length event's own
        // release); cyclic: in the reported period only.
        let in_window = !cyclic || (st.time.0 >= period && st.time.0 < 2 * period);
        if st.half.allocates() && in_window {
            let extra = (st.instant && st.half == Half::OpStart).then_some(st.copy);
            let used = r.gpu_in_use(extra);
            peak = peak.max(used);
            if used > inst.machine.gpu_capacity.0 as u128 && gpu_over_at != Some(st.time) {
                gpu_over_at = Some(st.time);
                memory.push(Finding {
                    rule: "memory",
                    kind: "memory_exceeded",
                    event: None,
                    at: Some(r.rel(st.time)),
                    tensor: None,
                });
            }
            if let Some(cap) = inst.machine.cpu_capacity {
                if r.cpu_in_use(extra) > cap.0 as u128 && cpu_over_at != Some(st.time) {
                    cpu_over_at = Some(st.time);
                    memory.push(Finding {
                        rule: "memory",
                        kind: "cpu_memory_exceeded",
                        event: None,
                        at: Some(r.rel(st.time)),
                        tensor: None,
                    });
                }
            }
        }
        if st.instant {
            match u.ev {
                Event::Compute { op, .. } => r.op_end(op, st.time, st.copy),
                Event::Transfer { dir, tensor, .. } => {
                    r.transfer_end(dir, tensor, st.time, st.copy)
                }
                Event::Delete { .. } => {}
            }
        }
        r.release_waiting(st.time, st.copy);
        if !counts {
            r.findings.truncate(before);
        }
    }

    if cyclic {
        while at_boundaries.len() < 2 {
            at_boundaries.push(boundary(&r.tensors));
        }
        for k in 0..inst.tensors.len() {
            if at_boundaries.iter().any(|b| b[k] != at_start[k]) {
                r.findings.push(Finding {
                    rule: "completeness",
                    kind: "state_mismatch",
                    event: None,
                    at: None,
                    tensor: Some(TensorId(k as u32)),
                });
            }
        }
        for (i, pair) in reads_latest.iter().enumerate() {
            if let [Some(a), Some(b)] = pair {
                if a != b {
                    r.findings.push(Finding {
                        rule: "steady-state",
                        kind: "not_steady",
                        event: Some(EventId(i as u32)),
                        at: None,
                        tensor: None,
                    });
                }
            }
        }
    }

    findings.append(&mut r.findings);
    findings.append(&mut memory);
    redundant.sort_by_key(|e: &EventId| (s.events[e.ix()].start(), e.0));
    Verdict {
        valid: findings.is_empty(),
        findings,
        peak_memory: Bytes(peak.min(u64::MAX as u128) as u64),
        redundant_offloads: redundant,
    }
}

impl Replay<'_> {
    fn rel(&self, t: Ticks) -> Ticks {
        if self.cyclic {
            Ticks(t.0 - self.period)
        } else {
            t
        }
    }

    fn found(
        &mut self,
        rule: &'static str,
        kind: &'static str,
        copy: usize,
        at: Ticks,
        t: TensorId,
    ) {
        let at = self.rel(at);
        self.findings.push(Finding {
            rule,
            kind,
            event: Some(EventId(self.copies[copy].event as u32)),
            at: Some(at),
            tensor: Some(t),
        });
    }

    /// Is `t`'s value needed after `at`: is the next compute event (by start)
    /// that touches it one that reads it? Persistent tensors of a cyclic
    /// schedule always are.
    fn needed_after(&self, t: TensorId, at: Ticks) -> bool {
        if self.cyclic && self.persistent[t.ix()] {
            return true;
        }
        let mut next: Option<(Ticks, bool)> = None;
        for u in &self.copies {
            if let Event::Compute { op, start, .. } = u.ev {
                // A re-production starting at the release instant follows it
                // (releases before allocations): the released value is dead.
                if start == at && self.inst.op(op).produces.contains(&t) {
                    return false;
                }
                if start <= at {
                    continue;
                }
                let o = self.inst.op(op);
                let reads = o.reads.contains(&t);
                if !reads && !o.produces.contains(&t) {
                    continue;
                }
                next = match next {
                    None => Some((start, reads)),
                    Some((s0, _)) if start < s0 => Some((start, reads)),
                    Some((s0, r0)) if start == s0 => Some((s0, r0 || reads)),
                    keep => keep,
                };
            }
        }
        next.is_some_and(|(_, reads)| reads)
    }

    /// Release the GPU copy of `t` (rule *no data loss*).
    fn release(&mut self, t: TensorId, at: Ticks, copy: usize) {
        let c = self.tensors[t.ix()];
        if c.gpu_current() && !c.cpu_current() && self.needed_after(t, at) {
            self.found("no-data-loss", "data_loss", copy, at, t);
        }
        self.tensors[t.ix()].gpu = Gpu::Off;
        self.tensors[t.ix()].waiting_release = false;
    }

    /// A delete, a consume or an end-free: under the default rule, one that
    /// falls strictly inside a user's interval breaks R10.
    fn release_explicitly(&mut self, t: TensorId, at: Ticks, copy: usize) {
        if self.inst.release == ReleaseRule::AfterEnd && self.in_use(t, at) {
            self.found(
                "released-while-in-use",
                "released_while_in_use",
                copy,
                at,
                t,
            );
        }
        self.release(t, at, copy);
    }

    /// Is `t`'s GPU copy used at `at` by an op or transfer whose interval
    /// strictly contains `at`? Scans every unrolled event.
    fn in_use(&self, t: TensorId, at: Ticks) -> bool {
        self.copies
            .iter()
            .enumerate()
            .any(|(k, u)| u.ev.start() < at && at < u.ev.end() && self.uses_copy(k, t))
    }

    /// Does `u` (an unrolled event) use the GPU copy of `t` while it runs?
    fn uses_copy(&self, k: usize, t: TensorId) -> bool {
        match self.copies[k].ev {
            Event::Compute { op, .. } => {
                let o = self.inst.op(op);
                o.device == Device::Gpu
                    && !o.consumes.contains(&t)
                    && (o.reads.contains(&t) || o.produces.contains(&t) || o.modifies.contains(&t))
            }
            // An offload uses its source only if it found one to read.
            Event::Transfer { tensor, dir, .. } => {
                tensor == t && (dir == Direction::Prefetch || self.carried[k].is_some())
            }
            Event::Delete { .. } => false,
        }
    }

    /// Offload deletes waiting for the copy's users: done once none of them is
    /// still running (its end step processed).
    fn release_waiting(&mut self, at: Ticks, copy: usize) {
        for k in 0..self.tensors.len() {
            let t = TensorId(k as u32);
            let used = self
                .running
                .iter()
                .chain(self.flying.iter())
                .any(|&u| self.uses_copy(u, t));
            if self.tensors[k].waiting_release && !used {
                self.release(t, at, copy);
            }
        }
    }

    fn op_start(&mut self, op: OpId, at: Ticks, end: Ticks, copy: usize) {
        let o = self.inst.op(op);
        for &t in &o.reads {
            let c = self.tensors[t.ix()];
            match o.device {
                Device::Gpu => match c.gpu {
                    Gpu::On(v) if v == c.latest && c.born => {}
                    Gpu::On(_) => self.found("dependencies", "input_stale", copy, at, t),
                    Gpu::Coming { .. } | Gpu::Off => {
                        self.found("dependencies", "input_not_resident", copy, at, t)
                    }
                },
                Device::Cpu => {
                    if !c.cpu_current() {
                        self.found("dependencies", "cpu_input_missing", copy, at, t);
                    }
                }
            }
        }
        if o.device == Device::Gpu {
            for &t in &o.consumes {
                if self.tensors[t.ix()].gpu != Gpu::Off {
                    self.release_explicitly(t, at, copy);
                }
            }
            for &t in &o.produces {
                if self.tensors[t.ix()].gpu != Gpu::Off {
                    self.found("dependencies", "produces_resident", copy, at, t);
                }
                self.tensors[t.ix()].gpu = Gpu::Coming { ready: end };
                self.tensors[t.ix()].buffers += 1;
            }
            self.modified_buffers[copy] = o
                .modifies
                .iter()
                .map(|&t| (t, self.tensors[t.ix()].buffers))
                .collect();
        }
    }

    fn op_end(&mut self, op: OpId, at: Ticks, copy: usize) {
        let o = self.inst.op(op);
        for &t in &o.produces {
            let c = &mut self.tensors[t.ix()];
            if c.born {
                c.latest += 1;
            }
            c.born = true;
            match o.device {
                // The output lands only in a buffer still waiting for it: one
                // released while the op ran is gone.
                Device::Gpu => {
                    if let Gpu::Coming { .. } = c.gpu {
                        c.gpu = Gpu::On(c.latest);
                    }
                }
                Device::Cpu => c.cpu = Some(c.latest),
            }
        }
        for &t in &o.modifies {
            let c = &mut self.tensors[t.ix()];
            c.latest += 1;
            match o.device {
                // Only a copy on the GPU takes the new version: one still
                // coming keeps what its prefetch (or producer) brings, and the
                // update reaches no buffer.
                // Only the buffer the op started on, if it is still there.
                Device::Gpu
                    if matches!(c.gpu, Gpu::On(_))
                        && self.modified_buffers[copy]
                            .iter()
                            .all(|&(m, b)| m != t || b == c.buffers) =>
                {
                    c.gpu = Gpu::On(c.latest)
                }
                Device::Cpu if c.cpu.is_some() => c.cpu = Some(c.latest),
                _ => {}
            }
        }
        if o.device == Device::Gpu {
            for &t in &o.frees {
                if self.tensors[t.ix()].gpu != Gpu::Off {
                    self.release_explicitly(t, at, copy);
                }
            }
        }
    }

    fn transfer_start(&mut self, dir: Direction, t: TensorId, end: Ticks, copy: usize) {
        let at = self.copies[copy].ev.start();
        if !self.inst.tensor(t).transferable {
            self.found("dependencies", "not_transferable", copy, at, t);
        }
        let c = self.tensors[t.ix()];
        match dir {
            Direction::Offload => {
                self.carried[copy] = match c.gpu {
                    Gpu::On(v) => Some(v),
                    _ => {
                        self.found("dependencies", "offload_absent", copy, at, t);
                        None
                    }
                };
                self.tensors[t.ix()].offloads_in_flight += 1;
            }
            Direction::Prefetch => {
                if c.cpu.is_none() {
                    self.found("dependencies", "prefetch_without_cpu_copy", copy, at, t);
                }
                if c.gpu != Gpu::Off {
                    self.found("dependencies", "prefetch_resident", copy, at, t);
                }
                self.carried[copy] = c.cpu;
                self.tensors[t.ix()].gpu = Gpu::Coming { ready: end };
                // A prefetch onto a resident copy overwrites that buffer in place.
                if c.gpu == Gpu::Off {
                    self.tensors[t.ix()].buffers += 1;
                }
            }
        }
    }

    fn transfer_end(&mut self, dir: Direction, t: TensorId, at: Ticks, copy: usize) {
        let carried = self.carried[copy];
        match dir {
            Direction::Offload => {
                let c = &mut self.tensors[t.ix()];
                c.offloads_in_flight = c.offloads_in_flight.saturating_sub(1);
                if let Some(v) = carried {
                    c.cpu = Some(v);
                }
                let delete = matches!(self.copies[copy].ev, Event::Transfer { delete: true, .. });
                if delete && self.tensors[t.ix()].gpu != Gpu::Off {
                    // Default rule: the copy goes when its last user ends.
                    if self.inst.release == ReleaseRule::AfterEnd && self.in_use(t, at) {
                        self.tensors[t.ix()].waiting_release = true;
                    } else {
                        self.release(t, at, copy);
                    }
                }
            }
            Direction::Prefetch => {
                let c = &mut self.tensors[t.ix()];
                if let Gpu::Coming { .. } = c.gpu {
                    c.gpu = Gpu::On(carried.unwrap_or(NO_VALUE));
                }
            }
        }
    }

    /// GPU memory in use, summed from scratch: every GPU copy (present or
    /// arriving) plus the scratch of every running GPU op (and of `instant`, a
    /// zero-length op caught between its start and its end).
    fn gpu_in_use(&self, instant: Option<usize>) -> u128 {
        let mut sum: u128 = 0;
        for (k, c) in self.tensors.iter().enumerate() {
            if c.gpu != Gpu::Off {
                sum += self.inst.tensors[k].size.0 as u128;
            }
        }
        for &u in self.running.iter().chain(instant.iter()) {
            if let Event::Compute { op, .. } = self.copies[u].ev {
                let o = self.inst.op(op);
                if o.device == Device::Gpu {
                    sum += o.temp.0 as u128;
                }
            }
        }
        sum
    }

    /// CPU memory in use: CPU copies, offloads in flight, and running CPU ops'
    /// scratch and not-yet-written outputs.
    fn cpu_in_use(&self, instant: Option<usize>) -> u128 {
        let mut held = vec![false; self.tensors.len()];
        for (k, c) in self.tensors.iter().enumerate() {
            held[k] = c.cpu.is_some() || c.offloads_in_flight > 0;
        }
        let mut sum: u128 = 0;
        for &u in self.running.iter().chain(instant.iter()) {
            if let Event::Compute { op, .. } = self.copies[u].ev {
                let o = self.inst.op(op);
                if o.device == Device::Cpu {
                    sum += o.temp.0 as u128;
                    for t in &o.produces {
                        held[t.ix()] = true;
                    }
                }
            }
        }
        for (k, h) in held.iter().enumerate() {
            if *h {
                sum += self.inst.tensors[k].size.0 as u128;
            }
        }
        sum
    }
}

/// Rules *duration*, *bandwidth* and (cyclic) events inside the period.
fn static_rules(inst: &Instance, s: &Schedule, cyclic: bool, period: i64, out: &mut Vec<Finding>) {
    let bw = inst.machine.bandwidth;
    for (i, e) in s.events.iter().enumerate() {
        let event = Some(EventId(i as u32));
        match *e {
            Event::Compute { op, start, end } => {
                if end.0 - start.0 != inst.op(op).duration.0 {
                    out.push(Finding {
                        rule: "duration",
                        kind: "wrong_duration",
                        event,
                        at: Some(start),
                        tensor: None,
                    });
                }
            }
            Event::Transfer {
                tensor, start, end, ..
            } => {
                // e − s ≥ ⌈|t|·τ / b⌉, in 128-bit integers.
                let size = inst.tensor(tensor).size.0 as u128;
                let least = (size * bw.ticks as u128).div_ceil(bw.bytes as u128);
                let took = end.0 - start.0;
                if took < 0 || (took as u128) < least {
                    out.push(Finding {
                        rule: "bandwidth",
                        kind: "transfer_too_fast",
                        event,
                        at: Some(start),
                        tensor: Some(tensor),
                    });
                }
            }
            Event::Delete { .. } => {}
        }
        if cyclic {
            let outside = (e.start().0 >= period
                && !(matches!(e, Event::Compute { .. })
                    && e.start().0 == period
                    && e.end().0 == period))
                || (matches!(e, Event::Compute { .. }) && e.end().0 > period);
            if outside {
                out.push(Finding {
                    rule: "completeness",
                    kind: "outside_period",
                    event,
                    at: Some(e.start()),
                    tensor: None,
                });
            }
        }
    }
}

/// Rule *resources*: every pair of positive-length intervals on one compute
/// stream or channel must be disjoint; cyclic: on the circle (an interval that
/// crosses P also occupies its image one period earlier).
fn resources(inst: &Instance, s: &Schedule, cyclic: bool, period: i64, out: &mut Vec<Finding>) {
    // (kind, resource, pieces)
    let mut items: Vec<(&'static str, u8, Vec<(i64, i64)>, usize)> = Vec::new();
    for (i, e) in s.events.iter().enumerate() {
        let (kind, res) = match e {
            Event::Compute { op, .. } => ("compute_overlap", inst.op(*op).device as u8),
            Event::Transfer { dir, .. } => {
                ("channel_overlap", 10 + inst.machine.channel(*dir) as u8)
            }
            Event::Delete { .. } => continue,
        };
        let (a, b) = (e.start().0, e.end().0);
        if a == b {
            continue;
        }
        let mut pieces = vec![(a, b)];
        if cyclic && b > period {
            pieces.push((a - period, b - period));
        }
        items.push((kind, res, pieces, i));
    }
    let meet = |p: &[(i64, i64)], q: &[(i64, i64)]| {
        p.iter().any(|x| q.iter().any(|y| x.0 < y.1 && y.0 < x.1))
    };
    for (x, a) in items.iter().enumerate() {
        // An interval longer than the period overlaps itself on the circle.
        if a.2.len() == 2 && meet(&a.2[..1], &a.2[1..]) {
            out.push(Finding {
                rule: "resources",
                kind: a.0,
                event: Some(EventId(a.3 as u32)),
                at: None,
                tensor: None,
            });
        }
        for b in &items[x + 1..] {
            if a.1 == b.1 && meet(&a.2, &b.2) {
                out.push(Finding {
                    rule: "resources",
                    kind: a.0,
                    event: Some(EventId(b.3 as u32)),
                    at: None,
                    tensor: None,
                });
            }
        }
    }
}

/// Rule *completeness* for compute: per device, the ops in order of start
/// (zero-length ones first at a tie, then file order) must be the instance's
/// order; with a free order every required op must run.
fn order(inst: &Instance, s: &Schedule, out: &mut Vec<Finding>) {
    let mut ran: Vec<(Ticks, bool, usize, OpId)> = s
        .events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match *e {
            Event::Compute { op, start, end } => Some((start, end > start, i, op)),
            _ => None,
        })
        .collect();
    ran.sort();
    match &inst.order {
        ComputeOrder::Free => {
            for (k, o) in inst.ops.iter().enumerate() {
                if o.required && !ran.iter().any(|r| r.3.ix() == k) {
                    out.push(Finding {
                        rule: "completeness",
                        kind: "never_ran",
                        event: None,
                        at: None,
                        tensor: None,
                    });
                }
            }
        }
        ComputeOrder::Fixed(seq) => {
            for device in [Device::Gpu, Device::Cpu] {
                let want: Vec<OpId> = seq
                    .iter()
                    .copied()
                    .filter(|o| inst.op(*o).device == device)
                    .collect();
                let got: Vec<OpId> = ran
                    .iter()
                    .map(|r| r.3)
                    .filter(|o| inst.op(*o).device == device)
                    .collect();
                if want == got {
                    continue;
                }
                let kind = if got.len() < want.len() && want.starts_with(&got) {
                    "missing_op"
                } else if got.len() > want.len() && got.starts_with(&want) {
                    "extra_op"
                } else {
                    "out_of_order"
                };
                out.push(Finding {
                    rule: "completeness",
                    kind,
                    event: None,
                    at: None,
                    tensor: None,
                });
            }
        }
    }
}
