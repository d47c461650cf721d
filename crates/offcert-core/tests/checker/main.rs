//! The checker's own tests, run by `cargo test -p offcert-core` with no solver,
//! heuristic or simulator linked: one valid and one invalid fixture per rule of
//! `models/MODEL.md` ([`rules`]), checker cases written inline
//! ([`check_cases`]), the replayed regressions ([`regressions`]), and the
//! agreement of the checker with the independent re-check ([`recheck`]).
//! Fixtures are read from the repository's `instances/` folders.

mod allocators;
mod check_cases;
mod common;
mod recheck;
mod regressions;
mod rules;
