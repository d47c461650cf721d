//! Exact method (c): exhaustive state-space search (A* on time) for tiny
//! instances, built directly on the shared rules: every successor is
//! produced by [`crate::semantics::State`]'s transitions (`op_start`, `op_end`,
//! `transfer_start`, `transfer_end`, `delete`), and a successor is kept only if
//! those transitions report no [`Breach`](crate::semantics::Breach) and the GPU
//! memory they account stays within capacity after every allocation.
//!
//! Owns: [`SCOPE`], the search and its structural limits (`proofs/SEARCH.md`),
//! in files along its seams: `node.rs` the nodes, their context, completions,
//! state key and estimate; `expand.rs` the successors of a node; `driver.rs`
//! the scope test, the start nodes, the best-first loop and the rebuild of a
//! schedule; `cyclic.rs` the boundary states of the cyclic search (their
//! enumeration, the root nodes built from them and the test that a period
//! closes the cycle); `anytime.rs` the anytime branch and bound on the same
//! nodes. The imports run node ← cyclic, expand ← driver ← anytime.
//! Must not import: the MILP, the SMT method, the door, the cross-check, the
//! reductions (a free order reaches the search through `remat`, which the
//! door applies), heuristics.
//!
//! Scope: a fixed order of ops (each once), no CPU capacity that a
//! schedule could reach; cyclic, CPU ops on a second stream (`driver::cpu_scope`:
//! they read and modify CPU copies only, so the GPU copies of what they modify
//! go stale and must be fetched again); groups, slots and `after` as one fixed order per
//! GPU op sequence they allow (`exact::variants`, shared with the MILP). One-shot: no
//! modified transferable tensor, each tensor produced at most once. Cyclic
//! (`weight_chain`, `op_sequence` and core instances of their shapes):
//! persistent and per-iteration tensors move; every per-iteration tensor is
//! produced once, before it is read, and released by an op of the period after
//! its last read or by no op (then dropped by a delete, possibly at time 0 of
//! the next period). A cyclic schedule of period P is a cycle of
//! length P in the state graph: the search starts from every boundary state
//! S₀ (with the transfers in flight across the boundary) at once and stops at
//! the first node, at time P, whose state equals its own S₀ up to versions.
//! Anything else is refused: a feature outside [`SCOPE`] with
//! [`ExactError::Unencoded`] (by the door, and by `driver::search_scope` for
//! the anytime search), a finer limit with [`ExactError::Unsupported`].
//!
//! Both release rules (`Instance::release`, MODEL.md R10): under the default
//! `after_end` no copy is released while a running op or transfer holds it
//! (dead copies wait for the holder's end, a completion), and one tick after
//! an op start is a decision instant only for zero-duration ops; under the
//! relaxation `after_start` an op's inputs may go one tick after its start.
//! Cyclic: a period's trailing zero-duration ops may run at P (R8).

pub mod anytime;
mod cyclic;
mod driver;
mod expand;
mod node;

use crate::exact::scope::{Feature, Reduction, Scope};
use crate::exact::{variants, ExactError, Limits, Method, Outcome};
use crate::model::{Extension, Instance};

/// What the search accepts: fixed orders, one-shot or cyclic; variant groups,
/// a slotted order and `after` where every op runs on the GPU (one search per
/// GPU op sequence that R11–R13 allow: `exact::variants`); a free order
/// through the `remat` reduction (one search per op sequence; several options
/// per block included). Ops on the CPU (cyclic: a second compute stream,
/// `driver::cpu_scope`; OFFMATE's CPU Adam step `optC.p` as a member of
/// `upd.p`). A CPU capacity only where no schedule can reach it
/// (`variants::unreachable_cpu_capacity`; a lower one is refused).
pub const SCOPE: Scope = Scope {
    encodes: &[
        Feature::Cyclic,
        Feature::Extension(Extension::Groups),
        Feature::Extension(Extension::Slots),
        Feature::Extension(Extension::After),
        Feature::CpuOps,
        Feature::CpuCapacity,
    ],
    reductions: &[Reduction::Remat],
};

/// The plain solver: an instance with groups, slots or `after` is searched
/// once per GPU op sequence those rules allow, the best kept (the choice of
/// each group's member is the search's, over every sequence: complete,
/// `proofs/SEARCH.md`); any other directly.
pub(super) fn solve(inst: &Instance, limits: &Limits) -> Result<Outcome, ExactError> {
    if inst.extensions().is_empty() && !variants::unreachable_cpu_capacity(inst) {
        driver::solve(inst, limits)
    } else {
        variants::solve_each(inst, limits, Method::Search, driver::solve)
    }
}

/// Stop (status `Unknown`) after expanding this many states.
pub const MAX_STATES: usize = 3_000_000;

/// Cyclic: the most boundary states searched from (status `Unknown` beyond).
pub const MAX_ROOTS: usize = cyclic::MAX_ROOTS;

fn unsupported(reason: impl Into<String>) -> ExactError {
    ExactError::Unsupported {
        method: Method::Search,
        reason: reason.into(),
    }
}
