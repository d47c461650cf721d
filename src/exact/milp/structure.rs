//! What the MILP needs to know about an instance before any horizon is chosen:
//! the fixed op sequence, each tensor's static lifetime, and its *windows* (the
//! stretches between two consecutive needs of a GPU copy, in which it may be
//! evicted) grouped into *epochs* (the stretches between two changes of its
//! value, in which one offload suffices).
//!
//! Owns: [`Structure`] and the scope test. The structural limits listed in
//! `proofs/EXACTNESS.md` §3 are decided here; an instance outside them is
//! refused with [`ExactError::Unsupported`], never solved approximately.

use crate::exact::{ExactError, Method};
use crate::model::{ComputeOrder, Device, Instance, Mode, OpId, Placement, ReleaseRule, TensorId};
use crate::semantics::transfer_ticks;

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
}

fn unsupported(reason: impl Into<String>) -> ExactError {
    ExactError::Unsupported {
        method: Method::Milp,
        reason: reason.into(),
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
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
        let seq = match &inst.order {
            ComputeOrder::Fixed(v) => v.clone(),
            ComputeOrder::Free => return Err(unsupported("the compute order must be fixed")),
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
            if inst.op(*o).device != Device::Gpu {
                return Err(unsupported("CPU ops are not encoded"));
            }
        }
        if inst.machine.cpu_capacity.is_some() {
            return Err(unsupported("a CPU memory capacity is not encoded"));
        }
        let cyclic = inst.mode == Mode::Cyclic;
        let n = seq.len();
        let nt = inst.tensors.len();
        let to_i64 = |x: u64, what: &str| {
            i64::try_from(x).map_err(|_| unsupported(format!("{what} does not fit in 63 bits")))
        };
        let mut unit = 0u64;
        for t in &inst.tensors {
            unit = gcd(unit, t.size.0);
        }
        for o in &seq {
            unit = gcd(unit, inst.op(*o).temp.0);
        }
        let unit = unit.max(1);
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

        // Uses per tensor, by position.
        let mut reads = vec![Vec::new(); nt];
        let mut prods = vec![Vec::new(); nt];
        let mut rels: Vec<Vec<Release>> = vec![Vec::new(); nt];
        let mut mods = vec![Vec::new(); nt];
        for (k, o) in seq.iter().enumerate() {
            let op = inst.op(*o);
            for t in &op.reads {
                reads[t.ix()].push(k);
            }
            for t in &op.produces {
                prods[t.ix()].push(k);
            }
            for t in &op.consumes {
                rels[t.ix()].push(Release::Consumed(k));
            }
            for t in &op.frees {
                if !op.consumes.contains(t) {
                    rels[t.ix()].push(Release::Freed(k));
                }
            }
            for t in &op.modifies {
                mods[t.ix()].push(k);
            }
        }
        let persistent = inst.persistent();
        let mut base = vec![Base::None; nt];
        let mut windows = Vec::new();
        let mut epochs = Vec::new();
        let mut unmodified_persistent = Vec::new();
        for i in 0..nt {
            let t = TensorId(i as u32);
            let ten = inst.tensor(t);
            let name = &ten.name;
            if reads[i].is_empty()
                && prods[i].is_empty()
                && mods[i].is_empty()
                && rels[i].is_empty()
            {
                if !cyclic && ten.initial.on_gpu() && size[i] > 0 {
                    return Err(unsupported(format!(
                        "tensor {name} is on the GPU but never used (deleting dead tensors is not encoded)"
                    )));
                } else if cyclic && persistent[i] && size[i] > 0 {
                    return Err(unsupported(format!(
                        "persistent tensor {name} is never used"
                    )));
                }
                continue;
            }
            if rels[i].len() > 1 || prods[i].len() > 1 || mods[i].len() > 1 {
                return Err(unsupported(format!(
                    "tensor {name} is produced, released or modified more than once per iteration"
                )));
            }
            if let Some(&m) = mods[i].first() {
                if !reads[i].contains(&m) {
                    return Err(unsupported(format!(
                        "tensor {name} is modified by an op that does not read it"
                    )));
                }
            }
            let release = rels[i].first().copied();
            if let Some(r) = release {
                let k = match r {
                    Release::Consumed(k) | Release::Freed(k) => k,
                };
                if !reads[i].contains(&k) {
                    return Err(unsupported(format!(
                        "tensor {name} is released by an op that does not read it"
                    )));
                }
                if reads[i].iter().any(|&j| j > k) || mods[i].iter().any(|&j| j > k) {
                    return Err(unsupported(format!(
                        "tensor {name} is read after it is released"
                    )));
                }
            }
            let movable = ten.transferable && size[i] > 0;
            // The needs of one epoch, in unrolled positions, and its anchor.
            let mut needs: Vec<UPos> = Vec::new();
            let anchor: Anchor;
            let ready: Option<UPos>;
            let needs_offload: bool;
            if !cyclic {
                if !mods[i].is_empty() {
                    return Err(unsupported(format!(
                        "one-shot tensor {name} is modified (not encoded)"
                    )));
                }
                if ten.initial == Placement::Cpu && !reads[i].is_empty() {
                    return Err(unsupported(format!(
                        "tensor {name} starts on the CPU only (not encoded)"
                    )));
                }
                match (prods[i].first(), ten.initial.on_gpu()) {
                    (Some(_), true) => {
                        return Err(unsupported(format!(
                            "tensor {name} is produced while already on the GPU"
                        )))
                    }
                    (Some(&p), false) => {
                        if reads[i].iter().any(|&j| j <= p) {
                            return Err(unsupported(format!(
                                "tensor {name} is read before it is produced"
                            )));
                        }
                        base[i] = Base::Produced(p, release);
                        anchor = Anchor::Ready(p);
                        ready = Some(p);
                    }
                    (None, true) => {
                        base[i] = Base::Initial(release);
                        anchor = Anchor::Time0;
                        ready = None;
                    }
                    (None, false) => {
                        return Err(unsupported(format!(
                            "tensor {name} is read but never materialised"
                        )));
                    }
                }
                let last = reads[i].iter().copied().max();
                if release.is_none() && size[i] > 0 {
                    let last_need = last.or(ready).unwrap_or(0);
                    if last_need + 1 < n {
                        return Err(unsupported(format!(
                            "tensor {name} stays allocated after its last use (deleting dead tensors is not encoded)"
                        )));
                    }
                }
                needs_offload = !ten.initial.on_cpu();
                needs.extend(reads[i].iter().copied());
            } else if persistent[i] {
                if release.is_some() {
                    return Err(unsupported(format!(
                        "persistent tensor {name} is released by an op"
                    )));
                }
                base[i] = Base::Always;
                if let Some(&m) = mods[i].first() {
                    anchor = Anchor::Ready(m);
                    ready = Some(m);
                    needs_offload = true;
                    needs.extend(reads[i].iter().copied().filter(|&k| k > m));
                    needs.extend(reads[i].iter().copied().filter(|&k| k <= m).map(|k| k + n));
                } else {
                    unmodified_persistent.push(t);
                    if reads[i].is_empty() {
                        return Err(unsupported(format!(
                            "persistent tensor {name} is never read"
                        )));
                    }
                    let r1 = reads[i][0];
                    anchor = Anchor::Read(r1);
                    ready = None;
                    needs_offload = false;
                    needs.extend(reads[i].iter().copied().skip(1));
                    needs.push(r1 + n);
                }
            } else {
                let p = prods[i][0];
                match release {
                    Some(Release::Consumed(k)) | Some(Release::Freed(k)) if k >= p => {}
                    _ => {
                        return Err(unsupported(format!(
                            "tensor {name} must be produced and released within one iteration"
                        )))
                    }
                }
                if !mods[i].is_empty() || reads[i].iter().any(|&j| j <= p) {
                    return Err(unsupported(format!(
                        "tensor {name}: unsupported use pattern"
                    )));
                }
                base[i] = Base::Produced(p, release);
                anchor = Anchor::Ready(p);
                ready = Some(p);
                needs_offload = true;
                needs.extend(reads[i].iter().copied());
            }
            if !movable {
                continue;
            }
            if cyclic && ready.is_none() && needs_offload {
                unreachable!("cyclic epochs without a ready op have a current CPU copy");
            }
            let e = epochs.len();
            let mut ep = Epoch {
                tensor: t,
                ready,
                needs_offload,
                windows: Vec::new(),
            };
            let mut from = anchor;
            for &b in &needs {
                ep.windows.push(windows.len());
                windows.push(Window {
                    tensor: t,
                    from,
                    to: b,
                    epoch: e,
                });
                from = Anchor::Read(b);
            }
            epochs.push(ep);
        }

        // Static memory at each op's start checkpoint (rule R7, models/MODEL.md §2.2).
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
        let static_mem = (0..n)
            .map(|k| {
                tmp[k]
                    + (0..nt)
                        .filter(|&i| alive_at(base[i], k))
                        .map(|i| size[i])
                        .sum::<i64>()
            })
            .collect();
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
        let instants =
            2 * self.n() as i64 + 2 * self.epochs.len() as i64 + 3 * self.windows.len() as i64;
        ops + offl + pref + instants + 1
    }
}
