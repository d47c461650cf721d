//! The offloading steps this project recorded on an H100 and an H200
//! (`tests/data/traces/h100_*`, `h200_*`; PROVENANCE.md, "Recorded by this
//! project"). The figures pinned here are printed by
//! `tests/scripts/recorded_figures.py` (Python, standard library), and the
//! memory peaks are also torch's own counters (`*.meta.json`), read by the
//! tests: an independent check of the Kineto importer and the audit.

use crate::trace_cli::offcert;
use offcert::check::Violation;
use offcert::io;
use offcert::trace::audit::{allocated_above_model, audit_mapped, audit_trace, Options};
use offcert::trace::mapping::Mapping;
use offcert::trace::memsnap::{self, Action, SegmentMade};
use offcert::trace::{self, et, CopyKind, Nanos, Trace};
use offcert::units::{Bytes, Ticks};
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const MAPPING: &str = "instances/traces/pytorch-chain-ns.mapping.json";

fn data(name: &str) -> PathBuf {
    Path::new(ROOT).join("tests/data/traces").join(name)
}

fn rel(name: &str) -> String {
    format!("tests/data/traces/{name}")
}

fn load(name: &str) -> Trace {
    trace::load(&data(name)).unwrap()
}

fn tmp(name: &str) -> String {
    let d = std::env::temp_dir().join(format!("offcert-recorded-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name).display().to_string()
}

/// torch's own counters of a part, from the recording's meta.json.
fn torch_counters(meta: &str, part: &str) -> (u64, u64) {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data(meta)).unwrap()).unwrap();
    let p = &v["parts"][part];
    (
        p["max_memory_allocated"].as_u64().unwrap(),
        p["max_memory_reserved"].as_u64().unwrap(),
    )
}

fn link_copies(t: &Trace, k: CopyKind) -> (u64, u64) {
    let cs: Vec<_> = t
        .copies()
        .filter(|e| e.kind == trace::GpuKind::Memcpy(k))
        .collect();
    (cs.len() as u64, cs.iter().map(|e| e.bytes.unwrap()).sum())
}

/// (peak allocated, when, baseline, peak reserved) of GPU 0 by the audit.
fn peaks(t: &Trace) -> (u64, Nanos, u64, u64) {
    let a = audit_trace(t, &Options::default());
    let d = &a.devices[0];
    let m = d.memory.as_ref().unwrap();
    let r = d.reserved.as_ref().unwrap();
    (m.peak.0, m.peak_at, m.baseline.0, r.peak_reserved.0)
}

#[test]
fn save_on_cpu_step_copies_and_peaks_are_torch_own() {
    let t = load("h100_mlp_saveoncpu.kineto.json.gz");
    // recorded_figures.py: 18 DtoH + 18 HtoD copies of 16 MiB (6 layers × 3 saved tensors).
    assert_eq!(link_copies(&t, CopyKind::DtoH), (18, 301_989_888));
    assert_eq!(link_copies(&t, CopyKind::HtoD), (18, 301_989_888));
    assert_eq!(link_copies(&t, CopyKind::DtoD), (1, 16_777_216));
    let (peak, at, base, reserved) = peaks(&t);
    assert_eq!(
        (peak, at, base),
        (336_692_736, Nanos(1_795_782_034_107_756_378), 286_359_552)
    );
    assert_eq!(reserved, 371_195_904);
    // torch.cuda.max_memory_allocated / max_memory_reserved of the same step
    assert_eq!(
        (peak, reserved),
        torch_counters("h100_mlp.meta.json", "saveoncpu")
    );
}

#[test]
fn plain_step_has_no_link_copies_and_a_higher_peak() {
    let t = load("h100_mlp_plain.kineto.json.gz");
    assert_eq!(link_copies(&t, CopyKind::DtoH), (0, 0));
    assert_eq!(link_copies(&t, CopyKind::HtoD), (0, 0));
    let (peak, at, base, reserved) = peaks(&t);
    assert_eq!(
        (peak, at, base),
        (353_461_760, Nanos(1_795_782_035_752_739_694), 286_359_552)
    );
    assert_eq!(reserved, 387_973_120);
    assert_eq!(
        (peak, reserved),
        torch_counters("h100_mlp.meta.json", "plain")
    );
    // What save_on_cpu saved on this step: 16.769 MB allocated, 16 MiB reserved.
    let (off_peak, _, _, off_reserved) = peaks(&load("h100_mlp_saveoncpu.kineto.json.gz"));
    assert_eq!(peak - off_peak, 16_769_024);
    assert_eq!(reserved - off_reserved, 16_777_216);
}

#[test]
fn offsets_before_the_first_gpu_event_read_as_such() {
    // Regression: the reserved peak comes 4.071546 ms before the first GPU
    // event; it printed as "(+-4.071546 ms)".
    let (code, out) = offcert(&["audit", &rel("h100_mlp_saveoncpu.kineto.json.gz")]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("+-"), "{out}");
    assert!(
        out.contains("peak 371.195904 MB at 1795782034078892948 (4.071546 ms before the first GPU event, 269.582336 MB allocated then)"),
        "{out}"
    );
    assert!(
        out.contains(
            "peak 336.692736 MB at 1795782034107756378 (+24.791884 ms from the first GPU event)"
        ),
        "{out}"
    );
}

/// The re-timed chain instance, with its GPU memory replaced if asked.
fn chain_instance(which: &str, gpu_memory: Option<u64>) -> String {
    let text = std::fs::read_to_string(data(&format!("h200_chain_{which}.instance.json"))).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    if let Some(m) = gpu_memory {
        v["gpu_memory"] = m.into();
    }
    let p = tmp(&format!(
        "{which}-{}.instance.json",
        gpu_memory.unwrap_or(0)
    ));
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

fn mapped(which: &str, gpu_memory: Option<u64>) -> (Trace, offcert::trace::audit::MappedAudit) {
    let t = load(&format!("h200_chain_{which}.kineto.json.gz"));
    let inst = io::load_instance(Path::new(&chain_instance(which, gpu_memory)))
        .unwrap()
        .1;
    let m = Mapping::load(&Path::new(ROOT).join(MAPPING)).unwrap();
    let a = audit_mapped(&t, &m, &inst, MAPPING).unwrap();
    (t, a)
}

#[test]
fn chain_gated_and_eager_are_valid_at_the_no_offload_peak() {
    for (which, peak) in [("gated", 117_440_512u64), ("eager", 184_549_376)] {
        let (_, a) = mapped(which, None);
        assert_eq!(a.matched.values().sum::<u64>(), 20, "{which}");
        assert!(a.report.valid, "{which}: {:?}", a.report.violations);
        // 184549376 = the instance's gpu_memory, its no-offload peak: eager
        // prefetching undoes the offloading.
        assert_eq!(a.report.peak_memory, Bytes(peak), "{which}");
    }
}

#[test]
fn at_150_mb_gated_is_valid_and_eager_exceeds_memory() {
    let (_, g) = mapped("gated", Some(150_000_000));
    assert!(g.report.valid, "{:?}", g.report.violations);
    let (_, e) = mapped("eager", Some(150_000_000));
    assert!(!e.report.valid);
    let over: Vec<(Ticks, Bytes)> = e
        .report
        .violations
        .iter()
        .map(|v| match v {
            Violation::MemoryExceeded {
                at, used, capacity, ..
            } => {
                assert_eq!(*capacity, Bytes(150_000_000));
                (*at, *used)
            }
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    // Every instant the eager run holds more than 150 MB: 9, 10, 11, 10, 9 tensors
    // of 16 MiB (B5's temporaries included at 2770825 ns after the origin).
    assert_eq!(
        over,
        vec![
            (Ticks(2_264_462), Bytes(150_994_944)),
            (Ticks(2_464_876), Bytes(167_772_160)),
            (Ticks(2_770_825), Bytes(184_549_376)),
            (Ticks(2_978_343), Bytes(167_772_160)),
            (Ticks(3_691_233), Bytes(150_994_944)),
        ]
    );
}

#[test]
fn reconstructed_schedules_recheck_with_offcert_check() {
    for (which, mem, code) in [
        ("gated", 150_000_000u64, 0),
        ("eager", 150_000_000, 1),
        ("eager", 184_549_376, 0),
    ] {
        let inst = chain_instance(which, Some(mem));
        let sched = tmp(&format!("{which}-{mem}.schedule.json"));
        let trace = rel(&format!("h200_chain_{which}.kineto.json.gz"));
        let (_, out) = offcert(&[
            "audit",
            &trace,
            "--instance",
            &inst,
            "--mapping",
            MAPPING,
            "--write-schedule",
            &sched,
        ]);
        let want = if code == 0 {
            "verdict: valid"
        } else {
            "verdict: INVALID"
        };
        assert!(out.contains(&format!("  {want}")), "{out}");
        let (c, out) = offcert(&["check", &inst, &sched]);
        assert_eq!(c, code, "{which} at {mem}: {out}");
        assert!(out.contains(want), "{out}");
        if code == 1 {
            assert!(out.contains("[memory:memory_exceeded] at 2770825: GPU memory 184549376 B > capacity 150000000 B"), "{out}");
        }
    }
}

#[test]
fn gated_chain_allocates_a_prefetch_buffer_before_its_copy() {
    // The allocator counts a prefetch buffer from the CPU's torch.empty, the
    // model from the copy's start: the trace's allocated bytes above their
    // baseline (134217728, recorded_figures.py) pass the model's peak
    // (117440512) by one 16 MiB buffer, from 1795782247018445229 ns for
    // 151200 ns in all.
    let (t, a) = mapped("gated", None);
    let above = allocated_above_model(&t, &a);
    assert_eq!(above.len(), 1);
    let x = &above[0];
    assert_eq!(
        (x.device, x.trace_peak, x.model_peak),
        (0, Bytes(134_217_728), Bytes(117_440_512))
    );
    assert_eq!(x.excess, Bytes(16_777_216));
    assert_eq!(x.trace_peak_at, Nanos(1_795_782_247_018_445_229));
    assert_eq!(x.first_above_at, Nanos(1_795_782_247_018_445_229));
    assert_eq!(x.time_above, Nanos(151_200));
    // Eager: the model's peak (184.5 MB) is above anything the allocator
    // counted (134.2 MB): the CPU freed B5's inputs before the GPU ran B5.
    let (t, a) = mapped("eager", None);
    assert!(allocated_above_model(&t, &a).is_empty());
    let (_, out) = offcert(&[
        "audit",
        &rel("h200_chain_gated.kineto.json.gz"),
        "--instance",
        &rel("h200_chain_gated.instance.json"),
        "--mapping",
        MAPPING,
    ]);
    assert!(out.contains("  note: GPU 0: the trace's allocated bytes above its baseline peak at 134.217728 MB at 1795782247018445229 ns, 16.777216 MB above the model's peak of 117.440512 MB; first above it at 1795782247018445229 ns, for 0.151200 ms in all"), "{out}");
}

/// The real allocator's segments (made for which allocation, size), from
/// recorded_figures.py.
const REAL_SEGMENTS: [(u64, u64); 18] = [
    (0, 16777216),
    (1, 2097152),
    (2, 16777216),
    (4, 16777216),
    (6, 16777216),
    (8, 16777216),
    (10, 16777216),
    (12, 16777216),
    (13, 16777216),
    (14, 33554432),
    (16, 16777216),
    (39, 16777216),
    (40, 16777216),
    (41, 16777216),
    (47, 33554432),
    (50, 33554432),
    (59, 33554432),
    (77, 33554432),
];

#[test]
fn caching_model_replays_a_whole_process_like_the_real_allocator() {
    let snap = memsnap::load(&data("h100_alloc_from_start.memsnap.json.gz")).unwrap();
    let s = snap.allocator_settings.as_ref().unwrap();
    assert!(!s.expandable_segments && s.max_split_size == -1);
    let h = &snap.device_traces[0];
    let count = |a: Action| h.iter().filter(|e| e.action == a).count();
    assert_eq!(h.len(), 721);
    assert_eq!(
        [
            Action::Alloc,
            Action::FreeRequested,
            Action::FreeCompleted,
            Action::SegmentAlloc
        ]
        .map(count),
        [253, 225, 225, 18]
    );
    let r = memsnap::replay(&snap, 0).unwrap();
    let real: Vec<SegmentMade> = REAL_SEGMENTS
        .iter()
        .map(|&(allocation, size)| SegmentMade {
            allocation,
            size: Bytes(size),
        })
        .collect();
    assert_eq!(r.real_segments, real);
    // The model cuts the same segments, of the same sizes, for the same
    // allocations, and holds the same reserved bytes after every event.
    assert_eq!(r.model_segments, real);
    assert_eq!(
        (r.unknown_frees, r.reused_live_addresses, r.streams.clone()),
        (0, 0, vec![0])
    );
    assert_eq!(r.compared, 253 + 225);
    assert_eq!((r.reserved_differences, r.first_difference), (0, None));
    assert_eq!(r.real_start_reserved, Bytes(0));
    assert!(r.agrees());
    // The state at the end (the snapshot's `segments`): 18 segments,
    // 371195904 B reserved, 286359552 B allocated in blocks.
    assert_eq!(snap.segments.len(), 18);
    let total: u64 = snap.segments.iter().map(|g| g.total_size).sum();
    let allocated: u64 = snap.segments.iter().map(|g| g.allocated_size).sum();
    assert_eq!(
        (r.real_final_reserved.0, r.model_final_reserved.0),
        (total, total)
    );
    assert_eq!(r.model_final_allocated.0, allocated);
    assert_eq!(allocated, 286_359_552);
    // and torch's own counters of the process
    let (max_alloc, max_res) = torch_counters("h100_alloc_from_start.meta.json", "allocator");
    assert_eq!(r.model_peak_reserved.0, max_res);
    assert_eq!(r.real_peak_reserved.0, max_res);
    assert_eq!(r.model_peak_allocated.0, max_alloc);
}

#[test]
fn a_snapshot_from_mid_run_is_said_to_start_elsewhere() {
    let snap = memsnap::load(&data("h100_mlp_saveoncpu.memsnap.json.gz")).unwrap();
    let r = memsnap::replay(&snap, 0).unwrap();
    // 79 allocations, 79 frees, 12 of them of blocks from before the history,
    // no segment allocated (the warm-up's are cached).
    assert_eq!((r.allocations, r.frees, r.unknown_frees), (79, 67, 12));
    assert!(r.real_segments.is_empty());
    // Reserved before the history: the 18 segments at the end (371195904 B,
    // recorded_figures.py), none made or given back during it.
    assert_eq!(r.real_start_reserved, Bytes(371_195_904));
    assert_eq!(r.real_peak_reserved, Bytes(371_195_904));
    assert!(!r.agrees());
    let (code, out) = offcert(&["audit", &rel("h100_mlp_saveoncpu.memsnap.json.gz")]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("12 frees of earlier blocks were skipped"),
        "{out}"
    );
    assert!(out.contains("  real allocator: reserved 371.195904 MB before the history, 0 segment(s) allocated (0 B)"), "{out}");
    assert!(
        out.contains("  segments: the first 0 agree; the real allocator made 0, the model 9"),
        "{out}"
    );
}

#[test]
fn audit_reads_an_allocator_snapshot() {
    let f = rel("h100_alloc_from_start.memsnap.json.gz");
    let (code, out) = offcert(&["audit", &f]);
    assert_eq!(code, 0, "{out}");
    for want in [
        "settings: expandable_segments false, max_split_size unlimited",
        "GPU 0: 721 events, 253 allocations, 225 frees completed, 0 frees of blocks allocated before the history, streams [0]",
        "  real allocator: reserved 0 B before the history, 18 segment(s) allocated (371.195904 MB), 0 given back; reserved peak 371.195904 MB, at the end 371.195904 MB",
        "  segments: the same sizes in the same order, each made for the same allocation",
        "  reserved after each of 478 compared events: equal throughout",
        "verdict: clean",
    ] {
        assert!(out.contains(want), "{want}\n{out}");
    }
    let (code, out) = offcert(&["audit", &f, "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["devices"][0]["model_segments"].as_array().unwrap().len(),
        18
    );
    let (code, out) = offcert(&["audit", &f, "--budget", "1G"]);
    assert_eq!(code, 2, "{out}");
}

#[test]
fn bad_snapshots_name_the_field() {
    let bad = |text: &str| {
        memsnap::parse_bytes("s.json", text.as_bytes())
            .unwrap_err()
            .to_string()
    };
    let e = bad(r#"{"segments":[],"device_traces":[[{"action":"alloc","addr":1}]]}"#);
    assert!(
        e.contains("s.json: device_traces[0][0]") && e.contains("size"),
        "{e}"
    );
    let e = bad(r#"{"segments":[],"device_traces":[[{"action":"bogus","addr":1,"size":2}]]}"#);
    assert!(
        e.contains("device_traces[0][0].action") && e.contains("bogus"),
        "{e}"
    );
    let e = bad(r#"{"segments":[{"device":0,"address":-5,"total_size":1,"allocated_size":0}]}"#);
    assert!(e.contains("segments[0].address"), "{e}");
    let e = bad(r#"{"segments":[], "device_traces": [[{"#);
    assert!(
        e.contains("s.json: byte") && e.contains("malformed JSON"),
        "{e}"
    );
    // a Kineto trace is not a snapshot, a snapshot is
    assert!(!memsnap::is_snapshot(&data(
        "h100_mlp_plain.kineto.json.gz"
    )));
    assert!(memsnap::is_snapshot(&data(
        "h100_alloc_from_start.memsnap.json.gz"
    )));
}

/// A legacy-schema ET node.
fn node(id: i64, name: &str, schema: &str, ins: &[[i64; 2]], outs: &[[i64; 2]]) -> String {
    let t = |v: &[[i64; 2]]| {
        v.iter()
            .map(|[tid, s]| format!(r#"[{tid},{s},0,256,4,"cuda:0"]"#))
            .collect::<Vec<_>>()
            .join(",")
    };
    let ty = |v: &[[i64; 2]]| vec![r#""Tensor(float)""#; v.len()].join(",");
    format!(
        r#"{{"name":"{name}","id":{id},"rf_id":{id},"parent":1,"op_schema":"{schema}","inputs":[{}],"input_types":[{}],"outputs":[{}],"output_types":[{}]}}"#,
        t(ins),
        ty(ins),
        t(outs),
        ty(outs)
    )
}

/// A legacy-schema ET of one thread holding `nodes`.
fn et_json(nodes: &[String]) -> String {
    let thread = r#"{"name":"[pytorch|profiler|execution_graph|thread]","id":1,"rf_id":0,"parent":1,"op_schema":"","inputs":[],"input_types":[],"outputs":[],"output_types":[]}"#;
    format!(
        r#"{{"schema":"1.0.1","pid":1,"nodes":[{thread},{}]}}"#,
        nodes.join(",")
    )
}

/// `relu(input) -> output`, tensors as `[tensor id, storage id]`.
fn relu(id: i64, input: [i64; 2], output: [i64; 2]) -> String {
    node(
        id,
        "aten::relu",
        "aten::relu(Tensor self) -> Tensor",
        &[input],
        &[output],
    )
}

/// `mul(a, b) -> output`.
fn mul(id: i64, a: [i64; 2], b: [i64; 2], output: [i64; 2]) -> String {
    let schema = "aten::mul(Tensor self, Tensor other) -> Tensor";
    node(id, "aten::mul", schema, &[a, b], &[output])
}

#[test]
fn et_storage_ids_reused_by_fresh_tensors_are_new_variables() {
    // Regression: storage 5 holds tensor 50 (written by relu, read by mul),
    // is freed, and the allocator gives its block to tensor 60 (written by a
    // second relu, read by a second mul). The old importer read the second
    // relu as modifying s5 (one long-lived variable: a fake dependency and a
    // fake prefetch for an offloaded s5). An in-place op keeps its variable.
    let nodes = [
        relu(2, [10, 1], [50, 5]),
        mul(3, [50, 5], [10, 1], [70, 7]),
        relu(4, [70, 7], [60, 5]),
        node(
            5,
            "aten::relu_",
            "aten::relu_(Tensor(a!) self) -> Tensor(a!)",
            &[[60, 5]],
            &[[60, 5]],
        ),
        mul(6, [60, 5], [70, 7], [80, 8]),
    ];
    let text = et_json(&nodes);
    let opts = et::EtOptions {
        name: "reuse".into(),
        gpu_memory: None,
        bandwidth: offcert::family::BandwidthFile::PerTick(12),
        split_reused_storages: true,
    };
    // The old reading (`--merge-reused-storages`, the default before
    // 2026-11-27): the second relu modifies s5.
    let old = et::EtOptions {
        split_reused_storages: false,
        ..opts.clone()
    };
    let (seq, _) = et::import("reuse.json", text.as_bytes(), None, &old).unwrap();
    assert_eq!(seq.functions[2].modifies, vec!["s5".to_string()]);
    assert_eq!(seq.variables.len(), 4);
    let (seq, _) = et::import("reuse.json", text.as_bytes(), None, &opts).unwrap();
    let f = |i: usize| &seq.functions[i];
    assert_eq!(f(0).writes, vec!["s5".to_string()]);
    assert_eq!(f(2).writes, vec!["s5.1".to_string()], "{:?}", f(2));
    assert!(f(2).modifies.is_empty(), "{:?}", f(2));
    assert_eq!(f(3).modifies, vec!["s5.1".to_string()]);
    assert!(f(4).reads.contains(&"s5.1".to_string()), "{:?}", f(4));
    let names: Vec<&str> = seq.variables.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["s1", "s5", "s7", "s5.1", "s8"]);
}

/// `offcert import et` splits reused storage ids by default (a demanding
/// user gets the correct reading without a flag); `--merge-reused-storages`
/// keeps the reading before 2026-11-27. Storage 5 holds tensor 50 (written by
/// relu, read by mul), is freed, a `neg` allocates s9 meanwhile, and the
/// allocator gives s5's block to the unrelated tensor 60 (written by a second
/// relu, read by a last mul). Regression: the default read the second relu as
/// modifying s5, one variable alive from the first relu to the last mul.
#[test]
fn et_import_splits_reused_storages_by_default() {
    let nodes = [
        relu(2, [10, 1], [50, 5]),
        mul(3, [50, 5], [10, 1], [70, 7]),
        node(
            4,
            "aten::neg",
            "aten::neg(Tensor self) -> Tensor",
            &[[10, 1]],
            &[[90, 9]],
        ),
        relu(5, [70, 7], [60, 5]),
        mul(6, [60, 5], [90, 9], [80, 8]),
    ];
    let trace = tmp("reuse.et.json");
    std::fs::write(&trace, et_json(&nodes)).unwrap();
    // (extra flag, variables, variables named after storage 5, what f3 does to them)
    for (flag, variables, s5, f3) in [
        (None, 6, vec!["s5", "s5.1"], ("writes", "s5.1")),
        (
            Some("--merge-reused-storages"),
            5,
            vec!["s5"],
            ("modifies", "s5"),
        ),
    ] {
        let out = tmp("reuse.json");
        let mut args = vec!["import", "et", trace.as_str(), "-o", out.as_str()];
        args.extend(flag);
        let (code, text) = offcert(&args);
        assert_eq!(code, 0, "{text}");
        let line = format!("5 functions, {variables} variables (1 persistent)");
        assert!(text.contains(&line), "{flag:?}: `{line}` not in {text}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let names: Vec<&str> = v["variables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["name"].as_str().unwrap())
            .filter(|n| *n == "s5" || n.starts_with("s5."))
            .collect();
        assert_eq!(names, s5, "{flag:?}");
        assert_eq!(
            v["functions"][3][f3.0],
            serde_json::json!([f3.1]),
            "{flag:?}"
        );
    }
    // The old name of the default is still accepted; the two conflict.
    let out = tmp("reuse.json");
    let old_name = [
        "import",
        "et",
        &trace,
        "-o",
        &out,
        "--split-reused-storages",
    ];
    assert_eq!(offcert(&old_name).0, 0);
    let both = [&old_name[..], &["--merge-reused-storages"]].concat();
    assert_eq!(offcert(&both).0, 2);
}

/// An operator writes the arguments its schema marks `!`, host or not.
/// Regression: the importer took an in-place operator's first *CUDA* tensor
/// as the one it writes, so `copy_(cpu, cuda)` (save_on_cpu's pack hook,
/// inside every forward operator that saves a tensor) "modified" each
/// tensor it saved (412 such copies in the ResNet-18 step), and the
/// optimiser's `_foreach_add_(params, grads)` modified only the first
/// parameter and read the others.
#[test]
fn et_import_writes_the_arguments_the_schema_marks() {
    let cuda = |tid: i64, s: i64| format!(r#"[{tid},{s},0,256,4,"cuda:0"]"#);
    let host = r#"[90,9,0,256,4,"cpu"]"#;
    let nodes = [
        node(
            2,
            "aten::mul",
            "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor",
            &[[10, 1], [20, 2]],
            &[[50, 5]],
        ),
        format!(
            r#"{{"name":"aten::copy_","id":3,"rf_id":3,"parent":1,"op_schema":"aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)","inputs":[{host},{},false],"input_types":["Tensor(float)","Tensor(float)","Bool"],"outputs":[{host}],"output_types":["Tensor(float)"]}}"#,
            cuda(50, 5)
        ),
        format!(
            r#"{{"name":"aten::_foreach_add_","id":4,"rf_id":4,"parent":1,"op_schema":"aten::_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()","inputs":[[{},{}],[{},{}],1],"input_types":["GenericList[Tensor(float),Tensor(float)]","GenericList[Tensor(float),Tensor(float)]","Int"],"outputs":[],"output_types":[]}}"#,
            cuda(10, 1),
            cuda(20, 2),
            cuda(50, 5),
            cuda(50, 5)
        ),
    ];
    let text = et_json(&nodes);
    let opts = et::EtOptions {
        name: "written".into(),
        gpu_memory: None,
        bandwidth: offcert::family::BandwidthFile::PerTick(12),
        split_reused_storages: true,
    };
    let (seq, rep) = et::import("written.json", text.as_bytes(), None, &opts).unwrap();
    let names = |v: &[String]| v.to_vec();
    let f = |i: usize| &seq.functions[i];
    assert_eq!(rep.host_tensors_skipped, 2);
    assert_eq!(names(&f(1).reads), ["s5"], "{:?}", f(1));
    assert!(f(1).modifies.is_empty(), "{:?}", f(1));
    assert_eq!(names(&f(2).modifies), ["s1", "s2"], "{:?}", f(2));
    assert_eq!(names(&f(2).reads), ["s5"], "{:?}", f(2));
}

fn import_mlp(
    which: &str,
    split: bool,
) -> (offcert::family::op_sequence::OpSequence, et::EtReport) {
    let opts = et::EtOptions {
        name: which.into(),
        gpu_memory: None,
        bandwidth: offcert::family::BandwidthFile::PerTick(55),
        split_reused_storages: split,
    };
    et::import_files(
        &data(&format!("h100_mlp_{which}.et.json.gz")),
        Some(&data(&format!("h100_mlp_{which}.kineto.json.gz"))),
        &opts,
    )
    .unwrap()
}

/// `offcert import et` on the recorded steps (ET + Kineto of the same step).
#[test]
fn et_import_of_the_recorded_steps() {
    let to = |f: &&offcert::family::op_sequence::Function| f.name.contains(" aten::to ");
    // (which, split, variables, no-offload peak)
    for (which, split, variables, peak) in [
        ("saveoncpu", false, 30, 268_525_568u64),
        ("saveoncpu", true, 73, 251_748_352),
        ("plain", false, 31, 285_261_824),
        ("plain", true, 55, 268_484_608),
    ] {
        let (seq, rep) = import_mlp(which, split);
        assert_eq!(rep.linked, rep.functions, "{which}");
        assert_eq!(rep.variables, variables, "{which} {split}");
        // weights, biases and the batch; no host tensor is a variable (the
        // pinned buffers of save_on_cpu are left out and counted)
        assert_eq!(rep.persistent, 13);
        let host = if which == "plain" { 2 } else { 125 };
        assert_eq!(rep.host_tensors_skipped, host);
        assert_eq!(seq.uses().unwrap().resident_peak(), peak, "{which} {split}");
        let tos: Vec<_> = seq.functions.iter().filter(to).collect();
        if which == "plain" {
            assert!(tos.is_empty());
            continue;
        }
        // The unpack hook's host-to-device copies are GPU ops: one per HtoD
        // copy of the trace (18), together exactly the copies' 5531486 ns
        // (recorded_figures.py), not transfers the model would plan.
        assert_eq!(tos.len(), 18);
        assert_eq!(tos.iter().map(|f| f.duration).sum::<i64>(), 5_531_486);
        let fresh = tos
            .iter()
            .filter(|f| f.writes.len() == 1 && f.modifies.is_empty())
            .count();
        // the old reading: 17 of them modify a storage they do not read
        assert_eq!(fresh, if split { 18 } else { 1 });
    }
    // The no-offload peaks of plain and save_on_cpu differ by 16736256 B in
    // both readings; torch's max_memory_allocated by 16769024 B (docs/RESULTS.md).
}
