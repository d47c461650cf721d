//! Generators for the NP-hardness reductions of Theorem 1 of both papers
//! (3-partition → offloading), for small m, with time rescaled so that every
//! transfer time is whole (`proofs/REDUCTIONS.md`).
//!
//! Owns: [`ThreePartition`] and the instance builders. The papers set β = V
//! bytes per time unit; here one time unit is V ticks, so β = 1 byte per tick,
//! every duration is multiplied by V and the target T = 2m becomes 2mV ticks.
//! Must not import: solvers. The tests run the exact methods on these.

use crate::family::{
    activation_chain::ActivationLayer, weight_chain::WeightLayer, ActivationChain, BandwidthFile,
    WeightChain,
};

/// A 3-partition instance: 3m numbers summing to mV.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreePartition {
    pub nums: Vec<u64>,
    pub m: usize,
    pub v: u64,
}

impl ThreePartition {
    /// `None` unless there are 3m numbers summing to mV.
    pub fn new(nums: Vec<u64>) -> Option<ThreePartition> {
        if nums.is_empty() || nums.len() % 3 != 0 {
            return None;
        }
        let m = nums.len() / 3;
        let s: u64 = nums.iter().sum();
        if s % m as u64 != 0 {
            return None;
        }
        Some(ThreePartition {
            v: s / m as u64,
            m,
            nums,
        })
    }

    /// Does every number lie strictly between V/4 and V/2 (so that any subset
    /// summing to V has exactly three elements)?
    pub fn strict(&self) -> bool {
        self.nums.iter().all(|&u| 4 * u > self.v && 2 * u < self.v)
    }

    /// Brute force: can the numbers be split into m triples of sum V?
    pub fn solvable(&self) -> bool {
        fn go(left: &mut Vec<u64>, v: u64) -> bool {
            if left.is_empty() {
                return true;
            }
            let a = left.remove(0);
            for i in 0..left.len() {
                for j in i + 1..left.len() {
                    if a + left[i] + left[j] == v {
                        let (b, c) = (left[i], left[j]);
                        left.remove(j);
                        left.remove(i);
                        if go(left, v) {
                            return true;
                        }
                        left.insert(i, b);
                        left.insert(j, c);
                    }
                }
            }
            left.insert(0, a);
            false
        }
        go(&mut self.nums.clone(), self.v)
    }

    /// The target makespan (period) 2m time units, in ticks of 1/V unit.
    pub fn target(&self) -> i64 {
        2 * self.m as i64 * self.v as i64
    }

    /// Activation paper, §3.3, exactly as stated (with |x_0| = u_0, since the
    /// text lists only u_1..u_{3m-1} for 3m numbers): L = 5m, M = mV, β = V,
    /// u_F = 1 and |x| = 0 at i = 3m+2k, |x| = V at i = 3m+2k+1 for
    /// k ∈ [0, m], u_B = 0 except u_{B_{3m}} = m, |y| = 0.
    pub fn activation_as_stated(&self) -> ActivationChain {
        let (m, v) = (self.m, self.v);
        let l = 5 * m;
        let mut layers = Vec::with_capacity(l + 1);
        let mut x_last = 0;
        for i in 0..=l + 1 {
            let (u_f, x) = if i < 3 * m {
                (0, self.nums[i])
            } else if (i - 3 * m) % 2 == 0 {
                (1, 0)
            } else {
                (0, v)
            };
            if i == l + 1 {
                x_last = x;
                break;
            }
            let u_b = if i == 3 * m { m as i64 } else { 0 };
            layers.push(ActivationLayer {
                u_f: u_f * v as i64,
                u_b: u_b * v as i64,
                x,
                y: 0,
                ex_f: 0,
                ex_b: 0,
            });
        }
        ActivationChain {
            name: format!("act-3partition-as-stated-m{m}-V{v}"),
            note: Some(format!(
                "Activation paper Thm 1 construction as stated, for 3-partition {:?} (V={v}); time in units of 1/V (beta = V per unit = 1 B/tick); target T = 2m units = {} ticks",
                self.nums,
                self.target()
            )),
            layers,
            x_last,
            y_last: 0,
            gpu_memory: m as u64 * v,
            bandwidth: BandwidthFile::PerTick(1),
            release: Default::default(),
            allocator: Default::default(),
        }
    }

    /// Activation paper, §3.3, with the indices repaired so that the proof's
    /// schedule is valid (proofs/REDUCTIONS.md §1): L = 5m−1, |x_i| = u_i for
    /// i < 3m; for k ∈ [0, m): F_{3m+2k} lasts 1 and produces x_{3m+2k+1} of size
    /// 0, F_{3m+2k+1} lasts 0 and produces x_{3m+2k+2} of size V; |x_{3m}| = 0.
    pub fn activation_repaired(&self) -> ActivationChain {
        let (m, v) = (self.m, self.v);
        let l = 5 * m - 1;
        let size = |i: usize| -> u64 {
            if i < 3 * m {
                self.nums[i]
            } else if i == 3 * m || (i - 3 * m) % 2 == 1 {
                0
            } else {
                v
            }
        };
        let layers = (0..=l)
            .map(|i| ActivationLayer {
                u_f: if i >= 3 * m && (i - 3 * m) % 2 == 0 {
                    v as i64
                } else {
                    0
                },
                u_b: if i == 3 * m { (m as u64 * v) as i64 } else { 0 },
                x: size(i),
                y: 0,
                ex_f: 0,
                ex_b: 0,
            })
            .collect();
        ActivationChain {
            name: format!("act-3partition-repaired-m{m}-V{v}"),
            note: Some(format!(
                "Activation paper Thm 1 construction with repaired indices (proofs/REDUCTIONS.md), 3-partition {:?} (V={v}); 1 B/tick; target {} ticks",
                self.nums,
                self.target()
            )),
            layers,
            x_last: size(l + 1),
            y_last: 0,
            gpu_memory: m as u64 * v,
            bandwidth: BandwidthFile::PerTick(1),
            release: Default::default(),
            allocator: Default::default(),
        }
    }

    /// Weight paper, §4, as stated: L = 5m, β = V, M = mV + V, T = 2m;
    /// u_F = 0 and |a| = 0 except u_{F_{2m}} = m; u_B = 0, |w_i| = V for odd
    /// i ≤ 2m−1; u_B = 1, |w_i| = 0 for even i ≤ 2m; u_B = 0, |w_i| = x_{i−2m}
    /// for 2m < i ≤ 5m.
    pub fn weight_as_stated(&self) -> WeightChain {
        let (m, v) = (self.m, self.v);
        let vt = v as i64;
        let layers = (1..=5 * m)
            .map(|i| {
                let (u_b, w) = if i <= 2 * m {
                    if i % 2 == 1 {
                        (0, v)
                    } else {
                        (vt, 0)
                    }
                } else {
                    (0, self.nums[i - 2 * m - 1])
                };
                WeightLayer {
                    u_f: if i == 2 * m { m as i64 * vt } else { 0 },
                    u_b,
                    w,
                    a: 0,
                }
            })
            .collect();
        WeightChain {
            name: format!("weight-3partition-m{m}-V{v}"),
            note: Some(format!(
                "Weight paper Thm 1 construction as stated, 3-partition {:?} (V={v}); 1 B/tick; target period {} ticks",
                self.nums,
                self.target()
            )),
            layers,
            a0: 0,
            gpu_memory: m as u64 * v + v,
            bandwidth: BandwidthFile::PerTick(1),
            release: Default::default(),
            allocator: Default::default(),
        }
    }
}
