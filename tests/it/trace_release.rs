//! The mapped audit's "released while in use" race, on hand-made traces: the
//! release instant is compared with the holder's interval in the trace's own
//! nanoseconds, before any rounding to ticks. A real race is reported; a release
//! exactly at the op's end, or one that only lands inside after rounding (starts
//! down, ends up), is not.

use offcert::io;
use offcert::model::Instance;
use offcert::trace::audit::{audit_mapped, MappedAudit};
use offcert::trace::kineto;
use offcert::trace::mapping::Mapping;
use offcert::trace::Nanos;
use std::process::Command;

/// Trace time of model time 0.
const ORIGIN: i64 = 1_000_000;

/// P produces a (2 ticks), R reads it (4 ticks); nothing needs a afterwards, so
/// deleting it after R is fine. One tick is 1000 ns (the mapping's).
fn instance(release: &str) -> (String, Instance) {
    let text = format!(
        r#"{{"family":"core","name":"held","tensors":[{{"name":"a","size":2}}],
        "ops":[{{"name":"P","duration":2,"produces":["a"]}},{{"name":"R","duration":4,"reads":["a"]}}],
        "order":["P","R"],"gpu_memory":4,"duplex":"full_duplex","bandwidth":2,"mode":"one_shot"{release}}}"#
    );
    let (_, inst) = io::parse_instance("held.json", &text).unwrap();
    (text, inst)
}

const MAPPING: &str = r#"{"tick_ns": 1000, "origin_ns": 1000000, "rules": [
  {"match": "compute:*", "as": "compute", "name": "$1"},
  {"match": "offload-keep:*", "as": "offload", "name": "$1", "delete": false},
  {"match": "delete:*", "as": "delete", "name": "$1"}
]}"#;

/// A Kineto trace of GPU annotation ranges `(name, start, end)` in ns after the
/// origin, with exact fractional microseconds.
fn trace(ranges: &[(&str, i64, i64)]) -> String {
    let us = |ns: i64| format!("{}.{:03}", ns / 1000, ns % 1000);
    let ev: Vec<String> = ranges
        .iter()
        .map(|(n, s, e)| {
            format!(
                r#"{{"ph":"X","cat":"gpu_user_annotation","name":"{n}","pid":0,"tid":7,"ts":{},"dur":{}}}"#,
                us(ORIGIN + s),
                us(e - s)
            )
        })
        .collect();
    format!(r#"{{"traceEvents":[{}]}}"#, ev.join(","))
}

fn audit(inst: &Instance, ranges: &[(&str, i64, i64)]) -> MappedAudit {
    let t = kineto::parse_bytes("hand.json", trace(ranges).as_bytes()).unwrap();
    let m = Mapping::parse("hand.mapping.json", MAPPING).unwrap();
    audit_mapped(&t, &m, inst, "hand.mapping.json").unwrap()
}

fn kinds(m: &MappedAudit) -> Vec<String> {
    m.report.violations.iter().map(|v| v.kind()).collect()
}

#[test]
fn a_delete_while_the_reader_runs_is_a_race() {
    let (_, inst) = instance("");
    let m = audit(
        &inst,
        &[
            ("compute:P", 0, 2000),
            ("compute:R", 2000, 6000),
            ("delete:a", 4000, 4000),
        ],
    );
    assert_eq!(m.release_races.len(), 1, "{:?}", m.release_races);
    let r = &m.release_races[0];
    assert_eq!(
        (
            r.tensor.as_str(),
            r.released_by.as_str(),
            r.held_by.as_str()
        ),
        ("a", "delete", "R")
    );
    assert_eq!(r.at_ns, Nanos(ORIGIN + 4000));
    assert_eq!(
        (r.held_from_ns, r.held_to_ns),
        (Nanos(ORIGIN + 2000), Nanos(ORIGIN + 6000))
    );
    assert_eq!((r.at.0, r.held_from.0, r.held_to.0), (4, 2, 6));
    // The checker sees it too, and the audit does not excuse it.
    assert!(
        kinds(&m).contains(&"released_while_in_use".to_string()),
        "{:?}",
        kinds(&m)
    );
    assert!(m.release_rounding_only.is_empty());
    assert!(!m.valid());
}

#[test]
fn a_delete_exactly_at_the_readers_end_is_no_race() {
    let (_, inst) = instance("");
    let m = audit(
        &inst,
        &[
            ("compute:P", 0, 2000),
            ("compute:R", 2000, 6000),
            ("delete:a", 6000, 6000),
        ],
    );
    assert!(m.release_races.is_empty(), "{:?}", m.release_races);
    assert!(m.report.valid, "{:?}", kinds(&m));
    assert!(m.valid());
}

#[test]
fn rounding_alone_makes_no_race() {
    let (_, inst) = instance("");
    // R really ends at 5.5 ticks (rounded up to 6); a is deleted at 5.7 ticks
    // (rounded down to 5), after R's end: inside only in ticks.
    for delete_at in [5500, 5700] {
        let m = audit(
            &inst,
            &[
                ("compute:P", 0, 2000),
                ("compute:R", 2000, 5500),
                ("delete:a", delete_at, delete_at),
            ],
        );
        assert!(m.release_races.is_empty(), "{:?}", m.release_races);
        // The tick schedule the checker sees has the delete at 5 inside [2, 6).
        assert!(!m.report.valid, "delete at {delete_at}");
        assert_eq!(kinds(&m), vec!["released_while_in_use".to_string()]);
        assert_eq!(m.release_rounding_only.len(), 1);
        assert!(m.valid(), "rounding alone must not make the run invalid");
    }
}

#[test]
fn a_delete_during_a_transfer_of_the_tensor_is_a_race() {
    let (_, inst) = instance("");
    let m = audit(
        &inst,
        &[
            ("compute:P", 0, 2000),
            ("compute:R", 2000, 6000),
            ("offload-keep:a", 3000, 4000),
            ("delete:a", 3500, 3500),
        ],
    );
    let mut held: Vec<&str> = m.release_races.iter().map(|r| r.held_by.as_str()).collect();
    held.sort();
    assert_eq!(held, vec!["R", "offload a"], "{:?}", m.release_races);
    assert!(!m.valid());
}

#[test]
fn the_relaxation_allows_it_and_says_so() {
    let (_, inst) = instance(r#","release":"after_start""#);
    let m = audit(
        &inst,
        &[
            ("compute:P", 0, 2000),
            ("compute:R", 2000, 6000),
            ("delete:a", 4000, 4000),
        ],
    );
    assert!(m.release_races.is_empty());
    assert!(m.report.valid, "{:?}", kinds(&m));
    assert_eq!(m.release_rule.to_string(), "after_start");
}

#[test]
fn the_cli_prints_the_race_and_the_rule() {
    let dir = std::env::temp_dir().join(format!("offcert-trace-release-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (text, _) = instance("");
    let (i, m) = (dir.join("held.json"), dir.join("hand.mapping.json"));
    std::fs::write(&i, text).unwrap();
    std::fs::write(&m, MAPPING).unwrap();
    let run = |ranges: &[(&str, i64, i64)]| {
        let t = dir.join("t.json");
        std::fs::write(&t, trace(ranges)).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_offcert"))
            .args(["audit", t.to_str().unwrap(), "--instance"])
            .arg(&i)
            .arg("--mapping")
            .arg(&m)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).to_string(),
        )
    };
    let (code, out) = run(&[
        ("compute:P", 0, 2000),
        ("compute:R", 2000, 6000),
        ("delete:a", 4000, 4000),
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("release rule: after_end"), "{out}");
    assert!(
        out.contains("race: a released while in use: delete at 1004000 ns"),
        "{out}"
    );
    let (code, out) = run(&[
        ("compute:P", 0, 2000),
        ("compute:R", 2000, 5500),
        ("delete:a", 5700, 5700),
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("rounding to ticks alone"), "{out}");
    assert!(!out.contains("released while in use: delete"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}
