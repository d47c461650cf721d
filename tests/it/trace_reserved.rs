//! Reserved against allocated device memory in traces (issue 26, item 3): the
//! importer reads Kineto's `Total Reserved` and `Addr`, and `offcert audit`
//! reports per GPU the peak reserved, reserved − allocated over time, and a note
//! where a trace lacks the reserved totals. Figures of the bundled trace come
//! from `tests/scripts/trace_figures.py` (independent, Python).

use crate::common::qc;
use crate::trace_cli::offcert;
use offcert::trace::audit::{audit_trace, Note, Options, ReservedSummary};
use offcert::trace::{kineto, Nanos, Trace};
use offcert::units::Bytes;
use quickcheck::TestResult;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn load(name: &str) -> Trace {
    offcert::trace::load(std::path::Path::new(&format!(
        "{ROOT}/tests/data/traces/{name}"
    )))
    .unwrap()
}

fn tmp(name: &str, text: &str) -> String {
    let d = std::env::temp_dir().join(format!("offcert-reserved-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// A `[memory]` event of CUDA device 0 (`ts` in µs); `reserved: None` leaves
/// `Total Reserved` out.
fn mem(ts: u64, addr: u64, bytes: i64, allocated: i64, reserved: Option<i64>) -> String {
    let r = reserved.map_or(String::new(), |r| format!(r#","Total Reserved":{r}"#));
    format!(
        r#"{{"ph":"i","s":"t","name":"[memory]","pid":1,"tid":1,"ts":{ts},"args":{{"Device Type":1,"Device Id":0,"Addr":{addr},"Bytes":{bytes},"Total Allocated":{allocated}{r}}}}}"#
    )
}

fn trace_of(events: &[String]) -> String {
    format!(r#"{{"traceEvents":[{}]}}"#, events.join(","))
}

/// Worked by hand: instants 1, 3, 7, 11 µs hold (reserved, allocated) =
/// (2 MiB, 100), (2 MiB, 50), (6 MiB, 3000050), (6 MiB, 3000000): differences
/// 2097052, 2097102, 3291406, 3291456; the time-weighted mean over 10 µs is
/// (2097052·2000 + 2097102·4000 + 3291406·4000) / 10000 = 2574813.6.
fn small() -> Vec<String> {
    vec![
        mem(1, 1000, 100, 100, Some(2_097_152)),
        mem(3, 2000, 50, 150, Some(2_097_152)),
        mem(3, 1000, -100, 50, Some(2_097_152)),
        mem(7, 3000, 3_000_000, 3_000_050, Some(6_291_456)),
        mem(11, 2000, -50, 3_000_000, Some(6_291_456)),
    ]
}

/// A note on reserved totals (missing, partial, below allocated).
fn reserved_note(n: &Note) -> bool {
    matches!(
        n,
        Note::ReservedMissing { .. }
            | Note::ReservedPartial { .. }
            | Note::ReservedBelowAllocated { .. }
    )
}

fn summary(t: &Trace) -> (ReservedSummary, Vec<Note>) {
    let a = audit_trace(t, &Options::default());
    (a.devices[0].reserved.clone().expect("reserved"), a.notes)
}

#[test]
fn the_importer_reads_total_reserved_and_addr() {
    let t = kineto::parse_bytes("small.json", trace_of(&small()).as_bytes()).unwrap();
    let m = &t.memory[3];
    assert_eq!(m.total_reserved, Some(6_291_456));
    assert_eq!(m.addr, Some(3000));
    assert_eq!(m.total_allocated, Some(3_000_050));
    // Kineto 2021's events carry neither.
    let t = load("kineto2021_v100-dgxs-32gb_resnet50_train_tbplugin.pt.trace.json.gz");
    assert!(t
        .memory
        .iter()
        .all(|m| m.total_reserved.is_none() && m.addr.is_none()));
}

#[test]
fn a_small_trace_gives_the_figures_worked_by_hand() {
    let t = kineto::parse_bytes("small.json", trace_of(&small()).as_bytes()).unwrap();
    let (r, notes) = summary(&t);
    assert_eq!(r.events, 5);
    assert_eq!(r.peak_reserved, Bytes(6_291_456));
    assert_eq!(r.peak_reserved_at, Nanos(7000));
    assert_eq!(r.allocated_at_peak_reserved, 3_000_050);
    assert_eq!(r.peak_reserved_over_peak_allocated, 3_291_406);
    assert_eq!(r.peak_difference, 3_291_456);
    assert_eq!(r.peak_difference_at, Nanos(11_000));
    assert_eq!(r.mean_difference, Some(2_574_813));
    assert_eq!(r.span, Nanos(10_000));
    assert!(!notes.iter().any(reserved_note));
}

#[test]
fn partial_and_inconsistent_reserved_totals_are_noted() {
    // The second event lacks Total Reserved: carried over, and noted.
    let mut ev = small();
    ev[1] = mem(3, 2000, 50, 150, None);
    let t = kineto::parse_bytes("partial.json", trace_of(&ev).as_bytes()).unwrap();
    let (r, notes) = summary(&t);
    assert_eq!(r.events, 4);
    assert_eq!(r.mean_difference, Some(2_574_813));
    assert!(notes.contains(&Note::ReservedPartial {
        device: 0,
        missing: 1,
        events: 5
    }));
    // Reserved below allocated at 7 µs: a negative difference, and a note.
    let mut ev = small();
    ev[3] = mem(7, 3000, 3_000_000, 3_000_050, Some(2_097_152));
    let t = kineto::parse_bytes("below.json", trace_of(&ev).as_bytes()).unwrap();
    let (r, notes) = summary(&t);
    assert_eq!(r.peak_reserved, Bytes(6_291_456));
    assert_eq!(r.peak_reserved_at, Nanos(11_000));
    assert!(notes.contains(&Note::ReservedBelowAllocated {
        device: 0,
        instants: 1,
        first_at: Nanos(7000)
    }));
    // A GPU whose events carry no reserved total at all: no summary, one note.
    let ev: Vec<String> = small()
        .iter()
        .map(|e| {
            e.replace(r#","Total Reserved":2097152"#, "")
                .replace(r#","Total Reserved":6291456"#, "")
        })
        .collect();
    let t = kineto::parse_bytes("none.json", trace_of(&ev).as_bytes()).unwrap();
    let a = audit_trace(&t, &Options::default());
    assert!(a.devices[0].reserved.is_none());
    assert!(a.notes.contains(&Note::ReservedMissing {
        device: 0,
        events: 5
    }));
}

/// The bundled DDP trace (the one with `Total Reserved`), against
/// `tests/scripts/trace_figures.py`; Kineto 2021's trace has no reserved totals.
#[test]
fn bundled_traces_reserved_figures() {
    let t = load("hta_v100-sxm2-32gb_ddp_train_rank1_memory.json.gz");
    let (r, notes) = summary(&t);
    assert_eq!(r.device, 1);
    assert_eq!(r.events, 26770);
    assert_eq!(r.peak_reserved, Bytes(12_782_141_440));
    assert_eq!(r.peak_reserved_at, Nanos(1_669_783_687_404_093_000));
    assert_eq!(r.allocated_at_peak_reserved, 4_121_780_224);
    assert_eq!(r.peak_reserved_over_peak_allocated, 6_152_633_344);
    assert_eq!(r.peak_difference, 8_685_527_040);
    assert_eq!(r.peak_difference_at, Nanos(1_669_783_687_730_425_000));
    assert_eq!(r.mean_difference, Some(7_066_048_204));
    assert_eq!(r.span, Nanos(1_718_465_000));
    assert!(!notes.iter().any(reserved_note));
    let t = load("kineto2021_v100-dgxs-32gb_resnet50_train_tbplugin.pt.trace.json.gz");
    let a = audit_trace(&t, &Options::default());
    assert!(a.devices[0].reserved.is_none());
    assert!(a.notes.contains(&Note::ReservedMissing {
        device: 0,
        events: 8220
    }));
}

#[test]
fn audit_prints_and_writes_the_reserved_figures() {
    let f = tmp("small.json", &trace_of(&small()));
    let (c, out) = offcert(&["audit", &f]);
    assert_eq!(c, 0, "{out}");
    assert!(out.contains(
        "  reserved memory: 5 events with Total Reserved, peak 6.291456 MB at 7000 (+0.007000 ms, 3.00005 MB allocated then); peak reserved - peak allocated 3.291406 MB\n"
    ), "{out}");
    assert!(out.contains(
        "  reserved - allocated: peak 3.291456 MB at 11000 (+0.011000 ms), time-weighted mean 2.574813 MB over 0.010000 ms\n"
    ), "{out}");
    let (c, out) = offcert(&["audit", &f, "--json"]);
    assert_eq!(c, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let r = &v["trace"]["devices"][0]["reserved"];
    assert_eq!(r["peak_reserved"], 6_291_456);
    assert_eq!(r["peak_difference"], 3_291_456);
    assert_eq!(r["mean_difference"], 2_574_813);
    // The reserved curve is drawn, dashed, beside the allocated one.
    let svg = tmp("small.svg", "");
    let (c, out) = offcert(&["audit", &f, "--plot", &svg]);
    assert_eq!(c, 0, "{out}");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains(r#"class="second-curve" data-max-bytes="6291456""#));
    // A trace without memory events (the README's): no reserved line, no JSON
    // field, no note, no second curve.
    let rtx = "tests/data/traces/param_rtx2080ti_resnet_train.json.gz";
    let (c, out) = offcert(&["audit", rtx, "--link-gbps", "12"]);
    assert_eq!(c, 0, "{out}");
    assert!(
        !out.contains("reserved") && !out.contains("Reserved"),
        "{out}"
    );
    let (_, out) = offcert(&["audit", rtx, "--json"]);
    assert!(!out.contains("reserved"), "{out}");
}

#[test]
fn hostile_reserved_and_addr_fields_are_bad_input_naming_the_field() {
    for (args, field) in [
        (
            r#""Bytes":1,"Total Reserved":-4"#,
            "traceEvents[0].args.Total Reserved",
        ),
        (
            r#""Bytes":1,"Total Reserved":"12""#,
            "traceEvents[0].args.Total Reserved",
        ),
        (
            r#""Bytes":1,"Total Reserved":1.5"#,
            "traceEvents[0].args.Total Reserved",
        ),
        (r#""Bytes":1,"Addr":-1"#, "traceEvents[0].args.Addr"),
        (r#""Bytes":1,"Addr":1e400"#, "traceEvents[0].args.Addr"),
    ] {
        let text = format!(
            r#"{{"traceEvents":[{{"ph":"i","name":"[memory]","ts":1,"args":{{"Device Type":1,"Device Id":0,{args}}}}}]}}"#
        );
        let f = tmp("hostile.json", &text);
        let (c, out) = offcert(&["audit", &f]);
        assert_eq!(c, 2, "{text}\n{out}");
        assert!(out.contains(field), "{text}\n{out}");
        assert!(!out.contains("panicked"), "{out}");
    }
}

/// The audit's figures against a direct computation from `Total Allocated` and
/// `Total Reserved` (the last event of each instant), on random event lists:
/// instants repeat, reserved may fall below allocated, some events lack it.
#[test]
fn reserved_figures_match_a_direct_computation() {
    fn prop(raw: Vec<(u8, i16, u16, bool)>) -> TestResult {
        if raw.is_empty() || raw.len() > 30 {
            return TestResult::discard();
        }
        let (mut ts, mut alloc, mut events) = (1u64, 5000i64, Vec::new());
        let mut last: Vec<(u64, i64, i64)> = Vec::new(); // instant, reserved, allocated
        let mut reserved = 0i64;
        for (i, &(dt, bytes, r, skip)) in raw.iter().enumerate() {
            ts += (dt % 3) as u64;
            let bytes = (bytes as i64).max(-alloc);
            alloc += bytes;
            let rec = !(skip && i > 0);
            if rec {
                reserved = r as i64 * 4;
            }
            events.push(mem(ts, i as u64, bytes, alloc, rec.then_some(reserved)));
            match last.last_mut() {
                Some(l) if l.0 == ts => *l = (ts, reserved, alloc),
                _ => last.push((ts, reserved, alloc)),
            }
        }
        let t = kineto::parse_bytes("q.json", trace_of(&events).as_bytes()).unwrap();
        let (r, _) = summary(&t);
        let d: Vec<i64> = last.iter().map(|l| l.1 - l.2).collect();
        let peak_r = last.iter().map(|l| l.1).max().unwrap();
        let first_peak = last.iter().find(|l| l.1 == peak_r).unwrap();
        let peak_d = *d.iter().max().unwrap();
        let peak_d_at = last[d.iter().position(|x| *x == peak_d).unwrap()].0;
        let weighted: i128 = (0..last.len() - 1)
            .map(|i| d[i] as i128 * (last[i + 1].0 - last[i].0) as i128 * 1000)
            .sum();
        let span = (last.last().unwrap().0 - last[0].0) as i128 * 1000;
        let ok = r.peak_reserved == Bytes(peak_r as u64)
            && r.peak_reserved_at == Nanos(first_peak.0 as i64 * 1000)
            && r.allocated_at_peak_reserved == first_peak.2
            && r.peak_reserved_over_peak_allocated
                == peak_r - last.iter().map(|l| l.2).max().unwrap()
            && r.peak_difference == peak_d
            && r.peak_difference_at == Nanos(peak_d_at as i64 * 1000)
            && r.mean_difference == (span > 0).then(|| weighted.div_euclid(span) as i64);
        TestResult::from_bool(ok)
    }
    qc(300, 100).quickcheck(prop as fn(Vec<(u8, i16, u16, bool)>) -> TestResult);
}

/// The caching model on `small()`'s allocations, worked by hand from
/// `models/MODEL.md` §2.8: 100 B → a 512 B block of a new 2 MiB small segment;
/// 50 B → the next 512 B of it; 3 000 000 B → 3 000 320 B (rounded to 512 B),
/// large, under 10 MiB, so a new 20 MiB segment. The model reserves 2 MiB,
/// 2 MiB, 22 MiB, 22 MiB; the trace 2, 2, 6, 6 MiB: trace − model is 0, 0,
/// −16 MiB, −16 MiB, a mean of −16 MiB · 4000 / 10000 = −6710886.4.
#[test]
fn the_caching_model_on_a_small_trace_gives_the_figures_worked_by_hand() {
    let t = kineto::parse_bytes("small.json", trace_of(&small()).as_bytes()).unwrap();
    let a = audit_trace(&t, &Options::default());
    let r = a.devices[0].caching_replay.clone().expect("replayed");
    assert_eq!((r.allocations, r.frees, r.unpaired_frees), (3, 2, 0));
    assert_eq!(r.seeded, Bytes(0));
    assert_eq!(
        (r.size_mismatches, r.reused_live_addresses, r.model_failures),
        (0, 0, 0)
    );
    assert_eq!(r.model_peak_reserved, Bytes(23_068_672));
    assert_eq!(r.model_peak_reserved_at, Nanos(7000));
    assert_eq!(r.model_peak_allocated, Bytes(3_000_832));
    assert_eq!(r.model_final_reserved, Bytes(23_068_672));
    let c = r.against_trace.expect("the trace has Total Reserved");
    assert_eq!(c.trace_peak_reserved, Bytes(6_291_456));
    assert_eq!(c.peak_difference, -16_777_216);
    assert_eq!(c.first_divergence, Some(Nanos(7000)));
    assert_eq!(c.largest, (0, Nanos(1000)));
    assert_eq!(c.least, (-16_777_216, Nanos(7000)));
    assert_eq!(c.mean, Some(-6_710_887));
    let f = tmp("small-replay.json", &trace_of(&small()));
    let (code, out) = offcert(&["audit", &f]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("  caching model on the trace's allocations: 3 allocations, 2 paired frees, 0 frees of earlier blocks, 0 B seeded live at the start (capacity unbounded): reserved peak 23.068672 MB at 7000 (+0.007000 ms), allocated peak 3.000832 MB, reserved at the end 23.068672 MB\n"), "{out}");
    assert!(out.contains("  trace reserved - model reserved: peak 6.291456 MB - 23.068672 MB = -16.777216 MB; over time from -16.777216 MB at 7000 (+0.007000 ms) to 0 B at 1000 (+0.001000 ms), time-weighted mean -6.710887 MB; they first differ at 7000 (+0.007000 ms)\n"), "{out}");
}

/// A free with no allocation before it in the window frees a block that was
/// live at the start: the model is seeded with it, and the rest of the
/// baseline as one block.
#[test]
fn frees_of_earlier_blocks_are_seeded_live_at_the_start() {
    let ev = vec![
        mem(1, 9, -1_048_576, 4096, Some(2_097_152)),
        mem(2, 10, 1_048_576, 1_052_672, Some(2_097_152)),
        mem(3, 10, -1_048_576, 4096, Some(2_097_152)),
    ];
    let t = kineto::parse_bytes("seed.json", trace_of(&ev).as_bytes()).unwrap();
    let a = audit_trace(&t, &Options::default());
    let r = a.devices[0].caching_replay.clone().expect("replayed");
    // Baseline 4096 + 1 MiB: the free's block, and 4096 B as one block (both
    // small, one 2 MiB segment); the freed 1 MiB serves the next request.
    assert_eq!(r.seeded, Bytes(1_052_672));
    assert_eq!((r.allocations, r.frees, r.unpaired_frees), (1, 1, 1));
    assert_eq!(r.size_mismatches, 0);
    assert_eq!(r.model_peak_reserved, Bytes(2_097_152));
    assert_eq!(r.model_peak_allocated, Bytes(1_052_672));
    let c = r.against_trace.unwrap();
    assert_eq!(c.first_divergence, None);
    assert_eq!(c.mean, Some(0));
}

#[test]
fn without_addresses_the_model_is_not_replayed() {
    let ev: Vec<String> = small()
        .iter()
        .map(|e| {
            let i = e.find(r#""Addr":"#).unwrap();
            let j = i + e[i..].find(',').unwrap() + 1;
            format!("{}{}", &e[..i], &e[j..])
        })
        .collect();
    let t = kineto::parse_bytes("noaddr.json", trace_of(&ev).as_bytes()).unwrap();
    let a = audit_trace(&t, &Options::default());
    assert!(a.devices[0].caching_replay.is_none());
    assert!(a.devices[0].reserved.is_some());
    assert!(a.notes.contains(&Note::ReplayWithoutAddr {
        device: 0,
        missing: 5,
        events: 5
    }));
    let t = load("kineto2021_v100-dgxs-32gb_resnet50_train_tbplugin.pt.trace.json.gz");
    let a = audit_trace(&t, &Options::default());
    assert!(a.devices[0].caching_replay.is_none());
    assert!(a.notes.contains(&Note::ReplayWithoutAddr {
        device: 0,
        missing: 8220,
        events: 8220
    }));
}

/// The bundled DDP trace: every allocation of the window is freed in it
/// (13385 each, `trace_figures.py`), so the model starts from the baseline
/// alone; a block is at least its request, so the model's allocated peak is at
/// least the trace's, and its reserved at least its allocated.
#[test]
fn the_caching_model_on_the_bundled_ddp_trace() {
    let t = load("hta_v100-sxm2-32gb_ddp_train_rank1_memory.json.gz");
    let a = audit_trace(&t, &Options::default());
    let d = &a.devices[0];
    let r = d.caching_replay.clone().expect("replayed");
    assert_eq!(
        (r.allocations, r.frees, r.unpaired_frees),
        (13385, 13385, 0)
    );
    assert_eq!(r.seeded, Bytes(4_096_614_400));
    assert_eq!(
        (r.size_mismatches, r.reused_live_addresses, r.model_failures),
        (0, 0, 0)
    );
    assert!(r.model_peak_allocated >= Bytes(6_629_508_096));
    assert!(r.model_peak_reserved >= r.model_peak_allocated);
    let c = r.against_trace.unwrap();
    assert_eq!(c.trace_peak_reserved, Bytes(12_782_141_440));
    assert_eq!(
        c.peak_difference,
        12_782_141_440 - r.model_peak_reserved.0 as i64
    );
}

/// On random allocation sequences (addresses reused, frees of earlier blocks,
/// sizes small and large): after every instant the model reserves at least
/// what the trace holds allocated, as a block is at least its request.
#[test]
fn the_model_reserves_at_least_the_traces_allocated_bytes() {
    fn prop(raw: Vec<(u8, bool, u32, u8)>) -> TestResult {
        if raw.is_empty() || raw.len() > 40 {
            return TestResult::discard();
        }
        let (mut ts, mut alloc, mut events) = (1u64, 0i64, Vec::new());
        let mut live: Vec<(u64, i64)> = Vec::new();
        for (i, &(dt, free, size, pick)) in raw.iter().enumerate() {
            ts += (dt % 3) as u64;
            if free && !live.is_empty() {
                let (addr, b) = live.remove(pick as usize % live.len());
                alloc -= b;
                events.push(mem(ts, addr, -b, alloc, Some(1 << 40)));
            } else {
                // Small (≤ 1 MiB) and large requests, up to 64 MiB.
                let b = (((size % (64 << 20)) as i64) >> (pick % 8 * 3)).max(1);
                alloc += b;
                live.push((1000 + i as u64, b));
                events.push(mem(ts, 1000 + i as u64, b, alloc, Some(1 << 40)));
            }
        }
        let t = kineto::parse_bytes("q.json", trace_of(&events).as_bytes()).unwrap();
        let tl = offcert::trace::audit::memory_timeline(&t, 0).unwrap();
        let a = audit_trace(&t, &Options::default());
        let r = a.devices[0].caching_replay.clone().unwrap();
        let ok = r.curve.len() + 1 == tl.samples.len()
            && r.curve
                .iter()
                .zip(&tl.samples[1..])
                .all(|(m, s)| m.0 == s.0 && m.1 as i128 >= s.1)
            && r.model_failures == 0
            && r.size_mismatches == 0;
        TestResult::from_bool(ok)
    }
    qc(200, 100).quickcheck(prop as fn(Vec<(u8, bool, u32, u8)>) -> TestResult);
}
