//! The optimality-gap report: per instance and GPU-memory budget, every
//! applicable heuristic's checked makespan, the best checked schedule (the
//! anytime search's included), the best certified lower bound and the
//! certified gap between them, and, where known, the optimum; rendered as a
//! text table, CSV, JSON or an SVG plot with the certified gap band.
//!
//! Owns: [`GapEntry`] and its cells ([`cells`]), [`budget`] (budget series), [`gap`] (the
//! computation), [`exact`] (the optimum and anytime columns), [`table`] (text/CSV/JSON), [`plot`] (SVG); and the pictures
//! of one schedule ([`schedule_plot`]) or one audited trace ([`trace_plot`]),
//! drawn by [`svg`].
//! Numbers shown come from the checker (makespans), from bounds computed in exact
//! rationals (labelled with their source and strength), or from the exact
//! solvers' checked verdicts; ratios are the only floats, for display.
//! Must not import: the CLI.

pub mod allocated;
pub mod budget;
pub mod cells;
pub mod exact;
pub mod gap;
pub mod offmate;
pub mod plot;
pub mod schedule_plot;
pub mod svg;
pub mod table;
pub mod trace_plot;
pub mod window_allocators;

pub use budget::{budget_range, with_budget, BudgetSpec, BudgetValue};
pub use exact::{AnytimeCell, ProgressHook};
pub use gap::{
    gap, BestCell, BoundCell, GapCell, GapEntry, GapOptions, HeuristicCell, OptimumCell, OptimumFn,
};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    #[error("memory budget `{spec}`: {message}")]
    Budget { spec: String, message: String },
    #[error("{instance}: {message}")]
    Instance { instance: String, message: String },
    #[error("plot {file}: {message}")]
    Plot { file: String, message: String },
}
