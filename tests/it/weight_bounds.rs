//! The §6 bounds: never above a checked heuristic period, the certified bound
//! never above the MIP's, and the counterexample to the MILP as printed.

use crate::common;

use common::{qc, weight_chain_of, SmallChain};
use num_bigint::BigInt;
use num_rational::BigRational;
use offcert::bound::weight::sec6_milp::Variant;
use offcert::bound::weight::{Sec6Certified, Sec6Milp};
use offcert::bound::Strength;
use offcert::family::weight_chain::WeightChain;
use offcert::family::InstanceFile;
use offcert::heuristic::{run, weight};

fn rat(x: i64) -> BigRational {
    BigRational::from_integer(BigInt::from(x))
}

fn best_heuristic(c: &WeightChain) -> i64 {
    let file = InstanceFile::WeightChain(c.clone());
    let inst = file.compile().unwrap();
    weight::heuristics()
        .iter()
        .map(|h| {
            run(h.as_ref(), &file, &inst)
                .expect("valid schedule")
                .checked
                .report()
                .makespan
                .0
        })
        .min()
        .unwrap()
}

fn bounds_below_heuristics(c: SmallChain) -> bool {
    let c = c.0;
    let cert = Sec6Certified::default()
        .compute(&c)
        .expect("certified bound");
    let milp = Sec6Milp::default().compute(&c).expect("milp bound");
    assert_eq!(cert.strength, Strength::Certified);
    assert_eq!(milp.strength, Strength::SolverReported);
    let best = rat(best_heuristic(&c));
    assert!(
        cert.value <= best,
        "certified {} > heuristic {} on {c:?}",
        cert.display(),
        best
    );
    assert!(
        milp.value <= best,
        "milp {} > heuristic {} on {c:?}",
        milp.display(),
        best
    );
    // The LP relaxation's certified bound cannot beat the MIP (up to the MIP gap).
    let slack = BigRational::new(BigInt::from(1), BigInt::from(1000)) * (&milp.value + rat(1));
    assert!(
        cert.value <= &milp.value + slack,
        "certified {} > milp {}",
        cert.display(),
        milp.display()
    );
    true
}

#[test]
fn bounds_are_below_every_heuristic_on_random_chains() {
    qc(60, 60).quickcheck(bounds_below_heuristics as fn(SmallChain) -> bool);
}

fn chain(layers: &[(i64, i64, u64, u64)], gpu_memory: u64, bw: u64) -> WeightChain {
    weight_chain_of("hand", layers, 0, gpu_memory, bw)
}

#[test]
fn plenty_of_memory_gives_the_compute_time() {
    let c = chain(&[(2, 3, 10, 1), (1, 2, 10, 1)], 100, 1);
    let cert = Sec6Certified::default().compute(&c).unwrap();
    assert_eq!(cert.ceil_ticks(), 8);
    assert_eq!(best_heuristic(&c), 8);
}

#[test]
fn forced_transfers_raise_the_certified_bound_above_the_compute_time() {
    // Each op holds only its own weight (MB_i = 20 = M): every weight leaves
    // between its uses, and 10-tick transfers do not hide behind 1-tick ops.
    let c = chain(&[(1, 1, 10, 0), (1, 1, 10, 0)], 20, 1);
    let cert = Sec6Certified::default().compute(&c).unwrap();
    let milp = Sec6Milp::default().compute(&c).unwrap();
    let best = best_heuristic(&c);
    assert!(cert.value > rat(4), "certified {}", cert.display());
    assert!(milp.value >= cert.value);
    assert!(milp.value <= rat(best));
}

/// proofs/WEIGHT-BOUND.md §4: the MILP as printed counts the op's own weight
/// twice in (4). On this chain a valid schedule (checked) needs no transfer at
/// all, yet the printed MILP forces transfers or is infeasible.
#[test]
fn the_milp_as_printed_exceeds_a_valid_period() {
    // L = 2, |w| = 10, no activations, M = 30: during each op its own weight
    // twice (MB = 20) plus the other weight fits exactly.
    let c = chain(&[(1, 1, 10, 0), (1, 1, 10, 0)], 30, 1);
    let valid = best_heuristic(&c);
    assert_eq!(valid, 4);
    let corrected = Sec6Milp::default().compute(&c).unwrap();
    assert_eq!(corrected.ceil_ticks(), 4);
    let literal = Sec6Milp {
        variant: Variant::Literal,
        ..Default::default()
    }
    .compute(&c)
    .unwrap();
    assert!(
        literal.value > rat(valid),
        "printed MILP gives {}",
        literal.display()
    );
    let literal_cert = Sec6Certified {
        variant: Variant::Literal,
        ..Default::default()
    }
    .compute(&c)
    .unwrap();
    assert!(
        literal_cert.value > rat(valid),
        "printed LP gives {}",
        literal_cert.display()
    );
    // L = 1, M = MB_1: the printed MILP has no solution at all.
    let c1 = chain(&[(1, 1, 10, 0)], 20, 1);
    assert_eq!(best_heuristic(&c1), 2);
    assert!(Sec6Milp {
        variant: Variant::Literal,
        ..Default::default()
    }
    .compute(&c1)
    .is_err());
}

/// Any dual vector, even garbage, yields a bound no larger than a valid period:
/// the solver's floats only choose y.
#[test]
fn any_dual_vector_gives_a_valid_bound() {
    use offcert::bound::weight::certify::certified_bound;
    use offcert::bound::weight::sec6_milp::build;
    let c = chain(&[(1, 1, 10, 0), (1, 1, 10, 0)], 20, 1);
    let best = rat(best_heuristic(&c));
    let m = build(&c, Variant::Corrected).unwrap();
    let check = |y: Vec<f64>| -> bool {
        match certified_bound(&m, &y) {
            Ok(b) => b <= best,
            Err(_) => true,
        }
    };
    assert!(check(vec![]), "y = 0");
    let mut g = quickcheck::Gen::new(100);
    for _ in 0..200 {
        let y: Vec<f64> = (0..m.rows.len())
            .map(|_| {
                let v = <i16 as quickcheck::Arbitrary>::arbitrary(&mut g) as f64 / 1000.0;
                if <bool as quickcheck::Arbitrary>::arbitrary(&mut g) {
                    v
                } else {
                    0.0
                }
            })
            .collect();
        assert!(check(y));
    }
}

/// proofs/WEIGHT-BOUND.md §6: the turnaround bound's hand-derived figures.
#[test]
fn turnaround_by_hand() {
    use offcert::bound::weight::turnaround::Turnaround;
    use offcert::model::ReleaseRule;
    let c = chain(&[(1, 1, 10, 0), (1, 1, 10, 0)], 20, 1);
    let inst = c.compile().unwrap();
    assert_eq!(Turnaround.ticks(&c, &inst, ReleaseRule::AfterEnd), Ok(13));
    assert_eq!(Turnaround.ticks(&c, &inst, ReleaseRule::AfterStart), Ok(12));
    assert!(best_heuristic(&c) >= 13);
    for (f, expect) in [("bert-L96-b16", 6900586), ("bert-L144-b16", 10987247)] {
        let path = common::repo().join(format!("instances/paper/weight/{f}.json"));
        let (file, inst) = offcert::io::load_instance(&path).unwrap();
        let c = file.weight_chain().unwrap();
        assert_eq!(
            Turnaround.ticks(c, &inst, ReleaseRule::AfterEnd),
            Ok(expect),
            "{f}"
        );
    }
}
