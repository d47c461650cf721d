//! Checker cases that need the JSON front-end (moved out of the core crate's
//! unit tests when the core became its own crate: `io` and the families live in
//! the `offcert` crate, which the core may not import).

use offcert_core::check::{
    check, instance_digest, schedule_digest, CheckOutcome, Violation, Warning,
};
use offcert_core::schedule::EventId;
use offcert_core::units::{Bytes, Ticks};
use offcert_frontend::io::{parse_instance, parse_schedule};

const W2: &str = r#"{"family":"weight_chain","name":"w2","layers":[{"u_f":1,"u_b":2,"w":4,"a":2},{"u_f":1,"u_b":2,"w":4,"a":2}],"a0":2,"gpu_memory":18,"bandwidth":4}"#;
const OPS: &str = r#"{"type":"compute","op":"F1","start":0},{"type":"compute","op":"F2","start":1},{"type":"compute","op":"B2","start":2},{"type":"compute","op":"B1","start":4}"#;

fn run(initial: &str, extra: &str) -> CheckOutcome {
    let (_, inst) = parse_instance("w2", W2).unwrap();
    let text = format!(r#"{{"period":6,"initial":{initial},"events":[{OPS}{extra}]}}"#);
    let s = parse_schedule("s", &text, &inst).unwrap();
    check(&inst, &s)
}

/// A prefetch crossing the period end is in flight at time 0 (so its tensor is
/// not in the declared GPU state) and still in flight at the end: valid. This
/// was once misjudged because the end-of-period state was read after the
/// crossing transfer of the last period had finished.
#[test]
fn a_prefetch_crossing_the_boundary_is_in_flight_at_both_ends() {
    let r = run(
        r#"{"gpu":["a0","w1"],"cpu":["w2"]}"#,
        r#",{"type":"offload","tensor":"w2","start":4,"end":5},{"type":"prefetch","tensor":"w2","start":5,"end":7}"#,
    );
    assert!(r.valid, "{:?}", r.violations);
    assert_eq!(
        r.channel_busy.iter().map(|c| c.busy.0).collect::<Vec<_>>(),
        vec![1, 2]
    );
}

/// Discount rule: the offload after B2 serves the prefetch before F2 of the
/// next iteration; deleting instead of offloading loses B2's update.
#[test]
fn deleting_an_updated_weight_without_offload_is_data_loss() {
    let ok = run(
        r#"{"gpu":["a0","w1"],"cpu":["w2"]}"#,
        r#",{"type":"offload","tensor":"w2","start":4,"end":5},{"type":"prefetch","tensor":"w2","start":0,"end":1}"#,
    );
    assert!(ok.valid, "{:?}", ok.violations);
    let bad = run(
        r#"{"gpu":["a0","w1"],"cpu":["w2"]}"#,
        r#",{"type":"delete","tensor":"w2","at":4},{"type":"prefetch","tensor":"w2","start":0,"end":1}"#,
    );
    assert!(
        bad.violations
            .iter()
            .any(|v| matches!(v, Violation::DataLoss { at: Ticks(4), .. })),
        "{:?}",
        bad.violations
    );
}

/// An offload of a weight whose CPU copy is current is redundant traffic.
#[test]
fn a_second_offload_of_the_same_version_is_a_warning() {
    let r = run(
        r#"{"gpu":["a0","w1"],"cpu":["w2"]}"#,
        r#",{"type":"offload","tensor":"w2","start":4,"end":5,"delete":false},{"type":"offload","tensor":"w2","start":5,"end":6}, {"type":"prefetch","tensor":"w2","start":0,"end":1}"#,
    );
    assert!(r.valid, "{:?}", r.violations);
    assert!(
        matches!(
            r.warnings.as_slice(),
            [Warning::RedundantOffload {
                event: EventId(5),
                bytes: Bytes(4),
                ticks: Ticks(1),
                ..
            }]
        ),
        "{:?}",
        r.warnings
    );
}

/// A delete at time 0 belongs to the period that begins: the state at the
/// end of a period is read before it (reported by the SMT helper: it was
/// once read after it, and every such schedule failed R8).
#[test]
fn a_delete_at_time_zero_belongs_to_the_next_period() {
    let r = run(
        r#"{"gpu":["a0","w1","w2"],"cpu":["w2"]}"#,
        r#",{"type":"offload","tensor":"w2","start":4,"end":5,"delete":false},{"type":"delete","tensor":"w2","at":0},{"type":"prefetch","tensor":"w2","start":0,"end":1}"#,
    );
    assert!(r.valid, "{:?}", r.violations);
}

/// Digests depend on the compiled objects, not on file formatting, and any
/// change of an event changes them.
#[test]
fn digests_are_canonical() {
    let (_, a) = parse_instance("a", W2).unwrap();
    let (_, b) = parse_instance("b", &W2.replace(',', " ,\n  ")).unwrap();
    assert_eq!(instance_digest(&a), instance_digest(&b));
    let text = format!(r#"{{"period":6,"initial":{{"gpu":["a0","w1","w2"]}},"events":[{OPS}]}}"#);
    let s1 = parse_schedule("s", &text, &a).unwrap();
    let mut s2 = s1.clone();
    assert_eq!(schedule_digest(&s1), schedule_digest(&s2));
    s2.events[3] = s2.events[3].shifted(Ticks(1));
    assert_ne!(schedule_digest(&s1), schedule_digest(&s2));
}
