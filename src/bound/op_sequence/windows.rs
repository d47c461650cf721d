//! The transfer-windows bound on the period of an `op_sequence` instance
//! (`proofs/OP-SEQUENCE-BOUND.md` §3), in the spirit of the activation family's
//! whole-tensor windows.
//!
//! At the start s of function f at least D_f bytes of L_f hold no GPU memory
//! (`must_be_absent`), and they are among the variables of L_f that f does not
//! use. For δ = 1..n−1, at most R_f(δ) of those bytes (the ones whose next use
//! is more than δ functions after f) can wait beyond function f+δ; the rest,
//! ≥ D_f − R_f(δ), must be prefetched between s and the start of f+δ, on one
//! channel. Functions f+δ, …, f+n−1 (cyclically) run between that start and f's
//! next start s + P. So P ≥ C_f(δ) + (D_f − R_f(δ))⁺/β, with C_f(δ) their total
//! duration. δ = n−1… down to the whole period gives back `op-transfer-volume`.
//! Integers throughout: the maximum of b·(line) is taken over u128, the bound is
//! that over b (β = b/τ), an exact rational.
//!
//! Owns: [`TransferWindows`], [`transfer_windows`]. Must not import:
//! heuristics, exact solvers.

use super::{infeasible, must_be_absent, uses};
use crate::bound::{BoundError, BoundMethod, LowerBound, Strength};
use crate::family::op_sequence::Uses;
use crate::family::InstanceFile;
use crate::model::Instance;
use crate::units::Bandwidth;
use num_bigint::BigInt;
use num_rational::BigRational;

/// Per variable, the functions that use it, ascending.
fn use_positions(u: &Uses) -> Vec<Vec<usize>> {
    let mut pos = vec![Vec::new(); u.bytes.len()];
    for (f, fu) in u.uses.iter().enumerate() {
        for &(v, _) in fu {
            if pos[v].last() != Some(&f) {
                pos[v].push(f);
            }
        }
    }
    pos
}

/// The largest b·P′ over the lines of function f (module docs), where b, τ
/// are β's bytes and ticks; 0 when D_f = 0.
fn best_at(u: &Uses, f: usize, d_f: u128, pos: &[Vec<usize>], bw: Bandwidth) -> u128 {
    let n = u.n();
    if d_f == 0 || n < 2 {
        return 0;
    }
    // bytes[δ]: the bytes of the candidates whose next use is δ functions on.
    let mut bytes = vec![0u128; n];
    for (v, p) in pos.iter().enumerate() {
        if p.is_empty() || p.binary_search(&f).is_ok() {
            continue; // unused, or used at f: present at s (R1)
        }
        let next = match p.iter().find(|&&g| g > f) {
            Some(&g) if u.persistent[v] => g - f,
            None if u.persistent[v] => p[0] + n - f,
            // Non-persistent: in L_f iff written before f and used after it.
            Some(&g) if p[0] < f => g - f,
            _ => continue,
        };
        bytes[next] += u.bytes[v] as u128;
    }
    // tail[δ] = Σ durations of f+δ, …, f+n−1 (cyclic).
    let mut best = 0u128;
    let mut later = 0u128; // R_f(δ): bytes with next use > δ
    let mut tail = 0u128;
    let (b, tau) = (bw.bytes as u128, bw.ticks as u128);
    for delta in (1..n).rev() {
        tail += u.durations[(f + delta) % n].max(0) as u128;
        let soon = d_f.saturating_sub(later);
        best = best.max(tail * b + soon * tau);
        later += bytes[delta];
    }
    best
}

/// The bound of the module docs as b·P′ (β = b/τ): the largest over f and δ.
pub fn transfer_windows(u: &Uses, cap: u64, bw: Bandwidth) -> u128 {
    let d = must_be_absent(u, cap);
    let pos = use_positions(u);
    (0..u.n())
        .map(|f| best_at(u, f, d[f], &pos, bw))
        .max()
        .unwrap_or(0)
}

/// Transfers that must fit between the start of a function and the next uses
/// of what it leaves off the GPU, before the functions after them.
pub struct TransferWindows;

impl BoundMethod for TransferWindows {
    fn name(&self) -> &'static str {
        "op-transfer-windows"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        matches!(file, InstanceFile::OpSequence(_))
    }
    fn bound(&self, file: &InstanceFile, inst: &Instance) -> Result<LowerBound, BoundError> {
        let u = uses(self.name(), file)?;
        let cap = inst.machine.gpu_capacity.0;
        infeasible(self.name(), &u, cap)?;
        let bw = inst.machine.bandwidth;
        let v = transfer_windows(&u, cap, bw);
        Ok(LowerBound {
            value: BigRational::new(BigInt::from(v), BigInt::from(bw.bytes)),
            source: self.name().into(),
            strength: Strength::Certified,
        })
    }
}
