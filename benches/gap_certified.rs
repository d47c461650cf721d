//! The certified gap at paper scale (issue 14, part 6): every bundled
//! paper-scale instance of `activation_chain` (8 chains at the README main
//! job's budgets, `--memory 0%:100%:6`) and of `weight_chain` (15 Table 1
//! instances at their own memory, as the README runs them) and of
//! `op_sequence` (the programs imported from PyTorch execution traces,
//! `instances/paper/op_sequence`, at `--memory 0%:100%:5`), of `offmate` (the
//! four Llama2-7B rows, below) and of `remat_chain` (issue 23, item 7: the 8
//! chains of `instances/paper/remat` and the small and imported rockmate chains
//! of `instances/remat`, at `--memory 0%:100%:5`), through the gap
//! report with the anytime search under a time limit per row (best checked
//! heuristic schedule as incumbent, ⌈best certified bound⌉ as known bound);
//! on open rows the local improvement (weight rows:
//! `heuristic::weight::replan`; activation rows: `heuristic::improve`,
//! re-planning then re-timing) runs first within the same limit and the
//! search gets what it leaves (op_sequence rows:
//! `heuristic::improve::improve_op_sequence`, re-planning the evictions then
//! re-timing the cyclic schedule).
//! Per row: the best checked schedule and who found it, the best certified
//! bound and its source, the certified gap (exact fraction, percent rounded
//! up), how the search ended; then the maximum over all rows. Remat rows come
//! in a table of their own that also gives each remat heuristic's checked
//! makespan: rotor, pofo as printed (50 slots), pofo as run (`pofo-as-run`;
//! "= rotor" where its makespan is rotor's, i.e. rotor's plan may be the one it
//! returned) and offload-only.
//!
//! Run: `cargo bench --bench gap_certified` (release profile). Environment:
//! - `OFFCERT_GAP_SECS`: the anytime search's limit per row, seconds
//!   (default 60, the figure; 2 for a quick run);
//! - `OFFCERT_GAP_FILTER`: comma-separated substrings; only instances whose
//!   file name contains one of them;
//! - `OFFCERT_GAP_FAMILIES`: comma-separated, among `activation`, `weight`,
//!   `offmate`, `op_sequence`, `remat` (default all five).
//!
//! `offmate` rows (the four Llama2-7B instances of OFFMATE's Table 2, at their
//! own memory): Algorithm 1 (`offmate-algorithm1`: the corrected ILP with the
//! same limit per solve, the post-processing, the realiser, the checker) runs
//! beside the ILP-free baselines; the improvement (plan moves and the cyclic
//! re-timing) gets the limit; the exact search refuses the family (variant
//! groups). After the table, one line per offmate row: Algorithm 1's checked
//! period, the best schedule and its finder, the best certified bound, the
//! certified gap and the paper's overhead (Table 2).
//!
//! A row without the search ran none because its gap was already closed (a
//! checked heuristic, or its improvement, meets a certified bound) or the
//! improvement used the whole limit.

use offcert::report::{self, BudgetSpec, GapEntry, GapOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The instance files of one bundled folder, sorted, after the filter.
fn files(folder: &str, filter: &[String]) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("bundled folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            filter.is_empty() || filter.iter().any(|f| n.contains(f.as_str()))
        })
        .collect();
    v.sort();
    v
}

fn row(e: &GapEntry, wall: Duration) -> String {
    let name = Path::new(&e.instance)
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let pct = e
        .budget_percent
        .map(|p| format!("{p:.0} %"))
        .unwrap_or_default();
    let best = e
        .best_schedule
        .as_ref()
        .map_or("-".into(), |b| format!("{} ({})", b.makespan(), b.by));
    let bound = e
        .best_certified_bound
        .as_ref()
        .map_or("-".into(), |b| format!("{} ({})", b.ceil, b.source));
    let gap = e
        .certified_gap
        .as_ref()
        .map_or("-".into(), |g| format!("{} % ({})", g.percent, g.exact));
    let search = e.anytime.as_ref().map_or("not run".into(), |a| {
        // Remat rows: the search ran on the best schedule's op sequence; its
        // bound is that sequence's, never the instance's.
        let own = match (a.search_bound, a.sequence_bound) {
            (Some(b), _) => format!("own bound {b}"),
            (None, Some(b)) => format!("bound {b} within its op sequence"),
            (None, None) => "own bound -".into(),
        };
        let found = a.found.map_or(String::new(), |m| format!(", found {m}"));
        format!(
            "{}, {:.0} s, {} states, {own}{found}",
            a.stop, a.seconds, a.states
        )
    });
    let opt = e.optimum.as_ref().map_or("", |o| o.claim.as_str());
    format!(
        "| {name} | {pct} | {best} | {bound} | {gap} | {opt} | {search} | {:.1} |",
        wall.as_secs_f64()
    )
}

/// OFFMATE's Table 2 overhead for the bundled rows (the paper's figure, for
/// comparison only): OFFMATE 13.7 % / 24.3 %, w/o act. offload 32.3 % / 42.3 %.
fn paper_overhead(stem: &str) -> &'static str {
    match stem {
        "llama2-7b-rtx3060" => "13.7 %",
        "llama2-7b-rtx3060-no-act-offload" => "32.3 %",
        "llama2-7b-rtx3090" => "24.3 %",
        "llama2-7b-rtx3090-no-act-offload" => "42.3 %",
        _ => "-",
    }
}

/// The Table 2 line of an offmate row.
fn offmate_row(e: &GapEntry) -> String {
    let name = Path::new(&e.instance)
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let a1 = e
        .heuristics
        .iter()
        .find(|h| h.heuristic == "offmate-algorithm1")
        .map_or("-".into(), |h| match h.makespan() {
            Some(m) => format!("{m} ({})", h.note.clone().unwrap_or_default()),
            None => format!("{}: {}", h.verdict, h.reason.clone().unwrap_or_default()),
        });
    let best = e
        .best_schedule
        .as_ref()
        .map_or("-".into(), |b| format!("{} ({})", b.makespan(), b.by));
    let bound = e
        .best_certified_bound
        .as_ref()
        .map_or("-".into(), |b| format!("{} ({})", b.ceil, b.source));
    let gap = e
        .certified_gap
        .as_ref()
        .map_or("-".into(), |g| format!("{} %", g.percent));
    format!(
        "| {name} | {a1} | {best} | {bound} | {gap} | {} |",
        paper_overhead(&name)
    )
}

/// A heuristic's checked makespan in a remat row (`-`: no schedule).
fn heuristic_makespan(e: &GapEntry, name: &str) -> Option<i64> {
    e.heuristics
        .iter()
        .find(|h| h.heuristic == name)
        .and_then(|h| h.makespan())
}

fn remat_row(e: &GapEntry, wall: Duration) -> String {
    let cell = |n: &str| heuristic_makespan(e, n).map_or("-".into(), |m| m.to_string());
    let rotor = heuristic_makespan(e, "rotor");
    let as_run = match (heuristic_makespan(e, "pofo-as-run"), rotor) {
        (Some(p), Some(r)) if p == r => format!("{p} (= rotor)"),
        (Some(p), _) => p.to_string(),
        (None, _) => "-".into(),
    };
    let base = row(e, wall);
    // `row`'s cells after the name and memory: best, bound, gap, claim,
    // search, wall; the heuristics go in between.
    let cells: Vec<&str> = base.trim_matches('|').split(" | ").collect();
    format!(
        "| {} | {} | {} | {} | {as_run} | {} | {} |",
        cells[0].trim(),
        cells[1],
        cell("rotor"),
        cell("pofo"),
        cell("offload-only"),
        cells[2..].join(" | ").trim()
    )
}

fn main() {
    let secs: u64 =
        env("OFFCERT_GAP_SECS").map_or(60, |s| s.parse().expect("OFFCERT_GAP_SECS: seconds"));
    let filter: Vec<String> = env("OFFCERT_GAP_FILTER")
        .map(|f| f.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let families = env("OFFCERT_GAP_FAMILIES")
        .unwrap_or_else(|| "activation,weight,offmate,op_sequence,remat".into());
    let no_exact = |_: &offcert::model::Instance| false;
    let opts = GapOptions {
        optimum: None,
        exact_for: &no_exact,
        only: vec![],
        anytime: Some(Duration::from_secs(secs)),
        progress: None,
        improve: Some(Duration::from_secs(secs).into()),
        solver_limit: offcert::heuristic::SolverLimit::Time(Duration::from_secs(secs)),
    };
    let pct = BudgetSpec::parse("0%:100%:6").unwrap();
    let pct5 = BudgetSpec::parse("0%:100%:5").unwrap();
    let mut jobs: Vec<(PathBuf, Option<&BudgetSpec>)> = Vec::new();
    if families.contains("activation") {
        jobs.extend(
            files("instances/paper/activation", &filter)
                .into_iter()
                .map(|f| (f, Some(&pct))),
        );
    }
    if families.contains("weight") {
        jobs.extend(
            files("instances/paper/weight", &filter)
                .into_iter()
                .map(|f| (f, None)),
        );
    }
    if families.contains("offmate") {
        jobs.extend(
            files("instances/paper/offmate", &filter)
                .into_iter()
                .map(|f| (f, None)),
        );
    }
    if families.contains("op_sequence") {
        jobs.extend(
            files("instances/paper/op_sequence", &filter)
                .into_iter()
                .map(|f| (f, Some(&pct5))),
        );
    }
    if families.contains("remat") {
        for folder in ["instances/paper/remat", "instances/remat"] {
            jobs.extend(files(folder, &filter).into_iter().map(|f| (f, Some(&pct5))));
        }
    }
    println!(
        "anytime search limit per row: {secs} s; {} instance files",
        jobs.len()
    );
    println!("| instance | memory | best checked schedule (by) | ⌈best certified bound⌉ (source) | certified gap | claim | anytime search | wall s |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut worst: Option<(num_rational::BigRational, String)> = None;
    let mut offmate_rows: Vec<String> = Vec::new();
    let started = Instant::now();
    let mut remat_header = false;
    for (path, spec) in jobs {
        let (file, _) = offcert::io::load_instance(&path).expect("bundled instance loads");
        let remat = matches!(file, offcert::family::InstanceFile::RematChain(_));
        if remat && !remat_header {
            remat_header = true;
            println!();
            println!("| instance | memory | rotor | pofo (as printed, 50 slots) | pofo-as-run | offload-only | best checked schedule (by) | ⌈best certified bound⌉ (source) | certified gap | claim | anytime search | wall s |");
            println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
        }
        let budgets = match spec {
            Some(s) => s.budgets(&file).expect("budgets"),
            None => vec![report::budget::own_budget(&file)],
        };
        let mut carry = report::gap::CarryOver::default();
        for b in budgets {
            let f = report::with_budget(&file, b);
            let inst = f.compile().expect("compiles");
            let t = Instant::now();
            let label = path.display().to_string();
            let e = report::gap::gap_with_carry(&label, &f, &inst, &opts, carry.carried());
            carry.keep(&e, &format!("{b} B"));
            if remat {
                println!("{}", remat_row(&e, t.elapsed()));
            } else {
                println!("{}", row(&e, t.elapsed()));
            }
            if e.family == "offmate" {
                offmate_rows.push(offmate_row(&e));
            }
            if let Some(g) = &e.certified_gap {
                if worst.as_ref().is_none_or(|(w, _)| g.value > *w) {
                    let label = format!("{} at {} B", path.display(), b);
                    worst = Some((g.value.clone(), label));
                }
            }
            assert!(
                e.problems.is_empty(),
                "{}: {:?}",
                path.display(),
                e.problems
            );
        }
    }
    if !offmate_rows.is_empty() {
        println!();
        println!("| OFFMATE row | Algorithm 1 (checked period) | best schedule (by) | best certified bound (source) | certified gap | paper's overhead |");
        println!("|---|---|---|---|---|---|");
        for r in &offmate_rows {
            println!("{r}");
        }
    }
    match worst {
        Some((w, at)) => println!(
            "max certified gap {} % ({w}) at {at}; total {:.0} s",
            report::gap::percent_up(&w),
            started.elapsed().as_secs_f64()
        ),
        None => println!("no row with a certified gap"),
    }
}
