//! Rule *completeness* for compute: the ops that ran, per device in start order,
//! against the instance's [`ComputeOrder`]; rule *groups* (R11: how often each
//! variant group runs) and rule *slots* (R12: the GPU runs of slotted groups
//! fill the slots in order).
//!
//! Owns: [`check_order`] and [`OrderBreach`].
//! Must not import: anything outside offcert-core (no solver, heuristic or
//! `offcert` module; Cargo enforces it).

use crate::model::{ComputeOrder, Device, GroupId, Instance, Multiplicity, OpId};
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
    /// R11: no member of the group ran.
    GroupNeverRan { group: GroupId },
    /// R11: an exactly-once group ran twice: `first` and `second` are the
    /// indices of its first two runs (in start order).
    GroupRanTwice {
        group: GroupId,
        first: usize,
        second: usize,
    },
    /// R12: the `position`-th GPU run of a slotted group's member should fill a
    /// slot of `expected`, but `found` (run `found_index`) ran there.
    SlotOutOfOrder {
        position: usize,
        expected: GroupId,
        found: OpId,
        found_index: usize,
    },
    /// R12: a GPU run of a slotted group's member at `position`, after every
    /// slot that is to be filled on the GPU is filled.
    SlotExtra {
        position: usize,
        found: OpId,
        found_index: usize,
    },
}

/// `runs` are the ops that ran, each with its index, sorted by start time
/// (one period of a cyclic schedule). Reports the first mismatch per device
/// (after one, positions stop meaning much), then the groups' breaches (R11).
pub fn check_order(inst: &Instance, runs: &[(usize, OpId)]) -> Vec<OrderBreach> {
    let mut out = Vec::new();
    match &inst.order {
        ComputeOrder::Free => never_ran(inst, runs, &mut out),
        ComputeOrder::Slots(slots) => {
            never_ran(inst, runs, &mut out);
            check_slots(inst, slots, runs, &mut out);
        }
        ComputeOrder::Fixed(seq) => check_fixed(inst, seq, runs, &mut out),
    }
    check_groups(inst, runs, &mut out);
    out
}

/// Free and slotted orders: every required op runs at least once.
fn never_ran(inst: &Instance, runs: &[(usize, OpId)], out: &mut Vec<OrderBreach>) {
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

/// R11: each group runs at least once, and an exactly-once group once.
fn check_groups(inst: &Instance, runs: &[(usize, OpId)], out: &mut Vec<OrderBreach>) {
    let mut seen: Vec<Vec<usize>> = vec![Vec::new(); inst.groups.len()];
    for (i, o) in runs {
        if let Some(g) = inst.group_of(*o) {
            seen[g.ix()].push(*i);
        }
    }
    for (g, (grp, ran)) in inst.groups.iter().zip(&seen).enumerate() {
        let group = GroupId(g as u32);
        match (ran.as_slice(), grp.runs) {
            ([], _) => out.push(OrderBreach::GroupNeverRan { group }),
            ([first, second, ..], Multiplicity::ExactlyOnce) => {
                out.push(OrderBreach::GroupRanTwice {
                    group,
                    first: *first,
                    second: *second,
                })
            }
            _ => {}
        }
    }
}

/// R12: the GPU runs of slotted groups' members, in start order, fill the
/// slots in order, one run each; a slot whose group has no GPU run (it ran on
/// the CPU, or never: R11 reports that) is skipped. Reports the first mismatch.
fn check_slots(
    inst: &Instance,
    slots: &[GroupId],
    runs: &[(usize, OpId)],
    out: &mut Vec<OrderBreach>,
) {
    let slotted = |o: OpId| inst.group_of(o).filter(|g| slots.contains(g));
    let got: Vec<(usize, OpId, GroupId)> = runs
        .iter()
        .filter(|(_, o)| inst.op(*o).device == Device::Gpu)
        .filter_map(|(i, o)| slotted(*o).map(|g| (*i, *o, g)))
        .collect();
    let want: Vec<GroupId> = slots
        .iter()
        .copied()
        .filter(|g| got.iter().any(|r| r.2 == *g))
        .collect();
    for (position, &(found_index, found, g)) in got.iter().enumerate() {
        match want.get(position) {
            Some(&expected) if expected == g => continue,
            Some(&expected) => out.push(OrderBreach::SlotOutOfOrder {
                position,
                expected,
                found,
                found_index,
            }),
            None => out.push(OrderBreach::SlotExtra {
                position,
                found,
                found_index,
            }),
        }
        return;
    }
}

/// A fixed order: per device, the runs are the order's ops, in order.
fn check_fixed(inst: &Instance, seq: &[OpId], runs: &[(usize, OpId)], out: &mut Vec<OrderBreach>) {
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
