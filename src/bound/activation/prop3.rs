//! Proposition 3 of the activation paper:
//! LB = max(Σ_i (u_{F_i} + u_{B_i}), 2 (M_peak − M_GPU) / β).
//!
//! The first term: the ops run one at a time on the compute stream. The second:
//! when the peak op starts, at least M_peak − M_GPU bytes of activations it does
//! not read are only on the CPU (Proposition 2); each was offloaded before and must
//! be prefetched after, on one half-duplex link at most β bytes per tick.
//! Certified: computed here in exact rationals.
//!
//! Owns: the Proposition 3 bound.
//! Must not import: exact solvers, heuristics, the simulator, traces, reports,
//! the CLI.

use super::{infeasible, ChainProfile};
use crate::bound::{BoundError, BoundMethod, LowerBound, Strength};
use crate::family::{ActivationChain, InstanceFile};
use crate::model::Instance;
use num_bigint::BigInt;
use num_rational::BigRational;

pub struct Prop3;

pub const SOURCE: &str = "prop3";

/// The bound's value in ticks, exact. The caller checks feasibility.
pub fn prop3(c: &ActivationChain) -> BigRational {
    let prof = ChainProfile::new(c);
    let compute = BigRational::from_integer(BigInt::from(prof.total_compute()));
    let q = prof.m_peak().saturating_sub(c.gpu_memory as u128);
    let beta = c.bandwidth.to_bandwidth();
    // 2q/β = 2 q τ / b ticks.
    let transfer = BigRational::new(
        BigInt::from(2u8) * BigInt::from(q) * BigInt::from(beta.ticks),
        BigInt::from(beta.bytes),
    );
    compute.max(transfer)
}

impl BoundMethod for Prop3 {
    fn name(&self) -> &'static str {
        SOURCE
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        file.activation_chain().is_some()
    }
    fn bound(&self, file: &InstanceFile, _inst: &Instance) -> Result<LowerBound, BoundError> {
        let c = crate::bound::activation_chain(SOURCE, file)?;
        if let Some(e) = infeasible(SOURCE, &ChainProfile::new(c), c.gpu_memory) {
            return Err(e);
        }
        Ok(LowerBound {
            value: prop3(c),
            source: SOURCE.into(),
            strength: Strength::Certified,
        })
    }
}
