//! True budgets of `remat_chain` (issue 23, Why 1 / Deliver 1): `peak` is the
//! checker's peak of the keep-everything schedule, `least` a certified lower
//! limit (`proofs/REMAT-BUDGETS.md`). At `peak` the keep-everything schedule is
//! valid, meets Σu and needs every byte; below `least` the exact methods find
//! nothing; rotor finds the keep-everything makespan at the import default; a
//! `0%:100%:5` sweep has 5 rows.

use crate::common;

use common::*;
use offcert::exact::crosscheck;
use offcert::exact::{Limits, Method, Status};
use offcert::family::remat_chain::RematChain;
use offcert::family::remat_import::{import_rockmate, import_rotor};
use offcert::family::InstanceFile;
use offcert::heuristic;
use offcert::report::budget::{keep_everything_checked, remat_budgets, RematBudgets};
use offcert::report::BudgetSpec;
use quickcheck::TestResult;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Σ (u_F + u_B) of the ops the keep-everything schedule runs (option 0 of
/// each block, and the loss).
fn sum_u(c: &RematChain) -> i64 {
    let dm = c.dims();
    (1..=dm.l + 1).map(|k| dm.u_f[k] + dm.u_b[k]).sum()
}

fn paper_chains() -> Vec<(String, RematChain)> {
    let dir = repo().join("instances/paper/remat");
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    assert_eq!(v.len(), 8, "the 8 bundled remat chains");
    v.into_iter()
        .map(|p| match offcert::io::load_instance(&p).unwrap().0 {
            InstanceFile::RematChain(c) => (p.display().to_string(), c),
            other => panic!("{}: family {}", p.display(), other.family()),
        })
        .collect()
}

/// At `peak` the keep-everything schedule is valid and meets Σu; one byte less
/// and it is not (the peak is the schedule's true peak, not an upper estimate);
/// `least` ≤ `peak`. `Err` names what failed.
fn peak_is_checked_and_tight(c: &RematChain) -> Result<RematBudgets, String> {
    let b = remat_budgets(c)?;
    let k = keep_everything_checked(c, b.peak).map_err(|e| format!("at peak {} B: {e}", b.peak))?;
    if k.report().makespan.0 != sum_u(c) {
        return Err(format!(
            "makespan {} at peak, Σu = {}",
            k.report().makespan.0,
            sum_u(c)
        ));
    }
    if k.report().peak_memory.0 != b.peak {
        return Err(format!("peak {} B vs {}", k.report().peak_memory.0, b.peak));
    }
    if b.peak > 0 && keep_everything_checked(c, b.peak - 1).is_ok() {
        return Err(format!("keep-everything also valid at {} B", b.peak - 1));
    }
    if b.least > b.peak {
        return Err(format!("least {} > peak {}", b.least, b.peak));
    }
    Ok(b)
}

#[test]
fn keep_everything_is_valid_at_peak_and_meets_sum_u_on_every_bundled_chain() {
    for (name, c) in paper_chains() {
        let b = peak_is_checked_and_tight(&c).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(b.least < b.peak, "{name}: {b:?}");
    }
}

#[test]
fn rotor_finds_the_keep_everything_makespan_at_peak_on_every_bundled_chain() {
    // The DP alone rounds sizes up and the budget down to 500 slots, and at
    // the peak found nothing (issue 23, Why 1).
    for (name, mut c) in paper_chains() {
        c.gpu_memory = remat_budgets(&c).unwrap().peak;
        let f = InstanceFile::RematChain(c.clone());
        let inst = f.compile().unwrap();
        let run = heuristic::run(&heuristic::remat::rotor::Rotor::default(), &f, &inst)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(run.checked.report().makespan.0, sum_u(&c), "{name}");
    }
}

static RANDOM: AtomicUsize = AtomicUsize::new(0);

fn random_peak(
    spec: Vec<(u8, u8, u8, u8, u8, u8)>,
    extra: Vec<(u8, u8, u8, u8)>,
    bw: u8,
    slack: u8,
) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let c = remat_options_chain(&spec[..spec.len().min(12)], &extra, bw, slack);
    match peak_is_checked_and_tight(&c) {
        Ok(_) => {
            RANDOM.fetch_add(1, Ordering::Relaxed);
            TestResult::passed()
        }
        Err(e) => TestResult::error(format!("{}: {e}", serde_json::to_string(&c).unwrap())),
    }
}

#[test]
fn keep_everything_is_valid_at_peak_and_meets_sum_u_on_random_chains() {
    qc(100, 50).quickcheck(
        random_peak
            as fn(Vec<(u8, u8, u8, u8, u8, u8)>, Vec<(u8, u8, u8, u8)>, u8, u8) -> TestResult,
    );
    assert!(RANDOM.load(Ordering::Relaxed) >= 50, "{RANDOM:?}");
}

static BELOW_LEAST: AtomicUsize = AtomicUsize::new(0);

/// A random tiny chain (1..=3 layers, the first three of `spec`, every op at least one tick: the exact
/// methods' scope) at one byte below `least`: no exact method finds a
/// schedule, and the search proves there is none.
fn nothing_below_least(spec: Vec<(u8, u8, u8, u8, u8)>, bw: u8) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let layers = small_remat_layers(&spec, 3);
    let mut c = remat_chain_of("below-least", layers, bw, RematTail::SMALL);
    let least = remat_budgets(&c).unwrap().least;
    if least == 0 {
        return TestResult::discard();
    }
    c.gpu_memory = least - 1;
    let inst = InstanceFile::RematChain(c.clone()).compile().unwrap();
    let limits = Limits {
        time_limit: Duration::from_secs(4),
        ..Limits::default()
    };
    let v = crosscheck::run(&inst, &[Method::Search, Method::Milp], &limits);
    if let Some(m) = v.makespan() {
        return TestResult::error(format!(
            "{}: a schedule of makespan {} at least − 1 = {} B",
            serde_json::to_string(&c).unwrap(),
            m.0,
            c.gpu_memory
        ));
    }
    if v.methods
        .iter()
        .any(|m| m.status == Some(Status::Infeasible))
    {
        BELOW_LEAST.fetch_add(1, Ordering::Relaxed);
    }
    TestResult::passed()
}

#[test]
fn least_is_at_most_the_least_memory_of_an_exact_schedule_on_random_tiny_chains() {
    qc(20, 10).quickcheck(nothing_below_least as fn(Vec<(u8, u8, u8, u8, u8)>, u8) -> TestResult);
    // Not vacuous: the exact methods settle "no schedule" below least.
    assert!(BELOW_LEAST.load(Ordering::Relaxed) >= 5, "{BELOW_LEAST:?}");
}

/// A rotor chain literal of three equal layers: keeping every ā costs more
/// than any single op (least < peak). Rotor's own 2-layer example
/// (`tests/it/remat.rs`) has least = peak = 28 B, so its sweep is one budget.
const ROTOR: &str =
    "[(1, 1, 8, 12, 0, 0), (1, 1, 8, 12, 0, 0), (1, 1, 8, 12, 0, 0), (None, 0.5, 8, 8, None, 0)]";

const RK_DUMP: &str = r#"{"ln": 2,
        "fw": [[1.0, 2.0], [3.0]], "bw": [[2.0, 1.5], [2.0], [0.5]],
        "cw": [8, 4, 2], "cbw": [[], [10, 12], [5]],
        "fwd_tmp": [[0, 1], [0]], "bwd_tmp": [[1, 1], [0], [0]],
        "ff_fw": [0.5, 1.0], "ff_fwd_tmp": [0, 0], "nb_sol": [2, 1]}"#;

/// Regression (issue 23, Why 1: "`--memory 0%:100%:5` collapses to a single
/// row"): five distinct budgets, from `least` to `peak`, on every bundled
/// chain and on an imported rotor chain whose least is below its peak. Budgets
/// are distinct by construction: a chain whose least equals its peak has one
/// (rockmate's 2-block sample [`RK_DUMP`]: both are 31 B, see
/// [`tiny_rockmate_sample_has_one_budget`]).
#[test]
fn a_sweep_of_five_steps_has_five_rows() {
    let spec = BudgetSpec::parse("0%:100%:5").unwrap();
    let mut chains = paper_chains();
    chains.push((
        "rotor".into(),
        import_rotor(ROTOR, &import_options()).unwrap(),
    ));
    for (name, c) in chains {
        let b = remat_budgets(&c).unwrap();
        let rows = spec.budgets(&InstanceFile::RematChain(c)).unwrap();
        assert_eq!(rows.len(), 5, "{name}: {rows:?} ({b:?})");
        assert_eq!((rows[0], rows[4]), (b.least, b.peak), "{name}");
    }
}

/// The CLI: `offcert import rotor` sets M_GPU to the checked peak and says so;
/// `offcert sweep` labels both ends and prints five rows.
#[test]
fn import_default_is_the_checked_peak_and_sweep_labels_the_ends() {
    let dir = std::env::temp_dir().join(format!("offcert-budgets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("chain.txt");
    std::fs::write(&src, ROTOR).unwrap();
    let out = dir.join("chain.json");
    let st = Command::new(env!("CARGO_BIN_EXE_offcert"))
        .args(["import", "rotor"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    let c = match offcert::io::load_instance(&out).unwrap().0 {
        InstanceFile::RematChain(c) => c,
        other => panic!("family {}", other.family()),
    };
    let b = remat_budgets(&c).unwrap();
    assert_eq!(c.gpu_memory, b.peak);
    let note = c.note.clone().unwrap();
    assert!(note.contains("peak (checked, keep everything)"), "{note}");
    assert!(keep_everything_checked(&c, c.gpu_memory).is_ok());
    let o = Command::new(env!("CARGO_BIN_EXE_offcert"))
        .arg("sweep")
        .arg(&out)
        .args(["--memory", "0%:100%:5"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "least (certified lower limit) {}",
            offcert::units::Bytes(b.least).human()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "peak (checked, keep everything) {}",
            offcert::units::Bytes(b.peak).human()
        )),
        "{text}"
    );
    let rows = text.lines().filter(|l| l.trim_end().ends_with('%')).count();
    assert_eq!(rows, 5, "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The 2-block rockmate sample: its least and peak are both 31 B (the checked
/// keep-everything peak equals one op's unavoidable footprint), so a sweep is
/// the one budget, and at it rotor finds a schedule of the keep-everything
/// makespan.
#[test]
fn tiny_rockmate_sample_has_one_budget() {
    let mut c = import_rockmate(RK_DUMP, &import_options()).unwrap();
    let b = remat_budgets(&c).unwrap();
    assert_eq!((b.least, b.peak), (31, 31));
    assert_eq!(c.gpu_memory, b.peak);
    let spec = BudgetSpec::parse("0%:100%:5").unwrap();
    let f = InstanceFile::RematChain(c.clone());
    assert_eq!(spec.budgets(&f).unwrap(), vec![31]);
    c.gpu_memory = b.peak;
    let f = InstanceFile::RematChain(c.clone());
    let inst = f.compile().unwrap();
    let run = heuristic::run(&heuristic::remat::rotor::Rotor::default(), &f, &inst).unwrap();
    assert!(run.checked.report().makespan.0 <= sum_u(&c));
}

static AT_LEAST: AtomicUsize = AtomicUsize::new(0);

/// `least` is feasible (`proofs/REMAT-BUDGETS.md`, "`least` is the least
/// feasible memory"): at `least`, the schedule of the proof
/// (`heuristic::remat::least_memory_schedule`) is valid, and its checked
/// peak is `least` itself.
fn least_schedule_fits(
    spec: Vec<(u8, u8, u8, u8, u8, u8)>,
    extra: Vec<(u8, u8, u8, u8)>,
    bw: u8,
) -> TestResult {
    if spec.is_empty() {
        return TestResult::discard();
    }
    let mut c = remat_options_chain(&spec[..spec.len().min(12)], &extra, bw, 0);
    c.gpu_memory = remat_budgets(&c).unwrap().least;
    let inst = InstanceFile::RematChain(c.clone()).compile().unwrap();
    let s = heuristic::remat::least_memory_schedule(&c, &inst).expect("no overflow");
    match offcert::check::check(&inst, &s) {
        offcert::check::CheckOutcome::Valid(k) if k.report().peak_memory.0 == c.gpu_memory => {
            AT_LEAST.fetch_add(1, Ordering::Relaxed);
            TestResult::passed()
        }
        offcert::check::CheckOutcome::Valid(k) => TestResult::error(format!(
            "{}: peak {} B, least {} B",
            serde_json::to_string(&c).unwrap(),
            k.report().peak_memory.0,
            c.gpu_memory
        )),
        offcert::check::CheckOutcome::Invalid(r) => TestResult::error(format!(
            "{}: {:?}",
            serde_json::to_string(&c).unwrap(),
            r.violations().first()
        )),
    }
}

#[test]
fn the_least_memory_schedule_is_valid_at_least_on_random_chains() {
    qc(100, 50).quickcheck(
        least_schedule_fits
            as fn(Vec<(u8, u8, u8, u8, u8, u8)>, Vec<(u8, u8, u8, u8)>, u8) -> TestResult,
    );
    assert!(AT_LEAST.load(Ordering::Relaxed) >= 50, "{AT_LEAST:?}");
}

/// Issue 23, Deliver 1 / Goal (0 %): every bundled chain has a checked
/// schedule at its least memory (the proof's schedule); and on ResNet-50 the
/// re-planning finds one too (regression: a plan the simulator could not
/// realise in the memory ended the re-planning, so at 0 % it found nothing).
#[test]
fn every_bundled_chain_has_a_checked_schedule_at_least() {
    for (name, mut c) in paper_chains() {
        c.gpu_memory = remat_budgets(&c).unwrap().least;
        let inst = InstanceFile::RematChain(c.clone()).compile().unwrap();
        let s = heuristic::remat::least_memory_schedule(&c, &inst).unwrap();
        let k = offcert::check::check(&inst, &s);
        assert!(
            k.checked().is_some(),
            "{name}: the least-memory schedule is rejected"
        );
        if name.contains("resnet50") {
            let effort = heuristic::effort::Effort::Candidates(2000);
            let (by, r) = heuristic::remat::replan::improve(&c, &inst, None, None, effort)
                .unwrap_or_else(|| panic!("{name}: re-planning finds nothing at least"));
            assert!(r.makespan().0 > 0, "{by}");
        }
    }
}
