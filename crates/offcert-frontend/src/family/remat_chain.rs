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
//! A block with several options (rockmate's `RK_Chain`; `layers[i].options`)
//! compiles each option k to `Fall{ℓ}.{k}` producing `s{ℓ}.{k}` and `B{ℓ}.{k}`
//! reading it, its backwards in the variant group `bwd{ℓ}` (exactly once); a
//! layer's `ff_u_f`/`ff_o_f` set `F{ℓ}` apart from F_all. One-option files
//! compile as they always did.
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

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    /// The block's further options (rockmate's k = 1..nb_sol−1); option 0 is
    /// this layer's own `u_f`, `u_b`, `abar`, `o_f`, `o_b`. Empty: one option.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<RematOption>,
    /// The fast forward `F{ℓ}` that saves nothing (rockmate's `ff_fw[i]`);
    /// default `u_f`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ff_u_f: Option<i64>,
    /// Its temporary memory (rockmate's `ff_fwd_tmp[i]`); default `o_f`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ff_o_f: Option<u64>,
}

/// One option of a block (rockmate's `fw[i][k]`, `bw[i][k]`, `cbw[i+1][k]`,
/// `fwd_tmp[i][k]`, `bwd_tmp[i][k]`): the forward that saves this option's
/// intermediates and the backward that reads them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RematOption {
    pub u_f: i64,
    pub u_b: i64,
    /// |ā_ℓ| of this option (≥ |a_ℓ|).
    pub abar: u64,
    #[serde(default)]
    pub o_f: u64,
    #[serde(default)]
    pub o_b: u64,
}

/// A `remat_chain` feature beyond the appendix's problem, which `pofo` and
/// `offload-only` do not model (they refuse the instance, naming it; `rotor`
/// and the bounds take both).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RematFeature {
    /// `layers[layer].options` is not empty (several options per block).
    #[error("layers[{layer}] has several options (variant groups)")]
    SeveralOptions { layer: usize },
    /// `layers[layer]` has a fast forward of its own (`ff_u_f` / `ff_o_f`).
    #[error("layers[{layer}] has a fast forward distinct from its F_all")]
    FastForward { layer: usize },
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
    /// The allocator R7 counts with (`models/MODEL.md` §2.8; `exact` unless the file selects another).
    #[serde(default, skip_serializing_if = "Allocator::is_default")]
    pub allocator: Allocator,
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

    /// Every option of layer ℓ (1..=L): option 0 is the layer's own fields.
    pub fn options_of(&self, l: usize) -> Vec<RematOption> {
        let x = &self.layers[l - 1];
        let mut v = vec![RematOption {
            u_f: x.u_f,
            u_b: x.u_b,
            abar: x.abar,
            o_f: x.o_f,
            o_b: x.o_b,
        }];
        v.extend(x.options.iter().cloned());
        v
    }

    /// `Ok` when the chain is the appendix's problem (one option per block, the
    /// fast forward the same as F_all): what `pofo` models. Otherwise the first
    /// feature beyond it.
    pub fn plain(&self) -> Result<(), RematFeature> {
        for (i, x) in self.layers.iter().enumerate() {
            if !x.options.is_empty() {
                return Err(RematFeature::SeveralOptions { layer: i });
            }
            if x.ff_u_f.is_some_and(|v| v != x.u_f) || x.ff_o_f.is_some_and(|v| v != x.o_f) {
                return Err(RematFeature::FastForward { layer: i });
            }
        }
        Ok(())
    }

    /// Per layer ℓ = 1..=L (entry ℓ−1), per option k: the ids of `Fall{ℓ}.{k}`,
    /// `B{ℓ}.{k}` and `s{ℓ}.{k}`. Option 0 keeps the one-option ids
    /// ([`RematChain::fall_id`], [`RematChain::b_id`], [`RematChain::s_id`]);
    /// further options follow every one-option tensor and op, layer by layer.
    pub fn option_ids(&self) -> Vec<Vec<(OpId, OpId, TensorId)>> {
        let l = self.l();
        let (mut t, mut o) = (3 * l as u32 + 3, 3 * l as u32 + 2);
        let mut out = Vec::with_capacity(l);
        for k in 1..=l {
            let mut v = vec![(self.fall_id(k), self.b_id(k), self.s_id(k))];
            for _ in &self.layers[k - 1].options {
                v.push((OpId(o), OpId(o + 1), TensorId(t)));
                o += 2;
                t += 1;
            }
            out.push(v);
        }
        out
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
            if l.ff_u_f.is_some_and(|v| v < 0) {
                return Err(invalid(format!("layers[{i}].ff_u_f"), "must be >= 0"));
            }
            if l.options.len() > 1024 {
                return Err(invalid(
                    format!("layers[{i}].options"),
                    "more than 1024 options",
                ));
            }
            for (j, x) in l.options.iter().enumerate() {
                let f = |n: &str| format!("layers[{i}].options[{j}].{n}");
                if x.u_f < 0 {
                    return Err(invalid(f("u_f"), "must be >= 0"));
                }
                if x.u_b < 0 {
                    return Err(invalid(f("u_b"), "must be >= 0"));
                }
                if x.abar < l.a {
                    return Err(invalid(
                        f("abar"),
                        format!("|ā| = {} is smaller than |a| = {}", x.abar, l.a),
                    ));
                }
            }
        }
        if self.layers.iter().map(|l| l.options.len()).sum::<usize>() > 1 << 20 {
            return Err(invalid("layers", "more than 2^20 options in all"));
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
            bytes += l.ff_o_f.unwrap_or(0) as u128;
            ticks += l.ff_u_f.unwrap_or(0) as i128;
            for x in &l.options {
                bytes += x.abar as u128 + x.o_f as u128 + x.o_b as u128;
                ticks += x.u_f as i128 + x.u_b as i128;
            }
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

    /// The name of a per-option tensor or op: `X{ℓ}` for a one-option block,
    /// `X{ℓ}.{k}` when the block has several options.
    fn opt_name(&self, x: &str, l: usize, k: usize) -> String {
        if l <= self.l() && !self.layers[l - 1].options.is_empty() {
            format!("{x}{l}.{k}")
        } else {
            format!("{x}{l}")
        }
    }

    fn compile_tensors(&self, dm: &Dims) -> Vec<Tensor> {
        let l = self.l();
        let mut tensors = Vec::with_capacity(3 * l + 3);
        let act = |name: String, size: u64| Tensor {
            name,
            size: Bytes(size),
            kind: TensorKind::Activation,
            transferable: true,
            initial: Placement::Nowhere,
        };
        tensors.extend(super::chain_activations(
            "a",
            dm.a[..=l].iter().copied(),
            true,
        ));
        for k in 1..=l + 1 {
            tensors.push(act(self.opt_name("s", k, 0), dm.s[k]));
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
        for k in 1..=l {
            for (j, x) in self.layers[k - 1].options.iter().enumerate() {
                tensors.push(act(format!("s{k}.{}", j + 1), x.abar - dm.a[k]));
            }
        }
        tensors
    }

    /// `Fall{ℓ}.{k}` and `B{ℓ}.{k}` of layer ℓ ≤ L (one option: `Fall{ℓ}`, `B{ℓ}`,
    /// the backward required).
    fn option_ops(&self, k: usize, j: usize, x: &RematOption, s: TensorId) -> [Op; 2] {
        let one = self.layers[k - 1].options.is_empty();
        [
            remat_op(
                self.opt_name("Fall", k, j),
                x.u_f,
                vec![self.a_id(k - 1)],
                vec![self.a_id(k), s],
                vec![],
                x.o_f,
                false,
            ),
            remat_op(
                self.opt_name("B", k, j),
                x.u_b,
                vec![self.d_id(k), self.a_id(k), s, self.a_id(k - 1)],
                vec![self.d_id(k - 1)],
                vec![self.d_id(k), self.a_id(k), s],
                x.o_b,
                one,
            ),
        ]
    }

    pub fn compile(&self) -> Result<Instance, ModelError> {
        self.validate()?;
        let dm = self.dims();
        let l = self.l();
        let ids = self.option_ids();
        let opts: Vec<Vec<RematOption>> = (1..=l).map(|k| self.options_of(k)).collect();
        let mut ops = Vec::with_capacity(3 * l + 2);
        for (k, x) in (1..=l).zip(&self.layers) {
            ops.push(remat_op(
                format!("F{k}"),
                x.ff_u_f.unwrap_or(x.u_f),
                vec![self.a_id(k - 1)],
                vec![self.a_id(k)],
                vec![],
                x.ff_o_f.unwrap_or(x.o_f),
                false,
            ));
        }
        let mut b0 = Vec::with_capacity(l + 1);
        for k in 1..=l {
            let [f, b] = self.option_ops(k, 0, &opts[k - 1][0], self.s_id(k));
            ops.push(f);
            b0.push(b);
        }
        let last = l + 1;
        ops.push(remat_op(
            format!("Fall{last}"),
            dm.u_f[last],
            vec![self.a_id(l)],
            vec![self.s_id(last)],
            vec![],
            dm.o_f[last],
            false,
        ));
        ops.extend(b0);
        ops.push(remat_op(
            format!("B{last}"),
            dm.u_b[last],
            vec![self.a_id(l), self.s_id(last)],
            vec![self.d_id(l)],
            vec![self.s_id(last)],
            dm.o_b[last],
            true,
        ));
        let mut groups = vec![];
        for k in 1..=l {
            for (j, x) in opts[k - 1].iter().enumerate().skip(1) {
                ops.extend(self.option_ops(k, j, x, ids[k - 1][j].2));
            }
            if opts[k - 1].len() > 1 {
                groups.push(Group {
                    name: format!("bwd{k}"),
                    members: ids[k - 1].iter().map(|t| t.1).collect(),
                    runs: Multiplicity::ExactlyOnce,
                });
            }
        }
        Ok(Instance {
            name: self.name.clone(),
            family: "remat_chain".into(),
            tensors: self.compile_tensors(&dm),
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
            allocator: self.allocator,
            groups,
        })
    }

    /// The memory below which no schedule exists: the largest footprint of an
    /// op every schedule runs (B_ℓ: a_{ℓ-1} + ā_ℓ + δ_ℓ + δ_{ℓ-1} + o_b; F^ℓ_all:
    /// a_{ℓ-1} + ā_ℓ + o_f, which must run since only it produces s_ℓ). A block
    /// with several options runs one option's pair: the least over its options
    /// of the pair's larger footprint. `None` on overflow. It is also the least
    /// feasible memory (`proofs/REMAT-BUDGETS.md`): the keep-everything sequence
    /// of [`RematChain::least_options`], every other value offloaded, fits.
    pub fn min_memory(&self) -> Option<u64> {
        let mut m = 0u64;
        for (_, need) in self.least_options()? {
            m = m.max(need);
        }
        Some(m)
    }

    /// Per layer ℓ = 1..=L+1 (entry ℓ−1): the option whose pair
    /// (`Fall{ℓ}.{k}`, `B{ℓ}.{k}`) has the least larger footprint, and that
    /// footprint (the first such option on ties; the loss has one). `None` on
    /// overflow.
    pub fn least_options(&self) -> Option<Vec<(usize, u64)>> {
        let dm = self.dims();
        let mut out = Vec::with_capacity(dm.l + 1);
        for k in 1..=dm.l + 1 {
            let inp = if k <= dm.l { dm.a[k - 1] } else { dm.a[dm.l] };
            let opts = if k <= dm.l {
                self.options_of(k)
            } else {
                vec![RematOption {
                    u_f: dm.u_f[k],
                    u_b: dm.u_b[k],
                    abar: dm.s[k],
                    o_f: dm.o_f[k],
                    o_b: dm.o_b[k],
                }]
            };
            let mut least: Option<(usize, u64)> = None;
            for (j, x) in opts.iter().enumerate() {
                let fall = inp.checked_add(x.abar)?.checked_add(x.o_f)?;
                let b = inp
                    .checked_add(x.abar)?
                    .checked_add(dm.d[k])?
                    .checked_add(dm.d[k - 1])?
                    .checked_add(x.o_b)?;
                let need = fall.max(b);
                if least.is_none_or(|(_, n)| need < n) {
                    least = Some((j, need));
                }
            }
            out.push(least?);
        }
        Some(out)
    }

    /// The peak of the schedule that keeps everything (F_all for every layer, in
    /// order, then every backward; nothing recomputed or offloaded): the memory at
    /// which no rematerialisation or offloading is needed. With several options
    /// per block it runs option 0 of each. `None` on overflow.
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

/// An op of the compiled chain (GPU, nothing consumed or modified).
fn remat_op(
    name: String,
    dur: i64,
    reads: Vec<TensorId>,
    produces: Vec<TensorId>,
    frees: Vec<TensorId>,
    temp: u64,
    required: bool,
) -> Op {
    Op {
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
    }
}
