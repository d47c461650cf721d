//! Rule *completeness* for compute: the ops that ran, per device in start order,
//! against the instance's [`ComputeOrder`].
//!
//! Owns: [`check_order`] and [`OrderBreach`].
//! Must not import: anything outside offcert-core (no solver, heuristic or
//! `offcert` module; Cargo enforces it).

use crate::model::{ComputeOrder, Device, Instance, OpId};
use serde::{Deserialize, Serialize};

/// A mismatch between the ops that ran and the required order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum OrderBreach {
    /// At `position` of the device's sequence, `expected` should run but `found` did
    /// (`found_index` is the index into the given runs).
    OutOfOrder {
        device: Device,
        position: usize,
        expected: OpId,
        found: OpId,
        found_index: usize,
    },
    /// The sequence ended early: `expected` (and what follows) never ran.
    Missing {
        device: Device,
        position: usize,
        expected: OpId,
    },
    /// More runs than the order has.
    Extra {
        device: Device,
        position: usize,
        found: OpId,
        found_index: usize,
    },
    /// Free order: a required op never ran.
    NeverRan { op: OpId },
}

/// `runs` are the ops that ran, each with its index, sorted by start time.
/// Reports the first mismatch per device (after one, positions stop meaning much).
pub fn check_order(inst: &Instance, runs: &[(usize, OpId)]) -> Vec<OrderBreach> {
    let mut out = Vec::new();
    match &inst.order {
        // Slots (G2) are checked in a later commit; until then only required ops.
        ComputeOrder::Free | ComputeOrder::Slots(_) => {
            let mut ran = vec![false; inst.ops.len()];
            for (_, o) in runs {
                ran[o.ix()] = true;
            }
            for (i, op) in inst.ops.iter().enumerate() {
                if op.required && !ran[i] {
                    out.push(OrderBreach::NeverRan { op: OpId(i as u32) });
                }
            }
        }
        ComputeOrder::Fixed(seq) => {
            for device in [Device::Gpu, Device::Cpu] {
                let want: Vec<OpId> = seq
                    .iter()
                    .copied()
                    .filter(|o| inst.op(*o).device == device)
                    .collect();
                let got: Vec<(usize, OpId)> = runs
                    .iter()
                    .copied()
                    .filter(|(_, o)| inst.op(*o).device == device)
                    .collect();
                let mut k = 0;
                while k < want.len() && k < got.len() {
                    if want[k] != got[k].1 {
                        out.push(OrderBreach::OutOfOrder {
                            device,
                            position: k,
                            expected: want[k],
                            found: got[k].1,
                            found_index: got[k].0,
                        });
                        break;
                    }
                    k += 1;
                }
                if k == want.len().min(got.len()) {
                    if got.len() < want.len() {
                        out.push(OrderBreach::Missing {
                            device,
                            position: k,
                            expected: want[k],
                        });
                    } else if got.len() > want.len() {
                        out.push(OrderBreach::Extra {
                            device,
                            position: k,
                            found: got[k].1,
                            found_index: got[k].0,
                        });
                    }
                }
            }
        }
    }
    out
}
