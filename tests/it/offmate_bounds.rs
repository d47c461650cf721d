//! The OFFMATE bounds that see the CPU time and the forced traffic
//! (`offmate-cpu`, `offmate-traffic`, `offmate-turnaround`, `offmate-kept`;
//! `proofs/OFFMATE-BOUNDS.md`): each at most every checked period on random
//! small instances (tight memory included), at least the bound it extends, a
//! hand-derived value, and strictly above the old bounds on a Llama2-7B row.
//!
//! No exact method accepts `offmate` instances yet (groups, slots, `after`), so
//! there is no optimum to compare with; per instance, every OFFMATE heuristic
//! and a batch of random realised plans stand in for an enumeration.

use crate::common;

use common::offmate_gen::{offmate_instance, offmate_plan, Draw};
use common::*;
use offcert::bound::offmate::volume::period_bound;
use offcert::bound::offmate::{forced_bound, kept_bound, Lines};
use offcert::check::CheckOutcome;
use offcert::family::offmate::Offmate;
use offcert::family::InstanceFile;
use offcert::heuristic::offmate::{self as om, Baseline, PlanSource};
use offcert::model::Instance;
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};

fn compiled(off: &Offmate) -> Instance {
    InstanceFile::Offmate(off.clone()).compile().unwrap()
}

/// The three new bounds, in their registry order.
const LINES: [Lines; 3] = [Lines::Cpu, Lines::Traffic, Lines::Turnaround];

/// Every checked period of the OFFMATE heuristics and of `plans` random
/// realised plans on `off`.
fn checked_periods(off: &Offmate, inst: &Instance, d: &mut Draw, plans: usize) -> Vec<i64> {
    let file = InstanceFile::Offmate(off.clone());
    let mut out = Vec::new();
    for h in om::heuristics() {
        if let Ok(r) = offcert::heuristic::run(h.as_ref(), &file, inst) {
            out.push(r.checked.report().makespan.0);
        }
    }
    for _ in 0..plans {
        let plan = offmate_plan(d, off);
        let run = om::run_plan(off, inst, &plan, PlanSource::Baseline(Baseline::AllGpu)).unwrap();
        if let CheckOutcome::Valid(c) = &run.outcome {
            out.push(c.report().makespan.0);
        }
    }
    out
}

static TESTED: AtomicUsize = AtomicUsize::new(0);
static ABOVE_VOLUME: AtomicUsize = AtomicUsize::new(0);
static KEPT_ABOVE: AtomicUsize = AtomicUsize::new(0);

/// Each new bound ≤ the least checked period found, and the chain
/// compute ≤ cpu, volume ≤ traffic ≤ turnaround ≤ kept holds.
#[test]
fn forced_bounds_are_below_every_checked_period() {
    fn prop(bytes: Vec<u8>, tight: bool) -> TestResult {
        let mut d = Draw::new(&bytes);
        let off = offmate_instance(&mut d, tight);
        let inst = compiled(&off);
        let values: Vec<_> = LINES.iter().map(|&w| forced_bound(&off, w)).collect();
        assert!(values[0] >= period_bound(&off, false), "{off:?}");
        assert!(values[1] >= period_bound(&off, true), "{off:?}");
        assert!(values[2] >= values[1], "{off:?}");
        let kept = kept_bound(&off);
        assert!(kept >= values[2], "{off:?}");
        let periods = checked_periods(&off, &inst, &mut d, 6);
        let Some(&best) = periods.iter().min() else {
            return TestResult::discard();
        };
        for (w, v) in LINES.iter().zip(&values) {
            let ceil = v.ceil().to_integer();
            assert!(
                ceil <= best.into(),
                "{w:?} = {v} above the checked period {best} on {off:?}"
            );
        }
        assert!(
            kept.ceil().to_integer() <= best.into(),
            "offmate-kept = {kept} above the checked period {best} on {off:?}"
        );
        if kept > values[2] {
            KEPT_ABOVE.fetch_add(1, Ordering::Relaxed);
        }
        TESTED.fetch_add(1, Ordering::Relaxed);
        if values[2] > period_bound(&off, true) {
            ABOVE_VOLUME.fetch_add(1, Ordering::Relaxed);
        }
        TestResult::passed()
    }
    qc(200, 150).quickcheck(prop as fn(Vec<u8>, bool) -> TestResult);
    for (what, n) in [("tested", &TESTED), ("above offmate-volume", &ABOVE_VOLUME)] {
        assert!(n.load(Ordering::Relaxed) >= 10, "{what}: {n:?}");
    }
    eprintln!("offmate-kept above offmate-turnaround on {KEPT_ABOVE:?}");
}

/// Two frozen 20 B parameters, one per block, M = 25, β = 1, every op 1 tick.
/// At the start of B2 the GPU holds x0, x1, x2 (1 B each), g1 (1 B, B2's
/// output) and w2, so w1 is off the GPU; S + X + |g1| − M = 40 + 3 + 1 − 25 =
/// 19 B must come in after both forwards: turnaround 2 + 19 = 21, the link
/// volume alone 19, GPU and CPU 4. Every checked period found is ≥ 21.
#[test]
fn turnaround_by_hand() {
    let text = r#"{"family": "offmate", "name": "two-frozen", "input": 1,
      "blocks": [
        {"name": "b1", "out": 1, "params": ["w1"],
         "options": [{"t_fwd": 1, "t_bwd": 1, "saved": 0, "offloaded": 0}]},
        {"name": "b2", "out": 1, "params": ["w2"],
         "options": [{"t_fwd": 1, "t_bwd": 1, "saved": 0, "offloaded": 0}]}],
      "params": [{"name": "w1", "bytes": 20, "trainable": false},
                 {"name": "w2", "bytes": 20, "trainable": false}],
      "optimizer": {"states": 2, "gpu_speed": 1, "cpu_speed": 1},
      "gpu_memory": 25, "cpu_memory": 1000, "bandwidth": 1}"#;
    let file: InstanceFile = offcert::io::parse_instance_file("two-frozen.json", text).unwrap();
    let off = file.offmate().unwrap().clone();
    let int = |n: i64| num_rational::BigRational::from_integer(n.into());
    assert_eq!(forced_bound(&off, Lines::Cpu), int(4));
    assert_eq!(forced_bound(&off, Lines::Traffic), int(19));
    assert_eq!(forced_bound(&off, Lines::Turnaround), int(21));
    let inst = compiled(&off);
    let mut d = Draw::new(&[3, 1, 4, 1, 5, 9, 2, 6]);
    for p in checked_periods(&off, &inst, &mut d, 40) {
        assert!(p >= 21, "checked period {p}");
    }
}

/// On the RTX 3090 row the turnaround bound is strictly above `offmate-volume`
/// and `offmate-cpu` strictly above `offmate-compute` (H = 50 ms counts).
#[test]
fn llama_3090_bounds_rise() {
    let path = repo().join("instances/paper/offmate/llama2-7b-rtx3090.json");
    let (file, _) = offcert::io::load_instance(&path).unwrap();
    let off = file.offmate().unwrap();
    assert!(forced_bound(off, Lines::Cpu) > period_bound(off, false));
    assert!(forced_bound(off, Lines::Turnaround) > period_bound(off, true));
    assert!(forced_bound(off, Lines::Turnaround) >= forced_bound(off, Lines::Cpu));
}
