//! Lower bounds for `remat_chain`, proved in `proofs/REMAT-BOUNDS.md`:
//!
//! - `remat-compute`: Σ_ℓ (u_F + u_B) over the layers and the loss. Every B_ℓ
//!   runs, and needs s_ℓ, which only F^ℓ_all produces: each layer runs at least
//!   one forward and one backward on the one GPU stream. A block with several
//!   options runs one backward `B{ℓ}.{k}` (its group `bwd{ℓ}`), which reads
//!   `s{ℓ}.{k}`, produced only by `Fall{ℓ}.{k}`: the block adds
//!   min_k (u_F,k + u_B,k).
//! - `remat-split`: min(A, B) with B = remat-compute + the shortest forward op
//!   (some forward runs twice) and A = max(Σu_F, V/β) + max(Σu_B, V/β) (every
//!   forward runs once: the bytes V that cannot stay on the GPU when the loss's
//!   backward starts are offloaded before it and prefetched after it). A block
//!   with several options enters Σu_F, Σu_B and V with its least u_F, least u_B
//!   and least |ā| (each over its options, separately): whichever option a
//!   schedule picks, each term is at least that, and A grows with each term.
//!   One option per block: the appendix's bound unchanged.
//!
//! - `remat-knapsack` ([`knapsack`]): at the loss's backward, the bytes that
//!   cannot stay are offloaded (link time on both sides) or produced again
//!   after it (forward time after it), whichever mix costs least: a fractional
//!   knapsack over the layers' forwards. One option per block.
//! - `remat-knapsack-every` ([`knapsack`]): the same at the start of every
//!   backward B_m (the compute before it then includes B_{L+1}..B_{m+1}), the
//!   largest.
//! - `remat-windows` ([`windows`]): while B_m runs, its footprint holds the GPU;
//!   what B_{m−1}..B_i read and is not on the GPU then comes back between B_m's
//!   end and B_i's start, by prefetch or recomputation (a knapsack per window);
//!   the windows chain into a bound on the time after each B_m, which raises
//!   `remat-knapsack-every`'s after-part.
//! - `remat-relaxed-search` ([`relaxed`]): the optimum of a relaxation of the
//!   model (no data-loss rule, groups at least once, free 0-byte transfers),
//!   found by A* over integer instants with no op-sequence limit; small
//!   chains only (at most 2,000 ticks of compute).
//!
//! Owns: [`RematCompute`], [`RematSplit`], [`compute_bound`], [`split_bound`].
//! Must not import: heuristics, exact solvers, the checker.

pub mod knapsack;
pub mod relaxed;
pub mod windows;

use super::{BoundError, BoundMethod, Failure, LowerBound, Strength};
use crate::family::remat_chain::RematChain;
use crate::family::InstanceFile;
use crate::model::Instance;
use num_bigint::BigInt;
use num_rational::BigRational;

pub fn bounds() -> Vec<Box<dyn BoundMethod>> {
    vec![
        Box::new(RematCompute),
        Box::new(RematSplit),
        Box::new(knapsack::RematKnapsack),
        Box::new(knapsack::RematKnapsackEvery),
        Box::new(windows::RematWindows),
        Box::new(relaxed::RematRelaxedSearch),
    ]
}

fn chain<'a>(name: &'static str, f: &'a InstanceFile) -> Result<&'a RematChain, BoundError> {
    match f {
        InstanceFile::RematChain(c) => Ok(c),
        other => Err(BoundError::NotApplicable {
            bound: name,
            family: other.family().into(),
        }),
    }
}

/// Per layer ℓ = 1..=L+1 (entry ℓ − 1): the least u_F, the least u_B and the
/// least |ā| − |a| over its options (the loss: its own).
fn least_per_layer(c: &RematChain) -> Vec<(i128, i128, u128)> {
    let dm = c.dims();
    let mut v: Vec<(i128, i128, u128)> = (1..=dm.l)
        .map(|k| {
            let o = c.options_of(k);
            let f = o.iter().map(|x| x.u_f as i128).min().unwrap_or(0);
            let b = o.iter().map(|x| x.u_b as i128).min().unwrap_or(0);
            let s = o
                .iter()
                .map(|x| (x.abar - dm.a[k]) as u128)
                .min()
                .unwrap_or(0);
            (f, b, s)
        })
        .collect();
    let loss = dm.l + 1;
    v.push((
        dm.u_f[loss] as i128,
        dm.u_b[loss] as i128,
        dm.s[loss] as u128,
    ));
    v
}

/// The shortest forward op of layers 1..=L+1: every `Fall{ℓ}.{k}`, the fast
/// forward `F{ℓ}`, the loss's `Fall{L+1}`.
fn shortest_forward(c: &RematChain) -> i128 {
    let dm = c.dims();
    let layers = c.layers.iter().enumerate().map(|(i, x)| {
        let ff = x.ff_u_f.unwrap_or(x.u_f) as i128;
        c.options_of(i + 1)
            .iter()
            .map(|o| o.u_f as i128)
            .fold(ff, i128::min)
    });
    layers.fold(dm.u_f[dm.l + 1] as i128, i128::min)
}

fn infeasible(name: &'static str, c: &RematChain) -> Result<(), BoundError> {
    let least = c.min_memory().ok_or_else(|| BoundError::Failed {
        bound: name,
        cause: Failure::SizesOverflow,
    })?;
    if least > c.gpu_memory {
        return Err(BoundError::Infeasible {
            bound: name,
            reason: format!(
                "an op that every schedule runs needs {least} B > M_GPU = {} B",
                c.gpu_memory
            ),
        });
    }
    Ok(())
}

/// A certified `remat_chain` bound: the chain of `f`, refused where no
/// schedule exists, and `value` of it.
fn certified(
    name: &'static str,
    f: &InstanceFile,
    value: impl Fn(&RematChain) -> BigRational,
) -> Result<LowerBound, BoundError> {
    let c = chain(name, f)?;
    infeasible(name, c)?;
    Ok(LowerBound {
        value: value(c),
        source: name.into(),
        strength: Strength::Certified,
    })
}

pub struct RematCompute;

/// The `remat-compute` value: per layer the least u_F + u_B over its options,
/// plus the loss's.
pub fn compute_bound(c: &RematChain) -> i128 {
    let dm = c.dims();
    let layers: i128 = (1..=dm.l)
        .map(|k| {
            c.options_of(k)
                .iter()
                .map(|x| x.u_f as i128 + x.u_b as i128)
                .min()
                .unwrap_or(0)
        })
        .sum();
    layers + dm.u_f[dm.l + 1] as i128 + dm.u_b[dm.l + 1] as i128
}

impl BoundMethod for RematCompute {
    fn name(&self) -> &'static str {
        "remat-compute"
    }
    fn applies(&self, f: &InstanceFile) -> bool {
        matches!(f, InstanceFile::RematChain(_))
    }
    fn bound(&self, f: &InstanceFile, _inst: &Instance) -> Result<LowerBound, BoundError> {
        let c = chain(self.name(), f)?;
        infeasible(self.name(), c)?;
        Ok(LowerBound::from_ticks(
            compute_bound(c) as i64,
            self.name(),
            Strength::Certified,
        ))
    }
}

pub struct RematSplit;

/// The `remat-split` value, exactly.
pub fn split_bound(c: &RematChain) -> BigRational {
    let dm = c.dims();
    let l = dm.l;
    let least = least_per_layer(c);
    let sf: i128 = least.iter().map(|x| x.0).sum();
    let sb: i128 = least.iter().map(|x| x.1).sum();
    let int = |x: i128| BigRational::from_integer(BigInt::from(x));
    // Some forward runs twice.
    let b = int(compute_bound(c) + shortest_forward(c));
    // Every forward runs once: V bytes are on the CPU only when B_{L+1} starts.
    let kept: u128 = (0..l).map(|k| dm.a[k] as u128).sum::<u128>()
        + least[..l].iter().map(|x| x.2).sum::<u128>();
    let fp = dm.a[l] as u128 + dm.s[l + 1] as u128 + dm.d[l] as u128 + dm.o_b[l + 1] as u128;
    let v = (kept + fp).saturating_sub(c.gpu_memory as u128);
    let bw = c.bandwidth.to_bandwidth();
    let vt = BigRational::new(
        BigInt::from(v) * BigInt::from(bw.ticks),
        BigInt::from(bw.bytes),
    );
    let a = int(sf).max(vt.clone()) + int(sb).max(vt);
    a.min(b)
}

impl BoundMethod for RematSplit {
    fn name(&self) -> &'static str {
        "remat-split"
    }
    fn applies(&self, f: &InstanceFile) -> bool {
        matches!(f, InstanceFile::RematChain(_))
    }
    fn bound(&self, f: &InstanceFile, _inst: &Instance) -> Result<LowerBound, BoundError> {
        certified(self.name(), f, split_bound)
    }
}
