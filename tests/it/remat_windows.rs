//! `remat-windows` (`proofs/REMAT-BOUNDS.md`): its hand check, where it meets
//! the relaxed search's optimum and the knapsacks do not; on random tight
//! chains (one option per block, 1–3 layers; several options and fast
//! forwards, 1–2 blocks) it is at least `remat-knapsack-every` and at most
//! the relaxed search's optimum and every checked makespan found (each remat
//! heuristic's, the re-planned one, the search's best within its sequence
//! limits on 1–2 layers). Also: every bound's name fits `offcert bound`'s
//! name column.

use crate::common;

use common::*;
use num_bigint::BigInt;
use num_rational::BigRational;
use offcert::bound::remat::knapsack::knapsack_every_bound;
use offcert::bound::remat::relaxed::{relaxed_optimum, Outcome};
use offcert::bound::remat::windows::{windows_bound, RematWindows};
use offcert::bound::BoundMethod;
use offcert::exact::Method;
use offcert::family::remat_chain::RematChain;
use offcert::family::InstanceFile;
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};

fn q(n: i64) -> BigRational {
    BigRational::from_integer(BigInt::from(n))
}

/// One layer (u 1/1, |a_1| 1, |ā_1| 2), the loss (u 1/1, ā 3 B), |a_0| 2,
/// 1 B/tick, 7 B (`remat_relaxed::relaxed_search_hand_check`'s chain, whose
/// optimum is 5 and whose knapsacks say 4). While B_2 runs it holds
/// a1 + s2 + d1 = 5 B, so with a0 (2 B) nothing of s1 (1 B) fits: V = 1 B.
/// s1 comes back between B_2's end and B_1's start, with no backward in
/// between: D(2, 1) = min(1 B / 1 B per tick, recomputing layer 1: 1 tick)
/// = 1; H(1) = u_B(1) = 1, H(2) = 1 + 1 + 1 = 3. At B_2: Σ_F = 2 before it,
/// V = 1 B (1 tick), after it max(2, 1, H(2) = 3) = 3: g(0) = 2 + 3 = 5, and
/// recomputing (X = 0) gives 2 + 3 = 5. So `remat-windows` = 5.
#[test]
fn windows_hand_check() {
    let json = r#"{"family": "remat_chain", "name": "hand-prefetch",
        "layers": [{"u_f": 1, "u_b": 1, "a": 1, "abar": 2}],
        "loss": {"u_f": 1, "u_b": 1, "abar": 3}, "a0": 2, "gpu_memory": 7, "bandwidth": 1}"#;
    let (f, inst) = offcert::io::parse_instance("hand.json", json).unwrap();
    let InstanceFile::RematChain(c) = &f else {
        panic!("not a remat chain")
    };
    assert_eq!(c.min_memory(), Some(7));
    assert_eq!(knapsack_every_bound(c), q(4));
    let h = offcert::bound::remat::windows::after_floors(c);
    assert_eq!(h[1..], [q(1), q(3)]);
    assert_eq!(windows_bound(c), q(5));
    assert_eq!(RematWindows.bound(&f, &inst).unwrap().ceil_ticks(), 5);
    assert_eq!(relaxed_optimum(&inst).unwrap(), Outcome::Optimum(5));
}

/// ResNet-50 at its least memory: the backward windows of the first blocks
/// (B_3..B_6 fill the GPU with their scratch) add to `remat-knapsack-every`.
#[test]
fn windows_raise_knapsack_every_on_resnet50_at_its_least_memory() {
    let path = repo().join("instances/paper/remat/resnet50-224px-b32-remat.json");
    let (f, _) = offcert::io::load_instance(&path).unwrap();
    let InstanceFile::RematChain(mut c) = f else {
        panic!("not a remat chain")
    };
    c.gpu_memory = c.min_memory().unwrap();
    assert!(windows_bound(&c) > knapsack_every_bound(&c));
}

#[test]
fn every_bound_name_fits_the_name_column() {
    for b in offcert::bound::all() {
        assert!(
            b.name().chars().count() <= offcert::bound::NAME_WIDTH,
            "{}",
            b.name()
        );
    }
}

static COMPARED: AtomicUsize = AtomicUsize::new(0);
static ABOVE_EVERY: AtomicUsize = AtomicUsize::new(0);
static MEETS_RELAXED: AtomicUsize = AtomicUsize::new(0);

fn windows_below(c: &RematChain, exact: bool) -> TestResult {
    let json = serde_json::to_string(c).unwrap();
    let f = InstanceFile::RematChain(c.clone());
    let inst = f.compile().unwrap();
    let (every, w) = (knapsack_every_bound(c), windows_bound(c));
    if w < every {
        return TestResult::error(format!("{json}: windows {w} below knapsack-every {every}"));
    }
    let relaxed = match relaxed_optimum(&inst) {
        Ok(Outcome::Optimum(t)) => Some(t),
        Ok(Outcome::AtLeast(_)) => None,
        Ok(Outcome::Infeasible) => return TestResult::discard(),
        Err(e) => return TestResult::error(format!("{json}: {e}")),
    };
    if let Some(t) = relaxed {
        if w > q(t) {
            return TestResult::error(format!("{json}: windows {w} above the relaxed optimum {t}"));
        }
    }
    let methods: &[Method] = if exact { &[Method::Search] } else { &[] };
    let Some(best) = remat_best_checked(c, methods, 100) else {
        return TestResult::discard();
    };
    if w > q(best) {
        return TestResult::error(format!(
            "{json}: windows {w} above the valid makespan {best}"
        ));
    }
    COMPARED.fetch_add(1, Ordering::Relaxed);
    ABOVE_EVERY.fetch_add((w > every) as usize, Ordering::Relaxed);
    let meets = relaxed.is_some_and(|t| w.ceil() == q(t));
    MEETS_RELAXED.fetch_add(meets as usize, Ordering::Relaxed);
    TestResult::passed()
}

type Spec = Vec<(u8, u8, u8, u8, u8)>;

fn one_option(spec: Spec, bw: u8, slack: u8) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let c = tight_remat_chain(&spec, 3, bw, slack);
    windows_below(&c, c.l() <= 2)
}

#[test]
fn windows_is_between_knapsack_every_and_every_checked_makespan() {
    qc(40, 20).quickcheck(one_option as fn(Spec, u8, u8) -> TestResult);
    eprintln!(
        "remat-windows: {} chains compared, above remat-knapsack-every on {}, \
         ⌈⌉ = the relaxed optimum on {}",
        COMPARED.load(Ordering::Relaxed),
        ABOVE_EVERY.load(Ordering::Relaxed),
        MEETS_RELAXED.load(Ordering::Relaxed)
    );
}

type OptSpec = Vec<(u8, u8, u8, u8, u8, u8)>;

fn several_options(spec: OptSpec, extra: Vec<(u8, u8, u8, u8)>, bw: u8, slack: u8) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let spec: OptSpec = spec.into_iter().take(2).collect();
    let c = remat_options_chain(&spec, &extra, bw, slack);
    windows_below(&c, true)
}

#[test]
fn windows_with_several_options_is_below_every_checked_makespan() {
    qc(20, 8)
        .quickcheck(several_options as fn(OptSpec, Vec<(u8, u8, u8, u8)>, u8, u8) -> TestResult);
}
