//! The ordered, no-wait (ASAP) realisation of an offloading plan on a one-shot,
//! fixed-order instance: the schedule builder that heuristics, property tests and
//! examples share.
//!
//! Owns: [`Plan`], [`SeqPlan`], [`asap`], [`asap_sequence`], [`SimError`].
//! Memory and residency are tracked with the shared [`crate::semantics::State`],
//! so the simulator and the checker can never disagree about what an event does;
//! its output still goes through the checker wherever a number is reported.
//! Must not import: the checker, solvers, heuristics.
//!
//! Policy (activation paper, Proposition 1: with fixed decisions, the no-wait
//! schedule is best):
//! - ops run in the instance's order, each as soon as the stream is free, its
//!   inputs are present in their latest version and memory allows;
//! - each planned tensor is offloaded once, after the first op that reads it has
//!   started (so that op finds it), in plan order, as soon as the channel is
//!   free; its GPU copy is deleted at the end of the offload;
//! - it is prefetched before its next reader, in order of need, as soon as its
//!   CPU copy is written, the channel is free, memory holds it *and* the most
//!   that the ops before its reader will still allocate (counting their own
//!   releases, ignoring pending offloads: a prefetch never blocks an op that must
//!   run before its use), and — with `lookahead = Some(k)` (TFLMS-style) — the reader is at most
//!   `k` ops ahead of the next op to start;
//! - on a half-duplex link a prefetch needed by one of the next two ops goes
//!   before a pending offload;
//! - under the default release rule (MODEL.md R10) an op that would release a
//!   tensor (consume or free it, or have the plan delete it at its end) while a
//!   transfer of it runs waits for the transfer's end. An offload's `delete` that
//!   ends while an op reads the tensor is released at the op's end by the shared
//!   rules themselves, so the simulator's schedules are valid under both rules.
//!
//! A tensor that is never read again after its first reader, or has size 0, is
//! not transferred.
//!
//! [`asap_sequence`] generalises this to a given GPU sequence with repeated ops
//! (rematerialisation): offloads are planned per position (offload after the op
//! at that position has started, prefetch before the next op at a later position
//! that reads the tensor), explicit deletes are applied at the end of the op at
//! a given position, and an op also waits until what it produces has no GPU
//! copy left. [`asap`] is the special case the fixed-order families use (no
//! explicit deletes).

pub mod chain_sequence;
pub mod dag_sequence;
pub mod graph_sequence;

use crate::model::{
    ComputeOrder, Device, Direction, Extension, Instance, Mode, OpId, ReleaseRule, TensorId,
};
use crate::schedule::{Event, Schedule};
use crate::semantics::{transfer_ticks, GpuCopy, InFlight, Lookahead, State};
use crate::units::Ticks;

/// Which tensors to offload (in offload order; normally production order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub offload: Vec<TensorId>,
    /// TFLMS-style prefetch look-ahead in ops; `None` prefetches as early as possible.
    pub lookahead: Option<usize>,
}

/// A fixed GPU sequence (repeats allowed) with per-position decisions (G5 a–b).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeqPlan {
    /// The GPU ops, in order; an op may appear several times.
    pub seq: Vec<OpId>,
    /// `(p, t)`: delete the GPU copy of `t` at the end of the op at position `p`.
    pub deletes_after: Vec<(usize, TensorId)>,
    /// `(t, p)`: offload `t` (with delete) once the op at position `p` has
    /// started; prefetch it before the next position after `p` that reads it.
    /// In offload order.
    pub offloads: Vec<(TensorId, usize)>,
    pub lookahead: Option<usize>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SimError {
    #[error("the simulator handles one-shot instances with a fixed order of GPU ops")]
    Unsupported,
    /// The instance uses groups, slots or `after`, which the simulator does not
    /// realise.
    #[error("the simulator does not realise {0}")]
    Extension(crate::model::Extension),
    #[error("tensor {0} may not be transferred")]
    NotTransferable(String),
    #[error("tensor {0} appears twice in the plan")]
    Duplicate(String),
    #[error("position {0} is past the end of the sequence")]
    Position(usize),
    /// Nothing runs and nothing can start: the memory is too small for this plan.
    #[error(
        "stuck at t={at}: op {op} cannot start (memory {used} B in use, capacity {capacity} B)"
    )]
    Stuck {
        at: Ticks,
        op: String,
        used: u64,
        capacity: u64,
    },
}

/// The simulator only needs the state's effects, not its breaches.
struct Blind;
impl Lookahead for Blind {
    fn needed_after(&self, _: TensorId, _: Ticks) -> bool {
        false
    }
}

struct Planned {
    tensor: TensorId,
    /// Position of the op after whose start it may be offloaded.
    after: usize,
    /// Position of the op that needs it back.
    next_read: usize,
}

struct Flight {
    end: Ticks,
    dir: Direction,
    tensor: TensorId,
    flight: InFlight,
    /// Index into the planned transfers.
    planned: usize,
}

/// Build the ASAP schedule of `plan`. Every offloaded tensor's transfer lasts
/// exactly ⌈size/β⌉ ticks.
pub fn asap(inst: &Instance, plan: &Plan) -> Result<Schedule, SimError> {
    refuse_extensions(inst)?;
    let order = match (&inst.order, inst.mode) {
        (ComputeOrder::Fixed(v), Mode::OneShot)
            if v.iter().all(|o| inst.op(*o).device == Device::Gpu) =>
        {
            v.clone()
        }
        _ => return Err(SimError::Unsupported),
    };
    let planned = planned_offloads(inst, &order, plan)?;
    realise(inst, order, planned, Vec::new(), plan.lookahead)
}

/// Build the ASAP schedule of a sequence with per-position decisions (see the
/// module documentation). Every transfer lasts exactly ⌈size/β⌉ ticks.
pub fn asap_sequence(inst: &Instance, sp: &SeqPlan) -> Result<Schedule, SimError> {
    // Variant groups are fine here: the sequence names which member runs, and
    // how often is R11's business (the checker's). Slots and `after` are not.
    if let Some(e) = inst
        .extensions()
        .into_iter()
        .find(|e| *e != Extension::Groups)
    {
        return Err(SimError::Extension(e));
    }
    if inst.mode != Mode::OneShot || sp.seq.iter().any(|o| inst.op(*o).device != Device::Gpu) {
        return Err(SimError::Unsupported);
    }
    let n = sp.seq.len();
    let mut deletes: Vec<Vec<TensorId>> = vec![Vec::new(); n];
    for &(p, t) in &sp.deletes_after {
        deletes.get_mut(p).ok_or(SimError::Position(p))?.push(t);
    }
    let planned = planned_sequence_offloads(inst, sp, &deletes)?;
    realise(inst, sp.seq.clone(), planned, deletes, sp.lookahead)
}

/// Groups, slots and `after` are checked, never realised here (a given
/// sequence may have groups: [`asap_sequence`]).
fn refuse_extensions(inst: &Instance) -> Result<(), SimError> {
    match inst.extensions().first() {
        Some(&e) => Err(SimError::Extension(e)),
        None => Ok(()),
    }
}

/// The shared ASAP loop. `deletes[p]` are released at the end of position `p`
/// (empty: none).
fn realise(
    inst: &Instance,
    order: Vec<OpId>,
    planned: Vec<Planned>,
    deletes: Vec<Vec<TensorId>>,
    lookahead: Option<usize>,
) -> Result<Schedule, SimError> {
    let n = order.len();
    let mut sim = Asap::new(inst, lookahead, order, planned, deletes);
    loop {
        // Releases at `now`, then allocations: ops first, then transfers.
        sim.releases();
        sim.start_ops();
        let started = sim.k; // ops at positions < started have started
        while let Some((dir, i)) = sim.choose_transfer(started) {
            sim.start_transfer(dir, i);
        }
        // Zero-length transfers complete at once: go round again at the same instant.
        if sim.flights.iter().any(|f| f.end <= sim.now) {
            continue;
        }
        if sim.k == n
            && sim.running.is_none()
            && sim.flights.is_empty()
            && sim.later.is_empty()
            && sim.next_pre >= sim.prefetch_order.len()
        {
            break;
        }
        let next = sim
            .flights
            .iter()
            .map(|f| f.end)
            .chain(sim.later.iter().map(|l| l.0))
            .chain(sim.running.map(|r| r.1))
            .min();
        match next {
            Some(t) => sim.now = t,
            // Only unneeded prefetches remain (their reader already ran): none can.
            None if sim.k == n => break,
            None => {
                return Err(SimError::Stuck {
                    at: sim.now,
                    op: inst.op(sim.order[sim.k]).name.clone(),
                    used: sim.state.gpu_used.max(0) as u64,
                    capacity: inst.machine.gpu_capacity.0,
                })
            }
        }
    }
    Ok(Schedule::one_shot(sim.events))
}

/// The plan's tensors worth transferring, in plan order: each one's first reader
/// after its production and the next one.
fn planned_offloads(
    inst: &Instance,
    order: &[OpId],
    plan: &Plan,
) -> Result<Vec<Planned>, SimError> {
    // Positions at which each tensor is read, and where it is (re)produced.
    let mut reads: Vec<Vec<usize>> = vec![Vec::new(); inst.tensors.len()];
    let mut produced: Vec<Option<usize>> = vec![None; inst.tensors.len()];
    for (p, o) in order.iter().enumerate() {
        for t in &inst.op(*o).reads {
            reads[t.ix()].push(p);
        }
        for t in &inst.op(*o).produces {
            produced[t.ix()].get_or_insert(p);
        }
    }
    let mut seen = vec![false; inst.tensors.len()];
    let mut planned: Vec<Planned> = Vec::new();
    for &t in &plan.offload {
        let name = || inst.tensor(t).name.clone();
        if !inst.tensor(t).transferable {
            return Err(SimError::NotTransferable(name()));
        }
        if std::mem::replace(&mut seen[t.ix()], true) {
            return Err(SimError::Duplicate(name()));
        }
        let born = produced[t.ix()];
        let mut rs = reads[t.ix()]
            .iter()
            .copied()
            .filter(|p| born.is_none_or(|b| *p > b));
        let (Some(after), Some(next_read)) = (rs.next(), rs.next()) else {
            continue;
        };
        // Only worth it when there is a gap of at least one op between the reads,
        // and only for tensors that take memory (a zero-byte transfer would finish
        // in the same instant, after the op starts of that instant: no use).
        if next_read > after + 1 && inst.tensor(t).size.0 > 0 {
            planned.push(Planned {
                tensor: t,
                after,
                next_read,
            });
        }
    }
    Ok(planned)
}

/// A sequence plan's offloads worth transferring, in plan order: each one's
/// position and the next position that reads it, unless the tensor is
/// re-produced or deleted first.
fn planned_sequence_offloads(
    inst: &Instance,
    sp: &SeqPlan,
    deletes: &[Vec<TensorId>],
) -> Result<Vec<Planned>, SimError> {
    let n = sp.seq.len();
    let mut planned: Vec<Planned> = Vec::new();
    for &(t, after) in &sp.offloads {
        if after >= n {
            return Err(SimError::Position(after));
        }
        if !inst.tensor(t).transferable {
            return Err(SimError::NotTransferable(inst.tensor(t).name.clone()));
        }
        let mut next_read = None;
        for q in after + 1..n {
            let o = inst.op(sp.seq[q]);
            if o.reads.contains(&t) {
                next_read = Some(q);
                break;
            }
            if o.produces.contains(&t) || deletes[q].contains(&t) {
                break;
            }
        }
        if let Some(next_read) = next_read {
            if next_read > after + 1 && inst.tensor(t).size.0 > 0 {
                planned.push(Planned {
                    tensor: t,
                    after,
                    next_read,
                });
            }
        }
    }
    Ok(planned)
}

/// What the ops in order add to memory.
struct Profile {
    /// What op `p` adds to memory at its start.
    delta: Vec<i128>,
    prefix: Vec<i128>,
    peaks: RangeMax,
}

impl Profile {
    /// `deletes[p]`: what the plan deletes at the end of position `p` (may be
    /// shorter than `order`).
    fn new(inst: &Instance, order: &[OpId], sizes: &[i128], deletes: &[Vec<TensorId>]) -> Profile {
        let n = order.len();
        let delta: Vec<i128> = order
            .iter()
            .map(|&o| {
                let o = inst.op(o);
                let prod: i128 = o.produces.iter().map(|t| sizes[t.ix()]).sum();
                let cons: i128 = o.consumes.iter().map(|t| sizes[t.ix()]).sum();
                prod + o.temp.0 as i128 - cons
            })
            .collect();
        // With S(p) = Σ_{q<p} (delta(q) − released_at_end(q)) and
        // A(p) = S(p) + delta(p), need(k, r) = max_{k≤p<r} A(p) − S(k): a range
        // maximum (sparse table).
        let mut prefix = vec![0i128; n + 1];
        for p in 0..n {
            let o = inst.op(order[p]);
            let freed: i128 = o.frees.iter().map(|t| sizes[t.ix()]).sum();
            let deleted: i128 = deletes
                .get(p)
                .map_or(0, |v| v.iter().map(|t| sizes[t.ix()]).sum());
            prefix[p + 1] = prefix[p] + delta[p] - o.temp.0 as i128 - freed - deleted;
        }
        let peaks = RangeMax::new((0..n).map(|p| prefix[p] + delta[p]).collect());
        Profile {
            delta,
            prefix,
            peaks,
        }
    }

    /// The most the ops at positions k..r will add to memory at any of their
    /// starts, from the moment before op k starts.
    fn need(&self, k: usize, r: usize) -> i128 {
        if k >= r {
            0
        } else {
            (self.peaks.max(k, r) - self.prefix[k]).max(0)
        }
    }
}

/// The simulation's state.
struct Asap<'a> {
    inst: &'a Instance,
    lookahead: Option<usize>,
    order: Vec<OpId>,
    planned: Vec<Planned>,
    /// `deletes[p]`: explicit deletes at the end of position `p` (empty: none).
    deletes: Vec<Vec<TensorId>>,
    /// Indices into `planned` in the order their prefetches are needed.
    prefetch_order: Vec<usize>,
    cap: i128,
    sizes: Vec<i128>,
    profile: Profile,
    state: State,
    events: Vec<Event>,
    now: Ticks,
    /// The next op to start (a position in `order`).
    k: usize,
    running: Option<(usize, Ticks)>,
    flights: Vec<Flight>,
    /// Deletes after a zero-duration op: at its instant the checker applies
    /// deletes before op starts, so they wait for the next tick.
    later: Vec<(Ticks, TensorId)>,
    channel_free: [Ticks; 3],
    /// Index into `planned`.
    next_off: usize,
    /// Index into `prefetch_order`.
    next_pre: usize,
    offloaded: Vec<bool>,
    /// An offload that has not started when its next reader is the next op to
    /// start (or has started) can no longer help: dropped, and its prefetch.
    dropped: Vec<bool>,
}

impl<'a> Asap<'a> {
    fn new(
        inst: &'a Instance,
        lookahead: Option<usize>,
        order: Vec<OpId>,
        planned: Vec<Planned>,
        deletes: Vec<Vec<TensorId>>,
    ) -> Self {
        let mut prefetch_order: Vec<usize> = (0..planned.len()).collect();
        prefetch_order.sort_by_key(|&i| (planned[i].next_read, i));
        let sizes: Vec<i128> = inst.tensors.iter().map(|t| t.size.0 as i128).collect();
        let profile = Profile::new(inst, &order, &sizes, &deletes);
        let n = order.len();
        Asap {
            inst,
            lookahead,
            cap: inst.machine.gpu_capacity.0 as i128,
            sizes,
            profile,
            state: State::initial(inst),
            events: Vec::with_capacity(2 * n + 2 * planned.len()),
            now: Ticks::ZERO,
            k: 0,
            running: None,
            flights: Vec::new(),
            later: Vec::new(),
            channel_free: [Ticks::ZERO; 3],
            next_off: 0,
            next_pre: 0,
            offloaded: vec![false; planned.len()],
            dropped: vec![false; planned.len()],
            order,
            planned,
            deletes,
            prefetch_order,
        }
    }

    fn ch(&self, d: Direction) -> usize {
        self.inst.machine.channel(d) as usize
    }

    /// The explicit deletes at the end of position `p`.
    fn deleted_at(&self, p: usize) -> &[TensorId] {
        self.deletes.get(p).map_or(&[], |v| v.as_slice())
    }

    /// Releases at `now`: transfer completions, then the op's completion and its
    /// planned deletes, then deletes postponed from a zero-duration op.
    fn releases(&mut self) {
        let now = self.now;
        self.flights.sort_by_key(|f| (f.end, f.dir));
        while let Some(f) = self.flights.first() {
            if f.end > now {
                break;
            }
            let f = self.flights.remove(0);
            let offload = f.dir == Direction::Offload;
            self.state
                .transfer_end(f.dir, f.tensor, f.flight, offload, f.end, &Blind);
            if offload {
                self.offloaded[f.planned] = true;
            }
        }
        if let Some((p, end)) = self.running {
            if end <= now {
                self.state.op_end(self.inst, self.order[p], end, &Blind);
                let ts = self.deleted_at(p).to_vec();
                self.apply_deletes(&ts, end);
                self.running = None;
            }
        }
        let due: Vec<TensorId> = self
            .later
            .iter()
            .filter(|(t, _)| *t <= now)
            .map(|(_, x)| *x)
            .collect();
        self.later.retain(|(t, _)| *t > now);
        self.apply_deletes(&due, now);
    }

    /// Explicit deletes at the end of an op (only of copies still on the GPU: a
    /// planned copy already offloaded needs none).
    fn apply_deletes(&mut self, ts: &[TensorId], at: Ticks) {
        for &t in ts {
            if self.state.tensor(t).on_gpu() {
                self.state.delete(t, at, &Blind);
                self.events.push(Event::Delete { tensor: t, at });
            }
        }
    }

    /// Whether the op at position `k` may start now (inputs present in their
    /// latest version, outputs without a GPU copy, no R10 hold, memory).
    fn may_start(&self, k: usize) -> bool {
        let (inst, now) = (self.inst, self.now);
        let o = inst.op(self.order[k]);
        let ready = o.reads.iter().all(|t| {
            let ts = self.state.tensor(*t);
            matches!(ts.gpu, GpuCopy::Present(v) if v == ts.latest)
        }) && o.produces.iter().all(|t| !self.state.tensor(*t).on_gpu());
        // Under the default rule (R10) a transfer holds its GPU buffer until
        // it ends: an op that would release a tensor (consume it at its
        // start, free it or have it deleted at its end) while a transfer of
        // it still runs waits for that transfer. (An offload overtaken by the
        // tensor's last reader is useless, but it has started.)
        let end = now + o.duration;
        let held = inst.release == ReleaseRule::AfterEnd
            && self.flights.iter().any(|f| {
                (o.consumes.contains(&f.tensor) && f.end > now)
                    || ((o.frees.contains(&f.tensor) || self.deleted_at(k).contains(&f.tensor))
                        && f.end > end)
            });
        ready && !held && self.state.gpu_used + self.profile.delta[k] <= self.cap
    }

    /// Op starts at `now` (zero-duration ones complete at once).
    fn start_ops(&mut self) {
        let (inst, now) = (self.inst, self.now);
        while self.running.is_none() && self.k < self.order.len() && self.may_start(self.k) {
            let o = self.order[self.k];
            let end = now + inst.op(o).duration;
            self.state.op_start(inst, o, now, end, &Blind);
            self.events.push(Event::Compute {
                op: o,
                start: now,
                end,
            });
            if end == now {
                self.state.op_end(inst, o, end, &Blind);
                let later: Vec<(Ticks, TensorId)> = self
                    .deleted_at(self.k)
                    .iter()
                    .map(|t| (end + Ticks(1), *t))
                    .collect();
                self.later.extend(later);
            } else {
                self.running = Some((self.k, end));
            }
            self.k += 1;
        }
    }

    /// The next prefetch in order, if it may start now.
    fn prefetch_ready(&self, started: usize) -> Option<usize> {
        let i = *self.prefetch_order.get(self.next_pre)?;
        let pl = &self.planned[i];
        let ts = self.state.tensor(pl.tensor);
        let ok = self.offloaded[i]
            && ts.gpu == GpuCopy::Absent
            && self.channel_free[self.ch(Direction::Prefetch)] <= self.now
            && self.lookahead.is_none_or(|la| pl.next_read <= started + la)
            && self.state.gpu_used
                + self.sizes[pl.tensor.ix()]
                + self.profile.need(started, pl.next_read + 1)
                <= self.cap;
        ok.then_some(i)
    }

    /// The transfer to start now, if any: a prefetch needed by one of the next
    /// two ops, else the next offload, else the next prefetch. Offloads that
    /// can no longer help are dropped first.
    fn choose_transfer(&mut self, started: usize) -> Option<(Direction, usize)> {
        while let Some(pl) = self.planned.get(self.next_off) {
            if pl.next_read > started {
                break;
            }
            self.dropped[self.next_off] = true;
            self.next_off += 1;
        }
        while self
            .prefetch_order
            .get(self.next_pre)
            .is_some_and(|&i| self.dropped[i])
        {
            self.next_pre += 1;
        }
        let urgent = self
            .prefetch_ready(started)
            .filter(|i| self.planned[*i].next_read <= started + 1);
        let off_ready = self.planned.get(self.next_off).filter(|pl| {
            started > pl.after
                && matches!(self.state.tensor(pl.tensor).gpu, GpuCopy::Present(_))
                && self.channel_free[self.ch(Direction::Offload)] <= self.now
        });
        match (urgent, off_ready) {
            (Some(i), _) => Some((Direction::Prefetch, i)),
            (None, Some(_)) => Some((Direction::Offload, self.next_off)),
            (None, None) => self
                .prefetch_ready(started)
                .map(|i| (Direction::Prefetch, i)),
        }
    }

    fn start_transfer(&mut self, dir: Direction, i: usize) {
        let now = self.now;
        let t = self.planned[i].tensor;
        let end = now + transfer_ticks(self.inst, t);
        let (flight, _) = self.state.transfer_start(self.inst, dir, t, now, end);
        self.events.push(Event::Transfer {
            dir,
            tensor: t,
            start: now,
            end,
            delete: dir == Direction::Offload,
        });
        let c = self.ch(dir);
        self.channel_free[c] = end;
        self.flights.push(Flight {
            end,
            dir,
            tensor: t,
            flight,
            planned: i,
        });
        match dir {
            Direction::Offload => self.next_off += 1,
            Direction::Prefetch => self.next_pre += 1,
        }
    }
}

/// Range maximum over a fixed array in O(1) per query (sparse table).
struct RangeMax {
    levels: Vec<Vec<i128>>,
}

impl RangeMax {
    fn new(v: Vec<i128>) -> RangeMax {
        let mut levels = vec![v];
        let mut w = 1;
        while 2 * w <= levels[0].len() {
            let prev = levels.last().unwrap();
            let next: Vec<i128> = (0..prev.len() - w)
                .map(|i| prev[i].max(prev[i + w]))
                .collect();
            levels.push(next);
            w *= 2;
        }
        RangeMax { levels }
    }
    /// max of v[a..b], b > a.
    fn max(&self, a: usize, b: usize) -> i128 {
        let len = b - a;
        let lvl = (usize::BITS - 1 - len.leading_zeros()) as usize;
        let w = 1 << lvl;
        self.levels[lvl][a].max(self.levels[lvl][b - w])
    }
}

/// Convenience: the op ids in the instance's fixed order (empty for a free or
/// slotted order).
pub fn fixed_order(inst: &Instance) -> Vec<OpId> {
    match &inst.order {
        ComputeOrder::Fixed(v) => v.clone(),
        ComputeOrder::Free | ComputeOrder::Slots(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check;
    use crate::family::activation_chain::{ActivationChain, ActivationLayer};
    use crate::family::BandwidthFile;

    #[test]
    fn an_offload_overtaken_by_its_reader_is_dropped_with_its_prefetch() {
        // x2's offload waits behind x0's and x1's on the slow link; B2 and B1 run
        // first and B1 frees x2. Before the fix the prefetch queue waited for x2
        // forever and the plan was reported stuck.
        let l = |u_f, u_b, x, y, ex_f, ex_b| ActivationLayer {
            u_f,
            u_b,
            x,
            y,
            ex_f,
            ex_b,
        };
        let c = ActivationChain {
            name: "overtaken".into(),
            note: None,
            layers: vec![
                l(4, 7, 4, 1, 1, 0),
                l(2, 7, 6, 2, 0, 0),
                l(1, 2, 2, 2, 0, 2),
                l(5, 2, 2, 1, 1, 0),
            ],
            x_last: 4,
            y_last: 0,
            gpu_memory: 18,
            bandwidth: BandwidthFile::Ratio { bytes: 1, ticks: 3 },
            release: Default::default(),
            allocator: Default::default(),
        };
        let inst = c.compile().unwrap();
        let plan = Plan {
            offload: vec![c.x_id(0), c.x_id(1), c.x_id(2)],
            lookahead: None,
        };
        let s = asap(&inst, &plan).unwrap();
        let r = check(&inst, &s);
        assert!(r.valid);
        assert!(!s
            .events
            .iter()
            .any(|e| matches!(e, Event::Transfer { tensor, .. } if *tensor == c.x_id(2))));
        assert_eq!(r.makespan, Ticks(67));
    }

    #[test]
    fn reproduces_the_hand_made_chain3_schedule() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/instances/examples/chain3.json"
        ))
        .unwrap();
        let (f, inst) = crate::io::parse_instance("chain3.json", &text).unwrap();
        let crate::family::InstanceFile::ActivationChain(c) = f else {
            panic!()
        };
        let s = asap(
            &inst,
            &Plan {
                offload: vec![c.x_id(0)],
                lookahead: None,
            },
        )
        .unwrap();
        let r = check(&inst, &s);
        assert!(r.valid);
        // Offload x0 during F0, prefetch it while B2..B1 run: no idle time (see the
        // example's note), 15 = the compute sum.
        assert_eq!(r.makespan, Ticks(15));
        // Without offloading, B2 needs 16 B > 12 B: the plan is stuck.
        assert!(matches!(
            asap(&inst, &Plan::default()),
            Err(SimError::Stuck { .. })
        ));
    }
}
