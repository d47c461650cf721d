//! The cyclic part of the search: a schedule of period P is a cycle of length P
//! in the state graph. This module owns the boundary states S₀ the cycle may
//! pass through at time 0 (their enumeration, the scope in which that
//! enumeration is complete), the root node built from each one, the
//! signature that says whether a node at time P closes the cycle, where a
//! per-iteration tensor's reads start to be needs ([`born`]), and the A* term
//! of what a root still needs at P ([`estimate`]). Persistent and
//! per-iteration tensors may move (proofs/SEARCH.md, "Cyclic instances").
//! Must not import: the driver, the expansion, the anytime search, the MILP,
//! the SMT method, heuristics.
//!
//! A boundary state is what the checker's two-period replay starts from
//! (MODEL.md §2.6): S₀ = (G₀, C₀) plus the transfers in flight across the
//! boundary, each with the ticks it has left. The root node is built exactly
//! as the replay builds its state: [`State::from_cyclic`], then one
//! `transfer_start` per crossing transfer (the replay's copies at time − P).
//! The period closes at a node at time T once every op has run and its
//! signature (copies present or pending and whether current, CPU copies
//! current, offloads in flight, the transfers in flight with their ticks left
//! and whether they read the current value) equals the root's: the second
//! period then replays the first one up to a renumbering of versions.
//!
//! Owns: the boundary states S₀ of a cycle and the period search.

use super::node::{push, Boundary, Ctx, Flight, Node};
use crate::exact::ExactError;
use crate::model::{Direction, Instance, OpId, TensorId};
use crate::schedule::Event;
use crate::semantics::{GpuCopy, State};
use crate::units::Ticks;

/// The most boundary states the search starts from (each is a node in memory
/// before anything is expanded); beyond this it reports `Unknown` at once.
pub const MAX_ROOTS: usize = 200_000;

/// The most partial boundary states the enumeration visits: the memory test
/// cuts branches before they reach a boundary state, so on a large program
/// (an imported trace) the enumeration could run long with few states listed;
/// beyond this the search reports `Unknown` at once, as beyond [`MAX_ROOTS`].
const MAX_VISITS: usize = 20 * MAX_ROOTS;

/// The cyclic scope (else `Unsupported`), in which [`boundaries`] lists every
/// boundary state a valid schedule can have, up to the structural limits of
/// proofs/SEARCH.md. (Fixed order, GPU ops each once, no CPU capacity and
/// single productions are checked by the caller.)
pub(super) fn scope(inst: &Instance, order: &[OpId]) -> Result<(), ExactError> {
    let persistent = inst.persistent();
    let uses = Uses::of(inst, order);
    for op in order.iter().map(|o| inst.op(*o)) {
        if op.modifies.iter().any(|t| !op.reads.contains(t)) {
            return Err(super::unsupported(format!(
                "cyclic: {} modifies a tensor it does not read",
                op.name
            )));
        }
    }
    for (i, t) in inst.tensors.iter().enumerate() {
        if persistent[i] {
            if !t.transferable && t.size.0 > 0 && uses.last_read[i].is_none() {
                return Err(super::unsupported(format!(
                    "cyclic: the persistent tensor {} is never read",
                    t.name
                )));
            }
            continue;
        }
        let Some(p) = uses.produced_at[i] else {
            // Produced only by ops outside the order: never exists.
            continue;
        };
        if uses.first_read[i].is_some_and(|r| r <= p) {
            return Err(super::unsupported(format!(
                "cyclic: {} is read before it is produced in the period",
                t.name
            )));
        }
        let need = uses.last_read[i].unwrap_or(p).max(p);
        let released = &uses.released_at[i];
        if !released.is_empty() && !released.iter().any(|&r| r >= need) {
            return Err(super::unsupported(format!(
                "cyclic: {} is released by an op before its last read",
                t.name
            )));
        }
        if released.is_empty()
            && uses.last_read[i].is_none()
            && inst.release == crate::model::ReleaseRule::AfterStart
        {
            // Under the relaxation the rules let such a dead output go while
            // its producer still runs (the MILP does: tests/it/op_sequence_exact.rs,
            // `a_dead_output_under_after_start_is_refused_by_the_search`); the
            // search drops it only at its producer's end, so it could miss the
            // optimum.
            return Err(super::unsupported(format!(
                "cyclic, after_start: {} is produced, never read and released by no op; the relaxation lets it go while its producer runs, an instant the search does not try",
                t.name
            )));
        }
        if released.is_empty() && t.size.0 == 0 {
            return Err(super::unsupported(format!(
                "cyclic: {} is a per-iteration tensor of size 0 that no op releases (the search deletes only copies that take memory)",
                t.name
            )));
        }
    }
    Ok(())
}

/// Each tensor's uses by position in the order.
struct Uses {
    produced_at: Vec<Option<usize>>,
    first_read: Vec<Option<usize>>,
    last_read: Vec<Option<usize>>,
    /// The last position that reads, produces or modifies it.
    last_use: Vec<Option<usize>>,
    released_at: Vec<Vec<usize>>,
}

impl Uses {
    fn of(inst: &Instance, order: &[OpId]) -> Uses {
        let nt = inst.tensors.len();
        let mut u = Uses {
            produced_at: vec![None; nt],
            first_read: vec![None; nt],
            last_read: vec![None; nt],
            last_use: vec![None; nt],
            released_at: vec![vec![]; nt],
        };
        for (k, o) in order.iter().enumerate() {
            let op = inst.op(*o);
            for t in &op.reads {
                u.last_read[t.ix()] = Some(k);
                u.first_read[t.ix()].get_or_insert(k);
            }
            for t in &op.produces {
                u.produced_at[t.ix()] = Some(k);
            }
            for t in op.reads.iter().chain(&op.produces).chain(&op.modifies) {
                u.last_use[t.ix()] = Some(k);
            }
            for t in op.consumes.iter().chain(op.frees.iter()) {
                u.released_at[t.ix()].push(k);
            }
        }
        u
    }
}

/// Per tensor, the first position of the order from which a read of it is a
/// need (R6, MODEL.md §3): one past its producer (the production is its next
/// use before that: the value left from the last period is dead); 0 for a
/// tensor no op of the order produces.
pub(super) fn born(inst: &Instance, order: &[OpId]) -> Vec<usize> {
    Uses::of(inst, order)
        .produced_at
        .iter()
        .map(|p| p.map_or(0, |p| p + 1))
        .collect()
}

/// Every boundary state in scope (proofs/SEARCH.md, "Which boundary
/// states"). A persistent tensor that cannot move (not transferable, or of
/// size 0: the search never transfers it) is on the GPU. A movable persistent
/// tensor t is, at time 0, one of: present; present with a current CPU copy;
/// on the CPU only; on the CPU with a prefetch in flight (1 ≤ ticks left <
/// τ_t); present with an offload in flight (idem) and no current CPU copy (one
/// offload per value). A per-iteration tensor is absent, or (if it moves)
/// absent with a current CPU copy; if its last use may end at P
/// ([`droppable`]), it may also be present, with or without a current CPU
/// copy (it is then dropped at time 0). One that a CPU op reads (needed until
/// its next production) may be present, with or without a current CPU copy,
/// or present with its offload in flight. At most one transfer is in flight per
/// channel, and S₀ with its prefetches in flight fits the GPU memory (it is
/// the memory at P).
///
/// `None` if there are more than [`MAX_ROOTS`] of them, or the enumeration
/// visits more than [`MAX_VISITS`] partial ones (the search then stops with
/// status `Unknown` before it starts).
pub(super) fn boundaries(ctx: &Ctx) -> Option<Vec<Boundary>> {
    let inst = ctx.inst;
    let persistent = inst.persistent();
    let uses = Uses::of(inst, &ctx.order);
    let mut fixed = vec![];
    let mut choices = vec![];
    for (i, t) in inst.tensors.iter().enumerate() {
        let id = TensorId(i as u32);
        let moves = t.transferable && t.size.0 > 0;
        if persistent[i] {
            if moves {
                choices.push((id, PERSISTENT));
            } else {
                fixed.push(id);
            }
            continue;
        }
        let Some(p) = uses.produced_at[i] else {
            continue;
        };
        // A tensor a CPU op reads reaches the CPU by an offload.
        let offloadable = moves && (uses.last_read[i].is_some_and(|r| r > p) || ctx.always[i]);
        let dropped = uses.released_at[i].is_empty() && droppable(ctx, &uses, i);
        let places: &[Place] = match (offloadable, dropped) {
            // A tensor a CPU op reads is needed until the next production
            // (limit "needed later"): its GPU copy may cross the boundary,
            // with or without a current CPU copy, or with its offload in
            // flight (issue 24: the MILP's period 5 on the random tiny
            // OFFMATE instance of `tests/it/offmate_exact.rs`'s regression).
            _ if moves && ctx.always[i] => CPU_INPUT,
            (false, false) => continue,
            (true, false) => &[ABSENT, CPU],
            (false, true) => &[ABSENT, GPU],
            (true, true) => &[ABSENT, CPU, GPU, BOTH],
        };
        choices.push((id, places));
    }
    let bytes: i128 = fixed.iter().map(|t| inst.tensor(*t).size.0 as i128).sum();
    let mut out = vec![];
    let start = Boundary {
        gpu: fixed,
        cpu: vec![],
        flights: vec![],
        left: vec![0; ctx.channels.len()],
    };
    let mut visits = 0;
    if bytes <= ctx.cap {
        enumerate(ctx, &choices, (start, bytes), &mut out, &mut visits);
    }
    if out.len() > MAX_ROOTS || visits > MAX_VISITS {
        return None;
    }
    // Fewer transfers in flight first (only the order of ties in the queue).
    out.sort_by_key(|b| b.flights.len());
    Some(out)
}

/// A per-iteration tensor that no op releases may still be on the GPU at P
/// only if its last use may end there: the search deletes a dead copy at the
/// first decision instant where nothing holds it (limit 4), at the latest one
/// tick after its last user's start; so the ops after that user last at most
/// one tick in all (none under `after_end` unless the user lasts 0 ticks).
fn droppable(ctx: &Ctx, uses: &Uses, i: usize) -> bool {
    let Some(l) = uses.last_use[i] else {
        return false;
    };
    let rest = ctx.suffix[l + 1];
    rest == 0 || rest == 1 && (!ctx.after_end || ctx.dur[l] == 0)
}

/// Where a tensor is at time 0.
#[derive(Clone, Copy)]
enum Place {
    /// Present or not on the GPU, CPU copy current or not.
    Held { gpu: bool, cpu: bool },
    /// A transfer in this direction crosses the boundary.
    Moving(Direction),
}

const ABSENT: Place = Place::Held {
    gpu: false,
    cpu: false,
};
const CPU: Place = Place::Held {
    gpu: false,
    cpu: true,
};
const GPU: Place = Place::Held {
    gpu: true,
    cpu: false,
};
const BOTH: Place = Place::Held {
    gpu: true,
    cpu: true,
};
const CPU_INPUT: &[Place] = &[ABSENT, CPU, GPU, BOTH, Place::Moving(Direction::Offload)];
const PERSISTENT: &[Place] = &[
    GPU,
    BOTH,
    CPU,
    Place::Moving(Direction::Prefetch),
    Place::Moving(Direction::Offload),
];

/// The boundaries extending `cur` (with its GPU bytes) by a place for every
/// tensor of `choices`, within the GPU memory.
fn enumerate(
    ctx: &Ctx,
    choices: &[(TensorId, &[Place])],
    (cur, bytes): (Boundary, i128),
    out: &mut Vec<Boundary>,
    visits: &mut usize,
) {
    *visits += 1;
    if out.len() > MAX_ROOTS || *visits > MAX_VISITS {
        return;
    }
    let Some((&(t, places), rest)) = choices.split_first() else {
        let mut b = cur;
        b.gpu.sort();
        b.cpu.sort();
        out.push(b);
        return;
    };
    let size = ctx.inst.tensor(t).size.0 as i128;
    let tau = ctx.tau[t.ix()];
    for &place in places {
        match place {
            Place::Held { gpu, cpu } => {
                let mut b = cur.clone();
                if gpu {
                    b.gpu.push(t);
                }
                if cpu {
                    b.cpu.push(t);
                }
                let m = bytes + if gpu { size } else { 0 };
                if m <= ctx.cap {
                    enumerate(ctx, rest, (b, m), out, visits);
                }
            }
            Place::Moving(dir) => {
                let ch = ctx.channel_ix(dir);
                if cur.left[ch] != 0 || bytes + size > ctx.cap {
                    continue;
                }
                for left in 1..tau {
                    let mut b = cur.clone();
                    match dir {
                        Direction::Prefetch => b.cpu.push(t),
                        Direction::Offload => b.gpu.push(t),
                    }
                    b.flights.push((dir, t, left));
                    b.left[ch] = left;
                    enumerate(ctx, rest, (b, bytes + size), out, visits);
                }
            }
        }
    }
}

/// The node at time 0 of boundary state `ix`: the replay's state (MODEL.md
/// §2.6), before the deletes and starts at 0. `None` if a crossing transfer
/// cannot start from S₀.
pub(super) fn root(ctx: &Ctx, ix: usize) -> Option<Node> {
    let b = &ctx.roots[ix];
    let mut state = State::from_cyclic(ctx.inst, &b.state());
    let mut flights: Vec<Option<Flight>> = vec![None; ctx.channels.len()];
    for &(dir, tensor, left) in &b.flights {
        let (flight, breaches) = state.transfer_start(
            ctx.inst,
            dir,
            tensor,
            Ticks(left - ctx.tau[tensor.ix()]),
            Ticks(left),
        );
        if !breaches.is_empty() {
            return None;
        }
        flights[ctx.channel_ix(dir)] = Some(Flight {
            dir,
            tensor,
            end: left,
            flight,
        });
    }
    Some(Node {
        time: 0,
        next: 0,
        running: None,
        cpu_next: 0,
        cpu_running: None,
        flights,
        state,
        trail: None,
        after_start: false,
        offloaded_now: vec![],
        root: ix,
    })
}

/// What a node at a period boundary (every op done, this instant's completions
/// applied) must share with the root for the next period to replay this one:
/// everything the transitions read, with versions reduced to "current or
/// not", for every tensor (persistent or per-iteration).
pub(super) fn signature(_ctx: &Ctx, n: &Node) -> Vec<i64> {
    let mut k = Vec::with_capacity(4 * n.flights.len() + 4 * n.state.tensors.len());
    for f in &n.flights {
        match f {
            Some(f) => {
                let latest = n.state.tensor(f.tensor).latest;
                k.extend([
                    f.dir as i64,
                    f.tensor.0 as i64,
                    f.end - n.time,
                    (f.flight.version == Some(latest)) as i64,
                ]);
            }
            None => k.push(-1),
        }
    }
    for ts in &n.state.tensors {
        match ts.gpu {
            GpuCopy::Absent => k.push(-1),
            GpuCopy::Pending { ready, version } => {
                k.extend([-2, ready.0 - n.time, (version == Some(ts.latest)) as i64])
            }
            GpuCopy::Present(v) => k.extend([-3, (v == ts.latest) as i64]),
        }
        k.extend([ts.cpu_current() as i64, ts.cpu_incoming as i64]);
    }
    k
}

/// R8 (MODEL.md §2.6): the ops of the period still to run at a node at time
/// P, all of zero duration, run at P itself — after the completions at P,
/// before the boundary state is read and before the next period's deletes and
/// starts. No delete at P can come between (deletes at P belong to the next
/// period), so every live copy that the root's S₀ has off the GPU goes before
/// them: by the `delete` flag of its offload if that offload ended at P (the
/// returned tensors; their offload events get the flag), else by an explicit
/// delete at the latest instant r < P where it is legal — after the last op
/// that uses it (its end under `after_end`, one tick after its start under
/// `after_start` or for a zero-duration op) and after every transfer of it.
/// Moving the release from wherever the schedule had it to r changes nothing
/// before r and only lowers memory from r to P (limit 9 of proofs/SEARCH.md).
/// `None` if no such instant exists, an op breaks a rule or memory overflows.
pub(super) fn run_at_period_end(ctx: &Ctx, n: &Node) -> Option<(Node, Vec<TensorId>)> {
    let mut m = n.clone();
    let now = Ticks(m.time);
    let root = &ctx.roots[m.root];
    let mut flagged = vec![];
    let mut early = vec![];
    for i in 0..m.state.tensors.len() {
        let t = TensorId(i as u32);
        let ts = m.state.tensor(t);
        if root.gpu.contains(&t) || !matches!(ts.gpu, GpuCopy::Present(_)) || !ts.cpu_current() {
            continue;
        }
        if n.offloaded_now.contains(&t) {
            flagged.push(t);
        } else {
            early.push((t, latest_release(ctx, n, t)?));
        }
    }
    for &t in &flagged {
        if !m.state.delete(t, now, &ctx.future(m.next)).is_empty() {
            return None;
        }
    }
    for &(t, at) in &early {
        if !m.state.delete(t, now, &ctx.future(m.next)).is_empty() {
            return None;
        }
        push(&mut m.trail, Event::Delete { tensor: t, at });
    }
    while m.next < ctx.order.len() {
        let k = m.next;
        debug_assert_eq!(ctx.dur[k], 0);
        let op = ctx.order[k];
        m.next = k + 1;
        let fut = ctx.future(m.next);
        if !m.state.op_start(ctx.inst, op, now, now, &fut).is_empty() || m.state.gpu_used > ctx.cap
        {
            return None;
        }
        if !m.state.op_end(ctx.inst, op, now, &fut).is_empty() {
            return None;
        }
        push(
            &mut m.trail,
            Event::Compute {
                op,
                start: now,
                end: now,
            },
        );
    }
    Some((m, flagged))
}

/// The earliest instant, after everything the path did with `t` in this
/// period, at which an explicit delete of `t` is legal (see
/// [`run_at_period_end`]); `None` unless it lies before the node's time.
fn latest_release(ctx: &Ctx, n: &Node, t: TensorId) -> Option<Ticks> {
    let mut r = 0i64;
    for &(_, tensor, left) in &ctx.roots[n.root].flights {
        if tensor == t {
            r = r.max(left);
        }
    }
    let mut cur = n.trail.clone();
    while let Some(tr) = cur {
        match tr.event {
            Event::Compute { op, start, end } => {
                let o = ctx.inst.op(op);
                // A CPU op holds no GPU copy.
                if o.device == crate::model::Device::Gpu
                    && (o.reads.contains(&t) || o.produces.contains(&t) || o.modifies.contains(&t))
                {
                    r = r.max(if ctx.after_end && end > start {
                        end.0
                    } else {
                        start.0 + 1
                    });
                }
            }
            Event::Transfer { tensor, end, .. } if tensor == t => r = r.max(end.0),
            Event::Delete { tensor, at } if tensor == t => r = r.max(at.0 + 1),
            _ => {}
        }
        cur = tr.prev.clone();
    }
    (r < n.time).then_some(Ticks(r))
}

/// A lower bound on the period reachable from `n` from what its root needs at
/// P (admissible; the driver takes the larger of it and `Ctx::estimate`).
/// Every tensor that the root has current on the CPU needs, unless its CPU copy
/// is current now and no op still to end writes it, an offload that starts
/// once its last writer of the period has ended (now at the earliest) and ends
/// by P; every persistent tensor that the root has on the GPU and that is
/// absent now needs a prefetch that ends by P. One transfer at a time per
/// channel, after the one in flight on it.
pub(super) fn estimate(ctx: &Ctx, n: &Node) -> i64 {
    let root = &ctx.roots[n.root];
    // (channel, earliest start, ticks) of each transfer still needed.
    let mut needs: Vec<(usize, i64, i64)> = vec![];
    for &t in &root.cpu {
        let ts = n.state.tensor(t);
        let ready = last_write_end(ctx, n, t);
        let in_flight = n.flights.iter().flatten().any(|f| f.tensor == t);
        if ready.is_some() || !ts.cpu_current() && !in_flight {
            let ch = ctx.channel_ix(Direction::Offload);
            needs.push((ch, ready.unwrap_or(n.time), ctx.tau[t.ix()]));
        }
    }
    for &t in &root.gpu {
        if ctx.always[t.ix()] && matches!(n.state.tensor(t).gpu, GpuCopy::Absent) {
            let ch = ctx.channel_ix(Direction::Prefetch);
            needs.push((ch, n.time, ctx.tau[t.ix()]));
        }
    }
    needs.sort();
    let mut bound = n.time;
    let mut free: Vec<i64> = n
        .flights
        .iter()
        .map(|f| f.map_or(n.time, |f| f.end.max(n.time)))
        .collect();
    for (ch, ready, tau) in needs {
        free[ch] = free[ch].max(ready) + tau;
        bound = bound.max(free[ch]);
    }
    bound
}

/// The earliest end of the last op still to end at `n` that produces or
/// modifies `t` (the running op, or one still to start: the ops up to it run
/// one after the other); `None` if none does.
fn last_write_end(ctx: &Ctx, n: &Node, t: TensorId) -> Option<i64> {
    let writes = |k: usize| {
        let op = ctx.inst.op(ctx.order[k]);
        op.produces.contains(&t) || op.modifies.contains(&t)
    };
    let mut end = n.time;
    let mut found = None;
    if let Some((k, e)) = n.running {
        end = e;
        if writes(k) {
            found = Some(e);
        }
    }
    for k in n.next..ctx.order.len() {
        end += ctx.dur[k];
        if writes(k) {
            found = Some(end);
        }
    }
    found
}
