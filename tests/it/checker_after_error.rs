//! The checker after a first error (issue 21, items 1 and 5; `models/MODEL.md`
//! §2.3.1 "After a violation"):
//!
//! - the `chain3m8` case: the `dynprog` schedule without the offload of `x1`
//!   is rejected for the prefetch of `x1` (void: no CPU copy, and `x1` still
//!   resident) and for nothing that follows from an invented state;
//! - no message ever carries a sentinel value, on valid schedules of random
//!   instances with one event deleted, moved or duplicated;
//! - a void transfer has no effect: every state-dependent finding of a
//!   schedule with a void transfer is a finding of the same schedule without
//!   it, and the other way round (ids renumbered), for the checker and the
//!   re-check alike;
//! - witness lists in sentences are capped ([`WITNESS_LIST_CAP`]), while the
//!   typed witness keeps every entry.

use crate::common;

use common::*;
use offcert::check::{check, Violation, WITNESS_LIST_CAP};
use offcert::model::{Instance, TensorId};
use offcert::recheck::recheck;
use offcert::schedule::{Event, EventId, Schedule};
use offcert::units::{Bytes, Ticks};
use quickcheck::TestResult;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

type Spec = Vec<(u8, u8, u8, u8)>;

/// `offcert heuristic instances/examples/chain3m8.json -n dynprog --out s.json`
/// (makespan 19, valid), as written at the time of issue 21.
const CHAIN3M8_DYNPROG: &str = r#"{"events": [
  {"type": "compute", "op": "F0", "start": 0, "end": 2},
  {"type": "offload", "tensor": "x0", "start": 0, "end": 2, "delete": true},
  {"type": "compute", "op": "F1", "start": 2, "end": 4},
  {"type": "offload", "tensor": "x1", "start": 2, "end": 4, "delete": true},
  {"type": "compute", "op": "F2", "start": 4, "end": 6},
  {"type": "compute", "op": "B2", "start": 6, "end": 9},
  {"type": "prefetch", "tensor": "x1", "start": 9, "end": 11},
  {"type": "compute", "op": "B1", "start": 11, "end": 14},
  {"type": "prefetch", "tensor": "x0", "start": 14, "end": 16},
  {"type": "compute", "op": "B0", "start": 16, "end": 19}
]}"#;

/// The decimal spellings of the integer sentinels (`u64::MAX`, `i64::MAX`,
/// `u32::MAX`, `i32::MAX`, `usize::MAX`, `i64::MIN`, `u128::MAX`, ...).
const SENTINELS: [&str; 7] = [
    "18446744073709551615",
    "9223372036854775807",
    "9223372036854775808",
    "4294967295",
    "2147483647",
    "2147483648",
    "340282366920938463463374607431768211455",
];

fn sentinel_in(text: &str) -> Option<&'static str> {
    SENTINELS.iter().copied().find(|s| text.contains(s))
}

/// Every sentence the checker can print for `s`: each violation and warning,
/// and the one-line rejection.
fn rendered(inst: &Instance, s: &Schedule) -> Vec<String> {
    let out = check(inst, s);
    let mut lines: Vec<String> = out.violations.iter().map(|v| v.describe(inst)).collect();
    lines.extend(out.warnings.iter().map(|w| w.describe(inst)));
    if let Some(r) = out.clone().into_result().err() {
        let line = r.to_string();
        // The sorting key of a violation with no instant (-1) is not an instant.
        assert!(
            !line.contains(" at -1;") && !line.ends_with(" at -1"),
            "{line}"
        );
        lines.push(line);
    }
    lines
}

#[test]
fn chain3m8_without_the_offload_of_x1_reports_the_prefetch_and_nothing_invented() {
    let path = repo().join("instances/examples/chain3m8.json");
    let (_, inst) = offcert::io::load_instance(&path).unwrap();
    let full = offcert::io::parse_schedule("dynprog", CHAIN3M8_DYNPROG, &inst).unwrap();
    assert!(check(&inst, &full).valid, "the dynprog schedule is valid");
    let x1 = tensor(&inst, "x1");
    let mut s = full.clone();
    s.events.retain(|e| {
        !matches!(e, Event::Transfer { tensor, dir: offcert::model::Direction::Offload, .. } if *tensor == x1)
    });
    assert_eq!(s.events.len(), full.events.len() - 1);
    let r = agree(&inst, &s);
    let found: Vec<(String, Ticks)> = r.violations.iter().map(|v| (v.kind(), v.at())).collect();
    // x1 stays resident: memory is over at 4 and 6 (real), the prefetch at 9
    // is void (no CPU copy, and a GPU copy exists); B1 and B0 then read x1 v0,
    // current, as a GPU would: no finding there.
    assert_eq!(
        found,
        [
            ("memory_exceeded".to_string(), Ticks(4)),
            ("memory_exceeded".to_string(), Ticks(6)),
            ("prefetch_without_cpu_copy".to_string(), Ticks(9)),
            ("prefetch_resident".to_string(), Ticks(9)),
        ]
    );
    for line in rendered(&inst, &s) {
        assert_eq!(sentinel_in(&line), None, "{line}");
        assert!(!line.contains("input_stale"), "{line}");
    }
}

/// One of the three mutations of the issue, on event `idx % len`: delete it,
/// move it by `delta % 6` ticks, or duplicate it.
fn mutate_once(s: &Schedule, which: u8, idx: usize, delta: i8) -> Option<Schedule> {
    random_mutation(s, [2, 0, 3][which as usize % 3], idx, delta)
}

static SENTENCES: AtomicUsize = AtomicUsize::new(0);
static VOIDS: AtomicUsize = AtomicUsize::new(0);

#[test]
fn no_message_carries_a_sentinel_after_one_event_is_deleted_moved_or_duplicated() {
    #[allow(clippy::too_many_arguments)]
    fn prop(
        family: bool,
        spec: Spec,
        bw: u8,
        slack: u8,
        mask: u16,
        mutation: (u8, usize, i8),
        tight: u8,
    ) -> TestResult {
        let Some((mut inst, s)) = either_schedule(family, &spec, bw, slack, mask) else {
            return TestResult::discard();
        };
        let Some(m) = mutate_once(&s, mutation.0, mutation.1, mutation.2) else {
            return TestResult::discard();
        };
        // Tight memory: at or just below the valid schedule's peak.
        let peak = check(&inst, &s).peak_memory.0;
        inst.machine.gpu_capacity = Bytes(peak.saturating_sub((tight % 3) as u64));
        for line in rendered(&inst, &m) {
            if let Some(x) = sentinel_in(&line) {
                eprintln!("sentinel {x} in: {line}");
                return TestResult::failed();
            }
            SENTENCES.fetch_add(1, Relaxed);
        }
        TestResult::passed()
    }
    qc(300, 100)
        .max_tests(cases(3000))
        .quickcheck(prop as fn(bool, Spec, u8, u8, u16, (u8, usize, i8), u8) -> TestResult);
    assert!(SENTENCES.load(Relaxed) >= 100, "too few sentences checked");
}

/// The event ids a violation names, renumbered as if event `removed` were
/// gone (`None` if the violation names `removed` itself).
fn renumbered(v: &Violation, removed: usize) -> Option<Value> {
    fn walk(x: &mut Value, removed: u64, key: Option<&str>) -> bool {
        const IDS: [&str; 6] = [
            "event",
            "first",
            "second",
            "holder_event",
            "pred_event",
            "running",
        ];
        match x {
            Value::Object(m) => m.iter_mut().all(|(k, v)| walk(v, removed, Some(k))),
            Value::Array(a) => a.iter_mut().all(|v| walk(v, removed, key)),
            Value::Number(n) if key.is_some_and(|k| IDS.contains(&k)) => {
                let id = n.as_u64().unwrap();
                if id == removed {
                    return false;
                }
                *x = Value::from(id - (id > removed) as u64);
                true
            }
            _ => true,
        }
    }
    let mut x = serde_json::to_value(v).unwrap();
    walk(&mut x, removed as u64, None).then_some(x)
}

/// Rules that judge the state the replay builds (R1, R3, R6, R7, R10), as
/// opposed to the schedule as written (R2, R4, R5, R8, ...).
fn state_dependent(v: &Violation) -> bool {
    matches!(
        v.rule(),
        "dependencies" | "no-data-loss" | "released-while-in-use" | "memory"
    )
}

/// The void transfers of `s`: events with an R3 finding of a transfer.
fn void_transfers(inst: &Instance, s: &Schedule) -> Vec<EventId> {
    let mut out: Vec<EventId> = check(inst, s)
        .violations
        .iter()
        .filter_map(|v| match v {
            Violation::NotTransferable { event, .. }
            | Violation::OffloadAbsent { event, .. }
            | Violation::PrefetchWithoutCpuCopy { event, .. }
            | Violation::PrefetchResident { event, .. } => Some(*event),
            _ => None,
        })
        .collect();
    out.dedup();
    out
}

/// The state-dependent findings of `s`, ids renumbered without `removed`,
/// less those naming `removed`.
fn findings_without(inst: &Instance, s: &Schedule, removed: usize) -> Vec<Value> {
    check(inst, s)
        .violations
        .iter()
        .filter(|v| state_dependent(v))
        .filter_map(|v| renumbered(v, removed))
        .collect()
}

/// The re-check's state-dependent findings: (kind, event, at, tensor).
type Row = (&'static str, Option<u32>, Option<Ticks>, Option<TensorId>);

fn recheck_rows(inst: &Instance, s: &Schedule, removed: Option<usize>) -> Vec<Row> {
    let mut rows: Vec<Row> = recheck(inst, s)
        .findings
        .iter()
        .filter(|f| {
            matches!(
                f.rule,
                "dependencies" | "no-data-loss" | "released-while-in-use" | "memory"
            )
        })
        .filter_map(|f| {
            let event = match (f.event, removed) {
                (Some(e), Some(k)) if e.ix() == k => return None,
                (Some(e), Some(k)) => Some(e.0 - (e.ix() > k) as u32),
                (e, _) => e.map(|e| e.0),
            };
            Some((f.kind, event, f.at, f.tensor))
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn a_void_transfer_changes_no_finding_after_it() {
    #[allow(clippy::too_many_arguments)]
    fn prop(
        spec: Spec,
        bw: u8,
        slack: u8,
        mask: u16,
        mutation: (u8, usize, i8),
        tight: u8,
    ) -> TestResult {
        // One-shot activation chains: in a cyclic replay a transfer may be void
        // in one unrolled period and not in another (MODEL.md §2.3.1).
        let Some((mut inst, s)) = either_schedule(true, &spec, bw, slack, mask) else {
            return TestResult::discard();
        };
        let Some(m) = mutate_once(&s, mutation.0, mutation.1, mutation.2) else {
            return TestResult::discard();
        };
        let peak = check(&inst, &s).peak_memory.0;
        inst.machine.gpu_capacity = Bytes(peak.saturating_sub((tight % 3) as u64));
        let voids = void_transfers(&inst, &m);
        if voids.is_empty() {
            return TestResult::discard();
        }
        for e in voids {
            let k = e.ix();
            let mut without = m.clone();
            without.events.remove(k);
            let with_it = findings_without(&inst, &m, k);
            let gone = findings_without(&inst, &without, usize::MAX);
            let (ra, rb) = (
                recheck_rows(&inst, &m, Some(k)),
                recheck_rows(&inst, &without, None),
            );
            if with_it != gone || ra != rb {
                eprintln!(
                    "void transfer events[{k}] changes the findings\nschedule: {}\nwith it: {with_it:#?}\nwithout: {gone:#?}\nre-check with: {ra:?}\nre-check without: {rb:?}",
                    serde_json::to_string(&offcert::schedule::ScheduleFile::from_schedule(&m, &inst)).unwrap()
                );
                return TestResult::failed();
            }
            VOIDS.fetch_add(1, Relaxed);
        }
        agree(&inst, &m);
        TestResult::passed()
    }
    qc(200, 50)
        .max_tests(cases(8000))
        .quickcheck(prop as fn(Spec, u8, u8, u16, (u8, usize, i8), u8) -> TestResult);
    assert!(VOIDS.load(Relaxed) >= 50, "too few void transfers compared");
}

/// An activation chain of `n` layers, every activation resident, with a GPU
/// of 1 byte: the memory witness lists every activation.
#[test]
fn a_memory_witness_names_the_largest_copies_and_counts_the_rest() {
    let n = 30usize;
    let layers: Vec<(i64, i64, u64)> = (0..n).map(|i| (1, 1, 1000 + i as u64)).collect();
    let inst = act(&layers, 7, 1, 1_000_000);
    let offcert::model::ComputeOrder::Fixed(order) = &inst.order else {
        panic!("an activation chain has a fixed order")
    };
    let mut events = Vec::new();
    let mut t = 0;
    for &op in order {
        let d = inst.op(op).duration.0;
        events.push(Event::Compute {
            op,
            start: Ticks(t),
            end: Ticks(t + d),
        });
        t += d;
    }
    let s = Schedule::one_shot(events);
    let r = check(&inst, &s);
    let worst = r
        .violations
        .iter()
        .filter_map(|v| match v {
            Violation::MemoryExceeded { resident, .. } => Some((resident.len(), v)),
            _ => None,
        })
        .max_by_key(|(n, _)| *n)
        .expect("memory is exceeded");
    assert!(worst.0 > WITNESS_LIST_CAP + 10, "{} copies", worst.0);
    let line = worst.1.describe(&inst);
    let named = inst
        .tensors
        .iter()
        .filter(|t| line.contains(&format!("{} (", t.name)))
        .count();
    assert_eq!(named, WITNESS_LIST_CAP, "{line}");
    // The largest first: x29 (1029 B) down to x22.
    assert!(
        line.contains("copies: x29 (1.029 kB), x28 (1.028 kB)"),
        "{line}"
    );
    let Violation::MemoryExceeded { resident, used, .. } = worst.1 else {
        unreachable!()
    };
    let total: u64 = resident.iter().map(|t| inst.tensor(*t).size.0).sum();
    assert!(total <= used.0);
    assert!(
        line.contains(&format!(
            "and {} more ({} copies, ",
            resident.len() - WITNESS_LIST_CAP,
            resident.len()
        )),
        "{line}"
    );
    // The typed witness (and so the JSON verdict) keeps every copy.
    let json = serde_json::to_value(worst.1).unwrap();
    assert_eq!(json["resident"].as_array().unwrap().len(), resident.len());
    assert!(line.len() < 400, "{} characters: {line}", line.len());
}

/// A violation with no instant (here `missing_op`) is written without one in
/// the one-line rejection (it once read `missing_op at -1`, its sorting key).
#[test]
fn a_rejection_line_gives_no_instant_to_an_order_violation() {
    let path = repo().join("instances/examples/chain3m8.json");
    let (_, inst) = offcert::io::load_instance(&path).unwrap();
    let mut s = offcert::io::parse_schedule("dynprog", CHAIN3M8_DYNPROG, &inst).unwrap();
    s.events.pop();
    let rejected = check(&inst, &s).into_result().unwrap_err();
    assert!(rejected
        .violations()
        .iter()
        .any(|v| v.kind() == "missing_op"));
    let line = rejected.to_string();
    assert!(line.split("; ").any(|x| x == "missing_op"), "{line}");
    assert!(!line.contains("-1"), "{line}");
}
