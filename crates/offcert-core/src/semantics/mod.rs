//! The rules, written once: what each event does to the state of the GPU and CPU
//! memories, and which rule it breaks if it is not allowed.
//!
//! Owns: [`State`], the per-tensor copies and versions, memory accounting, and
//! the typed [`Breach`] of a rule. The checker's sweep, the earliest-start
//! simulator, the exhaustive search and the heuristics' makespans all drive this
//! same state machine; the MILP and SMT encodings mirror it (`models/MODEL.md`).
//! Must not import: the checker, solvers, heuristics, good_lp or z3.
//!
//! What an invalid event does to the state (`models/MODEL.md` §2.3.1, "After a
//! violation"): a transfer that breaks R3 at its start is *void* (no effect at
//! all, then or at its end); a delete with no GPU copy does nothing; every other
//! transition *applies* its effect even when it breaks a rule (and returns the
//! breaches), so that a replay can go on and report every violation, and later
//! findings are those of the state the definitions give, never artefacts of an
//! earlier one.
//!
//! Rule *in use* (R10, `models/MODEL.md` §2.5): a running GPU op pins the GPU
//! copies it reads (less those it consumes), produces and modifies; a running
//! transfer pins its GPU buffer. Under the default [`ReleaseRule::AfterEnd`] an
//! explicit release strictly inside a pin is a breach, and an offload's
//! `delete` that ends inside one takes effect when the last pin ends. Pins are
//! kept under the relaxation too: they decide whether a modification reaches
//! the copy (only the copy that stayed through the whole op takes it).

pub mod heap;
pub mod order;
pub mod precedence;

pub use heap::GpuHeap;
use heap::Owner;

use crate::allocator::AllocFailure;
use crate::model::{Device, Direction, Instance, OpId, ReleaseRule, TensorId};
use crate::schedule::CyclicState;
use crate::units::{Bytes, Ticks};
use serde::{Deserialize, Serialize};

/// Value version of a tensor: 0 when first materialised, +1 at every
/// modification or re-production. A copy is *current* when its version equals
/// the tensor's latest.
pub type Version = u64;

/// The GPU side of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum GpuCopy {
    Absent,
    /// Memory held, value not there yet: an op producing it runs, or a prefetch
    /// carrying `version` is in flight; ready at `ready`.
    Pending {
        ready: Ticks,
        version: Option<Version>,
    },
    Present(Version),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorState {
    pub gpu: GpuCopy,
    /// Version held by the CPU copy, if any.
    pub cpu: Option<Version>,
    /// Number of offloads in flight (their CPU space is held from their start).
    pub cpu_incoming: u32,
    /// Number of running CPU ops producing it (their output's CPU space is held
    /// from their start). With `cpu` and `cpu_incoming`, what makes the tensor
    /// *held on the CPU* (MODEL.md §2.2): its bytes count once however many
    /// of the three hold it.
    #[serde(default)]
    pub cpu_producing: u32,
    /// Latest version (meaningful once materialised).
    pub latest: Version,
    /// Has it ever been materialised?
    pub exists: bool,
    /// An offload with `delete` ended while the copy was in use (R10): the copy
    /// is released when the last pin on it ends.
    pub release_deferred: bool,
}

impl TensorState {
    pub fn gpu_current(&self) -> bool {
        matches!(self.gpu, GpuCopy::Present(v) if v == self.latest)
    }
    pub fn cpu_current(&self) -> bool {
        self.exists && self.cpu == Some(self.latest)
    }
    pub fn on_gpu(&self) -> bool {
        !matches!(self.gpu, GpuCopy::Absent)
    }
    /// Does the CPU hold space for it (a copy, an offload in flight or a
    /// running CPU op producing it; MODEL.md §2.2)?
    pub fn held_on_cpu(&self) -> bool {
        self.cpu.is_some() || self.cpu_incoming > 0 || self.cpu_producing > 0
    }
}

/// A rule broken by one transition. The checker turns it into a
/// [`Violation`](crate::check::Violation) with times and event ids.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Breach {
    /// An input is not on the device (GPU for GPU ops). `ready_at` is when a
    /// pending copy (transfer or producing op) will be ready.
    InputNotResident {
        tensor: TensorId,
        ready_at: Option<Ticks>,
    },
    /// An input is there but in an outdated version.
    InputStale {
        tensor: TensorId,
        held: Option<Version>,
        latest: Version,
    },
    /// A CPU op's input has no current CPU copy.
    CpuInputMissing {
        tensor: TensorId,
        held: Option<Version>,
        latest: Version,
    },
    /// An op produces a tensor whose GPU copy still exists.
    ProducesResident { tensor: TensorId },
    /// The tensor may not cross the link.
    NotTransferable { tensor: TensorId },
    /// Offload of a tensor that is not (yet) on the GPU.
    OffloadAbsent { tensor: TensorId },
    /// Prefetch with no CPU copy to read from.
    PrefetchWithoutCpuCopy { tensor: TensorId },
    /// Prefetch of a tensor that already has a GPU copy (or one on its way).
    PrefetchResident { tensor: TensorId },
    /// Delete of a tensor with no GPU copy.
    DeleteAbsent { tensor: TensorId },
    /// Rule *in use* (R10): a GPU copy is released (delete, consume, free)
    /// strictly inside the interval of an op or transfer that uses it.
    ReleasedWhileInUse {
        tensor: TensorId,
        holder: Holder,
        /// The holder's interval, in the replay's own (unrolled) ticks.
        from: Ticks,
        until: Ticks,
    },
    /// The GPU copy is released while still needed, and no CPU copy holds its
    /// latest version.
    DataLoss {
        tensor: TensorId,
        gpu: Option<Version>,
        cpu: Option<Version>,
        latest: Version,
    },
    /// Rule *memory* under the `caching` allocator (R7, MODEL.md §2.8): a GPU
    /// allocation request it cannot serve: the copy of `tensor`, or the op's
    /// scratch (`None`).
    AllocatorOutOfMemory {
        tensor: Option<TensorId>,
        failure: AllocFailure,
    },
}

/// Who holds a GPU copy in use (rule R10).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Holder {
    /// A running GPU op: its reads (less consumed), productions, modifications.
    Op(OpId),
    /// A running transfer of the tensor: an offload's source, a prefetch's
    /// destination.
    Transfer(Direction),
}

/// One use of a GPU copy over [from, until).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pin {
    pub tensor: TensorId,
    pub holder: Holder,
    pub from: Ticks,
    pub until: Ticks,
    /// The buffer pinned (see `State::buffers`): a modification reaches the copy
    /// only if this buffer is still the one holding the tensor at the op's end.
    buffer: u64,
}

impl Pin {
    /// Is the instant `at` strictly inside the pin? An interval test on integer
    /// instants, independent of the same-instant phase order: a release exactly
    /// at the holder's end (or start) is not inside.
    pub fn covers(&self, at: Ticks) -> bool {
        self.from < at && at < self.until
    }
}

/// What the replay knows of the future: is `t` read again after `at`?
pub trait Lookahead {
    fn needed_after(&self, t: TensorId, at: Ticks) -> bool;
}

/// Carried from a transfer's start to its end: the version it reads, none for a
/// void transfer (one that broke R3 at its start and has no effect).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InFlight {
    pub version: Option<Version>,
}

/// The state of both memories.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    pub tensors: Vec<TensorState>,
    /// Bytes held on the GPU: copies (present or pending) plus running temporaries.
    pub gpu_used: i128,
    /// Bytes held on the CPU: copies plus offloads in flight.
    pub cpu_used: i128,
    /// The release rule in force (from the instance).
    pub release: ReleaseRule,
    /// The pins of running ops and transfers (rule R10).
    pub pins: Vec<Pin>,
    /// Per tensor, a counter of the GPU buffers allocated for it: the identity
    /// of the copy an op pinned. Not part of the observable state.
    buffers: Vec<u64>,
    sizes: Vec<i128>,
    /// The GPU allocations under the instance's allocator (MODEL.md §2.8).
    pub heap: GpuHeap,
    /// Requests of the initial state's copies the allocator could not serve
    /// (`caching` only; MODEL.md §2.8: allocated in tensor order first).
    pub start_breaches: Vec<Breach>,
}

fn fresh() -> TensorState {
    TensorState {
        gpu: GpuCopy::Absent,
        cpu: None,
        cpu_incoming: 0,
        cpu_producing: 0,
        latest: 0,
        exists: false,
        release_deferred: false,
    }
}

impl State {
    /// The state before a one-shot schedule: the instance's `initial` placements.
    pub fn initial(inst: &Instance) -> State {
        let mut s = State::empty(inst);
        for (i, t) in inst.tensors.iter().enumerate() {
            let ts = &mut s.tensors[i];
            if t.initial.on_gpu() {
                ts.gpu = GpuCopy::Present(0);
                ts.exists = true;
                s.gpu_used += s.sizes[i];
            }
            if t.initial.on_cpu() {
                ts.cpu = Some(0);
                ts.exists = true;
                s.cpu_used += s.sizes[i];
            }
        }
        s.place_initial();
        s
    }

    /// The state at time 0 of a cyclic schedule. Persistent tensors exist; every
    /// copy listed is current; a persistent tensor listed nowhere has its latest
    /// value nowhere (the replay reports its loss when it is needed).
    pub fn from_cyclic(inst: &Instance, st: &CyclicState) -> State {
        let mut s = State::empty(inst);
        let persistent = inst.persistent();
        for (i, p) in persistent.iter().enumerate() {
            if *p {
                s.tensors[i].exists = true;
            }
        }
        for t in &st.gpu {
            let ts = &mut s.tensors[t.ix()];
            if !ts.on_gpu() {
                ts.gpu = GpuCopy::Present(0);
                ts.exists = true;
                s.gpu_used += s.sizes[t.ix()];
            }
        }
        for t in &st.cpu {
            let ts = &mut s.tensors[t.ix()];
            if ts.cpu.is_none() {
                ts.cpu = Some(0);
                ts.exists = true;
                s.cpu_used += s.sizes[t.ix()];
            }
        }
        s.place_initial();
        s
    }

    /// The initial GPU copies take their allocations, in tensor order
    /// (MODEL.md §2.8).
    fn place_initial(&mut self) {
        for i in 0..self.tensors.len() {
            if self.tensors[i].on_gpu() {
                let t = TensorId(i as u32);
                if let Some(failure) = self.heap.take(Owner::Copy(t), self.sizes[i] as u64) {
                    let b = Breach::AllocatorOutOfMemory {
                        tensor: Some(t),
                        failure,
                    };
                    self.start_breaches.push(b);
                }
            }
        }
    }

    fn empty(inst: &Instance) -> State {
        State {
            tensors: vec![fresh(); inst.tensors.len()],
            gpu_used: 0,
            cpu_used: 0,
            release: inst.release,
            pins: Vec::new(),
            buffers: vec![0; inst.tensors.len()],
            sizes: inst.tensors.iter().map(|t| t.size.0 as i128).collect(),
            heap: GpuHeap::new(
                inst.allocator,
                inst.machine.gpu_capacity,
                inst.tensors.len(),
            ),
            start_breaches: Vec::new(),
        }
    }

    pub fn tensor(&self, t: TensorId) -> &TensorState {
        &self.tensors[t.ix()]
    }

    /// The observable state of a cyclic boundary: which tensors have a current
    /// (or, for a pending producer, any) GPU copy, and which a current CPU copy.
    pub fn boundary(&self) -> (Vec<bool>, Vec<bool>) {
        (
            self.tensors
                .iter()
                .map(|t| matches!(t.gpu, GpuCopy::Present(v) if v == t.latest))
                .collect(),
            self.tensors.iter().map(|t| t.cpu_current()).collect(),
        )
    }

    fn release_gpu(&mut self, t: TensorId) {
        let ts = &mut self.tensors[t.ix()];
        ts.release_deferred = false;
        if ts.on_gpu() {
            ts.gpu = GpuCopy::Absent;
            self.gpu_used -= self.sizes[t.ix()];
            self.heap.give(Owner::Copy(t), self.sizes[t.ix()] as u64);
        }
    }

    /// A new GPU buffer for `t` (a production or a prefetch takes memory);
    /// under `caching`, a request the allocator cannot serve is a breach
    /// (R7), and the copy is taken all the same (MODEL.md §2.3.1).
    fn allocate_gpu(&mut self, t: TensorId, copy: GpuCopy, out: &mut Vec<Breach>) {
        self.tensors[t.ix()].gpu = copy;
        self.buffers[t.ix()] += 1;
        self.gpu_used += self.sizes[t.ix()];
        if let Some(failure) = self.heap.take(Owner::Copy(t), self.sizes[t.ix()] as u64) {
            out.push(Breach::AllocatorOutOfMemory {
                tensor: Some(t),
                failure,
            });
        }
    }

    /// The pin of `t` that covers `at`, if any (rule R10).
    pub fn pin_covering(&self, t: TensorId, at: Ticks) -> Option<&Pin> {
        self.pins.iter().find(|p| p.tensor == t && p.covers(at))
    }

    fn pin(&mut self, t: TensorId, holder: Holder, from: Ticks, until: Ticks) {
        if until > from {
            let buffer = self.buffers[t.ix()];
            self.pins.push(Pin {
                tensor: t,
                holder,
                from,
                until,
                buffer,
            });
        }
    }

    /// Remove the pin `holder` has on `t` ending at `at`; return it.
    fn unpin(&mut self, t: TensorId, holder: Holder, at: Ticks) -> Option<Pin> {
        let k = self
            .pins
            .iter()
            .position(|p| p.tensor == t && p.holder == holder && p.until == at)?;
        Some(self.pins.swap_remove(k))
    }

    /// After a pin on `t` ends at `at`: a deferred release happens once no pin
    /// covers the instant any more.
    fn settle(&mut self, t: TensorId, at: Ticks, look: &dyn Lookahead, out: &mut Vec<Breach>) {
        // Users ending at this very instant but not yet processed still hold it:
        // the release comes after the last of them.
        let held = self
            .pins
            .iter()
            .any(|p| p.tensor == t && p.from < at && at <= p.until);
        if self.tensors[t.ix()].release_deferred && !held {
            self.drop_gpu(t, at, look, out);
        }
    }

    /// An explicit release (delete, consume, end-free) of the GPU copy of `t`:
    /// under the default rule, one inside a pin breaks R10 (reported, and the
    /// release still happens so the replay goes on).
    ///
    /// A tensor with no GPU copy has nothing to release: no breach, no effect
    /// (MODEL.md §2.3.1; an op consuming a missing input, already reported).
    fn release(&mut self, t: TensorId, at: Ticks, look: &dyn Lookahead, out: &mut Vec<Breach>) {
        if !self.tensors[t.ix()].on_gpu() {
            return;
        }
        if self.release == ReleaseRule::AfterEnd {
            if let Some(p) = self.pin_covering(t, at) {
                out.push(Breach::ReleasedWhileInUse {
                    tensor: t,
                    holder: p.holder,
                    from: p.from,
                    until: p.until,
                });
            }
        }
        self.drop_gpu(t, at, look, out);
    }

    /// Release a GPU copy, breaching "no data loss" if the value is needed later
    /// and no CPU copy holds its latest version.
    fn drop_gpu(&mut self, t: TensorId, at: Ticks, look: &dyn Lookahead, out: &mut Vec<Breach>) {
        let ts = self.tensors[t.ix()];
        let gpu_holds_latest = matches!(ts.gpu, GpuCopy::Present(v) if v == ts.latest);
        if gpu_holds_latest && !ts.cpu_current() && look.needed_after(t, at) {
            out.push(Breach::DataLoss {
                tensor: t,
                gpu: match ts.gpu {
                    GpuCopy::Present(v) => Some(v),
                    _ => None,
                },
                cpu: ts.cpu,
                latest: ts.latest,
            });
        }
        self.release_gpu(t);
    }

    /// An op starts at `at` (rule *dependencies*, rule *memory* allocations).
    pub fn op_start(
        &mut self,
        inst: &Instance,
        op: OpId,
        at: Ticks,
        end: Ticks,
        look: &dyn Lookahead,
    ) -> Vec<Breach> {
        let o = inst.op(op);
        let mut out = Vec::new();
        for &t in &o.reads {
            let ts = self.tensors[t.ix()];
            match o.device {
                Device::Gpu => match ts.gpu {
                    GpuCopy::Present(v) if v == ts.latest && ts.exists => {}
                    GpuCopy::Present(v) => out.push(Breach::InputStale {
                        tensor: t,
                        held: Some(v),
                        latest: ts.latest,
                    }),
                    GpuCopy::Pending { ready, .. } => out.push(Breach::InputNotResident {
                        tensor: t,
                        ready_at: Some(ready),
                    }),
                    GpuCopy::Absent => out.push(Breach::InputNotResident {
                        tensor: t,
                        ready_at: None,
                    }),
                },
                Device::Cpu => {
                    if !ts.cpu_current() {
                        out.push(Breach::CpuInputMissing {
                            tensor: t,
                            held: ts.cpu,
                            latest: ts.latest,
                        })
                    }
                }
            }
        }
        for &t in &o.consumes {
            // Consumed inputs are released after being read, before outputs take memory.
            match o.device {
                Device::Gpu => self.release(t, at, look, &mut out),
                Device::Cpu => {}
            }
        }
        for &t in &o.produces {
            let size = self.sizes[t.ix()];
            match o.device {
                Device::Gpu => {
                    if self.tensors[t.ix()].on_gpu() {
                        out.push(Breach::ProducesResident { tensor: t });
                        self.release_gpu(t);
                    }
                    self.allocate_gpu(
                        t,
                        GpuCopy::Pending {
                            ready: end,
                            version: None,
                        },
                        &mut out,
                    );
                }
                Device::Cpu => {
                    let ts = &mut self.tensors[t.ix()];
                    if !ts.held_on_cpu() {
                        self.cpu_used += size;
                    }
                    ts.cpu_producing += 1;
                }
            }
        }
        match o.device {
            Device::Gpu => {
                self.gpu_used += o.temp.0 as i128;
                if let Some(failure) = self.heap.take(Owner::Temp(op, end), o.temp.0) {
                    out.push(Breach::AllocatorOutOfMemory {
                        tensor: None,
                        failure,
                    });
                }
                // Rule R10: the op holds what it reads (less what it consumes),
                // produces and modifies until it ends. (CPU copies are never
                // released in this model, so a CPU op's pins would be vacuous.)
                for t in pinned_by(inst, op) {
                    self.pin(t, Holder::Op(op), at, end);
                }
            }
            Device::Cpu => self.cpu_used += o.temp.0 as i128,
        }
        out
    }

    /// An op ends at `at`: outputs become ready, modified tensors get a new
    /// version, temporaries and freed tensors are released, its pins end.
    pub fn op_end(
        &mut self,
        inst: &Instance,
        op: OpId,
        at: Ticks,
        look: &dyn Lookahead,
    ) -> Vec<Breach> {
        let o = inst.op(op);
        let mut out = Vec::new();
        // The op's pins end first: what it frees below is its own to free, and a
        // release deferred until this instant happens now.
        let mut ended: Vec<Pin> = Vec::new();
        if o.device == Device::Gpu {
            for t in pinned_by(inst, op) {
                if let Some(p) = self.unpin(t, Holder::Op(op), at) {
                    ended.push(p);
                }
            }
        }
        for &t in &o.produces {
            let ts = &mut self.tensors[t.ix()];
            if ts.exists {
                ts.latest += 1;
            }
            ts.exists = true;
            match o.device {
                // Only a copy still pending lands (as for a prefetch): one released
                // while the op ran holds no memory any more, so nothing lands.
                Device::Gpu => {
                    if let GpuCopy::Pending { .. } = ts.gpu {
                        ts.gpu = GpuCopy::Present(ts.latest);
                    }
                }
                Device::Cpu => {
                    ts.cpu = Some(ts.latest);
                    ts.cpu_producing = ts.cpu_producing.saturating_sub(1);
                }
            }
        }
        for &t in &o.modifies {
            self.tensors[t.ix()].latest += 1;
            match o.device {
                // Only the copy that stayed present through the whole op takes
                // the new version: a copy released and fetched again while the op
                // ran is another buffer (it holds what its prefetch carried, now
                // stale), and a pending copy was never read (R1 at the start).
                Device::Gpu => {
                    let buffer = self.buffers[t.ix()];
                    let same = ended
                        .iter()
                        .find(|p| p.tensor == t)
                        .map_or(true, |p| p.buffer == buffer);
                    let ts = &mut self.tensors[t.ix()];
                    if let (GpuCopy::Present(_), true) = (ts.gpu, same) {
                        ts.gpu = GpuCopy::Present(ts.latest);
                    }
                }
                Device::Cpu => {
                    let ts = &mut self.tensors[t.ix()];
                    if ts.cpu.is_some() {
                        ts.cpu = Some(ts.latest);
                    }
                }
            }
        }
        match o.device {
            Device::Gpu => {
                self.gpu_used -= o.temp.0 as i128;
                self.heap.give(Owner::Temp(op, at), o.temp.0);
            }
            Device::Cpu => self.cpu_used -= o.temp.0 as i128,
        }
        for p in &ended {
            self.settle(p.tensor, at, look, &mut out);
        }
        for &t in &o.frees {
            match o.device {
                Device::Gpu => {
                    if self.tensors[t.ix()].on_gpu() {
                        self.release(t, at, look, &mut out)
                    }
                }
                Device::Cpu => {}
            }
        }
        out
    }

    /// A transfer starts: an offload reads the GPU copy, a prefetch reads the CPU
    /// copy and takes GPU memory at once (assumption (E)). Either pins the GPU
    /// buffer until `end` (R10).
    ///
    /// A transfer that breaks R3 at its start (a tensor that may not move, an
    /// offload with no present GPU copy, a prefetch with no CPU copy or onto a
    /// GPU copy) is *void* (`models/MODEL.md` §2.3.1): it has no effect on the
    /// state, neither now nor at its end. It reads nothing, so its [`InFlight`]
    /// carries no version; a transfer carries a version exactly when it is not
    /// void.
    pub fn transfer_start(
        &mut self,
        inst: &Instance,
        dir: Direction,
        t: TensorId,
        at: Ticks,
        end: Ticks,
    ) -> (InFlight, Vec<Breach>) {
        let mut out = self.transfer_breaches(inst, dir, t);
        if !out.is_empty() {
            return (InFlight { version: None }, out);
        }
        let size = self.sizes[t.ix()];
        let ts = &mut self.tensors[t.ix()];
        // R3 held: an offload finds a present copy, a prefetch a CPU copy.
        let void = (InFlight { version: None }, Vec::new());
        let version = match dir {
            Direction::Offload => {
                let GpuCopy::Present(v) = ts.gpu else {
                    return void;
                };
                if !ts.held_on_cpu() {
                    self.cpu_used += size;
                }
                ts.cpu_incoming += 1;
                v
            }
            Direction::Prefetch => {
                let Some(v) = ts.cpu else {
                    return void;
                };
                let pending = GpuCopy::Pending {
                    ready: end,
                    version: Some(v),
                };
                self.allocate_gpu(t, pending, &mut out);
                v
            }
        };
        self.pin(t, Holder::Transfer(dir), at, end);
        (
            InFlight {
                version: Some(version),
            },
            out,
        )
    }

    /// Rule R3 for a transfer of `t` starting now: every reason it cannot run.
    fn transfer_breaches(&self, inst: &Instance, dir: Direction, t: TensorId) -> Vec<Breach> {
        let mut out = Vec::new();
        if !inst.tensor(t).transferable {
            out.push(Breach::NotTransferable { tensor: t });
        }
        let ts = &self.tensors[t.ix()];
        match dir {
            Direction::Offload => {
                if !matches!(ts.gpu, GpuCopy::Present(_)) {
                    out.push(Breach::OffloadAbsent { tensor: t });
                }
            }
            Direction::Prefetch => {
                if ts.cpu.is_none() {
                    out.push(Breach::PrefetchWithoutCpuCopy { tensor: t });
                }
                if ts.on_gpu() {
                    out.push(Breach::PrefetchResident { tensor: t });
                }
            }
        }
        out
    }

    /// A transfer ends: an offload writes its version to the CPU (and releases the
    /// GPU copy if `delete`, at once unless the copy is in use: then when its last
    /// user ends, R10); a prefetch makes its copy present. Its pin ends. A void
    /// transfer (its flight carries no version) does nothing.
    pub fn transfer_end(
        &mut self,
        dir: Direction,
        t: TensorId,
        flight: InFlight,
        delete: bool,
        at: Ticks,
        look: &dyn Lookahead,
    ) -> Vec<Breach> {
        let mut out = Vec::new();
        let Some(v) = flight.version else {
            return out;
        };
        let pinned = self.unpin(t, Holder::Transfer(dir), at).is_some();
        let ts = &mut self.tensors[t.ix()];
        match dir {
            Direction::Offload => {
                ts.cpu_incoming = ts.cpu_incoming.saturating_sub(1);
                ts.cpu = Some(v);
                if delete && self.tensors[t.ix()].on_gpu() {
                    let in_use = self.pin_covering(t, at).is_some();
                    if in_use && self.release == ReleaseRule::AfterEnd {
                        self.tensors[t.ix()].release_deferred = true;
                    } else {
                        self.drop_gpu(t, at, look, &mut out);
                    }
                }
            }
            Direction::Prefetch => {
                // A copy released while the prefetch ran holds nothing any more.
                if let GpuCopy::Pending { .. } = ts.gpu {
                    ts.gpu = GpuCopy::Present(v);
                }
            }
        }
        if pinned {
            self.settle(t, at, look, &mut out);
        }
        out
    }

    /// An explicit delete of the GPU copy (R3; R10 under the default rule).
    pub fn delete(&mut self, t: TensorId, at: Ticks, look: &dyn Lookahead) -> Vec<Breach> {
        let mut out = Vec::new();
        if !self.tensors[t.ix()].on_gpu() {
            out.push(Breach::DeleteAbsent { tensor: t });
            return out;
        }
        self.release(t, at, look, &mut out);
        out
    }

    /// Would an offload of `t` now only rewrite the CPU copy it already has?
    /// (The discount rule makes this the redundant traffic worth warning about.)
    pub fn offload_is_redundant(&self, t: TensorId) -> bool {
        let ts = &self.tensors[t.ix()];
        matches!(ts.gpu, GpuCopy::Present(v) if ts.cpu == Some(v))
    }

    pub fn gpu_bytes(&self) -> Bytes {
        Bytes(self.gpu_used.max(0) as u64)
    }
}

/// The tensors a GPU op pins while it runs (R10): what it reads, less what it
/// consumes, and what it produces or modifies; each once.
pub fn pinned_by(inst: &Instance, op: OpId) -> Vec<TensorId> {
    let o = inst.op(op);
    let mut v: Vec<TensorId> = Vec::new();
    for &t in o.reads.iter().chain(&o.produces).chain(&o.modifies) {
        if !o.consumes.contains(&t) && !v.contains(&t) {
            v.push(t);
        }
    }
    v
}

/// The memory an op needs on the GPU while it runs, counting only what it itself
/// touches (its inputs, outputs and scratch, less what it consumes). Every valid
/// schedule keeps this within capacity; bounds and heuristics use it.
pub fn op_footprint(inst: &Instance, op: OpId) -> Bytes {
    let o = inst.op(op);
    let mut s: u128 = o.temp.0 as u128;
    for t in o.reads.iter().chain(o.produces.iter()) {
        if !o.consumes.contains(t) {
            s += inst.tensor(*t).size.0 as u128;
        }
    }
    Bytes(s.min(u64::MAX as u128) as u64)
}

/// The least number of ticks a transfer of `t` may last (rule *bandwidth*).
pub fn transfer_ticks(inst: &Instance, t: TensorId) -> Ticks {
    inst.machine
        .bandwidth
        .min_ticks(inst.tensor(t).size)
        .expect("validated instance: transfer times fit in i64")
}
