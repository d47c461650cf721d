//! Exact method (c): exhaustive state-space search (A* on time) for tiny
//! instances, built directly on the shared rules: every successor is
//! produced by [`crate::semantics::State`]'s transitions (`op_start`, `op_end`,
//! `transfer_start`, `transfer_end`, `delete`), and a successor is kept only if
//! those transitions report no [`Breach`](crate::semantics::Breach) and the GPU
//! memory they account stays within capacity after every allocation.
//!
//! Owns: the search, its state key and its structural limits (`proofs/SEARCH.md`);
//! `cyclic.rs` owns the boundary states of the cyclic search (their enumeration,
//! the root nodes built from them and the test that a period closes the cycle).
//! Must not import: the MILP, the SMT method, heuristics.
//!
//! Scope: a fixed order of GPU ops (each once), no CPU capacity. One-shot: no
//! modified transferable tensor, each tensor produced at most once. Cyclic
//! (`weight_chain` and core instances of its shape): only persistent tensors
//! move; every per-iteration tensor is produced once, before it is read, and
//! released by an op of the period. A cyclic schedule of period P is a cycle of
//! length P in the state graph: the search starts from every boundary state
//! S₀ (with the transfers in flight across the boundary) at once and stops at
//! the first node, at time P, whose state equals its own S₀ up to versions.
//! Anything else is refused with [`ExactError::Unsupported`].
//!
//! Both release rules (`Instance::release`, MODEL.md R10): under the default
//! `after_end` no copy is released while a running op or transfer holds it
//! (dead copies wait for the holder's end, a completion), and one tick after
//! an op start is a decision instant only for zero-duration ops; under the
//! relaxation `after_start` an op's inputs may go one tick after its start.
//! Cyclic: a period's trailing zero-duration ops may run at P (R8).

pub mod anytime;
mod cyclic;

use crate::exact::{ExactError, Limits, Method, Outcome, Status};
use crate::model::{ComputeOrder, Device, Direction, Instance, Mode, OpId, ReleaseRule, TensorId};
use crate::schedule::{Event, Schedule};
use crate::semantics::{transfer_ticks, GpuCopy, InFlight, Lookahead, State};
use crate::units::Ticks;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Stop (status `Unknown`) after expanding this many states.
pub const MAX_STATES: usize = 3_000_000;

/// Cyclic: the most boundary states searched from (status `Unknown` beyond).
pub const MAX_ROOTS: usize = cyclic::MAX_ROOTS;

fn unsupported(reason: impl Into<String>) -> ExactError {
    ExactError::Unsupported {
        method: Method::Search,
        reason: reason.into(),
    }
}

/// "Needed later" for rule R6: read by an op at a position not yet started,
/// or (cyclic) persistent, hence always needed (MODEL.md §3).
struct Future<'a> {
    reads_at: &'a [Vec<usize>],
    always: &'a [bool],
    next: usize,
}

impl Lookahead for Future<'_> {
    fn needed_after(&self, t: TensorId, _at: Ticks) -> bool {
        self.always[t.ix()] || self.reads_at[t.ix()].iter().any(|&p| p >= self.next)
    }
}

#[derive(Clone, Copy, Debug)]
struct Flight {
    dir: Direction,
    tensor: TensorId,
    end: i64,
    flight: InFlight,
}

/// The schedule so far, shared between nodes.
struct Trail {
    event: Event,
    prev: Option<Rc<Trail>>,
}

#[derive(Clone)]
struct Node {
    /// The instant this node stands at, before that instant's completions.
    time: i64,
    next: usize,
    running: Option<(usize, i64)>,
    flights: Vec<Option<Flight>>,
    state: State,
    trail: Option<Rc<Trail>>,
    /// An op started at `time - 1`: this instant is a decision point even if
    /// nothing completes (its inputs may be deleted from here on).
    after_start: bool,
    /// Tensors whose offload completed at `time` (after [`Ctx::complete`]):
    /// cyclic, such an offload may carry `delete` so that the copy goes before
    /// the period's zero-duration ops at P (R8).
    offloaded_now: Vec<TensorId>,
    /// Cyclic: the boundary state this path started from (an index into
    /// `Ctx::roots`); 0 for one-shot.
    root: usize,
}

struct Ctx<'a> {
    inst: &'a Instance,
    order: Vec<OpId>,
    dur: Vec<i64>,
    reads_at: Vec<Vec<usize>>,
    tau: Vec<i64>,
    cap: i128,
    channels: Vec<crate::model::Channel>,
    /// Remaining compute from position k on.
    suffix: Vec<i64>,
    /// Cyclic mode.
    cyclic: bool,
    /// Tensors always needed later (cyclic: the persistent ones; one-shot: none).
    always: Vec<bool>,
    /// Cyclic: the boundary states searched from (empty for one-shot).
    roots: Vec<cyclic::Boundary>,
    /// The default release rule (MODEL.md R10): a copy in use by a running op
    /// or transfer is not released (proofs/SEARCH.md, limits 4–6).
    after_end: bool,
}

fn push(trail: &mut Option<Rc<Trail>>, event: Event) {
    *trail = Some(Rc::new(Trail {
        event,
        prev: trail.take(),
    }));
}

impl Ctx<'_> {
    fn future(&self, next: usize) -> Future<'_> {
        Future {
            reads_at: &self.reads_at,
            always: &self.always,
            next,
        }
    }

    fn needed(&self, t: TensorId, next: usize) -> bool {
        self.always[t.ix()] || self.reads_at[t.ix()].iter().any(|&p| p >= next)
    }

    /// Under the default rule, is the GPU copy of `t` in use at `n.time` (a pin
    /// of a running op or transfer strictly covers the instant)? A release
    /// there would break R10, so the search waits for the pin's end, which is a
    /// completion and hence a decision instant. Under the relaxation nothing
    /// is held.
    fn held(&self, n: &Node, t: TensorId) -> bool {
        self.after_end && n.state.pin_covering(t, Ticks(n.time)).is_some()
    }

    fn channel_ix(&self, dir: Direction) -> usize {
        let c = self.inst.machine.channel(dir);
        self.channels.iter().position(|x| *x == c).unwrap_or(0)
    }

    /// Cyclic: does the op at position `k` (running, or about to run) modify
    /// `t`? Such a tensor is neither deleted nor offloaded while the op runs
    /// (proofs/SEARCH.md, limit 10: deleting it loses the update, offloading it
    /// copies a value about to be replaced).
    fn modified_by(&self, k: Option<usize>, t: TensorId) -> bool {
        self.cyclic && k.is_some_and(|k| self.inst.op(self.order[k]).modifies.contains(&t))
    }

    /// The completions at `n.time`: transfer ends, then the op end (§2.4).
    fn complete(&self, n: &mut Node) -> bool {
        let now = Ticks(n.time);
        n.offloaded_now.clear();
        for ch in 0..n.flights.len() {
            if let Some(f) = n.flights[ch] {
                if f.end == n.time {
                    let b = n.state.transfer_end(
                        f.dir,
                        f.tensor,
                        f.flight,
                        false,
                        now,
                        &self.future(n.next),
                    );
                    if !b.is_empty() {
                        return false;
                    }
                    n.flights[ch] = None;
                    if f.dir == Direction::Offload {
                        n.offloaded_now.push(f.tensor);
                    }
                }
            }
        }
        if let Some((k, end)) = n.running {
            if end == n.time {
                let b = n
                    .state
                    .op_end(self.inst, self.order[k], now, &self.future(n.next));
                if !b.is_empty() {
                    return false;
                }
                n.running = None;
            }
        }
        true
    }

    fn key(&self, n: &Node) -> Vec<i64> {
        let mut k = Vec::with_capacity(9 + 5 * n.state.tensors.len());
        k.push(n.root as i64);
        k.push(n.next as i64);
        k.push(n.after_start as i64);
        k.push(n.running.map_or(-1, |(_, e)| e - n.time));
        for f in &n.flights {
            match f {
                Some(f) => {
                    k.extend([f.tensor.0 as i64, f.dir as i64, f.end - n.time]);
                    k.push(f.flight.version.map_or(-1, |v| v as i64));
                }
                None => k.push(-2),
            }
        }
        for ts in &n.state.tensors {
            match ts.gpu {
                GpuCopy::Absent => k.push(-1),
                GpuCopy::Pending { ready, version } => {
                    k.extend([-2, ready.0 - n.time, version.map_or(-1, |v| v as i64)])
                }
                GpuCopy::Present(v) => k.push(v as i64),
            }
            k.push(ts.cpu.map_or(-1, |v| v as i64));
            k.extend([ts.cpu_incoming as i64, ts.latest as i64, ts.exists as i64]);
        }
        k
    }

    /// A lower bound on the makespan (period) reachable from `n` (admissible:
    /// the remaining compute runs on one stream; a started transfer ends before
    /// the makespan, or, cyclic, crosses the period end with exactly the ticks
    /// left that the root's boundary state gives its channel).
    fn estimate(&self, n: &Node) -> i64 {
        let run = n.running.map_or(0, |(_, e)| e - n.time);
        let mut f = n.time + run + self.suffix[n.next];
        for (ch, fl) in n.flights.iter().enumerate() {
            if let Some(fl) = fl {
                let left = self.roots.get(n.root).map_or(0, |b| b.left[ch]);
                f = f.max(fl.end - left);
            }
        }
        f
    }
}

/// One candidate transfer start.
#[derive(Clone, Copy)]
struct Start {
    dir: Direction,
    tensor: TensorId,
}

/// Minimise the makespan (one-shot) or the period (cyclic) of a tiny instance
/// by exhaustive search.
pub fn solve(inst: &Instance, limits: &Limits) -> Result<Outcome, ExactError> {
    let started = Instant::now();
    let (order, reads_at) = search_scope(inst)?;
    let mut ctx = context(inst, order, reads_at);
    let Some((starts, closing)) = start_nodes(&mut ctx) else {
        return Ok(Outcome {
            method: Method::Search,
            status: Status::Unknown,
            schedule: None,
            bound: None,
            elapsed: started.elapsed(),
            notes: vec![format!(
                "search: more than {} boundary states S0; not searched",
                cyclic::MAX_ROOTS
            )],
        });
    };
    let found = best_first(&ctx, starts, &closing, limits, started);
    let notes = search_notes(&ctx, found.expanded);
    let elapsed = started.elapsed();
    let (status, schedule, bound) = match found.end {
        Some(end) => {
            let (sched, ms) = rebuild(&ctx, end)?;
            (Status::Optimal, Some(sched), Some(ms))
        }
        None if found.stopped => (Status::Unknown, None, None),
        None => (Status::Infeasible, None, None),
    };
    Ok(Outcome {
        method: Method::Search,
        status,
        schedule,
        bound,
        elapsed,
        notes,
    })
}

/// The fixed GPU order and the reads of each tensor by position, or why the
/// instance is out of the search's scope.
fn search_scope(inst: &Instance) -> Result<(Vec<OpId>, Vec<Vec<usize>>), ExactError> {
    let cyclic = inst.mode == Mode::Cyclic;
    let order = match &inst.order {
        ComputeOrder::Fixed(v) => v.clone(),
        ComputeOrder::Free => return Err(unsupported("free compute order")),
    };
    let mut seen = vec![false; inst.ops.len()];
    for o in &order {
        if std::mem::replace(&mut seen[o.ix()], true) {
            return Err(unsupported("an op appears twice in the order"));
        }
        if inst.op(*o).device != Device::Gpu {
            return Err(unsupported("an op runs on the CPU"));
        }
    }
    if inst.machine.cpu_capacity.is_some() {
        return Err(unsupported("a CPU memory capacity"));
    }
    let nt = inst.tensors.len();
    let mut reads_at = vec![vec![]; nt];
    let mut produced = vec![0usize; nt];
    for (k, o) in order.iter().enumerate() {
        let op = inst.op(*o);
        for t in &op.reads {
            reads_at[t.ix()].push(k);
        }
        for t in &op.produces {
            produced[t.ix()] += 1;
        }
        if !cyclic
            && !op.modifies.is_empty()
            && op.modifies.iter().any(|t| inst.tensor(*t).transferable)
        {
            return Err(unsupported("a transferable tensor is modified"));
        }
    }
    if produced.iter().any(|&p| p > 1) {
        return Err(unsupported("a tensor is produced twice"));
    }
    if cyclic {
        cyclic::scope(inst, &order)?;
    }
    Ok((order, reads_at))
}

fn context(inst: &Instance, order: Vec<OpId>, reads_at: Vec<Vec<usize>>) -> Ctx<'_> {
    let cyclic = inst.mode == Mode::Cyclic;
    let nt = inst.tensors.len();
    let dur: Vec<i64> = order.iter().map(|o| inst.op(*o).duration.0).collect();
    let mut suffix = vec![0i64; order.len() + 1];
    for k in (0..order.len()).rev() {
        suffix[k] = suffix[k + 1] + dur[k];
    }
    Ctx {
        inst,
        order,
        dur,
        reads_at,
        tau: (0..nt)
            .map(|i| transfer_ticks(inst, TensorId(i as u32)).0)
            .collect(),
        cap: inst.machine.gpu_capacity.0 as i128,
        channels: inst.machine.channels(),
        suffix,
        cyclic,
        always: if cyclic {
            inst.persistent()
        } else {
            vec![false; nt]
        },
        roots: vec![],
        after_end: inst.release == ReleaseRule::AfterEnd,
    }
}

/// The start nodes: the instance's initial state (one-shot), or one node per
/// boundary state S₀ (cyclic), each with the signature a period must close
/// on. `None`: too many boundary states.
fn start_nodes(ctx: &mut Ctx) -> Option<(Vec<Node>, Vec<Vec<i64>>)> {
    let mut starts: Vec<Node> = vec![];
    let mut closing: Vec<Vec<i64>> = vec![];
    if ctx.cyclic {
        ctx.roots = cyclic::boundaries(ctx)?;
        for ix in 0..ctx.roots.len() {
            if let Some(n) = cyclic::root(ctx, ix) {
                closing.push(cyclic::signature(ctx, &n));
                starts.push(n);
            } else {
                closing.push(vec![]);
            }
        }
    } else {
        starts.push(Node {
            time: 0,
            next: 0,
            running: None,
            flights: vec![None; ctx.channels.len()],
            state: State::initial(ctx.inst),
            trail: None,
            after_start: false,
            offloaded_now: vec![],
            root: 0,
        });
    }
    Some((starts, closing))
}

/// The end of an optimal path: (makespan or period, trail, root, offloads
/// ending at P that delete).
type End = (i64, Option<Rc<Trail>>, usize, Vec<TensorId>);

/// What the best-first search established.
struct Searched {
    end: Option<End>,
    expanded: usize,
    /// Interrupt, time limit or state limit.
    stopped: bool,
}

/// Best-first search on the estimate: the first finished schedule (one-shot)
/// or closed period (cyclic) popped is optimal.
fn best_first(
    ctx: &Ctx,
    starts: Vec<Node>,
    closing: &[Vec<i64>],
    limits: &Limits,
    started: Instant,
) -> Searched {
    let mut heap: BinaryHeap<Reverse<(i64, i64, usize)>> = BinaryHeap::new();
    let mut nodes: Vec<Option<Node>> = vec![];
    // Done markers: (makespan, trail).
    let mut done: Vec<(i64, Option<Rc<Trail>>)> = vec![];
    let mut closed: HashMap<Vec<i64>, i64> = HashMap::new();
    let mut counter: usize = 0;
    for n in starts {
        heap.push(Reverse((ctx.estimate(&n), 0, nodes.len())));
        nodes.push(Some(n));
    }
    let mut out = Searched {
        end: None,
        expanded: 0,
        stopped: false,
    };
    let mut last_report = Instant::now();
    let stop = |expanded: usize| {
        limits.cancel.load(Ordering::Relaxed)
            || started.elapsed() >= limits.time_limit
            || expanded >= MAX_STATES
    };
    while let Some(Reverse((f, _, id))) = heap.pop() {
        if id >= usize::MAX / 2 {
            let (ms, trail) = done[id - usize::MAX / 2].clone();
            out.end = Some((ms, trail, 0, vec![]));
            break;
        }
        let Some(mut n) = nodes[id].take() else {
            continue;
        };
        if stop(out.expanded) {
            out.stopped = true;
            break;
        }
        out.expanded += 1;
        if limits.progress && last_report.elapsed().as_secs() >= 2 {
            last_report = Instant::now();
            eprintln!(
                "search: {:>7.2}s  {} states  bound {}",
                started.elapsed().as_secs_f64(),
                out.expanded,
                f
            );
        }
        if !ctx.complete(&mut n) {
            continue;
        }
        if let Some(end) = closes_period(ctx, &n, closing) {
            out.end = Some(end);
            break;
        }
        let key = ctx.key(&n);
        match closed.get(&key) {
            Some(&t) if t <= n.time => continue,
            _ => {
                closed.insert(key, n.time);
            }
        }
        for child in expand(ctx, &n, usize::MAX, &mut false) {
            counter += 1;
            if let Some(ms) = child.1 {
                done.push((ms, child.0.trail.clone()));
                heap.push(Reverse((
                    ms,
                    -(counter as i64),
                    usize::MAX / 2 + done.len() - 1,
                )));
            } else {
                let est = ctx.estimate(&child.0);
                nodes.push(Some(child.0));
                heap.push(Reverse((est, -(counter as i64), nodes.len() - 1)));
            }
        }
    }
    out
}

/// Cyclic: the period closes at `n` if every op has run and the state (after
/// this instant's completions, before its deletes and starts: MODEL.md §2.6)
/// is the root's S₀ up to versions. Its estimate was the time itself, the
/// least in the queue: the period is optimal. R8: the ops still to run may
/// all be of zero duration; they then run at P itself, after the
/// completions, before the state is read (MODEL.md §2.6), with no delete or
/// transfer start before them.
fn closes_period(ctx: &Ctx, n: &Node, closing: &[Vec<i64>]) -> Option<End> {
    if !(ctx.cyclic && n.running.is_none() && n.time > 0 && ctx.suffix[n.next] == 0) {
        return None;
    }
    let (m, flagged) = cyclic::run_at_period_end(ctx, n)?;
    (cyclic::signature(ctx, &m) == closing[m.root])
        .then(|| (m.time, m.trail.clone(), m.root, flagged))
}

/// The notes: states expanded, the rule, and the structural limits.
fn search_notes(ctx: &Ctx, expanded: usize) -> Vec<String> {
    let mut notes = vec![
        format!("search: {expanded} states expanded"),
        format!("release rule: {}", ctx.inst.release),
    ];
    let after = if ctx.after_end {
        "each start of a zero-duration op (an op holds its operands to its end)"
    } else {
        "each op start (relaxation: an op needs its inputs only at its start)"
    };
    if ctx.cyclic {
        notes.push(format!(
            "search: {} boundary states S0 searched from",
            ctx.roots.len()
        ));
        notes.push(format!("structural limits: the first op starts at time 0; trailing zero-duration ops may run at P; decisions at time 0, at completions and one tick after {}; transfers at full bandwidth; one offload per value, none of a tensor while an op that modifies it runs; live tensors deleted only when an allocation needs the room, never while an op that modifies them runs (proofs/SEARCH.md)", after));
    } else {
        notes.push(format!("structural limits: decisions at time 0, at completions and one tick after {}; transfers at full bandwidth; one offload per value; dead tensors deleted at once (once no op or transfer holds them), live ones only when an allocation needs the room (proofs/SEARCH.md)", after));
    }
    notes
}

/// The schedule of an optimal path, replayed by the checker; its makespan
/// (period), which must be the search's.
fn rebuild(ctx: &Ctx, (ms, trail, root, flagged): End) -> Result<(Schedule, Ticks), ExactError> {
    let mut events = vec![];
    let mut cur = trail;
    while let Some(t) = cur {
        let mut e = t.event;
        // An offload ending at P whose copy goes before the period's
        // zero-duration ops at P carries the delete (R8).
        if let Event::Transfer {
            dir: Direction::Offload,
            tensor,
            end,
            ref mut delete,
            ..
        } = e
        {
            if end.0 == ms && flagged.contains(&tensor) {
                *delete = true;
            }
        }
        events.push(e);
        cur = t.prev.clone();
    }
    events.reverse();
    let sched = if ctx.cyclic {
        Schedule::cyclic(Ticks(ms), ctx.roots[root].state(), events)
    } else {
        Schedule::one_shot(events)
    };
    let report = crate::check::check(ctx.inst, &sched);
    if !report.valid {
        return Err(ExactError::CheckerRejected {
            method: Method::Search,
            violations: super::Rejected(report.violations.clone()),
        });
    }
    if report.makespan.0 != ms {
        return Err(ExactError::Backend {
            method: Method::Search,
            message: format!(
                "search makespan {ms} differs from the checker's {}",
                report.makespan
            ),
        });
    }
    Ok((sched, report.makespan))
}

/// Successors of a node whose completions are done: (child, Some(makespan) if
/// the child is a finished one-shot schedule). At most `mask_budget` delete
/// sets of live tensors are tried per choice of op starts and transfer starts;
/// when that budget cuts the list short, `truncated` is set (the successors
/// are then a subset of the complete list: the anytime search keeps the
/// node's estimate in its bound, `anytime.rs`).
fn expand(
    ctx: &Ctx,
    n: &Node,
    mask_budget: usize,
    truncated: &mut bool,
) -> Vec<(Node, Option<i64>)> {
    let mut out = vec![];
    let now = Ticks(n.time);
    let mut base = n.clone();
    // Finished (one-shot): no delete is needed once nothing more is allocated
    // (and a delete at this instant could precede the start of a zero-duration
    // op that produced the tensor at this very instant, §2.4). A cyclic path
    // ends only where it closes its cycle (tested before expanding).
    if !ctx.cyclic && base.next == ctx.order.len() && base.running.is_none() {
        let mut ms = n.time;
        let mut cur = base.trail.clone();
        while let Some(t) = cur {
            ms = ms.max(t.event.end().0);
            cur = t.prev.clone();
        }
        out.push((base, Some(ms)));
        return out;
    }
    // Dead tensors go at once: a present copy nobody reads again only takes room.
    // Under the default rule a copy still in use waits for its holder's end.
    for i in 0..base.state.tensors.len() {
        let t = TensorId(i as u32);
        if ctx.inst.tensor(t).size.0 > 0
            && matches!(base.state.tensors[i].gpu, GpuCopy::Present(_))
            && !ctx.needed(t, base.next)
            && !ctx.held(&base, t)
        {
            let b = base.state.delete(t, now, &ctx.future(base.next));
            if !b.is_empty() {
                return out;
            }
            push(&mut base.trail, Event::Delete { tensor: t, at: now });
        }
    }
    // Live tensors that could be evicted (current CPU copy, present, not needed by
    // an op that would start now is checked by the transitions themselves).
    let running = base.running.map(|(k, _)| k);
    let evictable: Vec<TensorId> = (0..base.state.tensors.len())
        .map(|i| TensorId(i as u32))
        .filter(|t| {
            let ts = base.state.tensor(*t);
            ctx.inst.tensor(*t).size.0 > 0
                && matches!(ts.gpu, GpuCopy::Present(_))
                && ts.cpu_current()
                && !ctx.modified_by(running, *t)
                && !ctx.held(&base, *t)
        })
        .collect();
    // Op starts: none, or a run of consecutive ops (all but the last of duration 0).
    // Cyclic: the first op starts at time 0 (a rotation of any periodic schedule).
    let mut op_runs: Vec<usize> = if ctx.cyclic && base.next == 0 {
        vec![]
    } else {
        vec![0]
    };
    if base.running.is_none() {
        let mut k = base.next;
        while k < ctx.order.len() {
            op_runs.push(k + 1 - base.next);
            if ctx.dur[k] > 0 {
                break;
            }
            k += 1;
        }
    }
    let m = evictable.len();
    for &run in &op_runs {
        // Transfers start after this instant's deletes and op starts (MODEL.md
        // §2.4): a tensor that a zero-duration op of the run produces can be
        // offloaded at once, and a live tensor deleted now can be prefetched
        // again at once (worth it when a zero-duration op of the run peaks in
        // between). Candidates are therefore read from the state after every
        // evictable delete and the run; `apply` validates each choice in full.
        let busy = if run > 0 && ctx.dur[base.next + run - 1] > 0 {
            Some(base.next + run - 1)
        } else {
            running
        };
        let combos = transfer_combos(
            ctx,
            &after_ops(ctx, &base, &[], run),
            &after_ops(ctx, &base, &evictable, run),
            &base,
            busy,
        );
        for combo in &combos {
            let allocates = run > 0 || combo.iter().flatten().any(|s| s.dir == Direction::Prefetch);
            let mut accepted: Vec<u64> = vec![];
            // Deletes of live tensors only when an allocation here needs the room,
            // and only minimal sets (a larger set can wait for a later allocation).
            let (mut tried, mut listed) = (0usize, 0usize);
            for mask in masks_by_size(m) {
                if mask != 0 && !allocates {
                    break;
                }
                if mask == u64::MAX {
                    *truncated = true;
                    break;
                }
                if accepted.first() == Some(&0) {
                    // Every other set is a superset of the empty one.
                    break;
                }
                listed += 1;
                if accepted.iter().any(|a| a & mask == *a) {
                    if listed > mask_budget.saturating_mul(64) {
                        *truncated = true;
                        break;
                    }
                    continue;
                }
                if tried >= mask_budget {
                    *truncated = true;
                    break;
                }
                tried += 1;
                if let Some(child) = apply(ctx, &base, run, combo, &evictable, mask) {
                    accepted.push(mask);
                    out.push((child, None));
                }
            }
        }
    }
    out
}

/// Every subset of `m` items as a bit mask, by increasing size (Gosper's hack
/// within each size). More than 63 items cannot be listed: the iterator then
/// yields `u64::MAX` after the empty set, which [`expand`] treats as a cut.
fn masks_by_size(m: usize) -> impl Iterator<Item = u64> {
    // (size of the current subsets, the current mask); None when done.
    let mut cur: Option<(usize, u64)> = Some((0, 0));
    std::iter::from_fn(move || {
        let (size, mask) = cur?;
        cur = if m > 63 {
            // Too many to list: the empty set, then the marker.
            (mask == 0).then_some((1, u64::MAX))
        } else if mask == 0 || mask == u64::MAX {
            (size < m && mask == 0).then(|| (size + 1, (1u64 << (size + 1)) - 1))
        } else {
            let c = mask & mask.wrapping_neg();
            let r = mask + c;
            let next = (((r ^ mask) >> 2) / c) | r;
            if next < (1u64 << m) {
                Some((size, next))
            } else if size < m {
                Some((size + 1, (1u64 << (size + 1)) - 1))
            } else {
                None
            }
        };
        Some(mask)
    })
}

/// The state after deleting every tensor of `evictable` and starting the next
/// `run` ops at `n.time` (zero-duration ones also ending), with no rule or
/// memory check: only used to list transfer candidates, which [`apply`] then
/// validates in full. Deleting more only adds prefetch candidates; offload
/// candidates are read from the state with no delete (an evictable tensor has
/// a current CPU copy, but a zero-duration op of the run may modify it, and
/// then it is one).
fn after_ops(ctx: &Ctx, n: &Node, evictable: &[TensorId], run: usize) -> State {
    let mut state = n.state.clone();
    let now = Ticks(n.time);
    for t in evictable {
        let _ = state.delete(*t, now, &ctx.future(n.next));
    }
    for k in n.next..n.next + run {
        let op = ctx.order[k];
        let fut = ctx.future(k + 1);
        let _ = state.op_start(ctx.inst, op, now, Ticks(n.time + ctx.dur[k]), &fut);
        if ctx.dur[k] == 0 {
            let _ = state.op_end(ctx.inst, op, now, &fut);
        }
    }
    state
}

/// Every combination of transfer starts (at most one per free channel) that
/// the structural limits of `proofs/SEARCH.md` allow: offloads from `kept` (the
/// state after this instant's op starts), prefetches from `evicted` (the same
/// after deleting every evictable tensor first). `busy` is the op that runs
/// after this instant's starts (cyclic: what it modifies is not offloaded, the
/// copy would be stale at its end).
fn transfer_combos(
    ctx: &Ctx,
    kept: &State,
    evicted: &State,
    n: &Node,
    busy: Option<usize>,
) -> Vec<Vec<Option<Start>>> {
    let mut cands: Vec<Vec<Option<Start>>> = vec![];
    for ch in 0..n.flights.len() {
        let mut v = vec![None];
        if n.flights[ch].is_none() {
            for i in 0..kept.tensors.len() {
                let t = TensorId(i as u32);
                let ten = ctx.inst.tensor(t);
                if !ten.transferable || ten.size.0 == 0 || !ctx.needed(t, n.next) {
                    continue;
                }
                for dir in [Direction::Offload, Direction::Prefetch] {
                    if ctx.channel_ix(dir) != ch {
                        continue;
                    }
                    let ok = match dir {
                        // One offload per value: never rewrite a current CPU copy.
                        Direction::Offload => {
                            let ts = kept.tensor(t);
                            matches!(ts.gpu, GpuCopy::Present(_))
                                && !ts.cpu_current()
                                && ts.cpu_incoming == 0
                                && !ctx.modified_by(busy, t)
                        }
                        Direction::Prefetch => {
                            let ts = evicted.tensor(t);
                            !ts.on_gpu() && ts.cpu_current()
                        }
                    };
                    if ok {
                        v.push(Some(Start { dir, tensor: t }));
                    }
                }
            }
        }
        cands.push(v);
    }
    let mut combos: Vec<Vec<Option<Start>>> = vec![vec![]];
    for c in &cands {
        let mut nx = vec![];
        for pre in &combos {
            for x in c {
                let mut p = pre.clone();
                p.push(*x);
                nx.push(p);
            }
        }
        combos = nx;
    }
    combos
}

/// Apply deletes (`mask` over `evictable`), `run` op starts and the transfer
/// starts at this instant, in the same-instant order of MODEL.md §2.4; `None` if
/// a transition breaches a rule or memory exceeds capacity after an allocation.
fn apply(
    ctx: &Ctx,
    base: &Node,
    run: usize,
    combo: &[Option<Start>],
    evictable: &[TensorId],
    mask: u64,
) -> Option<Node> {
    let mut n = base.clone();
    apply_deletes(ctx, &mut n, evictable, mask)?;
    // An op start may make the next tick a decision instant: the op's inputs
    // may be deleted from then on (a delete at the start instant itself comes
    // before the start, §2.4). Under the relaxation this holds for every op;
    // under the default rule a positive op holds its inputs to its end (a
    // completion), so only the inputs of the run's zero-duration ops, which
    // hold nothing, become deletable one tick later (proofs/SEARCH.md, limit 6).
    let started_any = if ctx.after_end {
        (0..run).any(|j| ctx.dur[n.next + j] == 0)
    } else {
        run > 0
    };
    apply_op_starts(ctx, &mut n, run)?;
    apply_transfer_starts(ctx, &mut n, combo)?;
    let next = next_instant(ctx, &n, started_any)?;
    n.after_start = started_any && next == n.time + 1;
    n.time = next;
    Some(n)
}

/// The deletes of `mask` over `evictable` (R6).
fn apply_deletes(ctx: &Ctx, n: &mut Node, evictable: &[TensorId], mask: u64) -> Option<()> {
    let now = Ticks(n.time);
    for (j, t) in evictable.iter().enumerate() {
        if mask & (1u64 << j) != 0 {
            if !n.state.delete(*t, now, &ctx.future(n.next)).is_empty() {
                return None;
            }
            push(
                &mut n.trail,
                Event::Delete {
                    tensor: *t,
                    at: now,
                },
            );
        }
    }
    Some(())
}

/// The next `run` ops start now (zero-duration ones end at once); memory is
/// checked after each allocation (R7).
fn apply_op_starts(ctx: &Ctx, n: &mut Node, run: usize) -> Option<()> {
    let now = Ticks(n.time);
    for _ in 0..run {
        let k = n.next;
        let op = ctx.order[k];
        let end = n.time + ctx.dur[k];
        n.next = k + 1;
        if !n
            .state
            .op_start(ctx.inst, op, now, Ticks(end), &ctx.future(n.next))
            .is_empty()
        {
            return None;
        }
        if n.state.gpu_used > ctx.cap {
            return None;
        }
        push(
            &mut n.trail,
            Event::Compute {
                op,
                start: now,
                end: Ticks(end),
            },
        );
        if ctx.dur[k] == 0 {
            if !n
                .state
                .op_end(ctx.inst, op, now, &ctx.future(n.next))
                .is_empty()
            {
                return None;
            }
        } else {
            n.running = Some((k, end));
        }
    }
    Some(())
}

/// The transfer starts of `combo`, one per channel, at full bandwidth.
fn apply_transfer_starts(ctx: &Ctx, n: &mut Node, combo: &[Option<Start>]) -> Option<()> {
    let now = Ticks(n.time);
    for (ch, s) in combo.iter().enumerate() {
        let Some(s) = s else { continue };
        let end = n.time + ctx.tau[s.tensor.ix()];
        let (flight, b) =
            n.state
                .transfer_start(ctx.inst, s.dir, s.tensor, Ticks(n.time), Ticks(end));
        if !b.is_empty() || n.state.gpu_used > ctx.cap {
            return None;
        }
        push(
            &mut n.trail,
            Event::Transfer {
                dir: s.dir,
                tensor: s.tensor,
                start: now,
                end: Ticks(end),
                delete: false,
            },
        );
        n.flights[ch] = Some(Flight {
            dir: s.dir,
            tensor: s.tensor,
            end,
            flight,
        });
    }
    Some(())
}

/// The next decision instant; `None` when waiting leads nowhere.
fn next_instant(ctx: &Ctx, n: &Node, started_any: bool) -> Option<i64> {
    let mut next = i64::MAX;
    if let Some((_, e)) = n.running {
        next = next.min(e);
    }
    for f in n.flights.iter().flatten() {
        next = next.min(f.end);
    }
    // (One-shot: once every op has started nothing more can be enabled:
    // offloads and prefetches are only of tensors read again. Cyclic: one tick
    // after the last op start may be where the period ends.)
    if started_any && (ctx.cyclic || n.next < ctx.order.len()) {
        next = next.min(n.time + 1);
    }
    if next == i64::MAX {
        // Nothing runs: unless everything is done, waiting leads nowhere. A
        // cyclic path in this case never changes again: its cycle closed at
        // this instant or never.
        if n.next == ctx.order.len() && !ctx.cyclic {
            next = n.time;
        } else {
            return None;
        }
    }
    if next == n.time && n.next < ctx.order.len() {
        return None;
    }
    Some(next)
}

#[cfg(test)]
mod mask_tests {
    use super::masks_by_size;

    #[test]
    fn every_subset_once_by_increasing_size() {
        for m in 0..=10usize {
            let v: Vec<u64> = masks_by_size(m).collect();
            assert_eq!(v.len(), 1 << m, "m = {m}");
            let mut seen = std::collections::HashSet::new();
            for w in v.windows(2) {
                assert!(w[0].count_ones() <= w[1].count_ones());
            }
            for x in &v {
                assert!(*x < (1u64 << m) && seen.insert(*x));
            }
        }
        assert_eq!(masks_by_size(63).take(3).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(masks_by_size(64).collect::<Vec<_>>(), vec![0, u64::MAX]);
    }
}
