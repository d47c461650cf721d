//! Replays the shrunk failures kept in `instances/regressions/`: the checker and
//! the independent re-check agree on each, the verdict is the one the file name
//! states, and each file's own point (in its note) still holds.

use crate::common::*;
use offcert_core::check::check;
use offcert_core::units::{Bytes, Ticks};

#[test]
fn every_regression_replays() {
    let all = pairs(&repo().join("instances/regressions"));
    assert!(!all.is_empty());
    for (i, s) in all {
        let (inst, sched) = load(&i, &s);
        let r = agree(&inst, &sched);
        let name = s.file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(r.valid, !name.contains(".invalid."), "{name}");
    }
}

/// An op's output released while the op runs must not come back without its
/// memory (the checker's counter once drifted 1 B low here).
#[test]
fn drift_peak_memory_is_two_bytes_at_three() {
    let dir = repo().join("instances/regressions");
    let (inst, s) = load(
        &dir.join("drift.json"),
        &dir.join("drift.offload-during-producer.invalid.schedule.json"),
    );
    let r = check(&inst, &s);
    assert_eq!((r.peak_memory, r.peak_at), (Bytes(2), Ticks(3)));
    assert_eq!(
        r.violations.iter().map(|v| v.kind()).collect::<Vec<_>>(),
        [
            "offload_absent",
            "input_not_resident",
            "prefetch_without_cpu_copy",
            "input_stale",
            "input_stale"
        ]
    );
}

/// A CPU op producing t and an offload of t under way together hold one CPU
/// copy of t (MODEL.md §2.2), in either order of their starts: 4 B, not 8 B
/// (the checker once counted t twice and reported cpu_memory_exceeded).
#[test]
fn cpuhold_one_cpu_copy_while_an_offload_and_a_cpu_producer_overlap() {
    let dir = repo().join("instances/regressions");
    for what in ["offload-during-cpu-op", "cpu-op-during-offload"] {
        let (inst, s) = load(
            &dir.join("cpuhold.json"),
            &dir.join(format!("cpuhold.{what}.valid.schedule.json")),
        );
        let r = check(&inst, &s);
        assert_eq!(r.peak_cpu_memory, Bytes(4), "{what}");
        assert!(r.valid, "{what}: {:?}", r.violations);
    }
}
