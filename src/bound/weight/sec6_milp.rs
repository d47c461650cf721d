//! The MILP of the weight paper's §6, eqs. (2)–(8), as exact rational data.
//!
//! Variables per weight i and per interval of the cycle (op j's start to op
//! j+1's start, ops numbered from B_L as in the paper): O (offloaded), P
//! (prefetched), D (deleted), in units of `scale` bytes; the amount m of w_i on
//! the GPU at each op's start and the running offload total `oc` are explicit
//! columns, so that the cumulative sums of (4)–(6) stay sparse. idle_j ≥ 0 per
//! op; binaries O*_i, D⁽⁰⁾_i, D⁽¹⁾_i. `proofs/WEIGHT-BOUND.md` maps every row to
//! the paper's equation and proves the bound valid for our model.
//!
//! [`Variant::Corrected`] counts in (4) only the weights of *other* layers (M_k
//! of eq. (1) already holds the op's own weight); [`Variant::Literal`] sums over
//! all i as printed, which counts the op's own weight twice and is not a valid
//! bound (see the counterexample in `proofs/WEIGHT-BOUND.md`).

use crate::family::WeightChain;
use crate::lp::rational::Milp;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Zero};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Corrected,
    Literal,
}

fn int(x: i128) -> BigRational {
    BigRational::from_integer(BigInt::from(x))
}

/// Why the model cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelIssue {
    /// Op `op` (paper numbering, 0-based) alone exceeds the GPU memory: no schedule exists.
    #[error("op #{op} (paper numbering from B_L) alone needs {memory} B > {capacity} B: no schedule exists")]
    OpTooBig {
        op: usize,
        memory: u64,
        capacity: u64,
    },
    #[error("memory sizes overflow 64 bits")]
    Overflow,
}

/// Build the §6 MILP for `c`.
pub fn build(c: &WeightChain, variant: Variant) -> Result<Milp, ModelIssue> {
    let l = c.l();
    let n = 2 * l;
    let mem = c.op_memory().ok_or(ModelIssue::Overflow)?;
    for (j, m) in mem.iter().enumerate() {
        if *m > c.gpu_memory {
            return Err(ModelIssue::OpTooBig {
                op: j,
                memory: *m,
                capacity: c.gpu_memory,
            });
        }
    }
    // Memory unit: a power of two, about max|w| / 2^10, so the solver sees numbers near 1e3.
    let max_w = c.layers.iter().map(|x| x.w).max().unwrap_or(0).max(1);
    let shift = (63 - max_w.leading_zeros() as i32 - 10).max(0) as u32;
    let scale = BigRational::from_integer(BigInt::one() << shift);
    let bytes = |x: u64| BigRational::from_integer(BigInt::from(x)) / &scale;
    let bw = c.bandwidth.to_bandwidth();
    // Ticks per memory unit: scale · τ / b.
    let per_unit = &scale * int(bw.ticks as i128) / int(bw.bytes as i128);
    let u: Vec<i64> = (0..n)
        .map(|j| {
            if j < l {
                c.layers[l - j - 1].u_b
            } else {
                c.layers[j - l].u_f
            }
        })
        .collect();
    let layer = |j: usize| if j < l { l - j } else { j - l + 1 };
    let zero = BigRational::zero;

    let mut m = Milp {
        constant: int(u.iter().map(|x| *x as i128).sum()),
        ..Default::default()
    };
    let idle: Vec<usize> = (0..n)
        .map(|_| m.col(BigRational::one(), zero(), None, false))
        .collect();
    // Per weight: columns by window position p (0 = the interval of B_i).
    struct Wcols {
        o: Vec<usize>,
        p: Vec<usize>,
        d: Vec<usize>,
        m: Vec<usize>,
        oc: Vec<usize>,
        start: usize,
    }
    let mut ws = Vec::with_capacity(l);
    for i in 1..=l {
        let wi = bytes(c.layers[i - 1].w);
        let start = l - i; // B_i
        let p_f = 2 * i - 1; // F_i
        let o = (0..n)
            .map(|_| m.col(zero(), zero(), Some(wi.clone()), false))
            .collect();
        let p = (0..n)
            .map(|_| m.col(zero(), zero(), Some(wi.clone()), false))
            .collect();
        let d = (0..n)
            .map(|_| m.col(zero(), zero(), Some(wi.clone()), false))
            .collect();
        // (5): w_i is whole at B_i (p = 0), at F_i (p = p_F) and after a full cycle (p = 2L).
        let mm = (0..=n)
            .map(|p| {
                if p == 0 || p == p_f || p == n {
                    m.col(zero(), wi.clone(), Some(wi.clone()), false)
                } else {
                    m.col(zero(), zero(), Some(wi.clone()), false)
                }
            })
            .collect();
        let oc = (0..=n)
            .map(|p| {
                if p == 0 {
                    m.col(zero(), zero(), Some(zero()), false)
                } else {
                    m.col(zero(), zero(), Some(wi.clone()), false)
                }
            })
            .collect();
        ws.push(Wcols {
            o,
            p,
            d,
            m: mm,
            oc,
            start,
        });
    }
    let one = BigRational::one;
    let neg = || -BigRational::one();
    for i in 1..=l {
        let wi = bytes(c.layers[i - 1].w);
        let p_f = 2 * i - 1;
        let w = &ws[i - 1];
        let (o_star, d0, d1) = (
            m.col(zero(), zero(), Some(one()), true),
            m.col(zero(), zero(), Some(one()), true),
            m.col(zero(), zero(), Some(one()), true),
        );
        let (wo, wp, wd, wm, woc) = (
            w.o.clone(),
            w.p.clone(),
            w.d.clone(),
            w.m.clone(),
            w.oc.clone(),
        );
        for p in 0..n {
            // m_{p+1} = m_p + P_p − D_p (definition of m_{i,k} in (4)).
            m.row(
                vec![
                    (wm[p + 1], one()),
                    (wm[p], neg()),
                    (wp[p], neg()),
                    (wd[p], one()),
                ],
                Some(zero()),
                Some(zero()),
            );
            // oc_{p+1} = oc_p + O_p.
            m.row(
                vec![(woc[p + 1], one()), (woc[p], neg()), (wo[p], neg())],
                Some(zero()),
                Some(zero()),
            );
        }
        for p in 1..=n {
            // (6), second part: Σ O + Σ (P − D) ≥ 0, i.e. oc_p + m_p ≥ |w_i|.
            // (6), first part (Σ (P − D) ≤ 0, i.e. m_p ≤ |w_i|) is the column bound.
            m.row(
                vec![(woc[p], one()), (wm[p], one())],
                Some(wi.clone()),
                None,
            );
        }
        // (7): Σ_j O_{i,j} = |w_i| O*_i.
        m.row(
            vec![(woc[n], one()), (o_star, -wi.clone())],
            Some(zero()),
            Some(zero()),
        );
        // (8): deletions between B_i and F_i, and between F_i and B_i.
        let mut r0: Vec<(usize, BigRational)> = (0..p_f).map(|p| (wd[p], one())).collect();
        r0.push((d0, -wi.clone()));
        m.row(r0, Some(zero()), Some(zero()));
        let mut r1: Vec<(usize, BigRational)> = (p_f..n).map(|p| (wd[p], one())).collect();
        r1.push((d1, -wi.clone()));
        m.row(r1, Some(zero()), Some(zero()));
        // (3): w_i is not offloaded while B_i runs: idle_{B_i} ≥ O_{i,B_i}/β.
        m.row(
            vec![(idle[w.start], one()), (wo[0], -per_unit.clone())],
            Some(zero()),
            None,
        );
    }
    let pos = |i: usize, j: usize| (j + n - ws[i - 1].start) % n;
    for j in 0..n {
        // (4): the weights on the GPU at op j's start fit beside M_j.
        let coefs: Vec<(usize, BigRational)> = (1..=l)
            .filter(|&i| variant == Variant::Literal || i != layer(j))
            .map(|i| (ws[i - 1].m[pos(i, j)], one()))
            .collect();
        let room = bytes(c.gpu_memory) - bytes(mem[j]);
        m.row(coefs, None, Some(room));
        // (2): transfers in interval j fit in u_j + idle_j, each direction.
        for dir in 0..2 {
            let mut coefs: Vec<(usize, BigRational)> = vec![(idle[j], one())];
            for i in 1..=l {
                let col = if dir == 0 {
                    ws[i - 1].o[pos(i, j)]
                } else {
                    ws[i - 1].p[pos(i, j)]
                };
                coefs.push((col, -per_unit.clone()));
            }
            m.row(coefs, Some(int(-(u[j] as i128))), None);
        }
    }
    Ok(m)
}
