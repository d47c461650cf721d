//! `offcert window-table1`: the out-of-core paper's Table 1 recomputed on a
//! synthetic ResNet-50 ([`crate::family::resnet50`]): the window heuristic at
//! batches 928/1120/1248/1440 and W ∈ {0.5, 1, 1.5, 2}·B, every schedule
//! checked; images/s relative to the 581 images/s baseline next to the paper's
//! "Schedule + VA" row.
//!
//! Owns: the `window-table1` subcommand.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::bound::op_sequence::transfer_volume;
use crate::family::{resnet50::resnet50, InstanceFile};
use crate::heuristic::op_sequence::window::Variant;
use crate::heuristic::{self, op_sequence::Window};
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
}

const PAPER: [(u64, f64); 4] = [(928, 409.0), (1120, 398.0), (1248, 347.0), (1440, 321.0)];

pub fn run(a: Table1Args) -> anyhow::Result<ExitCode> {
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
