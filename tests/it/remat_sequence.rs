//! Checking the sequences that rotor and rockmate compute (issue 23 item 6):
//! `offcert import rotor-sequence` (alias `rockmate-sequence`).
//!
//! - Round trip: on random chains (several options per block included), the
//!   sequence offcert's rotor DP builds, written in rotor's notation (or as
//!   the rockmate JSON with options) and read back, is the same plan (ops and
//!   releases) and its back-to-back schedule is valid with the DP's makespan.
//! - rotor as printed (`tests/data/rotor_sequences/`, `proofs/ROTOR-AS-PRINTED.md`):
//!   a sequence that rotor's own DP accepts at 18 B, which offcert refutes
//!   (19 B at `Fe_0`: rotor counts δ_{i+1} where δ_j is held), and a
//!   sequence it accepts that is valid.
//! - The exporter's JSON (`scripts/export_rockmate_sequence.py`), with options.
//! - Bad input: exit 2 with the file and the op named.

use crate::common;

use common::*;
use offcert::check::check;
use offcert::family::remat_chain::RematChain;
use offcert::family::remat_sequence::{parse_sequence, rotor_notation, ChainOp};
use offcert::family::InstanceFile;
use offcert::heuristic::remat::rotor::Table;
use offcert::model::OpId;
use offcert::simulate::chain_sequence::{back_to_back, plan_of};
use offcert::simulate::SeqPlan;
use quickcheck::TestResult;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The ops of a DP plan in the tools' terms: `F{ℓ}` with a release of its
/// input at the same position is `Fn`, without it `CF`; `Fall{L+1}` and
/// `B{L+1}` together are the loss.
fn chain_ops_of(c: &RematChain, plan: &SeqPlan) -> Vec<ChainOp> {
    let ids = c.option_ids();
    let find = |o: OpId| -> ChainOp {
        for (i, opts) in ids.iter().enumerate() {
            for (k, &(fall, b, _)) in opts.iter().enumerate() {
                if o == fall {
                    return ChainOp::ForwardAll {
                        layer: i + 1,
                        option: k,
                    };
                }
                if o == b {
                    return ChainOp::Backward {
                        layer: i + 1,
                        option: k,
                    };
                }
            }
        }
        panic!("op {o:?} is no forward-all or backward of a block")
    };
    let mut out = vec![];
    let mut p = 0;
    while p < plan.seq.len() {
        let o = plan.seq[p];
        let l = (1..=c.l()).find(|&l| c.f_id(l) == o);
        if let Some(l) = l {
            let drops = plan.deletes_after.contains(&(p, c.a_id(l - 1)));
            out.push(if drops {
                ChainOp::ForwardNograd { layer: l }
            } else {
                ChainOp::ForwardCheck { layer: l }
            });
        } else if o == c.fall_id(c.l() + 1) {
            assert_eq!(plan.seq.get(p + 1), Some(&c.b_id(c.l() + 1)));
            out.push(ChainOp::Loss);
            p += 1;
        } else {
            out.push(find(o));
        }
        p += 1;
    }
    out
}

/// The rockmate exporter's JSON form of `ops` (options written out).
fn rockmate_json(ops: &[ChainOp]) -> String {
    let v: Vec<serde_json::Value> = ops
        .iter()
        .map(|op| match *op {
            ChainOp::ForwardAll { layer, option } => {
                serde_json::json!({"op": "Fe", "index": layer - 1, "option": option})
            }
            ChainOp::ForwardCheck { layer } => serde_json::json!({"op": "Fc", "index": layer - 1}),
            ChainOp::ForwardNograd { layer } => serde_json::json!({"op": "Fn", "index": layer - 1}),
            ChainOp::Loss => serde_json::json!({"op": "Loss"}),
            ChainOp::Backward { layer, option } => {
                serde_json::json!({"op": "Bwd", "index": layer - 1, "option": option})
            }
        })
        .collect();
    serde_json::json!({ "ops": v }).to_string()
}

fn sorted(mut p: SeqPlan) -> SeqPlan {
    p.deletes_after.sort();
    p
}

static WITH_OPTIONS: AtomicUsize = AtomicUsize::new(0);
static RECOMPUTING: AtomicUsize = AtomicUsize::new(0);

type Layers = Vec<(u8, u8, u8, u8, u8, u8)>;
type Extra = Vec<(u8, u8, u8, u8)>;

fn round_trip(spec: Layers, extra: Extra, bw: u8, slack: u8) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let c = remat_options_chain(&spec, &extra, bw, slack);
    let json = serde_json::to_string(&c).unwrap();
    let inst = InstanceFile::RematChain(c.clone()).compile().unwrap();
    let t = Table::build(&c, 500);
    let Some(dp) = t.sequence(&c) else {
        return TestResult::discard();
    };
    let ops = chain_ops_of(&c, &dp.plan);
    let several = c.layers.iter().any(|l| !l.options.is_empty());
    // With options the notation cannot carry them: the JSON form does.
    let text = if several {
        rockmate_json(&ops)
    } else {
        rotor_notation(&ops)
    };
    let read = match parse_sequence(&text, &c) {
        Ok(r) => r,
        Err(e) => return TestResult::error(format!("{json}: {text}: {e}")),
    };
    if read != ops {
        return TestResult::error(format!("{json}: read {read:?} != {ops:?}"));
    }
    let plan = plan_of(&c, &inst, &read);
    if sorted(plan.clone()) != sorted(dp.plan.clone()) {
        return TestResult::error(format!(
            "{json}: {text}: plan {plan:?} != DP's {:?}",
            dp.plan
        ));
    }
    let report = check(&inst, &back_to_back(&inst, &plan));
    if !report.valid {
        return TestResult::error(format!("{json}: {text}: {:?}", report.violations));
    }
    let positive = inst.ops.iter().all(|o| o.duration.0 > 0);
    if positive && Some(report.makespan.0) != t.value() {
        return TestResult::error(format!(
            "{json}: makespan {} != DP {:?}",
            report.makespan.0,
            t.value()
        ));
    }
    if several {
        WITH_OPTIONS.fetch_add(1, Ordering::Relaxed);
    }
    if ops
        .iter()
        .any(|o| matches!(o, ChainOp::ForwardNograd { .. }))
    {
        RECOMPUTING.fetch_add(1, Ordering::Relaxed);
    }
    TestResult::passed()
}

#[test]
fn rotor_sequences_read_back_as_the_dp_plan_and_run_valid() {
    qc(300, 150)
        .max_tests(cases(6_000))
        .quickcheck(round_trip as fn(Layers, Extra, u8, u8) -> TestResult);
    // Not vacuous: options and recomputation both occur.
    assert!(
        WITH_OPTIONS.load(Ordering::Relaxed) >= 10,
        "{WITH_OPTIONS:?}"
    );
    assert!(RECOMPUTING.load(Ordering::Relaxed) >= 10, "{RECOMPUTING:?}");
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/rotor_sequences")
        .join(name)
}

/// A fresh directory of this test process.
fn scratch() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("offcert-rotor-seq-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn offcert(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_offcert"))
        .args(args)
        .output()
        .expect("runs offcert")
}

/// `import rotor CHAIN --gpu-memory M`, then `import rotor-sequence SEQ`.
fn import_and_check(chain: &str, memory: &str, seq: &Path) -> Output {
    let dir = scratch();
    let inst = dir.join("chain.json");
    let out = offcert(&[
        "import",
        "rotor",
        data(chain).to_str().unwrap(),
        "-o",
        inst.to_str().unwrap(),
        "--gpu-memory",
        memory,
        "--tick-us",
        "1000",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sched = dir.join("s.json");
    let out = offcert(&[
        "import",
        "rotor-sequence",
        seq.to_str().unwrap(),
        "--chain",
        inst.to_str().unwrap(),
        "-o",
        sched.to_str().unwrap(),
    ]);
    if out.status.code() != Some(2) {
        // The schedule is written either way, and `check` agrees.
        let again = offcert(&["check", inst.to_str().unwrap(), sched.to_str().unwrap()]);
        assert_eq!(again.status.code(), out.status.code());
    }
    out
}

#[test]
fn a_sequence_rotor_accepts_can_need_more_memory_than_it_was_given() {
    let out = import_and_check("delta.chain.txt", "18", &data("delta.rotor-18.txt"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("verdict: INVALID"), "{text}");
    assert!(
        text.contains("[memory:memory_exceeded] at 9: GPU memory 19 B > capacity 18 B")
            && text.contains("d2 (4 B)")
            && text.contains("s1 (3 B)"),
        "{text}"
    );
    // One byte more and rotor's sequence fits.
    let out = import_and_check("delta.chain.txt", "19", &data("delta.rotor-18.txt"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_sequence_rotor_computes_where_its_model_holds_is_valid() {
    let out = import_and_check("delta.chain.txt", "30", &data("delta.rotor-30.txt"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("verdict: valid"), "{text}");
}

#[test]
fn the_rockmate_export_with_options_is_read() {
    let dir = scratch();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sched = dir.join("s.json");
    let out = offcert(&[
        "import",
        "rockmate-sequence",
        data("remat2x2.rockmate.json").to_str().unwrap(),
        "--chain",
        root.join("tests/data/rotor_sequences/remat2x2.json")
            .to_str()
            .unwrap(),
        "-o",
        sched.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let s = std::fs::read_to_string(&sched).unwrap();
    assert!(s.contains("Fall2.1") && s.contains("B2.1"), "{s}");
}

#[test]
fn bad_sequences_exit_2_naming_the_file_and_the_op() {
    let dir = scratch();
    for (text, want) in [
        ("[CF_0, Fn_1, Fx_2, L]", "ops[2]: `Fx_2`: unknown op"),
        ("[Fe_0, Fe_7, L]", "ops[1]: `Fe_7`: index 7 is outside"),
        ("[F_0->2, L]", "ops[0]"),
        (
            "{\"ops\": [{\"op\": \"Fe\", \"index\": 0, \"option\": 3}]}",
            "option 3",
        ),
        ("[]", "ops: the sequence has no op"),
        ("{\"ops\": [1]}", "ops[0]"),
    ] {
        let seq = dir.join("bad.txt");
        std::fs::write(&seq, text).unwrap();
        let out = import_and_check("delta.chain.txt", "30", &seq);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(
            err.contains("bad.txt") && err.contains(want),
            "{text}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// The exporter's own output (`--selftest`, stand-in classes of rockmate's
/// `SeqBlock*` ops) is what the importer reads. Needs `python3`; without it the
/// JSON side is still covered by `remat2x2.rockmate.json` above.
#[test]
fn the_exporters_selftest_output_is_imported() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Ok(py) = Command::new("python3")
        .arg(root.join("scripts/export_rockmate_sequence.py"))
        .arg("--selftest")
        .output()
    else {
        eprintln!("python3 not found: exporter self-test skipped");
        return;
    };
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    let dir = scratch();
    let seq = dir.join("exported.json");
    std::fs::write(&seq, &py.stdout).unwrap();
    let sched = dir.join("s.json");
    let out = offcert(&[
        "import",
        "rockmate-sequence",
        seq.to_str().unwrap(),
        "--chain",
        data("remat2x2.json").to_str().unwrap(),
        "--gpu-memory",
        "12",
        "-o",
        sched.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = std::fs::read_to_string(&sched).unwrap();
    assert!(s.contains("\"Fall1.1\"") && s.contains("\"B1.1\""), "{s}");
}
