//! The one integration-test binary of the `offcert` crate: a module per
//! concern (the former `tests/*.rs` binaries), sharing [`common`]. Add new
//! tests as a module here, not as a new file directly under `tests/` (each of
//! those is a binary of its own that links z3, HiGHS and SQLite again).
//!
//! The rule fixtures and the re-check's tests live in the core crate
//! (`crates/offcert-core/tests/`), which links no solver.

mod common;
mod pofo_reference;
mod weight_table1;

mod activation_exact;
mod activation_known;
mod activation_properties;
mod activation_windows;
mod agreement;
mod allocators;
mod anytime;
mod bad_input;
mod checker_after_error;

mod budgets;
mod exact_milp;
mod exact_search;
mod exact_smt;
mod formats;
mod gap_cli;
mod graph;
mod graph_baselines;
mod graph_exact;
mod graph_feasible;
mod graph_forced;
mod graph_import;
mod graph_order;
mod graph_parts;
mod graph_schedules;
mod groups;
mod groups_exact;
mod offmate;
mod offmate_balance;
mod offmate_bound_kept;
mod offmate_bounds;
mod offmate_exact;
mod offmate_gap;
mod offmate_ilp;
mod offmate_span;
mod op_sequence;
mod op_sequence_belady;
mod op_sequence_bounds;
mod op_sequence_exact;
mod op_sequence_import;
mod op_sequence_model;
mod plot;
mod properties;
mod recheck_activation;
mod reductions;
mod remat;
mod remat_anytime;
mod remat_bound;
mod remat_exact;
mod remat_options;
mod remat_pofo;
mod remat_pofo_run;
mod remat_relaxed;
mod remat_replan;
mod remat_sequence;
mod remat_windows;
mod retime;
mod search_cyclic;
mod solve_cli;
mod trace_cli;
mod trace_hostile;
mod trace_models;
mod trace_recorded;
mod trace_release;
mod trace_reserved;
mod trace_roundtrip;
mod trace_shared;
mod weight_bounds;
mod weight_exact;
mod weight_heuristics;
mod weight_paper;
mod weight_replan;
mod window_allocators;
