//! offcert-core: the trusted part of offcert, the certified checker.
//!
//! Owns: the rules (`semantics`), the certified checker and digests (`check`),
//! and the pure allocator models R7 may count with (`allocator`, MODEL.md §2.8).
//! Re-exports the model it judges (`model`, `schedule`, `units`, from
//! `offcert-model`), so that `offcert_core::model::…` paths hold.
//!
//! Must not import: any solver (good_lp, highs, z3), bound, heuristic,
//! simulator, family front-end, report or CLI code, nor the independent re-check
//! (`offcert-recheck`, the second route to the same verdict). This crate's
//! Cargo.toml names `offcert-model` and four small crates only, so Cargo
//! enforces it; `tests/isolation.rs` in the `offcert` crate asserts that no
//! solver, SQLite or plotting crate becomes reachable. Its own tests
//! (`tests/checker`: every rule's fixtures, the regressions, the agreement with
//! the re-check) need no solver: `cargo test -p offcert-core` certifies the
//! checker.
#![forbid(unsafe_code)]

pub use offcert_model::{model, schedule, units};

pub mod allocator;
pub mod check;
pub mod semantics;
