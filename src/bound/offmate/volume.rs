//! Certified lower bounds on the period of an `offmate` instance, re-derived in
//! exact rationals without a solver (`proofs/OFFMATE-ILP.md` §4).
//!
//! Let b ∈ [0, T_g] be the trainable bytes updated on the CPU in a period (T_g
//! all trainable bytes of used parameters), G₀ = Σ_i min_o (T_fwd^o + T_bwd^o),
//! S the bytes of used parameters, N their non-trainable part, k the states per
//! trainable value, M the GPU memory, and D(b) = S + k (T_g − b) − M the bytes of
//! parameters and GPU-updated states that are off the GPU at any one instant.
//! Every checked period P of the compiled instance satisfies, for its own b,
//!   GPU   P ≥ G₀ + (T_g − b)/α_G          CPU   P ≥ b/α_C
//!   h2d   P ≥ max(b, D(b), 0)/β           d2h   P ≥ max(b, D(b) − N)/β
//! (half duplex: the two transfer volumes share one channel). So P is at least
//! the minimum over b of the maximum of these lines, which is convex and
//! piecewise linear, hence attained at an end of [0, T_g] or where two lines
//! cross: [`OffmateVolume`]. [`OffmateCompute`] keeps only the GPU and CPU
//! lines. `Instance::busiest_device_compute` counts each option group apart
//! (Σ min T_fwd + Σ min T_bwd ≤ G₀) and no optimiser step (a group split over
//! two devices), so both bounds here dominate it.
//!
//! Owns: [`OffmateCompute`], [`OffmateVolume`], [`period_bound`].
//! Must not import: heuristics, exact solvers, the simulator.

use super::ilp::{per_byte, q};
use crate::bound::{BoundError, BoundMethod, LowerBound, Strength};
use crate::family::offmate::Offmate;
use crate::family::InstanceFile;
use crate::model::{Duplex, Instance};
use num_rational::BigRational;
use num_traits::{Signed, Zero};

/// Both bounds.
pub fn bounds() -> Vec<Box<dyn BoundMethod>> {
    vec![Box::new(OffmateCompute), Box::new(OffmateVolume)]
}

/// A line c + s·b.
#[derive(Clone, Debug)]
pub(super) struct Line {
    pub(super) c: BigRational,
    pub(super) s: BigRational,
}

impl Line {
    fn at(&self, b: &BigRational) -> BigRational {
        &self.c + &self.s * b
    }
}

/// The lines of the module docs; `volume` adds the link's.
fn lines(inst: &Offmate, volume: bool) -> (Vec<Line>, BigRational) {
    let groups = inst.param_groups();
    let g0: u64 = inst
        .blocks
        .iter()
        .map(|b| {
            b.options
                .iter()
                .map(|o| (o.t_fwd.0 + o.t_bwd.0) as u64)
                .min()
                .unwrap_or(0)
        })
        .sum();
    let tg = q(groups.iter().map(|g| g.trainable.0).sum());
    let s = q(groups.iter().map(|g| g.bytes.0).sum());
    let n = &s - &tg;
    let k = q(inst.optimizer.states as u64);
    let (a_g, a_c, beta) = (
        per_byte(inst.optimizer.gpu_speed),
        per_byte(inst.optimizer.cpu_speed),
        per_byte(inst.bandwidth),
    );
    let line = |c: BigRational, s: BigRational| Line { c, s };
    let zero = BigRational::zero;
    let mut v = vec![
        line(q(g0) + &tg * &a_g, -a_g.clone()),
        line(zero(), a_c.clone()),
    ];
    if volume {
        // D(b) = S + k T_g − M − k b.
        let d = line(&s + &k * &tg - q(inst.gpu_memory.0), -k.clone());
        let id = line(zero(), BigRational::from_integer(1.into()));
        let d_n = line(&d.c - &n, d.s.clone());
        let h2d = [id.clone(), d.clone(), line(zero(), zero())];
        let d2h = [id, d_n];
        let scaled = |l: &Line| line(&l.c * &beta, &l.s * &beta);
        match inst.duplex {
            Duplex::FullDuplex => v.extend(h2d.iter().chain(d2h.iter()).map(scaled)),
            Duplex::HalfDuplex => {
                for h in &h2d {
                    for o in &d2h {
                        v.push(scaled(&line(&h.c + &o.c, &h.s + &o.s)));
                    }
                }
            }
        }
    }
    (v, tg)
}

/// min over b ∈ [0, T_g] of the maximum of the lines (exact).
pub(super) fn min_of_max(lines: &[Line], hi: &BigRational) -> BigRational {
    let mut candidates = vec![BigRational::zero(), hi.clone()];
    for (i, a) in lines.iter().enumerate() {
        for b in &lines[i + 1..] {
            let ds = &a.s - &b.s;
            if ds.is_zero() {
                continue;
            }
            let x = (&b.c - &a.c) / ds;
            if !x.is_negative() && &x <= hi {
                candidates.push(x);
            }
        }
    }
    let value = |b: &BigRational| {
        lines
            .iter()
            .map(|l| l.at(b))
            .max()
            .unwrap_or_else(BigRational::zero)
    };
    candidates
        .iter()
        .map(value)
        .min()
        .unwrap_or_else(BigRational::zero)
        .max(BigRational::zero())
}

/// The bound of the module docs: compute only, or with the link volumes.
pub fn period_bound(inst: &Offmate, volume: bool) -> BigRational {
    let (lines, tg) = lines(inst, volume);
    min_of_max(&lines, &tg)
}

fn offmate_of<'a>(name: &'static str, file: &'a InstanceFile) -> Result<&'a Offmate, BoundError> {
    file.offmate().ok_or_else(|| BoundError::NotApplicable {
        bound: name,
        family: file.family().into(),
    })
}

fn certified(
    name: &'static str,
    file: &InstanceFile,
    volume: bool,
) -> Result<LowerBound, BoundError> {
    let inst = offmate_of(name, file)?;
    inst.validate().map_err(|e| BoundError::Failed {
        bound: name,
        cause: e.into(),
    })?;
    Ok(LowerBound {
        value: period_bound(inst, volume),
        source: name.into(),
        strength: Strength::Certified,
    })
}

/// GPU and CPU compute with the optimiser split between them.
pub struct OffmateCompute;

impl BoundMethod for OffmateCompute {
    fn name(&self) -> &'static str {
        "offmate-compute"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        file.offmate().is_some()
    }
    fn bound(&self, file: &InstanceFile, _inst: &Instance) -> Result<LowerBound, BoundError> {
        certified(self.name(), file, false)
    }
}

/// Compute plus the link volumes forced by memory and CPU updates.
pub struct OffmateVolume;

impl BoundMethod for OffmateVolume {
    fn name(&self) -> &'static str {
        "offmate-volume"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        file.offmate().is_some()
    }
    fn bound(&self, file: &InstanceFile, _inst: &Instance) -> Result<LowerBound, BoundError> {
        certified(self.name(), file, true)
    }
}
