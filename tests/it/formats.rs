//! The file formats of `docs/FORMATS.md`: every example JSON block of that page
//! loads (instances compile, schedules are `valid` against the instance block
//! above them), and the format version (`"format"`) reads as documented: a
//! missing version is today's, the current one is accepted, any other is bad
//! input naming the file and the field, and every file offcert writes carries it.

use offcert::check::{check, CheckOutcome};
use offcert::family::INSTANCE_FORMAT;
use offcert::io::{parse_instance, parse_schedule};
use offcert::schedule::ScheduleFormat;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One ```json block of a Markdown text.
struct Block {
    /// Line number of its first JSON line.
    line: usize,
    text: String,
    /// `NAME` of the last `<!-- schedule for: NAME -->` since the block before.
    schedule_for: Option<String>,
}

/// The ```json blocks of a Markdown text, in order.
fn json_blocks(md: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut cur: Option<Block> = None;
    let mut marker = None;
    for (n, line) in md.lines().enumerate() {
        let t = line.trim();
        match &mut cur {
            None if t == "```json" => {
                cur = Some(Block {
                    line: n + 2,
                    text: String::new(),
                    schedule_for: marker.take(),
                })
            }
            None => {
                if let Some(name) = t
                    .strip_prefix("<!-- schedule for:")
                    .and_then(|r| r.strip_suffix("-->"))
                {
                    marker = Some(name.trim().to_string());
                }
            }
            Some(_) if t == "```" => out.push(cur.take().unwrap()),
            Some(b) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
        }
    }
    assert!(cur.is_none(), "unterminated ```json block");
    out
}

#[test]
fn every_example_of_formats_md_loads_and_its_schedules_are_valid() {
    let md = std::fs::read_to_string(root().join("docs/FORMATS.md")).unwrap();
    let blocks = json_blocks(&md);
    let mut families = Vec::new();
    let mut instances = std::collections::HashMap::new();
    let mut schedules = 0;
    for b in &blocks {
        let name = format!("docs/FORMATS.md:{}", b.line);
        let v: serde_json::Value =
            serde_json::from_str(&b.text).unwrap_or_else(|e| panic!("{name}: {e}"));
        if v.get("family").is_some() {
            assert!(
                b.schedule_for.is_none(),
                "{name}: an instance marked as a schedule"
            );
            let (f, inst) = parse_instance(&name, &b.text).unwrap_or_else(|e| panic!("{e}"));
            families.push(f.family());
            instances.insert(inst.name.clone(), inst);
        } else {
            let for_ = b.schedule_for.as_ref().unwrap_or_else(|| {
                panic!("{name}: a schedule needs `<!-- schedule for: INSTANCE -->` above it")
            });
            let inst = instances
                .get(for_)
                .unwrap_or_else(|| panic!("{name}: no instance example named `{for_}` above"));
            let s = parse_schedule(&name, &b.text, inst).unwrap_or_else(|e| panic!("{e}"));
            match check(inst, &s) {
                CheckOutcome::Valid(_) => schedules += 1,
                o => panic!(
                    "{name}: not valid against `{for_}`: {:?}",
                    o.report().violations
                ),
            }
        }
    }
    families.sort();
    assert_eq!(
        families,
        [
            "activation_chain",
            "core",
            "graph",
            "offmate",
            "op_sequence",
            "remat_chain",
            "weight_chain"
        ],
        "one example per family"
    );
    assert!(schedules >= 3, "{schedules} schedule examples");
}

/// The defaults the page states for an offload: `delete` defaults to true,
/// and `"delete": false` plus a `delete` event at the offload's end is the same.
#[test]
fn formats_md_offload_default_deletes_the_gpu_copy() {
    let md = std::fs::read_to_string(root().join("docs/FORMATS.md")).unwrap();
    assert!(md.contains("**`delete`: `true`**"));
    let (_, inst) = parse_instance("i", &std::fs::read_to_string(chain3()).unwrap()).unwrap();
    let with = r#"{"events": [{"type": "offload", "tensor": "x0", "start": 0, "end": 2}]}"#;
    let without = with.replace("\"end\": 2", "\"end\": 2, \"delete\": false");
    let a = parse_schedule("a", with, &inst).unwrap();
    let b = parse_schedule("b", &without, &inst).unwrap();
    use offcert::schedule::Event;
    assert!(matches!(a.events[0], Event::Transfer { delete: true, .. }));
    assert!(matches!(b.events[0], Event::Transfer { delete: false, .. }));
}

fn chain3() -> PathBuf {
    root().join("instances/examples/chain3.json")
}

fn offcert(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_offcert"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("offcert-formats-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `text` with `"format": value` added as its first field.
fn with_format(text: &str, value: &str) -> String {
    let i = text.find('{').unwrap() + 1;
    format!("{}\n  \"format\": {value},{}", &text[..i], &text[i..])
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_missing_or_current_version_reads_the_same() {
    let d = tmp("same");
    let inst = std::fs::read_to_string(chain3()).unwrap();
    let sched =
        std::fs::read_to_string(root().join("instances/examples/chain3.offload-x0.schedule.json"))
            .unwrap();
    assert!(!inst.contains("\"format\"") && !sched.contains("\"format\""));
    let (i0, s0) = (d.join("i0.json"), d.join("s0.json"));
    let (i1, s1) = (d.join("i1.json"), d.join("s1.json"));
    std::fs::write(&i0, &inst).unwrap();
    std::fs::write(&s0, &sched).unwrap();
    std::fs::write(&i1, with_format(&inst, &format!("\"{INSTANCE_FORMAT}\""))).unwrap();
    std::fs::write(
        &s1,
        with_format(&sched, &format!("\"{}\"", ScheduleFormat::CURRENT.as_str())),
    )
    .unwrap();
    let a = offcert(&["check", s(&i0), s(&s0), "--json"]);
    let b = offcert(&["check", s(&i1), s(&s1), "--json"]);
    assert_eq!(
        a.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&a.stderr)
    );
    assert_eq!(
        b.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&b.stderr)
    );
    // Same verdict, same canonical digests: the version is not part of the
    // content. Only the file names and the files' own hashes differ.
    let strip = |o: &Output| {
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let m = v.as_object_mut().unwrap();
        for k in [
            "instance_file",
            "schedule_file",
            "instance_file_sha256",
            "schedule_file_sha256",
        ] {
            assert!(m.remove(k).is_some(), "{k}");
        }
        v
    };
    let (va, vb) = (strip(&a), strip(&b));
    assert_eq!(va["verdict"], "valid");
    assert!(va["instance_sha256"].is_string() && va["schedule_sha256"].is_string());
    assert_eq!(va, vb);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_unknown_version_is_bad_input_naming_file_and_field() {
    let d = tmp("unknown");
    let inst = std::fs::read_to_string(chain3()).unwrap();
    let sched =
        std::fs::read_to_string(root().join("instances/examples/chain3.offload-x0.schedule.json"))
            .unwrap();
    let (i, sc) = (d.join("i.json"), d.join("s.json"));
    let (bad_i, bad_s) = (d.join("bad-i.json"), d.join("bad-s.json"));
    std::fs::write(&i, &inst).unwrap();
    std::fs::write(&sc, &sched).unwrap();
    for value in [
        "\"offcert-instance/2\"",
        "\"offcert-schedule/1\"",
        "1",
        "null",
    ] {
        std::fs::write(&bad_i, with_format(&inst, value)).unwrap();
        let o = offcert(&["check", s(&bad_i), s(&sc)]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "instance format {value}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.contains(s(&bad_i)) && err.contains("format"), "{err}");
    }
    for value in [
        "\"offcert-schedule/2\"",
        "\"offcert-instance/1\"",
        "1",
        "null",
    ] {
        std::fs::write(&bad_s, with_format(&sched, value)).unwrap();
        let o = offcert(&["check", s(&i), s(&bad_s)]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "schedule format {value}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.contains(s(&bad_s)) && err.contains("format"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

fn format_of(path: &Path) -> Option<String> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v.get("format").and_then(|f| f.as_str()).map(String::from)
}

#[test]
fn written_schedules_and_instances_carry_the_version() {
    let d = tmp("written");
    // A schedule: `heuristic --out`, and it checks.
    let out = d.join("dynprog.json");
    let o = offcert(&["heuristic", s(&chain3()), "-n", "dynprog", "--out", s(&out)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(format_of(&out).as_deref(), Some("offcert-schedule/1"));
    let o = offcert(&["check", s(&chain3()), s(&out)]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Instances: `sweep --out`, and they load.
    let dir = d.join("sweep");
    let o = offcert(&[
        "sweep",
        s(&chain3()),
        "--memory",
        "min:peak:2",
        "--out",
        s(&dir),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        assert_eq!(format_of(&p).as_deref(), Some(INSTANCE_FORMAT), "{p:?}");
        offcert::io::load_instance(&p).unwrap();
        n += 1;
    }
    assert_eq!(n, 2);
    let _ = std::fs::remove_dir_all(&d);
}

/// `instances/README.md` says what `instances/traces/` holds: every file there
/// is a trace mapping file, and the README names each one.
#[test]
fn instances_traces_holds_the_mapping_files_its_readme_names() {
    let readme = std::fs::read_to_string(root().join("instances/README.md")).unwrap();
    let mut n = 0;
    for e in std::fs::read_dir(root().join("instances/traces")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        offcert::trace::mapping::Mapping::load(&p)
            .unwrap_or_else(|e| panic!("{name} is not a mapping file: {e}"));
        assert!(
            readme.contains(&name),
            "instances/README.md does not name {name}"
        );
        n += 1;
    }
    assert!(n > 0);
}

/// The README stays short, its relative links resolve, and it keeps the two
/// commands exactly.
#[test]
fn readme_is_short_and_its_links_resolve() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(text.len() <= 12 * 1024, "README.md is {} bytes", text.len());
    for cmd in [
        "bash scripts/setup.sh && cargo run --release -- gap instances/paper/activation instances/examples --memory 0%:100%:6 --plot gap.svg",
        "bash scripts/test.sh",
    ] {
        assert!(text.contains(cmd), "README.md lost `{cmd}`");
    }
    for doc in [
        "README.md",
        "docs/FORMATS.md",
        "docs/RESULTS.md",
        "docs/PAPERS.md",
    ] {
        let md = std::fs::read_to_string(root().join(doc)).unwrap();
        let dir = root().join(doc).parent().unwrap().to_path_buf();
        for (i, _) in md.match_indices("](") {
            let rest = &md[i + 2..];
            let target = &rest[..rest.find(')').unwrap()];
            let target = target.split('#').next().unwrap();
            if target.is_empty() || target.contains("://") {
                continue;
            }
            assert!(dir.join(target).exists(), "{doc}: broken link {target}");
        }
    }
    for linked in [
        "docs/INSTALL.md",
        "docs/FORMATS.md",
        "docs/RESULTS.md",
        "docs/PAPERS.md",
        "ARCHITECTURE.md",
    ] {
        assert!(
            text.contains(&format!("]({linked})")),
            "README.md: no link to {linked}"
        );
    }
}

/// The README's `$ offcert ...` examples run as quoted: the exit code it states
/// (0 unless a line says `(exit code N)`), and every quoted line that states a
/// verdict, a status or a violation appears in the output. Run in a scratch
/// folder that sees the repository's `instances/` and `tests/`, so that the
/// files the examples write land there.
#[test]
fn readme_examples_run_as_quoted() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let dir = tmp("readme");
    for sub in ["instances", "tests"] {
        std::os::unix::fs::symlink(root().join(sub), dir.join(sub)).unwrap();
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    let mut ran = 0;
    while i < lines.len() {
        let Some(first) = lines[i].strip_prefix("$ offcert ") else {
            i += 1;
            continue;
        };
        let mut cmd = first.to_string();
        while cmd.ends_with('\\') {
            cmd.pop();
            i += 1;
            cmd.push(' ');
            cmd.push_str(lines[i].trim());
        }
        i += 1;
        let mut expected_code = 0;
        let mut expect = Vec::new();
        while i < lines.len() && !lines[i].starts_with("$ ") && !lines[i].starts_with("```") {
            let l = lines[i];
            let (l, code) = match l.find("(exit code ") {
                Some(k) => (&l[..k], l[k + 11..].trim_end_matches(')').parse().ok()),
                None => (l, None),
            };
            if let Some(c) = code {
                expected_code = c;
            }
            let l = l.trim();
            // Timings (`method: … 0.17 s`) differ from run to run; the rest of a
            // verdict line does not.
            let verdict = [
                "verdict",
                "status:",
                "violation",
                "optimal",
                "best schedule",
            ]
            .iter()
            .any(|w| l.contains(w))
                || l.starts_with('[');
            if verdict && !l.starts_with("method:") && !l.ends_with("...") {
                expect.push(l.to_string());
            }
            i += 1;
        }
        let out = Command::new(env!("CARGO_BIN_EXE_offcert"))
            .args(cmd.split_whitespace())
            .current_dir(&dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(expected_code),
            "`offcert {cmd}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for l in &expect {
            assert!(
                stdout.lines().any(|o| o.trim() == l),
                "`offcert {cmd}`: `{l}` not in\n{stdout}"
            );
        }
        ran += 1;
    }
    assert!(ran >= 6, "{ran} README examples");
    let _ = std::fs::remove_dir_all(&dir);
}
