//! `remat-knapsack`: a memory-aware lower bound for `remat_chain`, proved in
//! `proofs/REMAT-BOUNDS.md` (section `remat-knapsack`).
//!
//! At τ, the start of `B{L+1}`, every tensor of K = {a_0, …, a_{L−1}, s_1,
//! …, s_L} is still to be read. Those not on the GPU at τ (at least V bytes,
//! as in `remat-split`) are either on the CPU (offloaded before τ, prefetched
//! after: X bytes, X/β of link time on each side) or produced again after τ
//! by a forward of their layer (recomputation: R ticks of compute after τ).
//! So the makespan is at least
//! g(X, R) = max(Σ_F, X/β) + max(Σ_B + R, X/β) with X + W(R) ≥ V, where W(R)
//! is the most bytes of K that forwards of total duration R can free: a
//! fractional knapsack over the layers (a relaxation, so the minimum over it
//! is a lower bound). A schedule with no forward after τ has R = 0; one with
//! such a forward has R ≥ the shortest positive u_F of layers 1..L. The bound
//! is the least g over both cases, computed exactly (rationals) at the kinks
//! of the piecewise-linear g.
//!
//! Several options per block and a distinct fast forward: each layer enters
//! with its least forward duration (any of its forward ops), least backward
//! and least |ā_k| − |a| (the proof's last section).
//!
//! `remat-knapsack-every` takes the same argument at the start of every
//! backward B_m instead of only the loss's (the forwards and B_{L+1}..B_{m+1}
//! before it, B_m..B_1 after it, the tensors B_{m−1}..B_1 read still to come)
//! and keeps the largest.
//!
//! Owns: [`RematKnapsack`], [`RematKnapsackEvery`], [`knapsack_bound`],
//! [`knapsack_every_bound`].
//! Must not import: heuristics, exact solvers, the checker.

use super::certified;
use crate::bound::{BoundError, BoundMethod, LowerBound};
use crate::family::remat_chain::RematChain;
use crate::family::InstanceFile;
use crate::model::Instance;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, Zero};

type Q = BigRational;

pub(super) fn q(x: i128) -> Q {
    Q::from_integer(BigInt::from(x))
}

/// One layer's recomputation after τ: `cost` ticks frees at most `bytes`.
pub(super) struct Item {
    pub(super) cost: i128,
    pub(super) bytes: i128,
}

/// The fractional knapsack W(R) as its breakpoints (R_i, W(R_i)), R_0 = 0:
/// zero-cost items first (W(0)), then by bytes per tick, most first; W is
/// linear between breakpoints and constant beyond the last.
pub(super) fn breakpoints(mut items: Vec<Item>) -> Vec<(Q, Q)> {
    // An item that frees nothing adds nothing (and has no ratio to sort by).
    items.retain(|i| i.bytes > 0);
    items.sort_by(|x, y| {
        // x before y when x.bytes/x.cost > y.bytes/y.cost (cost 0 first).
        (y.bytes * x.cost).cmp(&(x.bytes * y.cost))
    });
    let (mut r, mut w) = (0i128, 0i128);
    let mut out = vec![];
    for it in &items {
        if it.cost == 0 {
            w += it.bytes;
            continue;
        }
        if out.is_empty() {
            out.push((q(r), q(w)));
        }
        r += it.cost;
        w += it.bytes;
        out.push((q(r), q(w)));
    }
    if out.is_empty() {
        out.push((q(r), q(w)));
    }
    out
}

/// W(R), by linear interpolation between the breakpoints.
pub(super) fn freed(bp: &[(Q, Q)], r: &Q) -> Q {
    for win in bp.windows(2) {
        let ((r0, w0), (r1, w1)) = (&win[0], &win[1]);
        if r <= r1 {
            return w0 + (w1 - w0) * (r - r0) / (r1 - r0);
        }
    }
    bp.last().map(|x| x.1.clone()).unwrap_or_else(Q::zero)
}

/// The chain's numbers the bound is computed from.
///
/// g(R) = max(Σ_F, X/β) + max(Σ_B + R, X/β, floor), X = (V − W(R))⁺; with
/// `one_sided` the first term is dropped (`remat-windows`' window D(m, i):
/// max(mid + R, X/β)). `floor` is 0 for the knapsacks, H(m) for
/// `remat-windows`.
pub(super) struct Terms {
    pub(super) sf: Q,
    pub(super) sb: Q,
    /// V: bytes of K that cannot be on the GPU at τ.
    pub(super) v: Q,
    /// β as bytes per tick.
    pub(super) beta: Q,
    pub(super) bp: Vec<(Q, Q)>,
    /// The shortest positive recomputation (None: every u_F is 0).
    pub(super) r0: Option<Q>,
    pub(super) one_sided: bool,
    pub(super) floor: Q,
}

/// Per layer ℓ = 1..=L+1 (entry ℓ − 1): the least forward duration of any of
/// its ops (the fast forward `F{ℓ}`, every `Fall{ℓ}.{k}`), the least backward,
/// the least |ā_k| − |a| and the least |ā_k| − |a| + o_b,k over its options
/// (the loss: its own values).
pub(super) fn per_layer(c: &RematChain) -> Vec<(i128, i128, i128, i128)> {
    let dm = c.dims();
    let mut per: Vec<(i128, i128, i128, i128)> = (1..=dm.l)
        .map(|k| {
            let x = &c.layers[k - 1];
            let o = c.options_of(k);
            let fwd = o
                .iter()
                .map(|y| y.u_f as i128)
                .fold(x.ff_u_f.unwrap_or(x.u_f) as i128, i128::min);
            let bwd = o.iter().map(|y| y.u_b as i128).min().unwrap_or(0);
            let sig = |y: &crate::family::remat_chain::RematOption| (y.abar - dm.a[k]) as i128;
            let s = o.iter().map(sig).min().unwrap_or(0);
            let sb = o.iter().map(|y| sig(y) + y.o_b as i128).min().unwrap_or(0);
            (fwd, bwd, s, sb)
        })
        .collect();
    let loss = dm.l + 1;
    let (s, ob) = (dm.s[loss] as i128, dm.o_b[loss] as i128);
    per.push((dm.u_f[loss] as i128, dm.u_b[loss] as i128, s, s + ob));
    per
}

/// B_m's least footprint (m = 1..=L+1): d_m, a_m, s_m, a_{m−1}, d_{m−1} and its
/// scratch, the option's s and scratch taken together at their least; a_m and
/// d_m are 0 for the loss (m = L+1): its B reads a_L and s_{L+1}.
pub(super) fn footprint(
    dm: &crate::family::remat_chain::Dims,
    per: &[(i128, i128, i128, i128)],
    m: usize,
) -> i128 {
    dm.a[m] as i128 + dm.d[m] as i128 + per[m - 1].3 + dm.a[m - 1] as i128 + dm.d[m - 1] as i128
}

impl Terms {
    /// The terms at τ_m, the start of `B{m}` (m = 1..=L+1; the loss's is
    /// `remat-knapsack`, every m is `remat-knapsack-every`): the forwards and
    /// B_{L+1}..B_{m+1} before it, B_m..B_1 after it; K_m = {a_0, …, a_{m−2},
    /// s_1, …, s_{m−1}}; B_m's footprint d_m, a_m, s_m, a_{m−1}, d_{m−1}, o_b.
    pub(super) fn at(c: &RematChain, per: &[(i128, i128, i128, i128)], m: usize) -> Terms {
        let dm = c.dims();
        let a = |k: usize| dm.a[k] as i128;
        let sf: i128 =
            per.iter().map(|x| x.0).sum::<i128>() + per[m..].iter().map(|x| x.1).sum::<i128>();
        let sb: i128 = per[..m].iter().map(|x| x.1).sum();
        let kept: i128 = (0..m.saturating_sub(1)).map(a).sum::<i128>()
            + per[..m - 1].iter().map(|x| x.2).sum::<i128>();
        let fp = footprint(&dm, per, m);
        let v = (kept + fp - c.gpu_memory as i128).max(0);
        // Layer j < m's forward after τ_m re-produces a_j (in K_m for j < m−1) and s_j.
        let items: Vec<Item> = per[..m - 1]
            .iter()
            .enumerate()
            .map(|(i, x)| Item {
                cost: x.0,
                bytes: x.2 + if i + 2 < m { a(i + 1) } else { 0 },
            })
            .collect();
        // Any forward run after τ_m (the loss's too) makes R positive.
        let r0 = per.iter().map(|x| x.0).filter(|x| *x > 0).min().map(q);
        let bw = c.bandwidth.to_bandwidth();
        Terms {
            sf: q(sf),
            sb: q(sb),
            v: q(v),
            beta: Q::new(BigInt::from(bw.bytes), BigInt::from(bw.ticks)),
            bp: breakpoints(items),
            r0,
            one_sided: false,
            floor: Q::zero(),
        }
    }

    /// g(R) with X = max(0, V − W(R)).
    fn g(&self, r: &Q) -> Q {
        let x = (&self.v - freed(&self.bp, r)).max(Q::zero());
        let xt = x / &self.beta;
        let before = if self.one_sided {
            Q::zero()
        } else {
            self.sf.clone().max(xt.clone())
        };
        before + (&self.sb + r).max(xt).max(self.floor.clone())
    }

    /// The R ≥ r0 worth evaluating: r0, the breakpoints beyond it, and in
    /// each linear piece the points where X/β meets Σ_F or Σ_B + R, or X
    /// reaches 0 (g's kinks).
    fn candidates(&self, r0: &Q) -> Vec<Q> {
        let mut out = vec![r0.clone()];
        // Σ_B + R = floor.
        let at_floor = &self.floor - &self.sb;
        if &at_floor >= r0 {
            out.push(at_floor);
        }
        for win in self.bp.windows(2) {
            let ((ra, wa), (rb, wb)) = (&win[0], &win[1]);
            if rb < r0 {
                continue;
            }
            out.push(rb.clone());
            // On this piece X(R) = V − wa − s (R − ra), s = slope (bytes/tick).
            let s = (wb - wa) / (rb - ra);
            let x0 = &self.v - wa;
            let mut roots = vec![];
            if s.is_positive() {
                // X = 0.
                roots.push(ra + &x0 / &s);
                // X/β = Σ_F: V − wa − s(R − ra) = β Σ_F.
                roots.push(ra + (&x0 - &self.beta * &self.sf) / &s);
                // X/β = floor.
                roots.push(ra + (&x0 - &self.beta * &self.floor) / &s);
            }
            // X/β = Σ_B + R: x0 − s(R − ra) = β (Σ_B + R).
            let den = &s + &self.beta;
            if den.is_positive() {
                roots.push(ra + (&x0 - &self.beta * (&self.sb + ra)) / den);
            }
            out.extend(roots.into_iter().filter(|t| t >= ra && t <= rb && t >= r0));
        }
        out
    }

    pub(super) fn value(&self) -> Q {
        let mut best = self.g(&Q::zero());
        if let Some(r0) = &self.r0 {
            for r in self.candidates(r0) {
                best = best.min(self.g(&r));
            }
        }
        best
    }
}

/// The `remat-knapsack` value (at the loss's backward), exactly.
pub fn knapsack_bound(c: &RematChain) -> BigRational {
    let per = per_layer(c);
    Terms::at(c, &per, c.l() + 1).value()
}

/// The `remat-knapsack-every` value: the knapsack at the start of every
/// backward B_m, m = 1..=L+1, the largest; exactly.
pub fn knapsack_every_bound(c: &RematChain) -> BigRational {
    let per = per_layer(c);
    (1..=c.l() + 1)
        .map(|m| Terms::at(c, &per, m).value())
        .max()
        .unwrap_or_else(Q::zero)
}

pub struct RematKnapsack;

impl BoundMethod for RematKnapsack {
    fn name(&self) -> &'static str {
        "remat-knapsack"
    }
    fn applies(&self, f: &InstanceFile) -> bool {
        matches!(f, InstanceFile::RematChain(_))
    }
    fn bound(&self, f: &InstanceFile, _inst: &Instance) -> Result<LowerBound, BoundError> {
        certified(self.name(), f, knapsack_bound)
    }
}

/// `remat-knapsack-every`: `remat-knapsack` at the start of every backward,
/// the largest (`proofs/REMAT-BOUNDS.md`).
pub struct RematKnapsackEvery;

impl BoundMethod for RematKnapsackEvery {
    fn name(&self) -> &'static str {
        "remat-knapsack-every"
    }
    fn applies(&self, f: &InstanceFile) -> bool {
        matches!(f, InstanceFile::RematChain(_))
    }
    fn bound(&self, f: &InstanceFile, _inst: &Instance) -> Result<LowerBound, BoundError> {
        certified(self.name(), f, knapsack_every_bound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// W(R) over two items: 10 B for 2 ticks (5 B/tick), 3 B for 3 ticks.
    #[test]
    fn freed_is_the_fractional_knapsack() {
        let bp = breakpoints(vec![
            Item { cost: 3, bytes: 3 },
            Item { cost: 2, bytes: 10 },
        ]);
        assert_eq!(freed(&bp, &q(0)), q(0));
        assert_eq!(freed(&bp, &q(1)), q(5));
        assert_eq!(freed(&bp, &q(2)), q(10));
        assert_eq!(freed(&bp, &q(4)), q(12));
        assert_eq!(freed(&bp, &q(9)), q(13));
        // A free item counts at R = 0.
        let bp = breakpoints(vec![Item { cost: 0, bytes: 4 }, Item { cost: 2, bytes: 2 }]);
        assert_eq!(freed(&bp, &q(0)), q(4));
        assert_eq!(freed(&bp, &q(1)), q(5));
    }
}
