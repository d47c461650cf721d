//! What the MILP needs to know about an instance before any horizon is chosen:
//! the fixed op sequence, each tensor's static lifetime, and its *windows* (the
//! stretches between two consecutive needs of a GPU copy, in which it may be
//! evicted) grouped into *epochs* (the stretches between two changes of its
//! value, in which one offload suffices).
//!
//! Owns: [`Structure`] and the scope test. The structural limits listed in
//! `proofs/EXACTNESS.md` §3 are decided here; an instance outside them is
//! refused with [`ExactError::Unsupported`], never solved approximately.
//!
//! Must not import: bounds, heuristics, traces, reports, the CLI.

use super::cpu::{self, CpuRoles};
use crate::exact::{ExactError, Method};
use crate::model::{ComputeOrder, Instance, Mode, OpId, Placement, ReleaseRule, TensorId};
use crate::semantics::transfer_ticks;
use num_integer::gcd;

/// A position in the unrolled sequence: `lap * n + k` for the `k`-th op of the
/// order in period `lap` (always 0 for one-shot instances, 0 or 1 for cyclic).
pub type UPos = usize;

/// From when a window's tensor may be released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// Present from time 0 (initial placement).
    Time0,
    /// Read by the op at this position: present at its start (rule R1).
    Read(UPos),
    /// Produced or modified by the op at this position: current from its end.
    Ready(UPos),
}

#[derive(Clone, Debug)]
pub struct Window {
    pub tensor: TensorId,
    pub from: Anchor,
    /// The op that reads the tensor next (it must be back by its start).
    pub to: UPos,
    pub epoch: usize,
}

#[derive(Clone, Debug)]
pub struct Epoch {
    pub tensor: TensorId,
    /// The op whose end makes the value current (None: current from time 0).
    pub ready: Option<UPos>,
    /// Must a release in this epoch be preceded by an offload (rule R6)? False
    /// when the CPU copy is current from the start of the epoch.
    pub needs_offload: bool,
    pub windows: Vec<usize>,
}

/// When an op releases a tensor's static allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// At the op's start (`consumes`).
    Consumed(usize),
    /// At the op's end (`frees`).
    Freed(usize),
}

/// A tensor's GPU allocation as the op sequence alone decides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// Never allocated (or of size zero).
    None,
    /// Persistent tensor of a cyclic instance: allocated unless evicted.
    Always,
    /// Placed on the GPU at time 0 (one-shot).
    Initial(Option<Release>),
    /// Allocated at the start of op `p`.
    Produced(usize, Option<Release>),
}

#[derive(Clone, Debug)]
pub struct Structure {
    pub cyclic: bool,
    /// The release rule (models/MODEL.md R10): under [`ReleaseRule::AfterEnd`]
    /// an op holds what it reads until it ends, so a window anchored at a read
    /// opens at the reader's end and no tensor is freed before its freeing op
    /// ends; under the relaxation it opens one tick after the reader's start.
    pub after_end: bool,
    /// One channel for both directions (else one per direction).
    pub half_duplex: bool,
    /// The op sequence.
    pub seq: Vec<OpId>,
    pub dur: Vec<i64>,
    pub tmp: Vec<i64>,
    /// Per tensor (in units of `unit` bytes).
    pub size: Vec<i64>,
    pub base: Vec<Base>,
    /// Transfer ticks per tensor (⌈size/β⌉).
    pub dt: Vec<i64>,
    pub windows: Vec<Window>,
    pub epochs: Vec<Epoch>,
    /// Capacity in units of `unit` bytes (rounded down: exact, as every
    /// quantity counted against it is a multiple of `unit`).
    pub cap: i64,
    /// The gcd of all sizes and scratch amounts.
    pub unit: u64,
    /// Memory at each op's start checkpoint with every tensor at its static
    /// allocation (before evictions), in units.
    pub static_mem: Vec<i64>,
    /// Persistent tensors whose CPU copy is declared current in the cyclic
    /// boundary state because nothing ever modifies them.
    pub unmodified_persistent: Vec<TensorId>,
    /// Cyclic per-iteration tensors that no op releases (`op_sequence`): their
    /// static life ends at the end of their last use, as if that op freed
    /// them, and the decoder writes that release as an explicit delete
    /// (proofs/EXACTNESS.md §3.9).
    pub dropped: Vec<bool>,
    /// The ops on the CPU and the roles of what they read (`cpu`); their
    /// host-only tensors and host inputs are not in `base`, `epochs` or
    /// `windows` (`Base::None`).
    pub cpu: CpuRoles,
}

fn unsupported(reason: impl Into<String>) -> ExactError {
    ExactError::Unsupported {
        method: Method::Milp,
        reason: reason.into(),
    }
}

impl Structure {
    pub fn n(&self) -> usize {
        self.seq.len()
    }
    /// How long after the start of op `k` (a position in the sequence) a
    /// reader lets go of what it reads (rule R10): its duration under
    /// [`ReleaseRule::AfterEnd`], one tick under the relaxation. At least one
    /// tick either way: at one instant releases come before op starts
    /// (models/MODEL.md §2.4), so a release at a zero-duration reader's own
    /// instant would starve it (R1).
    pub fn read_lag(&self, k: usize) -> i64 {
        if self.after_end {
            self.dur[k].max(1)
        } else {
            1
        }
    }
    pub fn analyse(inst: &Instance) -> Result<Structure, ExactError> {
        let (seq, cpu_seq) = cpu::split(inst, &fixed_sequence(inst)?);
        if seq.is_empty() {
            return Err(unsupported("the order has no GPU ops"));
        }
        let cpu = CpuRoles::of(inst, &seq, cpu_seq)?;
        let cyclic = inst.mode == Mode::Cyclic;
        let n = seq.len();
        let nt = inst.tensors.len();
        let to_i64 = |x: u64, what: &str| {
            i64::try_from(x).map_err(|_| unsupported(format!("{what} does not fit in 63 bits")))
        };
        let unit = memory_unit(inst, &seq);
        let dur: Vec<i64> = seq.iter().map(|o| inst.op(*o).duration.0).collect();
        let tmp: Vec<i64> = seq
            .iter()
            .map(|o| to_i64(inst.op(*o).temp.0 / unit, "scratch"))
            .collect::<Result<_, _>>()?;
        let size: Vec<i64> = inst
            .tensors
            .iter()
            .map(|t| to_i64(t.size.0 / unit, "a tensor size"))
            .collect::<Result<_, _>>()?;
        let cap = to_i64(inst.machine.gpu_capacity.0 / unit, "the capacity")?;
        let dt: Vec<i64> = (0..nt)
            .map(|i| transfer_ticks(inst, TensorId(i as u32)).0)
            .collect();
        let uses = Uses::of(inst, &seq);
        let persistent = inst.persistent();
        let mut base = vec![Base::None; nt];
        let mut windows = Vec::new();
        let mut epochs = Vec::new();
        let mut unmodified_persistent = Vec::new();
        let mut dropped = vec![false; nt];
        for i in 0..nt {
            let t = TensorId(i as u32);
            let ten = inst.tensor(t);
            let u = uses.tensor(i);
            if cpu.owns(i) {
                continue; // host-only or a host input: encoded beside the CPU ops
            }
            if u.unused() {
                unused_in_scope(
                    &ten.name,
                    cyclic,
                    ten.initial.on_gpu(),
                    persistent[i],
                    size[i],
                )?;
                continue;
            }
            u.check_once(&ten.name)?;
            let life = if !cyclic {
                u.one_shot_life(&ten.name, ten.initial, size[i], n)?
            } else if persistent[i] {
                let life = u.persistent_life(&ten.name, n)?;
                if u.mods.is_empty() && cpu.updated_by[i].is_none() {
                    unmodified_persistent.push(t);
                }
                life
            } else {
                let (life, drop) = u.temporary_life(&ten.name, &dur)?;
                dropped[i] = drop;
                life
            };
            base[i] = life.base;
            if !(ten.transferable && size[i] > 0) {
                continue;
            }
            if cyclic && life.ready.is_none() && life.needs_offload {
                unreachable!("cyclic epochs without a ready op have a current CPU copy");
            }
            epochs.push(life.epoch(t, epochs.len(), &mut windows));
        }
        let static_mem = static_memory(&base, &size, &tmp);
        Ok(Structure {
            cyclic,
            after_end: inst.release == ReleaseRule::AfterEnd,
            half_duplex: inst.machine.duplex == crate::model::Duplex::HalfDuplex,
            seq,
            dur,
            tmp,
            size,
            base,
            dt,
            windows,
            epochs,
            cap,
            unit,
            static_mem,
            unmodified_persistent,
            dropped,
            cpu,
        })
    }

    /// The least GPU memory op `k` needs at its start whatever is evicted:
    /// its static memory less every tensor that some window could evict there.
    pub fn least_mem(&self, k: usize) -> i64 {
        let n = self.n();
        let mut m = self.static_mem[k];
        let mut seen = std::collections::HashSet::new();
        for w in &self.windows {
            let a = match w.from {
                Anchor::Time0 => None,
                Anchor::Read(a) | Anchor::Ready(a) => Some(a),
            };
            for q in [k, k + n] {
                let inside = a.is_none_or(|a| a < q) && q < w.to;
                if inside && seen.insert(w.tensor) {
                    m -= self.size[w.tensor.ix()];
                }
            }
        }
        m
    }

    /// The least period any schedule of this sequence can have: the busier
    /// device's compute (R2: one stream per device; R8: compute lies in
    /// [0, P]), at least one tick.
    pub fn least_period(&self) -> i64 {
        let gpu: i64 = self.dur.iter().sum();
        let cpu: i64 = self.cpu.dur.iter().sum();
        gpu.max(cpu).max(1)
    }

    /// A horizon that suffices for feasibility (proofs/EXACTNESS.md §4): every
    /// valid schedule within the structural limits can be compressed to one whose
    /// busy ticks are at most the total duration of ops and transfers and whose
    /// idle stretches are single ticks after distinct instants.
    pub fn horizon_bound(&self) -> i64 {
        let ops: i64 = self.dur.iter().sum();
        let offl: i64 = self
            .epochs
            .iter()
            .filter(|e| e.needs_offload)
            .map(|e| self.dt[e.tensor.ix()])
            .sum();
        let pref: i64 = self.windows.iter().map(|w| self.dt[w.tensor.ix()]).sum();
        // The CPU ops and their host inputs' offloads are busy time too; each
        // input adds an offload's two instants and its delete (§3.12).
        let cpu_ops: i64 = self.cpu.dur.iter().sum();
        let inputs: i64 = self.cpu.inputs.iter().map(|c| self.dt[c.tensor.ix()]).sum();
        let instants = 2 * (self.n() + self.cpu.n()) as i64
            + 2 * self.epochs.len() as i64
            + 3 * (self.windows.len() + self.cpu.inputs.len()) as i64;
        ops + offl + pref + cpu_ops + inputs + instants + 1
    }
}

/// The fixed order (GPU and CPU ops; `cpu::split` parts them), or why the
/// instance is out of scope.
fn fixed_sequence(inst: &Instance) -> Result<Vec<OpId>, ExactError> {
    let seq = match &inst.order {
        ComputeOrder::Fixed(v) => v.clone(),
        ComputeOrder::Free | ComputeOrder::Slots(_) => {
            return Err(unsupported("the compute order must be fixed"))
        }
    };
    if seq.is_empty() {
        return Err(unsupported("the order has no ops"));
    }
    let mut seen = vec![false; inst.ops.len()];
    for o in &seq {
        if std::mem::replace(&mut seen[o.ix()], true) {
            return Err(unsupported(format!(
                "op {} appears twice in the order (rematerialisation is not encoded)",
                inst.op(*o).name
            )));
        }
    }
    if inst.machine.cpu_capacity.is_some() {
        return Err(unsupported("a CPU memory capacity is not encoded"));
    }
    Ok(seq)
}

/// The memory unit: the gcd of every tensor size and scratch (at least 1).
fn memory_unit(inst: &Instance, seq: &[OpId]) -> u64 {
    let mut unit = 0u64;
    for t in &inst.tensors {
        unit = gcd(unit, t.size.0);
    }
    for o in seq {
        unit = gcd(unit, inst.op(*o).temp.0);
    }
    unit.max(1)
}

/// Uses per tensor, by position in the sequence.
struct Uses {
    reads: Vec<Vec<usize>>,
    prods: Vec<Vec<usize>>,
    rels: Vec<Vec<Release>>,
    mods: Vec<Vec<usize>>,
}

impl Uses {
    fn of(inst: &Instance, seq: &[OpId]) -> Uses {
        let nt = inst.tensors.len();
        let mut u = Uses {
            reads: vec![Vec::new(); nt],
            prods: vec![Vec::new(); nt],
            rels: vec![Vec::new(); nt],
            mods: vec![Vec::new(); nt],
        };
        for (k, o) in seq.iter().enumerate() {
            let op = inst.op(*o);
            for t in &op.reads {
                u.reads[t.ix()].push(k);
            }
            for t in &op.produces {
                u.prods[t.ix()].push(k);
            }
            for t in &op.consumes {
                u.rels[t.ix()].push(Release::Consumed(k));
            }
            for t in &op.frees {
                if !op.consumes.contains(t) {
                    u.rels[t.ix()].push(Release::Freed(k));
                }
            }
            for t in &op.modifies {
                u.mods[t.ix()].push(k);
            }
        }
        u
    }
    fn tensor(&self, i: usize) -> TensorUses<'_> {
        TensorUses {
            reads: &self.reads[i],
            prods: &self.prods[i],
            rels: &self.rels[i],
            mods: &self.mods[i],
        }
    }
}

/// A never-used tensor is in scope unless it would occupy memory for nothing
/// (deleting dead tensors is not encoded).
fn unused_in_scope(
    name: &str,
    cyclic: bool,
    on_gpu: bool,
    persistent: bool,
    size: i64,
) -> Result<(), ExactError> {
    if !cyclic && on_gpu && size > 0 {
        return Err(unsupported(format!(
            "tensor {name} is on the GPU but never used (deleting dead tensors is not encoded)"
        )));
    } else if cyclic && persistent && size > 0 {
        return Err(unsupported(format!(
            "persistent tensor {name} is never used"
        )));
    }
    Ok(())
}

/// One tensor's uses, by position.
struct TensorUses<'a> {
    reads: &'a [usize],
    prods: &'a [usize],
    rels: &'a [Release],
    mods: &'a [usize],
}

/// A tensor's static life and the needs of its one epoch (unrolled positions).
struct Life {
    base: Base,
    anchor: Anchor,
    ready: Option<UPos>,
    needs_offload: bool,
    needs: Vec<UPos>,
}

impl Life {
    /// The epoch (number `e`), its windows appended to `windows`.
    fn epoch(&self, t: TensorId, e: usize, windows: &mut Vec<Window>) -> Epoch {
        let mut ep = Epoch {
            tensor: t,
            ready: self.ready,
            needs_offload: self.needs_offload,
            windows: Vec::new(),
        };
        let mut from = self.anchor;
        for &b in &self.needs {
            ep.windows.push(windows.len());
            windows.push(Window {
                tensor: t,
                from,
                to: b,
                epoch: e,
            });
            from = Anchor::Read(b);
        }
        ep
    }
}

impl TensorUses<'_> {
    fn unused(&self) -> bool {
        self.reads.is_empty()
            && self.prods.is_empty()
            && self.mods.is_empty()
            && self.rels.is_empty()
    }

    fn release(&self) -> Option<Release> {
        self.rels.first().copied()
    }

    /// At most one production, release and modification per iteration, by an
    /// op that reads the tensor; no read after the release.
    fn check_once(&self, name: &str) -> Result<(), ExactError> {
        if self.rels.len() > 1 || self.prods.len() > 1 || self.mods.len() > 1 {
            return Err(unsupported(format!(
                "tensor {name} is produced, released or modified more than once per iteration"
            )));
        }
        if let Some(&m) = self.mods.first() {
            if !self.reads.contains(&m) {
                return Err(unsupported(format!(
                    "tensor {name} is modified by an op that does not read it"
                )));
            }
        }
        if let Some(r) = self.release() {
            let k = match r {
                Release::Consumed(k) | Release::Freed(k) => k,
            };
            if !self.reads.contains(&k) {
                return Err(unsupported(format!(
                    "tensor {name} is released by an op that does not read it"
                )));
            }
            if self.reads.iter().any(|&j| j > k) || self.mods.iter().any(|&j| j > k) {
                return Err(unsupported(format!(
                    "tensor {name} is read after it is released"
                )));
            }
        }
        Ok(())
    }

    /// One-shot: materialised once (initially on the GPU, or produced), never
    /// modified, released after its last use or alive to the end.
    fn one_shot_life(
        &self,
        name: &str,
        initial: Placement,
        size: i64,
        n: usize,
    ) -> Result<Life, ExactError> {
        let release = self.release();
        if !self.mods.is_empty() {
            return Err(unsupported(format!(
                "one-shot tensor {name} is modified (not encoded)"
            )));
        }
        if initial == Placement::Cpu && !self.reads.is_empty() {
            return Err(unsupported(format!(
                "tensor {name} starts on the CPU only (not encoded)"
            )));
        }
        let (base, anchor, ready) = match (self.prods.first(), initial.on_gpu()) {
            (Some(_), true) => {
                return Err(unsupported(format!(
                    "tensor {name} is produced while already on the GPU"
                )))
            }
            (Some(&p), false) => {
                if self.reads.iter().any(|&j| j <= p) {
                    return Err(unsupported(format!(
                        "tensor {name} is read before it is produced"
                    )));
                }
                (Base::Produced(p, release), Anchor::Ready(p), Some(p))
            }
            (None, true) => (Base::Initial(release), Anchor::Time0, None),
            (None, false) => {
                return Err(unsupported(format!(
                    "tensor {name} is read but never materialised"
                )));
            }
        };
        let last = self.reads.iter().copied().max();
        if release.is_none() && size > 0 {
            let last_need = last.or(ready).unwrap_or(0);
            if last_need + 1 < n {
                return Err(unsupported(format!(
                    "tensor {name} stays allocated after its last use (deleting dead tensors is not encoded)"
                )));
            }
        }
        Ok(Life {
            base,
            anchor,
            ready,
            needs_offload: !initial.on_cpu(),
            needs: self.reads.to_vec(),
        })
    }

    /// Cyclic, persistent: always allocated; its epoch runs from its
    /// modification (or first read) round the period.
    fn persistent_life(&self, name: &str, n: usize) -> Result<Life, ExactError> {
        if self.release().is_some() {
            return Err(unsupported(format!(
                "persistent tensor {name} is released by an op"
            )));
        }
        let mut needs = Vec::new();
        if let Some(&m) = self.mods.first() {
            needs.extend(self.reads.iter().copied().filter(|&k| k > m));
            needs.extend(
                self.reads
                    .iter()
                    .copied()
                    .filter(|&k| k <= m)
                    .map(|k| k + n),
            );
            return Ok(Life {
                base: Base::Always,
                anchor: Anchor::Ready(m),
                ready: Some(m),
                needs_offload: true,
                needs,
            });
        }
        if self.reads.is_empty() {
            return Err(unsupported(format!(
                "persistent tensor {name} is never read"
            )));
        }
        let r1 = self.reads[0];
        needs.extend(self.reads.iter().copied().skip(1));
        needs.push(r1 + n);
        Ok(Life {
            base: Base::Always,
            anchor: Anchor::Read(r1),
            ready: None,
            needs_offload: false,
            needs,
        })
    }

    /// Cyclic, temporary: produced and released within one iteration, by an
    /// op, or (no op releases it: `op_sequence`) dropped at the end of its
    /// last use, which then acts as its freeing op (the bool: dropped).
    fn temporary_life(&self, name: &str, dur: &[i64]) -> Result<(Life, bool), ExactError> {
        let p = self.prods[0];
        let (release, dropped) = match self.release() {
            Some(r) => (r, false),
            None => {
                let last = self.reads.iter().copied().chain([p]).max().unwrap_or(p);
                if dur[last] == 0 {
                    return Err(unsupported(format!(
                        "per-iteration tensor {name} is released by no op and last used by a zero-duration op (a delete at its instant would precede it)"
                    )));
                }
                (Release::Freed(last), true)
            }
        };
        match release {
            Release::Consumed(k) | Release::Freed(k) if k >= p => {}
            _ => {
                return Err(unsupported(format!(
                    "tensor {name} must be produced and released within one iteration"
                )))
            }
        }
        if !self.mods.is_empty() {
            return Err(unsupported(format!(
                "per-iteration tensor {name} is modified (one value per iteration is encoded)"
            )));
        }
        if self.reads.iter().any(|&j| j <= p) {
            return Err(unsupported(format!(
                "per-iteration tensor {name} is read before it is produced"
            )));
        }
        let life = Life {
            base: Base::Produced(p, Some(release)),
            anchor: Anchor::Ready(p),
            ready: Some(p),
            needs_offload: true,
            needs: self.reads.to_vec(),
        };
        Ok((life, dropped))
    }
}

/// Static memory at each op's start checkpoint (rule R7, models/MODEL.md §2.2).
fn static_memory(base: &[Base], size: &[i64], tmp: &[i64]) -> Vec<i64> {
    let alive_at = |b: Base, k: usize| -> bool {
        let not_released = |r: Option<Release>| match r {
            None => true,
            Some(Release::Consumed(c)) => k < c,
            Some(Release::Freed(f)) => k <= f,
        };
        match b {
            Base::None => false,
            Base::Always => true,
            Base::Initial(r) => not_released(r),
            Base::Produced(p, r) => k >= p && not_released(r),
        }
    };
    (0..tmp.len())
        .map(|k| {
            tmp[k]
                + (0..base.len())
                    .filter(|&i| alive_at(base[i], k))
                    .map(|i| size[i])
                    .sum::<i64>()
        })
        .collect()
}
