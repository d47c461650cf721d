//! `op_sequence` semantics that `models/MODEL.md` §4.4 states, each shown on
//! `instances/fixtures/opseq3.json` (issue 25, Why 5): the family is cyclic
//! only (a one-shot request is bad input, exit 2), and a `modifies` variable
//! is read and written, so listing it in `reads` too is bad input (exit 2,
//! the field named). The checker fixtures for the other two answers (drops at
//! 0, a start state's CPU copy of an activation) are in the core crate's
//! `tests/checker/rules.rs`.

use crate::common::repo;
use offcert::io::load_instance;
use offcert::model::{Mode, TensorId};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    repo().join("instances/fixtures").join(name)
}

/// opseq3.json as JSON, to derive broken variants from.
fn opseq3() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(fixture("opseq3.json")).unwrap()).unwrap()
}

/// Write `text` to a fresh file named `name` and return its path.
fn write(tag: &str, name: &str, text: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("offcert-opseq-model-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn check(instance: &Path, schedule: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_offcert"))
        .arg("check")
        .arg(instance)
        .arg(schedule)
        .output()
        .unwrap()
}

/// Exit 2, no panic, and stderr names `file` and contains every one of `what`.
fn rejected(out: &Output, file: &Path, what: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains(&file.display().to_string()),
        "file not named: {err}"
    );
    for w in what {
        assert!(err.contains(w), "`{w}` not in: {err}");
    }
}

#[test]
fn op_sequence_is_cyclic_only() {
    let (_, inst) = load_instance(&fixture("opseq3.json")).unwrap();
    assert_eq!(inst.mode, Mode::Cyclic);
    let valid = fixture("opseq3.valid.schedule.json");
    assert_eq!(
        check(&fixture("opseq3.json"), &valid).status.code(),
        Some(0)
    );
    // A one-shot schedule (no period, no start state) is refused at load.
    let mut s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&valid).unwrap()).unwrap();
    let o = s.as_object_mut().unwrap();
    o.remove("period");
    o.remove("initial");
    let one_shot = write("one-shot", "schedule.json", &s.to_string());
    rejected(
        &check(&fixture("opseq3.json"), &one_shot),
        &one_shot,
        &["period", "a cyclic instance needs a period"],
    );
    // The file format has no mode to ask for one.
    let mut i = opseq3();
    i["mode"] = "one_shot".into();
    let moded = write("mode", "instance.json", &i.to_string());
    rejected(&check(&moded, &valid), &moded, &["unknown field `mode`"]);
}

#[test]
fn modifies_means_read_and_write_and_is_not_listed_in_reads_too() {
    // f3 of opseq3 modifies w, listed in `modifies` only: R(f3) and W(f3) hold w.
    let (_, inst) = load_instance(&fixture("opseq3.json")).unwrap();
    let w = TensorId(0);
    assert!(inst.ops[2].reads.contains(&w), "{:?}", inst.ops[2]);
    assert_eq!(inst.ops[2].modifies, vec![w]);
    assert!(inst.ops[2].produces.is_empty());
    // Listed in `reads` as well: bad input naming the second listing.
    let mut i = opseq3();
    i["functions"][2]["reads"]
        .as_array_mut()
        .unwrap()
        .push("w".into());
    let both = write("both", "instance.json", &i.to_string());
    rejected(
        &check(&both, &fixture("opseq3.valid.schedule.json")),
        &both,
        &[
            "functions[2].modifies[0]",
            "`w` appears twice in function `f3`",
        ],
    );
}
