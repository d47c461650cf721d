//! Variant groups (R11), a slotted order (R12) and precedences (R13) for the
//! fixed-order methods: the op sequences such an instance allows, each as
//! a fixed-order instance with the same ops and tensors, and the loop that
//! solves each with a method's fixed-order solver and keeps the best schedule
//! (`proofs/SEARCH.md` §"Variant groups, slots and `after`").
//!
//! A fixed order is its own one sequence; a slotted order gives one sequence
//! per choice of a member for every slot (every op must belong to a slotted
//! group: ops outside the slots would run in a free order, which is not
//! encoded here). A member on the CPU (OFFMATE's `optC.p`) fills its slot from
//! the CPU stream (R12 drops that slot); the CPU ops of a choice run on their
//! own stream in an order of their own, and every such order is a sequence of
//! its own (a fixed order orders each device on its own, R8). A sequence is
//! kept when it meets R11 (runs per group) and R13 (one-shot: each
//! predecessor runs earlier in the sequence; cyclic: it runs in the period),
//! which on one stream, each op starting after the previous one ends, decide
//! those rules from the sequence alone (so `after` together with CPU ops is
//! refused). Each kept sequence becomes the same
//! instance with that fixed order, no groups and no `after` (R8 then runs
//! exactly that sequence); its schedules are schedules of the original, which
//! the checker replays on the original before any makespan is used.
//!
//! A CPU capacity that no schedule can reach (at least every tensor's size
//! plus every CPU op's scratch: the CPU holds at most one copy of a tensor,
//! MODEL.md §2.2) is dropped from the instances solved, since R7's CPU part
//! cannot then fail; a lower one is left to the fixed-order solver, which
//! refuses it.
//!
//! Owns: [`sequences`], [`compute_bound`], [`fixed`], [`solve_each`],
//! [`unreachable_cpu_capacity`], [`MAX_VARIANTS`].
//! Must not import: the methods (a method passes its fixed-order solver in),
//! the door, the cross-check, the reductions, heuristics.

use super::{ExactError, Limits, Method, Outcome, SolveFn, Status};
use crate::model::{ComputeOrder, Device, Instance, Mode, Multiplicity, OpId};
use crate::schedule::Schedule;
use crate::units::Ticks;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The most member choices a slotted order may have (beyond: refused).
pub const MAX_VARIANTS: usize = 4096;

fn unsupported(method: Method, reason: impl Into<String>) -> ExactError {
    ExactError::Unsupported {
        method,
        reason: reason.into(),
    }
}

/// The op sequences of `inst` that R11, R12 and R13 allow (GPU ops in their
/// order, then the CPU ops in theirs), cheapest compute first
/// ([`compute_bound`]; a fixed order: itself, if it meets R11 and R13).
/// Empty: no schedule can meet those rules. Refused: a free order, an op
/// outside every slotted group, `after` together with CPU ops, more than
/// [`MAX_VARIANTS`] choices.
pub fn sequences(inst: &Instance, method: Method) -> Result<Vec<Vec<OpId>>, ExactError> {
    let candidates = match &inst.order {
        ComputeOrder::Fixed(v) => vec![v.clone()],
        ComputeOrder::Free => return Err(unsupported(method, "free compute order")),
        ComputeOrder::Slots(slots) => slot_choices(inst, slots, method)?,
    };
    let on_cpu = |o: &OpId| inst.op(*o).device == Device::Cpu;
    let any_cpu = candidates.iter().flatten().any(on_cpu);
    if any_cpu && inst.ops.iter().any(|o| !o.after.is_empty()) {
        return Err(unsupported(
            method,
            "precedences (after) with ops on the CPU (R13 across two streams is not decided per sequence)",
        ));
    }
    // The CPU ops of a choice run on their own stream, in an order of their
    // own: every order is a sequence (R8 orders each device on its own).
    let mut with_orders: Vec<Vec<OpId>> = vec![];
    for v in candidates {
        let gpu: Vec<OpId> = v.iter().copied().filter(|o| !on_cpu(o)).collect();
        let cpu: Vec<OpId> = v.iter().copied().filter(on_cpu).collect();
        if matches!(inst.order, ComputeOrder::Fixed(_)) || cpu.len() < 2 {
            with_orders.push(v);
            continue;
        }
        for perm in permutations(&cpu) {
            with_orders.push([gpu.as_slice(), perm.as_slice()].concat());
            if with_orders.len() > MAX_VARIANTS {
                return Err(unsupported(
                    method,
                    format!("more than {MAX_VARIANTS} member choices and CPU orders"),
                ));
            }
        }
    }
    let mut kept: Vec<Vec<OpId>> = with_orders
        .into_iter()
        .filter(|v| meets_groups(inst, v) && meets_after(inst, v) && meets_data(inst, v))
        .collect();
    kept.sort_by_key(|v| compute_bound(inst, v));
    Ok(kept)
}

/// A lower bound on the makespan (period) of every schedule running `seq`:
/// the busier device's compute (one stream per device, R2; cyclic, compute
/// lies in [0, P], R8).
pub fn compute_bound(inst: &Instance, seq: &[OpId]) -> i64 {
    let on = |d: Device| {
        seq.iter()
            .filter(|o| inst.op(**o).device == d)
            .map(|o| inst.op(*o).duration.0)
            .sum::<i64>()
    };
    on(Device::Gpu).max(on(Device::Cpu))
}

/// Every order of `items` (few: the CPU ops of one member choice).
fn permutations(items: &[OpId]) -> Vec<Vec<OpId>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = vec![];
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, first);
            out.push(p);
        }
    }
    out
}

/// One sequence per choice of a member for every slot (a member on the CPU
/// fills its slot from the CPU stream: R12 drops that slot). Every op must be
/// in a slotted group.
fn slot_choices(
    inst: &Instance,
    slots: &[crate::model::GroupId],
    method: Method,
) -> Result<Vec<Vec<OpId>>, ExactError> {
    let slotted: Vec<OpId> = slots
        .iter()
        .flat_map(|g| inst.groups[g.ix()].members.iter().copied())
        .collect();
    if let Some(o) = inst
        .ops
        .iter()
        .enumerate()
        .find(|(i, _)| !slotted.contains(&OpId(*i as u32)))
    {
        return Err(unsupported(
            method,
            format!(
                "{} is in no slotted group (ops outside the slots run in a free order; not encoded)",
                o.1.name
            ),
        ));
    }
    let mut count: usize = 1;
    for g in slots {
        count = count.saturating_mul(inst.groups[g.ix()].members.len());
    }
    if count > MAX_VARIANTS {
        return Err(unsupported(
            method,
            format!("{count} member choices for the slots, more than {MAX_VARIANTS}"),
        ));
    }
    let mut out: Vec<Vec<OpId>> = vec![vec![]];
    for g in slots {
        let members = &inst.groups[g.ix()].members;
        out = out
            .iter()
            .flat_map(|pre| {
                members
                    .iter()
                    .map(move |m| [pre.as_slice(), &[*m]].concat())
            })
            .collect();
    }
    Ok(out)
}

/// R11 on a sequence that runs exactly its ops: per group, one run of its
/// members (`exactly_once`) or at least one (`at_least_once`).
fn meets_groups(inst: &Instance, seq: &[OpId]) -> bool {
    inst.groups.iter().all(|g| {
        let runs = seq.iter().filter(|o| g.members.contains(o)).count();
        match g.runs {
            Multiplicity::ExactlyOnce => runs == 1,
            Multiplicity::AtLeastOnce => runs >= 1,
        }
    })
}

/// R13 on one GPU stream where each op starts after the previous one ends:
/// the latest earlier run of a predecessor has then ended. One-shot, such a
/// run must exist earlier in the sequence; cyclic, the predecessor must run
/// in the period (a run later in the period is, one period earlier, a run
/// that ended by time 0 ≤ the start: compute lies in [0, P], R8).
fn meets_after(inst: &Instance, seq: &[OpId]) -> bool {
    let cyclic = inst.mode == Mode::Cyclic;
    seq.iter().enumerate().all(|(p, o)| {
        inst.op(*o).after.iter().all(|q| {
            let within = if cyclic { &seq[..] } else { &seq[..p] };
            within.contains(q)
        })
    })
}

/// R1 decided from the sequence alone, where it can be: a tensor read by an
/// op of the sequence must be able to have a copy then. One-shot: it starts
/// somewhere, or an earlier op of the sequence produces it (a CPU copy needs
/// an offload of a GPU copy, which needs one). Cyclic: a per-iteration tensor
/// that no op of the sequence produces, that an op of it releases, and that
/// cannot move, has no GPU copy after that release, and no way back to one,
/// so it is missing at its read or at P (R1, R8). (One that is never released,
/// or can move, might be carried over from S₀: left to the method.)
fn meets_data(inst: &Instance, seq: &[OpId]) -> bool {
    let produced_before = |t: &crate::model::TensorId, p: usize| {
        seq[..p].iter().any(|o| inst.op(*o).produces.contains(t))
    };
    if inst.mode == Mode::Cyclic {
        let persistent = inst.persistent();
        let released = |t: &crate::model::TensorId| {
            seq.iter().any(|o| {
                let op = inst.op(*o);
                op.frees.contains(t) || op.consumes.contains(t)
            })
        };
        return seq.iter().all(|o| {
            inst.op(*o).reads.iter().all(|t| {
                persistent[t.ix()]
                    || inst.tensor(*t).transferable
                    || produced_before(t, seq.len())
                    || !released(t)
            })
        });
    }
    seq.iter().enumerate().all(|(p, o)| {
        inst.op(*o).reads.iter().all(|t| {
            let init = inst.tensor(*t).initial;
            init.on_gpu() || init.on_cpu() || produced_before(t, p)
        })
    })
}

/// Whether `inst`'s CPU capacity is at least Σ|t| over every tensor plus
/// Σ tmp(o) over every CPU op: mem_CPU counts each tensor at most once and
/// the scratch of running CPU ops (MODEL.md §2.2), so R7 on the CPU holds
/// in every schedule.
pub fn unreachable_cpu_capacity(inst: &Instance) -> bool {
    let Some(cap) = inst.machine.cpu_capacity else {
        return false;
    };
    let tensors: u128 = inst.tensors.iter().map(|t| t.size.0 as u128).sum();
    let scratch: u128 = inst
        .ops
        .iter()
        .filter(|o| o.device == Device::Cpu)
        .map(|o| o.temp.0 as u128)
        .sum();
    cap.0 as u128 >= tensors + scratch
}

/// `inst` with the fixed order `seq`, no groups and no `after` (decided by
/// [`sequences`]), and no CPU capacity where none can be reached; same ops
/// and tensors, so its schedules are the original's.
pub fn fixed(inst: &Instance, seq: &[OpId]) -> Instance {
    let mut ops = inst.ops.clone();
    for o in &mut ops {
        o.after.clear();
    }
    let mut machine = inst.machine.clone();
    if unreachable_cpu_capacity(inst) {
        machine.cpu_capacity = None;
    }
    Instance {
        ops,
        order: ComputeOrder::Fixed(seq.to_vec()),
        groups: vec![],
        machine,
        ..inst.clone()
    }
}

/// What the loop over sequences established.
#[derive(Default)]
struct Tally {
    best: Option<(Ticks, Schedule)>,
    /// Least lower bound of a sequence not settled.
    open_from: Option<i64>,
    solved: usize,
    infeasible: usize,
    /// Sequences outside the fixed-order solver's own limits, and the first
    /// such refusal.
    refused: usize,
    first_refusal: Option<ExactError>,
    notes: Vec<String>,
}

impl Tally {
    fn open(&mut self, lo: i64) {
        self.open_from = Some(self.open_from.map_or(lo, |x| x.min(lo)));
    }
}

/// Solve `inst` with `method`'s fixed-order solver `plain`, once per
/// sequence of [`sequences`], cheapest compute first, until no sequence left
/// can beat the best makespan or period (its [`compute_bound`] is a lower
/// bound: one stream per device, R2, and compute lies in [0, P], R8). Every schedule is replayed
/// by the checker on `inst` itself.
pub fn solve_each(
    inst: &Instance,
    limits: &Limits,
    method: Method,
    plain: SolveFn,
) -> Result<Outcome, ExactError> {
    let started = Instant::now();
    let seqs = sequences(inst, method)?;
    let mut t = Tally::default();
    for seq in &seqs {
        let compute = compute_bound(inst, seq);
        if t.best.as_ref().is_some_and(|(ms, _)| compute >= ms.0) {
            break;
        }
        let left = limits.time_limit.saturating_sub(started.elapsed());
        if limits.cancel.load(Ordering::Relaxed) || left.is_zero() {
            t.open(compute);
            break;
        }
        let sub = Limits {
            time_limit: left,
            cancel: limits.cancel.clone(),
            progress: limits.progress,
        };
        let o = match plain(&fixed(inst, seq), &sub) {
            Ok(o) => o,
            Err(e @ ExactError::Unsupported { .. }) => {
                // Outside the method's structural limits: not settled.
                t.refused += 1;
                t.first_refusal.get_or_insert(e);
                t.open(compute);
                continue;
            }
            Err(e) => return Err(e),
        };
        t.solved += 1;
        if t.notes.is_empty() {
            t.notes = o.notes.clone();
        }
        match o.status {
            Status::Infeasible => t.infeasible += 1,
            Status::Optimal => {}
            Status::Feasible | Status::Unknown => {
                t.open(o.bound.map_or(compute, |b| b.0.max(compute)))
            }
        }
        if let Some(s) = o.schedule {
            let ms = ExactError::checked(method, inst, &s)?.report().makespan;
            if t.best.as_ref().is_none_or(|(b, _)| ms < *b) {
                t.best = Some((ms, s));
            }
        }
    }
    if t.solved == 0 {
        if let Some(e) = t.first_refusal.take() {
            return Err(e);
        }
    }
    t.notes.push(format!(
        "variants (R11-R13): {} op sequences meet the groups, precedences and data; {} solved ({} infeasible), {} outside the method's limits, the rest not cheaper in compute than the best",
        seqs.len(),
        t.solved,
        t.infeasible,
        t.refused
    ));
    if let Some(e) = &t.first_refusal {
        t.notes.push(format!("not settled: {e}"));
    }
    let (status, schedule, bound) = match (t.best, t.open_from) {
        (Some((ms, s)), None) => (Status::Optimal, Some(s), Some(ms)),
        (None, None) => (Status::Infeasible, None, None),
        (Some((ms, s)), Some(lo)) => (Status::Feasible, Some(s), Some(Ticks(lo.min(ms.0)))),
        (None, Some(lo)) => (Status::Unknown, None, Some(Ticks(lo))),
    };
    Ok(Outcome {
        method,
        status,
        schedule,
        bound,
        elapsed: started.elapsed(),
        notes: t.notes,
    })
}
