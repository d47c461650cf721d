//! Lower bounds on the period of an `op_sequence` instance: the compute bound
//! and the transfer-volume bound (`proofs/OP-SEQUENCE-BOUND.md`).
//!
//! Owns: [`Compute`], [`TransferVolume`], [`transfer_volume`],
//! [`must_be_absent`] and the windows bound ([`windows`]).
//! Must not import: heuristics, exact solvers.
//!
//! Transfer volume. For function f let L_f be the used persistent variables
//! plus the non-persistent variables written before f and used at f or later,
//! and out_f the bytes f writes for the first time. At the start of f at most
//! M − out_f bytes of L_f hold GPU memory; every variable of L_f holding none
//! is prefetched before its next use, at least once per period. So the
//! host-to-device channel carries V = max_f (Σ_{L_f} b − (M − out_f))⁺ bytes
//! per period, and P ≥ V/β. Exact rational; certified.

pub mod windows;

use super::{BoundError, BoundMethod, LowerBound, Strength};
use crate::family::op_sequence::{Access, Uses};
use crate::family::InstanceFile;
use crate::model::Instance;
use num_bigint::BigInt;
use num_rational::BigRational;

pub fn bounds() -> Vec<Box<dyn BoundMethod>> {
    vec![
        Box::new(Compute),
        Box::new(TransferVolume),
        Box::new(windows::TransferWindows),
    ]
}

fn uses(name: &'static str, file: &InstanceFile) -> Result<Uses, BoundError> {
    match file {
        InstanceFile::OpSequence(s) => s.uses().map_err(|e| BoundError::Failed {
            bound: name,
            cause: e.into(),
        }),
        other => Err(BoundError::NotApplicable {
            bound: name,
            family: other.family().into(),
        }),
    }
}

fn infeasible(name: &'static str, u: &Uses, cap: u64) -> Result<(), BoundError> {
    let least = u.least_memory();
    if least > cap {
        let f = (0..u.n()).find(|&f| u.footprint(f) == least).unwrap_or(0);
        return Err(BoundError::Infeasible {
            bound: name,
            reason: format!("function {f} alone needs {least} B, memory is {cap} B"),
        });
    }
    Ok(())
}

/// Σ durations: one GPU stream (R2).
pub struct Compute;

impl BoundMethod for Compute {
    fn name(&self) -> &'static str {
        "op-compute"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        matches!(file, InstanceFile::OpSequence(_))
    }
    fn bound(&self, file: &InstanceFile, inst: &Instance) -> Result<LowerBound, BoundError> {
        let u = uses(self.name(), file)?;
        infeasible(self.name(), &u, inst.machine.gpu_capacity.0)?;
        Ok(LowerBound::from_ticks(
            inst.busiest_device_compute().0,
            self.name(),
            Strength::Certified,
        ))
    }
}

/// V bytes (module docs): the least host-to-device volume per period.
pub fn transfer_volume(u: &Uses, cap: u64) -> u128 {
    must_be_absent(u, cap).into_iter().max().unwrap_or(0)
}

/// Per function f: D_f = (Σ_{L_f} b − (M − out_f))⁺, the bytes of L_f that
/// hold no GPU memory at f's start (module docs).
pub fn must_be_absent(u: &Uses, cap: u64) -> Vec<u128> {
    let used = u.used_persistent();
    let pers: u128 = (0..u.bytes.len())
        .filter(|&v| used[v])
        .map(|v| u.bytes[v] as u128)
        .sum();
    let span = u.span();
    // live[f] = Σ b over non-persistent v with first(v) < f ≤ last(v).
    let mut delta = vec![0i128; u.n() + 2];
    for (v, s) in span.iter().enumerate() {
        if let (Some((a, b)), false) = (s, u.persistent[v]) {
            if a < b {
                delta[a + 1] += u.bytes[v] as i128;
                delta[b + 1] -= u.bytes[v] as i128;
            }
        }
    }
    let mut cur = 0i128;
    (0..u.n())
        .map(|f| {
            cur += delta[f];
            let out: u128 = u.uses[f]
                .iter()
                .filter(|(_, a)| *a == Access::Write)
                .map(|(v, _)| u.bytes[*v] as u128)
                .sum();
            let room = (cap as u128).saturating_sub(out);
            let need = pers + cur as u128;
            need.saturating_sub(room)
        })
        .collect()
}

pub struct TransferVolume;

impl BoundMethod for TransferVolume {
    fn name(&self) -> &'static str {
        "op-transfer-volume"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        matches!(file, InstanceFile::OpSequence(_))
    }
    fn bound(&self, file: &InstanceFile, inst: &Instance) -> Result<LowerBound, BoundError> {
        let u = uses(self.name(), file)?;
        let cap = inst.machine.gpu_capacity.0;
        infeasible(self.name(), &u, cap)?;
        let v = transfer_volume(&u, cap);
        let bw = inst.machine.bandwidth;
        Ok(LowerBound {
            value: BigRational::new(
                BigInt::from(v) * BigInt::from(bw.ticks),
                BigInt::from(bw.bytes),
            ),
            source: self.name().into(),
            strength: Strength::Certified,
        })
    }
}
