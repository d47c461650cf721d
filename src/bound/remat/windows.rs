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
//! in `remat-knapsack`; a recomputation in the window also waits for its
//! layer's input, which may not fit beside B_m and must be prefetched (or
//! recomputed from further down) first: with R > 0 the window is also at
//! least ζ + R. The windows chain: H(m) = u_B(m) + max_i (D(m, i) +
//! H(i)) bounds the time from B_m's start to the end, and the bound is the
//! largest over m of `remat-knapsack-every`'s g_m with its after-part raised
//! to at least H(m).
//!
//! Owns: [`RematWindows`], [`windows_bound`].
//! Must not import: heuristics, exact solvers, the checker.

use super::certified;
use super::knapsack::{breakpoints, footprint, freed, per_layer, q, Item, Terms};
use crate::bound::{BoundError, BoundMethod, Failure, LowerBound};
use crate::family::remat_chain::{Dims, RematChain};
use crate::family::InstanceFile;
use crate::model::{Instance, ReleaseRule};
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, Zero};

type Q = BigRational;
type PerLayer = [(i128, i128, i128, i128)];

/// D(m, i), 1 ≤ i < m ≤ L+1: a lower bound on τ_i − e_m, the time from the
/// end of B_m's first run to the start of B_i's.
fn window(
    c: &RematChain,
    dm: &Dims,
    per: &PerLayer,
    beta: &Q,
    lead: &[Q],
    m: usize,
    i: usize,
) -> Q {
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
    // A recomputation in the window first waits for the input of the
    // window's first recomputed layer: ζ = the least lead time of an item.
    let zeta = ((i - 1).max(1)..m)
        .zip(&items)
        .filter(|(_, x)| x.bytes > 0 && x.cost > 0)
        .map(|(l, _)| lead[l].clone())
        .min()
        .unwrap_or_else(Q::zero);
    let after = q(mid).max(zeta);
    least_window(
        &q(mid),
        &after,
        &q(v),
        beta,
        &breakpoints(items),
        r0.as_ref(),
    )
}

/// ζ_p for p = 1..m−1 (entry 0 unused) at the cut in B_m: the least time
/// from e_m to the start of a forward of layer p that no other forward of
/// the window precedes, min over q ≤ p of z_q + Σ_{ℓ=q}^{p−1} f(ℓ), where
/// z_q = |a_{q−1}|/β when a_{q−1} cannot be on the GPU beside B_m's least
/// footprint (fp_m + |a_{q−1}| > M_GPU: it must be prefetched first), else 0.
fn lead_times(dm: &Dims, per: &PerLayer, beta: &Q, m: usize, mem: i128) -> Vec<Q> {
    let fp = footprint(dm, per, m);
    let z = |k: usize| {
        let s = dm.a[k - 1] as i128;
        if fp + s > mem {
            q(s) / beta
        } else {
            Q::zero()
        }
    };
    let mut out = vec![Q::zero(); m];
    for p in 1..m {
        out[p] = if p == 1 {
            z(1)
        } else {
            z(p).min(&out[p - 1] + q(per[p - 2].0))
        };
    }
    out
}

/// min(h_mid(0), inf_{R ≥ r0} h_after(R)) for h_c(R) = max(c + R, X(R)/β),
/// X(R) = (V − W(R))⁺ (no r0: h_mid(0)). h_after is the larger of an
/// increasing and a non-increasing function, so it is least at their
/// crossing R*, and on [r0, ∞) at max(R*, r0); R* is found on the first
/// piece of W where X/β − (after + R) is no longer positive (exact
/// rationals).
fn least_window(mid: &Q, after: &Q, v: &Q, beta: &Q, bp: &[(Q, Q)], r0: Option<&Q>) -> Q {
    let x = |r: &Q| (v - freed(bp, r)).max(Q::zero()) / beta;
    let at_zero = (mid.clone()).max(x(&Q::zero()));
    let mid = after;
    let h = |r: &Q| -> Q { (mid + r).max(x(r)) };
    let phi = |r: &Q, w: &Q| (v - w).max(Q::zero()) / beta - (mid + r);
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
    let mem = c.gpu_memory as i128;
    for m in 2..=top {
        let lead = lead_times(&dm, &per, &beta, m, mem);
        let best = (1..m)
            .map(|i| window(c, &dm, &per, &beta, &lead, m, i) + &h[i])
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
    fn bound(&self, f: &InstanceFile, inst: &Instance) -> Result<LowerBound, BoundError> {
        // The cut just before B_m's end needs B_m's inputs still held: under
        // `after_start` they may be released at its start.
        if inst.release != ReleaseRule::AfterEnd {
            return Err(BoundError::Failed {
                bound: self.name(),
                cause: Failure::OutsideSearch(
                    "remat-windows is proved for the release rule `after_end` only".into(),
                ),
            });
        }
        certified(self.name(), f, windows_bound)
    }
}
