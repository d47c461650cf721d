//! offcert: provable GPU-memory offloading schedules.
//!
//! Pipeline: load (`io`, `family`) → core model (`model`) → rules (`semantics`)
//! → certified checker (`check`) → exact solvers, bounds, heuristics → reports → CLI.
//! Dependencies flow one way; the checker imports no solver or heuristic code.

pub mod bound;
pub mod check;
pub mod cli;
pub mod exact;
pub mod family;
pub mod heuristic;
pub mod io;
pub mod lp;
pub mod model;
pub mod recheck;
pub mod report;
pub mod schedule;
pub mod semantics;
pub mod simulate;
pub mod trace;
pub mod units;
