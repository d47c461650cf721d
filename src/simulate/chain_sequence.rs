//! A rotor or rockmate op sequence ([`ChainOp`]s) as the plan offcert's
//! `remat_chain` instance runs, and its back-to-back realisation: the way
//! rotor's and rockmate's executors run a sequence (one stream, each op as
//! soon as the previous one ends, nothing moved).
//!
//! What each op keeps (rotor's `sequence.py`; models/MODEL.md §4.5): `Fe_i`
//! runs `Fall{ℓ}` (or `Fall{ℓ}.{k}`) and keeps its input; `CF_i` runs `F{ℓ}`
//! and keeps its input; `Fn_i` runs `F{ℓ}` and releases its input at its end;
//! `L` runs `Fall{L+1}` then `B{L+1}`; `B_i` runs `B{ℓ}` (which frees δ_ℓ,
//! a_ℓ and ā_ℓ by the model). A backward (the loss's too) releases its input
//! a_{ℓ−1} at its end once no later op reads that copy before an op produces
//! it again (rotor's storage drops a checkpoint when the part it starts is
//! done; a_0, the chain's input, stays). Memory is not consulted: the schedule is what the tool
//! would run, and the checker says whether it fits.
//!
//! Owns: [`plan_of`], [`back_to_back`].
//! Must not import: the checker, solvers, heuristics.

use super::SeqPlan;
use crate::family::remat_chain::RematChain;
use crate::family::remat_sequence::ChainOp;
use crate::model::{Instance, OpId, TensorId};
use crate::schedule::{Event, Schedule};
use crate::units::Ticks;

/// The plan a sequence means on chain `c` (compiled as `inst`): the ops in
/// order and the releases of the module doc; no offloads.
pub fn plan_of(c: &RematChain, inst: &Instance, ops: &[ChainOp]) -> SeqPlan {
    let ids = c.option_ids();
    let mut plan = SeqPlan::default();
    let mut backward_inputs = vec![];
    for op in ops {
        match *op {
            ChainOp::ForwardAll { layer, option } => plan.seq.push(ids[layer - 1][option].0),
            ChainOp::ForwardCheck { layer } => plan.seq.push(c.f_id(layer)),
            ChainOp::ForwardNograd { layer } => {
                plan.seq.push(c.f_id(layer));
                plan.deletes_after
                    .push((plan.seq.len() - 1, c.a_id(layer - 1)));
            }
            ChainOp::Loss => {
                plan.seq.push(c.fall_id(c.l() + 1));
                plan.seq.push(c.b_id(c.l() + 1));
                backward_inputs.push((plan.seq.len() - 1, c.a_id(c.l())));
            }
            ChainOp::Backward { layer, option } => {
                plan.seq.push(ids[layer - 1][option].1);
                if layer >= 2 {
                    backward_inputs.push((plan.seq.len() - 1, c.a_id(layer - 1)));
                }
            }
        }
    }
    for (p, t) in backward_inputs {
        if dead_after(inst, &plan.seq, p, t) {
            plan.deletes_after.push((p, t));
        }
    }
    plan.deletes_after.sort();
    plan
}

/// No op after position `p` reads `t` before an op produces it again.
fn dead_after(inst: &Instance, seq: &[OpId], p: usize, t: TensorId) -> bool {
    for &o in &seq[p + 1..] {
        let op = inst.op(o);
        if op.reads.contains(&t) {
            return false;
        }
        if op.produces.contains(&t) {
            return true;
        }
    }
    true
}

/// The one-shot schedule that runs `plan`'s ops back to back from time 0,
/// with its releases at the end of their ops (one tick later after an op of
/// zero duration); offloads are not realised: a rotor or rockmate sequence
/// has none.
pub fn back_to_back(inst: &Instance, plan: &SeqPlan) -> Schedule {
    let mut events = Vec::with_capacity(plan.seq.len() + plan.deletes_after.len());
    let mut t = Ticks(0);
    for (p, &o) in plan.seq.iter().enumerate() {
        let end = t + inst.op(o).duration;
        events.push(Event::Compute {
            op: o,
            start: t,
            end,
        });
        // At one instant the checker applies releases before starts, so a
        // release after an op of zero duration waits one tick (and so does the
        // next op: the executor frees before it goes on).
        let at = if end == t { end + Ticks(1) } else { end };
        let mut released = false;
        for &(_, tensor) in plan.deletes_after.iter().filter(|(q, _)| *q == p) {
            events.push(Event::Delete { tensor, at });
            released = true;
        }
        t = if released { at } else { end };
    }
    Schedule::one_shot(events)
}
