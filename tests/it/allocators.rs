//! Allocator models (`models/MODEL.md` §2.8, issue 26 items 1 and 4): the
//! properties (valid under `va:m_c` or `caching` ⇒ valid under `exact`; the
//! `va` peak within N_max · m_c of the exact peak, below it per request; the
//! re-check agreeing under every allocator), and the CLI (`check`,
//! `heuristic` and `gap` with `--allocator`, bad text exit 2).

use crate::common::*;
use crate::gap_cli::offcert;
use offcert::check::check;
use offcert::model::{Allocator, Instance};
use offcert::recheck::recheck;
use offcert::units::Bytes;
use quickcheck::TestResult;
use std::collections::BTreeSet;

/// Checker and re-check agree under `inst`'s allocator: verdict, rules,
/// kinds; every witness confirms. Returns the verdict.
fn agree_under(inst: &Instance, s: &offcert::schedule::Schedule) -> bool {
    let r = check(inst, s);
    let v = recheck(inst, s);
    let kinds: BTreeSet<String> = r.violations.iter().map(|w| w.kind()).collect();
    let rechecked: BTreeSet<String> = v.kinds().iter().map(|k| k.to_string()).collect();
    assert_eq!(v.valid, r.valid, "{}: {:?}", inst.allocator, r.violations);
    assert_eq!(rechecked, kinds, "{}", inst.allocator);
    assert_eq!(v.peak_memory, r.peak_memory);
    assert!(r.violations.iter().all(|w| w.confirm(inst, s)));
    r.valid
}

/// Valid under a stricter allocator ⇒ valid under `exact`; and the re-check
/// agrees under it, valid or not. Schedules are valid-by-construction ones of
/// both families down to tight memory, scaled so that requests fall in both
/// pools of the caching allocator.
#[test]
fn stricter_valid_implies_exact_valid_and_the_recheck_agrees() {
    fn prop(
        family: bool,
        spec: Vec<(u8, u8, u8, u8)>,
        bw: u8,
        slack: u8,
        mask: u16,
        pick: u8,
    ) -> TestResult {
        let Some((inst, s)) = either_schedule(family, &spec, bw, slack, mask) else {
            return TestResult::discard();
        };
        let k = [1u64, 512, 1 << 18, 1 << 20][pick as usize % 4];
        let mut strict = scaled(&inst, k);
        let exact_valid = agree_under(&strict, &s);
        strict.allocator = if pick / 4 % 2 == 0 {
            Allocator::Caching
        } else {
            Allocator::Va {
                chunk: Bytes(k * (1 + (pick / 8 % 4) as u64)),
            }
        };
        if !agree_under(&strict, &s) {
            return TestResult::discard();
        }
        TestResult::from_bool(exact_valid)
    }
    qc(150, 40).quickcheck(prop as fn(bool, Vec<(u8, u8, u8, u8)>, u8, u8, u16, u8) -> TestResult);
}

/// `va:m_c` (eqs. (1)–(2) of the window paper): the occupied peak is at least
/// the exact peak and less than it plus N_max · m_c (each live allocation
/// wastes less than a chunk), N_max the most allocations alive at once; so a
/// schedule valid under `exact` is valid under `va:m_c` with N_max · m_c more.
#[test]
fn va_needs_less_than_n_max_chunks_over_exact() {
    fn prop(
        family: bool,
        spec: Vec<(u8, u8, u8, u8)>,
        bw: u8,
        slack: u8,
        mask: u16,
        c: u8,
    ) -> TestResult {
        let Some((mut inst, s)) = either_schedule(family, &spec, bw, slack, mask) else {
            return TestResult::discard();
        };
        let exact = check(&inst, &s);
        let chunk = 1 + (c % 7) as u64;
        inst.allocator = Allocator::Va {
            chunk: Bytes(chunk),
        };
        let r = check(&inst, &s);
        let p = r.allocator_peaks.clone().unwrap();
        let (occ, n) = (p.peak_occupied.unwrap().0, p.max_live_allocations.unwrap());
        assert_eq!(r.peak_memory, exact.peak_memory);
        assert!(n as usize <= inst.tensors.len() + inst.ops.len());
        assert!(occ >= r.peak_memory.0);
        if n > 0 {
            assert!(
                occ < r.peak_memory.0 + n * chunk,
                "{occ} vs {} + {n}·{chunk}",
                r.peak_memory.0
            );
        } else {
            assert_eq!(occ, 0);
        }
        if !exact.valid {
            return TestResult::discard();
        }
        inst.machine.gpu_capacity = Bytes(r.peak_memory.0 + n * chunk);
        TestResult::from_bool(check(&inst, &s).valid)
    }
    qc(200, 60).quickcheck(prop as fn(bool, Vec<(u8, u8, u8, u8)>, u8, u8, u16, u8) -> TestResult);
}

const FRAG: [&str; 2] = [
    "instances/fixtures/frag1.json",
    "instances/fixtures/frag1.fragmented.invalid.schedule.json",
];
const ACT: [&str; 2] = [
    "instances/fixtures/act3m8.json",
    "instances/fixtures/act3m8.valid.schedule.json",
];

#[test]
fn check_states_the_allocator_and_its_witness() {
    let (code, out, _) = offcert(&["check", FRAG[0], FRAG[1]]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("allocator: caching ("), "{out}");
    assert!(out.contains("[memory:allocator_out_of_memory]"), "{out}");
    assert!(out.contains("largest hole 5.24288 MB"), "{out}");
    assert!(
        out.contains("peak reserved by the allocator: 20.97152 MB"),
        "{out}"
    );
    // The same schedule under `exact`: valid, and no allocator line.
    let (code, out, _) = offcert(&["check", FRAG[0], FRAG[1], "--allocator", "exact"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("allocator"), "{out}");
    let (code, json, _) = offcert(&["check", FRAG[0], FRAG[1], "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["allocator"], "caching");
    assert_eq!(v["violations"][0]["rule"], "allocator_out_of_memory");
    assert_eq!(v["violations"][0]["largest_free"], 5 << 20);
    assert_eq!(v["allocator_peaks"]["peak_reserved"], 20 << 20);
}

#[test]
fn check_under_va_rounds_every_allocation() {
    // Whole chunks of 1 B are exact bytes: the verdict of `exact`.
    let (code, out, _) = offcert(&["check", ACT[0], ACT[1], "--allocator", "va:1B"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("allocator: va:1B ("), "{out}");
    assert!(
        out.contains("peak GPU memory in whole chunks: 8 B"),
        "{out}"
    );
    let (code, out, _) = offcert(&["check", ACT[0], ACT[1], "--allocator", "va:40MB"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("[memory:va_memory_exceeded]"), "{out}");
    let (code, out, _) = offcert(&["check", ACT[0], ACT[1]]);
    assert_eq!(code, 0);
    assert!(!out.contains("allocator"), "{out}");
}

#[test]
fn bad_allocator_text_is_exit_2_naming_the_flag() {
    for bad in ["va:0", "best_fit", "va:40XB", "va:"] {
        let (code, _, err) = offcert(&["check", ACT[0], ACT[1], "--allocator", bad]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("--allocator"), "{bad}: {err}");
    }
}

const CHAIN3: &str = "instances/examples/chain3.json";

/// A heuristic's schedule valid under `exact` but not under the allocator
/// counts as no schedule for that row, with the reason (exit 0: no bug).
#[test]
fn heuristic_rows_refused_by_the_allocator_have_no_schedule() {
    let (code, json, err) = offcert(&["heuristic", CHAIN3, "--json", "--allocator", "va:1GB"]);
    assert_eq!(code, 0, "{err}");
    let (_, exact, _) = offcert(&["heuristic", CHAIN3, "--json"]);
    let rows: serde_json::Value = serde_json::from_str(&json).unwrap();
    let before: serde_json::Value = serde_json::from_str(&exact).unwrap();
    let mut refused = 0;
    for (r, b) in rows
        .as_array()
        .unwrap()
        .iter()
        .zip(before.as_array().unwrap())
    {
        assert_eq!(r["heuristic"], b["heuristic"]);
        if b["verdict"] == "valid" {
            assert_eq!(r["verdict"], "no schedule", "{r}");
            let e = r["error"].as_str().unwrap();
            assert!(
                e.contains("valid under exact, not under allocator va:1GB"),
                "{e}"
            );
            refused += 1;
        }
    }
    assert!(refused > 0);
    let (_, chunked, _) = offcert(&["heuristic", CHAIN3, "--json", "--allocator", "va:1B"]);
    let verdicts = |t: &str| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(t).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| r["verdict"].to_string())
            .collect()
    };
    assert_eq!(verdicts(&exact), verdicts(&chunked));
}

/// `gap --allocator`: bounds stay (a bound under `exact` bounds every
/// stricter allocator); schedules refused by the allocator leave their cells,
/// the best schedule and the optimum, each with the reason.
#[test]
fn gap_judges_its_rows_under_the_allocator() {
    let base = ["gap", CHAIN3, "--quiet", "--json"];
    let (code, exact, err) = offcert(&base);
    assert_eq!(code, 0, "{err}");
    let (code, strict, err) = offcert(&[&base[..], &["--allocator", "va:1GB"]].concat());
    assert_eq!(code, 0, "{err}");
    let (e, s): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(&exact).unwrap(),
        serde_json::from_str(&strict).unwrap(),
    );
    let (e, s) = (&e[0], &s[0]);
    assert!(e.get("allocator").is_none());
    assert_eq!(s["allocator"], "va:1GB");
    assert_eq!(s["best_certified_bound"], e["best_certified_bound"]);
    assert!(e["optimum"].is_object());
    assert!(s["optimum"].is_null() && s["best_schedule"].is_null());
    assert!(s["allocator_refused"]
        .as_array()
        .is_some_and(|v| !v.is_empty()));
    for h in s["heuristics"].as_array().unwrap() {
        assert_eq!(h["verdict"], "no schedule", "{h}");
    }
}

/// The exact methods work in the `exact` model: the door refuses an instance
/// under another allocator by name (its optimum is judged under the
/// allocator by `check`, as `gap --allocator` does).
#[test]
fn the_exact_door_refuses_another_allocator() {
    use offcert::exact::{self, scope::Feature, ExactError, Limits, Method};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/fixtures");
    let (mut inst, _) = load(
        &dir.join("act3m8.json"),
        &dir.join("act3m8.valid.schedule.json"),
    );
    for a in [Allocator::Caching, Allocator::Va { chunk: Bytes(4) }] {
        inst.allocator = a;
        let r = exact::solve(Method::Search, &inst, &Limits::default());
        assert!(
            matches!(
                r,
                Err(ExactError::Unencoded {
                    feature: Feature::Allocator,
                    ..
                })
            ),
            "{r:?}"
        );
    }
}
