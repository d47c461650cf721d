//! Lower bounds for `activation_chain` (activation paper §3.2 and §4): one file
//! per bound, plus [`ChainProfile`], the per-op memory figures of §3.2 that the
//! bounds, the heuristics and the gap report's budget ranges share.
//!
//! Owns: [`ChainProfile`], [`Prop3`](prop3::Prop3),
//! [`FractionalOptimum`](fractional::FractionalOptimum),
//! [`WholeTensorWindows`](windows::WholeTensorWindows).
//! Must not import: heuristics, exact solvers, the checker.
//!
//! Why these bounds hold in *our* model (not only in the paper's) is argued in
//! `proofs/ACTIVATION-BOUNDS.md`.

pub mod fractional;
pub mod prop3;
pub mod windows;

use super::{BoundError, BoundMethod, LowerBound, Strength};
use crate::family::{ActivationChain, InstanceFile};
use crate::model::{Instance, ReleaseRule};
use num_rational::BigRational;

pub use fractional::{
    fractional_optimum, fractional_optimum_paper, fractional_optimum_relaxed,
    fractional_optimum_under, FractionalOptimum,
};
pub use prop3::{prop3, Prop3};
pub use windows::{whole_tensor_windows, WholeTensorWindows};

/// A certified bound of an activation chain under the compiled instance's
/// release rule (the CLI's `--release` overrides the file's): what
/// [`FractionalOptimum`] and [`WholeTensorWindows`] share, so that both are
/// registered through the one [`BoundMethod`] impl below.
pub trait RuleBound: Send + Sync {
    /// The bound's name, as reports print it.
    const SOURCE: &'static str;
    /// The bound's value in ticks for `c` under `rule`.
    fn value(c: &ActivationChain, rule: ReleaseRule) -> Result<BigRational, BoundError>;
}

impl<B: RuleBound> BoundMethod for B {
    fn name(&self) -> &'static str {
        B::SOURCE
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        file.activation_chain().is_some()
    }
    fn bound(&self, file: &InstanceFile, inst: &Instance) -> Result<LowerBound, BoundError> {
        let c = crate::bound::activation_chain(B::SOURCE, file)?;
        Ok(LowerBound {
            value: B::value(c, inst.release)?,
            source: B::SOURCE.into(),
            strength: Strength::Certified,
        })
    }
}

pub fn bounds() -> Vec<Box<dyn BoundMethod>> {
    vec![
        Box::new(Prop3),
        Box::new(FractionalOptimum),
        Box::new(WholeTensorWindows),
    ]
}

/// Per-op memory figures of a chain, in the fixed order F₀ … F_L, B_L … B₀.
///
/// `need[p]` is m_{F_i} or m_{B_i} of §3.2 (everything resident); `offloadable[p]`
/// is how much of it may be on the CPU when op `p` starts: Σ_{j<i} |x_j| (x_i and
/// x_{i+1} are read or produced by the op itself, the y's are never transferred).
/// Sums are in `u128`, so no chain that loads can overflow them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainProfile {
    pub need: Vec<u128>,
    pub offloadable: Vec<u128>,
    pub duration: Vec<i64>,
    /// Layer index i of op p, and whether it is F_i (true) or B_i.
    pub layer: Vec<(usize, bool)>,
    /// Σ_{j<i} |x_j| for i = 0..=L+2 (prefix sums of the activation sizes).
    pub x_prefix: Vec<u128>,
    /// Bytes of op p's inputs that no later op reads (x_{i+1}, y_{i+1} for B_i,
    /// plus x_0 for B_0): the relaxation `after_start` lets them go once p has
    /// started; the default rule holds them to p's end.
    pub dying: Vec<u128>,
}

impl ChainProfile {
    pub fn new(c: &ActivationChain) -> ChainProfile {
        let n = c.layers.len();
        let mut x_prefix = vec![0u128; n + 3];
        for i in 0..=n {
            x_prefix[i + 1] = x_prefix[i] + c.x_size(i) as u128;
        }
        let mut need = Vec::with_capacity(2 * n);
        let mut offloadable = Vec::with_capacity(2 * n);
        let mut duration = Vec::with_capacity(2 * n);
        let mut layer = Vec::with_capacity(2 * n);
        let mut dying = Vec::with_capacity(2 * n);
        for i in 0..n {
            let mut m = c.layers[i].ex_f as u128 + x_prefix[i + 2];
            if i == n - 1 {
                m += c.y_last as u128;
            }
            need.push(m);
            offloadable.push(x_prefix[i]);
            duration.push(c.layers[i].u_f);
            layer.push((i, true));
            dying.push(0);
        }
        for i in (0..n).rev() {
            need.push(
                c.layers[i].ex_b as u128
                    + c.y_size(i) as u128
                    + c.y_size(i + 1) as u128
                    + x_prefix[i + 2],
            );
            offloadable.push(x_prefix[i]);
            duration.push(c.layers[i].u_b);
            layer.push((i, false));
            dying.push(
                c.x_size(i + 1) as u128
                    + c.y_size(i + 1) as u128
                    + if i == 0 { c.x_size(0) as u128 } else { 0 },
            );
        }
        ChainProfile {
            need,
            offloadable,
            duration,
            layer,
            x_prefix,
            dying,
        }
    }

    /// M_peak of §3.2 (equal to [`ActivationChain::m_peak`]).
    pub fn m_peak(&self) -> u128 {
        self.need.iter().copied().max().unwrap_or(0)
    }

    /// The least GPU memory with which any schedule exists: every op needs at
    /// least what it reads, produces and uses as scratch, and the y's.
    pub fn min_memory(&self) -> u128 {
        self.need
            .iter()
            .zip(&self.offloadable)
            .map(|(n, o)| n - o)
            .max()
            .unwrap_or(0)
    }

    /// The first op (by name) whose irreducible need exceeds `capacity`, if any.
    pub fn first_infeasible(&self, capacity: u128) -> Option<(usize, u128)> {
        self.need
            .iter()
            .zip(&self.offloadable)
            .map(|(n, o)| n - o)
            .enumerate()
            .find(|(_, m)| *m > capacity)
    }

    pub fn op_name(&self, p: usize) -> String {
        let (i, fwd) = self.layer[p];
        format!("{}{}", if fwd { "F" } else { "B" }, i)
    }

    pub fn total_compute(&self) -> i128 {
        self.duration.iter().map(|d| *d as i128).sum()
    }
}

/// The error every activation bound gives for a budget below [`ChainProfile::min_memory`].
pub(crate) fn infeasible(
    bound: &'static str,
    prof: &ChainProfile,
    capacity: u64,
) -> Option<super::BoundError> {
    prof.first_infeasible(capacity as u128)
        .map(|(p, m)| super::BoundError::Infeasible {
            bound,
            reason: format!(
                "op {} needs at least {} B resident, capacity is {} B",
                prof.op_name(p),
                m,
                capacity
            ),
        })
}
