//! offcert: provable GPU-memory offloading schedules.
//!
//! Pipeline (ARCHITECTURE.md): load (`io`, `family`) → core model (`model`) →
//! rules (`semantics`) → certified checker (`check`, returning a `Checked` or a
//! `Rejected`) ← exact solvers, bounds, heuristics → reports → CLI. The core
//! modules live in the `offcert-core` crate, which depends on no solver or
//! heuristic; they are re-exported here.
//!
//! Owns: the module tree and the re-exports of the core crate.
//! Must not import: nothing (the crate root); each module states its own rule
//! (ARCHITECTURE.md).

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
