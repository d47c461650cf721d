//! The independent re-check: a second, deliberately plain implementation of the
//! rules of `models/MODEL.md` (R1–R13), used to cross-check the certified checker
//! on fixtures and on random schedules.
//!
//! Owns: [`recheck`], [`Verdict`], [`Finding`].
//! Must not import: the checker and the rules (`offcert-core`'s `check` and
//! `semantics`: the whole point is a second route to the same verdict), solvers,
//! heuristics. It reads only `offcert-model` (`model`, `schedule`, `units`): its
//! Cargo.toml names nothing else, so Cargo enforces it.
//!
//! How it differs from the checker's sweep:
//! - resources: every pair of events on one stream or channel is compared
//!   (O(n²)), on the circle for cyclic schedules, instead of one sorted scan;
//! - memory: after every allocation the GPU and CPU memory in use (and their
//!   peaks) are summed from scratch over the copies, transfers and running
//!   operations (MODEL.md §2.2: a tensor held on the CPU counts once), instead of
//!   a running counter;
//! - "needed later": a scan of every compute event, instead of a binary search;
//! - completeness: the sequence of ops that ran is compared with the order as a
//!   whole; the cyclic boundary state is compared tensor by tensor;
//! - groups and slots (R11, R12): runs counted per group; the sequence of
//!   slotted GPU runs compared with the slots as a whole;
//! - precedence (R13): every predecessor run is walked period by period to its
//!   last copy before the run, instead of a closed-form shift;
//! - the state is its own small model of copies and versions, written from the
//!   transition table of MODEL.md §2.3 rather than from `semantics`;
//! - "in use" (R10): no list of pins; at a release it scans every unrolled op
//!   and transfer for one whose interval strictly contains the instant;
//! - allocators (MODEL.md §2.8): `va:m_c` sums the rounded sizes from scratch;
//!   `caching` is its own plain list of blocks (`allocator.rs`), fed the
//!   allocations and frees of §2.8 at the transitions below.
//!
//! It is quadratic on purpose and meant for small schedules (tests), not for the
//! million-event benchmark.
#![forbid(unsafe_code)]

mod allocator;

use allocator::Heap;
use offcert_model::model::{
    Allocator, ComputeOrder, Device, Direction, GroupId, Instance, Mode, Multiplicity, OpId,
    ReleaseRule, TensorId,
};
use offcert_model::schedule::{Event, EventId, Schedule};
use offcert_model::units::{Bytes, Ticks};
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
    /// Highest CPU memory in use (MODEL.md §2.2, mem_CPU): the initial state
    /// included, then after every allocation (cyclic: in the reported period).
    pub peak_cpu_memory: Bytes,
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

/// How an op writes a tensor (MODEL.md §1: P(o) and W(o)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Write {
    Production,
    Modification,
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
    s: &'a Schedule,
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
    /// Highest GPU memory in use (the initial state included).
    peak: u128,
    /// Highest CPU memory in use (the initial state included).
    cpu_peak: u128,
    /// Offloads whose CPU copy was already current when they started.
    redundant: Vec<EventId>,
    /// Whether each tensor's GPU and CPU copies are current: at the start, and at
    /// P and 2P (cyclic).
    at_start: Vec<(bool, bool)>,
    at_boundaries: Vec<Vec<(bool, bool)>>,
    /// Per crossing transfer: did the copy of period 0 / 1 read the latest value?
    reads_latest: Vec<[Option<bool>; 2]>,
    /// The instants memory was last found exceeded (once per instant).
    gpu_over_at: Option<Ticks>,
    cpu_over_at: Option<Ticks>,
    /// Memory is judged by the instant (the reported period's), not by the
    /// event copy, so its findings are kept apart from the per-copy filter.
    memory: Vec<Finding>,
    /// The `caching` allocator (MODEL.md §2.8), with the address of each
    /// tensor's GPU block and of each op copy's scratch block.
    heap: Option<Heap>,
    block_of: Vec<Option<u64>>,
    temp_of: Vec<Option<u64>>,
}

/// Re-check `s` against `inst`.
pub fn recheck(inst: &Instance, s: &Schedule) -> Verdict {
    let cyclic = inst.mode == Mode::Cyclic;
    let period = s.period.map_or(0, |p| p.0);
    let mut findings = Vec::new();

    static_rules(inst, s, cyclic, period, &mut findings);
    resources(inst, s, cyclic, period, &mut findings);
    order(inst, s, &mut findings);

    let mut r = Replay::new(inst, s, cyclic, period);
    for st in &steps(&r.copies, cyclic, period) {
        r.step(st);
    }
    if cyclic {
        r.steady_state();
    }
    findings.append(&mut r.findings);
    findings.append(&mut r.memory);
    r.redundant
        .sort_by_key(|e: &EventId| (s.events[e.ix()].start(), e.0));
    Verdict {
        valid: findings.is_empty(),
        findings,
        peak_memory: Bytes(r.peak.min(u64::MAX as u128) as u64),
        peak_cpu_memory: Bytes(r.cpu_peak.min(u64::MAX as u128) as u64),
        redundant_offloads: r.redundant,
    }
}

/// Persistent tensors: produced by no op at all.
fn persistent(inst: &Instance) -> Vec<bool> {
    let mut persistent = vec![true; inst.tensors.len()];
    for op in &inst.ops {
        for t in &op.produces {
            persistent[t.ix()] = false;
        }
    }
    persistent
}

/// Every event once (one-shot), or twice plus once a period earlier when it
/// crosses the period end (cyclic).
fn unroll(s: &Schedule, cyclic: bool, period: i64) -> Vec<Unrolled> {
    let mut copies = Vec::new();
    for (i, e) in s.events.iter().enumerate() {
        if !cyclic {
            copies.push(Unrolled {
                event: i,
                period_index: 0,
                ev: *e,
            });
            continue;
        }
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
    }
    copies
}

/// The steps of every copy, in the same-instant convention (MODEL.md §2.4):
/// releases, then allocations; zero-length events first within their phase,
/// then file order.
fn steps(copies: &[Unrolled], cyclic: bool, period: i64) -> Vec<Step> {
    let opens = |u: &Unrolled| cyclic && u.ev.start().0 == u.period_index * period;
    let mut steps = Vec::new();
    for (c, u) in copies.iter().enumerate() {
        let (start, end) = (u.ev.start(), u.ev.end());
        let instant = end == start;
        let (first, second) = match u.ev {
            Event::Compute { .. } => (Half::OpStart, Some(Half::OpEnd)),
            Event::Transfer { .. } => (Half::TransferStart, Some(Half::TransferEnd)),
            Event::Delete { .. } => (Half::Delete, None),
        };
        steps.push(Step {
            time: start,
            opens: opens(u),
            half: first,
            // A delete is never "zero-length": it has no end step.
            instant: instant && second.is_some(),
            copy: c,
        });
        if let (Some(half), false) = (second, instant) {
            steps.push(Step {
                time: end,
                opens: false,
                half,
                instant,
                copy: c,
            });
        }
    }
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
    steps
}

/// The copies at the start: S₀ of the instance (one-shot), or the schedule's
/// declared boundary state, persistent tensors born (cyclic).
fn start_state(inst: &Instance, s: &Schedule, cyclic: bool, persistent: &[bool]) -> Vec<Copies> {
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
    let mut place = |k: usize, gpu: bool, cpu: bool| {
        if gpu {
            tensors[k].gpu = Gpu::On(0);
            tensors[k].born = true;
        }
        if cpu {
            tensors[k].cpu = Some(0);
            tensors[k].born = true;
        }
    };
    if cyclic {
        if let Some(st) = &s.initial {
            for t in &st.gpu {
                place(t.ix(), true, false);
            }
            for t in &st.cpu {
                place(t.ix(), false, true);
            }
        }
        for (k, t) in tensors.iter_mut().enumerate() {
            t.born |= persistent[k];
        }
    } else {
        for (k, t) in inst.tensors.iter().enumerate() {
            place(k, t.initial.on_gpu(), t.initial.on_cpu());
        }
    }
    tensors
}

/// Whether each tensor's GPU and CPU copies hold the latest value.
fn boundary(ts: &[Copies]) -> Vec<(bool, bool)> {
    ts.iter()
        .map(|t| (t.gpu_current(), t.cpu_current()))
        .collect()
}

impl<'a> Replay<'a> {
    fn new(inst: &'a Instance, s: &'a Schedule, cyclic: bool, period: i64) -> Replay<'a> {
        let persistent = persistent(inst);
        let copies = unroll(s, cyclic, period);
        let tensors = start_state(inst, s, cyclic, &persistent);
        let mut r = Replay {
            inst,
            s,
            cyclic,
            period,
            persistent,
            carried: vec![None; copies.len()],
            modified_buffers: vec![Vec::new(); copies.len()],
            copies,
            at_start: boundary(&tensors),
            tensors,
            running: BTreeSet::new(),
            flying: BTreeSet::new(),
            findings: Vec::new(),
            peak: 0,
            cpu_peak: 0,
            redundant: Vec::new(),
            at_boundaries: Vec::new(),
            reads_latest: vec![[None, None]; s.events.len()],
            gpu_over_at: None,
            cpu_over_at: None,
            memory: Vec::new(),
            heap: (inst.allocator == Allocator::Caching)
                .then(|| Heap::new(inst.machine.gpu_capacity.0)),
            block_of: vec![None; inst.tensors.len()],
            temp_of: vec![None; unroll(s, cyclic, period).len()],
        };
        // The initial copies take their blocks first, in tensor order.
        for k in 0..inst.tensors.len() {
            if r.tensors[k].gpu != Gpu::Off && !r.take_block(TensorId(k as u32)) {
                let f = Finding {
                    rule: "memory",
                    kind: "allocator_out_of_memory",
                    event: None,
                    at: Some(Ticks(0)),
                    tensor: Some(TensorId(k as u32)),
                };
                r.memory.push(f);
            }
        }
        r.peak = r.gpu_in_use(None);
        r.cpu_peak = r.cpu_in_use(None);
        r
    }

    /// One step: the boundary states it passes, its rule, memory after an
    /// allocation, a zero-length event's end, and the releases it lets happen.
    fn step(&mut self, st: &Step) {
        self.read_boundaries(st);
        let u = self.copies[st.copy];
        // Which breaches count (MODEL.md §2.6): the second period's, where the
        // completions of transfers crossing 2P are stood for by the first
        // period's completions after P.
        let counts = !self.cyclic
            || match (u.period_index, st.half == Half::TransferEnd) {
                (1, true) => st.time.0 <= 2 * self.period,
                (1, false) => true,
                (0, true) => st.time.0 > self.period,
                _ => false,
            };
        let before = self.findings.len();
        self.act(st, &u, counts);
        // Rule memory, after every allocation (before a zero-length event's own
        // release); cyclic: in the reported period only.
        let in_window = !self.cyclic || (st.time.0 >= self.period && st.time.0 < 2 * self.period);
        // A void transfer allocates nothing: no measurement after it.
        let void = st.half == Half::TransferStart && self.carried[st.copy].is_none();
        if st.half.allocates() && in_window && !void {
            self.judge_memory(st);
        }
        if st.instant {
            match u.ev {
                Event::Compute { op, .. } => self.op_end(op, st.time, st.copy),
                Event::Transfer { dir, tensor, .. } => {
                    self.transfer_end(dir, tensor, st.time, st.copy)
                }
                Event::Delete { .. } => {}
            }
        }
        self.release_waiting(st.time, st.copy);
        if !counts {
            self.findings.truncate(before);
        }
    }

    /// The boundary state at kP: after every step before kP and the releases
    /// at kP, before the allocations at kP.
    fn read_boundaries(&mut self, st: &Step) {
        while self.cyclic && self.at_boundaries.len() < 2 {
            let b = self.period * (self.at_boundaries.len() as i64 + 1);
            if st.time.0 > b || (st.time.0 == b && st.opens) {
                self.at_boundaries.push(boundary(&self.tensors));
            } else {
                break;
            }
        }
    }

    /// The rule step of one action.
    fn act(&mut self, st: &Step, u: &Unrolled, counts: bool) {
        match (u.ev, st.half) {
            (Event::Compute { op, end, .. }, Half::OpStart) => {
                self.op_start(op, st.time, end, st.copy);
                if !st.instant {
                    self.running.insert(st.copy);
                }
            }
            (Event::Compute { op, .. }, _) => {
                self.running.remove(&st.copy);
                self.op_end(op, st.time, st.copy);
            }
            (
                Event::Transfer {
                    dir, tensor, end, ..
                },
                Half::TransferStart,
            ) => self.transfer_begins(st, u, counts, (dir, tensor, end)),
            (Event::Transfer { dir, tensor, .. }, _) => {
                self.flying.remove(&st.copy);
                self.transfer_end(dir, tensor, st.time, st.copy);
            }
            (Event::Delete { tensor, .. }, _) => {
                if self.tensors[tensor.ix()].gpu == Gpu::Off {
                    self.found("dependencies", "delete_absent", st.copy, st.time, tensor);
                } else {
                    self.release_explicitly(tensor, st.time, st.copy);
                }
            }
        }
    }

    /// A transfer's start: a redundant offload, the transfer, and for a
    /// crossing transfer whether it read the latest value.
    fn transfer_begins(
        &mut self,
        st: &Step,
        u: &Unrolled,
        counts: bool,
        (dir, tensor, end): (Direction, TensorId, Ticks),
    ) {
        let t = self.tensors[tensor.ix()];
        self.transfer_start(dir, tensor, end, st.copy);
        // Redundant: an offload that runs (not void) and rewrites the CPU's
        // own current version.
        if counts && dir == Direction::Offload && self.carried[st.copy].is_some() {
            if let Gpu::On(v) = t.gpu {
                if t.cpu == Some(v) {
                    self.redundant.push(EventId(u.event as u32));
                }
            }
        }
        if !st.instant {
            self.flying.insert(st.copy);
        }
        let crossing = self.s.events[u.event].end().0 > self.period;
        if self.cyclic && crossing && u.period_index >= 0 {
            let t = self.tensors[tensor.ix()];
            self.reads_latest[u.event][u.period_index as usize] =
                Some(t.born && self.carried[st.copy] == Some(t.latest));
        }
    }

    /// Rule memory (GPU and CPU) after an allocation, summed from scratch.
    fn judge_memory(&mut self, st: &Step) {
        let extra = (st.instant && st.half == Half::OpStart).then_some(st.copy);
        let used = self.gpu_in_use(extra);
        self.peak = self.peak.max(used);
        // R7 under the allocator (MODEL.md §2.8): exact bytes, whole chunks,
        // or (caching) only the requests it could not serve, found where made.
        let (over, kind) = match self.inst.allocator {
            Allocator::Exact => (used, "memory_exceeded"),
            Allocator::Va { chunk } => (self.gpu_in_chunks(extra, chunk.0), "va_memory_exceeded"),
            Allocator::Caching => (0, ""),
        };
        if over > self.inst.machine.gpu_capacity.0 as u128 && self.gpu_over_at != Some(st.time) {
            self.gpu_over_at = Some(st.time);
            let at = self.rel(st.time);
            self.memory.push(memory_finding(kind, at));
        }
        let cpu_used = self.cpu_in_use(extra);
        self.cpu_peak = self.cpu_peak.max(cpu_used);
        if let Some(cap) = self.inst.machine.cpu_capacity {
            if cpu_used > cap.0 as u128 && self.cpu_over_at != Some(st.time) {
                self.cpu_over_at = Some(st.time);
                let at = self.rel(st.time);
                self.memory.push(memory_finding("cpu_memory_exceeded", at));
            }
        }
    }

    /// Cyclic: the boundary states equal the start state, and every crossing
    /// transfer reads the same (latest or not) value in both periods.
    fn steady_state(&mut self) {
        while self.at_boundaries.len() < 2 {
            self.at_boundaries.push(boundary(&self.tensors));
        }
        for k in 0..self.inst.tensors.len() {
            if self.at_boundaries.iter().any(|b| b[k] != self.at_start[k]) {
                self.findings.push(Finding {
                    rule: "completeness",
                    kind: "state_mismatch",
                    event: None,
                    at: None,
                    tensor: Some(TensorId(k as u32)),
                });
            }
        }
        for (i, pair) in self.reads_latest.iter().enumerate() {
            if let [Some(a), Some(b)] = pair {
                if a != b {
                    self.findings.push(Finding {
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
}

fn memory_finding(kind: &'static str, at: Ticks) -> Finding {
    Finding {
        rule: "memory",
        kind,
        event: None,
        at: Some(at),
        tensor: None,
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
        self.give_block(t);
    }

    /// The caching allocator serves the GPU copy of `t` a block (true if it
    /// could, or if no caching allocator is modelled).
    fn take_block(&mut self, t: TensorId) -> bool {
        let size = self.inst.tensor(t).size.0;
        let Some(h) = self.heap.as_mut() else {
            return true;
        };
        if size == 0 {
            return true;
        }
        self.block_of[t.ix()] = h.malloc(size);
        self.block_of[t.ix()].is_some()
    }

    /// The GPU copy of `t` gives its block back (if it had one).
    fn give_block(&mut self, t: TensorId) {
        if let (Some(h), Some(a)) = (self.heap.as_mut(), self.block_of[t.ix()].take()) {
            h.free(a);
        }
    }

    /// A new GPU buffer for `t` at `at` (a production or a prefetch): a
    /// request the caching allocator cannot serve is a finding (R7).
    fn new_buffer(&mut self, t: TensorId, at: Ticks, copy: usize) {
        if !self.take_block(t) {
            self.found("memory", "allocator_out_of_memory", copy, at, t);
        }
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
            // A transfer uses its buffer unless it is void (it read nothing).
            Event::Transfer { tensor, .. } => tensor == t && self.carried[k].is_some(),
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
                    self.give_block(t);
                }
                self.tensors[t.ix()].gpu = Gpu::Coming { ready: end };
                self.tensors[t.ix()].buffers += 1;
                self.new_buffer(t, at, copy);
            }
            self.take_temp(op, at, copy);
            self.modified_buffers[copy] = o
                .modifies
                .iter()
                .map(|&t| (t, self.tensors[t.ix()].buffers))
                .collect();
        }
    }

    /// The end of compute(o), MODEL.md §2.3. The values o writes: each tensor it
    /// produces or modifies gets a new version (every modification, and every
    /// production but the first one ever, increments latest(t)); then the one
    /// copy o wrote into receives it ([`Self::receiver`]). Every other copy of
    /// the tensor keeps what it held, and so becomes stale. Then F(o) is freed.
    fn op_end(&mut self, op: OpId, at: Ticks, copy: usize) {
        let o = self.inst.op(op);
        let written = o.produces.iter().map(|&t| (t, Write::Production));
        let written = written.chain(o.modifies.iter().map(|&t| (t, Write::Modification)));
        for (t, how) in written {
            let receiver = self.receiver(o.device, t, how, copy);
            let c = &mut self.tensors[t.ix()];
            let first_value = how == Write::Production && !c.born;
            if !first_value {
                c.latest += 1;
            }
            if how == Write::Production {
                c.born = true;
            }
            match receiver {
                Some(Device::Gpu) => c.gpu = Gpu::On(c.latest),
                Some(Device::Cpu) => c.cpu = Some(c.latest),
                None => {}
            }
        }
        if o.device == Device::Gpu {
            if let (Some(h), Some(a)) = (self.heap.as_mut(), self.temp_of[copy].take()) {
                h.free(a);
            }
            for &t in &o.frees {
                if self.tensors[t.ix()].gpu != Gpu::Off {
                    self.release_explicitly(t, at, copy);
                }
            }
        }
    }

    /// The copy the op writes a new version of `t` into, if it is still there
    /// when the op ends (MODEL.md §2.3):
    /// - a GPU op producing t filled the buffer it took at its start: the copy
    ///   is still coming unless it was released while the op ran (then there is
    ///   nothing to write into);
    /// - a GPU op modifying t wrote into the buffer it pinned at its start: only
    ///   if that very buffer is still on the GPU (not released and fetched again
    ///   while the op ran: that is another buffer, holding what its prefetch
    ///   carried);
    /// - a CPU op writes the CPU copy: one it creates (a production), or the one
    ///   it read (a modification; with none there is nothing to update).
    fn receiver(&self, device: Device, t: TensorId, how: Write, copy: usize) -> Option<Device> {
        let c = &self.tensors[t.ix()];
        let writes_there = match (device, how) {
            (Device::Gpu, Write::Production) => matches!(c.gpu, Gpu::Coming { .. }),
            (Device::Gpu, Write::Modification) => {
                let pinned_at_start = self.modified_buffers[copy]
                    .iter()
                    .find(|&&(m, _)| m == t)
                    .map(|&(_, b)| b);
                matches!(c.gpu, Gpu::On(_)) && pinned_at_start.is_none_or(|b| b == c.buffers)
            }
            (Device::Cpu, Write::Production) => true,
            (Device::Cpu, Write::Modification) => c.cpu.is_some(),
        };
        writes_there.then_some(device)
    }

    /// MODEL.md §2.3, "After a violation": a transfer that breaks R3 when it
    /// starts is void. It changes nothing, then or at its end, and reads
    /// nothing (`carried` stays `None`, which is how its end knows).
    fn transfer_start(&mut self, dir: Direction, t: TensorId, end: Ticks, copy: usize) {
        let at = self.copies[copy].ev.start();
        let c = self.tensors[t.ix()];
        let mut broken: Vec<&'static str> = Vec::new();
        if !self.inst.tensor(t).transferable {
            broken.push("not_transferable");
        }
        match dir {
            Direction::Offload if !matches!(c.gpu, Gpu::On(_)) => broken.push("offload_absent"),
            Direction::Prefetch => {
                if c.cpu.is_none() {
                    broken.push("prefetch_without_cpu_copy");
                }
                if c.gpu != Gpu::Off {
                    broken.push("prefetch_resident");
                }
            }
            _ => {}
        }
        for kind in &broken {
            self.found("dependencies", *kind, copy, at, t);
        }
        self.carried[copy] = None;
        if !broken.is_empty() {
            return;
        }
        match (dir, c.gpu, c.cpu) {
            (Direction::Offload, Gpu::On(v), _) => {
                self.carried[copy] = Some(v);
                self.tensors[t.ix()].offloads_in_flight += 1;
            }
            (Direction::Prefetch, Gpu::Off, Some(v)) => {
                self.carried[copy] = Some(v);
                self.tensors[t.ix()].gpu = Gpu::Coming { ready: end };
                self.tensors[t.ix()].buffers += 1;
                self.new_buffer(t, at, copy);
            }
            _ => {}
        }
    }

    /// The end of a transfer that was not void: an offload writes what it read
    /// to the CPU (and with `delete` lets the GPU copy go, at once or when its
    /// last user ends), a prefetch lands what it read in its buffer if that
    /// is still waiting.
    fn transfer_end(&mut self, dir: Direction, t: TensorId, at: Ticks, copy: usize) {
        let Some(carried) = self.carried[copy] else {
            return;
        };
        match dir {
            Direction::Offload => {
                let c = &mut self.tensors[t.ix()];
                c.offloads_in_flight = c.offloads_in_flight.saturating_sub(1);
                c.cpu = Some(carried);
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
                    c.gpu = Gpu::On(carried);
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

    /// A GPU op's scratch takes its block at its start, after its outputs'.
    fn take_temp(&mut self, op: OpId, at: Ticks, copy: usize) {
        let temp = self.inst.op(op).temp.0;
        let Some(h) = self.heap.as_mut() else {
            return;
        };
        if temp == 0 {
            return;
        }
        self.temp_of[copy] = h.malloc(temp);
        if self.temp_of[copy].is_none() {
            let f = Finding {
                rule: "memory",
                kind: "allocator_out_of_memory",
                event: Some(EventId(self.copies[copy].event as u32)),
                at: Some(self.rel(at)),
                tensor: None,
            };
            self.findings.push(f);
        }
    }

    /// occ_GPU under `va:m_c`: [`Self::gpu_in_use`]'s terms, each rounded up to
    /// whole chunks.
    fn gpu_in_chunks(&self, instant: Option<usize>, chunk: u64) -> u128 {
        let whole = |b: u64| (b as u128).div_ceil(chunk as u128) * chunk as u128;
        let mut sum: u128 = 0;
        for (k, c) in self.tensors.iter().enumerate() {
            if c.gpu != Gpu::Off {
                sum += whole(self.inst.tensors[k].size.0);
            }
        }
        for &u in self.running.iter().chain(instant.iter()) {
            if let Event::Compute { op, .. } = self.copies[u].ev {
                let o = self.inst.op(op);
                if o.device == Device::Gpu {
                    sum += whole(o.temp.0);
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

fn finding(
    rule: &'static str,
    kind: &'static str,
    event: Option<usize>,
    at: Option<Ticks>,
) -> Finding {
    Finding {
        rule,
        kind,
        event: event.map(|i| EventId(i as u32)),
        at,
        tensor: None,
    }
}

/// Rule *groups* (R11): count each group's runs.
fn groups(inst: &Instance, ran: &[(Ticks, bool, usize, OpId)], out: &mut Vec<Finding>) {
    for g in &inst.groups {
        let n = ran.iter().filter(|r| g.members.contains(&r.3)).count();
        if n == 0 {
            out.push(finding("groups", "group_never_ran", None, None));
        } else if n > 1 && g.runs == Multiplicity::ExactlyOnce {
            out.push(finding("groups", "group_ran_twice", None, None));
        }
    }
}

/// Rule *slots* (R12): the groups of the slotted GPU runs, as one sequence,
/// must be the slots that have a GPU run, in order.
fn slot_sequence(
    inst: &Instance,
    slots: &[GroupId],
    ran: &[(Ticks, bool, usize, OpId)],
    out: &mut Vec<Finding>,
) {
    let group_of = |o: OpId| {
        slots
            .iter()
            .copied()
            .find(|g| inst.groups[g.ix()].members.contains(&o))
    };
    let seq: Vec<GroupId> = ran
        .iter()
        .filter(|r| inst.op(r.3).device == Device::Gpu)
        .filter_map(|r| group_of(r.3))
        .collect();
    let want: Vec<GroupId> = slots.iter().copied().filter(|g| seq.contains(g)).collect();
    if seq == want {
        return;
    }
    let kind = if seq.starts_with(&want) {
        "slot_extra"
    } else {
        "slot_out_of_order"
    };
    out.push(finding("slots", kind, None, None));
}

/// Rule *precedence* (R13): for every run of an op and each of its
/// predecessors, walk each predecessor run by whole periods (cyclic) to the
/// last copy that comes before the run in start order (start, zero-duration
/// first, file order); the latest such copy must have ended.
fn precedence(
    inst: &Instance,
    s: &Schedule,
    ran: &[(Ticks, bool, usize, OpId)],
    out: &mut Vec<Finding>,
) {
    let p = match (inst.mode, s.period) {
        (Mode::Cyclic, Some(p)) if p.0 > 0 => p.0,
        _ => 0,
    };
    for &(t, pos, i, o) in ran {
        for q in &inst.op(o).after {
            let mut best: Option<(i64, i64)> = None;
            for &(qs, qpos, j, qo) in ran {
                if qo != *q {
                    continue;
                }
                let len = s.events[j].end().0 - qs.0;
                let before = |start: i64| (start, qpos, j) < (t.0, pos, i);
                let mut start = qs.0;
                if p > 0 {
                    while !before(start) {
                        start -= p;
                    }
                    while before(start + p) {
                        start += p;
                    }
                } else if !before(start) {
                    continue;
                }
                best = best.max(Some((start, start + len)));
            }
            if best.is_none_or(|(_, end)| end > t.0) {
                out.push(finding(
                    "precedence",
                    "started_before_predecessor",
                    Some(i),
                    Some(t),
                ));
            }
        }
    }
}

/// Rule *completeness* for compute: per device, the ops in order of start
/// (zero-length ones first at a tie, then file order) must be the instance's
/// order; with a free or slotted order every required op must run.
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
    groups(inst, &ran, out);
    precedence(inst, s, &ran, out);
    if let ComputeOrder::Slots(slots) = &inst.order {
        slot_sequence(inst, slots, &ran, out);
    }
    match &inst.order {
        ComputeOrder::Free | ComputeOrder::Slots(_) => {
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
            // R8: the GPU runs, in start order, are σ restricted to GPU ops, and
            // likewise the CPU runs.
            let on_gpu = |o: &OpId| inst.op(*o).device == Device::Gpu;
            let (sigma_gpu, sigma_cpu): (Vec<OpId>, Vec<OpId>) =
                seq.iter().partition(|o| on_gpu(o));
            let (ran_gpu, ran_cpu): (Vec<OpId>, Vec<OpId>) =
                ran.iter().map(|r| r.3).partition(on_gpu);
            for (sigma, runs) in [(sigma_gpu, ran_gpu), (sigma_cpu, ran_cpu)] {
                if let Some(kind) = order_mismatch(&sigma, &runs) {
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
}

/// How the runs of one device differ from σ restricted to that device, if they
/// do: counted by the length of their common prefix. Runs that stop early are
/// `missing_op`; runs that go on after σ is done are `extra_op`; a run that
/// differs from σ at some position is `out_of_order`.
fn order_mismatch(sigma: &[OpId], runs: &[OpId]) -> Option<&'static str> {
    let common = sigma.iter().zip(runs).take_while(|(a, b)| a == b).count();
    match (common == sigma.len(), common == runs.len()) {
        (true, true) => None,
        (false, true) => Some("missing_op"),
        (true, false) => Some("extra_op"),
        (false, false) => Some("out_of_order"),
    }
}
