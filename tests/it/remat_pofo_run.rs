//! `pofo-as-run` and several options per block in `pofo` / `offload-only`
//! (issue 23, items 2 and 4):
//! - on random tight chains (one or several options per block, a fast forward
//!   sometimes), `pofo-as-run`'s checked makespan is at most rotor's whenever
//!   rotor has a schedule, and the programme's own plan wins on some of them;
//! - on random multi-option chains, pofo's and offload-only's schedules pass
//!   the checker, each block's backward runs the option its saved forward
//!   used, and options often lower the programme's value against a
//!   one-option restriction (not always: see `a_reported_case`).

use crate::common;
use crate::remat_options::{chosen, restrict};

use common::*;
use offcert::family::remat_chain::{RematChain, RematLayer, RematOption};
use offcert::family::InstanceFile;
use offcert::heuristic::remat::pofo::Pofo;
use offcert::heuristic::remat::pofo_run::{run_slots, work, PofoAsRun, RunSource, RUN_MAX_WORK};
use offcert::heuristic::remat::rotor::Rotor;
use offcert::heuristic::{self, HeuristicError, HeuristicRun};
use offcert::model::Instance;
use offcert::schedule::Event;
use offcert::units::Ticks;
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};

type Layers = Vec<(u8, u8, u8, u8, u8, u8)>;
type Extra = Vec<(u8, u8, u8, u8)>;

/// Compute ops of a checked schedule by name, in start order.
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

static RUN_RAN: AtomicUsize = AtomicUsize::new(0);
static RUN_BEATS_ROTOR: AtomicUsize = AtomicUsize::new(0);
static RUN_FELL_BACK: AtomicUsize = AtomicUsize::new(0);
static RUN_ONLY_ONE: AtomicUsize = AtomicUsize::new(0);

fn as_run_prop(spec: Layers, extra: Extra, bw: u8, slack: u8) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let c = remat_options_chain(&spec, &extra, bw, slack);
    let json = serde_json::to_string(&c).unwrap();
    let f = InstanceFile::RematChain(c);
    let inst = f.compile().unwrap();
    let rotor = heuristic::run(&Rotor::default(), &f, &inst);
    // Half the cases as a long chain would run: the programme at 50 slots.
    let h = PofoAsRun {
        max_work: if slack % 2 == 0 { 0 } else { RUN_MAX_WORK },
        ..PofoAsRun::default()
    };
    let run = heuristic::run(&h, &f, &inst);
    let source = h.schedule_with_source(&f, &inst).map(|s| s.1);
    match (&rotor, &run) {
        (Ok(r), Ok(p)) => {
            let (mr, mp) = (r.checked.makespan(), p.checked.makespan());
            if mp > mr {
                return TestResult::error(format!("{json}: pofo-as-run {mp} above rotor {mr}"));
            }
            if mp < mr {
                RUN_BEATS_ROTOR.fetch_add(1, Ordering::Relaxed);
            }
            if matches!(source, Ok(RunSource::Rotor)) {
                RUN_FELL_BACK.fetch_add(1, Ordering::Relaxed);
            }
        }
        (Err(HeuristicError::NoSchedule { .. }), Ok(_)) => {
            RUN_ONLY_ONE.fetch_add(1, Ordering::Relaxed);
        }
        (Err(HeuristicError::NoSchedule { .. }), Err(HeuristicError::NoSchedule { .. })) => {
            return TestResult::discard()
        }
        (r, p) => {
            return TestResult::error(format!(
                "{json}: rotor {:?}, pofo-as-run {:?}",
                r.as_ref().map(|x| x.checked.makespan()),
                p.as_ref().map(|x| x.checked.makespan())
            ))
        }
    }
    RUN_RAN.fetch_add(1, Ordering::Relaxed);
    TestResult::passed()
}

/// Random chains of 1–4 blocks (one to three options each, or one), memory
/// mostly near the least feasible; the programme at 100 slots, or at 50 as on
/// a chain whose work at 100 slots is above `RUN_MAX_WORK`. Not vacuous: the programme's own plan beats
/// rotor, rotor's plan is taken, and pofo-as-run finds a schedule where rotor
/// finds none.
#[test]
fn pofo_as_run_is_never_worse_than_rotor() {
    qc(600, 500).quickcheck(as_run_prop as fn(Layers, Extra, u8, u8) -> TestResult);
    let counts = [
        ("ran", &RUN_RAN),
        ("beats rotor", &RUN_BEATS_ROTOR),
        ("fell back to rotor", &RUN_FELL_BACK),
        ("only pofo-as-run", &RUN_ONLY_ONE),
    ];
    eprintln!("{:?}", counts.map(|(n, c)| (n, c.load(Ordering::Relaxed))));
    for (name, c) in counts {
        assert!(c.load(Ordering::Relaxed) >= 3, "{name}: {c:?}");
    }
}

static OPT_RAN: AtomicUsize = AtomicUsize::new(0);
static OPT_OTHER: AtomicUsize = AtomicUsize::new(0);
static OPT_MOVED: AtomicUsize = AtomicUsize::new(0);
static OPT_HELP: AtomicUsize = AtomicUsize::new(0);
static OPT_OFFLOAD_ONLY: AtomicUsize = AtomicUsize::new(0);

/// Pofo's model value (`None`: no plan).
fn value(p: &Pofo, c: &RematChain) -> Option<f64> {
    p.solve_afresh(c).map(|x| x.model_value)
}

fn options_prop(spec: Layers, extra: Extra, bw: u8, slack: u8) -> TestResult {
    if spec.is_empty() || extra.is_empty() {
        return TestResult::discard();
    }
    let c = remat_options_chain(&spec, &extra, bw, slack);
    if c.layers.iter().all(|x| x.options.is_empty()) {
        return TestResult::discard();
    }
    let json = serde_json::to_string(&c).unwrap();
    let f = InstanceFile::RematChain(c.clone());
    let inst = f.compile().unwrap();
    for p in [Pofo::default(), Pofo::offload_only()] {
        // Options matter: a one-option restriction is often slower in the
        // model. (Not always at least as fast: `a_reported_case` has a
        // restriction at 11 against the full chain's 12, not yet explained;
        // so no assertion here.)
        let pick: Vec<usize> = (0..c.l()).map(|l| (slack as usize >> l) & 3).collect();
        let (full, part) = (value(&p, &c), value(&p, &restrict(&c, &pick)));
        if part.unwrap_or(f64::INFINITY) > full.unwrap_or(f64::INFINITY) {
            OPT_HELP.fetch_add(1, Ordering::Relaxed);
        }
        let run = match heuristic::run(&p, &f, &inst) {
            Ok(run) => run,
            Err(HeuristicError::NoSchedule { .. }) => continue,
            Err(e) => return TestResult::error(format!("{json}: {e}")),
        };
        if !p.remat {
            OPT_OFFLOAD_ONLY.fetch_add(1, Ordering::Relaxed);
        }
        match chosen(&c, &names(&run, &inst)) {
            Ok(ks) if ks.iter().any(|k| *k > 0) => {
                OPT_OTHER.fetch_add(1, Ordering::Relaxed);
            }
            Ok(_) => {}
            Err(e) => return TestResult::error(format!("{json}: {}: {e}", run.name)),
        }
        let moved = run.checked.schedule().events.iter();
        if moved
            .into_iter()
            .any(|e| matches!(e, Event::Transfer { .. }))
        {
            OPT_MOVED.fetch_add(1, Ordering::Relaxed);
        }
        OPT_RAN.fetch_add(1, Ordering::Relaxed);
    }
    TestResult::passed()
}

/// Random chains of 1–4 blocks, at least one with several options, memory
/// mostly tight. Not vacuous: both heuristics run, pick options other than 0,
/// offload, and options beat a one-option restriction in the model.
#[test]
fn pofo_and_offload_only_take_several_options_and_pass_the_checker() {
    qc(600, 500).quickcheck(options_prop as fn(Layers, Extra, u8, u8) -> TestResult);
    let counts = [
        ("ran", &OPT_RAN),
        ("offload-only ran", &OPT_OFFLOAD_ONLY),
        ("other option", &OPT_OTHER),
        ("moved", &OPT_MOVED),
        ("options help", &OPT_HELP),
    ];
    eprintln!("{:?}", counts.map(|(n, c)| (n, c.load(Ordering::Relaxed))));
    for (name, c) in counts {
        assert!(c.load(Ordering::Relaxed) >= 3, "{name}: {c:?}");
    }
}

/// One option per block, listed again as a further option: the same value bit
/// for bit and the same op sequence (ties go to option 0).
#[test]
fn a_repeated_option_changes_nothing() {
    let mut ran = 0;
    for seed in 0u8..60 {
        let spec: Layers = (0..3)
            .map(|i| {
                (
                    seed,
                    seed / 3 + i,
                    seed / 7 + 2 * i,
                    seed / 2,
                    seed / 5 + i,
                    0,
                )
            })
            .collect();
        let single = remat_options_chain(&spec, &[], seed, seed.wrapping_mul(37));
        let mut dup = single.clone();
        for x in &mut dup.layers {
            let o = dup_option(x);
            x.options = vec![o];
        }
        for p in [Pofo::default(), Pofo::offload_only()] {
            let (a, b) = (p.solve_afresh(&single), p.solve_afresh(&dup));
            match (&a, &b) {
                (None, None) => {}
                (Some(x), Some(y)) => {
                    assert_eq!(x.model_value.to_bits(), y.model_value.to_bits());
                    let fs = InstanceFile::RematChain(single.clone()).compile().unwrap();
                    let fd = InstanceFile::RematChain(dup.clone()).compile().unwrap();
                    let strip = |v: Vec<String>| -> Vec<String> {
                        v.into_iter()
                            .map(|n| n.trim_end_matches(".0").to_string())
                            .collect()
                    };
                    assert_eq!(
                        strip(x.sequence.names(&fs)),
                        strip(y.sequence.names(&fd)),
                        "{}",
                        serde_json::to_string(&single).unwrap()
                    );
                    ran += 1;
                }
                _ => panic!("{}", serde_json::to_string(&single).unwrap()),
            }
        }
    }
    assert!(ran >= 10, "{ran}");
}

fn dup_option(x: &RematLayer) -> RematOption {
    RematOption {
        u_f: x.u_f,
        u_b: x.u_b,
        abar: x.abar,
        o_f: x.o_f,
        o_b: x.o_b,
    }
}

/// A case quickcheck once reported: with options the programme's value is 12,
/// with layer 1's option 1 and layer 2's option 2 alone it is 11 (open: the
/// restriction's states and choices look like a subset of the full chain's).
/// Kept: both properties' other checks hold on it.
#[test]
fn a_reported_case() {
    let spec: Layers = vec![(0, 0, 0, 0, 0, 8), (0, 0, 0, 0, 0, 47), (0, 0, 0, 1, 0, 0)];
    let extra: Extra = vec![(5, 0, 0, 0), (0, 0, 1, 0), (0, 0, 63, 0), (0, 7, 0, 0)];
    for (n, r) in [
        ("as run", as_run_prop(spec.clone(), extra.clone(), 93, 125)),
        (
            "options",
            options_prop(spec.clone(), extra.clone(), 93, 125),
        ),
    ] {
        assert!(!r.is_failure(), "{n}: {r:?}");
    }
}

/// The programme's slots on the bundled chains: 100 up to ResNet-101 (35
/// layers: its figures in `docs/RESULTS.md` are those of 100 slots), fewer
/// on longer chains, never fewer than the appendix's 50, and within
/// `RUN_MAX_WORK` wherever above 50; fewer layers never get fewer slots.
#[test]
fn pofo_as_run_slots_shrink_with_the_chain() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/paper/remat");
    let mut seen = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let (file, _) = offcert::io::load_instance(&path).unwrap();
        let InstanceFile::RematChain(c) = file else {
            continue;
        };
        let s = run_slots(c.l(), 100, RUN_MAX_WORK);
        assert!((50..=100).contains(&s), "{}: {s}", path.display());
        assert!(s == 50 || work(c.l(), s) <= RUN_MAX_WORK);
        assert!(s == 100 || work(c.l(), s + 1) > RUN_MAX_WORK);
        assert_eq!(
            s == 100,
            c.l() <= 35,
            "{}: {} layers, {s}",
            path.display(),
            c.l()
        );
        seen += 1;
    }
    assert_eq!(seen, 8);
    for l in 1..200 {
        assert!(run_slots(l, 100, RUN_MAX_WORK) >= run_slots(l + 1, 100, RUN_MAX_WORK));
    }
    assert_eq!(run_slots(3, 100, 0), 50);
}
