//! `offcert gap --shard K/N` (issue 28): the shards' rows, concatenated in
//! shard order, are the whole report's rows; a bad K/N is bad input (exit 2).

use std::process::Command;

fn offcert(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_offcert"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// The rows of `gap instances/examples --json` (with `extra`), without the
/// wall-clock `seconds` of each heuristic.
fn rows(extra: &[&str]) -> Vec<serde_json::Value> {
    let args = [
        &[
            "gap",
            "instances/examples",
            "--json",
            "--quiet",
            "--jobs",
            "1",
        ],
        extra,
    ]
    .concat();
    let (code, out, err) = offcert(&args);
    assert_eq!(code, 0, "{err}");
    let mut v: Vec<serde_json::Value> = serde_json::from_str(&out).expect("a JSON array");
    for row in &mut v {
        for h in row["heuristics"].as_array_mut().expect("heuristics") {
            h.as_object_mut().expect("a cell").remove("seconds");
        }
    }
    v
}

#[test]
fn the_shards_rows_in_order_are_the_whole_reports_rows() {
    let whole = rows(&[]);
    let mut parts = Vec::new();
    for k in ["1/3", "2/3", "3/3"] {
        let part = rows(&["--shard", k]);
        assert!(!part.is_empty() || whole.len() < 3, "shard {k} is empty");
        parts.extend(part);
    }
    assert_eq!(parts, whole);
    assert!(whole.len() >= 3, "instances/examples has several files");
}

#[test]
fn a_bad_shard_is_bad_input() {
    for bad in ["0/2", "3/2", "1/0", "1", "a/b"] {
        let (code, _, err) = offcert(&["gap", "instances/examples", "--shard", bad]);
        assert_eq!(code, 2, "--shard {bad}: {err}");
        assert!(err.contains("--shard") && err.contains(bad), "{err}");
    }
}
