//! offcert-core: the trusted part of offcert.
//!
//! Owns: exact unit types (`units`), the core model (`model`), schedules
//! (`schedule`), the rules (`semantics`), the certified checker and digests
//! (`check`) and the independent re-check (`recheck`).
//!
//! Must not import: any solver (good_lp, highs, z3), bound, heuristic,
//! simulator, family front-end, report or CLI code. This crate's Cargo.toml has
//! no such dependency, so Cargo enforces it; `tests/isolation.rs` in the
//! `offcert` crate asserts the manifest stays that way, and that `recheck` shares
//! no code with `check` or `semantics`.

pub mod check;
pub mod model;
pub mod recheck;
pub mod schedule;
pub mod semantics;
pub mod units;
