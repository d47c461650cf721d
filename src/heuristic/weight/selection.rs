//! Algorithm 1 of the weight paper (§5, selection phase): which weights leave the
//! GPU, and when.
//!
//! A choice (k, 1) removes w_k between F_k and B_k; (k, 0) between B_k and F_k of
//! the next iteration. The excess memory of every op is reduced greedily by the
//! choice of best profit (memory saved over the ops it covers, per byte moved).
//!
//! Adaptations (documented in `proofs/WEIGHT-BOUND.md` §5):
//! - the excess of op o counts the *other* weights: E_o = Σ_{i≠layer(o)} |w_i| + M_o
//!   − M_GPU. The paper writes Σ_i |w_i| + M_o, but M_o (eq. (1)) already contains
//!   |w_layer(o)|; counted twice, an op whose memory fits would look infeasible;
//! - only the positive part of an excess is a benefit (min(max(E_o, 0), |w_k|));
//!   the paper's min(E_o, |w_k|) would count an op already within budget as a loss;
//! - Greedy* (`discount = false`) prices every choice at 2|w_k|.
//!
//! Owns: Algorithm 1, the selection.
//! Must not import: exact solvers, traces, reports, the CLI.

use crate::family::WeightChain;
use num_bigint::BigUint;
use std::cmp::Ordering;

/// The chosen offloading decisions, indexed by layer `k-1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// (k, 0): w_k leaves the GPU between B_k and F_k (next iteration).
    pub off0: Vec<bool>,
    /// (k, 1): w_k leaves the GPU between F_k and B_k.
    pub off1: Vec<bool>,
}

/// The ops in the order the paper's §6 numbers them and Algorithm 2 visits them:
/// B_L, …, B_1, F_1, …, F_L (index 0..2L).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    F(usize),
    B(usize),
}

pub fn step(l: usize, idx: usize) -> Step {
    if idx < l {
        Step::B(l - idx)
    } else {
        Step::F(idx - l + 1)
    }
}

pub fn layer(l: usize, idx: usize) -> usize {
    match step(l, idx) {
        Step::F(i) | Step::B(i) => i,
    }
}

pub fn idx_b(l: usize, i: usize) -> usize {
    l - i
}

pub fn idx_f(l: usize, i: usize) -> usize {
    l - 1 + i
}

/// The steps covered by choice (k, d) (paper: the ops run while w_k is away).
pub fn covered(l: usize, k: usize, d: u8) -> Vec<usize> {
    if d == 1 {
        // F_{k+1} … F_L, B_L … B_{k+1}
        let mut v: Vec<usize> = (idx_f(l, k) + 1..2 * l).collect();
        v.extend(0..idx_b(l, k));
        v
    } else {
        // B_{k-1} … B_1, F_1 … F_{k-1}
        (idx_b(l, k) + 1..idx_f(l, k)).collect()
    }
}

/// a/b > c/d on non-negative fractions with positive denominators, exactly.
fn frac_cmp(a: u128, b: u128, c: u128, d: u128) -> Ordering {
    match (a.checked_mul(d), c.checked_mul(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => (BigUint::from(a) * BigUint::from(d)).cmp(&(BigUint::from(c) * BigUint::from(b))),
    }
}

/// Why no selection exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoSelection {
    /// Step index of an op whose excess cannot be removed.
    pub step: usize,
    pub excess: i128,
}

/// Algorithm 1. `discount`: a second choice for the same layer costs |w_k| (one
/// transfer) instead of 2|w_k|.
pub fn select(chain: &WeightChain, discount: bool) -> Result<Selection, NoSelection> {
    select_within(chain, chain.gpu_memory, discount)
}

/// Algorithm 1 for a memory budget `budget` (≤ M_GPU: Greedy also tries budgets
/// that keep room for transfers in flight, which the selection does not see).
pub fn select_within(
    chain: &WeightChain,
    budget: u64,
    discount: bool,
) -> Result<Selection, NoSelection> {
    let l = chain.l();
    let mem = chain.op_memory().ok_or(NoSelection {
        step: 0,
        excess: i128::MAX,
    })?;
    let w: Vec<u128> = chain.layers.iter().map(|ly| ly.w as u128).collect();
    let total: i128 = w.iter().map(|x| *x as i128).sum();
    let cap = budget as i128;
    let mut excess: Vec<i128> = (0..2 * l)
        .map(|idx| total - w[layer(l, idx) - 1] as i128 + mem[idx] as i128 - cap)
        .collect();
    let mut off = [vec![false; l], vec![false; l]];
    let covers: Vec<[Vec<usize>; 2]> = (1..=l)
        .map(|k| [covered(l, k, 0), covered(l, k, 1)])
        .collect();
    loop {
        let (worst, max) = excess
            .iter()
            .enumerate()
            .max_by_key(|(i, e)| (**e, std::cmp::Reverse(*i)))
            .map(|(i, e)| (i, *e))
            .expect("at least one op");
        if max <= 0 {
            break;
        }
        // (benefit, cost, k, d) of the best choice so far.
        let mut best: Option<(u128, u128, usize, u8)> = None;
        for k in 1..=l {
            let wk = w[k - 1];
            if wk == 0 {
                continue;
            }
            for d in [1u8, 0u8] {
                if off[d as usize][k - 1] {
                    continue;
                }
                let benefit: u128 = covers[k - 1][d as usize]
                    .iter()
                    .map(|&o| (excess[o].max(0) as u128).min(wk))
                    .sum();
                if benefit == 0 {
                    continue;
                }
                let cost = if discount && off[1 - d as usize][k - 1] {
                    wk
                } else {
                    2 * wk
                };
                let better = match best {
                    None => true,
                    Some((b, c, _, _)) => frac_cmp(benefit, cost, b, c) == Ordering::Greater,
                };
                if better {
                    best = Some((benefit, cost, k, d));
                }
            }
        }
        let Some((_, _, k, d)) = best else {
            return Err(NoSelection {
                step: worst,
                excess: max,
            });
        };
        off[d as usize][k - 1] = true;
        let wk = w[k - 1] as i128;
        for &o in &covers[k - 1][d as usize] {
            excess[o] = (excess[o] - wk).max(0);
        }
    }
    let [off0, off1] = off;
    Ok(Selection { off0, off1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covered_sets_partition_the_other_ops() {
        let l = 5;
        for k in 1..=l {
            let mut all: Vec<usize> = covered(l, k, 0);
            all.extend(covered(l, k, 1));
            all.sort();
            let expect: Vec<usize> = (0..2 * l).filter(|&i| layer(l, i) != k).collect();
            assert_eq!(all, expect, "layer {k}");
        }
    }
}
