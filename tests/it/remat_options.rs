//! Several options per block (rockmate's `RK_Chain`, issue 11 §1) in `rotor`
//! and the bounds: a hand-derived 2-block, 2-option chain; a property on random
//! multi-option chains (rotor's schedule is the checker's, runs each block's
//! forward and backward with the same option, sits above `remat-compute` and
//! `remat-split`; one option per block gives exactly the single-option
//! result); `offcert import rockmate` → `offcert gap` end to end. The search
//! and the MILP on multi-option chains are tested in `groups_exact.rs`; pofo
//! and offload-only with several options: `tests/it/remat_pofo_run.rs`.

use crate::common;

use common::*;
use num_rational::BigRational;
use offcert::bound::remat::{split_bound, RematCompute, RematSplit};
use offcert::bound::BoundMethod;
use offcert::family::remat_chain::{RematChain, RematLayer, RematLoss, RematOption};
use offcert::family::remat_import::{import_rockmate, ImportOptions};
use offcert::family::{BandwidthFile, InstanceFile};
use offcert::heuristic::remat::rotor::{Rotor, Table};
use offcert::heuristic::{self, HeuristicError, HeuristicRun};
use offcert::model::Instance;
use offcert::schedule::Event;
use offcert::units::Ticks;
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The compute ops of a checked schedule, by name, in start order.
fn names(run: &HeuristicRun, inst: &Instance) -> Vec<String> {
    let mut ev: Vec<(Ticks, String)> = run
        .checked
        .schedule()
        .events
        .iter()
        .filter_map(|e| match *e {
            Event::Compute { op, start, .. } => Some((start, inst.op(op).name.clone())),
            _ => None,
        })
        .collect();
    ev.sort_by_key(|e| e.0);
    ev.into_iter().map(|e| e.1).collect()
}

fn opt(u_f: i64, u_b: i64, abar: u64) -> RematOption {
    RematOption {
        u_f,
        u_b,
        abar,
        o_f: 0,
        o_b: 0,
    }
}

/// Two blocks, each with option 0 (u_F 1, u_B 1, |ā| 5) and option 1 (u_F 2,
/// u_B 2, |ā| 2); |a_0| = |a_1| = |a_2| = 1 (δ = a), no scratch; the fast
/// forward is option 0's (1 tick); the loss: u_F 0, u_B 1, ā 0. This is also
/// `RK_TWO` imported with ticks of 1 ms.
fn two_by_two(gpu_memory: u64) -> RematChain {
    let layer = RematLayer {
        u_f: 1,
        u_b: 1,
        a: 1,
        abar: 5,
        options: vec![opt(2, 2, 2)],
        ..Default::default()
    };
    RematChain {
        name: "two-by-two".into(),
        note: None,
        layers: vec![layer.clone(), layer],
        loss: RematLoss {
            u_f: 0,
            u_b: 1,
            abar: 0,
            o_f: 0,
            o_b: 0,
        },
        a0: 1,
        delta0: None,
        gpu_memory,
        bandwidth: BandwidthFile::PerTick(1),
        release: Default::default(),
        allocator: Default::default(),
    }
}

/// `two_by_two` as rockmate's `RK_Chain` dump (cbw[i+1][k] is block i's |ā|).
const RK_TWO: &str = r#"{"ln": 2,
    "fw": [[1, 2], [1, 2]], "bw": [[1, 2], [1, 2], [1]],
    "cw": [1, 1, 1], "cbw": [[], [5, 2], [5, 2]],
    "fwd_tmp": [[0, 0], [0, 0]], "bwd_tmp": [[0, 0], [0, 0], [0]],
    "ff_fw": [1, 1], "ff_fwd_tmp": [0, 0], "nb_sol": [2, 2]}"#;

/// Known answers of rotor on `two_by_two`, derived by hand. Slots are bytes
/// (M ≤ 500); C(i, j, m) as in `src/heuristic/remat/rotor.rs`, m = M − |a_0|.
///
/// Blocks alone (δ_i held): C(1,1,m) and C(2,2,m) are 2 with option 0 (peak
/// of B: δ + ā + δ = 1 + 5 + 1 = 7 ≤ m) and 4 with option 1 (1 + 2 + 1 = 4 ≤ m).
/// The loss C(3,3,m) = 0 + 1 = 1 for m ≥ δ_2 = 1.
///
/// C(2,3,m'): F_all opt 0 needs m' ≥ 7 and m' − 5 ≥ 1: 2 + 1 = 3; opt 1 needs
/// m' ≥ 4: 4 + 1 = 5; checkpointing a_2 costs 1 + 1 + C(2,2,m') ≥ 4. So 3
/// (m' ≥ 7), 5 (4 ≤ m' ≤ 6), none below 4.
///
/// C(1,2,m) (δ_2 held, needed by the last choice below): opt 0 first: 2 +
/// C(2,2,m−5) = 4 (m ≥ 12) or 6 (m ≥ 9); opt 1 first: 4 + C(2,2,m−2) = 6
/// (m ≥ 9) or 8 (m ≥ 6); checkpoint a_1: 1 + C(2,2,m−1) + C(1,1,m) = 5
/// (m ≥ 8), 7 (m = 7), 9 (m = 5, 6). So 9, 8, 7, 5, 4 at m = 5, 6, 7, 8..11, ≥ 12.
///
/// C(1,3,m): (a) opt 0 first: 2 + C(2,3,m−5): 5 (m ≥ 12), 7 (9..11);
/// (b) opt 1 first: 4 + C(2,3,m−2): 7 (m ≥ 9), 9 (6..8);
/// (c) checkpoint a_1: 1 + C(2,3,m−1) + C(1,1,m): 6 (m ≥ 8), 1 + 5 + 2 = 8
/// (m = 7), 1 + 5 + 4 = 10 (m = 5, 6), none at 4;
/// (d) checkpoint a_2: 2 + C(3,3,m−1) + C(1,2,m) = 3 + C(1,2,m): 7, 8, 10, 11,
/// 12 at m ≥ 12, 8..11, 7, 6, 5.
/// Least: m ≥ 12 → 5 (a); 8..11 → 6 (c); 7 → 8 (c); 6 → 9 (b); 5 → 10 (c);
/// 4 → none. In M = m + 1: 13+ → 5, 9..12 → 6, 8 → 8, 7 → 9, 6 → 10, ≤ 5 → none.
///
/// At M = 8, (c) with C(2,3,6) by opt 1 first (opt 0 needs 7; checkpointing
/// a_2 costs 6 > 5) and C(1,1,7) by opt 0: F1, Fall2.1, Fall3, B3, B2.1
/// (then a_1 deleted), Fall1.0, B1.0: 1 + 2 + 0 + 1 + 2 + 1 + 1 = 8 ticks,
/// block 2 with option 1 and block 1 with option 0, each forward and backward
/// with the same option. Memory (a0 always held): B1.0 holds a0 1 + d1 1 + a1 1
/// + s1.0 4 + d0 1 = 8 = M. With only the fastest option (option 0 per block,
/// `--fastest-only`) at M = 8: (a) needs C(2,3,2), (c) C(2,3,6), (d) C(1,2,7)
/// = ∞ without option 1 (its choices need m − 5 ≥ 7 or C(2,2,6)): no plan.
///
/// Bounds at M = 8: `remat-compute` = min(1+1, 2+2)·2 + 0 + 1 = 5;
/// `remat-split`: B = 5 + the shortest forward (the loss's 0) = 5, V = (a0 +
/// a1 + min s1 + min s2 + a2 + s3 + d2 − 8)⁺ = (1+1+1+1+1+0+1 − 8)⁺ = 0, A =
/// Σ min u_F + Σ min u_B = 2 + 3 = 5: 5.
#[test]
fn rotor_on_two_blocks_with_two_options_by_hand() {
    for (m, want) in [
        (14, Some(5)),
        (13, Some(5)),
        (12, Some(6)),
        (9, Some(6)),
        (8, Some(8)),
        (7, Some(9)),
        (6, Some(10)),
        (5, None),
    ] {
        assert_eq!(Table::build(&two_by_two(m), 500).value(), want, "M = {m}");
    }
    let c = two_by_two(8);
    assert_eq!(c.min_memory(), Some(5));
    let f = InstanceFile::RematChain(c.clone());
    let inst = f.compile().unwrap();
    let run = heuristic::run(&Rotor::default(), &f, &inst).unwrap();
    assert_eq!(
        names(&run, &inst),
        ["F1", "Fall2.1", "Fall3", "B3", "B2.1", "Fall1.0", "B1.0"]
    );
    let r = run.checked.report();
    assert_eq!((r.makespan, r.peak_memory.0), (Ticks(8), 8));
    let five = BigRational::from_integer(5.into());
    assert_eq!(RematCompute.bound(&f, &inst).unwrap().value, five);
    assert_eq!(RematSplit.bound(&f, &inst).unwrap().value, five);
    // Only the fastest option per block: no plan at 8 B.
    let mut fast = c.clone();
    for x in &mut fast.layers {
        x.options.clear();
    }
    assert_eq!(Table::build(&fast, 500).value(), None);
    // Every remat heuristic takes several options (issue 23, item 4): a
    // checked schedule or no plan, never a refusal; pofo-as-run is never
    // above rotor's 8.
    for h in heuristic::remat::heuristics() {
        match heuristic::run(h.as_ref(), &f, &inst) {
            Ok(r) if h.name() == "pofo-as-run" => assert!(r.checked.makespan() <= Ticks(8)),
            Ok(_) | Err(HeuristicError::NoSchedule { .. }) => {}
            Err(e) => panic!("{}: {e}", h.name()),
        }
    }
}

/// `RK_TWO` imports as `two_by_two` (ticks of 1 ms, sizes in bytes).
#[test]
fn the_rockmate_dump_is_the_hand_chain() {
    let o = ImportOptions {
        name: "rk".into(),
        gpu_memory: Some(8),
        bandwidth: Some(1),
        ..import_options()
    };
    let c = import_rockmate(RK_TWO, &o).unwrap();
    let want = two_by_two(8);
    assert_eq!((&c.loss, c.a0, c.gpu_memory), (&want.loss, 1, 8));
    for (x, y) in c.layers.iter().zip(&want.layers) {
        assert_eq!(
            (x.u_f, x.u_b, x.a, x.abar, &x.options),
            (y.u_f, y.u_b, y.a, y.abar, &y.options)
        );
        assert_eq!(x.ff_u_f.unwrap_or(x.u_f), 1);
        assert_eq!(x.ff_o_f.unwrap_or(x.o_f), 0);
    }
    assert_eq!(Table::build(&c, 500).value(), Some(8));
}

type Layers = Vec<(u8, u8, u8, u8, u8, u8)>;
type Extra = Vec<(u8, u8, u8, u8)>;

static RAN: AtomicUsize = AtomicUsize::new(0);
static OTHER_OPTION: AtomicUsize = AtomicUsize::new(0);
static RECOMPUTED: AtomicUsize = AtomicUsize::new(0);
static FAST_FORWARD: AtomicUsize = AtomicUsize::new(0);
static OPTIONS_HELP: AtomicUsize = AtomicUsize::new(0);
static SPLIT_STRONGER: AtomicUsize = AtomicUsize::new(0);

/// Per block with several options: the option of `B{ℓ}.{k}`; error unless it
/// runs once and every `Fall{ℓ}.{k'}` run has k' = k.
pub(crate) fn chosen(c: &RematChain, names: &[String]) -> Result<Vec<usize>, String> {
    let mut out = vec![];
    for l in 1..=c.l() {
        if c.layers[l - 1].options.is_empty() {
            out.push(0);
            continue;
        }
        let of = |p: &str| -> Vec<usize> {
            names
                .iter()
                .filter_map(|n| n.strip_prefix(&format!("{p}{l}.")))
                .map(|k| k.parse().unwrap())
                .collect()
        };
        let (f, b) = (of("Fall"), of("B"));
        if b.len() != 1 || f.is_empty() || f.iter().any(|k| *k != b[0]) {
            return Err(format!("layer {l}: forwards {f:?}, backwards {b:?}"));
        }
        out.push(b[0]);
    }
    Ok(out)
}

/// Layer ℓ with its own fields replaced by option `k` (one option per block,
/// the fast forward kept).
pub(crate) fn restrict(c: &RematChain, pick: &[usize]) -> RematChain {
    let mut r = c.clone();
    for (l, x) in r.layers.iter_mut().enumerate() {
        let o = c.options_of(l + 1)[pick[l] % (x.options.len() + 1)].clone();
        x.ff_u_f = Some(x.ff_u_f.unwrap_or(x.u_f));
        x.ff_o_f = Some(x.ff_o_f.unwrap_or(x.o_f));
        (x.u_f, x.u_b, x.abar, x.o_f, x.o_b) = (o.u_f, o.u_b, o.abar, o.o_f, o.o_b);
        x.options.clear();
    }
    r
}

/// `c` with one option per block (option 0) against the same chain whose
/// blocks also have option 0 made worse (u_F, |ā|, o_b one more) and option 0
/// again: the same DP value, the same checked makespan and the same op
/// sequence (`.0` dropped from the names).
fn one_option_is_the_single_option_result(c: &RematChain) -> Result<(), String> {
    let single = restrict(c, &vec![0; c.l()]);
    let mut dup = single.clone();
    for x in &mut dup.layers {
        let o = RematOption {
            u_f: x.u_f,
            u_b: x.u_b,
            abar: x.abar,
            o_f: x.o_f,
            o_b: x.o_b,
        };
        let worse = RematOption {
            u_f: o.u_f + 1,
            abar: o.abar + 1,
            o_b: o.o_b + 1,
            ..o.clone()
        };
        x.options = vec![worse, o];
    }
    let (a, b) = (Table::build(&single, 500), Table::build(&dup, 500));
    if a.value() != b.value() {
        return Err(format!(
            "single {:?}, with options {:?}",
            a.value(),
            b.value()
        ));
    }
    let run = |c: &RematChain| {
        let f = InstanceFile::RematChain(c.clone());
        let inst = f.compile().unwrap();
        heuristic::run(&Rotor::default(), &f, &inst).map(|r| {
            let n: Vec<String> = names(&r, &inst)
                .into_iter()
                .map(|n| n.trim_end_matches(".0").to_string())
                .collect();
            (r.checked.report().makespan, n)
        })
    };
    match (run(&single), run(&dup)) {
        // Ties go to the first option: `dup` runs its option 0 (= `single`'s).
        (Ok(x), Ok(y)) if x == y => Ok(()),
        (Err(_), Err(_)) => Ok(()),
        (x, y) => Err(format!(
            "single {:?}, with options {:?}",
            x.map(|r| r.0),
            y.map(|r| r.0)
        )),
    }
}

fn prop(spec: Layers, extra: Extra, bw: u8, slack: u8) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let c = remat_options_chain(&spec, &extra, bw, slack);
    let json = serde_json::to_string(&c).unwrap();
    let f = InstanceFile::RematChain(c.clone());
    let inst = f.compile().unwrap();
    if let Err(e) = one_option_is_the_single_option_result(&c) {
        return TestResult::error(format!("{json}: {e}"));
    }
    let t = Table::build(&c, 500);
    // More options never hurt the DP: every one-option-per-block restriction
    // is at least as slow.
    let pick: Vec<usize> = (0..c.l()).map(|l| (slack as usize >> l) & 3).collect();
    let r = Table::build(&restrict(&c, &pick), 500).value();
    if r.unwrap_or(i64::MAX) < t.value().unwrap_or(i64::MAX) {
        return TestResult::error(format!("{json}: restricted {r:?} < {:?}", t.value()));
    }
    if r.unwrap_or(i64::MAX) > t.value().unwrap_or(i64::MAX) {
        OPTIONS_HELP.fetch_add(1, Ordering::Relaxed);
    }
    let run = match heuristic::run(&Rotor::default(), &f, &inst) {
        Ok(run) => run,
        Err(HeuristicError::NoSchedule { .. }) if t.value().is_none() => {
            return TestResult::discard()
        }
        Err(e) => return TestResult::error(format!("{json}: {e}")),
    };
    let m = run.checked.report().makespan.0;
    let compute = RematCompute.bound(&f, &inst).unwrap().ceil_ticks();
    let split = RematSplit.bound(&f, &inst).unwrap().ceil_ticks();
    if m < compute || m < split {
        return TestResult::error(format!("{json}: makespan {m} below {compute} or {split}"));
    }
    if split > compute {
        SPLIT_STRONGER.fetch_add(1, Ordering::Relaxed);
    }
    // No transfers, no idle: the makespan is the DP's value when every
    // backward lasts (see tests/remat.rs for the zero-duration case).
    let dp = t.value().unwrap();
    let positive = c.loss.u_b > 0 && (1..=c.l()).all(|l| c.options_of(l).iter().all(|o| o.u_b > 0));
    if (positive && dp != m) || dp > m {
        return TestResult::error(format!("{json}: DP {dp}, makespan {m}"));
    }
    let n = names(&run, &inst);
    match chosen(&c, &n) {
        Ok(ks) if ks.iter().any(|k| *k > 0) => {
            OTHER_OPTION.fetch_add(1, Ordering::Relaxed);
        }
        Ok(_) => {}
        Err(e) => return TestResult::error(format!("{json}: {e}")),
    }
    if n.len() > 2 * (c.l() + 1) {
        RECOMPUTED.fetch_add(1, Ordering::Relaxed);
        if c.layers.iter().any(|x| x.ff_u_f.is_some()) {
            FAST_FORWARD.fetch_add(1, Ordering::Relaxed);
        }
    }
    RAN.fetch_add(1, Ordering::Relaxed);
    TestResult::passed()
}

/// Random chains of 1–4 blocks with 1–3 options each, memory from the least
/// feasible up (mostly tight). Not vacuous: rotor runs, picks options other
/// than 0, recomputes (also with a fast forward), options beat a one-option
/// restriction, and `remat-split` beats `remat-compute`.
#[test]
fn rotor_with_options_is_checked_above_the_bounds_and_one_option_is_unchanged() {
    // 1,500 cases (about 0.4 s): `remat-split` beats `remat-compute` in about
    // 1.3 % of them (20 expected; at 400 cases, 3 was seen).
    qc(1500, 500).quickcheck(prop as fn(Layers, Extra, u8, u8) -> TestResult);
    let counts = [
        ("ran", &RAN),
        ("other option", &OTHER_OPTION),
        ("recomputed", &RECOMPUTED),
        ("fast forward", &FAST_FORWARD),
        ("options help", &OPTIONS_HELP),
        ("split stronger", &SPLIT_STRONGER),
    ];
    eprintln!("{:?}", counts.map(|(n, c)| (n, c.load(Ordering::Relaxed))));
    for (name, c) in counts {
        assert!(c.load(Ordering::Relaxed) >= 5, "{name}: {c:?}");
    }
}

/// `split_bound` with one option per block is the appendix's bound: adding
/// worse options to every block changes nothing.
#[test]
fn split_bound_ignores_dominated_options() {
    for m in 5..=14 {
        let c = two_by_two(m);
        let mut worse = c.clone();
        for x in &mut worse.layers {
            x.options.push(opt(9, 9, 9));
        }
        assert_eq!(split_bound(&c), split_bound(&worse), "M = {m}");
    }
}

/// `offcert import rockmate` (every option) then `offcert gap`: a rotor row
/// with its checked makespan (8 at 8 B, as derived above), pofo and
/// offload-only refused by name, and a certified bound of 5.
#[test]
fn import_rockmate_then_gap_prints_rotor_and_a_certified_bound() {
    let dir = std::env::temp_dir().join(format!("offcert-rk-gap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("rk.json");
    std::fs::write(&src, RK_TWO).unwrap();
    let out = dir.join("c.json");
    let bin = env!("CARGO_BIN_EXE_offcert");
    let st = std::process::Command::new(bin)
        .args(["import", "rockmate"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .args(["--tick-us", "1000", "--gpu-memory", "8"])
        .output()
        .unwrap();
    assert_eq!(
        st.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    // Blocks, not ops: the import once counted every backward option as a layer.
    let said = String::from_utf8_lossy(&st.stdout);
    assert!(said.contains("2 layers + loss (4 options)"), "{said}");
    let st = std::process::Command::new(bin)
        .args(["gap", "--quiet"])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&st.stdout);
    assert_eq!(
        st.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let row = |h: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(h))
            .unwrap_or_else(|| panic!("no {h} row: {text}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(row("rotor")[1..3], ["valid", "8"], "{text}");
    // pofo-as-run is never above rotor; pofo and offload-only take the
    // options too (issue 23, item 4).
    let as_run = row("pofo-as-run");
    assert_eq!(as_run[1], "valid", "{text}");
    assert!(as_run[2].parse::<i64>().unwrap() <= 8, "{text}");
    for h in ["pofo", "offload-only"] {
        assert_ne!(row(h)[1], "refused", "{text}");
    }
    // remat-compute gives 5; the relaxed search (no sequence limit) 7,
    // which pofo's checked 7 meets: the row's optimum is certified.
    assert!(
        text.contains("also 5 ticks: remat-compute, lower bound (certified)")
            && text.contains("best certified bound 7 ticks: remat-relaxed-search")
            && text.contains("optimum 7 ticks: optimal (certified)"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
