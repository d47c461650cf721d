//! offcert-frontend: the problem families' file formats (`family`) and the
//! loading of instance and schedule files (`io`), with errors that name the file
//! and the field.
//!
//! Owns: the front-end layer of ARCHITECTURE.md; the `offcert` crate re-exports
//! it as `offcert::family` and `offcert::io`.
//!
//! Must not import: the checker, the rules, the re-check, solvers, heuristics.
//! Its Cargo.toml names only `offcert-model` of the offcert crates, so Cargo
//! enforces it.
#![forbid(unsafe_code)]

// The model's modules under their usual names, so that `crate::model::…` paths
// read as they do in the other crates.
use offcert_model::{model, schedule, units};

pub mod family;
pub mod io;
