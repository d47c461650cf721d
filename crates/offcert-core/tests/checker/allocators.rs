//! R7 under each allocator (`models/MODEL.md` §2.8): a valid and an invalid
//! fixture per allocator, each asserting the exact violation and its witness,
//! and each schedule also judged under `exact` (stricter-valid ⇒ exact-valid;
//! the invalid ones are valid there: the allocator alone refuses them). The
//! fixtures' notes carry the hand computation.

use crate::common::*;
use crate::rules::{invalid, valid};
use offcert_core::allocator::{FreeBlock, Pool};
use offcert_core::check::{check, instance_digest, AllocatorPeaks, Violation};
use offcert_core::model::{Allocator, Instance, OpId, TensorId};
use offcert_core::schedule::{EventId, Schedule};
use offcert_core::units::{Bytes, Ticks};
use offcert_recheck::recheck;
use quickcheck::TestResult;

const MIB: u64 = 1 << 20;

fn fixture(instance: &str, schedule: &str) -> (Instance, Schedule) {
    let dir = repo().join("instances/fixtures");
    load(&dir.join(instance), &dir.join(schedule))
}

/// The same schedule under `exact`: valid, and the re-check agrees.
fn valid_under_exact(instance: &str, schedule: &str) {
    let (mut inst, s) = fixture(instance, schedule);
    inst.allocator = Allocator::Exact;
    let r = check(&inst, &s);
    assert!(r.valid, "{schedule} under exact: {:?}", r.violations);
    assert_eq!(r.allocator_peaks, None);
    assert!(recheck(&inst, &s).valid);
}

#[test]
fn va_valid_fixture_occupies_whole_chunks() {
    let r = valid("va1.json", "va1.valid.schedule.json");
    let chunk = Bytes(4);
    assert_eq!(r.allocator, Allocator::Va { chunk });
    assert_eq!(
        r.certificate().unwrap().allocator(),
        Allocator::Va { chunk }
    );
    assert_eq!((r.peak_memory, r.peak_at), (Bytes(7), Ticks(2)));
    let peaks = r.allocator_peaks.clone().unwrap();
    assert_eq!(peaks.peak_occupied, Some(Bytes(12)));
    assert_eq!(peaks.max_live_allocations, Some(3));
    assert_eq!((peaks.peak_reserved, peaks.peak_allocated), (None, None));
    valid_under_exact("va1.json", "va1.valid.schedule.json");
}

#[test]
fn va_invalid_fixture_is_over_in_chunks_only() {
    assert_eq!(
        invalid("va1m11.json", "va1.valid.schedule.json"),
        vec![Violation::VaMemoryExceeded {
            at: Ticks(2),
            used: Bytes(7),
            occupied: Bytes(12),
            chunk: Bytes(4),
            capacity: Bytes(11),
            resident: vec![TensorId(0), TensorId(1)],
            running: vec![EventId(2)],
        }]
    );
    valid_under_exact("va1m11.json", "va1.valid.schedule.json");
}

#[test]
fn caching_valid_fixture_reuses_the_merged_hole() {
    let r = valid("frag1.json", "frag1.valid.schedule.json");
    assert_eq!(r.allocator, Allocator::Caching);
    assert_eq!((r.peak_memory, r.peak_at), (Bytes(20 * MIB), Ticks(3)));
    let want = AllocatorPeaks {
        peak_reserved: Some(Bytes(20 * MIB)),
        peak_allocated: Some(Bytes(20 * MIB)),
        ..Default::default()
    };
    assert_eq!(r.allocator_peaks, Some(want));
    valid_under_exact("frag1.json", "frag1.valid.schedule.json");
}

#[test]
fn caching_refuses_a_fragmented_request_with_its_witness() {
    let hole = |addr: u64| FreeBlock {
        addr,
        size: Bytes(5 * MIB),
        segment: 2 * MIB,
        pool: Pool::Large,
    };
    let v = invalid("frag1.json", "frag1.fragmented.invalid.schedule.json");
    assert_eq!(
        v,
        vec![Violation::AllocatorOutOfMemory {
            event: Some(EventId(6)),
            at: Ticks(4),
            op: None,
            tensor: Some(TensorId(4)),
            request: Bytes(6 * MIB),
            rounded: Bytes(6 * MIB),
            pool: Pool::Large,
            segment: Bytes(20 * MIB),
            capacity: Bytes(20 * MIB),
            reserved: Bytes(20 * MIB),
            allocated: Bytes(10 * MIB),
            largest_free: Bytes(5 * MIB),
            free_blocks: vec![hole(2 * MIB), hole(12 * MIB)],
        }]
    );
    let (inst, _) = fixture("frag1.json", "frag1.valid.schedule.json");
    let text = v[0].describe(&inst);
    assert!(
        text.contains(
            "largest hole 5.24288 MB; free blocks: 5.24288 MB at 0x200000, 5.24288 MB at 0xc00000"
        ),
        "{text}"
    );
    valid_under_exact("frag1.json", "frag1.fragmented.invalid.schedule.json");
}

/// An op's scratch is a request of its own: with 1 B more of scratch than
/// the merged hole leaves, F's tmp fails where y did not.
#[test]
fn caching_refuses_an_ops_scratch() {
    let (mut inst, s) = fixture("frag1.json", "frag1.valid.schedule.json");
    inst.ops[4].temp = Bytes(5 * MIB);
    let r = check(&inst, &s);
    let [Violation::AllocatorOutOfMemory {
        op,
        tensor,
        request,
        largest_free,
        ..
    }] = r.violations.as_slice()
    else {
        panic!("{:?}", r.violations);
    };
    assert_eq!((*op, *tensor), (Some(OpId(4)), None));
    assert_eq!((*request, *largest_free), (Bytes(5 * MIB), Bytes(4 * MIB)));
    assert!(r.violations[0].confirm(&inst, &s));
    let v = recheck(&inst, &s);
    assert_eq!(v.broken_rules(), rules(&r));
    assert_eq!(v.kinds(), ["allocator_out_of_memory"].into());
}

/// A copy of the initial state the allocator cannot place is reported at 0
/// with no event.
#[test]
fn caching_refuses_an_initial_copy() {
    let (mut inst, s) = fixture("va1.json", "va1.valid.schedule.json");
    inst.allocator = Allocator::Caching;
    let r = check(&inst, &s);
    assert!(matches!(
        r.violations.first(),
        Some(Violation::AllocatorOutOfMemory {
            event: None,
            at: Ticks(0),
            tensor: Some(TensorId(0)),
            ..
        })
    ));
    assert!(r.violations.iter().all(|v| v.confirm(&inst, &s)));
    assert_eq!(recheck(&inst, &s).broken_rules(), rules(&r));
}

/// The digest covers a non-default allocator, and an `exact` instance keeps
/// the digest it had before allocators existed.
#[test]
fn digest_covers_the_allocator() {
    let (mut inst, _) = fixture("va1.json", "va1.valid.schedule.json");
    let va = instance_digest(&inst);
    inst.allocator = Allocator::Va { chunk: Bytes(8) };
    let va8 = instance_digest(&inst);
    inst.allocator = Allocator::Caching;
    let caching = instance_digest(&inst);
    inst.allocator = Allocator::Exact;
    let exact = instance_digest(&inst);
    let all: std::collections::BTreeSet<_> = [&va, &va8, &caching, &exact].into();
    assert_eq!(all.len(), 4);
    // The baseline test below pins every `exact` fixture's digest.
    assert!(!exact.is_empty());
}

/// `exact` changes nothing: every fixture pair gives the verdict, peaks,
/// violation kinds and digests it gave before allocators existed (pinned from
/// `offcert check --json` on main at 0d54e9d, `exact_baseline.json`).
#[test]
fn exact_reproduces_every_fixture_verdict_and_digest() {
    let text = std::fs::read_to_string(
        repo().join("crates/offcert-core/tests/checker/exact_baseline.json"),
    )
    .unwrap();
    let base: serde_json::Value = serde_json::from_str(&text).unwrap();
    let rows = base["rows"].as_array().unwrap();
    assert!(rows.len() >= 50);
    for row in rows {
        let (i, s) = (
            row["instance"].as_str().unwrap(),
            row["schedule"].as_str().unwrap(),
        );
        let (inst, sched) = fixture(i, s);
        assert!(inst.allocator.is_default(), "{i}");
        let r = check(&inst, &sched);
        let got = serde_json::json!({
            "instance": i, "schedule": s, "valid": r.valid,
            "peak_memory": r.peak_memory.0, "peak_cpu_memory": r.peak_cpu_memory.0,
            "kinds": r.violations.iter().map(|v| v.kind()).collect::<Vec<_>>(),
            "instance_sha256": r.instance_sha256, "schedule_sha256": r.schedule_sha256,
        });
        assert_eq!(&got, row, "{s}");
        let json = serde_json::to_value(r.report()).unwrap();
        assert!(json.get("allocator").is_none() && json.get("allocator_peaks").is_none());
    }
}

/// Random weight schedules (cyclic), scaled so that requests reach both pools
/// and the 20 MiB segments, under the caching allocator at a capacity from
/// the exact peak to 24 MiB above it: the re-check agrees on each and on
/// mutations of it, and a schedule valid under `caching` is valid under
/// `exact`. At least 20 of the cases must be valid under `caching`.
#[test]
fn caching_agrees_with_the_recheck_and_implies_exact() {
    fn prop(
        spec: Vec<(u8, u8, u8, u8)>,
        bw: u8,
        keep: Vec<u8>,
        pick: (u8, u8),
        muts: Vec<(u8, usize, i8)>,
    ) -> TestResult {
        if spec.is_empty() {
            return TestResult::discard();
        }
        let c = weight_chain(&spec, bw);
        let keep: Vec<Keep> = keep.iter().map(|b| Keep::from_bits(*b)).collect();
        let (inst, s) = weight_schedule(&c, &keep);
        let k = [1u64 << 18, 1 << 20, 3 << 19][pick.0 as usize % 3];
        let mut strict = scaled(&inst, k);
        let peak = check(&strict, &s).peak_memory.0;
        strict.machine.gpu_capacity = Bytes(peak + (pick.1 as u64 % 25) * MIB);
        let exact_valid = check(&strict, &s).valid;
        strict.allocator = Allocator::Caching;
        let r = agree(&strict, &s);
        agree_after_mutations(&strict, s, muts);
        if !r.valid {
            return TestResult::discard();
        }
        TestResult::from_bool(exact_valid)
    }
    qc(100, 20).quickcheck(prop as fn(_, _, _, _, _) -> TestResult);
}
