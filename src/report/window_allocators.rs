//! The out-of-core window paper's "Schedule" against "Schedule + VA" (its
//! Table 1 and Figure 3, §4) on the synthetic ResNet-50 of
//! [`crate::family::resnet50`]: per batch size, the least budget B at which
//! the window schedule planned at B is valid under each allocator model
//! (`exact`, `va:m_c`, `caching`; `models/MODEL.md` §2.8) with B as the GPU's
//! capacity.
//!
//! The window heuristic plans in exact bytes (the papers' model) at budget B;
//! its schedule is then judged by the checker ([`crate::check::check`]) on the
//! same instance under the allocator. B is found by bisection over whole
//! bytes: the schedule at B is valid, the one at B − 1 is not. The window
//! plan changes with B, so validity need not be monotone in B: the figure is
//! the threshold the bisection lands on (between 0, where nothing is valid,
//! and an upper budget where the plan is valid), said so in every table.
//!
//! Owns: [`least_budget`], [`largest_planning_budget`] (Figure 3),
//! [`AllocatorThreshold`], [`internal_fragmentation_within_bound`].
//! Must not import: the CLI. Judges nothing itself: every verdict is the
//! checker's.

use crate::check::{check, CheckOutcome, Checked, Report};
use crate::family::{resnet50::resnet50, InstanceFile};
use crate::heuristic::{self, op_sequence::Window};
use crate::model::{Allocator, Instance};
use crate::units::Bytes;

/// The synthetic ResNet-50 and the window heuristic that plans it.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub batch: u64,
    /// Link bandwidth per direction, bytes per ns.
    pub bandwidth: u64,
    pub window: Window,
}

/// The least budget found under one allocator, with the checked schedule
/// there (its report carries the allocator's peaks).
#[derive(Clone, Debug)]
pub struct AllocatorThreshold {
    pub allocator: Allocator,
    /// `None`: not valid even at the largest budget tried.
    pub least: Option<(Bytes, Checked)>,
    /// The largest budget tried.
    pub tried_up_to: Bytes,
    /// Schedules the checker judged on the way.
    pub checks: u64,
}

/// The window schedule planned at `budget` (exact bytes), on the instance at
/// that budget; `None` where the heuristic finds none.
fn plan(setup: &Setup, budget: u64) -> Option<(Instance, Checked)> {
    let file = InstanceFile::OpSequence(resnet50(setup.batch, budget, setup.bandwidth));
    let inst = file.compile().ok()?;
    let run = heuristic::run(&setup.window, &file, &inst).ok()?;
    Some((inst, run.checked))
}

/// The plan at `budget` judged under `allocator`, the checker's report handed
/// to `seen`; the checked schedule when valid.
pub fn valid_at(
    setup: &Setup,
    budget: u64,
    allocator: Allocator,
    seen: &mut dyn FnMut(&Report),
) -> Option<Checked> {
    let (mut inst, checked) = plan(setup, budget)?;
    if allocator.is_default() {
        seen(checked.report());
        return Some(checked);
    }
    inst.allocator = allocator;
    match check(&inst, checked.schedule()) {
        CheckOutcome::Valid(c) => {
            seen(c.report());
            Some(c)
        }
        CheckOutcome::Invalid(r) => {
            seen(r.report());
            None
        }
    }
}

/// The bytes of every variable: at that budget nothing need leave the GPU.
fn all_bytes(setup: &Setup) -> u64 {
    let s = resnet50(setup.batch, 0, setup.bandwidth);
    s.variables.iter().map(|v| v.bytes).sum()
}

/// The least budget (bisection, whole bytes) at which the window schedule is
/// valid under `allocator`: the upper end starts at the bytes of every
/// variable and doubles (at most four times) until the plan there is valid;
/// every report the checker gives on the way goes to `seen`.
pub fn least_budget(
    setup: &Setup,
    allocator: Allocator,
    seen: &mut dyn FnMut(&Report),
) -> AllocatorThreshold {
    let mut checks = 0u64;
    let mut judge = |b: u64| {
        checks += 1;
        valid_at(setup, b, allocator, seen)
    };
    let mut hi = all_bytes(setup).max(1);
    let mut at_hi = judge(hi);
    for _ in 0..4 {
        if at_hi.is_some() {
            break;
        }
        hi = hi.saturating_mul(2);
        at_hi = judge(hi);
    }
    let Some(mut best) = at_hi else {
        return AllocatorThreshold {
            allocator,
            least: None,
            tried_up_to: Bytes(hi),
            checks,
        };
    };
    let (mut lo, tried) = (0u64, hi);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match judge(mid) {
            Some(c) => (hi, best) = (mid, c),
            None => lo = mid,
        }
    }
    AllocatorThreshold {
        allocator,
        least: Some((Bytes(hi), best)),
        tried_up_to: Bytes(tried),
        checks,
    }
}

/// Eq. (2) of the window paper on one checked report under `va:m_c`: the
/// internal fragmentation at the peak, peak occupied − peak exact bytes, is
/// less than N_max · m_c (N_max the most allocations alive at once). `None`
/// when the report is not under `va` or lacks the peaks.
pub fn internal_fragmentation_within_bound(r: &Report) -> Option<(bool, Bytes, Bytes)> {
    let Allocator::Va { chunk } = r.allocator else {
        return None;
    };
    let p = r.allocator_peaks.as_ref()?;
    let (occ, n) = (p.peak_occupied?, p.max_live_allocations?);
    let fragmentation = Bytes(occ.0.saturating_sub(r.peak_memory.0));
    let bound = Bytes(n.saturating_mul(chunk.0));
    let holds = fragmentation < bound || (n == 0 && fragmentation == Bytes(0));
    Some((holds, fragmentation, bound))
}

/// Grid points of [`largest_planning_budget`] between the least exact budget
/// and the capacity.
pub const GRID: u64 = 16;

/// The paper's Figure 3 on a GPU of `capacity` bytes: the largest planning
/// budget b ≤ capacity whose window plan (exact bytes, at b) runs under
/// `allocator` with `capacity` as the GPU's memory ("maximum defined memory
/// budget"), and the checked schedule there (its report: the memory actually
/// used). `None` when no plan from the least exact budget up runs: out of
/// memory, the paper's `x`. The largest valid point of a [`GRID`]-point grid
/// from the least exact budget to `capacity`, refined by bisection over whole
/// bytes up to the next grid point; every report goes to `seen`.
pub fn largest_planning_budget(
    setup: &Setup,
    allocator: Allocator,
    capacity: Bytes,
    seen: &mut dyn FnMut(&Report),
) -> Option<(Bytes, Checked)> {
    let file = InstanceFile::OpSequence(resnet50(setup.batch, capacity.0, setup.bandwidth));
    let mut inst = file.compile().ok()?;
    inst.allocator = allocator;
    let mut runs = |b: u64| -> Option<Checked> {
        let (_, planned) = plan(setup, b)?;
        let outcome = check(&inst, planned.schedule());
        seen(outcome.report());
        outcome.into_result().ok()
    };
    if let Some(c) = runs(capacity.0) {
        return Some((capacity, c));
    }
    let (least, _) = least_budget(setup, Allocator::Exact, &mut |_| {}).least?;
    if least >= capacity {
        return None;
    }
    // The largest valid point of a grid (validity need not be monotone in b),
    // then a bisection up to the grid point above it.
    let grid: Vec<u64> = (0..GRID)
        .map(|i| least.0 + (capacity.0 - least.0) * i / GRID)
        .collect();
    let (i, mut best) = grid
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, &b)| runs(b).map(|c| (i, c)))?;
    let (mut lo, mut hi) = (grid[i], grid.get(i + 1).copied().unwrap_or(capacity.0));
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match runs(mid) {
            Some(c) => (lo, best) = (mid, c),
            None => hi = mid,
        }
    }
    Some((Bytes(lo), best))
}
