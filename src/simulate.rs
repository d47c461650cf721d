//! The ordered, no-wait (ASAP) realisation of an offloading plan on a one-shot,
//! fixed-order instance: the schedule builder that heuristics, property tests and
//! examples share.
//!
//! Owns: [`Plan`], [`asap`], [`SimError`]. Memory and residency are tracked with
//! the shared [`crate::semantics::State`], so the simulator and the checker can
//! never disagree about what an event does; its output still goes through the
//! checker wherever a number is reported.
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
//! copy left. [`asap`] is the special case the fixed-order families use.

use crate::model::{ComputeOrder, Device, Direction, Instance, Mode, OpId, ReleaseRule, TensorId};
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
    let order = match (&inst.order, inst.mode) {
        (ComputeOrder::Fixed(v), Mode::OneShot)
            if v.iter().all(|o| inst.op(*o).device == Device::Gpu) =>
        {
            v.clone()
        }
        _ => return Err(SimError::Unsupported),
    };
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
    realise(inst, &order, planned, &[], plan.lookahead)
}

/// Build the ASAP schedule of a sequence with per-position decisions (see the
/// module documentation). Every transfer lasts exactly ⌈size/β⌉ ticks.
pub fn asap_sequence(inst: &Instance, sp: &SeqPlan) -> Result<Schedule, SimError> {
    if inst.mode != Mode::OneShot || sp.seq.iter().any(|o| inst.op(*o).device != Device::Gpu) {
        return Err(SimError::Unsupported);
    }
    let n = sp.seq.len();
    let mut deletes: Vec<Vec<TensorId>> = vec![Vec::new(); n];
    for &(p, t) in &sp.deletes_after {
        deletes.get_mut(p).ok_or(SimError::Position(p))?.push(t);
    }
    let mut planned: Vec<Planned> = Vec::new();
    for &(t, after) in &sp.offloads {
        if after >= n {
            return Err(SimError::Position(after));
        }
        if !inst.tensor(t).transferable {
            return Err(SimError::NotTransferable(inst.tensor(t).name.clone()));
        }
        // The next position that reads t, unless t is re-produced or deleted first.
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
    realise(inst, &sp.seq, planned, &deletes, sp.lookahead)
}

/// The shared ASAP loop. `deletes[p]` are released at the end of position `p`
/// (empty slice: none).
fn realise(
    inst: &Instance,
    order: &[OpId],
    planned: Vec<Planned>,
    deletes: &[Vec<TensorId>],
    lookahead: Option<usize>,
) -> Result<Schedule, SimError> {
    let n = order.len();
    let deleted_at = |p: usize| -> &[TensorId] { deletes.get(p).map_or(&[], |v| v.as_slice()) };
    let mut prefetch_order: Vec<usize> = (0..planned.len()).collect();
    prefetch_order.sort_by_key(|&i| (planned[i].next_read, i));

    let cap = inst.machine.gpu_capacity.0 as i128;
    let sizes: Vec<i128> = inst.tensors.iter().map(|t| t.size.0 as i128).collect();
    // What op `p` adds to memory at its start.
    let delta = |p: usize| -> i128 {
        let o = inst.op(order[p]);
        let prod: i128 = o.produces.iter().map(|t| sizes[t.ix()]).sum();
        let cons: i128 = o.consumes.iter().map(|t| sizes[t.ix()]).sum();
        prod + o.temp.0 as i128 - cons
    };

    // need(k, r): the most the ops at positions k..r will add to memory at any
    // of their starts, from the moment before op k starts. With
    // S(p) = Σ_{q<p} (delta(q) − released_at_end(q)) and A(p) = S(p) + delta(p),
    // need(k, r) = max_{k≤p<r} A(p) − S(k): a range maximum (sparse table).
    let mut prefix = vec![0i128; n + 1];
    for p in 0..n {
        let o = inst.op(order[p]);
        let freed: i128 = o.frees.iter().map(|t| sizes[t.ix()]).sum();
        let deleted: i128 = deleted_at(p).iter().map(|t| sizes[t.ix()]).sum();
        prefix[p + 1] = prefix[p] + delta(p) - o.temp.0 as i128 - freed - deleted;
    }
    let peaks = RangeMax::new((0..n).map(|p| prefix[p] + delta(p)).collect());
    let need = |k: usize, r: usize| -> i128 {
        if k >= r {
            0
        } else {
            (peaks.max(k, r) - prefix[k]).max(0)
        }
    };

    let mut state = State::initial(inst);
    let mut events: Vec<Event> = Vec::with_capacity(2 * n + 2 * planned.len());
    let mut now = Ticks::ZERO;
    let mut k = 0usize; // next op to start
    let mut running: Option<(usize, Ticks)> = None;
    let mut flights: Vec<Flight> = Vec::new();
    // Deletes after a zero-duration op: at its instant the checker applies
    // deletes before op starts, so they wait for the next tick.
    let mut later: Vec<(Ticks, TensorId)> = Vec::new();
    let mut channel_free: [Ticks; 3] = [Ticks::ZERO; 3];
    let ch = |d: Direction| inst.machine.channel(d) as usize;
    let mut next_off = 0usize; // index into `planned`
    let mut next_pre = 0usize; // index into `prefetch_order`
    let mut offloaded = vec![false; planned.len()];
    // An offload that has not started when its next reader is the next op to
    // start (or has started) can no longer help: drop it, and its prefetch.
    let mut dropped = vec![false; planned.len()];

    loop {
        // Releases at `now`: transfer completions, then the op's completion.
        flights.sort_by_key(|f| (f.end, f.dir));
        while let Some(f) = flights.first() {
            if f.end > now {
                break;
            }
            let f = flights.remove(0);
            state.transfer_end(
                f.dir,
                f.tensor,
                f.flight,
                f.dir == Direction::Offload,
                f.end,
                &Blind,
            );
            if f.dir == Direction::Offload {
                offloaded[f.planned] = true;
            }
        }
        if let Some((p, end)) = running {
            if end <= now {
                state.op_end(inst, order[p], end, &Blind);
                apply_deletes(&mut state, deleted_at(p), end, &mut events);
                running = None;
            }
        }
        let due: Vec<TensorId> = later
            .iter()
            .filter(|(t, _)| *t <= now)
            .map(|(_, x)| *x)
            .collect();
        later.retain(|(t, _)| *t > now);
        apply_deletes(&mut state, &due, now, &mut events);
        // Allocations at `now`: ops first (zero-duration ones complete at once).
        while running.is_none() && k < n {
            let o = order[k];
            let ready = inst.op(o).reads.iter().all(|t| {
                let ts = state.tensor(*t);
                matches!(ts.gpu, GpuCopy::Present(v) if v == ts.latest)
            }) && inst
                .op(o)
                .produces
                .iter()
                .all(|t| !state.tensor(*t).on_gpu());
            // Under the default rule (R10) a transfer holds its GPU buffer until
            // it ends: an op that would release a tensor (consume it at its
            // start, free it or have it deleted at its end) while a transfer of
            // it still runs waits for that transfer. (An offload overtaken by
            // the tensor's last reader is useless, but it has started.)
            let end = now + inst.op(o).duration;
            let held = inst.release == ReleaseRule::AfterEnd
                && flights.iter().any(|f| {
                    (inst.op(o).consumes.contains(&f.tensor) && f.end > now)
                        || ((inst.op(o).frees.contains(&f.tensor)
                            || deleted_at(k).contains(&f.tensor))
                            && f.end > end)
                });
            if !ready || held || state.gpu_used + delta(k) > cap {
                break;
            }
            state.op_start(inst, o, now, end, &Blind);
            events.push(Event::Compute {
                op: o,
                start: now,
                end,
            });
            if end == now {
                state.op_end(inst, o, end, &Blind);
                later.extend(deleted_at(k).iter().map(|t| (end + Ticks(1), *t)));
            } else {
                running = Some((k, end));
            }
            k += 1;
        }
        // Then transfers.
        let started = k; // ops at positions < started have started
        loop {
            let mut progressed = false;
            while let Some(pl) = planned.get(next_off) {
                if pl.next_read > started {
                    break;
                }
                dropped[next_off] = true;
                next_off += 1;
            }
            while prefetch_order.get(next_pre).is_some_and(|&i| dropped[i]) {
                next_pre += 1;
            }
            let pre_ready =
                |next_pre: usize, state: &State, channel_free: &[Ticks; 3]| -> Option<usize> {
                    let i = *prefetch_order.get(next_pre)?;
                    let pl = &planned[i];
                    let ts = state.tensor(pl.tensor);
                    let ok = offloaded[i]
                        && ts.gpu == GpuCopy::Absent
                        && channel_free[ch(Direction::Prefetch)] <= now
                        && lookahead.is_none_or(|la| pl.next_read <= started + la)
                        && state.gpu_used + sizes[pl.tensor.ix()] + need(started, pl.next_read + 1)
                            <= cap;
                    ok.then_some(i)
                };
            let urgent = pre_ready(next_pre, &state, &channel_free)
                .filter(|i| planned[*i].next_read <= started + 1);
            let off_ready = planned.get(next_off).filter(|pl| {
                started > pl.after
                    && matches!(state.tensor(pl.tensor).gpu, GpuCopy::Present(_))
                    && channel_free[ch(Direction::Offload)] <= now
            });
            let choice = match (urgent, off_ready) {
                (Some(i), _) => Some((Direction::Prefetch, i)),
                (None, Some(_)) => Some((Direction::Offload, next_off)),
                (None, None) => {
                    pre_ready(next_pre, &state, &channel_free).map(|i| (Direction::Prefetch, i))
                }
            };
            if let Some((dir, i)) = choice {
                let t = planned[i].tensor;
                let end = now + transfer_ticks(inst, t);
                let (flight, _) = state.transfer_start(inst, dir, t, now, end);
                events.push(Event::Transfer {
                    dir,
                    tensor: t,
                    start: now,
                    end,
                    delete: dir == Direction::Offload,
                });
                channel_free[ch(dir)] = end;
                flights.push(Flight {
                    end,
                    dir,
                    tensor: t,
                    flight,
                    planned: i,
                });
                match dir {
                    Direction::Offload => next_off += 1,
                    Direction::Prefetch => next_pre += 1,
                }
                progressed = true;
            }
            if !progressed {
                break;
            }
        }
        // Zero-length transfers complete at once: go round again at the same instant.
        if flights.iter().any(|f| f.end <= now) {
            continue;
        }
        if k == n
            && running.is_none()
            && flights.is_empty()
            && later.is_empty()
            && next_pre >= prefetch_order.len()
        {
            break;
        }
        let next = flights
            .iter()
            .map(|f| f.end)
            .chain(later.iter().map(|l| l.0))
            .chain(running.map(|r| r.1))
            .min();
        match next {
            Some(t) => now = t,
            None => {
                if k == n {
                    // Only unneeded prefetches remain (their reader already ran): none can.
                    break;
                }
                return Err(SimError::Stuck {
                    at: now,
                    op: inst.op(order[k]).name.clone(),
                    used: state.gpu_used.max(0) as u64,
                    capacity: inst.machine.gpu_capacity.0,
                });
            }
        }
    }
    Ok(Schedule::one_shot(events))
}

/// Explicit deletes at the end of an op (only of copies still on the GPU: a
/// planned copy already offloaded needs none).
fn apply_deletes(state: &mut State, ts: &[TensorId], at: Ticks, events: &mut Vec<Event>) {
    for &t in ts {
        if state.tensor(t).on_gpu() {
            state.delete(t, at, &Blind);
            events.push(Event::Delete { tensor: t, at });
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

/// Convenience: the op ids in the instance's fixed order (empty for free order).
pub fn fixed_order(inst: &Instance) -> Vec<OpId> {
    match &inst.order {
        ComputeOrder::Fixed(v) => v.clone(),
        ComputeOrder::Free => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check;
    use crate::family::activation_chain::{ActivationChain, ActivationLayer};
    use crate::family::BandwidthFile;
    use quickcheck::{QuickCheck, TestResult};

    fn chain(spec: &[(u8, u8, u8, u8, u8)], mem_slack: u8, bw: u8) -> ActivationChain {
        let layers: Vec<ActivationLayer> = spec
            .iter()
            .map(|&(uf, ub, x, y, ex)| ActivationLayer {
                u_f: (uf % 5) as i64,
                u_b: (ub % 7) as i64,
                x: (x % 9) as u64,
                y: (y % 3) as u64,
                ex_f: (ex % 3) as u64,
                ex_b: (ex % 4) as u64,
            })
            .collect();
        let mut c = ActivationChain {
            name: "q".into(),
            note: None,
            layers,
            x_last: 2,
            y_last: 1,
            gpu_memory: 0,
            bandwidth: BandwidthFile::Ratio {
                bytes: 1 + (bw % 4) as u64,
                ticks: 1 + (bw / 4 % 3) as u64,
            },
            release: Default::default(),
        };
        let peak = c.m_peak().unwrap();
        c.gpu_memory = peak.saturating_sub((mem_slack % 12) as u64);
        c
    }

    static WITH_TRANSFERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    #[test]
    fn every_simulated_schedule_passes_the_checker() {
        fn prop(
            spec: Vec<(u8, u8, u8, u8, u8)>,
            slack: u8,
            bw: u8,
            mask: u32,
            la: u8,
        ) -> TestResult {
            if spec.is_empty() || spec.len() > 9 {
                return TestResult::discard();
            }
            let mut c = chain(&spec, slack, bw);
            // Both release rules: every schedule must be valid under its own.
            if mask >> 31 & 1 == 1 {
                c.release = ReleaseRule::AfterStart;
            }
            let inst = c.compile().unwrap();
            let offload: Vec<TensorId> = (0..=spec.len())
                .filter(|i| mask >> i & 1 == 1)
                .map(|i| c.x_id(i))
                .collect();
            let plan = Plan {
                offload,
                lookahead: (la % 4 != 0).then_some((la % 4) as usize),
            };
            match asap(&inst, &plan) {
                Ok(s) => {
                    if s.events.iter().any(|e| matches!(e, Event::Transfer { .. })) {
                        WITH_TRANSFERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    let r = check(&inst, &s);
                    if !r.valid {
                        eprintln!(
                            "{:?}\n{:?}",
                            c,
                            r.violations
                                .iter()
                                .map(|v| v.describe(&inst))
                                .collect::<Vec<_>>()
                        );
                    }
                    TestResult::from_bool(r.valid)
                }
                Err(SimError::Stuck { .. }) => TestResult::discard(),
                Err(e) => TestResult::error(e.to_string()),
            }
        }
        QuickCheck::new()
            .tests(300)
            .max_tests(10000)
            .min_tests_passed(100)
            .quickcheck(prop as fn(_, _, _, _, _) -> TestResult);
        // The property must not pass vacuously: many schedules really move data.
        assert!(WITH_TRANSFERS.load(std::sync::atomic::Ordering::Relaxed) >= 50);
    }

    #[test]
    fn with_ample_memory_and_no_plan_the_makespan_is_the_compute_sum() {
        let c = chain(&[(2, 3, 4, 0, 0), (1, 1, 4, 0, 0), (3, 2, 4, 0, 0)], 0, 1);
        let inst = c.compile().unwrap();
        let s = asap(&inst, &Plan::default()).unwrap();
        let r = check(&inst, &s);
        assert!(r.valid);
        assert_eq!(r.makespan, inst.total_compute());
    }

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
