//! The checker's test helpers, shared with the `offcert` crate's tests (its
//! `tests/it/common/mod.rs` includes this module and re-exports it), so each helper
//! is written once. Only the model, the checker, the re-check and the
//! front-ends are named here: no solver, heuristic or simulator.
//!
//! - this file: the QuickCheck configuration ([`qc`], [`cases`]), loading
//!   fixture files ([`repo`], [`load`], [`pairs`], [`assert_has_note`]), and the
//!   checker/re-check comparison ([`agree`], [`agree_after_mutations`]), and
//!   instances scaled to real sizes ([`scaled`]);
//! - [`cyclic`]: random weight chains and their earliest-start cyclic schedules;
//! - [`mutate`]: the random schedule mutations of the agreement properties.

pub mod cyclic;
pub mod mutate;

pub use cyclic::*;
pub use mutate::*;

use offcert_core::check::{check, CheckOutcome, Report, Warning};
use offcert_core::model::Instance;
use offcert_core::schedule::{EventId, Schedule, ScheduleFile};
use offcert_core::units::{Bandwidth, Bytes};
use offcert_frontend::family::CoreFile;
use offcert_recheck::recheck;
use quickcheck::QuickCheck;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

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

/// The repository root (the workspace's folder, which holds `Cargo.lock`,
/// `instances/` and `models/`), from whichever of its crates the test belongs to.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|d| d.join("Cargo.lock").is_file() && d.join("instances").is_dir())
        .expect("the repository root above CARGO_MANIFEST_DIR")
        .to_path_buf()
}

/// Load an instance and a schedule from files (panics with the loader's error).
pub fn load(instance: &Path, schedule: &Path) -> (Instance, Schedule) {
    let (_, inst) = offcert_frontend::io::load_instance(instance)
        .unwrap_or_else(|e| panic!("{}: {e}", instance.display()));
    let s = offcert_frontend::io::load_schedule(schedule, &inst)
        .unwrap_or_else(|e| panic!("{}: {e}", schedule.display()));
    (inst, s)
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

/// [`pairs`] of a folder and of every folder below it (the regressions keep
/// per-family subfolders, e.g. `instances/regressions/remat/`).
pub fn pairs_below(dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let mut out = pairs(dir);
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut subs: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    subs.sort();
    for d in subs {
        out.extend(pairs_below(&d));
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
/// verdict, the broken rules, the kinds of violation, the peak GPU memory, the
/// peak CPU memory or the redundant offloads.
pub fn agree(inst: &Instance, s: &Schedule) -> CheckOutcome {
    let r = check(inst, s);
    let v = recheck(inst, s);
    let ck: BTreeSet<String> = v.kinds().into_iter().map(String::from).collect();
    let redundant: Vec<EventId> = r
        .warnings
        .iter()
        .map(|w| match w {
            Warning::RedundantOffload { event, .. } => *event,
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
        || r.peak_cpu_memory != v.peak_cpu_memory
        || rc != rv
    {
        panic!(
            "checker and re-check disagree\ninstance: {}\nschedule: {}\nchecker: valid={} peak={} cpu peak={} {:?}\n  {:#?}\n  warnings {:?}\nre-check: valid={} peak={} cpu peak={} {:?}\n  {:#?}\n  redundant {:?}",
            serde_json::to_string(&CoreFile::from_instance(inst)).unwrap(),
            serde_json::to_string(&ScheduleFile::from_schedule(s, inst)).unwrap(),
            r.valid,
            r.peak_memory.0,
            r.peak_cpu_memory.0,
            kinds(&r),
            r.violations.iter().map(|x| x.describe(inst)).collect::<Vec<_>>(),
            rc,
            v.valid,
            v.peak_memory.0,
            v.peak_cpu_memory.0,
            v.kinds(),
            v.findings,
            rv
        );
    }
    r
}

/// `inst` with every amount of memory (sizes, scratch, capacities, the bytes
/// of β) times `k`: exact validity is unchanged, and the sizes reach the
/// caching allocator's pools and segments (`models/MODEL.md` §2.8).
pub fn scaled(inst: &Instance, k: u64) -> Instance {
    let mut i = inst.clone();
    for t in &mut i.tensors {
        t.size = Bytes(t.size.0 * k);
    }
    for o in &mut i.ops {
        o.temp = Bytes(o.temp.0 * k);
    }
    let m = &mut i.machine;
    m.gpu_capacity = Bytes(m.gpu_capacity.0 * k);
    m.cpu_capacity = m.cpu_capacity.map(|c| Bytes(c.0 * k));
    m.bandwidth = Bandwidth::new(m.bandwidth.bytes * k, m.bandwidth.ticks);
    i
}
