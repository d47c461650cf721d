//! Export → audit round trip: a schedule exported as a Chrome trace and audited
//! back with `instances/traces/export.mapping.json` gets the same verdict as
//! `check`; mutated traces are caught by the right rule.

use offcert::check::{check, Violation};
use offcert::io;
use offcert::model::Instance;
use offcert::schedule::{Event, Schedule};
use offcert::trace::audit::{
    audit_mapped, audit_trace, Finding, LinkRate, MappedAudit, Options, TraceAudit,
};
use offcert::trace::export::{memory_timeline, write_chrome_trace, ExportOptions};
use offcert::trace::kineto;
use offcert::trace::mapping::Mapping;
use offcert::units::{Bytes, Ticks};
use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn chain3() -> (Instance, Schedule) {
    let (_, inst) =
        io::load_instance(&format!("{ROOT}/instances/examples/chain3.json").as_ref()).unwrap();
    let s = io::load_schedule(
        &format!("{ROOT}/instances/examples/chain3.offload-x0.schedule.json").as_ref(),
        &inst,
    )
    .unwrap();
    (inst, s)
}

fn mapping() -> Mapping {
    Mapping::load(format!("{ROOT}/instances/traces/export.mapping.json").as_ref()).unwrap()
}

fn export(inst: &Instance, s: &Schedule, opts: ExportOptions) -> Vec<u8> {
    let mut out = Vec::new();
    write_chrome_trace(&mut out, "mem.json", inst, s, opts).unwrap();
    out
}

/// Audit a trace's bytes with the instance's budget and link.
fn audit(inst: &Instance, bytes: &[u8]) -> (TraceAudit, MappedAudit) {
    let t = kineto::parse_bytes("mutated.json", bytes).unwrap();
    let tick = t.meta.as_ref().unwrap().tick_ns;
    let opts = Options {
        budget: Some(inst.machine.gpu_capacity),
        link: Some(LinkRate::from_model(inst.machine.bandwidth, tick)),
        duplex: inst.machine.duplex,
        device: None,
    };
    let ta = audit_trace(&t, &opts);
    let m = audit_mapped(&t, &mapping(), inst, "export.mapping.json").unwrap();
    (ta, m)
}

fn sorted(s: &Schedule) -> Vec<String> {
    let mut v: Vec<String> = s.events.iter().map(|e| format!("{e:?}")).collect();
    v.sort();
    v
}

fn assert_round_trip(inst: &Instance, s: &Schedule, opts: ExportOptions) {
    let direct = check(inst, s);
    let (ta, m) = audit(inst, &export(inst, s, opts));
    assert_eq!(
        sorted(m.schedule()),
        sorted(s),
        "the reconstructed schedule is the exported one"
    );
    assert_eq!(m.report.valid, direct.valid);
    assert_eq!(m.report.makespan, direct.makespan);
    assert_eq!(m.report.peak_memory, direct.peak_memory);
    let kinds = |r: &offcert::check::Report| {
        let mut k: Vec<String> = r.violations.iter().map(|v| v.kind()).collect();
        k.sort();
        k
    };
    assert_eq!(kinds(&m.report), kinds(&direct));
    // The trace's memory track is the checker's: same peak.
    let peak = ta.devices[0].memory.as_ref().unwrap().peak;
    assert_eq!(peak, direct.peak_memory);
}

#[test]
fn valid_schedule_round_trips_to_the_same_verdict() {
    let (inst, s) = chain3();
    assert!(check(&inst, &s).valid);
    assert_round_trip(&inst, &s, ExportOptions::default());
    // Ticks that are not whole microseconds: fractional timestamps, still exact,
    // with an absolute origin far beyond what an f64 holds to the nanosecond.
    assert_round_trip(
        &inst,
        &s,
        ExportOptions {
            tick_ns: 333,
            origin_ns: 1_700_000_000_123_456_789,
        },
    );
    let (ta, m) = audit(&inst, &export(&inst, &s, ExportOptions::default()));
    assert_eq!(ta.violations(), 0);
    assert!(m.races.is_empty() && m.deletes_without_cpu_copy.is_empty());
    assert!(m.offloads_never_prefetched.is_empty() && m.prefetches_never_used.is_empty());
}

#[test]
fn invalid_schedule_round_trips_to_the_same_violations() {
    let (inst, s) = chain3();
    // Without the offload and prefetch of x0 the chain needs 16 B > 12 B.
    let events: Vec<Event> = s
        .events
        .iter()
        .copied()
        .filter(|e| !matches!(e, Event::Transfer { .. }))
        .collect();
    let bad = Schedule::one_shot(events);
    let direct = check(&inst, &bad);
    assert!(!direct.valid);
    assert!(direct
        .violations
        .iter()
        .any(|v| matches!(v, Violation::MemoryExceeded { .. })));
    assert_round_trip(&inst, &bad, ExportOptions::default());
    // The trace-only memory rule sees the same excess in the exported memory track.
    let (ta, _) = audit(&inst, &export(&inst, &bad, ExportOptions::default()));
    assert!(
        matches!(
            ta.findings.as_slice(),
            [Finding::MemoryOverBudget {
                peak: Bytes(16),
                ..
            }]
        ),
        "{:?}",
        ta.findings
    );
}

#[test]
fn memory_track_comes_from_the_semantics() {
    let (inst, s) = chain3();
    let tl = memory_timeline(&inst, &s);
    let r = check(&inst, &s);
    let peak = tl.iter().map(|x| x.1).max().unwrap();
    assert_eq!(peak, r.peak_memory.0 as i128);
    assert_eq!(tl.iter().find(|x| x.1 == peak).unwrap().0, r.peak_at);
    assert_eq!(tl.last().unwrap().0, Ticks(15));
}

fn events(v: &mut Value) -> &mut Vec<Value> {
    v["traceEvents"].as_array_mut().unwrap()
}

/// Events with one of the (cat, name) pairs.
fn named<'a>(v: &'a mut Value, which: &[(&str, &str)]) -> Vec<&'a mut Value> {
    events(v)
        .iter_mut()
        .filter(|e| which.iter().any(|(c, n)| e["cat"] == *c && e["name"] == *n))
        .collect()
}

fn mutate(f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let (inst, s) = chain3();
    let mut v: Value =
        serde_json::from_slice(&export(&inst, &s, ExportOptions::default())).unwrap();
    f(&mut v);
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn kernel_moved_before_its_prefetch_ends_is_a_race() {
    let (inst, _) = chain3();
    // B0 reads x0, whose prefetch runs [9, 11); start B0 at 10 instead of 12.
    let bytes = mutate(|v| {
        for e in named(
            v,
            &[("gpu_user_annotation", "compute:B0"), ("kernel", "B0")],
        ) {
            e["ts"] = serde_json::json!(10);
        }
    });
    let (_, m) = audit(&inst, &bytes);
    assert!(!m.report.valid);
    assert_eq!(m.races.len(), 1, "{:?}", m.races);
    let r = &m.races[0];
    assert_eq!(
        (r.op.as_str(), r.tensor.as_str(), r.start, r.prefetch_ends),
        ("B0", "x0", Ticks(10), Ticks(11))
    );
    assert!(m.report.violations.iter().any(|v| matches!(
        v,
        Violation::InputNotResident {
            ready_at: Some(Ticks(11)),
            ..
        }
    )));
}

#[test]
fn copy_shortened_past_the_link_rate_is_impossible() {
    let (inst, _) = chain3();
    // x0 is 4 B at β = 2 B/tick (2 B/µs): 2 µs at least; make the prefetch take 1 µs.
    let bytes = mutate(|v| {
        for e in named(
            v,
            &[
                ("gpu_user_annotation", "prefetch:x0"),
                ("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)"),
            ],
        ) {
            e["dur"] = serde_json::json!(1);
        }
    });
    let (ta, m) = audit(&inst, &bytes);
    assert_eq!(ta.finding_counts, vec![("link-bandwidth".to_string(), 1)]);
    match &ta.findings[0] {
        Finding::CopyFasterThanLink {
            copy,
            needs_at_least,
            ..
        } => {
            assert_eq!(copy.bytes, 4);
            assert_eq!(needs_at_least.0, 2000);
        }
        f => panic!("{f:?}"),
    }
    assert!(m.report.violations.iter().any(|v| matches!(
        v,
        Violation::TransferTooFast {
            took: Ticks(1),
            needs_at_least: Ticks(2),
            ..
        }
    )));
}

#[test]
fn allocation_raised_past_the_budget_is_caught() {
    let (inst, _) = chain3();
    let bytes = mutate(|v| {
        let m = events(v)
            .iter_mut()
            .find(|e| e["name"] == "[memory]")
            .unwrap();
        let b = m["args"]["Bytes"].as_i64().unwrap();
        m["args"]["Bytes"] = serde_json::json!(b + 100);
        let t = m["args"]["Total Allocated"].as_i64().unwrap();
        m["args"]["Total Allocated"] = serde_json::json!(t + 100);
    });
    let (ta, m) = audit(&inst, &bytes);
    assert_eq!(ta.finding_counts, vec![("memory-budget".to_string(), 1)]);
    match &ta.findings[0] {
        Finding::MemoryOverBudget { budget, peak, .. } => {
            assert_eq!(*budget, Bytes(12));
            assert_eq!(*peak, Bytes(112));
        }
        f => panic!("{f:?}"),
    }
    // The schedule itself did not change: the mapped audit stays valid.
    assert!(m.report.valid);
}

#[test]
fn same_direction_overlap_and_same_stream_jitter() {
    // Two HtoD copies on different streams at once break one-channel-per-direction;
    // a kernel overlapping the previous one on its stream is only a note.
    let text = r#"{"traceEvents":[
      {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":20,"ts":0,"dur":10,"args":{"bytes":100}},
      {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":21,"ts":5,"dur":10,"args":{"bytes":100}},
      {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH (Device -> Pinned)","pid":0,"tid":22,"ts":5,"dur":10,"args":{"bytes":100}},
      {"ph":"X","cat":"kernel","name":"a","pid":0,"tid":7,"ts":0,"dur":4},
      {"ph":"X","cat":"kernel","name":"b","pid":0,"tid":7,"ts":3,"dur":4},
      {"ph":"X","cat":"kernel","name":"c","pid":0,"tid":7,"ts":7,"dur":0}
    ]}"#;
    let t = kineto::parse_bytes("s.json", text.as_bytes()).unwrap();
    let a = audit_trace(&t, &Options::default());
    assert_eq!(a.finding_counts, vec![("copy-channel".to_string(), 1)]);
    match &a.findings[0] {
        Finding::CopyOverlap {
            first,
            second,
            overlap,
            ..
        } => {
            assert_eq!((first.stream, second.stream, overlap.0), (20, 21, 5000));
        }
        f => panic!("{f:?}"),
    }
    use offcert::trace::audit::Note;
    assert!(a.notes.contains(&Note::SameStreamOverlap {
        device: 0,
        stream: 7,
        count: 1,
        largest: offcert::trace::Nanos(1000)
    }));
    assert!(a.notes.contains(&Note::ZeroDuration {
        what: "kernel",
        count: 1
    }));
    let d = &a.devices[0];
    // Kernels busy [0, 7); link copies in flight [0, 15): idle while copying 8 µs.
    assert_eq!(d.idle_while_copying.0, 8000);
    // Half duplex: the DtoH copy now shares the channel too.
    let a = audit_trace(
        &t,
        &Options {
            duplex: offcert::model::Duplex::HalfDuplex,
            ..Options::default()
        },
    );
    assert_eq!(a.finding_counts, vec![("copy-channel".to_string(), 2)]);
}

#[test]
fn plan_against_actual() {
    let (inst, s) = chain3();
    let bytes = mutate(|v| {
        for e in named(
            v,
            &[("gpu_user_annotation", "compute:B0"), ("kernel", "B0")],
        ) {
            e["ts"] = serde_json::json!(13);
            e["dur"] = serde_json::json!(4);
        }
    });
    let (_, m) = audit(&inst, &bytes);
    let p = offcert::trace::plan::compare(&inst, &s, m.schedule());
    assert_eq!(p.planned_makespan, Ticks(15));
    assert_eq!(p.actual_makespan, Ticks(17));
    assert!(
        p.planned.valid && !p.actual.valid,
        "B0 lasts 4 ticks instead of 3: rule duration"
    );
    let b0 = p.deviations.iter().find(|d| d.name == "B0").unwrap();
    assert_eq!((b0.start_delta, b0.duration_delta), (Some(1), Some(1)));
    assert!(p
        .deviations
        .iter()
        .filter(|d| d.name != "B0")
        .all(|d| d.start_delta == Some(0)));
}

/// Cyclic schedules (the `weight_chain` example `w2`: a transfer crossing the
/// period, the discount rule, redundant traffic, and two invalid ones): the
/// exported trace carries the period and the state at time 0 in its metadata,
/// and the mapped audit of it gets `check`'s verdict, violation kinds, period
/// and peak.
#[test]
fn cyclic_schedules_round_trip_to_the_same_verdict() {
    let (_, inst) =
        io::load_instance(&format!("{ROOT}/instances/examples/w2.json").as_ref()).unwrap();
    let names = [
        "w2.crossing.schedule.json",
        "w2.discount.schedule.json",
        "w2.redundant.schedule.json",
        "w2.resident.schedule.json",
        "w2.offload-after-f.invalid.schedule.json",
        "w2.short-period.invalid.schedule.json",
    ];
    let mut crossing = 0;
    for name in names {
        let s = io::load_schedule(&format!("{ROOT}/instances/examples/{name}").as_ref(), &inst)
            .unwrap();
        let p = s.period.expect("cyclic").0;
        crossing += s
            .events
            .iter()
            .filter(|e| matches!(e, Event::Transfer { end, .. } if end.0 > p))
            .count();
        let direct = check(&inst, &s);
        assert_eq!(direct.valid, !name.contains(".invalid."), "{name}");
        let (ta, m) = audit(&inst, &export(&inst, &s, ExportOptions::default()));
        // The memory counter track is the steady-state period's, as the checker
        // measures it.
        let peak = ta.devices[0].memory.as_ref().unwrap().peak;
        assert_eq!(peak, direct.peak_memory, "{name}");
        assert_eq!(m.schedule().period, s.period, "{name}");
        assert_eq!(m.schedule().initial, s.initial, "{name}");
        assert_eq!(sorted(m.schedule()), sorted(&s), "{name}");
        assert_eq!(m.report.valid, direct.valid, "{name}");
        assert_eq!(m.report.makespan, direct.makespan, "{name}");
        assert_eq!(m.report.peak_memory, direct.peak_memory, "{name}");
        let kinds = |r: &offcert::check::Report| {
            let mut k: Vec<String> = r.violations.iter().map(|v| v.kind()).collect();
            k.sort();
            k
        };
        assert_eq!(kinds(&m.report), kinds(&direct), "{name}");
    }
    assert!(
        crossing > 0,
        "one schedule has a transfer crossing the period"
    );
}
