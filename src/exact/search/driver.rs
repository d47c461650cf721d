//! The search's driver: the scope test, the context and the start nodes (the
//! initial state, or one root per boundary state S₀), the best-first (A* on
//! time) loop whose first finished schedule or closed period is optimal, and
//! the rebuild of that path into a schedule the checker replays.
//!
//! Owns: the plain solver `solve`, [`search_scope`], [`best_first`],
//! [`rebuild`] and the notes. The anytime search (`anytime.rs`) reuses the scope
//! test, the start nodes, the period test and the rebuild.
//! Must not import: the anytime search, the other exact methods, the door,
//! the cross-check, the reductions, heuristics.

use super::expand::expand;
use super::node::{Ctx, Node, Trail};
use super::{cyclic, unsupported, MAX_STATES, SCOPE};
use crate::exact::{ExactError, Limits, Method, Outcome, Status};
use crate::model::{ComputeOrder, Device, Direction, Instance, Mode, OpId, ReleaseRule, TensorId};
use crate::schedule::{Event, Schedule};
use crate::semantics::{transfer_ticks, State};
use crate::units::Ticks;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Minimise the makespan (one-shot) or the period (cyclic) of a tiny instance
/// by exhaustive search: the plain solver, which the door (`exact::solve`)
/// calls once the instance is in [`SCOPE`].
pub(crate) fn solve(inst: &Instance, limits: &Limits) -> Result<Outcome, ExactError> {
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

/// The fixed GPU order and the reads of each tensor by position (the CPU
/// order is [`cpu_order`]'s), or why the instance is out of the search's
/// scope.
pub(super) fn search_scope(inst: &Instance) -> Result<(Vec<OpId>, Vec<Vec<usize>>), ExactError> {
    SCOPE.direct(Method::Search, inst)?;
    // Groups, slots and `after` reach the search as fixed orders (`solve`,
    // `exact::variants`); an entry point that gives them here refuses them.
    if let Some(&e) = inst.extensions().first() {
        return Err(ExactError::Unencoded {
            method: Method::Search,
            feature: e.into(),
        });
    }
    let cyclic = inst.mode == Mode::Cyclic;
    let order = match &inst.order {
        ComputeOrder::Fixed(v) => v.clone(),
        ComputeOrder::Free => return Err(unsupported("free compute order")),
        ComputeOrder::Slots(_) => return Err(unsupported("slotted compute order")),
    };
    let mut seen = vec![false; inst.ops.len()];
    for o in &order {
        if std::mem::replace(&mut seen[o.ix()], true) {
            return Err(unsupported("an op appears twice in the order"));
        }
    }
    let (order, cpu_order): (Vec<OpId>, Vec<OpId>) = order
        .into_iter()
        .partition(|o| inst.op(*o).device == Device::Gpu);
    cpu_scope(inst, &order, &cpu_order)?;
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

/// The CPU ops of the fixed order, in their order (R8 orders each device on
/// its own).
pub(super) fn cpu_order(inst: &Instance) -> Vec<OpId> {
    match &inst.order {
        ComputeOrder::Fixed(v) => v
            .iter()
            .copied()
            .filter(|o| inst.op(*o).device == Device::Cpu)
            .collect(),
        _ => vec![],
    }
}

/// The CPU ops the search takes (proofs/SEARCH.md, "CPU ops"): cyclic only,
/// each lasting at least one tick, producing, consuming and freeing nothing,
/// modifying only what it reads and what no GPU op of the order writes (the
/// CPU's updates reach the CPU copy; the GPU copy goes stale). Tensors a CPU
/// op reads are always needed (R6) in the search.
fn cpu_scope(inst: &Instance, order: &[OpId], cpu_order: &[OpId]) -> Result<(), ExactError> {
    if cpu_order.is_empty() {
        return Ok(());
    }
    if inst.mode != Mode::Cyclic {
        return Err(unsupported("an op runs on the CPU of a one-shot instance"));
    }
    let gpu_writes = |t: &TensorId| {
        order.iter().any(|o| {
            let op = inst.op(*o);
            op.produces.contains(t) || op.modifies.contains(t)
        })
    };
    for op in cpu_order.iter().map(|o| inst.op(*o)) {
        let why = if op.duration.0 == 0 {
            "lasts 0 ticks"
        } else if !op.produces.is_empty() || !op.consumes.is_empty() || !op.frees.is_empty() {
            "produces, consumes or frees a tensor"
        } else if op
            .modifies
            .iter()
            .any(|t| !op.reads.contains(t) || gpu_writes(t))
        {
            "modifies a tensor it does not read, or one a GPU op writes"
        } else {
            continue;
        };
        return Err(unsupported(format!("the CPU op {} {why}", op.name)));
    }
    Ok(())
}

pub(super) fn context(inst: &Instance, order: Vec<OpId>, reads_at: Vec<Vec<usize>>) -> Ctx<'_> {
    let cyclic = inst.mode == Mode::Cyclic;
    let nt = inst.tensors.len();
    let durations = |v: &[OpId]| -> (Vec<i64>, Vec<i64>) {
        let dur: Vec<i64> = v.iter().map(|o| inst.op(*o).duration.0).collect();
        let mut suffix = vec![0i64; v.len() + 1];
        for k in (0..v.len()).rev() {
            suffix[k] = suffix[k + 1] + dur[k];
        }
        (dur, suffix)
    };
    let (dur, suffix) = durations(&order);
    let cpu_order = cpu_order(inst);
    let (cpu_dur, cpu_suffix) = durations(&cpu_order);
    let mut always = if cyclic {
        inst.persistent()
    } else {
        vec![false; nt]
    };
    for o in &cpu_order {
        for t in &inst.op(*o).reads {
            always[t.ix()] = true;
        }
    }
    Ctx {
        inst,
        dur,
        cpu_order,
        cpu_dur,
        cpu_suffix,
        reads_at,
        tau: (0..nt)
            .map(|i| transfer_ticks(inst, TensorId(i as u32)).0)
            .collect(),
        cap: inst.machine.gpu_capacity.0 as i128,
        channels: inst.machine.channels(),
        suffix,
        cyclic,
        always,
        born: if cyclic {
            cyclic::born(inst, &order)
        } else {
            vec![0; nt]
        },
        roots: vec![],
        after_end: inst.release == ReleaseRule::AfterEnd,
        order,
    }
}

/// The start nodes: the instance's initial state (one-shot), or one node per
/// boundary state S₀ (cyclic), each with the signature a period must close
/// on. `None`: too many boundary states.
pub(super) fn start_nodes(ctx: &mut Ctx) -> Option<(Vec<Node>, Vec<Vec<i64>>)> {
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
            cpu_next: 0,
            cpu_running: None,
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
pub(super) type End = (i64, Option<Rc<Trail>>, usize, Vec<TensorId>);

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
        heap.push(Reverse((estimate(ctx, &n), 0, nodes.len())));
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
                let est = estimate(ctx, &child.0);
                nodes.push(Some(child.0));
                heap.push(Reverse((est, -(counter as i64), nodes.len() - 1)));
            }
        }
    }
    out
}

/// The A* priority: `Ctx::estimate`, and (cyclic) what the root's boundary
/// state still needs (`cyclic::estimate`); both admissible.
fn estimate(ctx: &Ctx, n: &Node) -> i64 {
    let e = ctx.estimate(n);
    if ctx.cyclic {
        e.max(cyclic::estimate(ctx, n))
    } else {
        e
    }
}

/// Cyclic: the period closes at `n` if every op has run and the state (after
/// this instant's completions, before its deletes and starts: MODEL.md §2.6)
/// is the root's S₀ up to versions. Its estimate was the time itself, the
/// least in the queue: the period is optimal. R8: the ops still to run may
/// all be of zero duration; they then run at P itself, after the
/// completions, before the state is read (MODEL.md §2.6), with no delete or
/// transfer start before them.
pub(super) fn closes_period(ctx: &Ctx, n: &Node, closing: &[Vec<i64>]) -> Option<End> {
    let cpu_done = n.cpu_running.is_none() && n.cpu_next == ctx.cpu_order.len();
    if !(ctx.cyclic && n.running.is_none() && cpu_done && n.time > 0 && ctx.suffix[n.next] == 0) {
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
        if !ctx.cpu_order.is_empty() {
            notes.push(format!("search: a CPU stream of {} ops; every tick is a decision instant until the last one ends; the tensors CPU ops read are always needed (R6)", ctx.cpu_order.len()));
        }
        notes.push(format!("structural limits: the first op starts at time 0; trailing zero-duration ops may run at P; decisions at time 0, at completions and one tick after {}; transfers at full bandwidth; one offload per value, none of a tensor while an op that modifies it runs; live tensors deleted only when an allocation needs the room, never while an op that modifies them runs (proofs/SEARCH.md)", after));
    } else {
        notes.push(format!("structural limits: decisions at time 0, at completions and one tick after {}; transfers at full bandwidth; one offload per value; dead tensors deleted at once (once no op or transfer holds them), live ones only when an allocation needs the room (proofs/SEARCH.md)", after));
    }
    notes
}

/// The schedule of an optimal path, replayed by the checker; its makespan
/// (period), which must be the search's.
pub(super) fn rebuild(
    ctx: &Ctx,
    (ms, trail, root, flagged): End,
) -> Result<(Schedule, Ticks), ExactError> {
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
    let checked = ExactError::checked(Method::Search, ctx.inst, &sched)?;
    let report = checked.report();
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
