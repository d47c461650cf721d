//! bound ≤ optimum ≤ heuristic on small weight chains: the §6 bounds against the
//! exact optimum (the MILP and SMT methods of `crate::exact`, their schedules
//! checked), and the optimum against every weight heuristic's checked period.

use num_bigint::BigInt;
use num_rational::BigRational;
use offcert::bound::weight::{Sec6Certified, Sec6Milp};
use offcert::check::check;
use offcert::exact::{milp, smt, Limits, Status};
use offcert::family::weight_chain::{WeightChain, WeightLayer};
use offcert::family::{BandwidthFile, InstanceFile};
use offcert::heuristic::{run, weight};
use offcert::model::Instance;
use quickcheck::{Arbitrary, Gen, QuickCheck, TestResult};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

static SOLVED: AtomicUsize = AtomicUsize::new(0);

#[derive(Clone, Debug)]
struct Tiny(WeightChain);

impl Arbitrary for Tiny {
    fn arbitrary(g: &mut Gen) -> Tiny {
        let pick = |g: &mut Gen, n: u64| u64::arbitrary(g) % n;
        let l = 1 + pick(g, 3) as usize;
        let layers: Vec<WeightLayer> = (0..l)
            .map(|_| WeightLayer {
                u_f: 1 + pick(g, 3) as i64,
                u_b: 1 + pick(g, 3) as i64,
                w: 1 + pick(g, 3),
                a: pick(g, 2),
            })
            .collect();
        let mut c = WeightChain {
            name: "tiny".into(),
            note: None,
            layers,
            a0: 0,
            gpu_memory: 0,
            bandwidth: BandwidthFile::PerTick(1),
            release: Default::default(),
        };
        let peak = (1..=l).map(|i| c.mb(i).unwrap()).max().unwrap();
        let total: u64 = c.layers.iter().map(|x| x.w).sum();
        c.gpu_memory = peak + pick(g, total);
        Tiny(c)
    }
}

/// The exact optimum, if a method proves it within its limit (schedule checked).
fn optimum(inst: &Instance) -> Option<i64> {
    let limits = Limits {
        time_limit: Duration::from_secs(20),
        ..Default::default()
    };
    for solve in [milp::solve, smt::solve] {
        let Ok(out) = solve(inst, &limits) else {
            continue;
        };
        if out.status != Status::Optimal {
            continue;
        }
        let s = out.schedule.expect("an optimal outcome has a schedule");
        let r = check(inst, &s);
        assert!(r.valid, "exact schedule rejected: {:?}", r.violations);
        return Some(r.makespan.0);
    }
    None
}

fn bound_optimum_heuristic(t: Tiny) -> TestResult {
    let c = t.0;
    let file = InstanceFile::WeightChain(c.clone());
    let inst = file.compile().unwrap();
    let Some(opt) = optimum(&inst) else {
        return TestResult::discard();
    };
    SOLVED.fetch_add(1, Ordering::SeqCst);
    let opt_r = BigRational::from_integer(BigInt::from(opt));
    let cert = Sec6Certified::default().compute(&c).unwrap();
    let mip = Sec6Milp::default().compute(&c).unwrap();
    assert!(
        cert.value <= opt_r,
        "certified {} > optimum {opt} on {c:?}",
        cert.display()
    );
    assert!(
        mip.value <= opt_r,
        "milp-sec6 {} > optimum {opt} on {c:?}",
        mip.display()
    );
    for h in weight::heuristics() {
        let p = run(h.as_ref(), &file, &inst).unwrap().report.makespan.0;
        assert!(opt <= p, "{} period {p} < optimum {opt} on {c:?}", h.name());
    }
    TestResult::passed()
}

#[test]
fn bounds_below_optimum_below_heuristics() {
    QuickCheck::new()
        .tests(12)
        .max_tests(40)
        .quickcheck(bound_optimum_heuristic as fn(Tiny) -> TestResult);
    assert!(
        SOLVED.load(Ordering::SeqCst) >= 6,
        "too few instances solved exactly"
    );
}
