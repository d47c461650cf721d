//! The 3-partition reductions of Theorem 1 of both papers (`proofs/REDUCTIONS.md`),
//! built by `exact::reduction` for small m, time in ticks of 1/V unit.
//! Yes-instances must reach the target, no-instances must not, and the exact
//! methods must agree. Where a construction encoded as stated contradicts its
//! paper, the test asserts what the model actually gives (explained in
//! REDUCTIONS.md), so a change of behaviour is noticed.

use offcert::check::check;
use offcert::exact::reduction::ThreePartition;
use offcert::exact::{self, milp, Limits, Method, Status};
use offcert::family::InstanceFile;
use offcert::model::{Instance, ReleaseRule};
use offcert::units::Ticks;
use std::time::Duration;

fn limits() -> Limits {
    Limits {
        time_limit: Duration::from_secs(120),
        ..Default::default()
    }
}

fn yes1() -> ThreePartition {
    ThreePartition::new(vec![2, 2, 3]).unwrap() // V = 7
}
fn yes2() -> ThreePartition {
    ThreePartition::new(vec![4, 4, 5, 4, 4, 5]).unwrap() // V = 13
}
fn no2() -> ThreePartition {
    ThreePartition::new(vec![4, 4, 4, 4, 4, 6]).unwrap() // V = 13
}

fn act(tp: &ThreePartition) -> Instance {
    InstanceFile::ActivationChain(tp.activation_repaired())
        .compile()
        .unwrap()
}
fn weight(tp: &ThreePartition) -> Instance {
    InstanceFile::WeightChain(tp.weight_as_stated())
        .compile()
        .unwrap()
}

/// Is there a checked schedule of makespan (period) <= t, per the MILP?
fn reaches(inst: &Instance, t: i64) -> bool {
    match milp::refute(inst, Ticks(t), &limits()).unwrap() {
        milp::Refutation::Refuted => false,
        milp::Refutation::Feasible(s) => {
            let r = check(inst, s.schedule());
            assert!(r.valid, "{:?}", r.violations);
            assert!(r.makespan <= Ticks(t));
            true
        }
        milp::Refutation::Unknown => panic!("MILP ran out of time"),
    }
}

#[test]
fn generator_classifies_the_partitions() {
    assert!(yes1().strict() && yes1().solvable());
    assert!(yes2().strict() && yes2().solvable());
    assert!(no2().strict() && !no2().solvable());
    assert_eq!(yes2().target(), 52);
}

#[test]
fn activation_repaired_yes_reaches_t_no_does_not() {
    for tp in [yes1(), yes2()] {
        assert!(reaches(&act(&tp), tp.target()), "{:?}", tp.nums);
    }
    let tp = no2();
    assert!(!reaches(&act(&tp), tp.target()));
    assert!(
        reaches(&act(&tp), tp.target() + 1),
        "one tick more suffices"
    );
}

#[test]
fn activation_as_stated_cannot_reach_t_even_for_yes() {
    // As stated, m+1 forward ops last one unit and B_{3m} lasts m: the compute
    // alone is 2m+1 units > T (REDUCTIONS.md §1).
    let tp = yes1();
    let inst = InstanceFile::ActivationChain(tp.activation_as_stated())
        .compile()
        .unwrap();
    assert!(inst.total_compute().0 > tp.target());
    assert!(!reaches(&inst, tp.target()));
}

#[test]
fn weight_as_stated_yes_reaches_t_no_does_not() {
    // The zero-duration B_1 starts at P, in the period that ends (R8), so the
    // paper's yes-schedule has period T exactly; a no-instance needs more
    // (REDUCTIONS.md §2).
    for tp in [yes1(), yes2()] {
        let inst = weight(&tp);
        assert!(reaches(&inst, tp.target()), "{:?}", tp.nums);
        assert!(!reaches(&inst, tp.target() - 1), "{:?}", tp.nums);
    }
    let tp = no2();
    assert!(!reaches(&weight(&tp), tp.target()));
}

#[test]
fn the_weight_reduction_reaches_t_under_both_rules() {
    // The relaxation reaches T too, and not T - 1.
    let tp = yes1();
    let mut inst = weight(&tp);
    inst.release = offcert::model::ReleaseRule::AfterStart;
    assert!(reaches(&inst, tp.target()));
    assert!(!reaches(&inst, tp.target() - 1));
}

#[test]
fn milp_and_smt_agree_on_the_small_reductions() {
    // m = 1 instances: MILP and SMT prove the same optimum.
    let tp = yes1();
    for inst in [act(&tp), weight(&tp)] {
        let a = exact::solve(Method::Milp, &inst, &limits()).unwrap();
        let b = exact::solve(Method::Smt, &inst, &limits()).unwrap();
        assert_eq!(a.status, Status::Optimal, "{}: {:?}", inst.name, a.notes);
        assert_eq!(b.status, Status::Optimal, "{}: {:?}", inst.name, b.notes);
        let ma = check(&inst, a.schedule.as_ref().unwrap()).makespan;
        let mb = check(&inst, b.schedule.as_ref().unwrap()).makespan;
        assert_eq!(ma, mb, "{}", inst.name);
    }
}

/// On the repaired activation reduction with {2,2,3} (V = 7) the search once
/// proved 15 while the MILP and z3 returned checked schedules of makespan
/// 14 = T: it could not prefetch, at an instant, a tensor whose offload ended
/// (and whose copy it deleted) at that same instant (proofs/SEARCH.md §5).
#[test]
fn search_agrees_on_the_activation_reduction() {
    let tp = yes1();
    let inst = act(&tp);
    let c = offcert::exact::solve(offcert::exact::Method::Search, &inst, &limits()).unwrap();
    assert_eq!(c.status, Status::Optimal, "{:?}", c.notes);
    assert_eq!(
        check(&inst, c.schedule.as_ref().unwrap()).makespan,
        Ticks(tp.target())
    );
}

/// The weight reduction as stated with {2,2,3} (V = 7, L = 5): the search
/// (cyclic, every boundary state tried) proves the period T = 14 that the
/// MILP proves in `weight_as_stated_yes_reaches_t_no_does_not`.
#[test]
fn search_agrees_on_the_weight_reduction() {
    let tp = yes1();
    let inst = weight(&tp);
    let c = offcert::exact::solve(offcert::exact::Method::Search, &inst, &limits()).unwrap();
    assert_eq!(c.status, Status::Optimal, "{:?}", c.notes);
    let r = check(&inst, c.schedule.as_ref().unwrap());
    assert!(r.valid, "{:?}", r.violations);
    assert_eq!(r.makespan, Ticks(tp.target()));
}

#[test]
fn bundled_reduction_instance_matches_the_generator() {
    // instances/tiny/act_3partition_m1.json is yes1()'s repaired construction.
    let (file, _) = offcert::io::load_instance(std::path::Path::new(
        "instances/tiny/act_3partition_m1.json",
    ))
    .unwrap();
    let mut gen = yes1().activation_repaired();
    if let InstanceFile::ActivationChain(a) = &file {
        gen.name = a.name.clone();
        gen.note = a.note.clone();
    }
    assert_eq!(file, InstanceFile::ActivationChain(gen));
}

// ---- New partitions, both release rules (issue 9) --------------------------

/// yes {3,4,3}: V = 10, m = 1 (V/4 < u < V/2).
fn yes1b() -> ThreePartition {
    ThreePartition::new(vec![3, 4, 3]).unwrap()
}
/// yes {5,6,5,6,5,5}: V = 16, m = 2 (5 + 5 + 6 twice).
fn yes2b() -> ThreePartition {
    ThreePartition::new(vec![5, 6, 5, 6, 5, 5]).unwrap()
}
/// no {5,5,5,5,5,7}: V = 16, m = 2 (a triple with 7 sums to 17, one without
/// to 15).
fn no2b() -> ThreePartition {
    ThreePartition::new(vec![5, 5, 5, 5, 5, 7]).unwrap()
}

const RULES: [ReleaseRule; 2] = [ReleaseRule::AfterEnd, ReleaseRule::AfterStart];

fn under(mut inst: Instance, rule: ReleaseRule) -> Instance {
    inst.release = rule;
    inst
}

#[test]
fn the_new_partitions_are_classified() {
    for tp in [yes1b(), yes2b()] {
        assert!(tp.strict() && tp.solvable(), "{:?}", tp.nums);
    }
    assert!(no2b().strict() && !no2b().solvable());
    assert_eq!(yes1b().target(), 20);
    assert_eq!(yes2b().target(), 64);
}

/// The repaired activation construction (REDUCTIONS.md §1): yes-instances
/// reach T exactly, the no-instance does not, under both release rules.
#[test]
fn activation_repaired_on_new_partitions_under_both_rules() {
    for rule in RULES {
        for tp in [yes1b(), yes2b()] {
            let inst = under(act(&tp), rule);
            assert!(reaches(&inst, tp.target()), "{rule} {:?}", tp.nums);
            assert!(!reaches(&inst, tp.target() - 1), "{rule} {:?}", tp.nums);
        }
        let tp = no2b();
        assert!(!reaches(&under(act(&tp), rule), tp.target()), "{rule}");
    }
}

/// The weight construction as stated (REDUCTIONS.md §2; R8 lets the
/// zero-duration B_1 start at P): yes-instances reach T exactly, the
/// no-instance does not, under both release rules.
#[test]
fn weight_as_stated_on_new_partitions_under_both_rules() {
    for rule in RULES {
        for tp in [yes1b(), yes2b()] {
            let inst = under(weight(&tp), rule);
            assert!(reaches(&inst, tp.target()), "{rule} {:?}", tp.nums);
            assert!(!reaches(&inst, tp.target() - 1), "{rule} {:?}", tp.nums);
        }
        let tp = no2b();
        assert!(!reaches(&under(weight(&tp), rule), tp.target()), "{rule}");
    }
}

/// The exhaustive search (no MILP involved) proves T on both m = 1
/// constructions, old and new partitions, under both release rules.
#[test]
fn search_proves_t_on_the_m1_reductions_under_both_rules() {
    for rule in RULES {
        for tp in [yes1(), yes1b()] {
            for inst in [under(act(&tp), rule), under(weight(&tp), rule)] {
                let c = offcert::exact::solve(offcert::exact::Method::Search, &inst, &limits())
                    .unwrap();
                assert_eq!(
                    c.status,
                    Status::Optimal,
                    "{rule} {}: {:?}",
                    inst.name,
                    c.notes
                );
                let r = check(&inst, c.schedule.as_ref().unwrap());
                assert!(r.valid, "{:?}", r.violations);
                assert_eq!(
                    r.makespan,
                    Ticks(tp.target()),
                    "{rule} {} {:?}",
                    inst.name,
                    tp.nums
                );
            }
        }
    }
}
