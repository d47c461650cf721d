//! The one home of the integration tests' shared helpers. Every test binary
//! that needs one says `mod common;`; nothing here is a test.
//!
//! - [`checker`]: the helpers the checker's own tests use too, written once in
//!   `crates/offcert-core/tests/checker/common` and re-exported here: the
//!   QuickCheck configuration ([`qc`], [`cases`]), loading fixture files
//!   ([`repo`], [`load`], [`pairs`], [`assert_has_note`]), the checker/re-check
//!   comparison ([`agree`], [`agree_after_mutations`]), random weight chains
//!   and their cyclic schedules, the random mutations;
//! - this file: [`tiny`] instances, the external certificate checkers
//!   ([`require_solver`]), [`has`], [`search_optimum`];
//! - [`build`]: instances written out by hand in a test (`act`, `weights`, …);
//! - [`gen`]: every random instance generator, each with its ranges in its doc
//!   comment (from raw quickcheck values, or `Arbitrary` types);
//! - [`mutate`]: the targeted schedule mutations of the property tests;
//! - [`offmate_gen`]: random `offmate` instances and ILP-shaped plans.

pub mod build;
// The checker's own test helpers, written once in the core crate; this binary
// uses all but the fixture-note check, which only the rule fixtures need.
#[path = "../../../crates/offcert-core/tests/checker/common/mod.rs"]
#[allow(dead_code)]
pub mod checker;
pub mod gen;
pub mod graph_gen;
pub mod mutate;
pub mod offmate_gen;

pub use build::*;
pub use checker::*;
pub use gen::*;
pub use graph_gen::*;
pub use mutate::*;

use offcert::check::{check, Report, Violation};
use offcert::model::Instance;
use std::process::Command;

/// The instance `instances/tiny/<name>.json` (panics with the loader's error).
pub fn tiny(name: &str) -> Instance {
    let path = repo().join(format!("instances/tiny/{name}.json"));
    offcert::io::load_instance(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .1
}

/// The external SMT solver `bin` (`z3` or `cvc5`), which re-checks the SMT-LIB2
/// certificates. The README's set-up (`bash scripts/setup.sh`) installs both,
/// so a missing one is a failure, not a skip.
pub fn require_solver(bin: &str) -> Command {
    match Command::new(bin).arg("--version").output() {
        Ok(o) if o.status.success() => Command::new(bin),
        Ok(o) => panic!(
            "`{bin} --version` exited with {}: reinstall it with `bash scripts/setup.sh` (the README's set-up installs z3 and cvc5)",
            o.status
        ),
        Err(e) => panic!(
            "{bin} not found ({e}): run `bash scripts/setup.sh` first (the README's set-up installs z3 and cvc5, which re-check the SMT certificates)"
        ),
    }
}

/// Does the report contain a violation satisfying `f`?
pub fn has(r: &Report, f: impl Fn(&Violation) -> bool) -> bool {
    r.violations.iter().any(f)
}

/// The search's proven optimum within 20 s (its schedule replayed by the
/// checker), or `None` when it is not proven.
pub fn search_optimum(inst: &Instance) -> Option<i64> {
    let limits = offcert::exact::Limits {
        time_limit: std::time::Duration::from_secs(20),
        ..offcert::exact::Limits::default()
    };
    let out = offcert::exact::solve(offcert::exact::Method::Search, inst, &limits).ok()?;
    let s = out.schedule?;
    let r = check(inst, &s);
    assert!(r.valid, "search schedule rejected: {:?}", r.violations);
    (out.status == offcert::exact::Status::Optimal).then_some(r.makespan.0)
}

/// The least checked makespan on a `remat_chain`: the exact `methods`'
/// best within their sequence limits (3 s), every remat heuristic's, and
/// the re-planning's from rotor's (`candidates`; plain chains only). `None`
/// when nothing ran.
pub fn remat_best_checked(
    c: &offcert::family::remat_chain::RematChain,
    methods: &[offcert::exact::Method],
    candidates: u64,
) -> Option<i64> {
    use offcert::family::InstanceFile;
    use offcert::heuristic;
    let f = InstanceFile::RematChain(c.clone());
    let inst = f.compile().unwrap();
    let mut best: Option<i64> = None;
    let mut keep = |m: i64| best = Some(best.map_or(m, |b| b.min(m)));
    if !methods.is_empty() {
        let limits = offcert::exact::Limits {
            time_limit: std::time::Duration::from_secs(3),
            ..offcert::exact::Limits::default()
        };
        if let Some(m) = offcert::exact::crosscheck::run(&inst, methods, &limits).makespan() {
            keep(m.0);
        }
    }
    let mut rotor = None;
    for h in heuristic::remat::heuristics() {
        if let Ok(run) = heuristic::run(h.as_ref(), &f, &inst) {
            keep(run.checked.report().makespan.0);
            rotor.get_or_insert(run.checked);
        }
    }
    if c.plain().is_ok() {
        let effort = heuristic::effort::Effort::Candidates(candidates);
        if let Some((_, k)) =
            heuristic::remat::replan::improve(c, &inst, rotor.as_ref(), None, effort)
        {
            keep(k.makespan().0);
        }
    }
    best
}
