//! `pofo`'s table-driven programme against its first, map-memoised version
//! (`tests/pofo_reference`, kept as the oracle): on random chains, for every
//! setting of the four switches and several discretisations, the same model
//! value (bit for bit) and the same op sequence, or both no plan. And pofo
//! without offloading against rotor's DP on the same chains (coarse slots).

use crate::common;
use crate::pofo_reference;

use common::*;
use offcert::family::remat_chain::{RematChain, RematLayer, RematLoss};
use offcert::family::BandwidthFile;
use offcert::heuristic::remat::pofo::Pofo;
use offcert::heuristic::remat::rotor::Table;
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A random chain of 1..=9 layers, sizes scaled by 1..=40 bytes (so that a
/// slot holds several bytes and rounding matters), memory skewed towards the
/// least feasible only mildly (the printed programme often finds no plan
/// near it).
fn chain(spec: &[(u8, u8, u8, u8, u8)], bw: u8, slack: u8, scale: u8) -> RematChain {
    let k = 1 + (scale % 40) as u64;
    let layers = spec
        .iter()
        .take(9)
        .map(|&(uf, ub, a, s, o)| RematLayer {
            u_f: 1 + (uf % 7) as i64,
            u_b: (ub % 9) as i64,
            a: k * (1 + (a % 6) as u64) + (a / 6 % 3) as u64,
            abar: k * (1 + (a % 6) as u64 + (s % 4) as u64) + (a / 6 % 3) as u64,
            o_f: k * (o % 2) as u64,
            o_b: k * (o / 2 % 3) as u64 + (o / 6 % 2) as u64,
            delta: (s / 4 % 3 == 0).then_some(k * (s / 12 % 4) as u64),
            ..Default::default()
        })
        .collect();
    let mut c = RematChain {
        name: "random-remat".into(),
        note: None,
        layers,
        loss: RematLoss {
            u_f: (bw / 8 % 2) as i64,
            u_b: 1,
            abar: k * (bw / 16 % 3) as u64,
            o_f: 0,
            o_b: 0,
        },
        a0: k * (1 + (bw / 48 % 3) as u64),
        delta0: None,
        gpu_memory: 0,
        bandwidth: BandwidthFile::Ratio {
            bytes: 1 + (bw % 3) as u64 * k,
            ticks: 1 + (bw / 3 % 2) as u64,
        },
        release: Default::default(),
        allocator: Default::default(),
    };
    let lo = c.min_memory().unwrap();
    let hi = c.store_all_peak().unwrap();
    let span = hi.saturating_sub(lo) + 1;
    c.gpu_memory = lo + span * slack as u64 / 256;
    c
}

static SAME_PLAN: AtomicUsize = AtomicUsize::new(0);

#[test]
fn the_table_programme_is_the_reference_programme() {
    fn prop(spec: Vec<(u8, u8, u8, u8, u8)>, bw: u8, slack: u8, scale: u8, sw: u8) -> TestResult {
        if spec.is_empty() {
            return TestResult::discard();
        }
        let c = chain(&spec, bw, slack, scale);
        let p = Pofo {
            slots: [50, 20, 7, 50][(sw >> 4) as usize % 4],
            remat: sw & 1 == 0,
            run_to_loss: sw & 2 != 0,
            forward_delta: sw & 4 == 0,
            offload: sw & 8 == 0,
            ..Pofo::default()
        };
        let new = p.solve_afresh(&c).map(|x| (x.model_value, x.sequence));
        let old = pofo_reference::solve(&p, &c);
        match (&new, &old) {
            (None, None) => TestResult::passed(),
            (Some((v, s)), Some((w, t))) if v.to_bits() == w.to_bits() && s == t => {
                SAME_PLAN.fetch_add(1, Ordering::Relaxed);
                TestResult::passed()
            }
            _ => TestResult::error(format!(
                "{p:?} on {}: table {new:?}, reference {old:?}",
                serde_json::to_string(&c).unwrap()
            )),
        }
    }
    qc(400, 300).quickcheck(prop as fn(Vec<(u8, u8, u8, u8, u8)>, u8, u8, u8, u8) -> TestResult);
    // Not vacuous: most cases have a plan to compare.
    assert!(SAME_PLAN.load(Ordering::Relaxed) >= 150, "{SAME_PLAN:?}");
}

static PERSISTENT_FEASIBLE: AtomicUsize = AtomicUsize::new(0);

/// `tests/remat.rs::pofo_without_offloading_is_rotor` on longer chains (up to
/// 9 layers) whose slots hold several bytes, at 7, 20 and 50 slots: pofo with
/// offloading disabled, no δ_L and runs to the loss has rotor's value.
#[test]
fn pofo_without_offloading_is_rotor_on_coarse_slots() {
    fn prop(spec: Vec<(u8, u8, u8, u8, u8)>, bw: u8, slack: u8, scale: u8, sw: u8) -> TestResult {
        if spec.is_empty() {
            return TestResult::discard();
        }
        let c = chain(&spec, bw, slack, scale);
        let slots = [50, 20, 7][sw as usize % 3];
        let p = Pofo::persistent(slots);
        let dp = p.solve_afresh(&c).map(|x| x.model_value);
        let rotor = Table::build(&c, slots).value();
        match (dp, rotor) {
            (None, None) => TestResult::passed(),
            (Some(x), Some(r)) if x == r as f64 => {
                PERSISTENT_FEASIBLE.fetch_add(1, Ordering::Relaxed);
                TestResult::passed()
            }
            (x, r) => TestResult::error(format!(
                "{slots} slots, {}: pofo without offloading {x:?}, rotor {r:?}",
                serde_json::to_string(&c).unwrap()
            )),
        }
    }
    qc(300, 200).quickcheck(prop as fn(Vec<(u8, u8, u8, u8, u8)>, u8, u8, u8, u8) -> TestResult);
    assert!(
        PERSISTENT_FEASIBLE.load(Ordering::Relaxed) >= 100,
        "{PERSISTENT_FEASIBLE:?}"
    );
}
