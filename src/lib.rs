//! offcert: provable GPU-memory offloading schedules.
//!
//! Pipeline (ARCHITECTURE.md): load (`io`, `family`) → core model (`model`) →
//! rules (`semantics`) → certified checker (`check`, returning a `Checked` or a
//! `Rejected`) ← exact solvers, bounds, heuristics → reports → CLI. The core
//! modules live in the crates of `crates/` (`offcert-model`, `offcert-core`,
//! `offcert-recheck`, `offcert-frontend`), which depend on no solver or
//! heuristic; they are re-exported here.
//!
//! Owns: the module tree and the re-exports of the core crate.
//! Must not import: nothing (the crate root); each module states its own rule
//! (ARCHITECTURE.md).
#![forbid(unsafe_code)]

// The trusted crates (crates/: the model, the checker, the independent re-check
// and the front-ends), none with a solver dependency; re-exported so that
// `crate::model::…`, `offcert::check::…` and `offcert::family::…` paths hold.
pub use offcert_core::{allocator, check, model, schedule, semantics, units};
pub use offcert_frontend::{family, io};
pub use offcert_recheck as recheck;

pub mod bound;
pub mod cli;
pub mod exact;
pub mod heuristic;
pub mod lp;
pub mod report;
pub mod simulate;
pub mod trace;
