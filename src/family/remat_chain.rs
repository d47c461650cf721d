//! `remat_chain`: rematerialisation combined with offloading on a chain
//! (Beaumont, Eyraud-Dubois & Shilova, NeurIPS 2021, appendix; design notes
//! `FAMILIES.md` §2; mapping in `models/MODEL.md` §4.5).
//!
//! Layers `ℓ = 1..=L` (array entry `ℓ-1`) and a loss layer `L+1`. Layer ℓ reads
//! `a_{ℓ-1}` and produces `a_ℓ`; `ā_ℓ ⊇ a_ℓ` is what its backward needs. The
//! compiled instance is one-shot with a [`ComputeOrder::Free`] order:
//!
//! - tensors `a{ℓ}` (ℓ = 0..L, |a_ℓ|), `s{ℓ}` (ℓ = 1..L+1, |ā_ℓ| − |a_ℓ|; for the
//!   loss its whole ā), `d{ℓ}` (ℓ = 0..L, |δ_ℓ|, not transferable);
//! - optional ops `F{ℓ}` (F_ck / F_∅: reads `a{ℓ-1}`, produces `a{ℓ}`) and
//!   `Fall{ℓ}` (F_all: produces `a{ℓ}` and `s{ℓ}`; the loss's produces `s{L+1}`);
//! - required ops `B{ℓ}` (reads `d{ℓ}`, `a{ℓ}`, `s{ℓ}`, `a{ℓ-1}`; produces
//!   `d{ℓ-1}`; frees `d{ℓ}`, `a{ℓ}`, `s{ℓ}`). The loss's `B{L+1}` reads `a{L}`,
//!   `s{L+1}`, produces `d{L}` and frees `s{L+1}`.
//!
//! F_∅ (which drops its input) and a backward that drops `a_{ℓ-1}` are written as
//! explicit `delete` events at the op's end: the same memory profile, no op
//! variants, and the checker applies unchanged.
//!
//! Owns: the file format, its validation (errors name the field) and the
//! compilation. Must not import: schedules, semantics, the checker, solvers.

use super::{invalid, BandwidthFile};
use crate::model::*;
use crate::units::{Bytes, Ticks};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RematLayer {
    /// u_{F_ℓ}
    pub u_f: i64,
    /// u_{B_ℓ}
    pub u_b: i64,
    /// |a_ℓ|
    pub a: u64,
    /// |ā_ℓ| ≥ |a_ℓ|
    pub abar: u64,
    /// o_{f_ℓ}
    #[serde(default)]
    pub o_f: u64,
    /// o_{b_ℓ}
    #[serde(default)]
    pub o_b: u64,
    /// |δ_ℓ| (default |a_ℓ|, as rotor's chains).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RematLoss {
    #[serde(default)]
    pub u_f: i64,
    #[serde(default)]
    pub u_b: i64,
    /// What the loss's backward needs besides a_L (its ā).
    #[serde(default)]
    pub abar: u64,
    #[serde(default)]
    pub o_f: u64,
    #[serde(default)]
    pub o_b: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RematChain {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Layers 1..=L.
    pub layers: Vec<RematLayer>,
    pub loss: RematLoss,
    /// |a_0|, the input (on the GPU at time 0).
    pub a0: u64,
    /// |δ_0| (default |a_0|).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta0: Option<u64>,
    /// M_GPU in bytes.
    pub gpu_memory: u64,
    /// β; the link is half duplex (the appendix's ε_G adds both directions).
    pub bandwidth: BandwidthFile,
    /// The release rule (`after_end` unless the file selects the relaxation).
    #[serde(default, skip_serializing_if = "ReleaseRule::is_default")]
    pub release: ReleaseRule,
}

/// Per-layer sizes and times, indexed ℓ = 0..=L+1 (entry 0 is the input, L+1 the loss).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dims {
    pub l: usize,
    pub u_f: Vec<i64>,
    pub u_b: Vec<i64>,
    /// |a_ℓ| (0 for the loss).
    pub a: Vec<u64>,
    /// |ā_ℓ| − |a_ℓ| (the loss: its ā; 0 for ℓ = 0).
    pub s: Vec<u64>,
    /// |δ_ℓ| (0 for the loss).
    pub d: Vec<u64>,
    pub o_f: Vec<u64>,
    pub o_b: Vec<u64>,
}

impl Dims {
    /// |ā_ℓ|.
    pub fn abar(&self, l: usize) -> u64 {
        self.a[l] + self.s[l]
    }
}

impl RematChain {
    /// The paper's L (layers before the loss).
    pub fn l(&self) -> usize {
        self.layers.len()
    }

    /// Tensor ids: a_ℓ is `ℓ` (0..=L), s_ℓ is `L+ℓ` (1..=L+1), d_ℓ is `2L+2+ℓ` (0..=L).
    pub fn a_id(&self, l: usize) -> TensorId {
        TensorId(l as u32)
    }
    pub fn s_id(&self, l: usize) -> TensorId {
        TensorId((self.l() + l) as u32)
    }
    pub fn d_id(&self, l: usize) -> TensorId {
        TensorId((2 * self.l() + 2 + l) as u32)
    }
    /// Op ids: F_ℓ is `ℓ-1` (1..=L), Fall_ℓ is `L+ℓ-1` (1..=L+1), B_ℓ is `2L+ℓ` (1..=L+1).
    pub fn f_id(&self, l: usize) -> OpId {
        OpId((l - 1) as u32)
    }
    pub fn fall_id(&self, l: usize) -> OpId {
        OpId((self.l() + l - 1) as u32)
    }
    pub fn b_id(&self, l: usize) -> OpId {
        OpId((2 * self.l() + l) as u32)
    }

    /// Validate the file's values, naming the offending field.
    pub fn validate(&self) -> Result<(), ModelError> {
        if self.layers.is_empty() {
            return Err(invalid(
                "layers",
                "needs at least one layer before the loss",
            ));
        }
        if self.layers.len() > 1 << 20 {
            return Err(invalid("layers", "more than 2^20 layers"));
        }
        for (i, l) in self.layers.iter().enumerate() {
            if l.u_f < 0 {
                return Err(invalid(format!("layers[{i}].u_f"), "must be >= 0"));
            }
            if l.u_b < 0 {
                return Err(invalid(format!("layers[{i}].u_b"), "must be >= 0"));
            }
            if l.abar < l.a {
                return Err(invalid(
                    format!("layers[{i}].abar"),
                    format!("|ā| = {} is smaller than |a| = {}", l.abar, l.a),
                ));
            }
        }
        if self.loss.u_f < 0 {
            return Err(invalid("loss.u_f", "must be >= 0"));
        }
        if self.loss.u_b < 0 {
            return Err(invalid("loss.u_b", "must be >= 0"));
        }
        if let BandwidthFile::Ratio { bytes, ticks } = self.bandwidth {
            if bytes == 0 || ticks == 0 {
                return Err(invalid("bandwidth", "bytes and ticks must be positive"));
            }
        } else if self.bandwidth == BandwidthFile::PerTick(0) {
            return Err(invalid("bandwidth", "must be positive"));
        }
        // Sums used by the DPs and bounds must fit: every byte and tick once.
        let mut bytes: u128 = self.a0 as u128 + self.delta0.unwrap_or(self.a0) as u128;
        let mut ticks: i128 = self.loss.u_f as i128 + self.loss.u_b as i128;
        bytes += self.loss.abar as u128 + self.loss.o_f as u128 + self.loss.o_b as u128;
        for l in &self.layers {
            bytes += l.abar as u128 + l.delta.unwrap_or(l.a) as u128;
            bytes += l.o_f as u128 + l.o_b as u128;
            ticks += l.u_f as i128 + l.u_b as i128;
        }
        if bytes > (u64::MAX >> 2) as u128 {
            return Err(ModelError::Overflow {
                field: "layers".into(),
                message: "total size exceeds 2^62 bytes".into(),
            });
        }
        if ticks > (i64::MAX >> 12) as i128 {
            return Err(ModelError::Overflow {
                field: "layers".into(),
                message: "total duration exceeds 2^51 ticks".into(),
            });
        }
        Ok(())
    }

    /// Sizes and times indexed by layer (after [`RematChain::validate`]).
    pub fn dims(&self) -> Dims {
        let l = self.l();
        let mut d = Dims {
            l,
            u_f: vec![0; l + 2],
            u_b: vec![0; l + 2],
            a: vec![0; l + 2],
            s: vec![0; l + 2],
            d: vec![0; l + 2],
            o_f: vec![0; l + 2],
            o_b: vec![0; l + 2],
        };
        d.a[0] = self.a0;
        d.d[0] = self.delta0.unwrap_or(self.a0);
        for (i, x) in self.layers.iter().enumerate() {
            let k = i + 1;
            d.u_f[k] = x.u_f;
            d.u_b[k] = x.u_b;
            d.a[k] = x.a;
            d.s[k] = x.abar - x.a;
            d.d[k] = x.delta.unwrap_or(x.a);
            d.o_f[k] = x.o_f;
            d.o_b[k] = x.o_b;
        }
        d.u_f[l + 1] = self.loss.u_f;
        d.u_b[l + 1] = self.loss.u_b;
        d.s[l + 1] = self.loss.abar;
        d.o_f[l + 1] = self.loss.o_f;
        d.o_b[l + 1] = self.loss.o_b;
        d
    }

    pub fn compile(&self) -> Result<Instance, ModelError> {
        self.validate()?;
        let dm = self.dims();
        let l = self.l();
        let mut tensors = Vec::with_capacity(3 * l + 3);
        for k in 0..=l {
            tensors.push(Tensor {
                name: format!("a{k}"),
                size: Bytes(dm.a[k]),
                kind: if k == 0 {
                    TensorKind::Input
                } else {
                    TensorKind::Activation
                },
                transferable: true,
                initial: if k == 0 {
                    Placement::Gpu
                } else {
                    Placement::Nowhere
                },
            });
        }
        for k in 1..=l + 1 {
            tensors.push(Tensor {
                name: format!("s{k}"),
                size: Bytes(dm.s[k]),
                kind: TensorKind::Activation,
                transferable: true,
                initial: Placement::Nowhere,
            });
        }
        for k in 0..=l {
            tensors.push(Tensor {
                name: format!("d{k}"),
                size: Bytes(dm.d[k]),
                kind: TensorKind::Gradient,
                transferable: false,
                initial: Placement::Nowhere,
            });
        }
        let op = |name: String, dur: i64, reads, produces, frees, temp, required| Op {
            name,
            duration: Ticks(dur),
            reads,
            produces,
            consumes: vec![],
            frees,
            modifies: vec![],
            temp: Bytes(temp),
            device: Device::Gpu,
            required,
            after: vec![],
        };
        let mut ops = Vec::with_capacity(3 * l + 2);
        for k in 1..=l {
            ops.push(op(
                format!("F{k}"),
                dm.u_f[k],
                vec![self.a_id(k - 1)],
                vec![self.a_id(k)],
                vec![],
                dm.o_f[k],
                false,
            ));
        }
        for k in 1..=l + 1 {
            let produces = if k <= l {
                vec![self.a_id(k), self.s_id(k)]
            } else {
                vec![self.s_id(k)]
            };
            ops.push(op(
                format!("Fall{k}"),
                dm.u_f[k],
                vec![self.a_id(k - 1)],
                produces,
                vec![],
                dm.o_f[k],
                false,
            ));
        }
        for k in 1..=l + 1 {
            let (reads, frees) = if k <= l {
                (
                    vec![self.d_id(k), self.a_id(k), self.s_id(k), self.a_id(k - 1)],
                    vec![self.d_id(k), self.a_id(k), self.s_id(k)],
                )
            } else {
                (vec![self.a_id(l), self.s_id(k)], vec![self.s_id(k)])
            };
            ops.push(op(
                format!("B{k}"),
                dm.u_b[k],
                reads,
                vec![self.d_id(k - 1)],
                frees,
                dm.o_b[k],
                true,
            ));
        }
        Ok(Instance {
            name: self.name.clone(),
            family: "remat_chain".into(),
            tensors,
            ops,
            order: ComputeOrder::Free,
            machine: Machine {
                gpu_capacity: Bytes(self.gpu_memory),
                cpu_capacity: None,
                duplex: Duplex::HalfDuplex,
                bandwidth: self.bandwidth.to_bandwidth(),
            },
            mode: Mode::OneShot,
            release: self.release,
            groups: vec![],
        })
    }

    /// The memory below which no schedule exists: the largest footprint of an
    /// op every schedule runs (B_ℓ: a_{ℓ-1} + ā_ℓ + δ_ℓ + δ_{ℓ-1} + o_b; F^ℓ_all:
    /// a_{ℓ-1} + ā_ℓ + o_f, which must run since only it produces s_ℓ). `None`
    /// on overflow.
    pub fn min_memory(&self) -> Option<u64> {
        let dm = self.dims();
        let mut m = 0u64;
        for k in 1..=dm.l + 1 {
            let inp = if k <= dm.l { dm.a[k - 1] } else { dm.a[dm.l] };
            let fall = inp.checked_add(dm.abar(k))?.checked_add(dm.o_f[k])?;
            let b = inp
                .checked_add(dm.abar(k))?
                .checked_add(dm.d[k])?
                .checked_add(dm.d[k - 1])?
                .checked_add(dm.o_b[k])?;
            m = m.max(fall).max(b);
        }
        Some(m)
    }

    /// The peak of the schedule that keeps everything (F_all for every layer, in
    /// order, then every backward; nothing recomputed or offloaded): the memory at
    /// which no rematerialisation or offloading is needed. `None` on overflow.
    pub fn store_all_peak(&self) -> Option<u64> {
        let dm = self.dims();
        let l = dm.l;
        let mut held: u64 = dm.a[0];
        let mut peak = held;
        for k in 1..=l + 1 {
            let out = dm.a[k].checked_add(dm.s[k])?;
            peak = peak.max(held.checked_add(out)?.checked_add(dm.o_f[k])?);
            held = held.checked_add(out)?;
        }
        for k in (1..=l + 1).rev() {
            // B_k holds d_k (already in `held`; 0 for the loss) and produces d_{k-1}.
            let run = held.checked_add(dm.d[k - 1])?.checked_add(dm.o_b[k])?;
            peak = peak.max(run);
            held = held + dm.d[k - 1] - dm.a[k] - dm.s[k] - dm.d[k];
        }
        Some(peak)
    }
}
