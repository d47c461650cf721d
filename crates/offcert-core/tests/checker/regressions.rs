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
