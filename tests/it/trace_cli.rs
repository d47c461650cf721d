//! `offcert audit` and `offcert export-trace` exit codes: 0 clean, 1 violations, 2 bad input.

use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Run the `offcert` binary in the repository root: exit code, stdout + stderr.
pub(crate) fn offcert(args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_offcert"))
        .args(args)
        .current_dir(ROOT)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

fn tmp(name: &str) -> String {
    let d = std::env::temp_dir().join(format!("offcert-trace-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name).display().to_string()
}

#[test]
fn exit_codes() {
    let (c, out) = offcert(&[
        "audit",
        "tests/data/traces/nsys_h200_nvfuser_report1.sqlite",
    ]);
    assert_eq!(c, 0, "{out}");
    assert!(out.contains("CUPTI_ACTIVITY_KIND_KERNEL 19"), "{out}");

    let trace = chain3_trace("chain3.trace.json");
    let mapped = [
        "audit",
        &trace,
        "--instance",
        "instances/examples/chain3.json",
        "--mapping",
        "instances/traces/export.mapping.json",
    ];
    let (c, out) = offcert(&mapped);
    assert_eq!(c, 0, "{out}");
    assert!(out.contains("verdict: valid"), "{out}");
    let (c, out) = offcert(
        &[
            &mapped[..],
            &[
                "--plan",
                "instances/examples/chain3.offload-x0.schedule.json",
                "--json",
            ],
        ]
        .concat(),
    );
    assert_eq!(c, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["plan"]["planned_makespan"], 15);
    assert_eq!(v["plan"]["actual_makespan"], 15);

    // A budget below the schedule's peak (12 B): violation, exit 1.
    let (c, out) = offcert(&["audit", &trace, "--budget", "11"]);
    assert_eq!(c, 1, "{out}");
    assert!(out.contains("memory-budget"), "{out}");

    // Truncated gzip: exit 2, the file named.
    let gz = std::fs::read(format!("{ROOT}/tests/data/traces/kineto2021_v100-dgxs-32gb_resnet50_train_tbplugin.pt.trace.json.gz")).unwrap();
    let cut = tmp("cut.json.gz");
    std::fs::write(&cut, &gz[..gz.len() / 50]).unwrap();
    let (c, out) = offcert(&["audit", &cut]);
    assert_eq!(c, 2, "{out}");
    assert!(
        out.contains("cut.json.gz") && !out.contains("panicked"),
        "{out}"
    );

    let (c, out) = offcert(&["audit", &trace, "--link-gbps", "fast"]);
    assert_eq!(c, 2, "{out}");
    assert!(out.contains("--link-gbps"), "{out}");
    let (c, out) = offcert(&[
        "audit",
        &trace,
        "--mapping",
        "instances/traces/export.mapping.json",
    ]);
    assert_eq!(c, 2, "{out}");
}

/// A trace with nothing to audit is bad input, not a clean run: exit 2 with the
/// file named (issue 21 item 4). So is a `--device` the trace does not have.
#[test]
fn a_trace_with_nothing_to_audit_is_bad_input() {
    for (name, text, why) in [
        ("bare-empty.json", "[]", "holds no events"),
        (
            "no-events.json",
            r#"{"traceEvents": []}"#,
            "holds no events",
        ),
        (
            "cpu-only.json",
            r#"{"traceEvents": [{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":1,"dur":2}]}"#,
            "no GPU activity, device-memory event or annotation range",
        ),
    ] {
        let path = tmp(name);
        std::fs::write(&path, text).unwrap();
        let (c, out) = offcert(&["audit", &path]);
        assert_eq!(c, 2, "{name}: {out}");
        assert!(
            out.contains(&format!("{path}: ")) && out.contains(why) && !out.contains("verdict"),
            "{name}: {out}"
        );
    }
    let trace = chain3_trace("chain3.device.trace.json");
    let (c, out) = offcert(&["audit", &trace, "--device", "0"]);
    assert_eq!(c, 0, "{out}");
    let (c, out) = offcert(&["audit", &trace, "--device", "3"]);
    assert_eq!(c, 2, "{out}");
    assert!(
        out.contains(&format!(
            "{trace}: --device 3: the trace has no GPU 3 (its GPUs: 0)"
        )),
        "{out}"
    );
}

/// Findings and notes print as sentences with the facts to re-check them (the
/// rule's name first, as the checker's violations), never as raw JSON; the JSON
/// stays for `--json` (issue 21 item 3).
#[test]
fn findings_and_notes_print_as_sentences() {
    // Integer microseconds (resolution 1000 ns). Two HtoD copies of 1000 B on
    // streams 20 and 21 overlap by 2000 ns; at 0.1 GB/s each needs 10000 ns but
    // takes 4000 ns. Kernel k1 starts inside k0 on stream 7; k2 lasts 0 ns.
    let path = tmp("sentences.json");
    std::fs::write(
        &path,
        r#"{"traceEvents":[
 {"ph":"X","cat":"kernel","name":"k0","pid":0,"tid":7,"ts":0,"dur":10},
 {"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":5,"dur":10},
 {"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":20,"dur":0},
 {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":20,"ts":0,"dur":4,"args":{"bytes":1000}},
 {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":21,"ts":2,"dur":4,"args":{"bytes":1000}}
]}"#,
    )
    .unwrap();
    let (c, out) = offcert(&["audit", &path, "--link-gbps", "0.1"]);
    assert_eq!(c, 1, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    for want in [
        "  [link-bandwidth] GPU 0: the HtoD copy of 1000 B on stream 20 over [0 ns, 4000 ns) takes 4000 ns, but the declared link needs at least 10000 ns to move 1000 B: shorter by more than one timestamp step (1000 ns)",
        "  [link-bandwidth] GPU 0: the HtoD copy of 1000 B on stream 21 over [2000 ns, 6000 ns) takes 4000 ns, but the declared link needs at least 10000 ns to move 1000 B: shorter by more than one timestamp step (1000 ns)",
        "  [copy-channel] GPU 0: the HtoD copy of 1000 B on stream 21 over [2000 ns, 6000 ns) starts while the HtoD copy of 1000 B on stream 20 over [0 ns, 4000 ns) is in flight, on the one HtoD channel (2000 ns together)",
        "note: 1 kernel event(s) of zero duration",
        "note: GPU 0 stream 7: 1 activity(ies) start before an earlier one on the same stream ends (profiler timestamp jitter; the largest overlap is 5000 ns)",
    ] {
        assert!(lines.contains(&want), "missing {want:?} in\n{out}");
    }
    assert!(
        !out.contains("\"rule\"") && !out.contains("\"note\""),
        "raw JSON in the text:\n{out}"
    );
    let (c, json) = offcert(&["audit", &path, "--link-gbps", "0.1", "--json"]);
    assert_eq!(c, 1, "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["trace"]["findings"][2]["rule"], "copy_overlap");
    assert_eq!(v["trace"]["findings"][2]["overlap"], 2000);

    // The memory budget, on the exported chain3 run (peak 12 B from 4 to 12 us).
    let trace = chain3_trace("chain3.budget.trace.json");
    let (c, out) = offcert(&["audit", &trace, "--budget", "11"]);
    assert_eq!(c, 1, "{out}");
    assert!(
        out.lines().any(|l| l
            == "  [memory-budget] GPU 0: device memory reaches 12 B at 4000 ns, above the budget of 11 B; first above it at 4000 ns, above it for 8000 ns in all"),
        "{out}"
    );
}

/// Issue 21 item 6: `audit --budget` takes the same byte spellings as every
/// other option (`2G` used to be refused with `invalid digit`).
#[test]
fn audit_budget_takes_every_byte_spelling() {
    let trace = chain3_trace("chain3.budget.trace.json");
    // The schedule's peak is 12 B: 2G and 12B are enough, 11 B is not.
    for ok in ["2G", "2GB", "1.5GiB", "12", "12B", "0.012kB"] {
        let (c, out) = offcert(&["audit", &trace, "--budget", ok]);
        assert_eq!(c, 0, "--budget {ok}: {out}");
    }
    for over in ["11", "11B", "0.011kB"] {
        let (c, out) = offcert(&["audit", &trace, "--budget", over]);
        assert_eq!(c, 1, "--budget {over}: {out}");
        assert!(out.contains("memory-budget"), "{out}");
    }
    let (c, out) = offcert(&["audit", &trace, "--budget", "2X"]);
    assert_eq!(c, 2, "{out}");
    assert!(out.contains("--budget"), "{out}");
}

/// The bundled chain3 run (offload of x0) exported as a Kineto trace into the
/// temporary file `name`; its path.
fn chain3_trace(name: &str) -> String {
    let trace = tmp(name);
    let (c, out) = offcert(&[
        "export-trace",
        "instances/examples/chain3.json",
        "instances/examples/chain3.offload-x0.schedule.json",
        "-o",
        &trace,
    ]);
    assert_eq!(c, 0, "{out}");
    trace
}
