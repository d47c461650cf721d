//! The optimum column: the exact solvers' cross-checked verdict
//! ([`crate::exact::crosscheck`]: MILP, SMT and search, every schedule replayed
//! by the checker). Only an optimum the verdict labels optimal is reported, with
//! the verdict's own words for its strength.
//!
//! Owns: the optimum column ([`optimum`]), built from the verdict's `Checked`.
//! Must not import: the CLI.

use super::gap::OptimumCell;
use crate::exact::crosscheck::{self, Label};
use crate::exact::{Limits, Method};
use crate::model::Instance;
use std::time::Duration;

/// The methods the gap report runs.
pub const METHODS: [Method; 3] = [Method::Milp, Method::Smt, Method::Search];

pub fn optimum(inst: &Instance, limit: Duration) -> Option<OptimumCell> {
    let limits = Limits {
        time_limit: limit,
        ..Limits::default()
    };
    let v = crosscheck::run(inst, &METHODS, &limits);
    match v.label {
        Label::OptimalCrossChecked | Label::OptimalSolverReported => Some(OptimumCell::new(
            v.checked?,
            v.label.words(),
            format!("exact: {}", v.evidence.join("; ")),
        )),
        _ => None,
    }
}
