//! Bounds ≤ exact optimum ≤ every heuristic's checked makespan, on random small
//! chains whose optimum the exact solvers establish (`exact::crosscheck`: MILP,
//! SMT and search agree, every schedule replayed by the checker); plus the
//! documented counterexample to the paper-literal fractional bound.

use num_bigint::BigInt;
use num_rational::BigRational;
use offcert::bound;
use offcert::bound::activation::{fractional_optimum_paper, ChainProfile};
use offcert::exact::crosscheck::{self, Label};
use offcert::exact::{Limits, Method};
use offcert::family::activation_chain::{ActivationChain, ActivationLayer};
use offcert::family::{BandwidthFile, InstanceFile};
use offcert::heuristic::{self, HeuristicError};
use quickcheck::{QuickCheck, TestResult};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn chain(spec: &[(u8, u8, u8, u8)], mem: u8, bw: u8) -> ActivationChain {
    let layers: Vec<ActivationLayer> = spec
        .iter()
        .map(|&(uf, ub, x, ex)| ActivationLayer {
            u_f: (uf % 4) as i64,
            u_b: (ub % 5) as i64,
            x: (x % 7) as u64,
            y: (x / 7 % 2) as u64,
            ex_f: (ex % 2) as u64,
            ex_b: (ex / 2 % 3) as u64,
        })
        .collect();
    let mut c = ActivationChain {
        name: "q".into(),
        note: None,
        layers,
        x_last: (spec[0].2 % 4) as u64,
        y_last: 0,
        gpu_memory: 0,
        bandwidth: BandwidthFile::Ratio {
            bytes: 1 + (bw % 4) as u64,
            ticks: 1 + (bw / 4 % 2) as u64,
        },
        release: Default::default(),
    };
    let p = ChainProfile::new(&c);
    let (lo, hi) = (p.min_memory() as u64, p.m_peak() as u64);
    c.gpu_memory = lo + (hi - lo) * mem as u64 / 255;
    c
}

fn exact(inst: &offcert::model::Instance) -> Option<i64> {
    let limits = Limits {
        time_limit: Duration::from_secs(10),
        ..Limits::default()
    };
    let v = crosscheck::run(inst, &[Method::Milp, Method::Smt, Method::Search], &limits);
    // A disagreement between the exact methods is theirs to explain (their own
    // tests cover it); such an instance has no cross-checked optimum here.
    if !v.disagreements.is_empty() {
        eprintln!("exact methods disagree: {:?}", v.disagreements);
    }
    match v.label {
        Label::OptimalCrossChecked => v.makespan.map(|m| m.0),
        _ => None,
    }
}

static SOLVED: AtomicUsize = AtomicUsize::new(0);
static PAPER_ABOVE: AtomicUsize = AtomicUsize::new(0);

#[test]
fn bounds_below_optimum_below_heuristics() {
    type L = (u8, u8, u8, u8);
    fn prop(a: L, b: L, d: L, n: u8, mem: u8, bw: u8) -> TestResult {
        let spec = [a, b, d];
        let c = chain(&spec[..1 + (n % 3) as usize], mem, bw);
        let file = InstanceFile::ActivationChain(c.clone());
        let inst = file.compile().unwrap();
        let Some(opt) = exact(&inst) else {
            return TestResult::discard();
        };
        SOLVED.fetch_add(1, Ordering::Relaxed);
        let opt_r = BigRational::from_integer(BigInt::from(opt));
        if fractional_optimum_paper(&c).unwrap() > opt_r {
            PAPER_ABOVE.fetch_add(1, Ordering::Relaxed);
        }
        for (name, r) in bound::evaluate(&file, &inst) {
            let b = r.unwrap();
            if b.value > opt_r {
                return TestResult::error(format!(
                    "bound {name} = {} exceeds the optimum {opt} on {c:?}",
                    b.value
                ));
            }
        }
        for h in heuristic::all().iter().filter(|h| h.applies(&file)) {
            match heuristic::run(h.as_ref(), &file, &inst) {
                Ok(run) if run.report.makespan.0 < opt => {
                    return TestResult::error(format!(
                        "{} makespan {} below the optimum {opt} on {c:?}",
                        run.name, run.report.makespan.0
                    ))
                }
                Ok(_) | Err(HeuristicError::NoSchedule { .. }) => {}
                Err(e) => return TestResult::error(format!("{e} on {c:?}")),
            }
        }
        TestResult::passed()
    }
    QuickCheck::new()
        .tests(100)
        .max_tests(1000)
        .quickcheck(prop as fn(_, _, _, _, _, _) -> TestResult);
    assert!(SOLVED.load(Ordering::Relaxed) >= 100);
    // Not an assertion: how often the paper-literal value would have been wrong.
    eprintln!(
        "paper-literal fractional value above the optimum on {} of {} instances",
        PAPER_ABOVE.load(Ordering::Relaxed),
        SOLVED.load(Ordering::Relaxed)
    );
}

/// The counterexample of proofs/ACTIVATION-BOUNDS.md: chain3 at its least memory.
#[test]
fn the_paper_literal_fractional_value_exceeds_the_optimum_of_chain3_at_8_bytes() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/instances/examples/chain3.json"
    ))
    .unwrap();
    let (f, _) = offcert::io::parse_instance("chain3.json", &text).unwrap();
    let InstanceFile::ActivationChain(mut c) = f else {
        panic!()
    };
    c.gpu_memory = 8;
    let inst = InstanceFile::ActivationChain(c.clone()).compile().unwrap();
    assert_eq!(exact(&inst), Some(15));
    let paper = fractional_optimum_paper(&c).unwrap();
    assert_eq!(paper, BigRational::from_integer(BigInt::from(19)));
    // The registered bound (early release of dying inputs) stays below.
    assert!(
        offcert::bound::activation::fractional_optimum(&c).unwrap()
            <= BigRational::from_integer(BigInt::from(15))
    );
}
