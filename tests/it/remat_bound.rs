//! `remat-knapsack` (`proofs/REMAT-BOUNDS.md`): its hand check, and on random
//! tight chains of 1–6 layers it is at most the best *valid* makespan known
//! (on 1–2 layers the exact methods' checked schedule through the remat
//! reduction; everywhere every remat heuristic's checked schedule and the
//! re-planned one: the exact result within
//! sequence limits is only an upper bound on the optimum, so the bound is
//! compared with valid schedules), and at least `remat-split` (which it
//! contains on chains whose layers' forwards last at least a tick).

use crate::common;

use common::*;
use num_bigint::BigInt;
use num_rational::BigRational;
use offcert::bound::remat::knapsack::{knapsack_bound, RematKnapsack};
use offcert::bound::remat::split_bound;
use offcert::bound::BoundMethod;
use offcert::exact::Method;
use offcert::family::remat_chain::{RematChain, RematLayer, RematLoss};
use offcert::family::InstanceFile;
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};

fn layer(u_f: i64, u_b: i64, a: u64, abar: u64) -> RematLayer {
    RematLayer {
        u_f,
        u_b,
        a,
        abar,
        ..Default::default()
    }
}

/// The proof's hand check: three layers (1, 1, |a| 1, |ā| 3), the loss
/// (1, 1, |ā| 1), |a_0| 1, 1 B per 2 ticks, 6 B: 28/3, where remat-split
/// gives 9.
#[test]
fn knapsack_hand_check() {
    let mut c = remat_chain_of("hand", vec![layer(1, 1, 1, 3); 3], 0, RematTail::SMALL);
    c.loss = RematLoss {
        u_f: 1,
        u_b: 1,
        abar: 1,
        o_f: 0,
        o_b: 0,
    };
    c.a0 = 1;
    c.delta0 = None;
    c.gpu_memory = 6;
    c.bandwidth = serde_json::from_str(r#"{"bytes": 1, "ticks": 2}"#).unwrap();
    assert_eq!(c.min_memory(), Some(6));
    let q = |n: i64, d: i64| BigRational::new(BigInt::from(n), BigInt::from(d));
    assert_eq!(knapsack_bound(&c), q(28, 3));
    assert_eq!(split_bound(&c), q(9, 1));
    let f = InstanceFile::RematChain(c);
    let inst = f.compile().unwrap();
    assert_eq!(RematKnapsack.bound(&f, &inst).unwrap().ceil_ticks(), 10);
}

type Spec = Vec<(u8, u8, u8, u8, u8)>;

/// 1..=6 layers (`small_remat_layers`; with `slow`, u_F and u_B times 4, so
/// that transfers fit in the compute and offloading competes with
/// recomputing), memory from the least feasible up by 0..=3 bytes (tight:
/// where both cost).
fn tight_chain(spec: &[(u8, u8, u8, u8, u8)], bw: u8, slack: u8) -> RematChain {
    let layers = small_remat_layers(spec, 6);
    let mut c = remat_chain_of("knapsack", layers, bw, RematTail::SMALL);
    let lo = c.min_memory().unwrap();
    let hi = c.store_all_peak().unwrap();
    c.gpu_memory = lo + (slack as u64 % 4).min(hi - lo);
    if slack / 4 % 2 == 1 {
        for x in &mut c.layers {
            x.u_f *= 4;
            x.u_b *= 4;
        }
    }
    c
}

static COMPARED: AtomicUsize = AtomicUsize::new(0);
static STRONGER: AtomicUsize = AtomicUsize::new(0);

fn below_every_valid_schedule(spec: Spec, bw: u8, slack: u8) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let c = tight_chain(&spec, bw, slack);
    let json = serde_json::to_string(&c).unwrap();
    let kb = knapsack_bound(&c);
    let split = split_bound(&c);
    if kb < split {
        return TestResult::error(format!("{json}: knapsack {kb} below remat-split {split}"));
    }
    // The exact methods where they are quick (1–2 layers); the heuristics and
    // the re-planning everywhere: every makespan kept is a checked one.
    let methods: &[Method] = if c.l() <= 2 {
        &[Method::Search, Method::Milp]
    } else {
        &[]
    };
    let best = remat_best_checked(&c, methods, 300);
    let Some(best) = best else {
        return TestResult::discard();
    };
    if kb > BigRational::from_integer(BigInt::from(best)) {
        return TestResult::error(format!(
            "{json}: remat-knapsack {kb} above the valid makespan {best}"
        ));
    }
    COMPARED.fetch_add(1, Ordering::Relaxed);
    if kb > split {
        STRONGER.fetch_add(1, Ordering::Relaxed);
    }
    TestResult::passed()
}

#[test]
fn knapsack_is_at_most_every_valid_makespan_and_at_least_split() {
    qc(40, 20).quickcheck(below_every_valid_schedule as fn(Spec, u8, u8) -> TestResult);
    eprintln!(
        "remat-knapsack: {} chains compared with a valid schedule, {} strictly above remat-split",
        COMPARED.load(Ordering::Relaxed),
        STRONGER.load(Ordering::Relaxed)
    );
}
