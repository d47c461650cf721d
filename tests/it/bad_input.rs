//! Bad input gets a clear error naming the file and the field or line, exit
//! code 2, and never a panic: the `offcert check` binary is run on broken
//! instance and schedule files.

use std::path::PathBuf;
use std::process::Command;

const INSTANCE: &str = r#"{
  "family": "activation_chain",
  "name": "bad",
  "layers": [
    {"u_f": 2, "u_b": 3, "x": 4},
    {"u_f": 2, "u_b": 3, "x": 4}
  ],
  "x_last": 4,
  "gpu_memory": 12,
  "bandwidth": 2
}
"#;

const SCHEDULE: &str = r#"{
  "events": [
    {"type": "compute", "op": "F0", "start": 0},
    {"type": "offload", "tensor": "x0", "start": 0, "end": 2},
    {"type": "compute", "op": "F1", "start": 2},
    {"type": "compute", "op": "B1", "start": 4},
    {"type": "prefetch", "tensor": "x0", "start": 4, "end": 6},
    {"type": "compute", "op": "B0", "start": 7}
  ]
}
"#;

const CORE: &str = r#"{
  "family": "core",
  "name": "bad-core",
  "tensors": [{"name": "p", "size": 4, "initial": "gpu"}],
  "ops": [{"name": "A", "duration": 1, "reads": ["p"]}],
  "order": ["A"],
  "gpu_memory": 8,
  "duplex": "half_duplex",
  "bandwidth": 1,
  "mode": "one_shot"
}
"#;

struct Run {
    code: Option<i32>,
    stderr: String,
    ifile: String,
    sfile: String,
}

/// Write the two files to a fresh folder and run `offcert check` on them.
fn run(tag: &str, instance: &str, schedule: &str) -> Run {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("offcert-bad-input-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let i = dir.join("instance.json");
    let s = dir.join("schedule.json");
    std::fs::write(&i, instance).unwrap();
    std::fs::write(&s, schedule).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_offcert"))
        .arg("check")
        .arg(&i)
        .arg(&s)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    if std::env::var_os("OFFCERT_SHOW_ERRORS").is_some() {
        eprintln!("[{tag}] {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Run {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).to_string(),
        ifile: i.display().to_string(),
        sfile: s.display().to_string(),
    }
}

/// Exit 2, no panic, and stderr names `file` and contains every one of `what`.
fn rejected(r: &Run, instance_file: bool, what: &[&str]) {
    assert_eq!(r.code, Some(2), "exit code; stderr: {}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    let file = if instance_file { &r.ifile } else { &r.sfile };
    assert!(
        r.stderr.contains(file.as_str()),
        "file not named: {}",
        r.stderr
    );
    for w in what {
        assert!(r.stderr.contains(w), "`{w}` not in: {}", r.stderr);
    }
}

#[test]
fn the_base_files_are_fine() {
    let r = run("base", INSTANCE, SCHEDULE);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = run(
        "core",
        CORE,
        r#"{"events":[{"type":"compute","op":"A","start":0}]}"#,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

#[test]
fn malformed_json_names_file_and_line() {
    // A missing comma on line 8 of the instance.
    let r = run(
        "mal-i",
        &INSTANCE.replace("\"x_last\": 4,", "\"x_last\": 4"),
        SCHEDULE,
    );
    rejected(&r, true, &["malformed JSON", &format!("{}:9:", r.ifile)]);
    // A stray bracket on line 4 of the schedule.
    let r = run(
        "mal-s",
        INSTANCE,
        &SCHEDULE.replacen("\"start\": 0}", "\"start\": 0]}", 1),
    );
    rejected(&r, false, &["malformed JSON", &format!("{}:3:", r.sfile)]);
    // Not an object at all.
    let r = run("mal-top", "[1, 2]", SCHEDULE);
    rejected(&r, true, &["(top level)"]);
}

#[test]
fn truncated_and_empty_files() {
    let cut = &INSTANCE[..INSTANCE.find("\"x_last\"").unwrap()];
    let r = run("trunc-i", cut, SCHEDULE);
    rejected(&r, true, &["malformed JSON", &format!("{}:8:", r.ifile)]);
    let cut = &SCHEDULE[..SCHEDULE.find("{\"type\": \"prefetch\"").unwrap() + 10];
    let r = run("trunc-s", INSTANCE, cut);
    rejected(&r, false, &["malformed JSON", &format!("{}:7:", r.sfile)]);
    let r = run("empty-s", INSTANCE, "");
    rejected(&r, false, &["malformed JSON", &format!("{}:1:", r.sfile)]);
}

#[test]
fn unknown_names() {
    let r = run(
        "tensor",
        INSTANCE,
        &SCHEDULE.replace(
            "\"tensor\": \"x0\", \"start\": 4",
            "\"tensor\": \"x9\", \"start\": 4",
        ),
    );
    rejected(&r, false, &["events[4].tensor", "x9"]);
    let r = run(
        "op",
        INSTANCE,
        &SCHEDULE.replace("\"op\": \"B1\"", "\"op\": \"B7\""),
    );
    rejected(&r, false, &["events[3].op", "B7"]);
    let r = run(
        "core-tensor",
        &CORE.replace("\"reads\": [\"p\"]", "\"reads\": [\"r\"]"),
        "{\"events\":[]}",
    );
    rejected(&r, true, &["ops[0].reads[0]", "`r`"]);
    let r = run(
        "core-order",
        &CORE.replace("\"order\": [\"A\"]", "\"order\": [\"Z\"]"),
        "{\"events\":[]}",
    );
    rejected(&r, true, &["order[0]", "`Z`"]);
    let r = run(
        "field",
        INSTANCE,
        &SCHEDULE.replace("\"events\"", "\"evnts\""),
    );
    rejected(&r, false, &["evnts"]);
}

#[test]
fn unknown_family() {
    let r = run(
        "family",
        &INSTANCE.replace("activation_chain", "conv_net"),
        SCHEDULE,
    );
    rejected(&r, true, &["family", "conv_net"]);
    let r = run(
        "no-family",
        &INSTANCE.replace("\"family\": \"activation_chain\",", ""),
        SCHEDULE,
    );
    rejected(&r, true, &["family", "missing"]);
}

#[test]
fn negative_numbers() {
    let r = run(
        "neg-uf",
        &INSTANCE.replacen("\"u_f\": 2", "\"u_f\": -2", 1),
        SCHEDULE,
    );
    rejected(&r, true, &["layers[0].u_f"]);
    let r = run(
        "neg-x",
        &INSTANCE.replacen("\"x\": 4", "\"x\": -4", 1),
        SCHEDULE,
    );
    rejected(&r, true, &["layers[0].x"]);
    let r = run(
        "neg-start",
        INSTANCE,
        &SCHEDULE.replacen("\"start\": 0}", "\"start\": -1}", 1),
    );
    rejected(&r, false, &["events[0].start", ">= 0"]);
    let r = run(
        "neg-dur",
        &CORE.replace("\"duration\": 1", "\"duration\": -1"),
        "{\"events\":[]}",
    );
    rejected(&r, true, &["ops[0].duration"]);
}

#[test]
fn overflowing_numbers() {
    // Does not fit u64.
    let r = run(
        "big-x",
        &INSTANCE.replacen("\"x\": 4", "\"x\": 18446744073709551616", 1),
        SCHEDULE,
    );
    rejected(&r, true, &["layers[0].x"]);
    // Fits, but the sizes add up past 2^64 − 1.
    let r = run(
        "sum-x",
        &INSTANCE
            .replacen("\"x\": 4", "\"x\": 18446744073709551615", 1)
            .replace("\"x_last\": 4", "\"x_last\": 18446744073709551615"),
        SCHEDULE,
    );
    rejected(&r, true, &["size", "overflow"]);
    // Times beyond 2^61 ticks, and a start whose implied end overflows.
    let r = run(
        "big-end",
        INSTANCE,
        &SCHEDULE.replacen("\"end\": 2}", "\"end\": 4611686018427387904}", 1),
    );
    rejected(&r, false, &["events[1].end"]);
    let r = run(
        "implied-end",
        INSTANCE,
        &SCHEDULE.replacen("\"start\": 7}", "\"start\": 9223372036854775807}", 1),
    );
    rejected(&r, false, &["events[5]"]);
    let r = run(
        "huge-time",
        INSTANCE,
        &SCHEDULE.replacen("\"start\": 7}", "\"start\": 99999999999999999999}", 1),
    );
    rejected(&r, false, &["events[5]", "line 9"]);
}

#[test]
fn inconsistent_values() {
    let r = run(
        "zero-bw",
        &INSTANCE.replace("\"bandwidth\": 2", "\"bandwidth\": 0"),
        SCHEDULE,
    );
    rejected(&r, true, &["machine.bandwidth"]);
    let r = run(
        "consumes",
        &CORE.replace("\"reads\": [\"p\"]", "\"reads\": [], \"consumes\": [\"p\"]"),
        "{\"events\":[]}",
    );
    rejected(&r, true, &["ops[0].consumes[0]"]);
    let r = run(
        "no-layers",
        &INSTANCE.replace(
            "{\"u_f\": 2, \"u_b\": 3, \"x\": 4},\n    {\"u_f\": 2, \"u_b\": 3, \"x\": 4}",
            "",
        ),
        SCHEDULE,
    );
    rejected(&r, true, &["layers"]);
    let r = run(
        "dup",
        &CORE.replace(
            "\"tensors\": [{\"name\": \"p\", \"size\": 4, \"initial\": \"gpu\"}]",
            "\"tensors\": [{\"name\": \"p\", \"size\": 4}, {\"name\": \"p\", \"size\": 2}]",
        ),
        "{\"events\":[]}",
    );
    rejected(&r, true, &["tensors[1].name", "duplicate"]);
    let r = run(
        "backwards",
        INSTANCE,
        &SCHEDULE.replacen("\"start\": 0, \"end\": 2", "\"start\": 3, \"end\": 2", 1),
    );
    rejected(&r, false, &["events[1].end"]);
    let r = run(
        "period",
        INSTANCE,
        &SCHEDULE.replacen("{\n  \"events\"", "{\n  \"period\": 5,\n  \"events\"", 1),
    );
    rejected(&r, false, &["period"]);
}

#[test]
fn a_missing_file_is_named() {
    let out = Command::new(env!("CARGO_BIN_EXE_offcert"))
        .args([
            "check",
            "/nonexistent/offcert-i.json",
            "/nonexistent/offcert-s.json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("/nonexistent/offcert-i.json"), "{err}");
    assert!(!err.contains("panicked"));
}
