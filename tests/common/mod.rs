//! The one home of the integration tests' shared helpers. Every test binary
//! that needs one says `mod common;`; nothing here is a test.
//!
//! - this file: the QuickCheck configuration ([`qc`], [`cases`]), loading
//!   fixture files ([`load`], [`tiny`], [`pairs`], [`assert_has_note`]), the
//!   checker/re-check comparison ([`agree`], [`agree_after_mutations`]), and the
//!   external certificate checkers ([`require_solver`]);
//! - [`build`]: instances written out by hand in a test (`act`, `weights`, …);
//! - [`gen`]: every random instance generator, each with its ranges in its doc
//!   comment (from raw quickcheck values, or `Arbitrary` types);
//! - [`cyclic`]: the earliest-start cyclic schedule of a weight chain;
//! - [`mutate`]: the schedule mutations of the property tests;
//! - [`offmate_gen`]: random `offmate` instances and ILP-shaped plans.
#![allow(dead_code, unused_imports)]

pub mod build;
pub mod cyclic;
pub mod gen;
pub mod mutate;
pub mod offmate_gen;

pub use build::*;
pub use cyclic::*;
pub use gen::*;
pub use mutate::*;

use offcert::check::{check, CheckOutcome, Report, Violation};
use offcert::model::Instance;
use offcert::recheck::recheck;
use offcert::schedule::{EventId, Schedule};
use quickcheck::QuickCheck;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn cases(n: u64) -> u64 {
    n * std::env::var("OFFCERT_QC_SCALE")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(1)
}

/// The one QuickCheck configuration of the integration tests: stop after
/// `tests` passing cases, draw at most ten times as many, and **fail unless at
/// least `min` cases passed**, so that a property whose every draw is discarded
/// fails instead of passing vacuously. All three figures are multiplied by
/// `OFFCERT_QC_SCALE` ([`cases`]). A property that needs a different draw
/// limit chains `.max_tests(cases(n))`; one that needs another generator size
/// chains `.gen(Gen::new(n))`.
pub fn qc(tests: u64, min: u64) -> QuickCheck {
    assert!(
        (1..=tests).contains(&min),
        "qc: min ({min}) must be in 1..=tests ({tests})"
    );
    QuickCheck::new()
        .tests(cases(tests))
        .max_tests(cases(tests) * 10)
        .min_tests_passed(cases(min))
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Load an instance and a schedule from files (panics with the loader's error).
pub fn load(instance: &Path, schedule: &Path) -> (Instance, Schedule) {
    let (_, inst) = offcert::io::load_instance(instance)
        .unwrap_or_else(|e| panic!("{}: {e}", instance.display()));
    let s = offcert::io::load_schedule(schedule, &inst)
        .unwrap_or_else(|e| panic!("{}: {e}", schedule.display()));
    (inst, s)
}

/// The instance `instances/tiny/<name>.json` (panics with the loader's error).
pub fn tiny(name: &str) -> Instance {
    let path = repo().join(format!("instances/tiny/{name}.json"));
    offcert::io::load_instance(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .1
}

/// A bundled instance or schedule file carries a `note` of more than 20
/// characters (the derivation of its known answer).
pub fn assert_has_note(f: &Path) {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
    assert!(
        v.get("note")
            .and_then(|n| n.as_str())
            .is_some_and(|n| n.len() > 20),
        "{} has no note",
        f.display()
    );
}

/// Apply up to three random mutations to `s` in turn ([`mutate_up_to_three`])
/// and run [`agree`] after each one that applies.
pub fn agree_after_mutations(inst: &Instance, s: Schedule, muts: Vec<(u8, usize, i8)>) {
    mutate_up_to_three(s, muts, |m| {
        agree(inst, m);
    });
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

/// Every `(instance, schedule)` file pair of a folder that follows the naming
/// convention `<instance>.json` + `<instance>.<what>.schedule.json`.
pub fn pairs(dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut files: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with(".schedule.json") {
            let stem = name.split('.').next().unwrap();
            out.push((dir.join(format!("{stem}.json")), f));
        }
    }
    out
}

/// The names of the rules a report finds broken.
pub fn rules(r: &Report) -> BTreeSet<&'static str> {
    r.violations.iter().map(|v| v.rule()).collect()
}

/// Order mismatches are one rule and three kinds in the checker; the re-check
/// classifies them the same way, so kinds can be compared directly.
pub fn kinds(r: &Report) -> BTreeSet<String> {
    r.violations.iter().map(|v| v.kind()).collect()
}

/// Run both implementations; panic with both outputs if they disagree on the
/// verdict, the broken rules, the kinds of violation, the peak memory or the
/// redundant offloads.
pub fn agree(inst: &Instance, s: &Schedule) -> CheckOutcome {
    let r = check(inst, s);
    let v = recheck(inst, s);
    let ck: BTreeSet<String> = v.kinds().into_iter().map(String::from).collect();
    let redundant: Vec<EventId> = r
        .warnings
        .iter()
        .map(|w| match w {
            offcert::check::Warning::RedundantOffload { event, .. } => *event,
            _ => unreachable!("only one warning kind exists"),
        })
        .collect();
    let mut rv = v.redundant_offloads.clone();
    rv.sort();
    let mut rc = redundant;
    rc.sort();
    if r.valid != v.valid
        || rules(&r) != v.broken_rules()
        || kinds(&r) != ck
        || r.peak_memory != v.peak_memory
        || rc != rv
    {
        panic!(
            "checker and re-check disagree\ninstance: {}\nschedule: {}\nchecker: valid={} peak={} {:?}\n  {:#?}\n  warnings {:?}\nre-check: valid={} peak={} {:?}\n  {:#?}\n  redundant {:?}",
            serde_json::to_string(&offcert::family::CoreFile::from_instance(inst)).unwrap(),
            serde_json::to_string(&offcert::schedule::ScheduleFile::from_schedule(s, inst))
                .unwrap(),
            r.valid,
            r.peak_memory.0,
            kinds(&r),
            r.violations.iter().map(|x| x.describe(inst)).collect::<Vec<_>>(),
            rc,
            v.valid,
            v.peak_memory.0,
            v.kinds(),
            v.findings,
            rv
        );
    }
    r
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
