//! Audits of an imported trace: the trace-only audit ([`trace`]) and the mapped
//! audit ([`mapped`]), re-exported here so that `trace::audit::…` paths name both.
//!
//! Owns: the split between the two audits. The trace-only audit reads the trace
//! alone (memory against a budget, copies against the link and the channels);
//! the mapped audit reads the trace as a schedule of an instance and lets the
//! checker judge it.
//! Must not import: solvers, heuristics, bounds, reports, the CLI.

pub mod mapped;
pub mod trace;

pub use mapped::*;
pub use trace::*;
