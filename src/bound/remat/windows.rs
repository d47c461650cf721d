//! `remat-windows`: a memory-aware lower bound for `remat_chain` that chains
//! windows of the backward phase, proved in `proofs/REMAT-BOUNDS.md` (section
//! `remat-windows`).
//!
//! While the first run of a backward B_m runs, its footprint (inputs, output,
//! scratch) holds the GPU, so at least V bytes of what B_{m−1}..B_1 still read
//! have no GPU buffer just before B_m ends. Of these, the tensors read by
//! B_{m−1}..B_i (at least V − |what B_{i−1}..B_1 read| bytes) come back in the
//! window between B_m's end and B_i's start: by a prefetch (link time, which
//! only starts after B_m ends) or by a forward of their layer (compute time in
//! the window, besides the backwards B_{m−1}..B_{i+1}). The least such window
//! D(m, i) = min over R of max(mid + R, X(R)/β) is a fractional knapsack as
//! in `remat-knapsack`. The windows chain: H(m) = u_B(m) + max_i (D(m, i) +
//! H(i)) bounds the time from B_m's start to the end, and the bound is the
//! largest over m of `remat-knapsack-every`'s g_m with its after-part raised
//! to at least H(m).
//!
//! Owns: [`RematWindows`], [`windows_bound`].
//! Must not import: heuristics, exact solvers, the checker.

use super::certified;
use super::knapsack::{breakpoints, footprint, freed, per_layer, q, Item, Terms};
use crate::bound::{BoundError, BoundMethod, LowerBound};
use crate::family::remat_chain::{Dims, RematChain};
use crate::family::InstanceFile;
use crate::model::Instance;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, Zero};

type Q = BigRational;
type PerLayer = [(i128, i128, i128, i128)];

/// D(m, i), 1 ≤ i < m ≤ L+1: a lower bound on τ_i − e_m, the time from the
/// end of B_m's first run to the start of B_i's.
fn window(c: &RematChain, dm: &Dims, per: &PerLayer, beta: &Q, m: usize, i: usize) -> Q {
    let a = |k: usize| dm.a[k] as i128;
    // The first runs of B_{m−1}..B_{i+1} lie in the window.
    let mid: i128 = per[i..m - 1].iter().map(|x| x.1).sum();
    // K_m \ K_i = {a_{i−1}, …, a_{m−2}, s_i, …, s_{m−1}} (s at its least).
    let bytes: i128 =
        (i - 1..=m - 2).map(a).sum::<i128>() + per[i - 1..m - 1].iter().map(|x| x.2).sum::<i128>();
    let v = bytes + footprint(dm, per, m) - c.gpu_memory as i128;
    if v <= 0 {
        return q(mid);
    }
    // Layer ℓ's forward in the window re-produces its tensors of K_m \ K_i.
    let items: Vec<Item> = ((i - 1).max(1)..m)
        .map(|l| Item {
            cost: per[l - 1].0,
            bytes: if l >= i { per[l - 1].2 } else { 0 } + if l + 2 <= m { a(l) } else { 0 },
        })
        .collect();
    let r0 = items
        .iter()
        .filter(|x| x.bytes > 0 && x.cost > 0)
        .map(|x| x.cost)
        .min()
        .map(q);
    least_window(&q(mid), &q(v), beta, &breakpoints(items), r0.as_ref())
}

/// min(h(0), inf_{R ≥ r0} h(R)) for h(R) = max(mid + R, X(R)/β), X(R) =
/// (V − W(R))⁺ (no r0: h(0)). h is the larger of an increasing and a
/// non-increasing function, so it is least at their crossing R*, and on
/// [r0, ∞) at max(R*, r0); R* is found on the first piece of W where
/// X/β − (mid + R) is no longer positive (exact rationals).
fn least_window(mid: &Q, v: &Q, beta: &Q, bp: &[(Q, Q)], r0: Option<&Q>) -> Q {
    let h = |r: &Q| -> Q {
        let x = (v - freed(bp, r)).max(Q::zero());
        (mid + r).max(x / beta)
    };
    let phi = |r: &Q, w: &Q| (v - w).max(Q::zero()) / beta - (mid + r);
    let at_zero = h(&Q::zero());
    let Some(r0) = r0 else {
        return at_zero;
    };
    // The crossing, and the ends of its piece (h is convex: extra points
    // can only confirm the least value).
    let mut near: Vec<Q> = vec![];
    if !phi(&bp[0].0, &bp[0].1).is_positive() {
        near.push(bp[0].0.clone());
    }
    for win in bp.windows(2) {
        if !near.is_empty() {
            break;
        }
        let ((ra, wa), (rb, wb)) = (&win[0], &win[1]);
        if !phi(rb, wb).is_positive() {
            // On this piece X = V − wa − s (R − ra) ≥ 0 at the crossing:
            // (V − wa − s (R − ra)) / β = mid + R.
            let s = (wb - wa) / (rb - ra);
            let r = (v - wa + &s * ra - beta * mid) / (s + beta);
            near.extend([r.max(ra.clone()).min(rb.clone()), ra.clone(), rb.clone()]);
        }
    }
    if near.is_empty() {
        // Beyond the last breakpoint X is constant: X/β = mid + R.
        let (rl, wl) = bp.last().expect("a breakpoint");
        let r = (v - wl).max(Q::zero()) / beta - mid;
        near.extend([r.max(rl.clone()), rl.clone()]);
    }
    near.into_iter()
        .map(|r| h(&r.max(r0.clone())))
        .fold(at_zero, |a, b| a.min(b))
}

/// H(m) for m = 1..=L+1 (entry 0 unused): a lower bound on T − τ_m, the time
/// from the start of B_m's first run to the makespan.
pub fn after_floors(c: &RematChain) -> Vec<Q> {
    let dm = c.dims();
    let per = per_layer(c);
    let bw = c.bandwidth.to_bandwidth();
    let beta = Q::new(BigInt::from(bw.bytes), BigInt::from(bw.ticks));
    let top = dm.l + 1;
    let mut h = vec![Q::zero(); top + 1];
    h[1] = q(per[0].1);
    for m in 2..=top {
        let best = (1..m)
            .map(|i| window(c, &dm, &per, &beta, m, i) + &h[i])
            .max()
            .unwrap_or_else(Q::zero);
        h[m] = q(per[m - 1].1) + best;
    }
    h
}

/// The `remat-windows` value, exactly: per backward B_m, the knapsack at its
/// start (`remat-knapsack-every`'s g_m) with the time after it at least H(m);
/// the largest over m.
pub fn windows_bound(c: &RematChain) -> BigRational {
    let per = per_layer(c);
    let h = after_floors(c);
    (1..=c.l() + 1)
        .map(|m| {
            let mut t = Terms::at(c, &per, m);
            t.floor = h[m].clone();
            t.value()
        })
        .max()
        .unwrap_or_else(Q::zero)
}

/// `remat-windows` (`proofs/REMAT-BOUNDS.md`).
pub struct RematWindows;

impl BoundMethod for RematWindows {
    fn name(&self) -> &'static str {
        "remat-windows"
    }
    fn applies(&self, f: &InstanceFile) -> bool {
        matches!(f, InstanceFile::RematChain(_))
    }
    fn bound(&self, f: &InstanceFile, _inst: &Instance) -> Result<LowerBound, BoundError> {
        certified(self.name(), f, windows_bound)
    }
}
