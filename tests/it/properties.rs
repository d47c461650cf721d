//! Property tests (quickcheck) on random instances of both families:
//! earliest-start schedules pass the checker; each of the five mutations of
//! issue 2 is caught by the right rule; serde round-trips; every witness the
//! checker reports confirms against the inputs.
//!
//! Schedules: activation chains by the shared ASAP simulator
//! (`offcert::simulate::asap`) with a random offload plan; weight chains by the
//! cyclic earliest-start builder of `tests/common` (weights resident,
//! prefetched before F and offloaded after B, or the discount rule's delete
//! after F and second prefetch before B).

use crate::common;

use common::*;
use offcert::check::{check, Violation};
use offcert::family::InstanceFile;
use offcert::model::Direction;
use offcert::schedule::{Event, ScheduleFile};
use offcert::units::{Bytes, Ticks};
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

type Spec = Vec<(u8, u8, u8, u8)>;

/// 200 cases, at most 4,000 draws (most schedules offer nothing to mutate),
/// at least 60 passing.
fn props() -> quickcheck::QuickCheck {
    qc(200, 60).max_tests(cases(4000))
}

static MOVED_DATA: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

#[test]
fn earliest_start_schedules_of_both_families_pass() {
    fn prop(family: bool, spec: Spec, bw: u8, slack: u8, mask: u16) -> TestResult {
        let Some((inst, s)) = either_schedule(family, &spec, bw, slack, mask) else {
            return TestResult::discard();
        };
        if s.events.iter().any(|e| matches!(e, Event::Transfer { .. })) {
            MOVED_DATA[family as usize].fetch_add(1, Relaxed);
        }
        let r = check(&inst, &s);
        if !r.valid {
            eprintln!(
                "{:?}",
                r.violations
                    .iter()
                    .map(|v| v.describe(&inst))
                    .collect::<Vec<_>>()
            );
        }
        // Valid, and the certificate carries the checker's makespan.
        TestResult::from_bool(r.valid && r.certificate().map(|c| c.makespan()) == Some(r.makespan))
    }
    props().quickcheck(prop as fn(bool, Spec, u8, u8, u16) -> TestResult);
    // Not vacuous: both families produced many schedules that move data.
    assert!(
        MOVED_DATA[0].load(Relaxed) >= 20,
        "weight chains with transfers"
    );
    assert!(
        MOVED_DATA[1].load(Relaxed) >= 20,
        "activation chains with transfers"
    );
}

/// Shortening a transfer below size/β is a bandwidth violation on that event.
#[test]
fn shortened_transfer_is_caught_by_bandwidth() {
    fn prop(family: bool, spec: Spec, bw: u8, slack: u8, mask: u16, pick: usize) -> TestResult {
        let Some((inst, s)) = either_schedule(family, &spec, bw, slack, mask) else {
            return TestResult::discard();
        };
        let Some((m, i)) = shorten_transfer(&inst, &s, pick) else {
            return TestResult::discard();
        };
        let r = agree(&inst, &m);
        TestResult::from_bool(has(&r, |v| {
            matches!(v, Violation::TransferTooFast { event, took, needs_at_least, .. }
                if event.ix() == i && *took + Ticks(1) == *needs_at_least)
        }))
    }
    props().quickcheck(prop as fn(bool, Spec, u8, u8, u16, usize) -> TestResult);
}

/// Starting an op one tick before the prefetch of its input ends is a
/// dependency violation: the input is not resident.
#[test]
fn op_before_its_prefetch_ends_is_caught_by_dependencies() {
    fn prop(family: bool, spec: Spec, bw: u8, slack: u8, mask: u16, pick: usize) -> TestResult {
        let Some((inst, s)) = either_schedule(family, &spec, bw, slack, mask) else {
            return TestResult::discard();
        };
        let Some((m, j, t)) = start_before_prefetch_ends(&inst, &s, pick) else {
            return TestResult::discard();
        };
        let r = agree(&inst, &m);
        TestResult::from_bool(has(
            &r,
            |v| matches!(v, Violation::InputNotResident { event, tensor, .. } if event.ix() == j && *tensor == t),
        ))
    }
    props().quickcheck(prop as fn(bool, Spec, u8, u8, u16, usize) -> TestResult);
}

/// Deleting a value still needed whose only current copy is on the GPU is data
/// loss (activations right after they are produced; weights right after B
/// updates them).
#[test]
fn delete_without_current_cpu_copy_is_caught_by_no_data_loss() {
    fn prop(family: bool, spec: Spec, bw: u8, slack: u8, mask: u16, pick: usize) -> TestResult {
        let Some((inst, s)) = either_schedule(family, &spec, bw, slack, mask) else {
            return TestResult::discard();
        };
        let Some((m, t)) = delete_without_cpu_copy(&inst, &s, pick) else {
            return TestResult::discard();
        };
        let r = agree(&inst, &m);
        let last = m.events.len() - 1;
        TestResult::from_bool(has(
            &r,
            |v| matches!(v, Violation::DataLoss { event, tensor, .. } if event.ix() == last && *tensor == t),
        ))
    }
    props().quickcheck(prop as fn(bool, Spec, u8, u8, u16, usize) -> TestResult);
}

/// Moving a transfer onto the start of another on the same channel is a
/// resources violation on that channel.
#[test]
fn overlapping_transfers_are_caught_by_resources() {
    fn prop(family: bool, spec: Spec, bw: u8, slack: u8, mask: u16, pick: usize) -> TestResult {
        let Some((inst, s)) = either_schedule(family, &spec, bw, slack, mask) else {
            return TestResult::discard();
        };
        let Some(m) = overlap_transfers(&inst, &s, pick) else {
            return TestResult::discard();
        };
        let r = agree(&inst, &m);
        TestResult::from_bool(has(&r, |v| matches!(v, Violation::ChannelOverlap { .. })))
    }
    props().quickcheck(prop as fn(bool, Spec, u8, u8, u16, usize) -> TestResult);
}

/// With the capacity one byte below the reported peak the same schedule breaks
/// rule memory, and the largest reported use is exactly that peak.
#[test]
fn capacity_below_the_peak_is_caught_by_memory() {
    fn prop(family: bool, spec: Spec, bw: u8, slack: u8, mask: u16) -> TestResult {
        let Some((mut inst, s)) = either_schedule(family, &spec, bw, slack, mask) else {
            return TestResult::discard();
        };
        let peak = check(&inst, &s).peak_memory;
        if peak == Bytes(0) {
            return TestResult::discard();
        }
        inst.machine.gpu_capacity = Bytes(peak.0 - 1);
        let r = agree(&inst, &s);
        let worst = r
            .violations
            .iter()
            .filter_map(|v| match v {
                Violation::MemoryExceeded { used, .. } => Some(*used),
                _ => None,
            })
            .max();
        TestResult::from_bool(
            worst == Some(peak) && r.violations.iter().all(|v| v.rule() == "memory"),
        )
    }
    props().quickcheck(prop as fn(bool, Spec, u8, u8, u16) -> TestResult);
}

static CONFIRMED: AtomicUsize = AtomicUsize::new(0);

/// Every witness the checker reports on a randomly broken schedule confirms
/// against the instance and schedule (`Violation::confirm`).
#[test]
fn every_witness_confirms() {
    fn prop(
        family: bool,
        spec: Spec,
        bw: u8,
        slack: u8,
        mask: u16,
        muts: Vec<(u8, usize, i8)>,
    ) -> TestResult {
        let Some((inst, s)) = either_schedule(family, &spec, bw, slack, mask) else {
            return TestResult::discard();
        };
        let m = mutate_up_to_three(s, muts, |_| {});
        let r = check(&inst, &m);
        for v in &r.violations {
            if !v.confirm(&inst, &m) {
                eprintln!("does not confirm: {v:?}");
                return TestResult::failed();
            }
            CONFIRMED.fetch_add(1, Relaxed);
        }
        TestResult::passed()
    }
    props().quickcheck(prop as fn(bool, Spec, u8, u8, u16, Vec<(u8, usize, i8)>) -> TestResult);
    assert!(
        CONFIRMED.load(Relaxed) >= 100,
        "too few witnesses exercised"
    );
}

/// Instance files, schedule files and reports survive a JSON round trip.
#[test]
fn serde_round_trips() {
    fn prop(
        family: bool,
        spec: Spec,
        bw: u8,
        slack: u8,
        mask: u16,
        muts: Vec<(u8, usize, i8)>,
    ) -> TestResult {
        if spec.is_empty() {
            return TestResult::discard();
        }
        // Instance files (the family front-ends) and the compiled instance.
        let file = if family {
            InstanceFile::ActivationChain(activation_chain(&spec, bw, slack))
        } else {
            InstanceFile::WeightChain(weight_chain(&spec, bw))
        };
        let text = serde_json::to_string_pretty(&file).unwrap();
        let (back, inst) = offcert::io::parse_instance("round-trip.json", &text).unwrap();
        if back != file || inst != file.compile().unwrap() {
            return TestResult::failed();
        }
        // The core form of the compiled instance compiles to the same instance.
        let core = offcert::family::CoreFile::from_instance(&inst);
        let mut v = serde_json::to_value(&core).unwrap();
        v["family"] = "core".into();
        let (_, again) = offcert::io::parse_instance("core.json", &v.to_string()).unwrap();
        if again.tensors != inst.tensors
            || again.ops != inst.ops
            || again.order != inst.order
            || again.machine != inst.machine
        {
            return TestResult::failed();
        }
        let Some((inst, s)) = either_schedule(family, &spec, bw, slack, mask) else {
            return TestResult::discard();
        };
        let mut m = s;
        for (w, i, d) in muts.into_iter().take(2) {
            if let Some(x) = random_mutation(&m, w, i, d) {
                m = x;
            }
        }
        // Schedule files.
        let sf = ScheduleFile::from_schedule(&m, &inst);
        let text = serde_json::to_string(&sf).unwrap();
        let parsed = offcert::io::parse_schedule("s.json", &text, &inst).unwrap();
        if parsed != m {
            return TestResult::failed();
        }
        // Reports: the JSON verdict's violations and warnings read back equal.
        let r = check(&inst, &m);
        let j = serde_json::to_value(&r).unwrap();
        let vs: Vec<Violation> = serde_json::from_value(j["violations"].clone()).unwrap();
        let ws: Vec<offcert::check::Warning> =
            serde_json::from_value(j["warnings"].clone()).unwrap();
        TestResult::from_bool(
            vs == r.violations
                && ws == r.warnings
                && j["valid"] == serde_json::Value::Bool(r.valid)
                && j["makespan"] == serde_json::json!(r.makespan.0)
                && j["peak_memory"] == serde_json::json!(r.peak_memory.0),
        )
    }
    props().quickcheck(prop as fn(bool, Spec, u8, u8, u16, Vec<(u8, usize, i8)>) -> TestResult);
}

/// The discount rule in the builder is really exercised: some weight chains
/// delete a weight after F and prefetch it again before B with one offload.
#[test]
fn the_discount_builder_uses_one_offload_for_two_prefetches() {
    let c = weight_chain(&[(1, 2, 4, 2), (1, 2, 4, 2)], 3);
    let (inst, s) = weight_schedule(&c, &[Keep::Discount, Keep::Discount]);
    let r = check(&inst, &s);
    assert!(r.valid, "{:?}", r.violations);
    assert!(r.warnings.is_empty());
    let count = |d: Direction| {
        s.events
            .iter()
            .filter(|e| matches!(e, Event::Transfer { dir, .. } if *dir == d))
            .count()
    };
    assert_eq!(
        (count(Direction::Prefetch), count(Direction::Offload)),
        (4, 2)
    );
}

/// The helper every property goes through fails, not passes, when every case
/// is discarded.
#[test]
#[should_panic(expected = "Unable to generate enough tests")]
fn qc_fails_when_every_case_is_discarded() {
    fn prop(_: u8) -> TestResult {
        TestResult::discard()
    }
    qc(10, 1).quickcheck(prop as fn(u8) -> TestResult);
}

static SIMULATED_WITH_TRANSFERS: AtomicUsize = AtomicUsize::new(0);

/// Every ASAP schedule (`offcert::simulate::asap`) of a random plan (any set of
/// offloaded activations, look-ahead none or 1..=3) on a random chain of up to
/// 9 layers (`activation_chain_5`) passes the checker under its own release
/// rule, either of the two; many of them really move data.
#[test]
fn every_simulated_schedule_passes_the_checker() {
    use offcert::model::ReleaseRule;
    use offcert::simulate::{asap, SimError};
    fn prop(spec: Vec<(u8, u8, u8, u8, u8)>, mem: u8, bw: u8, mask: u32, la: u8) -> TestResult {
        if spec.is_empty() || spec.len() > 9 {
            return TestResult::discard();
        }
        let mut c = activation_chain_5(&spec, mem, bw);
        if mask >> 31 & 1 == 1 {
            c.release = ReleaseRule::AfterStart;
        }
        let inst = c.compile().unwrap();
        match asap(&inst, &activation_plan(&c, mask, la)) {
            Ok(s) => {
                if s.events.iter().any(|e| matches!(e, Event::Transfer { .. })) {
                    SIMULATED_WITH_TRANSFERS.fetch_add(1, Relaxed);
                }
                let r = check(&inst, &s);
                if !r.valid {
                    let v: Vec<String> = r.violations.iter().map(|v| v.describe(&inst)).collect();
                    return TestResult::error(format!("{c:?}\n{v:?}"));
                }
                TestResult::passed()
            }
            Err(SimError::Stuck { .. }) => TestResult::discard(),
            Err(e) => TestResult::error(e.to_string()),
        }
    }
    qc(300, 100)
        .max_tests(cases(10000))
        .quickcheck(prop as fn(_, _, _, _, _) -> TestResult);
    assert!(SIMULATED_WITH_TRANSFERS.load(Relaxed) as u64 >= cases(50));
}

/// With the peak memory and no plan, the ASAP schedule is the compute sum.
#[test]
fn with_ample_memory_and_no_plan_the_makespan_is_the_compute_sum() {
    use offcert::simulate::{asap, Plan};
    let c = activation_chain_5(&[(2, 3, 4, 0, 0), (1, 1, 4, 0, 0), (3, 2, 4, 0, 0)], 255, 1);
    let inst = c.compile().unwrap();
    let s = asap(&inst, &Plan::default()).unwrap();
    let r = check(&inst, &s);
    assert!(r.valid);
    assert_eq!(r.makespan, inst.total_compute());
}
