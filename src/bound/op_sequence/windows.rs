//! The transfer-windows bound on the period of an `op_sequence` instance
//! (`proofs/OP-SEQUENCE-BOUND.md` §3), in the spirit of the activation family's
//! whole-tensor windows.
//!
//! At the start s of function f at least D_f bytes of L_f hold no GPU memory
//! (`must_be_absent`), and they are among the variables of L_f that f does not
//! use. For δ = 1..n−1, at most R_f(δ) of those bytes (the ones whose next use
//! is more than δ functions after f) can wait beyond function f+δ; the rest,
//! ≥ D_f − R_f(δ), must be prefetched between s and the start of f+δ, on one
//! channel. So the window [s, start of f+δ) lasts ≥ (D_f − R_f(δ))⁺/β, and at
//! least the compute of f, …, f+δ−1: its *excess* over that compute is
//! e_f(δ) = ((D_f − R_f(δ))⁺/β − C⁰_f(δ))⁺. Windows that do not overlap on the
//! cycle are disjoint stretches of one period, each holding its own
//! prefetches, so P ≥ Σd + the excesses of any non-overlapping set of windows
//! (`proofs/OP-SEQUENCE-BOUND.md` §3, §4). One window with δ = n−1 gives back
//! `op-transfer-volume`'s V/β (plus a function). Integers throughout: b·P′ is
//! computed in u128, the bound is that over b (β = b/τ), an exact rational.
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

/// Per δ = 1..n−1 (index δ; index 0 unused): b times the bound's excess over
/// the compute of the window, e_f(δ) = (τ·(D_f − R_f(δ))⁺ − b·C⁰_f(δ))⁺, where
/// C⁰_f(δ) is the duration of f, …, f+δ−1 and β = b/τ. Empty when D_f = 0.
fn excess(u: &Uses, f: usize, d_f: u128, pos: &[Vec<usize>], bw: Bandwidth) -> Vec<u128> {
    let n = u.n();
    if d_f == 0 || n < 2 {
        return Vec::new();
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
    let total: u128 = u.durations.iter().map(|&d| d.max(0) as u128).sum();
    let (b, tau) = (bw.bytes as u128, bw.ticks as u128);
    let mut ex = vec![0u128; n];
    let mut later = 0u128; // R_f(δ): bytes with next use > δ
    let mut tail = 0u128; // durations of f+δ, …, f+n−1
    for delta in (1..n).rev() {
        tail += u.durations[(f + delta) % n].max(0) as u128;
        let head = total - tail;
        let soon = d_f.saturating_sub(later);
        ex[delta] = (soon * tau).saturating_sub(head * b);
        later += bytes[delta];
    }
    ex
}

/// b·P′ for the bound of the module docs: b·Σd plus the largest total excess
/// of windows [f, f+δ) that do not overlap on the cycle (weighted interval
/// scheduling on the cycle cut at the start of the best single window, so
/// the best single window is always among the choices).
pub fn transfer_windows(u: &Uses, cap: u64, bw: Bandwidth) -> u128 {
    let n = u.n();
    let d = must_be_absent(u, cap);
    let pos = use_positions(u);
    let total: u128 = u.durations.iter().map(|&x| x.max(0) as u128).sum();
    let base = total * bw.bytes as u128;
    // The cut: the start of the window with the largest excess.
    let (mut cut, mut top) = (0, 0u128);
    for f in 0..n {
        let m = excess(u, f, d[f], &pos, bw).into_iter().max().unwrap_or(0);
        if m > top {
            (cut, top) = (f, m);
        }
    }
    if top == 0 {
        return base;
    }
    // best[p]: the largest total excess of windows inside positions [0, p)
    // (position p is function cut+p); ending[p]: of those ending exactly at p.
    let mut best = vec![0u128; n + 1];
    let mut ending = vec![0u128; n + 1];
    for p in 0..n {
        if p > 0 {
            best[p] = best[p - 1].max(ending[p]);
        }
        let f = (cut + p) % n;
        for (delta, &e) in excess(u, f, d[f], &pos, bw).iter().enumerate() {
            if e > 0 && p + delta <= n {
                ending[p + delta] = ending[p + delta].max(best[p] + e);
            }
        }
    }
    best[n] = best[n - 1].max(ending[n]);
    base + best[n]
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
