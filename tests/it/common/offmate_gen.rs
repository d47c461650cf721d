//! Random `offmate` instances and random ILP-shaped plans for the property
//! tests of the post-processing and the realiser.
//!
//! Ranges: 1–4 blocks, 1–3 options each (t_fwd 1–6, t_bwd 1–10, stored 0–6 B,
//! offloaded 0–6 B with probability 1/2, overheads 0–3 B), 1–3 parameters per
//! block (1–8 B, trainable with probability 3/4), one of them shared with the
//! next block with probability 1/4; k 0–2; α_G 1–4, α_C 1–2, β 1–4 B/tick;
//! H 0–3; full or half duplex; M_GPU either everything (roomy) or a random
//! fraction down to the largest single step's need (tight); M_CPU roomy.
//! Plans: per group and step, Sto, Ofl, StoO, OflO, Opt in {0, ¼, ½, ¾, 1}.

use offcert::family::offmate::*;
use offcert::family::BandwidthFile;
use offcert::model::Duplex;
use offcert::units::{Bytes, Ticks};

/// A deterministic stream of small numbers from quickcheck's bytes.
pub struct Draw<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Draw<'a> {
    pub fn new(bytes: &'a [u8]) -> Draw<'a> {
        Draw { bytes, at: 0 }
    }
    /// A number in lo..=hi.
    pub fn n(&mut self, lo: u64, hi: u64) -> u64 {
        let b = if self.bytes.is_empty() {
            (self.at as u64).wrapping_mul(2654435761) >> 7
        } else {
            self.bytes[self.at % self.bytes.len()] as u64 + (self.at / self.bytes.len()) as u64 * 31
        };
        self.at += 1;
        lo + b % (hi - lo + 1)
    }
}

pub fn offmate_instance(d: &mut Draw, tight: bool) -> Offmate {
    let l = d.n(1, 4) as usize;
    let mut params = Vec::new();
    let mut blocks: Vec<Block> = Vec::new();
    for b in 0..l {
        let mut names = Vec::new();
        if b > 0 && d.n(0, 3) == 0 {
            if let Some(prev) = blocks[b - 1].params.last() {
                names.push(prev.clone());
            }
        }
        for j in 0..d.n(1, 3) {
            let name = format!("p{b}_{j}");
            params.push(Param {
                name: name.clone(),
                bytes: Bytes(d.n(1, 8)),
                trainable: d.n(0, 3) > 0,
            });
            names.push(name);
        }
        let options = (0..d.n(1, 3))
            .map(|_| BlockOption {
                name: None,
                t_fwd: Ticks(d.n(1, 6) as i64),
                t_bwd: Ticks(d.n(1, 10) as i64),
                saved: Bytes(d.n(0, 6)),
                offloaded: Bytes(if d.n(0, 1) == 0 { 0 } else { d.n(1, 6) }),
                fwd_overhead: Bytes(d.n(0, 3)),
                bwd_overhead: Bytes(d.n(0, 3)),
            })
            .collect();
        blocks.push(Block {
            name: format!("b{b}"),
            out: Bytes(d.n(1, 4)),
            grad_out: None,
            params: names,
            options,
        });
    }
    let k = d.n(0, 2) as u32;
    let everything: u64 = 8
        + params
            .iter()
            .map(|p| p.bytes.0 * (k as u64 + 2))
            .sum::<u64>()
        + blocks
            .iter()
            .map(|b| {
                2 * b.out.0
                    + b.options
                        .iter()
                        .map(|o| o.saved.0 + o.offloaded.0 + 3)
                        .max()
                        .unwrap_or(0)
            })
            .sum::<u64>();
    let gpu = if tight {
        everything * d.n(30, 90) / 100
    } else {
        everything
    };
    Offmate {
        name: "gen".into(),
        note: None,
        input: Bytes(d.n(1, 3)),
        blocks,
        params,
        optimizer: Optimizer {
            states: k,
            gpu_speed: BandwidthFile::PerTick(d.n(1, 4)),
            cpu_speed: BandwidthFile::PerTick(d.n(1, 2)),
            gpu_temp_factor: d.n(0, 1) as u32,
        },
        cpu_management: Ticks(d.n(0, 3) as i64),
        gpu_memory: Bytes(gpu),
        cpu_memory: Bytes(everything * 4),
        bandwidth: BandwidthFile::PerTick(d.n(1, 4)),
        duplex: duplex(d),
        release: Default::default(),
        allocator: Default::default(),
    }
}

/// Half duplex with probability 1/3.
fn duplex(d: &mut Draw) -> Duplex {
    if d.n(0, 2) == 0 {
        Duplex::HalfDuplex
    } else {
        Duplex::FullDuplex
    }
}

/// A random plan in the ILP's shape for `off`.
pub fn offmate_plan(d: &mut Draw, off: &Offmate) -> StepPlan {
    let n = 2 * off.l();
    let groups = off.param_groups();
    let q = |d: &mut Draw| d.n(0, 4) as f64 / 4.0;
    let fractions = groups
        .iter()
        .map(|_| {
            (0..n)
                .map(|_| StepFractions {
                    sto: q(d),
                    ofl: q(d),
                    prf: 0.0,
                    sto_o: q(d),
                    ofl_o: q(d),
                    prf_o: 0.0,
                    opt: if d.n(0, 2) == 0 { q(d) } else { 0.0 },
                })
                .collect()
        })
        .collect();
    StepPlan {
        mode: IlpMode::Corrected,
        status: PlanStatus::Optimal,
        objective: 0.0,
        option: off
            .blocks
            .iter()
            .map(|b| d.n(0, b.options.len() as u64 - 1) as usize)
            .collect(),
        time: vec![0.0; n],
        groups,
        fractions,
    }
}

/// A tiny `offmate` instance with CPU Adam steps, within the exact search's
/// reach (`tests/it/offmate_exact.rs`): 1–2 blocks, 1–2 options each (t_fwd
/// 1–2, t_bwd 1–3, stored 0–3 B, nothing offloaded, no overheads), one
/// parameter per block (1–4 B, trainable with probability 3/4); k 0–1; α_G,
/// α_C 1–2 B/tick; β 1–4 B/tick; H = 0 (the search takes no `after` beside
/// CPU ops); full or half duplex; M_CPU out of reach; M_GPU everything
/// (roomy) or a random fraction of it down to a third (tight).
pub fn tiny_adam_instance(d: &mut Draw, tight: bool) -> Offmate {
    let l = d.n(1, 2) as usize;
    let mut params = Vec::new();
    let mut blocks = Vec::new();
    for b in 0..l {
        let name = format!("w{}", b + 1);
        params.push(Param {
            name: name.clone(),
            bytes: Bytes(d.n(1, 4)),
            trainable: d.n(0, 3) > 0,
        });
        let options = (0..d.n(1, 2))
            .map(|_| BlockOption {
                name: None,
                t_fwd: Ticks(d.n(1, 2) as i64),
                t_bwd: Ticks(d.n(1, 3) as i64),
                saved: Bytes(d.n(0, 3)),
                offloaded: Bytes(0),
                fwd_overhead: Bytes(0),
                bwd_overhead: Bytes(0),
            })
            .collect();
        blocks.push(Block {
            name: format!("b{}", b + 1),
            out: Bytes(d.n(1, 2)),
            grad_out: None,
            params: vec![name],
            options,
        });
    }
    let k = d.n(0, 1) as u32;
    let input = d.n(1, 2);
    let everything: u64 = input
        + params
            .iter()
            .map(|p| p.bytes.0 * (k as u64 + 2))
            .sum::<u64>()
        + blocks
            .iter()
            .map(|b| 2 * b.out.0 + b.options.iter().map(|o| o.saved.0).max().unwrap_or(0))
            .sum::<u64>();
    let gpu = if tight {
        (everything * d.n(33, 90) / 100).max(1)
    } else {
        everything
    };
    Offmate {
        name: "tiny-adam".into(),
        note: None,
        input: Bytes(input),
        blocks,
        params,
        optimizer: Optimizer {
            states: k,
            gpu_speed: BandwidthFile::PerTick(d.n(1, 2)),
            cpu_speed: BandwidthFile::PerTick(d.n(1, 2)),
            gpu_temp_factor: 0,
        },
        cpu_management: Ticks(0),
        gpu_memory: Bytes(gpu),
        cpu_memory: Bytes(everything * 4 + 64),
        bandwidth: BandwidthFile::PerTick(d.n(1, 4)),
        duplex: duplex(d),
        release: Default::default(),
        allocator: Default::default(),
    }
}

/// A random instance ([`offmate_instance`]), its compiled form and a random
/// plan ([`offmate_plan`]) post-processed (as the `AllGpu` baseline's plan
/// source) and realised step by step: the setup of the realiser's
/// properties. `None` where post-processing or the realiser refuses the plan
/// (the property discards the case).
pub fn realised_random_plan(
    bytes: &[u8],
    tight: bool,
) -> Option<(
    Offmate,
    offcert::model::Instance,
    offcert::heuristic::offmate::Rounded,
    offcert::heuristic::offmate::Realised,
)> {
    use offcert::family::InstanceFile;
    use offcert::heuristic::offmate::{self as om, Baseline, PlanSource};
    let mut d = Draw::new(bytes);
    let off = offmate_instance(&mut d, tight);
    let inst = InstanceFile::Offmate(off.clone()).compile().unwrap();
    let plan = offmate_plan(&mut d, &off);
    let source = PlanSource::Baseline(Baseline::AllGpu);
    let run = om::run_plan(&off, &inst, &plan, source).ok()?;
    let realised = om::realise(&off, &inst, &run.rounded).ok()?;
    Some((off, inst, run.rounded, realised))
}
