//! `offmate`: the family's compilation, its fixtures (each asserting the exact
//! violations), the post-processing and realiser (every realised schedule goes
//! through the checker; a rejection is reported with its reason, and on random
//! instances and plans it can only be a capacity breach), and the bundled
//! Llama2-7B instances.

use crate::common;

use common::offmate_gen::{offmate_instance, offmate_plan, Draw};
use common::*;
use offcert::check::{check, CheckOutcome, Report, Violation};
use offcert::family::offmate::Offmate;
use offcert::family::InstanceFile;
use offcert::heuristic::offmate::{self as om, Baseline, PlanSource, Update};
use offcert::heuristic::HeuristicError;
use offcert::model::{ComputeOrder, Device, Instance};
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};

fn fixture(schedule: &str) -> (Instance, Report) {
    let dir = repo().join("instances/fixtures");
    let (inst, s) = load(&dir.join("offmate2.json"), &dir.join(schedule));
    let r = match check(&inst, &s) {
        CheckOutcome::Valid(c) => c.report().clone(),
        CheckOutcome::Invalid(r) => r.report().clone(),
    };
    (inst, r)
}

fn kinds(r: &Report) -> Vec<String> {
    let mut k: Vec<String> = r.violations.iter().map(|v| v.kind()).collect();
    k.sort();
    k.dedup();
    k
}

#[test]
fn compiles_to_groups_slots_and_cpu_ops() {
    let (_, inst) =
        offcert::io::load_instance(&repo().join("instances/fixtures/offmate2.json")).unwrap();
    let names: Vec<&str> = inst.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["fwd1", "fwd2", "bwd1", "bwd2", "upd.w1", "upd.w2"]);
    let ComputeOrder::Slots(slots) = &inst.order else {
        panic!("slots expected")
    };
    let order: Vec<&str> = slots.iter().map(|g| names[g.ix()]).collect();
    assert_eq!(order, ["fwd1", "fwd2", "bwd2", "upd.w2", "bwd1", "upd.w1"]);
    let opt_c = inst.op(inst.op_by_name("optC.w2").unwrap());
    assert_eq!(opt_c.device, Device::Cpu);
    assert_eq!(opt_c.duration.0, 4);
    assert_eq!(inst.op(inst.op_by_name("optG.w2").unwrap()).duration.0, 1);
    assert_eq!(inst.tensor(tensor(&inst, "m.w1")).size.0, 8);
    assert_eq!(inst.machine.cpu_capacity.map(|b| b.0), Some(100));
}

#[test]
fn valid_fixture_is_certified() {
    let (_, r) = fixture("offmate2.valid.schedule.json");
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.makespan.0, 15);
    assert!(r.peak_cpu_memory.0 > 0);
}

#[test]
fn weight_deleted_while_its_block_runs() {
    let (inst, r) = fixture("offmate2.deleted-in-use.invalid.schedule.json");
    let w2 = tensor(&inst, "w2");
    assert_eq!(r.violations.len(), 1, "{:?}", r.violations);
    assert!(matches!(&r.violations[0],
        Violation::ReleasedWhileInUse { tensor, .. } if *tensor == w2));
}

#[test]
fn cpu_updated_weight_prefetched_before_the_cpu_step_ends() {
    let (inst, r) = fixture("offmate2.early-prefetch.invalid.schedule.json");
    let w2 = tensor(&inst, "w2");
    assert!(
        r.violations
            .iter()
            .any(|v| matches!(v, Violation::InputStale { tensor, .. } if *tensor == w2)),
        "{:?}",
        r.violations
    );
    assert_eq!(
        kinds(&r),
        ["input_stale", "state_mismatch"],
        "{:?}",
        r.violations
    );
}

#[test]
fn both_adam_steps_of_one_parameter() {
    let (inst, r) = fixture("offmate2.double-update.invalid.schedule.json");
    assert_eq!(r.violations.len(), 1, "{:?}", r.violations);
    let upd = inst.groups.iter().position(|g| g.name == "upd.w2").unwrap();
    assert!(
        matches!(&r.violations[0], Violation::GroupRanTwice { group, .. } if group.ix() == upd),
        "{:?}",
        r.violations
    );
}

#[test]
fn gpu_updated_weight_deleted_without_offload() {
    let (inst, r) = fixture("offmate2.lost-update.invalid.schedule.json");
    let w1 = tensor(&inst, "w1");
    assert!(
        r.violations
            .iter()
            .any(|v| matches!(v, Violation::DataLoss { tensor, .. } if *tensor == w1)),
        "{:?}",
        r.violations
    );
    assert_eq!(
        kinds(&r),
        ["data_loss", "input_stale", "state_mismatch"],
        "{:?}",
        r.violations
    );
}

fn compiled(off: &Offmate) -> Instance {
    InstanceFile::Offmate(off.clone()).compile().unwrap()
}

static VALID: AtomicUsize = AtomicUsize::new(0);
static REFUTED: AtomicUsize = AtomicUsize::new(0);
static CPU_UPDATES: AtomicUsize = AtomicUsize::new(0);
static MOVED: AtomicUsize = AtomicUsize::new(0);

/// Every realised schedule goes through the checker; on random instances and
/// random plans the only reasons it may refute one are the capacities (the
/// realiser obeys every other rule by construction), and a refutation carries
/// the checker's reason.
#[test]
fn realised_schedules_break_no_rule_but_capacity() {
    fn prop(bytes: Vec<u8>, tight: bool) -> TestResult {
        let mut d = Draw::new(&bytes);
        let off = offmate_instance(&mut d, tight);
        let inst = compiled(&off);
        let plan = offmate_plan(&mut d, &off);
        let run = om::run_plan(&off, &inst, &plan, PlanSource::Baseline(Baseline::AllGpu)).unwrap();
        if run
            .rounded
            .params
            .iter()
            .any(|p| matches!(p.update, Update::Cpu(_)))
        {
            CPU_UPDATES.fetch_add(1, Ordering::Relaxed);
        }
        if run
            .rounded
            .params
            .iter()
            .any(|p| p.resident.iter().any(|r| !r))
        {
            MOVED.fetch_add(1, Ordering::Relaxed);
        }
        match &run.outcome {
            CheckOutcome::Valid(c) => {
                VALID.fetch_add(1, Ordering::Relaxed);
                assert!(run.step_sum <= c.report().makespan);
                at_most_the_period(&off, &inst, c.report().makespan.0);
            }
            CheckOutcome::Invalid(r) => {
                REFUTED.fetch_add(1, Ordering::Relaxed);
                for v in &r.report().violations {
                    assert!(
                        matches!(
                            v,
                            Violation::MemoryExceeded { .. } | Violation::CpuMemoryExceeded { .. }
                        ),
                        "{}: {off:?} {plan:?}",
                        v.describe(&inst)
                    );
                }
                assert!(!offcert::report::offmate::row(&inst, &run).label.is_empty());
            }
        }
        TestResult::passed()
    }
    qc(300, 200).quickcheck(prop as fn(Vec<u8>, bool) -> TestResult);
    for (what, n) in [
        ("valid", &VALID),
        ("refuted", &REFUTED),
        ("cpu updates", &CPU_UPDATES),
        ("moved", &MOVED),
        ("bounds tested", &BOUNDS_TESTED),
    ] {
        assert!(n.load(Ordering::Relaxed) >= 10, "{what}: {n:?}");
    }
}

static BOUNDS_TESTED: AtomicUsize = AtomicUsize::new(0);

/// Every certified bound registered for the family (offmate-compute,
/// offmate-volume, and the busiest-device compute) is at most a checked period.
fn at_most_the_period(off: &Offmate, inst: &Instance, period: i64) {
    let file = InstanceFile::Offmate(off.clone());
    let mut seen = 0;
    for (name, b) in offcert::bound::evaluate(&file, inst) {
        let Ok(b) = b else { continue };
        if b.strength == offcert::bound::Strength::Certified {
            assert!(
                b.ceil_ticks() <= period,
                "{name} = {} above the checked period {period} on {off:?}",
                b.value
            );
            seen += 1;
        }
    }
    assert!(inst.busiest_device_compute().0 <= period);
    if seen >= 2 {
        BOUNDS_TESTED.fetch_add(1, Ordering::Relaxed);
    }
}

/// With room for everything, every baseline plan is certified.
#[test]
fn baselines_are_certified_with_room() {
    fn prop(bytes: Vec<u8>) -> TestResult {
        let mut d = Draw::new(&bytes);
        let off = offmate_instance(&mut d, false);
        let inst = compiled(&off);
        for b in Baseline::all() {
            let plan = om::baseline_plan(&off, b);
            let run = om::run_plan(&off, &inst, &plan, PlanSource::Baseline(b)).unwrap();
            if let CheckOutcome::Valid(c) = &run.outcome {
                at_most_the_period(&off, &inst, c.report().makespan.0);
            }
            if let CheckOutcome::Invalid(r) = &run.outcome {
                panic!(
                    "{}: {:?} on {off:?}",
                    b.name(),
                    r.report()
                        .violations
                        .iter()
                        .map(|v| v.describe(&inst))
                        .collect::<Vec<_>>()
                );
            }
        }
        TestResult::passed()
    }
    qc(100, 60).quickcheck(prop as fn(Vec<u8>) -> TestResult);
}

#[test]
fn llama_instances_have_the_exact_parameter_count() {
    for m in ["rtx3060", "rtx3090"] {
        let path = repo().join(format!("instances/paper/offmate/llama2-7b-{m}.json"));
        let (f, inst) = offcert::io::load_instance(&path).unwrap();
        let off = f.offmate().unwrap();
        let params: u64 = off.params.iter().map(|p| p.bytes.0).sum();
        assert_eq!(params, 4 * 6_738_415_616);
        assert_eq!(off.l(), 34);
        // fwd, bwd, upd.p per parameter, and one step marker per step (H > 0)
        assert_eq!(inst.groups.len(), 2 * 34 + off.params.len() + 68);
    }
}

/// H: the realised schedule runs `mgmt{t}` inside step t; a step that starts
/// before the previous step's management ends breaks R13 with the exact
/// predecessor.
#[test]
fn management_time_is_a_precedence() {
    let (f, _) =
        offcert::io::load_instance(&repo().join("instances/fixtures/offmate2.json")).unwrap();
    let mut off = f.offmate().unwrap().clone();
    off.cpu_management = offcert::units::Ticks(3);
    let inst = compiled(&off);
    let plan = om::baseline_plan(&off, Baseline::AllGpu);
    let run = om::run_plan(&off, &inst, &plan, PlanSource::Baseline(Baseline::AllGpu)).unwrap();
    let CheckOutcome::Valid(c) = &run.outcome else {
        panic!("{:?}", run.outcome)
    };
    // Steps F1 2 → 3 (H), F2 2 → 3, B2 4 + optG 1 = 5, B1 4 + optG 1 = 5.
    assert_eq!(c.report().makespan.0, 16);
    // mgmt1 [3,6) → [4,7) and mgmt2 [6,9) → [7,10): step2's marker at 6 now
    // starts before mgmt1 ends.
    let mut s = c.schedule().clone();
    let late: Vec<_> = ["mgmt1", "mgmt2"]
        .iter()
        .map(|n| inst.op_by_name(n).unwrap())
        .collect();
    for e in s.events.iter_mut() {
        if let offcert::schedule::Event::Compute { op, start, end } = e {
            if late.contains(op) {
                *start = offcert::units::Ticks(start.0 + 1);
                *end = offcert::units::Ticks(end.0 + 1);
            }
        }
    }
    let CheckOutcome::Invalid(r) = check(&inst, &s) else {
        panic!("a late mgmt1 must be refuted")
    };
    let step2 = inst.op_by_name("step2").unwrap();
    assert_eq!(
        r.report().violations.len(),
        1,
        "{:?}",
        r.report().violations
    );
    assert!(
        matches!(&r.report().violations[0],
            Violation::StartedBeforePredecessor { op, after, .. } if *op == step2 && *after == late[0]),
        "{:?}",
        r.report().violations
    );
}

/// Bad input names the field (exit 2 in the CLI): an unknown parameter of a
/// block, a block without options.
#[test]
fn bad_offmate_files_name_the_field() {
    let base = r#"{"family":"offmate","name":"x","input":1,"blocks":[{"name":"b","out":1,
        "params":PARAMS,"options":OPTIONS}],"params":[{"name":"w","bytes":4}],
        "optimizer":{"states":2,"gpu_speed":1,"cpu_speed":1},"gpu_memory":10,
        "cpu_memory":10,"bandwidth":1}"#;
    let opt = r#"[{"t_fwd":1,"t_bwd":1,"saved":0,"offloaded":0}]"#;
    for (params, options, field) in [
        (r#"["nope"]"#, opt, "blocks[0].params[0]"),
        (r#"["w"]"#, "[]", "blocks[0].options"),
    ] {
        let text = base.replace("PARAMS", params).replace("OPTIONS", options);
        let err = offcert::io::parse_instance("bad.json", &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains(field), "{err}");
    }
    let ok = base.replace("PARAMS", r#"["w"]"#).replace("OPTIONS", opt);
    assert!(offcert::io::parse_instance("ok.json", &ok).is_ok());
}

/// The counterexample of proofs/OFFMATE-ILP.md §2.3 (19a).
fn eq19a() -> (Offmate, Instance) {
    let path = repo().join("instances/offmate/counterexamples/eq19a-states.json");
    let (f, inst) = offcert::io::load_instance(&path).unwrap();
    (f.offmate().unwrap().clone(), inst)
}

/// Regression (issue 24): on eq19a the forwards last 0 ticks, so the steps F1
/// and F2 have length 0; the offload baselines deleted w at the end of F1,
/// which is the instant F1 starts, and deletes come first at an instant
/// ("F1.0 needs w on the GPU, which is not there"). With room for everything
/// every baseline is now certified, and at the file's 400 B the checker can
/// refute them for memory only.
#[test]
fn eq19a_baselines_keep_the_weight_through_a_zero_length_step() {
    let (mut off, _) = eq19a();
    for roomy in [true, false] {
        if roomy {
            off.gpu_memory = offcert::units::Bytes(1_000_000);
        } else {
            off.gpu_memory = eq19a().0.gpu_memory;
        }
        let inst = compiled(&off);
        for b in Baseline::all() {
            let run = om::run_plan(
                &off,
                &inst,
                &om::baseline_plan(&off, b),
                PlanSource::Baseline(b),
            )
            .unwrap();
            match &run.outcome {
                CheckOutcome::Valid(_) => {}
                CheckOutcome::Invalid(r) => {
                    let why: Vec<String> =
                        r.violations().iter().map(|v| v.describe(&inst)).collect();
                    assert!(!roomy, "{} with room: {why:?}", b.name());
                    assert!(
                        r.violations().iter().all(|v| matches!(
                            v,
                            Violation::MemoryExceeded { .. } | Violation::CpuMemoryExceeded { .. }
                        )),
                        "{}: {why:?}",
                        b.name()
                    );
                }
            }
        }
    }
}

/// A baseline whose plan does not fit says `no schedule` with the checker's
/// reason (issue 24: `offmate-all-gpu` returned a schedule needing 600 B on a
/// 400 B GPU here, 80.9 GB on 23.6 GB on Llama2-7B).
#[test]
fn baseline_that_does_not_fit_says_no_schedule() {
    let (off, inst) = eq19a();
    let file = InstanceFile::Offmate(off);
    let h = offcert::heuristic::all()
        .into_iter()
        .find(|h| h.name() == "offmate-all-gpu")
        .unwrap();
    match offcert::heuristic::run(h.as_ref(), &file, &inst) {
        Err(HeuristicError::NoSchedule { reason, .. }) => {
            assert!(
                reason.contains("GPU memory 600 B > capacity 400 B"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
}

static FIT: AtomicUsize = AtomicUsize::new(0);
static NO_FIT: AtomicUsize = AtomicUsize::new(0);

/// Every OFFMATE heuristic's schedule on random small instances (tight or
/// roomy; with `instant`, the forwards of some blocks last 0 ticks) passes the
/// checker, or the heuristic says `no schedule`; never `invalid`.
#[test]
fn offmate_heuristics_are_valid_or_say_no_schedule() {
    fn prop(bytes: Vec<u8>, tight: bool, instant: u8) -> TestResult {
        let mut d = Draw::new(&bytes);
        let mut off = offmate_instance(&mut d, tight);
        for (b, blk) in off.blocks.iter_mut().enumerate() {
            if instant >> (b % 8) & 1 == 1 {
                for o in &mut blk.options {
                    o.t_fwd = offcert::units::Ticks(0);
                }
            }
        }
        let inst = compiled(&off);
        let file = InstanceFile::Offmate(off.clone());
        for h in om::heuristics() {
            match offcert::heuristic::run(h.as_ref(), &file, &inst) {
                Ok(r) => {
                    assert!(r.checked.report().valid);
                    FIT.fetch_add(1, Ordering::Relaxed);
                }
                Err(HeuristicError::NoSchedule { reason, .. }) => {
                    // Algorithm 1 may also find its ILP infeasible (the ILP's
                    // own memory rows, eq. (17)).
                    assert!(
                        reason.contains("memory")
                            || reason.contains("infeasible (solver-reported)"),
                        "{}: {reason}",
                        h.name()
                    );
                    NO_FIT.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => panic!("{}: {e} on {off:?}", h.name()),
            }
        }
        TestResult::passed()
    }
    qc(200, 150).quickcheck(prop as fn(Vec<u8>, bool, u8) -> TestResult);
    for (what, n) in [("valid", &FIT), ("no schedule", &NO_FIT)] {
        assert!(n.load(Ordering::Relaxed) >= 10, "{what}: {n:?}");
    }
}

/// `offcert gap` exits 0 on every bundled OFFMATE counterexample: each row
/// has a checked schedule or a stated reason, never an invalid one.
#[test]
fn gap_exits_0_on_the_small_offmate_instances() {
    let dir = repo().join("instances/offmate/counterexamples");
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_offcert"))
            .arg("gap")
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}{}",
            path.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        seen += 1;
    }
    assert!(seen >= 9, "{seen}");
}
