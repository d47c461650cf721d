//! The turnaround bound for `weight_chain` (`turnaround`, certified): what the
//! GPU can hold while B_1 runs limits how many weights the forward pass can
//! find there; every other weight needs a prefetch of its own after B_1 (one
//! channel, one after the other) before its F op, and the forward pass cannot
//! end before the last of them plus F_L. The same at the other turnaround
//! (F_L, then the backward pass).
//!
//! Under the default rule (`after_end`, B_1 holds its memory until it ends):
//!
//!   P ≥ Σ u_B + max(Σ u_F, Σ_{i≠1} τ_i − U(M_GPU − MB_1) + u_{F_L}),
//!   P ≥ Σ u_F + max(Σ u_B, Σ_{i≠L} τ_i − U(M_GPU − MF_L) + u_{B_1}),
//!
//! with τ_i = ⌈|w_i|/β⌉ ticks and U(m) an upper bound on Σ τ_i over any set of
//! weights (other than the op's own) of total size ≤ m: the least of the
//! fractional knapsack and the sum of the K largest τ_i, K the most weights
//! that fit. Under the relaxation `after_start` the anchor is the op's start,
//! so that op's own duration leaves the link term. Proof and hand-derived
//! figures: `proofs/WEIGHT-BOUND.md` §6.
//!
//! Owns: [`Turnaround`].
//! Must not import: heuristics, exact solvers, the simulator.

use super::{BoundError, BoundMethod, LowerBound, Strength};
use crate::family::{InstanceFile, WeightChain};
use crate::model::{Instance, ReleaseRule};
use crate::semantics::transfer_ticks;
use std::cmp::Ordering;

/// The turnaround bound (module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct Turnaround;

/// U(m): an upper bound on Σ τ_i over the weights `items` (τ_i, |w_i|) of total
/// size ≤ m: min(⌊fractional knapsack⌋, the K largest τ_i with K the largest
/// number of weights that fit).
pub fn knapsack_cap(items: &[(i64, u64)], m: u64) -> i64 {
    // Fractional knapsack: by τ/|w| decreasing; zero-size weights first (they
    // cost no memory).
    let mut by_ratio: Vec<(i64, u64)> = items.to_vec();
    by_ratio.sort_by(|a, b| match (a.1, b.1) {
        (0, 0) => Ordering::Equal,
        (0, _) => Ordering::Less,
        (_, 0) => Ordering::Greater,
        // a.0/a.1 > b.0/b.1 first.
        _ => (b.0 as u128 * a.1 as u128).cmp(&(a.0 as u128 * b.1 as u128)),
    });
    let mut room = m as u128;
    let mut frac: i128 = 0;
    for &(t, w) in &by_ratio {
        if (w as u128) <= room {
            room -= w as u128;
            frac += t as i128;
        } else {
            frac += (t as u128 * room / w as u128) as i128;
            break;
        }
    }
    // At most K weights fit: the K smallest ones are the tightest test.
    let mut sizes: Vec<u64> = items.iter().map(|x| x.1).collect();
    sizes.sort_unstable();
    let mut used: u128 = 0;
    let mut k = 0;
    for s in sizes {
        used += s as u128;
        if used > m as u128 {
            break;
        }
        k += 1;
    }
    let mut taus: Vec<i64> = items.iter().map(|x| x.0).collect();
    taus.sort_unstable_by(|a, b| b.cmp(a));
    let largest: i128 = taus.iter().take(k).map(|t| *t as i128).sum();
    frac.min(largest) as i64
}

/// One turnaround: `own` is the layer (1-based) of the anchor op, `cap` the
/// memory left beside it, `stream` the durations of the ops that must follow
/// the anchor (the pass the weights are streamed to), `last` the duration of
/// that pass's last op, `rest` the durations of the other ops, `anchor` the
/// anchor op's duration when it leaves the link term (`after_start`).
struct Side {
    own: usize,
    cap: u64,
    stream: i64,
    last: i64,
    rest: i64,
    anchor: i64,
}

fn side_bound(tau: &[(i64, u64)], s: &Side) -> i128 {
    let others: Vec<(i64, u64)> = tau
        .iter()
        .enumerate()
        .filter(|(j, _)| j + 1 != s.own)
        .map(|(_, x)| *x)
        .collect();
    let all: i128 = others.iter().map(|x| x.0 as i128).sum();
    let link = all - knapsack_cap(&others, s.cap) as i128 + s.last as i128;
    s.rest as i128 + (s.anchor as i128 + s.stream as i128).max(link)
}

impl Turnaround {
    /// The bound in ticks for `c` under `rule`, or why no schedule exists.
    pub fn ticks(
        &self,
        c: &WeightChain,
        inst: &Instance,
        rule: ReleaseRule,
    ) -> Result<i64, String> {
        let l = c.l();
        let sum_f: i64 = c.layers.iter().map(|x| x.u_f).sum();
        let sum_b: i64 = c.layers.iter().map(|x| x.u_b).sum();
        if l == 0 {
            return Ok(0);
        }
        let mem = c.op_memory().ok_or("memory sizes overflow 64 bits")?;
        if let Some(m) = mem.iter().find(|m| **m > c.gpu_memory) {
            return Err(format!("an op needs {m} B > GPU memory {} B", c.gpu_memory));
        }
        let tau: Vec<(i64, u64)> = (1..=l)
            .map(|i| (transfer_ticks(inst, c.w_id(i)).0, c.layers[i - 1].w))
            .collect();
        let (u_b1, u_fl) = (c.layers[0].u_b, c.layers[l - 1].u_f);
        let start = rule == ReleaseRule::AfterStart;
        // Anchor B_1 (step l − 1 in the paper's order), then the forward pass.
        let fwd = Side {
            own: 1,
            cap: c.gpu_memory - mem[l - 1],
            stream: sum_f,
            last: u_fl,
            rest: sum_b - if start { u_b1 } else { 0 },
            anchor: if start { u_b1 } else { 0 },
        };
        // Anchor F_L (step 2l − 1), then the backward pass.
        let bwd = Side {
            own: l,
            cap: c.gpu_memory - mem[2 * l - 1],
            stream: sum_b,
            last: u_b1,
            rest: sum_f - if start { u_fl } else { 0 },
            anchor: if start { u_fl } else { 0 },
        };
        let b = side_bound(&tau, &fwd).max(side_bound(&tau, &bwd));
        Ok(i64::try_from(b).unwrap_or(i64::MAX))
    }
}

impl BoundMethod for Turnaround {
    fn name(&self) -> &'static str {
        "turnaround"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        file.weight_chain().is_some()
    }
    fn bound(&self, file: &InstanceFile, inst: &Instance) -> Result<LowerBound, BoundError> {
        let c = super::super::weight_chain(self.name(), file)?;
        let t = self
            .ticks(c, inst, inst.release)
            .map_err(|reason| BoundError::Infeasible {
                bound: self.name(),
                reason,
            })?;
        Ok(LowerBound::from_ticks(t, self.name(), Strength::Certified))
    }
}

#[cfg(test)]
mod tests {
    use super::knapsack_cap;

    #[test]
    fn knapsack_cap_takes_the_tighter_of_its_two_caps() {
        // Three weights of 10 B, 10 ticks each, 25 B of room: the fractional
        // knapsack says 25, at most two fit: 20.
        assert_eq!(knapsack_cap(&[(10, 10), (10, 10), (10, 10)], 25), 20);
        // 3 + 1 B, τ 6 and 1, room 3: fractional 6, one fits (the 1 B one):
        // the largest τ, 6.
        assert_eq!(knapsack_cap(&[(6, 3), (1, 1)], 3), 6);
        // Zero-size weights fit for free.
        assert_eq!(knapsack_cap(&[(0, 0), (5, 10)], 0), 0);
        assert_eq!(knapsack_cap(&[], 7), 0);
    }
}
