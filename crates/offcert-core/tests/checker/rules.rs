//! One valid and one invalid fixture per rule of `models/MODEL.md`, each with
//! the exact violation (variant and fields) the checker must report. The
//! fixtures live in `instances/fixtures/`; their notes carry the hand
//! computation behind every number asserted here.

use crate::common::*;
use offcert_core::check::{check, CheckOutcome, Violation, Warning};
use offcert_core::model::{Channel, Device, Direction, GroupId, OpId, ReleaseRule, TensorId};
use offcert_core::schedule::EventId;
use offcert_core::semantics::{Breach, GpuCopy, Holder, Lookahead, State};
use offcert_core::units::{Bandwidth, Bytes, Ticks};
use offcert_recheck::{recheck, Finding};

fn run(instance: &str, schedule: &str) -> CheckOutcome {
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

/// The independent re-check's findings on a fixture, in its own order.
fn rechecked(instance: &str, schedule: &str) -> Vec<Finding> {
    let dir = repo().join("instances/fixtures");
    let (inst, s) = load(&dir.join(instance), &dir.join(schedule));
    recheck(&inst, &s).findings
}

fn finding(
    rule: &'static str,
    kind: &'static str,
    event: Option<u32>,
    at: Option<i64>,
    tensor: Option<u32>,
) -> Finding {
    Finding {
        rule,
        kind,
        event: event.map(EventId),
        at: at.map(Ticks),
        tensor: tensor.map(TensorId),
    }
}

fn valid(instance: &str, schedule: &str) -> CheckOutcome {
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
    r.violations.clone()
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

/// Rule resources on the compute stream: two GPU ops of positive length overlap.
#[test]
fn rule_resources_compute_stream() {
    valid("cpu8.json", "cpu8.valid.schedule.json");
    assert_eq!(
        invalid("cpu8.json", "cpu8.resources.invalid.schedule.json"),
        vec![Violation::ComputeOverlap {
            device: Device::Gpu,
            first: EventId(0),
            second: EventId(1),
            first_end: Ticks(2),
            second_start: Ticks(1),
        }]
    );
    // The re-check compares every pair and names the later event of the pair.
    assert_eq!(
        rechecked("cpu8.json", "cpu8.resources.invalid.schedule.json"),
        vec![finding("resources", "compute_overlap", Some(1), None, None)]
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

// upd1: w = tensor 0; U (reads and modifies w) = op 0, R (reads w) = op 1.
const UPD_W: TensorId = TensorId(0);
const UPD_U: OpId = OpId(0);
const UPD_R: OpId = OpId(1);

/// No tensor is needed later in the state-level walk below.
struct NothingNeeded;
impl Lookahead for NothingNeeded {
    fn needed_after(&self, _: TensorId, _: Ticks) -> bool {
        false
    }
}

/// An op that modifies a tensor whose prefetch is still in flight: it breaks R1
/// at its start, and at its end only a *present* GPU copy takes the new version
/// (MODEL.md §2.3); the pending copy keeps the version its prefetch carries and
/// lands stale, so the next reader sees a stale input.
#[test]
fn rule_dependencies_update_while_the_prefetch_is_in_flight() {
    let r = valid("upd1.json", "upd1.valid.schedule.json");
    assert_eq!(r.makespan, Ticks(5));
    assert_eq!(r.peak_memory, Bytes(4));
    assert_eq!(
        invalid("upd1.json", "upd1.dependencies.invalid.schedule.json"),
        vec![
            Violation::InputNotResident {
                event: EventId(1),
                at: Ticks(1),
                op: UPD_U,
                tensor: UPD_W,
                ready_at: Some(Ticks(5)),
            },
            Violation::InputStale {
                event: EventId(2),
                at: Ticks(5),
                op: UPD_R,
                tensor: UPD_W,
                held: Some(0),
                latest: 1,
            },
        ]
    );
    assert_eq!(
        rechecked("upd1.json", "upd1.dependencies.invalid.schedule.json"),
        vec![
            finding(
                "dependencies",
                "input_not_resident",
                Some(1),
                Some(1),
                Some(0)
            ),
            finding("dependencies", "input_stale", Some(2), Some(5), Some(0)),
        ]
    );

    // The same steps on the shared state machine: the copy stays pending with
    // the prefetch's version v0 after U's end, and lands as v0 (stale).
    let dir = repo().join("instances/fixtures");
    let (inst, _) = load(
        &dir.join("upd1.json"),
        &dir.join("upd1.dependencies.invalid.schedule.json"),
    );
    let mut st = State::initial(&inst);
    let (flight, b) = st.transfer_start(&inst, Direction::Prefetch, UPD_W, Ticks(0), Ticks(5));
    assert_eq!((flight.version, b), (Some(0), vec![]));
    assert_eq!(
        st.op_start(&inst, UPD_U, Ticks(1), Ticks(4), &NothingNeeded),
        vec![Breach::InputNotResident {
            tensor: UPD_W,
            ready_at: Some(Ticks(5)),
        }]
    );
    assert_eq!(st.op_end(&inst, UPD_U, Ticks(4), &NothingNeeded), vec![]);
    assert_eq!(st.tensor(UPD_W).latest, 1);
    assert_eq!(
        st.tensor(UPD_W).gpu,
        GpuCopy::Pending {
            ready: Ticks(5),
            version: Some(0),
        }
    );
    assert_eq!(
        st.transfer_end(
            Direction::Prefetch,
            UPD_W,
            flight,
            false,
            Ticks(5),
            &NothingNeeded
        ),
        vec![]
    );
    assert_eq!(st.tensor(UPD_W).gpu, GpuCopy::Present(0));
    assert!(!st.tensor(UPD_W).gpu_current());
    assert_eq!(st.gpu_bytes(), Bytes(4));
}

/// The same rule when the updating op itself breaks nothing at its start: its
/// input is present then, and deleted and prefetched again while it runs. Under
/// the relaxation (upd1r) the delete is allowed, and the update does not land
/// in the new buffer, so the next reader sees a stale input. (Letting another
/// buffer take the new version passed this as valid.) Under the default rule
/// the delete itself breaks R10, and the stale read follows.
#[test]
fn rule_dependencies_update_while_its_input_is_fetched_again() {
    let stale = Violation::InputStale {
        event: EventId(4),
        at: Ticks(5),
        op: UPD_R,
        tensor: UPD_W,
        held: Some(0),
        latest: 1,
    };
    assert_eq!(
        invalid("upd1r.json", "upd1r.refetch.invalid.schedule.json"),
        vec![stale.clone()]
    );
    assert_eq!(
        rechecked("upd1r.json", "upd1r.refetch.invalid.schedule.json"),
        vec![finding(
            "dependencies",
            "input_stale",
            Some(4),
            Some(5),
            Some(0)
        )]
    );
    assert_eq!(
        invalid("upd1.json", "upd1.refetch.invalid.schedule.json"),
        vec![
            Violation::ReleasedWhileInUse {
                event: EventId(2),
                at: Ticks(2),
                tensor: UPD_W,
                holder: Holder::Op(OpId(0)),
                holder_event: Some(EventId(1)),
                from: Ticks(1),
                until: Ticks(4),
            },
            stale
        ]
    );
}

// hold1: a = tensor 0, b = tensor 1; P = op 0, Q = op 1.
const HOLD_A: TensorId = TensorId(0);

/// Rule R10 (released while in use): a delete strictly inside the reading op.
#[test]
fn rule_in_use_delete_inside_the_op() {
    assert_eq!(
        invalid("hold1.json", "hold1.in-use.invalid.schedule.json"),
        vec![Violation::ReleasedWhileInUse {
            event: EventId(2),
            at: Ticks(3),
            tensor: HOLD_A,
            holder: Holder::Op(OpId(0)),
            holder_event: Some(EventId(0)),
            from: Ticks(0),
            until: Ticks(4),
        }]
    );
    assert_eq!(
        rechecked("hold1.json", "hold1.in-use.invalid.schedule.json"),
        vec![finding(
            "released-while-in-use",
            "released_while_in_use",
            Some(2),
            Some(3),
            Some(0)
        )]
    );
}

/// Rule R10: a release exactly at the op's end is legal (an interval test).
#[test]
fn rule_in_use_release_at_the_end_is_valid() {
    let r = valid("hold1.json", "hold1.at-end.valid.schedule.json");
    assert_eq!((r.peak_memory, r.peak_at), (Bytes(8), Ticks(2)));
}

/// Rule R10: an offload's delete that ends inside the op waits for its end;
/// the memory stays held (peak 8 at 2). Under the relaxation it goes at once.
#[test]
fn rule_in_use_offload_delete_is_deferred() {
    let r = valid("hold1.json", "hold1.deferred.valid.schedule.json");
    assert_eq!((r.peak_memory, r.peak_at), (Bytes(8), Ticks(2)));
    assert_eq!(r.release, ReleaseRule::AfterEnd);
    let dir = repo().join("instances/fixtures");
    let (mut inst, s) = load(
        &dir.join("hold1.json"),
        &dir.join("hold1.deferred.valid.schedule.json"),
    );
    inst.release = ReleaseRule::AfterStart;
    let r = check(&inst, &s);
    assert!(r.valid);
    assert_eq!(
        (r.peak_memory, r.release),
        (Bytes(4), ReleaseRule::AfterStart)
    );
    assert!(recheck(&inst, &s).valid);
    // With 4 B the default rule runs out of memory at 2; the relaxation does not.
    inst.machine.gpu_capacity = Bytes(4);
    assert!(check(&inst, &s).valid);
    inst.release = ReleaseRule::AfterEnd;
    let r = check(&inst, &s);
    assert!(matches!(
        r.violations.as_slice(),
        [Violation::MemoryExceeded {
            at: Ticks(2),
            used: Bytes(8),
            ..
        }]
    ));
    assert_eq!(recheck(&inst, &s).broken_rules(), rules(&r));
}

/// Rule R10 under the relaxation: the delete inside the op is allowed.
#[test]
fn rule_in_use_relaxation_allows_the_early_release() {
    let dir = repo().join("instances/fixtures");
    let (mut inst, s) = load(
        &dir.join("hold1.json"),
        &dir.join("hold1.in-use.invalid.schedule.json"),
    );
    inst.release = ReleaseRule::AfterStart;
    assert!(check(&inst, &s).valid);
    assert!(recheck(&inst, &s).valid);
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

/// R9 steady state: a transfer crossing P reads a current value in the first
/// period (the warm-up, whose in-flight offload was read from S₀) and a stale
/// one in the second. The checker reports it as `not_steady` (rule name
/// steady-state), with no position in time (it compares two periods). Here the
/// stale value comes from a delete that loses w2's update and a prefetch of
/// the stale CPU copy, each reported too (the fixture's note has the steps).
#[test]
fn rule_steady_state_cyclic() {
    valid("w2.json", "w2.resident.valid.schedule.json");
    let r = run("w2.json", "w2.steady.invalid.schedule.json");
    assert!(!r.valid);
    assert_eq!(
        r.violations,
        vec![
            Violation::NotSteady {
                event: EventId(6),
                tensor: W2,
            },
            Violation::DataLoss {
                event: EventId(4),
                at: Ticks(2),
                tensor: W2,
                gpu_version: Some(1),
                cpu_version: Some(0),
                latest: 1,
            },
            Violation::InputStale {
                event: EventId(2),
                at: Ticks(3),
                op: OpId(3),
                tensor: W2,
                held: Some(0),
                latest: 1,
            },
        ]
    );
    assert_eq!(r.violations[0].rule(), "steady-state");
    assert_eq!(r.violations[0].kind(), "not_steady");
    assert_eq!(
        r.warnings,
        vec![Warning::RedundantOffload {
            event: EventId(6),
            tensor: W2,
            bytes: Bytes(4),
            ticks: Ticks(4),
        }]
    );
    assert_eq!(r.peak_memory, Bytes(18));
    let dir = repo().join("instances/fixtures");
    let (inst, s) = load(
        &dir.join("w2.json"),
        &dir.join("w2.steady.invalid.schedule.json"),
    );
    let v = recheck(&inst, &s);
    assert_eq!(
        v.findings,
        vec![
            finding("no-data-loss", "data_loss", Some(4), Some(2), Some(4)),
            finding("dependencies", "input_stale", Some(2), Some(3), Some(4)),
            finding("steady-state", "not_steady", Some(6), None, None),
        ]
    );
    assert_eq!(v.redundant_offloads, vec![EventId(6)]);
}

/// Every fixture is used above, and follows the naming convention.
// grp1: F B optG optC = ops 0 1 2 3; fwd bwd upd = groups 0 1 2.
const GRP_B: OpId = OpId(1);
const GRP_OPTC: OpId = OpId(3);
const GRP_UPD: GroupId = GroupId(2);

#[test]
fn rule_groups_double_update_and_never_ran() {
    let r = valid("grp1.json", "grp1.cpu-update.valid.schedule.json");
    assert_eq!(r.makespan, Ticks(7));
    let r = valid("grp1.json", "grp1.gpu-update.valid.schedule.json");
    assert_eq!(r.makespan, Ticks(5));
    assert_eq!(
        invalid("grp1.json", "grp1.double-update.invalid.schedule.json"),
        vec![Violation::GroupRanTwice {
            group: GRP_UPD,
            first: EventId(2),
            second: EventId(3),
        }]
    );
    assert_eq!(
        invalid("grp1.json", "grp1.never-ran.invalid.schedule.json"),
        vec![Violation::GroupNeverRan { group: GRP_UPD }]
    );
    assert_eq!(
        rechecked("grp1.json", "grp1.double-update.invalid.schedule.json"),
        vec![finding("groups", "group_ran_twice", None, None, None)]
    );
}

#[test]
fn rule_slots_out_of_order() {
    valid("grp1.json", "grp1.gpu-update.valid.schedule.json");
    assert_eq!(
        invalid("grp1.json", "grp1.slot-order.invalid.schedule.json"),
        vec![Violation::SlotOutOfOrder {
            position: 0,
            expected: GroupId(0),
            found: GRP_B,
            event: EventId(0),
        }]
    );
}

#[test]
fn rule_precedence_cpu_op_before_its_predecessor_ends() {
    valid("grp1.json", "grp1.cpu-update.valid.schedule.json");
    assert_eq!(
        invalid("grp1.json", "grp1.after.invalid.schedule.json"),
        vec![Violation::StartedBeforePredecessor {
            event: EventId(2),
            at: Ticks(3),
            op: GRP_OPTC,
            after: GRP_B,
            pred_event: Some(EventId(1)),
            pred_end: Some(Ticks(4)),
        }]
    );
    assert_eq!(
        rechecked("grp1.json", "grp1.after.invalid.schedule.json"),
        vec![finding(
            "precedence",
            "started_before_predecessor",
            Some(2),
            Some(3),
            None
        )]
    );
}

// grp2 (one shot): A B P C = ops 0 1 2 3; a (at_least_once) b = groups 0 1.
const GRP2_A: OpId = OpId(0);
const GRP2_B: OpId = OpId(1);
const GRP2_P: OpId = OpId(2);
const GRP2_C: OpId = OpId(3);

#[test]
fn rule_slots_extra_run_after_every_slot_is_filled() {
    let r = valid("grp2.json", "grp2.valid.schedule.json");
    assert_eq!(r.makespan, Ticks(2));
    // An at_least_once group's second GPU run: R12 alone.
    assert_eq!(
        invalid("grp2.json", "grp2.slot-extra.invalid.schedule.json"),
        vec![Violation::SlotExtra {
            position: 2,
            found: GRP2_A,
            event: EventId(4),
        }]
    );
    assert_eq!(
        rechecked("grp2.json", "grp2.slot-extra.invalid.schedule.json"),
        vec![finding("slots", "slot_extra", None, None, None)]
    );
    // An exactly_once group's second GPU run breaks R12 and R11 at once.
    assert_eq!(
        invalid("grp2.json", "grp2.extra-twice.invalid.schedule.json"),
        vec![
            Violation::SlotExtra {
                position: 2,
                found: GRP2_B,
                event: EventId(4),
            },
            Violation::GroupRanTwice {
                group: GroupId(1),
                first: EventId(1),
                second: EventId(4),
            },
        ]
    );
}

#[test]
fn rule_precedence_one_shot_no_earlier_run_of_the_predecessor() {
    valid("grp2.json", "grp2.valid.schedule.json");
    assert_eq!(
        invalid("grp2.json", "grp2.after-none.invalid.schedule.json"),
        vec![Violation::StartedBeforePredecessor {
            event: EventId(2),
            at: Ticks(0),
            op: GRP2_C,
            after: GRP2_P,
            pred_event: None,
            pred_end: None,
        }]
    );
    assert_eq!(
        rechecked("grp2.json", "grp2.after-none.invalid.schedule.json"),
        vec![finding(
            "precedence",
            "started_before_predecessor",
            Some(2),
            Some(0),
            None
        )]
    );
}

#[test]
fn rule_memory_cpu_side_cyclic_with_a_cpu_op() {
    valid("grp1.json", "grp1.cpu-update.valid.schedule.json");
    assert_eq!(
        invalid("grp1.json", "grp1.cpu-memory.invalid.schedule.json"),
        vec![Violation::CpuMemoryExceeded {
            at: Ticks(4),
            used: Bytes(8),
            capacity: Bytes(4),
        }]
    );
}

#[test]
fn every_fixture_has_a_note_and_the_expected_verdict() {
    let dir = repo().join("instances/fixtures");
    let all = pairs(&dir);
    assert!(all.len() >= 20, "{} fixtures", all.len());
    for (i, s) in all {
        assert_has_note(&i);
        assert_has_note(&s);
        let (inst, sched) = load(&i, &s);
        let name = s.file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(
            check(&inst, &sched).valid,
            !name.contains(".invalid."),
            "{name}"
        );
    }
}

// opseq3 (op_sequence, MODEL.md §4.4): w = tensor 0, a = 1, y = 2.
const OPSEQ_A: TensorId = TensorId(1);

/// MODEL.md §4.4: a delete at P is outside the period (R8), so the activations
/// the last function clears are dropped at time 0 from a start state that
/// holds them.
#[test]
fn op_sequence_dead_activations_drop_at_zero_never_at_the_period() {
    let r = valid("opseq3.json", "opseq3.drop-at-zero.valid.schedule.json");
    assert_eq!(r.makespan, Ticks(12));
    // S0 = w + a + y before the time-0 deletes.
    assert_eq!((r.peak_memory, r.peak_at), (Bytes(10), Ticks(0)));
    assert_eq!(
        invalid("opseq3.json", "opseq3.drop-at-period.invalid.schedule.json"),
        vec![
            Violation::OutsidePeriod {
                event: EventId(3),
                start: Ticks(12),
                end: Ticks(12),
                period: Ticks(12),
            },
            Violation::OutsidePeriod {
                event: EventId(4),
                start: Ticks(12),
                end: Ticks(12),
                period: Ticks(12),
            },
        ]
    );
}

/// MODEL.md §4.4: an activation's CPU copy in S0 counts in CPU memory from
/// time 0 (once, even while an offload of it runs), never in GPU memory, and
/// goes stale at the first write of the warm-up period, so R8 needs an
/// offload of the new value every period.
#[test]
fn op_sequence_start_state_cpu_copy_of_an_activation() {
    let r = valid("opseq3.json", "opseq3.cpu-activation.valid.schedule.json");
    assert_eq!(r.makespan, Ticks(13));
    assert_eq!(r.peak_cpu_memory, Bytes(4));
    assert_eq!((r.peak_memory, r.peak_at), (Bytes(10), Ticks(4)));
    let bad = run("opseq3.json", "opseq3.cpu-activation.invalid.schedule.json");
    assert_eq!(bad.peak_cpu_memory, Bytes(4));
    assert_eq!(bad.peak_memory, Bytes(10));
    assert_eq!(
        invalid("opseq3.json", "opseq3.cpu-activation.invalid.schedule.json"),
        vec![Violation::StateMismatch {
            tensor: OPSEQ_A,
            start_gpu: false,
            start_cpu: true,
            end_gpu: false,
            end_cpu: false,
        }]
    );
}

// graph4 (graph family, MODEL.md §4.7): node i is op i and its output tensor i.
/// A skip connection at 7 B: recomputing `a` is valid (peak 7 B, makespan 8 =
/// total compute 7 + one recomputation), the baseline order without it is not.
#[test]
fn graph_recomputation_fits_where_the_baseline_order_does_not() {
    let r = valid("graph4.json", "graph4.recompute.valid.schedule.json");
    assert_eq!((r.makespan, r.peak_memory), (Ticks(8), Bytes(7)));
    let v = invalid("graph4.json", "graph4.baseline.invalid.schedule.json");
    assert!(
        matches!(
            v.as_slice(),
            [Violation::MemoryExceeded {
                at: Ticks(3),
                used: Bytes(8),
                capacity: Bytes(7),
                ..
            }]
        ),
        "{v:?}"
    );
}
