//! One valid and one invalid fixture per rule of `models/MODEL.md`, each with
//! the exact violation (variant and fields) the checker must report. The
//! fixtures live in `instances/fixtures/`; their notes carry the hand
//! computation behind every number asserted here.

mod common;

use common::*;
use offcert::check::{check, Report, Violation};
use offcert::model::{Channel, Device, OpId, TensorId};
use offcert::recheck::recheck;
use offcert::schedule::EventId;
use offcert::units::{Bandwidth, Bytes, Ticks};

fn run(instance: &str, schedule: &str) -> Report {
    let dir = repo().join("instances/fixtures");
    let (inst, s) = load(&dir.join(instance), &dir.join(schedule));
    let r = check(&inst, &s);
    // The independent re-check reaches the same verdict on the same rules.
    let v = recheck(&inst, &s);
    assert_eq!(v.valid, r.valid, "{schedule}: re-check verdict");
    assert_eq!(v.broken_rules(), rules(&r), "{schedule}: re-check rules");
    for w in &r.violations {
        assert!(
            w.confirm(&inst, &s),
            "{schedule}: witness does not confirm: {w:?}"
        );
    }
    r
}

fn valid(instance: &str, schedule: &str) -> Report {
    let r = run(instance, schedule);
    assert!(r.valid, "{schedule}: {:?}", r.violations);
    assert!(r.violations.is_empty());
    assert!(r.certificate().is_some());
    r
}

fn invalid(instance: &str, schedule: &str) -> Vec<Violation> {
    let r = run(instance, schedule);
    assert!(!r.valid, "{schedule} passed");
    assert!(r.certificate().is_none());
    r.violations
}

// act3: x_i = tensor i, y_i = tensor 4 + i; F_i = op i, B_i = op 3 + i.
const X0: TensorId = TensorId(0);
const B0: OpId = OpId(3);

#[test]
fn act3_valid_fixture_measurements() {
    let r = valid("act3.json", "act3.valid.schedule.json");
    assert_eq!(r.makespan, Ticks(15));
    assert_eq!(r.peak_memory, Bytes(12));
    assert_eq!(r.peak_at, Ticks(6));
    assert_eq!(r.compute_idle, Ticks(0));
    assert_eq!(r.channel_busy.len(), 1);
    assert_eq!(r.channel_busy[0].channel, Channel::Link);
    assert_eq!(r.channel_busy[0].busy, Ticks(8));
}

#[test]
fn rule_resources() {
    valid("act3.json", "act3.valid.schedule.json");
    assert_eq!(
        invalid("act3.json", "act3.resources.invalid.schedule.json"),
        vec![Violation::ChannelOverlap {
            channel: Channel::Link,
            first: EventId(1),
            second: EventId(3),
            first_end: Ticks(3),
            second_start: Ticks(2),
        }]
    );
}

#[test]
fn rule_duration() {
    valid("act3.json", "act3.valid.schedule.json");
    assert_eq!(
        invalid("act3.json", "act3.duration.invalid.schedule.json"),
        vec![Violation::WrongDuration {
            event: EventId(9),
            op: B0,
            start: Ticks(12),
            end: Ticks(16),
            duration: Ticks(3),
        }]
    );
}

#[test]
fn rule_bandwidth() {
    let r = valid("act3b.json", "act3b.valid.schedule.json");
    assert_eq!(r.makespan, Ticks(18));
    assert_eq!(
        invalid("act3b.json", "act3b.bandwidth.invalid.schedule.json"),
        vec![Violation::TransferTooFast {
            event: EventId(5),
            tensor: X0,
            bytes: Bytes(4),
            took: Ticks(2),
            needs_at_least: Ticks(3),
            bandwidth: Bandwidth::new(3, 2),
        }]
    );
}

#[test]
fn rule_dependencies() {
    valid("act3.json", "act3.valid.schedule.json");
    assert_eq!(
        invalid("act3.json", "act3.dependencies.invalid.schedule.json"),
        vec![Violation::InputNotResident {
            event: EventId(9),
            at: Ticks(12),
            op: B0,
            tensor: X0,
            ready_at: Some(Ticks(13)),
        }]
    );
}

#[test]
fn rule_memory() {
    let r = valid("act3m8.json", "act3m8.valid.schedule.json");
    assert_eq!(r.makespan, Ticks(19));
    assert_eq!(r.peak_memory, Bytes(8));
    let t = |v: &[u32]| v.iter().map(|i| TensorId(*i)).collect::<Vec<_>>();
    assert_eq!(
        invalid("act3m8.json", "act3m8.memory.invalid.schedule.json"),
        vec![
            Violation::MemoryExceeded {
                at: Ticks(6),
                used: Bytes(12),
                capacity: Bytes(8),
                resident: t(&[1, 2, 3, 6, 7]),
                running: vec![EventId(5)],
            },
            Violation::MemoryExceeded {
                at: Ticks(10),
                used: Bytes(12),
                capacity: Bytes(8),
                resident: t(&[0, 1, 2, 5, 6]),
                running: vec![EventId(7)],
            },
        ]
    );
}

#[test]
fn rule_memory_cpu_side() {
    valid("cpu8.json", "cpu8.valid.schedule.json");
    assert_eq!(
        invalid("cpu4.json", "cpu4.memory.invalid.schedule.json"),
        vec![Violation::CpuMemoryExceeded {
            at: Ticks(4),
            used: Bytes(8),
            capacity: Bytes(4),
        }]
    );
}

#[test]
fn rule_completeness_one_shot() {
    valid("act3.json", "act3.valid.schedule.json");
    assert_eq!(
        invalid("act3.json", "act3.completeness.invalid.schedule.json"),
        vec![Violation::MissingOp {
            device: Device::Gpu,
            position: 5,
            expected: B0,
        }]
    );
}

// w2: a0 a1 a2 = tensors 0 1 2, w1 w2 = 3 4, d1 = 5; F1 F2 = ops 0 1, B1 B2 = ops 2 3.
const W1: TensorId = TensorId(3);
const W2: TensorId = TensorId(4);

#[test]
fn rule_completeness_cyclic_state() {
    let r = valid("w2.json", "w2.resident.valid.schedule.json");
    assert_eq!(r.makespan, Ticks(6));
    assert_eq!(r.peak_memory, Bytes(18));
    assert_eq!(
        invalid("w2.json", "w2.state.invalid.schedule.json"),
        vec![Violation::StateMismatch {
            tensor: W1,
            start_gpu: true,
            start_cpu: true,
            end_gpu: true,
            end_cpu: false,
        }]
    );
}

#[test]
fn rule_no_data_loss_and_the_discount_rule() {
    let r = valid("w2.json", "w2.offload.valid.schedule.json");
    assert!(r.warnings.is_empty());
    assert_eq!(
        invalid("w2.json", "w2.dataloss.invalid.schedule.json"),
        vec![
            Violation::StateMismatch {
                tensor: W2,
                start_gpu: false,
                start_cpu: true,
                end_gpu: false,
                end_cpu: false,
            },
            Violation::InputStale {
                event: EventId(1),
                at: Ticks(1),
                op: OpId(1),
                tensor: W2,
                held: Some(0),
                latest: 1,
            },
            Violation::InputStale {
                event: EventId(2),
                at: Ticks(2),
                op: OpId(3),
                tensor: W2,
                held: Some(0),
                latest: 1,
            },
            Violation::DataLoss {
                event: EventId(4),
                at: Ticks(4),
                tensor: W2,
                gpu_version: Some(2),
                cpu_version: Some(0),
                latest: 2,
            },
        ]
    );
}

/// Every fixture is used above, and follows the naming convention.
#[test]
fn every_fixture_has_a_note_and_the_expected_verdict() {
    let dir = repo().join("instances/fixtures");
    let all = pairs(&dir);
    assert!(all.len() >= 14, "{} fixtures", all.len());
    for (i, s) in all {
        for f in [&i, &s] {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            assert!(
                v.get("note")
                    .and_then(|n| n.as_str())
                    .is_some_and(|n| n.len() > 20),
                "{} has no note",
                f.display()
            );
        }
        let (inst, sched) = load(&i, &s);
        let name = s.file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(
            check(&inst, &sched).valid,
            !name.contains(".invalid."),
            "{name}"
        );
    }
}
