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
//!
//! Owns: the §6 MILP's rational data (solved through `crate::lp`).
//! Must not import: exact solvers, heuristics, the simulator, traces, reports,
//! the CLI.

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

/// The columns of one weight w_i, by window position p (0 = the interval of B_i).
struct Wcols {
    o: Vec<usize>,
    p: Vec<usize>,
    d: Vec<usize>,
    m: Vec<usize>,
    oc: Vec<usize>,
    /// The op index of B_i.
    start: usize,
}

/// The model under construction and the data every equation needs.
struct Sec6<'a> {
    c: &'a WeightChain,
    l: usize,
    n: usize,
    /// The memory unit (bytes), a power of two.
    scale: BigRational,
    /// Ticks per memory unit: scale · τ / b.
    per_unit: BigRational,
    /// u_j per op, paper order.
    u: Vec<i64>,
    m: Milp,
    idle: Vec<usize>,
    ws: Vec<Wcols>,
}

/// Build the §6 MILP for `c`.
pub fn build(c: &WeightChain, variant: Variant) -> Result<Milp, ModelIssue> {
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
    let mut b = Sec6::new(c);
    b.columns();
    for i in 1..=b.l {
        b.weight_rows(i);
    }
    for j in 0..b.n {
        b.memory_row(j, &mem, variant);
        b.transfer_rows(j);
    }
    Ok(b.m)
}

impl Sec6<'_> {
    fn new(c: &WeightChain) -> Sec6<'_> {
        let l = c.l();
        let n = 2 * l;
        // Memory unit: a power of two, about max|w| / 2^10, so the solver sees numbers near 1e3.
        let max_w = c.layers.iter().map(|x| x.w).max().unwrap_or(0).max(1);
        let shift = (63 - max_w.leading_zeros() as i32 - 10).max(0) as u32;
        let scale = BigRational::from_integer(BigInt::one() << shift);
        let bw = c.bandwidth.to_bandwidth();
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
        let m = Milp {
            constant: int(u.iter().map(|x| *x as i128).sum()),
            ..Default::default()
        };
        Sec6 {
            c,
            l,
            n,
            scale,
            per_unit,
            u,
            m,
            idle: Vec::new(),
            ws: Vec::with_capacity(l),
        }
    }

    fn bytes(&self, x: u64) -> BigRational {
        BigRational::from_integer(BigInt::from(x)) / &self.scale
    }

    /// idle_j ≥ 0 per op (cost 1), then per weight O, P, D ∈ [0, |w_i|], m
    /// and the running offload total oc; (5): w_i is whole at B_i (p = 0), at
    /// F_i (p = p_F) and after a full cycle (p = 2L).
    fn columns(&mut self) {
        let (l, n) = (self.l, self.n);
        let zero = BigRational::zero;
        self.idle = (0..n)
            .map(|_| self.m.col(BigRational::one(), zero(), None, false))
            .collect();
        for i in 1..=l {
            let wi = self.bytes(self.c.layers[i - 1].w);
            let m = &mut self.m;
            let p_f = 2 * i - 1; // F_i
            let mut amounts = || -> Vec<usize> {
                (0..n)
                    .map(|_| m.col(zero(), zero(), Some(wi.clone()), false))
                    .collect()
            };
            let (o, p, d) = (amounts(), amounts(), amounts());
            let mm = (0..=n)
                .map(|p| {
                    let lo = if p == 0 || p == p_f || p == n {
                        wi.clone()
                    } else {
                        zero()
                    };
                    m.col(zero(), lo, Some(wi.clone()), false)
                })
                .collect();
            let oc = (0..=n)
                .map(|p| {
                    let hi = if p == 0 { zero() } else { wi.clone() };
                    m.col(zero(), zero(), Some(hi), false)
                })
                .collect();
            self.ws.push(Wcols {
                o,
                p,
                d,
                m: mm,
                oc,
                start: l - i, // B_i
            });
        }
    }

    /// The rows of weight w_i: the definitions of m and oc, (6), (7), (8), (3).
    fn weight_rows(&mut self, i: usize) {
        let n = self.n;
        let wi = self.bytes(self.c.layers[i - 1].w);
        let p_f = 2 * i - 1;
        let (zero, one) = (BigRational::zero, BigRational::one);
        let neg = || -BigRational::one();
        let m = &mut self.m;
        let (o_star, d0, d1) = (
            m.col(zero(), zero(), Some(one()), true),
            m.col(zero(), zero(), Some(one()), true),
            m.col(zero(), zero(), Some(one()), true),
        );
        let w = &self.ws[i - 1];
        for p in 0..n {
            // m_{p+1} = m_p + P_p − D_p (definition of m_{i,k} in (4)).
            m.row(
                vec![
                    (w.m[p + 1], one()),
                    (w.m[p], neg()),
                    (w.p[p], neg()),
                    (w.d[p], one()),
                ],
                Some(zero()),
                Some(zero()),
            );
            // oc_{p+1} = oc_p + O_p.
            m.row(
                vec![(w.oc[p + 1], one()), (w.oc[p], neg()), (w.o[p], neg())],
                Some(zero()),
                Some(zero()),
            );
        }
        for p in 1..=n {
            // (6), second part: Σ O + Σ (P − D) ≥ 0, i.e. oc_p + m_p ≥ |w_i|.
            // (6), first part (Σ (P − D) ≤ 0, i.e. m_p ≤ |w_i|) is the column bound.
            m.row(
                vec![(w.oc[p], one()), (w.m[p], one())],
                Some(wi.clone()),
                None,
            );
        }
        // (7): Σ_j O_{i,j} = |w_i| O*_i.
        m.row(
            vec![(w.oc[n], one()), (o_star, -wi.clone())],
            Some(zero()),
            Some(zero()),
        );
        // (8): deletions between B_i and F_i, and between F_i and B_i.
        let mut r0: Vec<(usize, BigRational)> = (0..p_f).map(|p| (w.d[p], one())).collect();
        r0.push((d0, -wi.clone()));
        m.row(r0, Some(zero()), Some(zero()));
        let mut r1: Vec<(usize, BigRational)> = (p_f..n).map(|p| (w.d[p], one())).collect();
        r1.push((d1, -wi.clone()));
        m.row(r1, Some(zero()), Some(zero()));
        // (3): w_i is not offloaded while B_i runs: idle_{B_i} ≥ O_{i,B_i}/β.
        m.row(
            vec![
                (self.idle[w.start], one()),
                (w.o[0], -self.per_unit.clone()),
            ],
            Some(zero()),
            None,
        );
    }

    /// Weight i's window position at op j.
    fn pos(&self, i: usize, j: usize) -> usize {
        (j + self.n - self.ws[i - 1].start) % self.n
    }

    /// (4): the weights on the GPU at op j's start fit beside M_j.
    fn memory_row(&mut self, j: usize, mem: &[u64], variant: Variant) {
        let l = self.l;
        let layer = if j < l { l - j } else { j - l + 1 };
        let coefs: Vec<(usize, BigRational)> = (1..=l)
            .filter(|&i| variant == Variant::Literal || i != layer)
            .map(|i| (self.ws[i - 1].m[self.pos(i, j)], BigRational::one()))
            .collect();
        let room = self.bytes(self.c.gpu_memory) - self.bytes(mem[j]);
        self.m.row(coefs, None, Some(room));
    }

    /// (2): transfers in interval j fit in u_j + idle_j, each direction.
    fn transfer_rows(&mut self, j: usize) {
        for dir in 0..2 {
            let mut coefs: Vec<(usize, BigRational)> = vec![(self.idle[j], BigRational::one())];
            for i in 1..=self.l {
                let w = &self.ws[i - 1];
                let col = if dir == 0 {
                    w.o[self.pos(i, j)]
                } else {
                    w.p[self.pos(i, j)]
                };
                coefs.push((col, -self.per_unit.clone()));
            }
            self.m.row(coefs, Some(int(-(self.u[j] as i128))), None);
        }
    }
}
