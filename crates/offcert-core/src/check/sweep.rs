//! The event sweep: one pass over the unrolled actions in replay order, with
//! the state of every tensor ([`crate::semantics::State`], where the rules that
//! depend on the state live), the transfers in flight and the running ops.
//! Each kind of action has its own `apply` step; memory (rules *memory*, *CPU
//! memory*) is measured after every allocation.
//!
//! Owns: [`Sweep`], [`Swept`]. Must not import: anything outside this crate.

use super::profile::MemoryProfile;
use super::unroll::{Action, Phase, Unrolled, Uses};
use super::window::Window;
use super::witness::{allocator_violation, to_violation};
use super::{Violation, Warning};
use crate::model::{Allocator, Device, Direction, Instance, OpId, TensorId};
use crate::schedule::{Event, EventId, Schedule};
use crate::semantics::{Breach, InFlight, State};
use crate::units::{Bytes, Ticks};

/// GPU and CPU presence of every tensor at a period boundary.
pub(super) type Boundary = (Vec<bool>, Vec<bool>);

/// What the sweep found.
pub(super) struct Swept {
    /// Rule breaches and memory violations, in replay order.
    pub violations: Vec<Violation>,
    pub warnings: Vec<Warning>,
    /// The peak GPU memory in the reported window, and its first instant.
    pub peak: (Bytes, Ticks),
    /// The peak CPU memory in the reported window (CPU copies and offloads in
    /// flight; the model never releases a CPU copy).
    pub cpu_peak: Bytes,
    /// The allocator's own peaks (MODEL.md §2.8; `None` under `exact`).
    pub allocator: Option<super::AllocatorPeaks>,
    /// The declared start state, and the states at P and 2P (cyclic).
    pub start_boundary: Boundary,
    pub snapshots: Vec<Boundary>,
    /// Per event: did its crossing transfer read the latest value, in period
    /// copies 0 and 1? (cyclic; for rule *not steady*)
    pub reads_latest: Vec<[Option<bool>; 2]>,
}

/// A transfer's fields.
struct Xfer {
    dir: Direction,
    tensor: TensorId,
    start: Ticks,
    end: Ticks,
    delete: bool,
}

impl Xfer {
    fn of(e: &Event) -> Option<Xfer> {
        match *e {
            Event::Transfer {
                dir,
                tensor,
                start,
                end,
                delete,
            } => Some(Xfer {
                dir,
                tensor,
                start,
                end,
                delete,
            }),
            _ => None,
        }
    }
}

pub(super) struct Sweep<'a> {
    inst: &'a Instance,
    s: &'a Schedule,
    copies: &'a [Unrolled],
    uses: &'a Uses,
    w: Window,
    state: State,
    flights: Vec<Option<InFlight>>,
    /// Running positive-duration ops (unrolled index), for memory witnesses.
    running: Vec<u32>,
    profile: Option<&'a mut MemoryProfile>,
    /// Memory is reported once per instant.
    exceeded_now: bool,
    cpu_exceeded_now: bool,
    out: Swept,
}

impl<'a> Sweep<'a> {
    pub fn new(
        inst: &'a Instance,
        s: &'a Schedule,
        (copies, uses): (&'a [Unrolled], &'a Uses),
        w: Window,
        mut profile: Option<&'a mut MemoryProfile>,
    ) -> Sweep<'a> {
        let state = match (&s.initial, w.cyclic) {
            (Some(st), true) => State::from_cyclic(inst, st),
            _ => State::initial(inst),
        };
        if let Some(p) = profile.as_mut() {
            p.push(Ticks::ZERO, state.gpu_used);
        }
        let out = Swept {
            violations: Vec::new(),
            warnings: Vec::new(),
            peak: (state.gpu_bytes(), Ticks::ZERO),
            cpu_peak: Bytes(state.cpu_used.max(0) as u64),
            allocator: None,
            start_boundary: state.boundary(),
            snapshots: Vec::new(),
            reads_latest: if w.cyclic {
                vec![[None, None]; s.events.len()]
            } else {
                vec![]
            },
        };
        let mut sweep = Sweep {
            inst,
            s,
            copies,
            uses,
            w,
            state,
            flights: vec![None; copies.len()],
            running: Vec::new(),
            profile,
            exceeded_now: false,
            cpu_exceeded_now: false,
            out,
        };
        sweep.start_allocations();
        sweep
    }

    /// The initial copies' allocations (MODEL.md §2.8): the requests the
    /// allocator cannot serve, at time 0 with no event, and the allocator's
    /// figures of the initial state.
    fn start_allocations(&mut self) {
        for b in std::mem::take(&mut self.state.start_breaches) {
            if let Breach::AllocatorOutOfMemory { tensor, failure } = b {
                let v = allocator_violation(None, Ticks::ZERO, None, tensor, failure);
                self.out.violations.push(v);
            }
        }
        if !self.inst.allocator.is_default() {
            self.out.allocator = Some(super::AllocatorPeaks::default());
            self.allocator_peaks();
        }
    }

    /// Raise the allocator's peaks to the state's figures.
    fn allocator_peaks(&mut self) {
        let heap = &self.state.heap;
        let Some(p) = self.out.allocator.as_mut() else {
            return;
        };
        if let Some(occ) = heap.occupied() {
            p.peak_occupied = p.peak_occupied.max(Some(occ));
            p.max_live_allocations = heap.max_live();
        }
        if let Some(c) = heap.caching() {
            p.peak_reserved = p.peak_reserved.max(Some(c.reserved()));
            p.peak_allocated = p.peak_allocated.max(Some(c.allocated()));
        }
    }

    /// Replay every action, one instant at a time.
    pub fn run(mut self, actions: &[Action]) -> Swept {
        for instant in actions.chunk_by(|a, b| a.time == b.time) {
            self.begin_instant(instant[0].time);
            for a in instant {
                self.apply(a);
            }
        }
        if self.w.cyclic {
            while self.out.snapshots.len() < 2 {
                self.out.snapshots.push(self.state.boundary());
            }
        }
        self.out
    }

    /// The next period boundary whose state is still to be read (P, then 2P).
    fn next_boundary(&self) -> Ticks {
        Ticks(self.w.period.0 * (self.out.snapshots.len() as i64 + 1))
    }

    /// Boundaries strictly before this instant: every action up to them is done.
    fn begin_instant(&mut self, now: Ticks) {
        self.exceeded_now = false;
        self.cpu_exceeded_now = false;
        while self.w.cyclic && self.out.snapshots.len() < 2 && now > self.next_boundary() {
            self.out.snapshots.push(self.state.boundary());
        }
    }

    /// A boundary at this very instant, read when the next period opens: after
    /// the ending period's completions and its zero-duration ops at P.
    fn read_boundary_at(&mut self, now: Ticks) {
        while self.out.snapshots.len() < 2 && now >= self.next_boundary() {
            self.out.snapshots.push(self.state.boundary());
        }
    }

    /// Which copy's breaches belong to the reported period (models/MODEL.md
    /// §2.6): copy 1, except the ends of its transfers that cross 2P, which
    /// copy 0's crossing transfers stand for.
    fn reported(&self, a: &Action, c: &Unrolled) -> bool {
        !self.w.cyclic
            || match (c.period, a.phase == Phase::TransferEnd) {
                (1, true) => a.time <= self.w.hi,
                (1, false) => true,
                (0, true) => a.time > self.w.lo,
                _ => false,
            }
    }

    /// One action: its rule step, memory after an allocation, the end of a
    /// zero-duration event, and its breaches as witnesses.
    fn apply(&mut self, a: &Action) {
        let now = a.time;
        if self.w.cyclic && a.opens {
            self.read_boundary_at(now);
        }
        let c = self.copies[a.unrolled as usize];
        let report = self.reported(a, &c);
        let (mut breaches, op) = match (c.ev, a.phase) {
            (Event::Compute { op, end, .. }, Phase::OpStart) => {
                (self.op_start(a, op, end), Some(op))
            }
            (Event::Compute { op, .. }, _) => (self.op_end(a, op), Some(op)),
            (Event::Transfer { .. }, Phase::TransferStart) => {
                (self.transfer_start(a, &c, report), None)
            }
            (Event::Transfer { .. }, _) => (self.transfer_end(a, &c), None),
            (Event::Delete { tensor, .. }, _) => (self.state.delete(tensor, now, self.uses), None),
        };
        // A void transfer (R3 broken at its start) has no effect: it allocates
        // nothing, so memory is not measured after it (models/MODEL.md §2.3).
        let void = a.phase == Phase::TransferStart
            && self.flights[a.unrolled as usize].is_some_and(|f| f.version.is_none());
        let allocated = a.phase.allocates() && !void;
        // Rule memory: measured after every allocation (before a zero-duration
        // event's own release), once the instant's releases are done.
        if allocated && self.w.contains(now) {
            self.measure(a, &c);
        }
        if !a.positive {
            breaches.extend(self.end_at_once(a, &c));
        }
        if let Some(p) = self.profile.as_mut() {
            if (!allocated || !a.positive) && self.w.contains(now) {
                p.push(self.w.rel(now), self.state.gpu_used);
            }
        }
        if report {
            let at = self.w.rel(now);
            for b in breaches {
                let v = to_violation(b, c.event, at, op, self.s, &self.w);
                self.out.violations.push(v);
            }
        }
    }

    fn op_start(&mut self, a: &Action, op: OpId, end: Ticks) -> Vec<Breach> {
        let b = self.state.op_start(self.inst, op, a.time, end, self.uses);
        if a.positive {
            self.running.push(a.unrolled);
        }
        b
    }

    fn op_end(&mut self, a: &Action, op: OpId) -> Vec<Breach> {
        let b = self.state.op_end(self.inst, op, a.time, self.uses);
        if let Some(p) = self.running.iter().position(|u| *u == a.unrolled) {
            self.running.swap_remove(p);
        }
        b
    }

    fn transfer_start(&mut self, a: &Action, c: &Unrolled, report: bool) -> Vec<Breach> {
        let Some(x) = Xfer::of(&c.ev) else {
            return Vec::new();
        };
        let redundant =
            x.dir == Direction::Offload && self.state.offload_is_redundant(x.tensor) && report;
        let (fl, b) = self
            .state
            .transfer_start(self.inst, x.dir, x.tensor, a.time, x.end);
        // A void offload (R3) moves nothing, so it costs nothing either.
        if redundant && fl.version.is_some() {
            self.out.warnings.push(Warning::RedundantOffload {
                event: c.event,
                tensor: x.tensor,
                bytes: self.inst.tensor(x.tensor).size,
                ticks: x.end - x.start,
            });
        }
        let crosses = self.s.events[c.event.ix()].end() > self.w.period;
        if self.w.cyclic && c.period >= 0 && crosses {
            let ts = self.state.tensor(x.tensor);
            self.out.reads_latest[c.event.ix()][c.period as usize] =
                Some(fl.version == Some(ts.latest) && ts.exists);
        }
        self.flights[a.unrolled as usize] = Some(fl);
        b
    }

    /// The end of a transfer (at its end action, or at once for a
    /// zero-duration one).
    fn transfer_end(&mut self, a: &Action, c: &Unrolled) -> Vec<Breach> {
        let Some(x) = Xfer::of(&c.ev) else {
            return Vec::new();
        };
        let fl = self.flights[a.unrolled as usize]
            .take()
            .unwrap_or(InFlight { version: None });
        let release = x.delete && x.dir == Direction::Offload;
        self.state
            .transfer_end(x.dir, x.tensor, fl, release, a.time, self.uses)
    }

    /// A zero-duration event ends in the same action, right after its start.
    fn end_at_once(&mut self, a: &Action, c: &Unrolled) -> Vec<Breach> {
        match c.ev {
            Event::Compute { op, .. } => self.op_end(a, op),
            Event::Transfer { .. } => self.transfer_end(a, c),
            Event::Delete { .. } => Vec::new(),
        }
    }

    /// Rules *memory* and *CPU memory* after an allocation, and the peak.
    fn measure(&mut self, a: &Action, c: &Unrolled) {
        let now = self.w.rel(a.time);
        let used = self.state.gpu_used;
        if let Some(p) = self.profile.as_mut() {
            p.push(now, used);
        }
        if used > self.out.peak.0 .0 as i128 {
            self.out.peak = (Bytes(used as u64), now);
        }
        self.allocator_peaks();
        self.judge_gpu(a, c, now, used);
        if self.state.cpu_used > self.out.cpu_peak.0 as i128 {
            self.out.cpu_peak = Bytes(self.state.cpu_used as u64);
        }
        if let Some(cap) = self.inst.machine.cpu_capacity {
            if self.state.cpu_used > cap.0 as i128 && !self.cpu_exceeded_now {
                self.cpu_exceeded_now = true;
                self.out.violations.push(Violation::CpuMemoryExceeded {
                    at: now,
                    used: Bytes(self.state.cpu_used as u64),
                    capacity: cap,
                });
            }
        }
    }

    /// Rule *memory* on the GPU under the instance's allocator (MODEL.md
    /// §2.8): the exact sum, the sum in whole chunks (`va`), or nothing here
    /// (`caching`: its failed requests are breaches of the transitions).
    fn judge_gpu(&mut self, a: &Action, c: &Unrolled, now: Ticks, used: i128) {
        let cap = self.inst.machine.gpu_capacity;
        let over = match self.inst.allocator {
            Allocator::Exact => used > cap.0 as i128,
            Allocator::Va { .. } => self.state.heap.occupied().is_some_and(|o| o > cap),
            Allocator::Caching => false,
        };
        if over && !self.exceeded_now {
            self.exceeded_now = true;
            let v = self.memory_exceeded(a, c, now, used);
            self.out.violations.push(v);
        }
    }

    /// The witness of rule *memory*: the resident tensors and the running GPU
    /// ops (their scratch is what counts against the GPU), with a zero-duration
    /// op that starts now.
    fn memory_exceeded(&self, a: &Action, c: &Unrolled, at: Ticks, used: i128) -> Violation {
        let resident: Vec<TensorId> = self
            .state
            .tensors
            .iter()
            .enumerate()
            .filter(|(_, t)| t.on_gpu())
            .map(|(k, _)| TensorId(k as u32))
            .collect();
        let on_gpu = |e: &Event| matches!(e, Event::Compute { op, .. } if self.inst.op(*op).device == Device::Gpu);
        let mut running: Vec<EventId> = self
            .running
            .iter()
            .map(|u| self.copies[*u as usize])
            .filter(|c| on_gpu(&c.ev))
            .map(|c| c.event)
            .collect();
        if !a.positive && a.phase == Phase::OpStart && on_gpu(&c.ev) {
            running.push(c.event);
        }
        running.sort();
        let capacity = self.inst.machine.gpu_capacity;
        let used = Bytes(used as u64);
        match (self.inst.allocator, self.state.heap.occupied()) {
            (Allocator::Va { chunk }, Some(occupied)) => Violation::VaMemoryExceeded {
                at,
                used,
                occupied,
                chunk,
                capacity,
                resident,
                running,
            },
            _ => Violation::MemoryExceeded {
                at,
                used,
                capacity,
                resident,
                running,
            },
        }
    }
}
