//! The exact methods on variant groups (R11), slots (R12) and `after` (R13):
//! the search and the MILP choose each group's member over every GPU op
//! sequence those rules allow (`exact::variants`, `proofs/SEARCH.md`), and the
//! free-order `remat` reduction chooses each block's option
//! (`proofs/REMAT-EXACT.md`). Properties on random small grouped instances at
//! tight memory (one-shot and cyclic) and on random 2-layer, 2-option remat
//! chains: the schedules pass the checker on the original instance, the two
//! methods agree, and the search's best is at most rotor's; refusals of what
//! stays outside name the feature.

use crate::common;

use common::*;
use offcert::bound::remat::{RematCompute, RematSplit};
use offcert::bound::BoundMethod;
use offcert::check::check;
use offcert::exact::crosscheck::{self, Label};
use offcert::exact::scope::Feature;
use offcert::exact::{self, ExactError, Limits, Method, Outcome, Status};
use offcert::family::{CoreFile, InstanceFile};
use offcert::heuristic;
use offcert::io::load_instance;
use offcert::model::{Extension, Instance};
use offcert::schedule::Event;
use quickcheck::TestResult;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn limits(secs: u64) -> Limits {
    Limits {
        time_limit: Duration::from_secs(secs),
        ..Limits::default()
    }
}

/// A random miniature of OFFMATE's block structure, every op on the GPU:
/// `n` = 1..=2 blocks, each with 1..=2 options; option o of block i is
/// `F{i}.{o}` (reads x_{i−1}, w_i; produces x_i and its saved `s{i}.{o}`) and
/// `B{i}.{o}` (reads x_{i−1}, w_i, s_{i}.{o} and g_i, or x_n for the last
/// block; produces g_{i−1} for i ≥ 2; frees what it alone reads last),
/// groups `fwd{i}`, `bwd{i}` (exactly once; `bwd1` at least once when bit 5
/// is set), slots fwd1..fwdn, bwdn..bwd1. Bit 4: `B{n}.1` is `after` `F{n}.0`
/// (so option 1 of block n can never run: R13), bit 6: every `B1.*` is
/// `after` `F1.0` when block 1 has one option (always met). Durations 0..=3,
/// sizes 1..=4, β 1..=2 B/tick. One-shot (bit 7 clear): every tensor moves and
/// its last reader frees it; cyclic: x0 and the weights persist and move,
/// per-iteration tensors do not. Memory from the largest op footprint to the
/// sum of all sizes, skewed towards tight by `slack`.
pub fn grouped_gpu(spec: &[(u8, u8, u8, u8)], bits: u8, slack: u8) -> Option<Instance> {
    let n = 1 + (bits & 1) as usize;
    let cyclic = bits & 0x80 != 0;
    let mut spec = spec.iter().cycle();
    let mut tensors: Vec<Value> = vec![];
    let mut ops: Vec<Value> = vec![];
    let mut sizes: Vec<u64> = vec![];
    let mut tensor = |name: String, size: u64, init: &str, moves: bool, t: &mut Vec<Value>| {
        sizes.push(size);
        t.push(json!({"name": name, "size": size, "kind": "activation", "initial": init, "transferable": moves}));
    };
    let &(a, _, _, _) = spec.next()?;
    tensor("x0".into(), 1 + (a % 4) as u64, "gpu", true, &mut tensors);
    for i in 1..=n {
        let &(w, x, g, _) = spec.next()?;
        tensor(
            format!("w{i}"),
            1 + (w % 4) as u64,
            "gpu",
            true,
            &mut tensors,
        );
        tensor(
            format!("x{i}"),
            1 + (x % 4) as u64,
            "nowhere",
            !cyclic,
            &mut tensors,
        );
        if i < n {
            tensor(
                format!("g{i}"),
                1 + (g % 4) as u64,
                "nowhere",
                false,
                &mut tensors,
            );
        }
    }
    let mut groups = vec![];
    for i in 1..=n {
        let options = 1 + ((bits >> (i + 1)) & 1) as usize;
        let (mut fwd, mut bwd) = (vec![], vec![]);
        for o in 0..options {
            let &(df, db, s, _) = spec.next()?;
            tensor(
                format!("s{i}.{o}"),
                1 + (s % 4) as u64,
                "nowhere",
                !cyclic,
                &mut tensors,
            );
            let (f, b) = (format!("F{i}.{o}"), format!("B{i}.{o}"));
            ops.push(json!({"name": f, "duration": df % 4, "required": false,
                "reads": [format!("x{}", i - 1), format!("w{i}")],
                "produces": [format!("x{i}"), format!("s{i}.{o}")]}));
            let last = if i < n {
                format!("g{i}")
            } else {
                format!("x{n}")
            };
            let mut reads = vec![
                format!("x{}", i - 1),
                format!("w{i}"),
                format!("s{i}.{o}"),
                last.clone(),
            ];
            let mut frees = vec![format!("s{i}.{o}"), last];
            if i >= 2 {
                frees.push(format!("x{}", i - 1));
            } else if !cyclic {
                frees.push("x0".into());
            }
            if !cyclic {
                frees.push(format!("w{i}"));
            }
            reads.dedup();
            let produces: Vec<String> = if i >= 2 {
                vec![format!("g{}", i - 1)]
            } else {
                vec![]
            };
            let mut after: Vec<String> = vec![];
            if i == n && o == 1 && bits & 0x10 != 0 {
                after.push(format!("F{n}.0"));
            }
            if i == 1 && options == 1 && bits & 0x40 != 0 {
                after.push("F1.0".into());
            }
            ops.push(
                json!({"name": b, "duration": db % 4, "required": false, "reads": reads,
                "produces": produces, "frees": frees, "after": after}),
            );
            fwd.push(f);
            bwd.push(b);
        }
        groups.push(json!({"name": format!("fwd{i}"), "members": fwd}));
        let runs = if i == 1 && bits & 0x20 != 0 {
            "at_least_once"
        } else {
            "exactly_once"
        };
        groups.push(json!({"name": format!("bwd{i}"), "members": bwd, "runs": runs}));
    }
    let mut slots: Vec<String> = (1..=n).map(|i| format!("fwd{i}")).collect();
    slots.extend((1..=n).rev().map(|i| format!("bwd{i}")));
    let total: u64 = sizes.iter().sum();
    let lo = (total / 2).max(1);
    let span = total.saturating_sub(lo) + 1;
    let s = slack as u64;
    let mem = lo + (s * s % (span * span)) / span;
    let file = json!({"name": "grouped", "tensors": tensors, "ops": ops, "groups": groups,
        "order": {"slots": slots}, "gpu_memory": mem, "duplex": "full_duplex",
        "bandwidth": 1 + (bits >> 3 & 1), "mode": if cyclic { "cyclic" } else { "one_shot" }});
    let f: CoreFile = serde_json::from_value(file).ok()?;
    let inst = f.compile().ok()?;
    inst.validate().ok()?;
    Some(inst)
}

/// The GPU compute runs of a schedule, by op name, in start order.
fn runs(inst: &Instance, s: &offcert::schedule::Schedule) -> Vec<String> {
    let mut v: Vec<(i64, bool, usize, String)> = s
        .events
        .iter()
        .filter_map(|e| match *e {
            Event::Compute { op, start, end } => {
                Some((start.0, end > start, op.ix(), inst.op(op).name.clone()))
            }
            _ => None,
        })
        .collect();
    v.sort();
    v.into_iter().map(|r| r.3).collect()
}

static AGREED: AtomicUsize = AtomicUsize::new(0);
static OPTION1: AtomicUsize = AtomicUsize::new(0);
static CYCLIC: AtomicUsize = AtomicUsize::new(0);
static NONE: AtomicUsize = AtomicUsize::new(0);

fn settled(o: &Result<Outcome, ExactError>) -> Option<Option<i64>> {
    match o {
        Ok(o) if o.status == Status::Optimal => Some(o.bound.map(|b| b.0)),
        Ok(o) if o.status == Status::Infeasible => Some(None),
        _ => None,
    }
}

fn grouped_prop(spec: Vec<(u8, u8, u8, u8)>, bits: u8, slack: u8) -> TestResult {
    let Some(inst) = grouped_gpu(&spec, bits, slack) else {
        return TestResult::discard();
    };
    let json = serde_json::to_string(&CoreFile::from_instance(&inst)).unwrap();
    let s = exact::solve(Method::Search, &inst, &limits(10));
    let m = exact::solve(Method::Milp, &inst, &limits(20));
    if let Ok(o) = &s {
        if let Some(sched) = &o.schedule {
            let r = check(&inst, sched);
            if !r.valid {
                return TestResult::error(format!(
                    "{json}: search schedule rejected {:?}",
                    r.violations
                ));
            }
            if o.bound != Some(r.makespan) && o.status == Status::Optimal {
                return TestResult::error(format!(
                    "{json}: search says {:?}, checker {}",
                    o.bound, r.makespan
                ));
            }
            if runs(&inst, sched).iter().any(|n| n.ends_with(".1")) {
                OPTION1.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    let (Some(a), Some(b)) = (settled(&s), settled(&m)) else {
        // Outside a method's own structural limits, or out of time.
        return TestResult::discard();
    };
    if a != b {
        return TestResult::error(format!("{json}: search {a:?}, MILP {b:?}"));
    }
    AGREED.fetch_add(1, Ordering::Relaxed);
    if a.is_none() {
        NONE.fetch_add(1, Ordering::Relaxed);
    }
    if inst.mode == offcert::model::Mode::Cyclic {
        CYCLIC.fetch_add(1, Ordering::Relaxed);
    }
    TestResult::passed()
}

/// Random grouped, slotted instances with `after`, one-shot and cyclic, at
/// tight memory: the search's schedule is valid on the original instance, and
/// the search and the MILP agree on the optimum or on infeasibility. Not
/// vacuous: they agree on many instances, some cyclic, some infeasible, and
/// the best schedule sometimes runs an option other than 0.
#[test]
fn search_and_milp_agree_on_random_grouped_instances() {
    qc(60, 20).quickcheck(grouped_prop as fn(Vec<(u8, u8, u8, u8)>, u8, u8) -> TestResult);
    let counts = [
        ("agreed", &AGREED),
        ("option 1", &OPTION1),
        ("cyclic", &CYCLIC),
        ("infeasible", &NONE),
    ];
    eprintln!("{:?}", counts.map(|(n, c)| (n, c.load(Ordering::Relaxed))));
    assert!(AGREED.load(Ordering::Relaxed) >= 20, "{counts:?}");
    for (name, c) in counts {
        assert!(c.load(Ordering::Relaxed) >= 1, "{name}: {c:?}");
    }
}

static REMAT_AGREED: AtomicUsize = AtomicUsize::new(0);
static REMAT_BELOW_ROTOR: AtomicUsize = AtomicUsize::new(0);

type Layers = Vec<(u8, u8, u8, u8, u8, u8)>;
type Extra = Vec<(u8, u8, u8, u8)>;

fn remat_prop(spec: Layers, extra: Extra, bw: u8, slack: u8) -> TestResult {
    if spec.len() < 2 || extra.is_empty() {
        return TestResult::discard();
    }
    // Two layers, each with exactly two options (x % 3 == 1), no fast forward.
    let spec: Layers = spec[..2]
        .iter()
        .map(|&(a, b, c, d, e, _)| (a, b, c, d, e, 1))
        .collect();
    let c = remat_options_chain(&spec, &extra, bw, slack);
    let json = serde_json::to_string(&c).unwrap();
    let f = InstanceFile::RematChain(c);
    let inst = f.compile().unwrap();
    let v = crosscheck::run(&inst, &[Method::Search, Method::Milp], &limits(20));
    match v.label {
        Label::BestWithinLimitsCrossChecked | Label::Infeasible => {}
        Label::Unknown | Label::Feasible { .. } | Label::BestWithinLimitsSolverReported => {
            return TestResult::discard()
        }
        other => return TestResult::error(format!("{json}: {other:?} {:?}", v.disagreements)),
    }
    if !v.disagreements.is_empty() {
        return TestResult::error(format!("{json}: {:?}", v.disagreements));
    }
    REMAT_AGREED.fetch_add(1, Ordering::Relaxed);
    let best = v.makespan();
    if let Some(c) = &v.checked {
        if !check(&inst, c.schedule()).valid {
            return TestResult::error(format!("{json}: best schedule rejected"));
        }
    }
    // The certified bounds lie below the best within the limits (which is at
    // least the true optimum).
    for b in [RematCompute.bound(&f, &inst), RematSplit.bound(&f, &inst)] {
        let b = b.unwrap().ceil_ticks();
        if best.is_some_and(|m| m.0 < b) {
            return TestResult::error(format!("{json}: bound {b} above {best:?}"));
        }
    }
    // Every heuristic that accepts the chain is at least the exact best
    // (rotor's sequences are within the limits on 2 layers).
    for h in heuristic::remat::heuristics() {
        if let Ok(run) = heuristic::run(h.as_ref(), &f, &inst) {
            let ms = run.checked.report().makespan;
            match best {
                Some(b) if b <= ms => {
                    if b < ms && h.name() == "rotor" {
                        REMAT_BELOW_ROTOR.fetch_add(1, Ordering::Relaxed);
                    }
                }
                _ => return TestResult::error(format!("{json}: {} {ms} below {best:?}", h.name())),
            }
        }
    }
    TestResult::passed()
}

/// Random 2-layer chains with 2 options per block (variant groups `bwd{ℓ}`),
/// mostly tight: the search and the MILP, each through the `remat`
/// reduction, prove the same best within the sequence limits (cross-checked)
/// or both infeasibility; no heuristic that accepts the chain beats it.
#[test]
fn remat_chains_with_two_options_get_cross_checked_bests() {
    qc(12, 6).quickcheck(remat_prop as fn(Layers, Extra, u8, u8) -> TestResult);
    let n = REMAT_AGREED.load(Ordering::Relaxed);
    eprintln!(
        "agreed {n}, below rotor {}",
        REMAT_BELOW_ROTOR.load(Ordering::Relaxed)
    );
    assert!(n >= 6, "{n}");
}

/// What stays outside: ops on the CPU together with `after` (grp1) are
/// refused by the MILP and the search; the SMT refuses
/// the groups themselves; a slotted order with an op outside every slot is
/// refused naming the op; the anytime search takes no groups.
#[test]
fn refusals_name_what_stays_outside() {
    let grp1 = load(
        &repo().join("instances/fixtures/grp1.json"),
        &repo().join("instances/fixtures/grp1.cpu-update.valid.schedule.json"),
    )
    .0;
    // The search and the MILP encode CPU ops, but not `after` beside them.
    for m in [Method::Search, Method::Milp] {
        match exact::solve(m, &grp1, &Limits::default()) {
            Err(ExactError::Unsupported { reason, .. }) => {
                assert!(
                    reason.contains("precedences (after) with ops on the CPU"),
                    "{m:?}: {reason}"
                )
            }
            other => panic!("{m:?}: {other:?}"),
        }
    }
    match exact::solve(Method::Smt, &grp1, &Limits::default()) {
        Err(ExactError::Unencoded { feature, .. }) => {
            assert_eq!(feature, Feature::Extension(Extension::Groups))
        }
        other => panic!("{other:?}"),
    }
    let inst = (0..=255u8)
        .find_map(|b| grouped_gpu(&[(1, 1, 1, 1)], b & 0x7f, 200))
        .expect("a grouped instance");
    // An op outside the slots (a free order there): refused, naming it.
    let mut loose = inst.clone();
    if let offcert::model::ComputeOrder::Slots(v) = &mut loose.order {
        v.pop();
    }
    for m in [Method::Search, Method::Milp] {
        match exact::solve(m, &loose, &Limits::default()) {
            Err(ExactError::Unsupported { reason, .. }) => {
                assert!(reason.contains("B1.0 is in no slotted group"), "{reason}")
            }
            other => panic!("{m:?}: {other:?}"),
        }
    }
    let opts = offcert::exact::anytime::AnytimeOptions::default();
    match offcert::exact::anytime::solve_anytime(&inst, &opts) {
        Err(ExactError::Unencoded { feature, .. }) => {
            assert_eq!(feature, Feature::Extension(Extension::Groups))
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// A tiny OFFMATE instance (two blocks, two options each, frozen weights, so
/// every op runs on the GPU): the search and the MILP each choose the options
/// and prove the same least period, `optimal (cross-checked)`; no OFFMATE
/// heuristic that returns a schedule is below it.
#[test]
fn a_tiny_offmate_instance_gets_optimal_cross_checked() {
    let (f, inst) = load_instance(&repo().join("instances/offmate/tiny/frozen-2x2.json")).unwrap();
    assert!(inst.extensions().contains(&Extension::Slots));
    let v = crosscheck::run(&inst, &[Method::Search, Method::Milp], &limits(120));
    assert_eq!(
        v.label,
        Label::OptimalCrossChecked,
        "{:?} {:?}",
        v.evidence,
        v.disagreements
    );
    let p = v.makespan().unwrap();
    eprintln!("frozen-2x2: period {p}");
    let sched = v.checked.as_ref().unwrap().schedule();
    assert!(check(&inst, sched).valid);
    // Its 100 B of CPU memory exceed every tensor together (18 B): no
    // schedule reaches it. One that a schedule could reach is refused.
    let mut tight = inst.clone();
    tight.machine.cpu_capacity = Some(offcert::units::Bytes(17));
    for m in [Method::Search, Method::Milp] {
        match exact::solve(m, &tight, &limits(5)) {
            Err(ExactError::Unsupported { reason, .. }) => {
                assert!(reason.contains("CPU memory capacity"), "{m:?}: {reason}")
            }
            other => panic!("{m:?}: {:?}", other.map(|o| o.status)),
        }
    }
    // The memory (11 B) rules out option 0 in both blocks with both weights
    // resident (16 B), so the best runs an option 1 or moves a weight.
    let names = runs(&inst, sched);
    let moves = sched
        .events
        .iter()
        .any(|e| matches!(e, Event::Transfer { .. }));
    assert!(
        names.iter().any(|n| n.ends_with(".1")) || moves,
        "{names:?}"
    );
    for h in heuristic::offmate::heuristics() {
        if let Ok(run) = heuristic::run(h.as_ref(), &f, &inst) {
            assert!(run.checked.report().makespan >= p, "{}", h.name());
        }
    }
}

/// The counterexamples of `proofs/OFFMATE-ILP.md` against the exact methods:
/// those with a trainable parameter have a CPU Adam step `optC.p` (a member of
/// `upd.p`), which the MILP and the search take (the SMT names the groups); on
/// every file the two methods never contradict each other (and every schedule
/// passes the checker: the cross-check replays it), and `eq17-overhead` (a forward that alone needs 50 B of a 40 B GPU,
/// §2.2) is infeasible, cross-checked.
#[test]
fn offmate_counterexamples_against_the_exact_methods() {
    let dir = repo().join("instances/offmate/counterexamples");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let (_, inst) = load_instance(&path).unwrap();
        match exact::solve(Method::Smt, &inst, &Limits::default()) {
            Err(ExactError::Unencoded { feature, .. }) => {
                assert_eq!(
                    feature,
                    Feature::Extension(Extension::Groups),
                    "{}",
                    inst.name
                )
            }
            other => panic!("{} SMT: {:?}", inst.name, other.map(|o| o.status)),
        }
        {
            // With a CPU Adam step or not: the search and the MILP encode both.
            let v = crosscheck::run(&inst, &[Method::Search, Method::Milp], &limits(2));
            eprintln!("{}: {} {:?}", inst.name, v.label.words(), v.makespan());
            for r in &v.methods {
                let err = r.error.as_ref().map(|e| e.to_string());
                eprintln!(
                    "  {:?}: {:?} {:?} {:?} {err:?}",
                    r.method,
                    r.status,
                    r.makespan(),
                    r.bound
                );
            }
            assert!(
                v.disagreements.is_empty(),
                "{}: {:?}",
                inst.name,
                v.disagreements
            );
            if path.ends_with("eq17-overhead.json") {
                assert_eq!(v.label, Label::Infeasible, "{:?}", v.evidence);
            }
        }
        n += 1;
    }
    assert!(n >= 9, "{n}");
}

/// Regression: the door relaxes limit 4 on chains of at most two layers; a
/// block's further options (two ops each) once counted as layers, so a 2-layer
/// chain with two options per block was searched with limit 4 kept.
#[test]
fn limit_4_is_relaxed_on_two_layer_chains_with_options() {
    use offcert::exact::remat::sequences::SequenceLimits;
    let spec = [(1, 1, 1, 1, 1, 1), (1, 1, 1, 1, 1, 1)];
    let c = remat_options_chain(&spec, &[(1, 1, 1, 1)], 1, 0);
    let inst = InstanceFile::RematChain(c).compile().unwrap();
    assert_eq!(inst.groups.len(), 2);
    assert!(!SequenceLimits::default_for(&inst).forwards_in_order);
}
