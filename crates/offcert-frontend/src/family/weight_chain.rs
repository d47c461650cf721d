//! `weight_chain`: weight offloading, OFF(L, M_GPU, β) (weight paper §3).
//!
//! Layers `i = 1..=L` (array entry `i-1`). `F_i` reads `a_{i-1}`, `w_i` and
//! produces `a_i`. `B_i` reads `a_{i-1}`, `δ_i`, `w_i`, consumes `a_{i-1}` (the
//! paper deletes it once δw_i is computed, before δ_{i-1} exists), produces
//! `δ_{i-1}` (for i ≥ 2), holds δw_i as `|w_i|` of scratch, frees `δ_i` and
//! modifies `w_i` (the update is folded into B_i). `δ_L` is `a_L` itself (the
//! loss is neglected, "B_L comes right after F_L"), `|δ_i| = |a_i|`, and `a_0` is
//! the persistent input buffer. Memory during F_i and B_i is then exactly eq. (1)
//! plus the other resident weights. Full-duplex link, cyclic steady state. The
//! discount rule needs no special case: versions make an offload after B_i serve
//! the prefetches before F_i and B_i of the next iteration.
//!
//! Owns: [`WeightChain`], its file form and compilation.
//! Must not import: solvers (`lp`, `exact`), bounds, heuristics, the simulator,
//! traces, reports, the CLI.

use super::{invalid, BandwidthFile};
use crate::model::*;
use crate::units::{Bytes, Ticks};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightLayer {
    /// u_{F_i}
    pub u_f: i64,
    /// u_{B_i}
    pub u_b: i64,
    /// |w_i|
    pub w: u64,
    /// |a_i|
    pub a: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightChain {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Layers 1..=L.
    pub layers: Vec<WeightLayer>,
    /// |a_0|, the input.
    #[serde(default)]
    pub a0: u64,
    pub gpu_memory: u64,
    pub bandwidth: BandwidthFile,
    /// The release rule (`after_end` unless the file selects the relaxation).
    #[serde(default, skip_serializing_if = "ReleaseRule::is_default")]
    pub release: ReleaseRule,
    /// The allocator R7 counts with (`models/MODEL.md` §2.8; `exact` unless the file selects another).
    #[serde(default, skip_serializing_if = "Allocator::is_default")]
    pub allocator: Allocator,
}

impl WeightChain {
    pub fn l(&self) -> usize {
        self.layers.len()
    }
    /// a_i is tensor `i` (0..=L).
    pub fn a_id(&self, i: usize) -> TensorId {
        TensorId(i as u32)
    }
    /// w_i is tensor `L+i` (1..=L).
    pub fn w_id(&self, i: usize) -> TensorId {
        TensorId((self.l() + i) as u32)
    }
    /// δ_i for 1 ≤ i < L is tensor `2L+i`; δ_L is a_L.
    pub fn d_id(&self, i: usize) -> TensorId {
        if i == self.l() {
            self.a_id(i)
        } else {
            TensorId((2 * self.l() + i) as u32)
        }
    }
    /// F_i is op `i-1`, B_i is op `L+i-1`.
    pub fn f_id(&self, i: usize) -> OpId {
        OpId((i - 1) as u32)
    }
    pub fn b_id(&self, i: usize) -> OpId {
        OpId((self.l() + i - 1) as u32)
    }
    fn a_size(&self, i: usize) -> u64 {
        if i == 0 {
            self.a0
        } else {
            self.layers[i - 1].a
        }
    }

    pub fn compile(&self) -> Result<Instance, ModelError> {
        let l = self.l();
        if l == 0 {
            return Err(invalid("layers", "needs at least one layer"));
        }
        for (i, ly) in self.layers.iter().enumerate() {
            if ly.u_f < 0 {
                return Err(invalid(format!("layers[{i}].u_f"), "must be >= 0"));
            }
            if ly.u_b < 0 {
                return Err(invalid(format!("layers[{i}].u_b"), "must be >= 0"));
            }
        }
        let mut tensors = Vec::with_capacity(3 * l);
        tensors.extend(super::chain_activations(
            "a",
            (0..=l).map(|i| self.a_size(i)),
            false,
        ));
        for i in 1..=l {
            tensors.push(Tensor {
                name: format!("w{i}"),
                size: Bytes(self.layers[i - 1].w),
                kind: TensorKind::Weight,
                transferable: true,
                initial: Placement::Both,
            });
        }
        for i in 1..l {
            tensors.push(Tensor {
                name: format!("d{i}"),
                size: Bytes(self.a_size(i)),
                kind: TensorKind::Gradient,
                transferable: false,
                initial: Placement::Nowhere,
            });
        }
        let mut ops = Vec::with_capacity(2 * l);
        for i in 1..=l {
            ops.push(Op {
                name: format!("F{i}"),
                duration: Ticks(self.layers[i - 1].u_f),
                reads: vec![self.a_id(i - 1), self.w_id(i)],
                produces: vec![self.a_id(i)],
                consumes: vec![],
                frees: vec![],
                modifies: vec![],
                temp: Bytes(0),
                device: Device::Gpu,
                required: true,
                after: vec![],
            });
        }
        for i in 1..=l {
            let mut reads = vec![self.a_id(i - 1), self.w_id(i)];
            if i < l {
                reads.push(self.d_id(i));
            } else {
                // δ_L is a_L: read it (it is also a_{i} here, distinct from a_{i-1}).
                reads.push(self.a_id(l));
            }
            ops.push(Op {
                name: format!("B{i}"),
                duration: Ticks(self.layers[i - 1].u_b),
                reads,
                produces: if i >= 2 {
                    vec![self.d_id(i - 1)]
                } else {
                    vec![]
                },
                consumes: if i >= 2 {
                    vec![self.a_id(i - 1)]
                } else {
                    vec![]
                },
                frees: vec![self.d_id(i)],
                modifies: vec![self.w_id(i)],
                temp: Bytes(self.layers[i - 1].w),
                device: Device::Gpu,
                required: true,
                after: vec![],
            });
        }
        let mut order: Vec<OpId> = (1..=l).map(|i| self.f_id(i)).collect();
        order.extend((1..=l).rev().map(|i| self.b_id(i)));
        Ok(Instance {
            name: self.name.clone(),
            family: "weight_chain".into(),
            tensors,
            ops,
            order: ComputeOrder::Fixed(order),
            machine: Machine {
                gpu_capacity: Bytes(self.gpu_memory),
                cpu_capacity: None,
                duplex: Duplex::FullDuplex,
                bandwidth: self.bandwidth.to_bandwidth(),
            },
            mode: Mode::Cyclic,
            release: self.release,
            allocator: self.allocator,
            groups: vec![],
        })
    }

    /// MF_i = |w_i| + Σ_{k≤i} |a_k| (eq. (1)); `None` on overflow.
    pub fn mf(&self, i: usize) -> Option<u64> {
        let mut s = self.layers[i - 1].w;
        for k in 0..=i {
            s = s.checked_add(self.a_size(k))?;
        }
        Some(s)
    }
    /// MB_i = 2|w_i| + Σ_{k≤i} |a_k| (eq. (1)); `None` on overflow.
    pub fn mb(&self, i: usize) -> Option<u64> {
        self.mf(i)?.checked_add(self.layers[i - 1].w)
    }
    /// M_o of eq. (1) for every op, in the paper's step order (B_L … B_1,
    /// F_1 … F_L); `None` on overflow.
    pub fn op_memory(&self) -> Option<Vec<u64>> {
        let l = self.l();
        (0..2 * l)
            .map(|j| {
                if j < l {
                    self.mb(l - j)
                } else {
                    self.mf(j - l + 1)
                }
            })
            .collect()
    }
}
