//! offcert: provable GPU-memory offloading schedules.
//!
//! Pipeline: load (`io`, `family`) → core model (`model`) → rules (`semantics`)
//! → certified checker (`check`) → exact solvers, bounds, heuristics → reports → CLI.
//! Dependencies flow one way; the checker imports no solver or heuristic code.

// The trusted core lives in its own crate (crates/offcert-core), with no solver
// dependency; re-exported so that `crate::model::…` and `offcert::check::…` paths hold.
pub use offcert_core::{check, model, recheck, schedule, semantics, units};

pub mod bound;
pub mod cli;
pub mod exact;
pub mod family;
pub mod heuristic;
pub mod io;
pub mod lp;
pub mod report;
pub mod simulate;
pub mod trace;
