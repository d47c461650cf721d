//! Heuristics for `remat_chain` (rematerialisation with offloading): rotor's
//! persistent DP, the appendix's DP as printed (`pofo`, 50 slots) and as it
//! should be run (`pofo-as-run`), and that DP without recomputation
//! (`offload-only`). Each DP's decisions become a [`Sequence`] (ops in order,
//! explicit deletes, offloads per position), realised by
//! [`crate::simulate::asap_sequence`] and then checked by [`super::run`].
//!
//! Owns: [`Sequence`], the discretisation [`Slots`], the registry.
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
    let mut s = Sequence::default();
    for l in 1..=c.l() + 1 {
        s.f_all(c, l);
    }
    for l in (1..=c.l() + 1).rev() {
        s.b(c, l);
    }
    s
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
