//! Variant groups (R11), slots (R12) and precedences (R13): the core file's
//! field-named errors, the digest version, every exact method's and the
//! simulator's typed refusal, and the checker and the re-check agreeing on
//! random grouped instances and their mutations. The fixtures with exact
//! violations are in `crates/offcert-core/tests/checker/rules.rs` (`instances/fixtures/grp1.*`).

use crate::common;

use common::*;
use offcert::check::{check, instance_digest};
use offcert::exact::scope::{Feature, Features};
use offcert::exact::{self, ExactError, Limits, Method};
use offcert::family::CoreFile;
use offcert::model::{ComputeOrder, Extension, Instance, ModelError, OpId};
use offcert::simulate::{asap, asap_sequence, Plan, SeqPlan, SimError};
use quickcheck::TestResult;

fn grp1() -> Instance {
    load(
        &repo().join("instances/fixtures/grp1.json"),
        &repo().join("instances/fixtures/grp1.cpu-update.valid.schedule.json"),
    )
    .0
}

/// grp1 with only the named extension left (slots: an empty slotted order,
/// as a slotted order needs no groups to be refused).
fn only(e: Extension) -> Instance {
    let mut i = grp1();
    i.order = ComputeOrder::Free;
    if e != Extension::Groups {
        i.groups.clear();
    }
    if e == Extension::Slots {
        i.order = ComputeOrder::Slots(vec![]);
    }
    if e != Extension::After {
        for o in &mut i.ops {
            o.after.clear();
        }
    }
    assert_eq!(i.extensions(), vec![e]);
    i
}

fn core(json: &str) -> Result<Instance, ModelError> {
    let f: CoreFile = serde_json::from_str(json).expect("parses");
    let i = f.compile()?;
    i.validate()?;
    Ok(i)
}

const BASE: &str = r#"{"name":"g","tensors":[],"ops":[
  {"name":"A","duration":1,"required":false},
  {"name":"B","duration":1,"required":false,"after":["A"]}],
  "groups":[{"name":"ga","members":["A"]},{"name":"gb","members":["B"],"runs":"at_least_once"}],
  "order":{"slots":["ga","gb"]},
  "gpu_memory":8,"duplex":"full_duplex","bandwidth":4,"mode":"cyclic"}"#;

#[test]
fn core_file_reads_groups_after_and_slots_and_names_bad_fields() {
    let i = core(BASE).unwrap();
    assert_eq!(i.groups.len(), 2);
    assert_eq!(i.ops[1].after, vec![offcert::model::OpId(0)]);
    assert!(matches!(&i.order, ComputeOrder::Slots(v) if v.len() == 2));
    // Round trip through the file form.
    let back = CoreFile::from_instance(&i).compile().unwrap();
    assert_eq!(back.groups, i.groups);
    assert_eq!(back.order, i.order);
    let field = |json: String| match core(&json) {
        Err(ModelError::UnknownName { field, .. }) => field,
        Err(e) => format!("{e}"),
        Ok(_) => "accepted".into(),
    };
    assert_eq!(
        field(BASE.replace(r#""after":["A"]"#, r#""after":["Z"]"#)),
        "ops[1].after[0]"
    );
    assert_eq!(
        field(BASE.replace(r#""members":["B"]"#, r#""members":["Z"]"#)),
        "groups[1].members[0]"
    );
    assert_eq!(
        field(BASE.replace(r#"["ga","gb"]"#, r#"["ga","zz"]"#)),
        "order.slots[1]"
    );
    // A member that is `required`, a slot twice, an op after itself.
    let e = core(&BASE.replace(
        r#""name":"A","duration":1,"required":false"#,
        r#""name":"A","duration":1"#,
    ))
    .unwrap_err();
    assert!(format!("{e}").contains("groups[0].members[0]"), "{e}");
    let e = core(&BASE.replace(r#"["ga","gb"]"#, r#"["ga","ga"]"#)).unwrap_err();
    assert!(format!("{e}").contains("order[1]"), "{e}");
    let e = core(&BASE.replace(r#""after":["A"]"#, r#""after":["B"]"#)).unwrap_err();
    assert!(format!("{e}").contains("ops[1].after[0]"), "{e}");
}

#[test]
fn digest_v3_only_for_instances_with_extensions() {
    let i = grp1();
    let mut plain = i.clone();
    plain.groups.clear();
    plain.order = ComputeOrder::Free;
    for o in &mut plain.ops {
        o.after.clear();
    }
    assert!(plain.extensions().is_empty());
    // Each extension changes the digest.
    let d = instance_digest(&i);
    for e in [Extension::Groups, Extension::Slots, Extension::After] {
        assert_ne!(instance_digest(&only(e)), d, "{e:?}");
        assert_ne!(instance_digest(&only(e)), instance_digest(&plain), "{e:?}");
    }
    let mut other = i.clone();
    other.groups[2].runs = offcert::model::Multiplicity::AtLeastOnce;
    assert_ne!(instance_digest(&other), d);
    assert_eq!(
        grp1().extensions(),
        vec![Extension::Groups, Extension::Slots, Extension::After]
    );
}

fn refused(r: Result<exact::Outcome, ExactError>, method: Method, feature: Extension) {
    match r {
        Err(ExactError::Unencoded {
            method: m,
            feature: f,
        }) => {
            assert_eq!((m, f), (method, Feature::Extension(feature)))
        }
        other => panic!("{method:?}: expected a refusal naming {feature:?}, got {other:?}"),
    }
}

/// The MILP and the search encode groups, slots and `after` on the GPU
/// (`exact::variants`; `groups_exact.rs`); on grp1 (cyclic, CPU ops) what
/// they refuse is named: `after` in a free order (the `remat` reduction
/// takes groups only), the cyclic free order. The MILP and the search encode
/// CPU ops (`offmate_exact.rs`) and refuse, by their finer limits, an op
/// outside the slots and `after` together with CPU ops.
#[test]
fn milp_and_search_refuse_what_stays_outside_naming_it() {
    for m in [Method::Milp, Method::Search] {
        let door = |i: &Instance| match exact::solve(m, i, &Limits::default()) {
            Err(ExactError::Unencoded { method, feature }) => {
                assert_eq!(method, m);
                feature
            }
            other => panic!("{m:?}: expected a refusal, got {other:?}"),
        };
        assert_eq!(door(&only(Extension::Groups)), Feature::Cyclic);
        assert_eq!(
            door(&only(Extension::After)),
            Feature::Extension(Extension::After)
        );
    }
    for m in [Method::Milp, Method::Search] {
        let finer = |i: &Instance| match exact::solve(m, i, &Limits::default()) {
            Err(ExactError::Unsupported { reason, .. }) => reason,
            other => panic!("{m:?}: expected a refusal, got {other:?}"),
        };
        assert!(finer(&only(Extension::Slots)).contains("is in no slotted group"));
        assert!(finer(&grp1()).contains("precedences (after) with ops on the CPU"));
    }
}

#[test]
fn smt_refuses_groups_slots_and_after() {
    for e in [Extension::Groups, Extension::Slots, Extension::After] {
        refused(
            exact::solve(Method::Smt, &only(e), &Limits::default()),
            Method::Smt,
            e,
        );
    }
}

/// The door (`exact::solve`) compares the features an instance uses with the
/// method's declared scope and refuses the first one outside it, by name: a
/// free order where the method has no reduction for it (SMT), a cyclic
/// instance where the reduction takes one-shot chains only (MILP, search), CPU
/// ops where the method does not encode them (SMT).
#[test]
fn the_door_refuses_the_first_feature_outside_the_scope() {
    let mut i = grp1();
    i.groups.clear();
    for o in &mut i.ops {
        o.after.clear();
    }
    i.order = ComputeOrder::Free;
    assert_eq!(
        Features::of(&i),
        Features::from_list(&[
            Feature::FreeOrder,
            Feature::Cyclic,
            Feature::CpuOps,
            Feature::CpuCapacity
        ])
    );
    let door = |m: Method, i: &Instance| match exact::solve(m, i, &Limits::default()) {
        Err(ExactError::Unencoded { method, feature }) => {
            assert_eq!(method, m);
            feature
        }
        other => panic!("{m:?}: expected a refusal, got {other:?}"),
    };
    assert_eq!(door(Method::Smt, &i), Feature::FreeOrder);
    assert_eq!(door(Method::Milp, &i), Feature::Cyclic);
    assert_eq!(door(Method::Search, &i), Feature::Cyclic);
    i.order = ComputeOrder::Fixed((0..i.ops.len() as u32).map(OpId).collect());
    assert_eq!(door(Method::Smt, &i), Feature::CpuOps);
    // The search and the MILP encode CPU ops; grp1's 4 B of CPU memory is in
    // reach (w and optC's scratch need 8 B), which their finer limits refuse.
    for m in [Method::Search, Method::Milp] {
        match exact::solve(m, &i, &Limits::default()) {
            Err(ExactError::Unsupported { reason, .. }) => {
                assert!(reason.contains("a CPU memory capacity"), "{m:?}: {reason}")
            }
            other => panic!("{m:?}: expected a refusal, got {other:?}"),
        }
    }
}

/// `asap` refuses all three; `asap_sequence` refuses slots and `after` but
/// takes groups (its sequence names which member runs; R11 is the checker's).
#[test]
fn simulator_refuses_groups_slots_and_after() {
    let plan = Plan {
        offload: vec![],
        lookahead: None,
    };
    for e in [Extension::Groups, Extension::Slots, Extension::After] {
        let mut i = only(e);
        i.mode = offcert::model::Mode::OneShot;
        assert_eq!(asap(&i, &plan), Err(SimError::Extension(e)));
        let seq = asap_sequence(&i, &SeqPlan::default());
        if e == Extension::Groups {
            assert!(seq.is_ok(), "{seq:?}");
        } else {
            assert_eq!(seq, Err(SimError::Extension(e)));
        }
    }
}

#[test]
fn checker_and_recheck_agree_on_random_grouped_schedules_and_their_mutations() {
    fn prop(ops: Vec<(u8, u8, u8)>, bits: u8, muts: Vec<(u8, usize, i8)>) -> TestResult {
        let Some((inst, s)) = grouped_schedule(&ops, bits) else {
            return TestResult::discard();
        };
        if !agree(&inst, &s).valid {
            return TestResult::failed();
        }
        agree_after_mutations(&inst, s, muts);
        TestResult::passed()
    }
    qc(300, 100).quickcheck(prop as fn(_, _, _) -> TestResult);
}

#[test]
fn dropping_the_update_breaks_only_rule_groups() {
    // Dropping the only run of group upd from grp1's valid GPU-update schedule.
    let dir = repo().join("instances/fixtures");
    let (inst, s) = load(
        &dir.join("grp1.json"),
        &dir.join("grp1.gpu-update.valid.schedule.json"),
    );
    let mut dropped = s.clone();
    dropped.events.pop();
    assert_eq!(
        kinds(&agree(&inst, &dropped)),
        ["group_never_ran".to_string()].into()
    );
    let r = check(&inst, &s);
    assert!(r.valid);
}
