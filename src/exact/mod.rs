//! Exact methods for small instances: time-indexed MILP, SMT and exhaustive
//! search, written independently of each other, plus the cross-check that runs
//! them and labels the result.
//!
//! Owns: [`Outcome`], [`Status`], [`Limits`], [`ExactError`] and the methods.
//! Every returned schedule is passed through [`crate::check::check`] before any
//! number is reported; the reported makespan is the checker's.
//! Backend types (good_lp, highs, z3) never leave their submodule.
