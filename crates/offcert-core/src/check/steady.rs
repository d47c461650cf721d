//! The steady-state rules of a cyclic schedule: the state at the period's end
//! is the state at its start (*state mismatch*), and a transfer that crosses
//! the period end moves the same version in every period (*not steady*).
//!
//! Owns: [`steady_rules`]. Must not import: anything outside this crate.

use super::sweep::Swept;
use super::Violation;
use crate::model::{Instance, TensorId};
use crate::schedule::{Event, EventId, Schedule};

/// Every steady-state violation (cyclic schedules only).
pub(super) fn steady_rules(inst: &Instance, s: &Schedule, swept: &Swept) -> Vec<Violation> {
    let mut out = state_mismatches(inst, swept);
    out.extend(unsteady_transfers(s, swept));
    out
}

/// A tensor whose GPU or CPU presence at P or at 2P differs from the start:
/// reported once, at the first boundary that differs.
fn state_mismatches(inst: &Instance, swept: &Swept) -> Vec<Violation> {
    let mut out = Vec::new();
    let (g0, c0) = &swept.start_boundary;
    let mut flagged = vec![false; inst.tensors.len()];
    for (g1, c1) in &swept.snapshots {
        for k in 0..inst.tensors.len() {
            if !flagged[k] && (g0[k] != g1[k] || c0[k] != c1[k]) {
                flagged[k] = true;
                out.push(Violation::StateMismatch {
                    tensor: TensorId(k as u32),
                    start_gpu: g0[k],
                    start_cpu: c0[k],
                    end_gpu: g1[k],
                    end_cpu: c1[k],
                });
            }
        }
    }
    out
}

/// A crossing transfer that read the latest value in one period copy and not
/// in the other.
fn unsteady_transfers(s: &Schedule, swept: &Swept) -> Vec<Violation> {
    let mut out = Vec::new();
    for (k, r) in swept.reads_latest.iter().enumerate() {
        if let [Some(a), Some(b)] = r {
            if a != b {
                if let Event::Transfer { tensor, .. } = s.events[k] {
                    out.push(Violation::NotSteady {
                        event: EventId(k as u32),
                        tensor,
                    });
                }
            }
        }
    }
    out
}
