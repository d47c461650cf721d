//! The MILP on the known-answer instances of `instances/tiny/` (optimum derived
//! by hand in each file's note), under both release rules (R10), and properties
//! of its plumbing: every schedule passes the checker, the refutation agrees
//! with the optimum, the written .lp model is well formed.

use offcert::check::check;
use offcert::exact::{self, milp, Limits, Method, Status};
use offcert::io::load_instance;
use offcert::model::ReleaseRule;
use offcert::units::Ticks;
use std::path::Path;

/// (file, optimum under `after_end` (the default), optimum under the
/// relaxation `after_start`; None for infeasible)
const KNOWN: &[(&str, Option<i64>, Option<i64>)] = &[
    ("act_fits", Some(6), Some(6)),
    ("act_one_offload", Some(7), Some(7)),
    ("act_chain3", Some(15), Some(15)),
    ("act_infeasible", None, None),
    ("act_3partition_m1", Some(14), Some(14)),
    ("weight_fits", Some(6), Some(6)),
    ("weight_discount", Some(15), Some(15)),
    ("weight_discount_lowers", Some(14), Some(13)),
    ("weight_infeasible", None, None),
];

/// Every known answer, with the rule it holds under.
fn known() -> impl Iterator<Item = (&'static str, ReleaseRule, Option<i64>)> {
    KNOWN.iter().flat_map(|&(name, end, start)| {
        [
            (name, ReleaseRule::AfterEnd, end),
            (name, ReleaseRule::AfterStart, start),
        ]
    })
}

fn load(name: &str) -> offcert::model::Instance {
    load_instance(Path::new(&format!("instances/tiny/{name}.json")))
        .unwrap()
        .1
}

fn load_with(name: &str, rule: ReleaseRule) -> offcert::model::Instance {
    let mut inst = load(name);
    inst.release = rule;
    inst
}

#[test]
fn milp_finds_every_known_optimum_and_the_checker_agrees() {
    for (name, rule, want) in known() {
        let inst = load_with(name, rule);
        let name = format!("{name} ({rule})");
        let o = exact::solve(Method::Milp, &inst, &Limits::default()).unwrap();
        match want {
            Some(t) => {
                assert_eq!(o.status, Status::Optimal, "{name}: {:?}", o.notes);
                let s = o.schedule.as_ref().expect("optimal comes with a schedule");
                let r = check(&inst, s);
                assert!(r.valid, "{name}: {:?}", r.violations);
                assert_eq!(r.makespan, Ticks(t), "{name}");
                assert_eq!(o.bound, Some(Ticks(t)), "{name}");
            }
            None => {
                assert_eq!(o.status, Status::Infeasible, "{name}: {:?}", o.notes);
                assert!(o.schedule.is_none());
                assert!(
                    o.notes.iter().any(|n| n.starts_with("infeasible")),
                    "{name}: evidence"
                );
            }
        }
    }
}

#[test]
fn milp_refutes_one_below_the_optimum_and_not_at_it() {
    for (name, rule, want) in known() {
        let Some(t) = want else { continue };
        let inst = load_with(name, rule);
        let name = format!("{name} ({rule})");
        let l = Limits::default();
        assert!(
            matches!(
                milp::refute(&inst, Ticks(t - 1), &l).unwrap(),
                milp::Refutation::Refuted
            ),
            "{name}: T*-1 must be refuted"
        );
        match milp::refute(&inst, Ticks(t), &l).unwrap() {
            milp::Refutation::Feasible(s) => {
                let r = check(&inst, s.schedule());
                assert!(r.valid && r.makespan <= Ticks(t), "{name}");
            }
            other => panic!("{name}: T* must be feasible, got {other:?}"),
        }
    }
}

#[test]
fn discount_rule_is_used_in_the_optimum() {
    // weight_discount_lowers: the optimum deletes w2 after F2 with no offload
    // after F2 (the CPU copy from after B2 is still current).
    let inst = load("weight_discount_lowers");
    let o = exact::solve(Method::Milp, &inst, &Limits::default()).unwrap();
    let s = o.schedule.unwrap();
    let w2 = inst.tensor_by_name("w2").unwrap();
    let offloads = s
        .events
        .iter()
        .filter(|e| matches!(e, offcert::schedule::Event::Transfer { dir: offcert::model::Direction::Offload, tensor, .. } if *tensor == w2))
        .count();
    let prefetches = s
        .events
        .iter()
        .filter(|e| matches!(e, offcert::schedule::Event::Transfer { dir: offcert::model::Direction::Prefetch, tensor, .. } if *tensor == w2))
        .count();
    assert_eq!(
        (offloads, prefetches),
        (1, 2),
        "one offload serves two prefetches"
    );
}

#[test]
fn written_lp_model_is_well_formed() {
    let inst = load("act_one_offload");
    let dir = std::env::temp_dir().join(format!("offcert-lp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("m.lp");
    milp::write_lp(&inst, Ticks(6), false, &p).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    for section in ["Minimize", "Subject To", "Bounds", "General", "End"] {
        assert!(text.contains(section), "{section}");
    }
    // Every column named in a row has a bound line.
    let bounds: std::collections::HashSet<&str> = text
        .split("Bounds\n")
        .nth(1)
        .unwrap()
        .lines()
        .filter_map(|l| l.split("<=").nth(1).map(|s| s.trim()))
        .collect();
    assert!(bounds.contains("s_0_0"));
    assert!(text.contains("R7_slot_"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn out_of_scope_instances_are_refused_not_approximated() {
    // A core instance whose order repeats an op (rematerialisation).
    let mut inst = load("act_fits");
    if let offcert::model::ComputeOrder::Fixed(v) = &mut inst.order {
        let first = v[0];
        v.push(first);
    }
    match exact::solve(Method::Milp, &inst, &Limits::default()) {
        Err(offcert::exact::ExactError::Unsupported { .. }) => {}
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn rescaling_makes_transfer_times_whole() {
    let inst = load("act_one_offload"); // beta = 1 B per 2 ticks: already whole
    let (r, k) = offcert::exact::rescale(&inst).unwrap();
    assert_eq!(k, 1);
    assert_eq!(r, inst);
    let mut odd = inst.clone();
    odd.machine.bandwidth = offcert::units::Bandwidth::new(3, 2); // 1 B lasts 2/3 tick
    let (r, k) = offcert::exact::rescale(&odd).unwrap();
    assert_eq!(k, 3);
    for t in &r.tensors {
        assert!(r.machine.bandwidth.divides(t.size));
    }
    assert_eq!(r.total_compute(), Ticks(3 * odd.total_compute().0));
}

/// `instances/examples/chain3.json` with 8 B of GPU memory (issue 9): under the
/// default rule B2 holds x3 until it ends, and the optimum is 19; the
/// relaxation deletes x3 while B2 runs and reaches 15.
#[test]
fn chain3_at_8_bytes_under_both_rules() {
    let (_, mut inst) = load_instance(Path::new("instances/examples/chain3.json")).unwrap();
    inst.machine.gpu_capacity = offcert::units::Bytes(8);
    for (rule, want) in [(ReleaseRule::AfterEnd, 19), (ReleaseRule::AfterStart, 15)] {
        inst.release = rule;
        let o = exact::solve(Method::Milp, &inst, &Limits::default()).unwrap();
        assert_eq!(o.status, Status::Optimal, "{rule}: {:?}", o.notes);
        let r = check(&inst, o.schedule.as_ref().unwrap());
        assert!(r.valid, "{rule}: {:?}", r.violations);
        assert_eq!(r.makespan, Ticks(want), "{rule}");
    }
}

/// Under the default rule the model has no early frees and every window
/// anchored at a read opens at the reader's end (rows named after R10); under
/// the relaxation it keeps today's rows. Neither restricts releases at the
/// cyclic boundary any more (solve-path defect 2).
#[test]
fn written_models_follow_the_release_rule() {
    let dir = std::env::temp_dir().join(format!("offcert-lp-rule-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("m.lp");
    for (file, frame) in [("act_chain3", 15), ("weight_discount", 15)] {
        for rule in [ReleaseRule::AfterEnd, ReleaseRule::AfterStart] {
            let inst = load_with(file, rule);
            milp::write_lp(&inst, Ticks(frame), false, &p).unwrap();
            let text = std::fs::read_to_string(&p).unwrap();
            assert!(!text.contains("boundary_release"), "{file} ({rule})");
            let after_end = rule == ReleaseRule::AfterEnd;
            assert_eq!(
                text.contains("R10_release_after_use"),
                after_end,
                "{file} ({rule})"
            );
            if file == "act_chain3" {
                // B_i frees x_{i+1}: early frees exist under the relaxation only.
                assert_eq!(text.contains("R6_free_once"), !after_end, "{file} ({rule})");
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
