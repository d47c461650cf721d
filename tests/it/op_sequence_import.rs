//! `offcert import et` (issue 13): the two public execution traces in
//! `tests/data/traces/` (see PROVENANCE.md), durations from Kineto for the
//! linear one, the cost model for ResNet; bad input named, exit 2, no panic.

use crate::common;

use common::*;
use offcert::family::{BandwidthFile, InstanceFile};
use offcert::heuristic::{self, op_sequence::Window};
use offcert::trace::et::{self, EtError, EtOptions};
use std::process::Command;

fn opts() -> EtOptions {
    EtOptions {
        name: "t".into(),
        gpu_memory: None,
        bandwidth: BandwidthFile::PerTick(12),
        split_reused_storages: true,
    }
}

fn data(f: &str) -> std::path::PathBuf {
    repo().join("tests/data/traces").join(f)
}

#[test]
fn linear_et_with_kineto_durations() {
    let (seq, rep) = et::import_files(
        &data("param_linear_et.json.gz"),
        Some(&data("param_linear_kineto.json.gz")),
        &opts(),
    )
    .unwrap();
    assert_eq!(rep.schema, "1.0.1");
    assert_eq!(rep.functions, 320);
    assert_eq!(rep.linked, 320, "unlinked: {:?}", rep.unlinked);
    assert!(rep.kernels_linked > 0);
    assert!(seq.note.as_deref().unwrap().contains("Kineto trace"));
    let u = seq.uses().unwrap();
    assert_eq!(seq.gpu_memory, u.resident_peak());
    // At the least feasible memory the window's schedule is checked valid.
    let mut s = seq.clone();
    s.gpu_memory = u.least_memory();
    let f = InstanceFile::OpSequence(s);
    let inst = f.compile().unwrap();
    let run = heuristic::run(&Window::nnabla(), &f, &inst).unwrap();
    assert!(run.checked.report().valid);
}

#[test]
fn resnet_chakra_et_with_the_cost_model() {
    let (seq, rep) = et::import_files(&data("param_resnet_et.json.gz"), None, &opts()).unwrap();
    assert_eq!(rep.schema, "1.1.0-chakra.0.0.4");
    assert_eq!(rep.functions, 3705);
    assert!(seq.note.as_deref().unwrap().contains("cost model"));
    assert!(rep.persistent > 0 && rep.variables > rep.persistent);
    let f = InstanceFile::OpSequence(seq);
    f.compile().unwrap();
}

fn err(text: &str) -> String {
    match et::import("bad.json", text.as_bytes(), None, &opts()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted: {text}"),
    }
}

#[test]
fn bad_input_names_the_field() {
    assert!(err(r#"{"nodes": []}"#).contains("schema"));
    assert!(err(r#"{"schema": "9.9", "nodes": []}"#).contains("unknown schema"));
    assert!(err(r#"{"schema": "1.0.1"}"#).contains("nodes"));
    let node = |t: &str| {
        format!(
            r#"{{"schema": "1.0.1", "nodes": [{{"id": 1, "name": "aten::relu", "parent": 0, "rf_id": 1, "op_schema": "x", "inputs": [{t}], "input_types": ["Tensor(float)"], "outputs": [], "output_types": []}}]}}"#
        )
    };
    let e = err(&node(r#"[1, 2, 0, -4, 4, "cuda:0"]"#));
    assert!(
        e.contains("nodes[0].inputs[0]") && e.contains("inconsistent sizes"),
        "{e}"
    );
    let e = err(&node(r#"[1, 2, 0, 4, 99, "cuda:0"]"#));
    assert!(e.contains("itemsize"), "{e}");
    let e = err(&node(r#"[1, 2, 0]"#));
    assert!(e.contains("nodes[0].inputs[0]"), "{e}");
    assert!(err("{\"schema\": ").contains("malformed JSON"));
    // A truncated gzip stream.
    let raw = std::fs::read(data("param_linear_et.json.gz")).unwrap();
    match et::gunzip("cut.json.gz", raw[..raw.len() / 2].to_vec()) {
        Err(EtError::Gzip { .. }) => {}
        other => panic!("{:?}", other.map(|v| v.len())),
    }
}

#[test]
fn cli_exit_codes() {
    let bin = env!("CARGO_BIN_EXE_offcert");
    let dir = std::env::temp_dir().join(format!("offcert-et-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let raw = std::fs::read(data("param_linear_et.json.gz")).unwrap();
    let cut = dir.join("cut.json.gz");
    std::fs::write(&cut, &raw[..raw.len() / 2]).unwrap();
    let out = Command::new(bin)
        .args(["import", "et"])
        .arg(&cut)
        .arg("-o")
        .arg(dir.join("x.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("truncated gzip"));
    let inst = dir.join("linear.json");
    let out = Command::new(bin)
        .args(["import", "et"])
        .arg(data("param_linear_et.json.gz"))
        .arg("--kineto")
        .arg(data("param_linear_kineto.json.gz"))
        .arg("-o")
        .arg(&inst)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("linked 320 of 320"));
    let out = Command::new(bin)
        .arg("gap")
        .arg(&inst)
        .args(["--memory", "min:peak:2", "--quiet"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("window")
            && text.contains("lower bound (certified)")
            && text.contains("valid"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
