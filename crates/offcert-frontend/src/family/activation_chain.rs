//! `activation_chain`: activation offloading on a chain (activation paper §3.1,
//! Problem 1).
//!
//! Layers `i = 0..=L` as in the paper: `F_i` reads `x_i` and produces `x_{i+1}`;
//! `B_i` reads `x_i`, `x_{i+1}`, `y_{i+1}` and produces `y_i`. The `layers` array
//! holds entry `i` for `i = 0..=L`; `x_last`, `y_last` give `|x_{L+1}|`, `|y_{L+1}|`.
//! Assumptions (A)–(E) of §3.1 become: only `x` tensors are transferable (A); a
//! half-duplex link (B); transfers last at least `|x|/β` (C); transfers overlap
//! compute (D, the link is a separate resource); and the memory rule of the core
//! model (E): an offloaded tensor is released at the end of its transfer and a
//! prefetched one is held from its start.
//!
//! Owns: [`ActivationChain`], its file form and compilation.
//! Must not import: solvers (`lp`, `exact`), bounds, heuristics, the simulator,
//! traces, reports, the CLI.

use super::{invalid, BandwidthFile};
use crate::model::*;
use crate::units::{Bytes, Ticks};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivationLayer {
    /// u_{F_i}
    pub u_f: i64,
    /// u_{B_i}
    pub u_b: i64,
    /// |x_i|
    pub x: u64,
    /// |y_i|
    #[serde(default)]
    pub y: u64,
    /// ex^F_i
    #[serde(default)]
    pub ex_f: u64,
    /// ex^B_i
    #[serde(default)]
    pub ex_b: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivationChain {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Layers 0..=L.
    pub layers: Vec<ActivationLayer>,
    /// |x_{L+1}|, the output of F_L.
    pub x_last: u64,
    /// |y_{L+1}|, the gradient B_L starts from (produced with x_{L+1} by F_L).
    #[serde(default)]
    pub y_last: u64,
    /// M_GPU in bytes.
    pub gpu_memory: u64,
    /// β.
    pub bandwidth: BandwidthFile,
    /// The release rule (`after_end` unless the file selects the relaxation).
    #[serde(default, skip_serializing_if = "ReleaseRule::is_default")]
    pub release: ReleaseRule,
    /// The allocator R7 counts with (`models/MODEL.md` §2.8; `exact` unless the file selects another).
    #[serde(default, skip_serializing_if = "Allocator::is_default")]
    pub allocator: Allocator,
}

impl ActivationChain {
    /// Number of layers minus one (the paper's L).
    pub fn l(&self) -> usize {
        self.layers.len() - 1
    }

    pub fn x_size(&self, i: usize) -> u64 {
        if i < self.layers.len() {
            self.layers[i].x
        } else {
            self.x_last
        }
    }

    pub fn y_size(&self, i: usize) -> u64 {
        if i < self.layers.len() {
            self.layers[i].y
        } else {
            self.y_last
        }
    }

    /// Tensor ids in the compiled instance: x_i is `i`, y_i is `L+2+i`.
    pub fn x_id(&self, i: usize) -> TensorId {
        TensorId(i as u32)
    }
    pub fn y_id(&self, i: usize) -> TensorId {
        TensorId((self.layers.len() + 1 + i) as u32)
    }
    /// Op ids: F_i is `i`, B_i is `L+1+i`.
    pub fn f_id(&self, i: usize) -> OpId {
        OpId(i as u32)
    }
    pub fn b_id(&self, i: usize) -> OpId {
        OpId((self.layers.len() + i) as u32)
    }

    pub fn compile(&self) -> Result<Instance, ModelError> {
        if self.layers.is_empty() {
            return Err(invalid("layers", "needs at least one layer"));
        }
        let n = self.layers.len(); // L+1
        for (i, l) in self.layers.iter().enumerate() {
            if l.u_f < 0 {
                return Err(invalid(format!("layers[{i}].u_f"), "must be >= 0"));
            }
            if l.u_b < 0 {
                return Err(invalid(format!("layers[{i}].u_b"), "must be >= 0"));
            }
        }
        let mut tensors = Vec::with_capacity(2 * n + 2);
        tensors.extend(super::chain_activations(
            "x",
            (0..=n).map(|i| self.x_size(i)),
            true,
        ));
        for i in 0..=n {
            tensors.push(Tensor {
                name: format!("y{i}"),
                size: Bytes(self.y_size(i)),
                kind: TensorKind::Gradient,
                transferable: false, // assumption (A)
                initial: Placement::Nowhere,
            });
        }
        let last = n - 1; // L
        let mut ops = Vec::with_capacity(2 * n);
        for i in 0..n {
            let mut produces = vec![self.x_id(i + 1)];
            if i == last {
                produces.push(self.y_id(i + 1));
            }
            ops.push(Op {
                name: format!("F{i}"),
                duration: Ticks(self.layers[i].u_f),
                reads: vec![self.x_id(i)],
                produces,
                consumes: vec![],
                frees: vec![],
                modifies: vec![],
                temp: Bytes(self.layers[i].ex_f),
                device: Device::Gpu,
                required: true,
                after: vec![],
            });
        }
        for i in 0..n {
            let mut frees = vec![self.x_id(i + 1), self.y_id(i + 1)];
            if i == 0 {
                frees.push(self.x_id(0));
            }
            ops.push(Op {
                name: format!("B{i}"),
                duration: Ticks(self.layers[i].u_b),
                reads: vec![self.x_id(i), self.x_id(i + 1), self.y_id(i + 1)],
                produces: vec![self.y_id(i)],
                consumes: vec![],
                frees,
                modifies: vec![],
                temp: Bytes(self.layers[i].ex_b),
                device: Device::Gpu,
                required: true,
                after: vec![],
            });
        }
        let mut order: Vec<OpId> = (0..n).map(|i| self.f_id(i)).collect();
        order.extend((0..n).rev().map(|i| self.b_id(i)));
        Ok(Instance {
            name: self.name.clone(),
            family: "activation_chain".into(),
            tensors,
            ops,
            order: ComputeOrder::Fixed(order),
            machine: Machine {
                gpu_capacity: Bytes(self.gpu_memory),
                cpu_capacity: None,
                duplex: Duplex::HalfDuplex,
                bandwidth: self.bandwidth.to_bandwidth(),
            },
            mode: Mode::OneShot,
            release: self.release,
            allocator: self.allocator,
            groups: vec![],
        })
    }

    /// m_{F_i} = ex^F_i + Σ_{j ≤ i+1} |x_j| (with |y_{L+1}| at F_L, which this
    /// model lets F_L produce), m_{B_i} = ex^B_i + |y_i| + |y_{i+1}| + Σ_{j≤i+1} |x_j|,
    /// and M_peak = their maximum (§3.2). `None` on overflow.
    pub fn m_peak(&self) -> Option<u64> {
        let n = self.layers.len();
        let mut prefix: u64 = 0;
        let mut peak: u64 = 0;
        for i in 0..n {
            prefix = prefix.checked_add(self.x_size(i))?;
            let upto = prefix.checked_add(self.x_size(i + 1))?;
            let mut mf = upto.checked_add(self.layers[i].ex_f)?;
            if i == n - 1 {
                mf = mf.checked_add(self.y_last)?;
            }
            let mb = upto
                .checked_add(self.layers[i].ex_b)?
                .checked_add(self.y_size(i))?
                .checked_add(self.y_size(i + 1))?;
            peak = peak.max(mf).max(mb);
        }
        Some(peak)
    }
}
