//! offcert-model: the vocabulary of offcert, and nothing that judges a schedule.
//!
//! Owns: exact unit types (`units`), the core instance (`model`) and schedules
//! with their file form (`schedule`): models/MODEL.md §1.
//!
//! Must not import: any other offcert crate, any solver. Its Cargo.toml lists
//! serde and thiserror only, so Cargo enforces it. Both routes to a verdict, the
//! certified checker (`offcert-core`) and the independent re-check
//! (`offcert-recheck`), build on this crate and on nothing they share beyond it.
#![forbid(unsafe_code)]

pub mod model;
pub mod schedule;
pub mod units;
