//! The independent re-check (`offcert::recheck`) and the certified checker agree
//! on random activation-chain schedules and random mutations of them. These
//! schedules are built by the simulator (`offcert::simulate`), so this property
//! lives in the `offcert` crate; the other agreement tests (every bundled file,
//! random weight-chain schedules) are the checker's own, in
//! `crates/offcert-core/tests/checker/recheck.rs`.

use crate::common;

use common::*;
use quickcheck::TestResult;

#[test]
fn agree_on_random_activation_schedules_and_their_mutations() {
    fn prop(
        spec: Vec<(u8, u8, u8, u8)>,
        bw: u8,
        slack: u8,
        mask: u16,
        la: u8,
        muts: Vec<(u8, usize, i8)>,
    ) -> TestResult {
        if spec.is_empty() {
            return TestResult::discard();
        }
        let c = activation_chain(&spec, bw, slack);
        let Some((inst, s)) = activation_schedule(&c, mask, la) else {
            return TestResult::discard();
        };
        let r = agree(&inst, &s);
        if !r.valid {
            return TestResult::failed();
        }
        agree_after_mutations(&inst, s, muts);
        TestResult::passed()
    }
    qc(300, 100).quickcheck(prop as fn(_, _, _, _, _, _) -> TestResult);
}
