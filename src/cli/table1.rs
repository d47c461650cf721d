//! `offcert window-table1`: the out-of-core paper's Table 1 recomputed on a
//! synthetic ResNet-50 ([`crate::family::resnet50`]): the window heuristic at
//! batches 928/1120/1248/1440 and W ∈ {0.5, 1, 1.5, 2}·B, every schedule
//! checked; images/s relative to the 581 images/s baseline next to the paper's
//! "Schedule + VA" row. `--allocators`: per batch, the least budget at which
//! the window schedule is valid under `exact`, `va:m_c` and `caching`
//! ([`crate::report::window_allocators`]), beside Table 1's out-of-memory marks.
//!
//! Owns: the `window-table1` subcommand.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::bound::op_sequence::transfer_volume;
use crate::family::{resnet50::resnet50, InstanceFile};
use crate::heuristic::op_sequence::window::Variant;
use crate::heuristic::{self, op_sequence::Window};
use crate::model::Allocator;
use crate::report::window_allocators::{
    internal_fragmentation_within_bound, largest_planning_budget, least_budget, AllocatorThreshold,
    Setup,
};
use crate::units::Bytes;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Table1Args {
    /// GPU memory budget B (bytes: `16GiB`, `17G`, …; default 16 GiB).
    #[arg(long, default_value_t = 16 << 30, value_parser = super::bytes_arg)]
    pub gpu_memory: u64,
    /// Link bandwidth per direction, bytes per ns (= GB/s); default 50 (assumption).
    #[arg(long, default_value_t = 50)]
    pub bandwidth: u64,
    /// Use the paper's window variant instead of nnabla's.
    #[arg(long)]
    pub paper: bool,
    /// Instead of the speed table: per batch, the least budget at which the
    /// window schedule (W = 1·B) is valid under `exact`, under `--va` and under
    /// `caching` (the paper's "Schedule + VA" against "Schedule").
    #[arg(long)]
    pub allocators: bool,
    /// The virtual-addressing model of `--allocators` (`va:CHUNK`).
    #[arg(long, default_value = "va:40MB", requires = "allocators")]
    pub va: crate::model::Allocator,
    /// Batch sizes for `--allocators` (default: Table 1's nine).
    #[arg(long, value_delimiter = ',', requires = "allocators")]
    pub batches: Vec<u64>,
}

const PAPER: [(u64, f64); 4] = [(928, 409.0), (1120, 398.0), (1248, 347.0), (1440, 321.0)];

pub fn run(a: Table1Args) -> anyhow::Result<ExitCode> {
    if a.allocators {
        return allocators(&a);
    }
    let base = resnet50(190, a.gpu_memory, a.bandwidth);
    let inst = InstanceFile::OpSequence(base.clone()).compile()?;
    let p190 = inst.total_compute().0 as f64;
    println!(
        "synthetic ResNet-50, B = {}, link {} GB/s per direction (assumption), window variant {}; baseline batch 190: {:.1} images/s (calibration)",
        crate::units::Bytes(a.gpu_memory).human(),
        a.bandwidth,
        if a.paper { "paper" } else { "nnabla" },
        190.0 / (p190 * 1e-9)
    );
    println!(
        "{:>6} {:>7} {:>14} {:>9} {:>7} {:>8}  {:>11} {:>11}  {:>9}",
        "batch",
        "W/B",
        "period (ns)",
        "images/s",
        "/581",
        "paper",
        "compute ub",
        "volume ub",
        "peak (B)"
    );
    let mut ok = true;
    for (batch, paper_ips) in PAPER {
        let s = resnet50(batch, a.gpu_memory, a.bandwidth);
        let u = s.uses()?;
        let file = InstanceFile::OpSequence(s);
        let inst = file.compile()?;
        let comp = inst.total_compute().0 as f64;
        let vol = transfer_volume(&u, a.gpu_memory) as f64 / a.bandwidth as f64;
        let ub = |p: f64| batch as f64 / (p * 1e-9) / 581.0;
        for (num, den) in [(1u64, 2u64), (1, 1), (3, 2), (2, 1)] {
            let h = Window {
                variant: if a.paper {
                    Variant::Paper
                } else {
                    Variant::Nnabla
                },
                num,
                den,
            };
            let wb = num as f64 / den as f64;
            match heuristic::run(&h, &file, &inst) {
                Ok(r) => {
                    let p = r.checked.report().makespan.0 as f64;
                    let ips = batch as f64 / (p * 1e-9);
                    println!(
                        "{batch:>6} {wb:>7.1} {:>14} {ips:>9.1} {:>7.3} {:>8.2}  {:>11.3} {:>11.3}  {:>9}",
                        r.checked.report().makespan.0,
                        ips / 581.0,
                        paper_ips / 581.0,
                        ub(comp),
                        ub(vol.max(comp)),
                        r.checked.report().peak_memory.0
                    );
                }
                Err(e) => {
                    if matches!(e, heuristic::HeuristicError::Invalid { .. }) {
                        ok = false;
                    }
                    println!("{batch:>6} {wb:>7.1} {e}");
                }
            }
        }
    }
    println!("(/581: checked images/s over the 581 images/s baseline; paper: \"Schedule + VA\" row / 581; ub: upper bounds from the certified compute and transfer-volume bounds)");
    Ok(super::verdict_code(ok))
}

/// Table 1's batch sizes, and its "Schedule" and "Schedule + VA" rows: does
/// the run fit in the 16 GB V100 (`x` in the paper: out of memory).
const TABLE1_FITS: [(u64, bool, bool); 9] = [
    (64, true, true),
    (128, true, true),
    (190, true, true),
    (256, true, true),
    (512, true, true),
    (928, true, true),
    (1120, false, true),
    (1248, false, true),
    (1440, false, true),
];

fn cell(t: &AllocatorThreshold) -> String {
    match &t.least {
        Some((b, _)) => b.human(),
        None => format!("> {}", t.tried_up_to.human()),
    }
}

/// Figure 3's cell: the largest planning budget and the memory its run takes
/// (peak reserved under `caching`, peak occupied under `va`), or `OOM`; and
/// whether it runs at all.
fn figure3_cell(found: Option<(Bytes, crate::check::Checked)>) -> (String, bool) {
    match found {
        None => ("OOM".into(), false),
        Some((b, c)) => {
            let r = c.report();
            let p = r.allocator_peaks.clone().unwrap_or_default();
            let used = p.peak_reserved.or(p.peak_occupied).unwrap_or(r.peak_memory);
            (format!("{} ({})", b.human(), used.human()), true)
        }
    }
}

/// Eq. (2) at the `va` threshold's schedule: `IF < N_max·m_c (N_max n)`.
fn fragmentation_cell(va: &AllocatorThreshold) -> String {
    let Some((_, c)) = &va.least else {
        return "-".into();
    };
    let r = c.report();
    let n = r
        .allocator_peaks
        .as_ref()
        .and_then(|p| p.max_live_allocations);
    internal_fragmentation_within_bound(r).map_or("-".into(), |(ok, f, b)| {
        format!(
            "{} {} {} (N_max {})",
            f.human(),
            if ok { "<" } else { "NOT <" },
            b.human(),
            n.unwrap_or(0)
        )
    })
}

/// One batch's row; false when eq. (2) fails on a schedule judged under `va`.
fn allocator_row(a: &Table1Args, setup: &Setup) -> (String, bool) {
    let cap = Bytes(a.gpu_memory);
    let mut holds = true;
    let mut seen = |r: &crate::check::Report| {
        if let Some((ok, _, _)) = internal_fragmentation_within_bound(r) {
            holds &= ok;
        }
    };
    let [exact, va, caching] =
        [Allocator::Exact, a.va, Allocator::Caching].map(|al| least_budget(setup, al, &mut seen));
    let [sched, with_va] = [Allocator::Caching, a.va]
        .map(|al| figure3_cell(largest_planning_budget(setup, al, cap, &mut seen)));
    let paper = TABLE1_FITS
        .iter()
        .find(|r| r.0 == setup.batch)
        .map_or("-".to_string(), |r| {
            let w = |ok: bool| if ok { "ok" } else { "x" };
            format!("{} / {}", w(r.1), w(r.2))
        });
    let fits = |f: &(String, bool)| if f.1 { "ok" } else { "OOM" };
    let row = format!(
        "{:>6} {:>18} {:>18} {:>18}  {:>10} {:>10}  {:>36} {:>36}  {}",
        setup.batch,
        cell(&exact),
        cell(&va),
        cell(&caching),
        format!("{} / {}", fits(&sched), fits(&with_va)),
        paper,
        sched.0,
        with_va.0,
        fragmentation_cell(&va)
    );
    (row, holds)
}

/// `window-table1 --allocators`: per batch, the least budgets under the three
/// allocators, and Figure 3's largest planning budgets on the GPU.
fn allocators(a: &Table1Args) -> anyhow::Result<ExitCode> {
    let cap = Bytes(a.gpu_memory);
    let variant = if a.paper {
        Variant::Paper
    } else {
        Variant::Nnabla
    };
    let batches: Vec<u64> = if a.batches.is_empty() {
        TABLE1_FITS.iter().map(|r| r.0).collect()
    } else {
        a.batches.clone()
    };
    println!(
        "synthetic ResNet-50, link {} GB/s per direction (assumption), window W = 1·B ({}).",
        a.bandwidth,
        if a.paper { "paper" } else { "nnabla" },
    );
    println!("least: the least budget B at which the window schedule planned at B (exact bytes) is valid with B as the GPU's memory, under each allocator (bisection over whole bytes: valid at B, not at B - 1; the plan changes with B, so it is the threshold the bisection finds)");
    println!(
        "on a GPU of {} (the paper's Figure 3): the largest planning budget b whose plan runs there under `caching` (Sched) and under {} (+VA), and the memory the run takes (peak reserved; peak occupied); OOM: no b from the least exact budget up runs (Table 1's x)",
        cap.human(),
        a.va
    );
    println!(
        "{:>6} {:>18} {:>18} {:>18}  {:>10} {:>10}  {:>36} {:>36}  IF at the peak under {} (< N_max·m_c)",
        "batch",
        "least: exact",
        a.va,
        "caching",
        "Sched/+VA",
        "paper",
        "Sched: max b (used)",
        "+VA: max b (used)",
        a.va
    );
    let mut bound_ok = true;
    for batch in batches {
        let window = Window {
            variant,
            num: 1,
            den: 1,
        };
        let setup = Setup {
            batch,
            bandwidth: a.bandwidth,
            window,
        };
        let (row, holds) = allocator_row(a, &setup);
        bound_ok &= holds;
        println!("{row}");
    }
    println!(
        "(Sched = the paper's \"Schedule\" row, modelled by `caching`; +VA = \"Schedule + VA\", by `{}`; paper: Table 1 on a 16 GB V100, x = out of memory; IF at the peak = peak occupied - peak exact bytes, checked < N_max·m_c on every schedule judged under {}: {})",
        a.va,
        a.va,
        if bound_ok { "holds" } else { "VIOLATED" }
    );
    Ok(super::verdict_code(bound_ok))
}
