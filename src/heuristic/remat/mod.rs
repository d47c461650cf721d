//! Heuristics for `remat_chain` (rematerialisation with offloading): rotor's
//! persistent DP, the appendix's DP as printed (`pofo`, 50 slots) and as it
//! should be run (`pofo-as-run`), and that DP without recomputation
//! (`offload-only`). Each DP's decisions become a [`Sequence`] (ops in order,
//! explicit deletes, offloads per position), realised by
//! [`crate::simulate::asap_sequence`] and then checked by [`super::run`].
//!
//! Owns: [`Sequence`], the discretisation [`Slots`] and the options in slots
//! ([`SlotOption`], [`slot_options`]) that the DPs share, the registry.
//! Must not import: the checker (the caller checks), exact solvers.

pub mod pofo;
pub mod pofo_run;
pub mod replan;
pub mod rotor;

use super::{Heuristic, HeuristicError};
use crate::family::remat_chain::{Dims, RematChain};
use crate::family::InstanceFile;
use crate::model::{OpId, TensorId};
use crate::simulate::SeqPlan;

/// The remat heuristics. Each takes every `remat_chain` (several options per
/// block, a distinct fast forward).
pub fn heuristics() -> Vec<Box<dyn Heuristic>> {
    vec![
        Box::new(rotor::Rotor::default()),
        Box::new(pofo::Pofo::default()),
        Box::new(pofo_run::PofoAsRun::default()),
        Box::new(pofo::Pofo::offload_only()),
    ]
}

/// Any `remat_chain` (the DP models every feature of the family).
pub(crate) fn chain_any<'a>(
    name: &'static str,
    file: &'a InstanceFile,
) -> Result<&'a RematChain, HeuristicError> {
    match file {
        InstanceFile::RematChain(c) => Ok(c),
        other => Err(HeuristicError::NotApplicable {
            heuristic: name,
            family: other.family().into(),
        }),
    }
}

/// An op sequence in the paper's terms, built by a DP's reconstruction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sequence {
    pub plan: SeqPlan,
}

impl Sequence {
    fn push(&mut self, op: OpId) {
        self.plan.seq.push(op);
    }
    fn last(&self) -> usize {
        self.plan.seq.len() - 1
    }
    /// F_ℓ keeping its input (F_ck).
    pub fn f_keep(&mut self, c: &RematChain, l: usize) {
        self.push(c.f_id(l));
    }
    /// F_ℓ dropping its input a_{ℓ-1} at its end (F_∅).
    pub fn f_drop(&mut self, c: &RematChain, l: usize) {
        self.push(c.f_id(l));
        let p = self.last();
        self.plan.deletes_after.push((p, c.a_id(l - 1)));
    }
    /// F_all (the loss's too).
    pub fn f_all(&mut self, c: &RematChain, l: usize) {
        self.push(c.fall_id(l));
    }
    pub fn b(&mut self, c: &RematChain, l: usize) {
        self.push(c.b_id(l));
    }
    /// Delete `t` at the end of the last op pushed.
    pub fn delete_after_last(&mut self, t: TensorId) {
        let p = self.last();
        self.plan.deletes_after.push((p, t));
    }
    /// Offload `t` once the last op pushed has started.
    pub fn offload_after_last(&mut self, t: TensorId) {
        let p = self.last();
        self.plan.offloads.push((t, p));
    }
    /// Op names, for tests and messages.
    pub fn names(&self, inst: &crate::model::Instance) -> Vec<String> {
        self.plan
            .seq
            .iter()
            .map(|o| inst.op(*o).name.clone())
            .collect()
    }
}

/// The keep-everything sequence: `Fall{1}` … `Fall{L+1}` in order (option 0 of
/// each block), then every backward `B{L+1}` … `B{1}`; nothing recomputed,
/// deleted early or offloaded. Realised it runs without idle, so its makespan is
/// Σ (u_F + u_B) of the ops it runs; its checked peak is the `peak` budget
/// (`report::budget`).
pub fn keep_everything(c: &RematChain) -> Sequence {
    keep_everything_with(c, &vec![0; c.l() + 1])
}

/// The keep-everything sequence with option `options[ℓ−1]` of each block ℓ
/// (`Fall{ℓ}.{k}` … then `B{ℓ}.{k}` with the same k; the loss has one).
pub fn keep_everything_with(c: &RematChain, options: &[usize]) -> Sequence {
    let ids = c.option_ids();
    let l1 = c.l() + 1;
    let pair = |l: usize| match ids.get(l - 1) {
        Some(v) => {
            let (f, b, _) = v[options[l - 1].min(v.len() - 1)];
            (f, b)
        }
        None => (c.fall_id(l), c.b_id(l)),
    };
    let mut s = Sequence::default();
    for l in 1..=l1 {
        s.push(pair(l).0);
    }
    for l in (1..=l1).rev() {
        s.push(pair(l).1);
    }
    s
}

/// The schedule of `proofs/REMAT-BUDGETS.md` ("`least` is feasible"): the
/// keep-everything sequence with each block's least-footprint option
/// ([`RematChain::least_options`]), one op at a time, every transfer between
/// two ops. After `Fall{ℓ}` (ℓ ≤ L) `a{ℓ-1}` and `s{ℓ}` are offloaded (with
/// delete), so that the GPU holds `a{ℓ}` alone; before `B{ℓ}` (ℓ ≤ L) `s{ℓ}`
/// and `a{ℓ-1}` are prefetched. Each op then finds on the GPU exactly its own
/// footprint, so the schedule's peak is `RematChain::min_memory`. Slow (no
/// transfer overlaps an op) but valid at the least memory; the caller checks
/// it. Tensors of size 0 stay where they are. `None` on overflow.
pub fn least_memory_schedule(
    c: &RematChain,
    inst: &crate::model::Instance,
) -> Option<crate::schedule::Schedule> {
    use crate::model::Direction;
    use crate::schedule::Event;
    use crate::units::Ticks;
    let options: Vec<usize> = c.least_options()?.into_iter().map(|x| x.0).collect();
    let ids = c.option_ids();
    let l = c.l();
    let pair = |k: usize| match ids.get(k - 1) {
        Some(v) => v[options[k - 1].min(v.len() - 1)],
        None => (c.fall_id(k), c.b_id(k), c.s_id(k)),
    };
    let mut steps = vec![];
    for k in 1..=l + 1 {
        steps.push(Step::Op(pair(k).0));
        if k <= l {
            steps.push(Step::Move(Direction::Offload, c.a_id(k - 1)));
            steps.push(Step::Move(Direction::Offload, pair(k).2));
        }
    }
    steps.push(Step::Op(pair(l + 1).1));
    for k in (1..=l).rev() {
        steps.push(Step::Move(Direction::Prefetch, pair(k).2));
        steps.push(Step::Move(Direction::Prefetch, c.a_id(k - 1)));
        steps.push(Step::Op(pair(k).1));
    }
    let mut events = vec![];
    let mut now = 0i64;
    for step in steps {
        match step {
            Step::Op(op) => {
                let end = now + inst.op(op).duration.0;
                events.push(Event::Compute {
                    op,
                    start: Ticks(now),
                    end: Ticks(end),
                });
                now = end;
            }
            Step::Move(dir, t) if inst.tensor(t).size.0 > 0 => {
                let end = now + crate::semantics::transfer_ticks(inst, t).0;
                events.push(Event::Transfer {
                    dir,
                    tensor: t,
                    start: Ticks(now),
                    end: Ticks(end),
                    delete: dir == Direction::Offload,
                });
                now = end;
            }
            Step::Move(..) => {}
        }
    }
    Some(crate::schedule::Schedule::one_shot(events))
}

/// One step of [`least_memory_schedule`].
enum Step {
    Op(OpId),
    Move(crate::model::Direction, TensorId),
}

/// One option of a layer, in slots and ticks, with its two ops and the tensor
/// its forward saves (shared by the DPs of `rotor` and `pofo`).
#[derive(Clone, Debug)]
pub(crate) struct SlotOption {
    pub u_f: i64,
    pub u_b: i64,
    /// |ā| − |a| in slots (rounded up).
    pub s: u64,
    pub o_f: u64,
    pub o_b: u64,
    pub fall: OpId,
    pub b: OpId,
    pub saved: TensorId,
}

/// Every layer's options in slots, per layer ℓ = 1..=L+1 (entry ℓ; entry 0
/// empty; option 0 is the layer's own fields; the loss has one), and per layer
/// its fast forward `F{ℓ}`'s duration and scratch in slots (u_F, o_f of option
/// 0 unless the file sets them apart; the loss's entry, never in a run, keeps
/// the tables' shape).
pub(crate) fn slot_options(
    c: &RematChain,
    dm: &Dims,
    sl: &Slots,
) -> (Vec<Vec<SlotOption>>, Vec<(i64, u64)>) {
    let up = |x: u64| x.div_ceil(sl.slot);
    let ids = c.option_ids();
    let mut opts = vec![vec![]];
    let mut ff = vec![(0, 0)];
    for l in 1..=dm.l {
        let x = &c.layers[l - 1];
        ff.push((x.ff_u_f.unwrap_or(x.u_f), up(x.ff_o_f.unwrap_or(x.o_f))));
        let v = c
            .options_of(l)
            .iter()
            .zip(&ids[l - 1])
            .map(|(o, id)| SlotOption {
                u_f: o.u_f,
                u_b: o.u_b,
                s: up(o.abar - dm.a[l]),
                o_f: up(o.o_f),
                o_b: up(o.o_b),
                fall: id.0,
                b: id.1,
                saved: id.2,
            })
            .collect();
        opts.push(v);
    }
    let loss = dm.l + 1;
    ff.push((dm.u_f[loss], sl.o_f[loss]));
    opts.push(vec![SlotOption {
        u_f: dm.u_f[loss],
        u_b: dm.u_b[loss],
        s: sl.s[loss],
        o_f: sl.o_f[loss],
        o_b: sl.o_b[loss],
        fall: c.fall_id(loss),
        b: c.b_id(loss),
        saved: c.s_id(loss),
    }]);
    (opts, ff)
}

/// Memory discretisation: sizes rounded **up** to whole slots, the budget
/// rounded **down** (`FAMILIES.md` §2.2.10), so a plan that fits in slots fits
/// in bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slots {
    /// Bytes per slot (≥ 1).
    pub slot: u64,
    pub a: Vec<u64>,
    pub s: Vec<u64>,
    pub d: Vec<u64>,
    pub o_f: Vec<u64>,
    pub o_b: Vec<u64>,
    /// ⌊M_GPU / slot⌋.
    pub budget: u64,
}

impl Slots {
    /// `n` slots over the GPU memory (at least one byte per slot).
    pub fn new(c: &RematChain, dm: &Dims, n: u64) -> Slots {
        let slot = c.gpu_memory.div_ceil(n.max(1)).max(1);
        let up = |v: &Vec<u64>| v.iter().map(|x| x.div_ceil(slot)).collect::<Vec<u64>>();
        Slots {
            slot,
            a: up(&dm.a),
            s: up(&dm.s),
            d: up(&dm.d),
            o_f: up(&dm.o_f),
            o_b: up(&dm.o_b),
            budget: c.gpu_memory / slot,
        }
    }
    pub fn abar(&self, l: usize) -> u64 {
        self.a[l] + self.s[l]
    }
}

/// The discretisation used when none is given (rotor's 500 slots).
pub const DEFAULT_SLOTS: u64 = 500;
