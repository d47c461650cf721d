//! The independent re-check (`offcert_core::recheck`) and the certified checker give
//! the same verdict, the same broken rules, the same kinds of violation, the same
//! peak memory and the same redundant offloads: on every bundled file, and on
//! random valid schedules of both families and random mutations of them.

use crate::common::*;
use quickcheck::TestResult;

#[test]
fn agree_on_every_bundled_file() {
    let mut n = 0;
    for dir in [
        "instances/examples",
        "instances/fixtures",
        "instances/regressions",
    ] {
        for (i, s) in pairs(&repo().join(dir)) {
            assert_has_note(&i);
            assert_has_note(&s);
            let (inst, sched) = load(&i, &s);
            let r = agree(&inst, &sched);
            let name = s.file_name().unwrap().to_string_lossy().to_string();
            assert_eq!(r.valid, !name.contains(".invalid."), "{name}");
            n += 1;
        }
    }
    assert!(n >= 27, "only {n} bundled schedules");
}

#[test]
fn agree_on_random_weight_schedules_and_their_mutations() {
    fn prop(
        spec: Vec<(u8, u8, u8, u8)>,
        bw: u8,
        keep: Vec<u8>,
        muts: Vec<(u8, usize, i8)>,
    ) -> TestResult {
        if spec.is_empty() {
            return TestResult::discard();
        }
        let c = weight_chain(&spec, bw);
        let keep: Vec<Keep> = keep.iter().map(|b| Keep::from_bits(*b)).collect();
        let (inst, s) = weight_schedule(&c, &keep);
        let r = agree(&inst, &s);
        if !r.valid {
            return TestResult::failed();
        }
        agree_after_mutations(&inst, s, muts);
        TestResult::passed()
    }
    qc(300, 100).quickcheck(prop as fn(_, _, _, _) -> TestResult);
}
