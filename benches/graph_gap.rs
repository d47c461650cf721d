//! The certified gap on computation graphs (issue 27 item 7): MOCCASIN's 12
//! benchmark rows (random layered n = 100, 250, 500, 1000; ResNet-50; FCN-8
//! VGG; each at m = 0.8 and 0.9, the budget ⌈m × the checked peak of the
//! baseline order⌉ as `offcert import graph --memory-multiplier m` sets it),
//! plus the bundled graphs of `instances/paper/graph` at their own budgets.
//!
//! Per row: nodes, budget, Σd; every graph heuristic's checked makespan; the
//! best checked schedule and its finder; the best certified bound and its
//! source; the certified gap (best − ⌈bound⌉) / ⌈bound⌉ as the gap report
//! computes it (`report::cells::GapCell`), rounded up to 0.01 %; the
//! wall time of the row. On graphs of at most `OFFCERT_GRAPH_EXACT_NODES`
//! nodes (default 14) the exhaustive graph search runs too (its optimum is a
//! certified bound and a checked schedule). The best heuristic schedule is
//! then improved (`heuristic::graph::improve`, `OFFCERT_GRAPH_IMPROVE`
//! candidates, default 20 000) and offered as `<finder>+improve`.
//!
//! Checkmate's baselines are registered graph heuristics and so print in the
//! heuristics cell: `checkpoint-all`, `chen-sqrt-n`, `chen-ladder`,
//! `chen-greedy`, `checkmate-lp-round` (its LP capped as the report caps
//! `checkmate-lp`, at 40 000 FREE columns, and cut at `OFFCERT_GRAPH_LP_SECS`).
//!
//! **With offloading** (issue 27 item 6): the same graph at the same budget
//! with an offloading link, `graph-offload` and the remat-only best (checked
//! again on the offloading instance, where it is still valid), the better of
//! the two and its gap to Σd (`graph-compute` holds with offloading too).
//! The files carry no bandwidth, so the link is an assumption per row
//! ([`Link`]): 16 GB/s (PCIe 3.0 ×16) with 1 tick = 1 µs on the profiled
//! graphs (ResNet-50, the bundled training graphs), 16 GB/s against
//! 10 TFLOP/s on FCN-8 (whose `cost_cpu` counts FLOPs), and on the random
//! layered graphs (abstract units) β = Σ size / Σ d, so that an average
//! output moves in an average op's time. `OFFCERT_GRAPH_NO_OFFLOAD=1` skips
//! that column.
//!
//! Run: `OFFCERT_MOCCASIN_DIR=DIR cargo bench --bench graph_gap`, DIR holding
//! MOCCASIN's `data/` files under their own names (github
//! haoming-codes/moccasin, GPL-3.0: fetch them yourself, never commit them):
//! `random_layered_n{100,250,500,1000}_*.json`,
//! `ResNet50 (MLSys)_256_(224, 224, 3)_train_nx.json`,
//! `fcn_8_vgg (MLSys)_32_(416, 608, 3)_train_nx.json`. Without the variable,
//! or with a file missing, those rows are skipped with a line that says so.
//! `OFFCERT_GRAPH_LP_SECS` (default 60) cuts the LP of `checkmate-lp`;
//! `OFFCERT_GRAPH_PARTS_SECS` (default 60) cuts the parts of `graph-parts`,
//! `OFFCERT_GRAPH_PARTS_MAX` and `OFFCERT_GRAPH_PARTS_POPS` set its largest
//! part and its states per part (defaults: `GraphParts::default()`);
//! `OFFCERT_GRAPH_FILTER` keeps the rows whose name contains one of its
//! comma-separated substrings.

use num_rational::BigRational;
use num_traits::ToPrimitive;
use offcert::bound::graph::forced::GraphForced;
use offcert::bound::graph::parts::GraphParts;
use offcert::bound::graph::{CheckmateLp, GraphCompute};
use offcert::bound::{BoundMethod, LowerBound};
use offcert::exact::{self, Limits, Method, Status};
use offcert::family::graph::{Graph, Offload};
use offcert::family::graph_import::parse_node_link;
use offcert::family::{BandwidthFile, InstanceFile};
use offcert::heuristic;
use offcert::heuristic::graph::lp_round::LpRound;
use offcert::model::Duplex;
use offcert::report::budget::graph_baseline_checked;
use offcert::report::cells::GapCell;
use offcert::schedule::Schedule;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const MOCCASIN: [(&str, Link); 6] = [
    (
        "random_layered_n100_w0.27_nlv0.75_ed0.2_scd0.14.json",
        Link::Balanced,
    ),
    (
        "random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14.json",
        Link::Balanced,
    ),
    (
        "random_layered_n500_w0.36_nlv0.75_ed0.2_scd0.14.json",
        Link::Balanced,
    ),
    (
        "random_layered_n1000_w0.31_nlv0.75_ed0.2_scd0.14.json",
        Link::Balanced,
    ),
    (
        "ResNet50 (MLSys)_256_(224, 224, 3)_train_nx.json",
        Link::Micros,
    ),
    (
        "fcn_8_vgg (MLSys)_32_(416, 608, 3)_train_nx.json",
        Link::Flops,
    ),
];

/// The offloading link of a row (module doc): the files carry no bandwidth.
#[derive(Clone, Copy, Debug)]
enum Link {
    /// Durations in µs, sizes in bytes (Checkmate's profiled ResNet-50, the
    /// bundled training graphs): PCIe 3.0 ×16 at 16 GB/s = 16 000 B per tick.
    Micros,
    /// Durations in FLOPs (Checkmate's FCN-8 `cost_cpu`): 16 GB/s against
    /// 10 TFLOP/s sustained, 16 B per 10 000 ticks.
    Flops,
    /// Abstract units (the random layered graphs): Σ size / Σ d bytes per
    /// tick, so that moving an average output takes as long as an average op.
    Balanced,
}

impl Link {
    fn bandwidth(self, g: &Graph) -> BandwidthFile {
        match self {
            Link::Micros => BandwidthFile::PerTick(16_000),
            Link::Flops => BandwidthFile::Ratio {
                bytes: 16,
                ticks: 10_000,
            },
            Link::Balanced => BandwidthFile::Ratio {
                bytes: g.nodes.iter().map(|n| n.memory).sum::<u64>().max(1),
                ticks: g
                    .nodes
                    .iter()
                    .map(|n| n.duration as u64)
                    .sum::<u64>()
                    .max(1),
            },
        }
    }
    fn label(self) -> &'static str {
        match self {
            Link::Micros => "16 GB/s, 1 tick = 1 µs",
            Link::Flops => "16 GB/s at 10 TFLOP/s",
            Link::Balanced => "β = Σ size / Σ d",
        }
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A MOCCASIN file as a `graph` instance file at ⌈m × baseline peak⌉ (m = num/10).
fn moccasin_row(path: &Path, tenths: u64) -> Result<InstanceFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let imported =
        parse_node_link(&text, None).map_err(|e| format!("{}: {}", e.field, e.message))?;
    let mut g = imported.graph;
    let checked = graph_baseline_checked(&g)?;
    let peak = checked.report().peak_memory.0 as u128;
    g.gpu_memory =
        u64::try_from((peak * tenths as u128).div_ceil(10)).map_err(|e| e.to_string())?;
    g.name = format!("{} m={}.{}", g.name, tenths / 10, tenths % 10);
    Ok(InstanceFile::Graph(g))
}

fn pct(gap: &BigRational) -> String {
    let v = (gap * BigRational::from_integer(10_000.into())).ceil();
    format!(
        "{:.2} %",
        v.to_integer().to_f64().unwrap_or(f64::NAN) / 100.0
    )
}

/// The best checked schedule so far: makespan, finder, schedule.
type Best = Option<(i64, String, Schedule)>;

fn offer(best: &mut Best, m: i64, who: &str, s: &Schedule) {
    if best.as_ref().is_none_or(|(b, _, _)| m < *b) {
        *best = Some((m, who.to_string(), s.clone()));
    }
}

/// Why a heuristic found nothing, shortened for a table cell.
fn short(e: &heuristic::HeuristicError) -> String {
    let t = e.to_string();
    let t = t
        .split_once(": ")
        .map_or(t.as_str(), |(_, r)| r)
        .to_string();
    if t.chars().count() > 90 {
        format!("{}…", t.chars().take(90).collect::<String>())
    } else {
        t
    }
}

/// Every graph heuristic (the LP rounding with the bench's cap and clock),
/// each checked; then the checked improvement of the best.
fn schedules(
    file: &InstanceFile,
    inst: &offcert::model::Instance,
    cells: &mut Vec<String>,
) -> Best {
    let mut best: Best = None;
    // The report's cap (40 000 FREE columns: FCN-8 and the n = 100 graphs),
    // with the bench's clock.
    let lp_round = LpRound {
        time_limit: Duration::from_secs(lp_secs()),
        ..LpRound::default()
    };
    for h in heuristic::graph::heuristics() {
        let h: &dyn heuristic::Heuristic = if h.name() == lp_round_name() {
            &lp_round
        } else {
            h.as_ref()
        };
        let t = Instant::now();
        match heuristic::run(h, file, inst) {
            Ok(r) => {
                let m = r.checked.makespan().0;
                cells.push(format!(
                    "{} {m} ({:.1} s)",
                    h.name(),
                    t.elapsed().as_secs_f64()
                ));
                offer(&mut best, m, h.name(), r.checked.schedule());
            }
            Err(e) => cells.push(format!("{} – ({})", h.name(), short(&e))),
        }
    }
    // The checked improvement of the best schedule (`heuristic::graph::improve`).
    let effort = env("OFFCERT_GRAPH_IMPROVE")
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    if let Some((_, who, start)) = best.clone() {
        let t = Instant::now();
        let start = offcert::check::check(inst, &start)
            .into_result()
            .expect("checked before");
        let improved = heuristic::graph::improve::improve(
            inst,
            &start,
            heuristic::effort::Effort::Candidates(effort),
        );
        if let Some(k) = improved {
            let m = k.makespan().0;
            cells.push(format!(
                "{who}+improve {m} ({:.1} s)",
                t.elapsed().as_secs_f64()
            ));
            offer(&mut best, m, &format!("{who}+improve"), k.schedule());
        }
    }
    best
}

fn lp_round_name() -> &'static str {
    heuristic::Heuristic::name(&LpRound::default())
}

fn lp_secs() -> u64 {
    env("OFFCERT_GRAPH_LP_SECS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(60)
}

/// The certified bounds of the row (and the exact search's optimum on small graphs).
fn bounds(
    file: &InstanceFile,
    inst: &offcert::model::Instance,
    cells: &mut Vec<String>,
    best: &mut Best,
) -> Vec<LowerBound> {
    let lp = CheckmateLp {
        time_limit: Duration::from_secs(lp_secs()),
        // the cap the recorded tables used (the report's default is 40 000)
        max_size: 400_000,
        ..CheckmateLp::default()
    };
    let parts_secs = env("OFFCERT_GRAPH_PARTS_SECS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let d = GraphParts::default();
    let parts = GraphParts {
        time_limit: Duration::from_secs(parts_secs),
        max_part: env("OFFCERT_GRAPH_PARTS_MAX")
            .and_then(|s| s.parse().ok())
            .unwrap_or(d.max_part),
        max_pops: env("OFFCERT_GRAPH_PARTS_POPS")
            .and_then(|s| s.parse().ok())
            .unwrap_or(d.max_pops),
        ..d
    };
    let mut out: Vec<LowerBound> = Vec::new();
    for b in [&GraphCompute as &dyn BoundMethod, &lp, &parts, &GraphForced] {
        let t = Instant::now();
        match b.bound(file, inst) {
            Ok(lb) => {
                cells.push(format!(
                    "{} {} ({:.1} s)",
                    b.name(),
                    lb.display(),
                    t.elapsed().as_secs_f64()
                ));
                out.push(lb)
            }
            Err(e) => cells.push(format!("{}: {e}", b.name())),
        }
    }
    let exact_nodes = env("OFFCERT_GRAPH_EXACT_NODES")
        .and_then(|s| s.parse().ok())
        .unwrap_or(14);
    if inst.ops.len() <= exact_nodes {
        let o = exact::solve(Method::GraphSearch, inst, &Limits::default());
        if let Ok(o) = o {
            if o.status == Status::Optimal {
                if let (Some(s), Some(b)) = (o.schedule, o.bound) {
                    let c = offcert::check::check(inst, &s)
                        .into_result()
                        .expect("checked");
                    offer(best, c.makespan().0, "graph-search", c.schedule());
                    out.push(LowerBound::from_ticks(
                        b.0,
                        "graph-search",
                        offcert::bound::Strength::Certified,
                    ));
                }
            }
        }
    }
    out
}

/// The certified gap as the gap report computes it (`report::cells::GapCell`):
/// (best − ⌈bound⌉) / ⌈bound⌉, rounded up to 0.01 %.
fn gap_of(m: i64, lb: &LowerBound) -> String {
    let ceil = lb.value.ceil().to_integer().to_i64();
    match ceil.and_then(|b| GapCell::new(m, b)) {
        Some(cell) => pct(&cell.value),
        None => "–".into(),
    }
}

/// With offloading allowed over `link`: `graph-offload` and the remat-only
/// best, both checked on the offloading instance; the best of them, and its
/// gap to Σd (`graph-compute`, which holds with offloading too).
fn offload_cell(file: &InstanceFile, link: Link, remat: &Best) -> String {
    let InstanceFile::Graph(g) = file else {
        return "– (not a graph file)".into();
    };
    let mut g = g.clone();
    g.offload = Some(Offload {
        bandwidth: link.bandwidth(&g),
        duplex: Duplex::HalfDuplex,
    });
    let off = InstanceFile::Graph(g);
    let inst = match off.compile() {
        Ok(i) => i,
        Err(e) => return format!("– (does not compile: {e})"),
    };
    let t = Instant::now();
    let mut best: Best = None;
    let mut cell = String::new();
    match heuristic::run(&heuristic::graph::evict::Offload, &off, &inst) {
        Ok(r) => {
            let m = r.checked.makespan().0;
            cell = format!("graph-offload {m} ({:.1} s)", t.elapsed().as_secs_f64());
            offer(&mut best, m, "graph-offload", r.checked.schedule());
        }
        Err(e) => cell.push_str(&format!("graph-offload – ({})", short(&e))),
    }
    if let Some((_, who, s)) = remat {
        if let Ok(c) = offcert::check::check(&inst, s).into_result() {
            offer(
                &mut best,
                c.makespan().0,
                &format!("{who}, no transfer"),
                c.schedule(),
            );
        }
    }
    let sum = LowerBound::from_ticks(
        inst.ops.iter().map(|o| o.duration.0).sum(),
        "graph-compute",
        offcert::bound::Strength::Certified,
    );
    match best {
        Some((m, who, _)) => format!(
            "{m} ({who}); gap to Σd {}; {cell}; link {}",
            gap_of(m, &sum),
            link.label()
        ),
        None => format!("none; {cell}; link {}", link.label()),
    }
}

fn run_row(name: &str, file: &InstanceFile, link: Link) {
    let started = Instant::now();
    let inst = match file.compile() {
        Ok(i) => i,
        Err(e) => return println!("| {name} | does not compile: {e} |"),
    };
    let sum: i64 = inst.ops.iter().map(|o| o.duration.0).sum();
    let mut cells = Vec::new();
    let mut best = schedules(file, &inst, &mut cells);
    let bounds = bounds(file, &inst, &mut cells, &mut best);
    let lb = offcert::bound::best_of(&bounds, offcert::bound::Strength::Certified).cloned();
    let (best_cell, gap_cell) = match (&best, &lb) {
        (Some((m, who, _)), Some(lb)) => (
            format!("{m} ({who})"),
            format!("{} ({}) | {}", lb.display(), lb.source, gap_of(*m, lb)),
        ),
        (Some((m, who, _)), None) => (format!("{m} ({who})"), "– | –".into()),
        (None, _) => ("none".into(), "– | –".into()),
    };
    let elapsed = started.elapsed().as_secs_f64();
    let offload = if env("OFFCERT_GRAPH_NO_OFFLOAD").is_some() {
        "skipped".to_string()
    } else {
        offload_cell(file, link, &best)
    };
    println!(
        "| {name} | {} | {} | {sum} | {best_cell} | {gap_cell} | {elapsed:.1} s | {offload} | {} |",
        inst.ops.len(),
        inst.machine.gpu_capacity.0,
        cells.join("; ")
    );
}

fn main() {
    let filter: Vec<String> = env("OFFCERT_GRAPH_FILTER")
        .map(|f| f.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let keep = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    println!("| instance | n | budget (B) | Σd | best checked (finder) | best certified bound (source) | certified gap | time | with offloading: best (finder); gap to Σd; graph-offload; link | heuristics and bounds |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    match env("OFFCERT_MOCCASIN_DIR") {
        None => println!("(OFFCERT_MOCCASIN_DIR unset: MOCCASIN's 12 rows skipped)"),
        Some(dir) => {
            for (f, link) in MOCCASIN {
                let path = PathBuf::from(&dir).join(f);
                if !path.exists() {
                    println!("({f} absent from {dir}: its two rows skipped)");
                    continue;
                }
                for tenths in [8, 9] {
                    let name = format!("{} m=0.{tenths}", f.trim_end_matches(".json"));
                    if !keep(&name) {
                        continue;
                    }
                    match moccasin_row(&path, tenths) {
                        Ok(file) => run_row(&name, &file, link),
                        Err(e) => println!("| {name} | import failed: {e} |"),
                    }
                }
            }
        }
    }
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/paper/graph");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&bundled)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "json"));
    files.sort();
    for p in files {
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        if !keep(&name) {
            continue;
        }
        // The bundled random graphs have abstract units; the training graphs µs and bytes.
        let link = if name.starts_with("layered") {
            Link::Balanced
        } else {
            Link::Micros
        };
        match offcert::io::load_instance(&p) {
            Ok((file, _)) => run_row(&name, &file, link),
            Err(e) => println!("| {name} | {e} |"),
        }
    }
}
