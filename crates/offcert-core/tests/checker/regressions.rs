//! Replays the shrunk failures kept in `instances/regressions/`: the checker and
//! the independent re-check agree on each, the verdict is the one the file name
//! states, and each file's own point (in its note) still holds.

use crate::common::*;
use offcert_core::check::check;
use offcert_core::units::{Bytes, Ticks};

#[test]
fn every_regression_replays() {
    let all = pairs_below(&repo().join("instances/regressions"));
    assert!(!all.is_empty());
    // Subfolders are replayed too (issue 23's limit4 chain lives in remat/).
    assert!(all
        .iter()
        .any(|(_, s)| s.ends_with("remat/limit4.better.valid.schedule.json")));
    for (i, s) in all {
        let (inst, sched) = load(&i, &s);
        let r = agree(&inst, &sched);
        let name = s.file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(r.valid, !name.contains(".invalid."), "{name}");
    }
}

/// A void offload (R3: x2 is still pending, F1 produces it) releases nothing
/// (models/MODEL.md §2.3.1): F1's output lands at 1, so F2, B2 and B1 find x2,
/// and the void prefetch at 2 lands nothing. Before the rule the offload's end
/// released F1's buffer and the prefetch landed a copy holding no version, and
/// B2 and B1 were reported reading `v18446744073709551615`.
#[test]
fn drift_void_offload_releases_nothing() {
    let dir = repo().join("instances/regressions");
    let (inst, s) = load(
        &dir.join("drift.json"),
        &dir.join("drift.offload-during-producer.invalid.schedule.json"),
    );
    let r = check(&inst, &s);
    // x2 (1 B) from 0, x4 (1 B) from 1 to 2, y2 (1 B) from 3.
    assert_eq!((r.peak_memory, r.peak_at), (Bytes(2), Ticks(1)));
    assert_eq!(
        r.violations.iter().map(|v| v.kind()).collect::<Vec<_>>(),
        [
            "offload_absent",
            "prefetch_without_cpu_copy",
            "prefetch_resident"
        ]
    );
}

/// An op's output released while the op runs must not come back without its
/// memory (the checker's counter once drifted 1 B low; `drift2.json`).
#[test]
fn drift_output_released_while_produced_lands_nowhere() {
    let dir = repo().join("instances/regressions");
    let (inst, s) = load(
        &dir.join("drift2.json"),
        &dir.join("drift2.delete-during-producer.invalid.schedule.json"),
    );
    let r = agree(&inst, &s);
    assert_eq!((r.peak_memory, r.peak_at), (Bytes(1), Ticks(0)));
    assert_eq!(
        r.violations
            .iter()
            .map(|v| (v.kind(), v.at()))
            .collect::<Vec<_>>(),
        [
            ("released_while_in_use".to_string(), Ticks(1)),
            ("input_not_resident".to_string(), Ticks(2)),
            ("input_not_resident".to_string(), Ticks(3)),
            ("input_not_resident".to_string(), Ticks(3)),
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

/// Issue 23, Why 5: on `remat/limit4.json` a schedule whose forwards before B3
/// run in layer order 1, 2, 3, 2 (outside limit 4 of proofs/REMAT-EXACT.md)
/// is valid with makespan 10, one tick below the optimum within the limits.
#[test]
fn limit4_chain_has_a_valid_schedule_of_makespan_10() {
    let dir = repo().join("instances/regressions/remat");
    let (inst, s) = load(
        &dir.join("limit4.json"),
        &dir.join("limit4.better.valid.schedule.json"),
    );
    let r = agree(&inst, &s);
    assert!(r.valid);
    assert_eq!(check(&inst, &s).makespan, Ticks(10));
    assert_has_note(&dir.join("limit4.json"));
    assert_has_note(&dir.join("limit4.better.valid.schedule.json"));
}
