//! `offcert audit` and `offcert export-trace` exit codes: 0 clean, 1 violations, 2 bad input.

use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn offcert(args: &[&str]) -> (i32, String) {
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

    let trace = tmp("chain3.trace.json");
    let (c, out) = offcert(&[
        "export-trace",
        "instances/examples/chain3.json",
        "instances/examples/chain3.offload-x0.schedule.json",
        "-o",
        &trace,
    ]);
    assert_eq!(c, 0, "{out}");
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

/// Issue 21 item 6: `audit --budget` takes the same byte spellings as every
/// other option (`2G` used to be refused with `invalid digit`).
#[test]
fn audit_budget_takes_every_byte_spelling() {
    let trace = tmp("chain3.budget.trace.json");
    let (c, out) = offcert(&[
        "export-trace",
        "instances/examples/chain3.json",
        "instances/examples/chain3.offload-x0.schedule.json",
        "-o",
        &trace,
    ]);
    assert_eq!(c, 0, "{out}");
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
