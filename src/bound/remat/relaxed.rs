//! `remat-relaxed-search`: the optimum of a relaxation of the model, found by
//! an exhaustive search over integer instants, for small `remat_chain`s
//! (proved in `proofs/REMAT-BOUNDS.md`, section `remat-relaxed-search`).
//!
//! The relaxed system keeps the model's rules (R1–R5, R7, R10 as far as it
//! uses them; one GPU stream, one half-duplex link, exact memory at every
//! allocation) and drops or loosens a few: R6 (no data loss), R11's "exactly"
//! (a group runs at least once), the order of deletes and allocations within an
//! instant (a delete may come between two allocations), the CPU capacity, and
//! 0-byte tensors move at no cost. Every valid schedule is then a path of the
//! relaxed system that meets its last obligation (required op or group) no
//! later than the schedule ends, so the least such instant over all paths is a
//! lower bound. The path set is infinite (forwards may repeat without end), but
//! the states are finite and the system is time-invariant: a breadth-first
//! search by instant, with a state seen earlier (or dominated: more GPU copies
//! and more current CPU copies, the rest equal) never expanded again, and an
//! admissible remaining-compute estimate as a cut-off raised until a goal is
//! met (iterative deepening), finds the least instant exactly. Deletes are
//! made only just before an allocation that needs them, and only minimal sets.
//!
//! It is written on the compiled [`Instance`] (bit masks of tensors), and
//! refuses what it does not model (cyclic, fixed or slotted orders, CPU ops,
//! modifications, `after`, a full-duplex link, `after_start`, more than 64
//! tensors or 128 ops), chains of more than [`MAX_TENSORS`] tensors, and
//! chains whose compute exceeds [`MAX_COMPUTE`] ticks (a search by instant
//! is hopeless there).
//!
//! Owns: [`RematRelaxedSearch`], [`relaxed_optimum`], [`Outcome`].
//! Must not import: heuristics, exact solvers, the checker.

use super::{chain, infeasible};
use crate::bound::{BoundError, BoundMethod, Failure, LowerBound, Strength};
use crate::family::InstanceFile;
use crate::model::{ComputeOrder, Device, Duplex, Instance, Mode, ReleaseRule};
use std::collections::HashMap;

/// The largest compute sum (ticks) the search takes on.
pub const MAX_COMPUTE: i64 = 2_000;
/// The most tensors it takes on: three layers with one option each (12), or
/// two blocks with up to two options each plus a third (13, 14). Four plain
/// layers (15) already take minutes on some tight chains.
pub const MAX_TENSORS: usize = 14;
/// States stored per deepening pass before the search gives up.
pub const MAX_STATES: usize = 1_000_000;
/// Minimal delete sets tried before one allocation, at most.
const MAX_COVERS: usize = 4_096;

/// What the search proved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The relaxation's optimum (every valid schedule lasts at least this).
    Optimum(i64),
    /// The state budget ran out; every valid schedule lasts at least this.
    AtLeast(i64),
    /// The relaxation has no path to the goal: no valid schedule exists.
    Infeasible,
}

/// One op as bit masks over tensors.
struct OpBits {
    reads: u64,
    produces: u64,
    consumes: u64,
    frees: u64,
    /// What R10 pins while it runs: (reads \ consumes) ∪ produces.
    pins: u64,
    dur: u32,
    temp: u64,
    /// The obligations a run of it meets (its own bit, or its group's).
    sat: u64,
}

/// The instance as the search reads it.
struct Net {
    size: Vec<u64>,
    /// Ticks of a transfer of each tensor (transferable with bytes > 0).
    xfer: Vec<Option<u32>>,
    /// Transferable 0-byte tensors: they move at no cost.
    zero: u64,
    ops: Vec<OpBits>,
    all: u64,
    init_gpu: u64,
    init_cpu: u64,
    cap: u64,
    /// Per obligation: its least duration and the tensors each of its ops reads.
    oblig: Vec<(u32, u64)>,
    /// Per tensor: its producers' least duration, and whether one of them
    /// meets an obligation (then it is not counted apart); `None`: no producer.
    made: Vec<Option<(u32, u128, bool)>>,
    /// Tensors by their producers' least duration, longest first.
    by_cost: Vec<usize>,
}

const NONE: u8 = u8::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    op: u8,
    op_left: u32,
    xf: u8,
    pre: bool,
    xf_left: u32,
    done: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Val {
    gpu: u64,
    cpu: u64,
}

#[derive(Clone, Copy, Debug)]
struct St {
    k: Key,
    v: Val,
}

fn bits(ids: &[crate::model::TensorId]) -> u64 {
    ids.iter().fold(0, |m, t| m | 1u64 << t.ix())
}

fn refuse(what: &str) -> Failure {
    Failure::OutsideSearch(format!("the relaxed search does not take {what}"))
}

impl Net {
    fn of(inst: &Instance) -> Result<Net, Failure> {
        if inst.mode != Mode::OneShot || inst.order != ComputeOrder::Free {
            return Err(refuse("a cyclic schedule or a fixed or slotted order"));
        }
        if inst.release != ReleaseRule::AfterEnd || inst.machine.duplex != Duplex::HalfDuplex {
            return Err(refuse("`after_start` or a full-duplex link"));
        }
        if inst.tensors.len() > 64 || inst.ops.len() > 128 {
            return Err(refuse("more than 64 tensors or 128 ops"));
        }
        let bad = |o: &crate::model::Op| {
            o.device != Device::Gpu || !o.modifies.is_empty() || !o.after.is_empty()
        };
        if inst.ops.iter().any(bad) {
            return Err(refuse("CPU ops, modifications or `after`"));
        }
        if inst.tensors.len() > MAX_TENSORS {
            return Err(refuse(&format!("more than {MAX_TENSORS} tensors")));
        }
        if inst.total_compute().0 > MAX_COMPUTE {
            return Err(refuse(&format!("more than {MAX_COMPUTE} ticks of compute")));
        }
        // Obligations: each required op, then each group.
        let mut oblig = vec![];
        let mut sat = vec![0u64; inst.ops.len()];
        for (i, o) in inst.ops.iter().enumerate() {
            if o.required {
                sat[i] = 1 << oblig.len();
                oblig.push((o.duration.0 as u32, bits(&o.reads)));
            }
        }
        for g in &inst.groups {
            let bit = 1u64 << oblig.len();
            let (mut dur, mut reads) = (u32::MAX, u64::MAX);
            for o in &g.members {
                sat[o.ix()] |= bit;
                dur = dur.min(inst.op(*o).duration.0 as u32);
                reads &= bits(&inst.op(*o).reads);
            }
            oblig.push((if dur == u32::MAX { 0 } else { dur }, reads));
        }
        if oblig.len() > 63 {
            return Err(refuse("more than 63 required ops and groups"));
        }
        let ops: Vec<OpBits> = inst
            .ops
            .iter()
            .zip(&sat)
            .map(|(o, s)| OpBits {
                reads: bits(&o.reads),
                produces: bits(&o.produces),
                consumes: bits(&o.consumes),
                frees: bits(&o.frees),
                pins: (bits(&o.reads) & !bits(&o.consumes)) | bits(&o.produces),
                dur: o.duration.0.max(0) as u32,
                temp: o.temp.0,
                sat: *s,
            })
            .collect();
        Net::finish(inst, ops, oblig)
    }

    fn finish(inst: &Instance, ops: Vec<OpBits>, oblig: Vec<(u32, u64)>) -> Result<Net, Failure> {
        let n = inst.tensors.len();
        let (mut init_gpu, mut init_cpu, mut zero) = (0u64, 0u64, 0u64);
        let mut xfer = vec![None; n];
        for (i, t) in inst.tensors.iter().enumerate() {
            let produced = ops.iter().any(|o| o.produces >> i & 1 == 1);
            if t.initial.on_gpu() || t.initial.on_cpu() {
                if produced {
                    return Err(refuse("a tensor both placed at time 0 and produced"));
                }
                init_gpu |= (t.initial.on_gpu() as u64) << i;
                init_cpu |= ((t.initial.on_cpu() && t.transferable) as u64) << i;
            }
            if t.transferable && t.size.0 == 0 {
                zero |= 1 << i;
            } else if t.transferable {
                let d = inst.machine.bandwidth.min_ticks(t.size).map(|x| x.0);
                xfer[i] = Some(
                    u32::try_from(d.unwrap_or(i64::MAX))
                        .map_err(|_| refuse("transfers that long"))?,
                );
            }
        }
        let oblig_ops: u128 = ops
            .iter()
            .enumerate()
            .filter(|(_, o)| o.sat != 0)
            .fold(0, |m, (i, _)| m | 1u128 << i);
        let made: Vec<Option<(u32, u128, bool)>> = (0..n)
            .map(|t| {
                let by: Vec<usize> = (0..ops.len())
                    .filter(|o| ops[*o].produces >> t & 1 == 1)
                    .collect();
                let mask = by.iter().fold(0u128, |m, o| m | 1u128 << o);
                let least = by.iter().map(|o| ops[*o].dur).min()?;
                Some((least, mask, mask & oblig_ops != 0))
            })
            .collect();
        let mut by_cost: Vec<usize> = (0..n).collect();
        by_cost.sort_by_key(|t| std::cmp::Reverse(made[*t].map_or(0, |x| x.0)));
        Ok(Net {
            size: inst.tensors.iter().map(|t| t.size.0).collect(),
            xfer,
            zero,
            all: (1u64 << oblig.len()) - 1,
            ops,
            init_gpu,
            init_cpu,
            cap: inst.machine.gpu_capacity.0,
            oblig,
            made,
            by_cost,
        })
    }

    fn bytes(&self, m: u64) -> u64 {
        let mut s = 0u64;
        let mut m = m;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            s = s.saturating_add(self.size[i]);
            m &= m - 1;
        }
        s
    }

    fn running(&self, k: &Key) -> Option<&OpBits> {
        (k.op != NONE).then(|| &self.ops[k.op as usize])
    }

    /// Copies that hold memory but no value yet: the running op's outputs and
    /// the prefetch in flight.
    fn pending(&self, k: &Key) -> u64 {
        let p = self.running(k).map_or(0, |o| o.produces);
        p | if k.xf != NONE && k.pre { 1 << k.xf } else { 0 }
    }

    /// What R10 pins now: the running op's operands, the transfer's buffer.
    fn pinned(&self, k: &Key) -> u64 {
        let p = self.running(k).map_or(0, |o| o.pins);
        p | if k.xf != NONE { 1 << k.xf } else { 0 }
    }

    fn mem(&self, s: &St) -> u64 {
        self.bytes(s.v.gpu) + self.running(&s.k).map_or(0, |o| o.temp)
    }

    /// Every minimal set of `cand` whose deletion frees at least `over` bytes
    /// (`[0]` when nothing is over); `None` when there are too many to try.
    fn covers(&self, cand: u64, over: u64) -> Option<Vec<u64>> {
        if over == 0 {
            return Some(vec![0]);
        }
        let ids: Vec<usize> = (0..64)
            .filter(|i| cand >> i & 1 == 1 && self.size[*i] > 0)
            .collect();
        let mut out = vec![];
        let mut rest: Vec<u64> = vec![0; ids.len() + 1];
        for j in (0..ids.len()).rev() {
            rest[j] = rest[j + 1].saturating_add(self.size[ids[j]]);
        }
        self.cover_from(&ids, &rest, 0, 0, 0, over, &mut out);
        (out.len() <= MAX_COVERS).then_some(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn cover_from(
        &self,
        ids: &[usize],
        rest: &[u64],
        j: usize,
        set: u64,
        sum: u64,
        over: u64,
        out: &mut Vec<u64>,
    ) {
        if out.len() > MAX_COVERS {
            return;
        }
        if sum >= over {
            // Minimal: no member can go.
            let mut m = set;
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                if sum - self.size[i] >= over {
                    return;
                }
                m &= m - 1;
            }
            out.push(set);
            return;
        }
        if j == ids.len() || sum.saturating_add(rest[j]) < over {
            return;
        }
        let i = ids[j];
        self.cover_from(
            ids,
            rest,
            j + 1,
            set | 1 << i,
            sum + self.size[i],
            over,
            out,
        );
        self.cover_from(ids, rest, j + 1, set, sum, over, out);
    }
}

/// A pass stopped: more states or delete sets than the limits allow.
struct TooLarge;

impl Net {
    fn initial(&self) -> St {
        St {
            k: Key {
                op: NONE,
                op_left: 0,
                xf: NONE,
                pre: false,
                xf_left: 0,
                done: 0,
            },
            v: Val {
                gpu: self.init_gpu,
                cpu: self.init_cpu,
            },
        }
    }

    /// The completions at the next instant (transfers, then the op); `None`
    /// when the op's end releases a copy that a running transfer pins (R10).
    fn advance(&self, s: &St) -> Option<St> {
        let mut s = *s;
        if s.k.xf != NONE {
            s.k.xf_left -= 1;
            if s.k.xf_left == 0 {
                if !s.k.pre {
                    s.v.cpu |= 1 << s.k.xf;
                }
                (s.k.xf, s.k.pre) = (NONE, false);
            }
        }
        if s.k.op != NONE {
            s.k.op_left -= 1;
            if s.k.op_left == 0 {
                let o = &self.ops[s.k.op as usize];
                if s.k.xf != NONE && (o.frees & s.v.gpu) >> s.k.xf & 1 == 1 {
                    return None;
                }
                s.v.gpu &= !o.frees;
                s.k.done |= o.sat;
                s.k.op = NONE;
            }
        }
        Some(s)
    }

    /// Start op `oi` now (a 0-tick op also ends now), after each minimal set
    /// of deletes its memory check needs; every result into `out`.
    fn start_op(&self, s: &St, oi: usize, out: &mut Vec<St>) -> Result<(), TooLarge> {
        let o = &self.ops[oi];
        let present = s.v.gpu & !self.pending(&s.k);
        let lacking = o.reads & !present;
        // A 0-byte input with a current CPU copy comes back at no cost.
        if lacking & !(self.zero & s.v.cpu & !s.v.gpu) != 0 {
            return Ok(());
        }
        let pinned = self.pinned(&s.k);
        let forced = o.produces & s.v.gpu;
        if (forced | o.consumes) & pinned != 0 {
            return Ok(());
        }
        let gpu = ((s.v.gpu | lacking) & !forced & !o.consumes) | o.produces;
        let cpu = s.v.cpu & !o.produces;
        let held = self.running(&s.k).map_or(0, |r| r.temp);
        let over = (self.bytes(gpu) + o.temp + held).saturating_sub(self.cap);
        let cand = gpu & !pinned & !o.reads & !o.produces;
        for d in self.covers(cand, over).ok_or(TooLarge)? {
            let mut n = St {
                k: s.k,
                v: Val { gpu: gpu & !d, cpu },
            };
            if o.dur == 0 {
                if o.frees & n.v.gpu & pinned != 0 {
                    continue;
                }
                n.v.gpu &= !o.frees;
                n.k.done |= o.sat;
            } else {
                (n.k.op, n.k.op_left) = (oi as u8, o.dur);
            }
            out.push(n);
        }
        Ok(())
    }

    /// Every state reachable by 0-tick ops (any number, any order).
    fn zero_closure(&self, s: St) -> Result<Vec<St>, TooLarge> {
        let mut all = vec![s];
        let mut i = 0;
        while i < all.len() {
            let mut next = vec![];
            for oi in 0..self.ops.len() {
                if self.ops[oi].dur == 0 {
                    self.start_op(&all[i], oi, &mut next)?;
                }
            }
            for n in next {
                if !all.iter().any(|x| x.k == n.k && x.v == n.v) {
                    all.push(n);
                }
            }
            if all.len() > MAX_COVERS {
                return Err(TooLarge);
            }
            i += 1;
        }
        Ok(all)
    }

    /// A transfer starting now on the free link, into `out`: an offload of a
    /// present copy with no current CPU copy, or a prefetch (after the
    /// deletes its memory needs).
    fn start_transfers(&self, s: &St, out: &mut Vec<St>) -> Result<(), TooLarge> {
        let present = s.v.gpu & !self.pending(&s.k);
        for (x, ticks) in self.xfer.iter().enumerate() {
            let Some(ticks) = *ticks else { continue };
            let bit = 1u64 << x;
            let mut n = *s;
            (n.k.xf, n.k.xf_left) = (x as u8, ticks);
            if present & bit != 0 && s.v.cpu & bit == 0 {
                n.k.pre = false;
                out.push(n);
            } else if s.v.cpu & bit != 0 && s.v.gpu & bit == 0 {
                n.k.pre = true;
                n.v.gpu |= bit;
                let over = self.mem(&n).saturating_sub(self.cap);
                let cand = n.v.gpu & !self.pinned(&n.k);
                for d in self.covers(cand, over).ok_or(TooLarge)? {
                    let mut m = n;
                    m.v.gpu &= !d;
                    out.push(m);
                }
            }
        }
        Ok(())
    }

    /// Every way to act at one instant after its completions: 0-tick ops,
    /// then an op start on a free stream, then a transfer start on a free
    /// link (each after the deletes it needs).
    fn instant(&self, s: St) -> Result<Vec<St>, TooLarge> {
        let mut with_op = vec![];
        for z in self.zero_closure(s)? {
            with_op.push(z);
            if z.k.op == NONE {
                for oi in 0..self.ops.len() {
                    if self.ops[oi].dur > 0 {
                        self.start_op(&z, oi, &mut with_op)?;
                    }
                }
            }
        }
        let mut out = Vec::with_capacity(with_op.len());
        for w in with_op {
            out.push(w);
            if w.k.xf == NONE {
                self.start_transfers(&w, &mut out)?;
            }
        }
        for s in &mut out {
            // A present 0-byte copy is offloaded at no cost.
            s.v.cpu |= s.v.gpu & !self.pending(&s.k) & self.zero;
        }
        Ok(out)
    }

    /// An admissible estimate of the ticks still needed after this state:
    /// the running op's rest, each unmet obligation's least duration, and one
    /// producer run per missing input of theirs (disjoint producers, none an
    /// obligation's op). `None`: an input can never be had again.
    fn estimate(&self, s: &St) -> Option<i64> {
        if s.k.done == self.all {
            return Some(0);
        }
        let run = self.running(&s.k);
        let mut h = run.map_or(0, |_| s.k.op_left as i64);
        let unmet = self.all & !s.k.done & !run.map_or(0, |o| o.sat);
        let mut needed = 0u64;
        for (i, (d, r)) in self.oblig.iter().enumerate() {
            if unmet >> i & 1 == 1 {
                h += *d as i64;
                needed |= r;
            }
        }
        let missing = needed & !(s.v.gpu | s.v.cpu);
        let mut used = 0u128;
        for &t in &self.by_cost {
            if missing >> t & 1 == 0 {
                continue;
            }
            let (d, mask, obliged) = self.made[t]?;
            if !obliged && mask & used == 0 {
                used |= mask;
                h += d as i64;
            }
        }
        Some(h)
    }
}

/// The states stored so far, kept as antichains: per key, no stored
/// (GPU copies, CPU copies, instant) is matched by another with at least the
/// same copies at an instant no later (it does everything the other does,
/// no later: the system is time-invariant, and the extra copies are deleted
/// when they are in the way).
#[derive(Default)]
struct Seen {
    by_key: HashMap<Key, Vec<(Val, i64)>>,
    stored: usize,
}

impl Seen {
    /// Store `s` at instant `t` unless a stored state dominates it; true when
    /// stored.
    fn insert(&mut self, s: &St, t: i64) -> bool {
        let vs = self.by_key.entry(s.k).or_default();
        let covers = |a: &(Val, i64), b: &(Val, i64)| {
            a.0.gpu & b.0.gpu == b.0.gpu && a.0.cpu & b.0.cpu == b.0.cpu && a.1 <= b.1
        };
        let new = (s.v, t);
        if vs.iter().any(|v| covers(v, &new)) {
            return false;
        }
        vs.retain(|v| !covers(&new, v));
        vs.push(new);
        self.stored += 1;
        true
    }
}

impl Net {
    /// A* by instant + estimate (buckets of f = t + h, f ascending): the first
    /// goal taken out is the least instant at which a path meets every
    /// obligation. At the state budget, the least f still open is a bound.
    fn search(&self) -> Outcome {
        let mut seen = Seen::default();
        let mut open: Vec<Vec<(St, i64)>> = vec![];
        // `floor`: the parent's f (pathmax: a child's estimate is at least its
        // parent's less the tick between them, so f never falls).
        let push =
            |s: &St, t: i64, floor: usize, seen: &mut Seen, open: &mut Vec<Vec<(St, i64)>>| {
                let Some(h) = self.estimate(s) else { return };
                if seen.insert(s, t) {
                    let f = ((t + h) as usize).max(floor);
                    if open.len() <= f {
                        open.resize_with(f + 1, Vec::new);
                    }
                    open[f].push((*s, t));
                }
            };
        let Ok(first) = self.instant(self.initial()) else {
            return Outcome::AtLeast(0);
        };
        for s in first {
            push(&s, 0, 0, &mut seen, &mut open);
        }
        let mut f = 0;
        while f < open.len() {
            let Some((s, t)) = open[f].pop() else {
                f += 1;
                continue;
            };
            if s.k.done == self.all {
                return Outcome::Optimum(t);
            }
            if seen.stored > MAX_STATES {
                return Outcome::AtLeast(f as i64);
            }
            let Some(a) = self.advance(&s) else { continue };
            let Ok(next) = self.instant(a) else {
                return Outcome::AtLeast(f as i64);
            };
            for n in next {
                push(&n, t + 1, f, &mut seen, &mut open);
            }
        }
        Outcome::Infeasible
    }
}

/// The relaxation's optimum for a one-shot free-order instance, or the bound
/// reached at the state budget. `Err`: the instance is outside what the
/// search models.
pub fn relaxed_optimum(inst: &Instance) -> Result<Outcome, Failure> {
    Ok(Net::of(inst)?.search())
}

/// `remat-relaxed-search` (`proofs/REMAT-BOUNDS.md`).
pub struct RematRelaxedSearch;

impl BoundMethod for RematRelaxedSearch {
    fn name(&self) -> &'static str {
        "remat-relaxed-search"
    }
    fn applies(&self, f: &InstanceFile) -> bool {
        matches!(f, InstanceFile::RematChain(_))
    }
    fn bound(&self, f: &InstanceFile, inst: &Instance) -> Result<LowerBound, BoundError> {
        let c = chain(self.name(), f)?;
        infeasible(self.name(), c)?;
        let failed = |cause| BoundError::Failed {
            bound: "remat-relaxed-search",
            cause,
        };
        match relaxed_optimum(inst).map_err(failed)? {
            Outcome::Optimum(t) | Outcome::AtLeast(t) => {
                Ok(LowerBound::from_ticks(t, self.name(), Strength::Certified))
            }
            Outcome::Infeasible => Err(BoundError::Infeasible {
                bound: self.name(),
                reason: "no path of the relaxed system meets every required op".into(),
            }),
        }
    }
}
