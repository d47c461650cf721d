//! Scale of the exact methods: for each method and family, solve chains of
//! growing length L with a per-solve time limit (default 60 s) and print a
//! time-vs-L table and the largest L proven optimal. Run:
//!   cargo bench --bench exact_scale                     (all methods, 60 s)
//!   OFFCERT_BENCH_SECS=10 OFFCERT_BENCH_METHODS=milp OFFCERT_BENCH_MAXL=12 cargo bench --bench exact_scale
//! Instances are deterministic (see `activation` and `weight` below); every
//! schedule is checked by the checker before its time counts.

use offcert::check::check;
use offcert::exact::{self, Limits, Method, Status};
use offcert::family::activation_chain::ActivationLayer;
use offcert::family::weight_chain::WeightLayer;
use offcert::family::{ActivationChain, BandwidthFile, InstanceFile, WeightChain};
use offcert::model::Instance;
use std::time::{Duration, Instant};

/// L layers; sizes 2..4 B, durations 1..4 ticks, beta 1 B per 2 ticks (a
/// transfer lasts 4..8 ticks), memory 70% of M_peak.
fn activation(l: usize) -> Instance {
    let layers: Vec<ActivationLayer> = (0..l)
        .map(|i| ActivationLayer {
            u_f: 1 + (i % 2) as i64,
            u_b: 2 + (i % 3) as i64,
            x: 2 + (i % 3) as u64,
            y: 1,
            ex_f: 0,
            ex_b: 1,
        })
        .collect();
    let mut a = ActivationChain {
        name: format!("bench-act-{l}"),
        note: None,
        layers,
        x_last: 2,
        y_last: 0,
        gpu_memory: 0,
        bandwidth: BandwidthFile::Ratio { bytes: 1, ticks: 2 },
        release: Default::default(),
        allocator: Default::default(),
    };
    let peak = a.m_peak().unwrap();
    a.gpu_memory = (peak * 7).div_ceil(10);
    let inst = InstanceFile::ActivationChain(a.clone()).compile().unwrap();
    // Keep every op's own footprint within the memory.
    let need = (0..inst.ops.len())
        .map(|k| offcert::semantics::op_footprint(&inst, offcert::model::OpId(k as u32)).0)
        .max()
        .unwrap();
    a.gpu_memory = a.gpu_memory.max(need + 2);
    InstanceFile::ActivationChain(a).compile().unwrap()
}

/// L layers; weights 1..3 B, activations 1 B, beta 1 B/tick, memory 75% of
/// (all tensors + the largest gradient).
fn weight(l: usize) -> Instance {
    let layers: Vec<WeightLayer> = (0..l)
        .map(|i| WeightLayer {
            u_f: 1 + (i % 2) as i64,
            u_b: 2 + (i % 2) as i64,
            w: 1 + (i % 3) as u64,
            a: 1,
        })
        .collect();
    let all: u64 = layers.iter().map(|x| x.w + x.a).sum::<u64>() + 1;
    let top = all + layers.iter().map(|x| x.w).max().unwrap();
    let mut w = WeightChain {
        name: format!("bench-weight-{l}"),
        note: None,
        layers,
        a0: 1,
        gpu_memory: (top * 3).div_ceil(4),
        bandwidth: BandwidthFile::PerTick(1),
        release: Default::default(),
        allocator: Default::default(),
    };
    let least = (1..=l).map(|i| w.mb(i).unwrap()).max().unwrap();
    w.gpu_memory = w.gpu_memory.max(least + 1);
    InstanceFile::WeightChain(w).compile().unwrap()
}

fn main() {
    let secs: u64 = std::env::var("OFFCERT_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let maxl: usize = std::env::var("OFFCERT_BENCH_MAXL")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16);
    let methods: Vec<Method> = std::env::var("OFFCERT_BENCH_METHODS")
        .unwrap_or("milp,smt,search".into())
        .split(',')
        .filter_map(|m| match m.trim() {
            "milp" => Some(Method::Milp),
            "smt" => Some(Method::Smt),
            "search" => Some(Method::Search),
            _ => None,
        })
        .collect();
    let machine =
        std::env::var("OFFCERT_BENCH_MACHINE").unwrap_or("(set OFFCERT_BENCH_MACHINE)".into());
    println!("exact_scale: time limit {secs} s per solve; machine: {machine}");
    println!();
    println!("| family | method | L | status | optimum | time (s) |");
    println!("|---|---|---|---|---|---|");
    let mut summary = Vec::new();
    for (family, gen) in [
        ("activation_chain", activation as fn(usize) -> Instance),
        ("weight_chain", weight),
    ] {
        for &m in &methods {
            let mut largest = 0;
            for l in 1..=maxl {
                let inst = gen(l);
                let limits = Limits {
                    time_limit: Duration::from_secs(secs),
                    ..Default::default()
                };
                let t = Instant::now();
                let r = exact::solve(m, &inst, &limits);
                let el = t.elapsed().as_secs_f64();
                let (status, opt) = match &r {
                    Ok(o) => {
                        let ms = o.schedule.as_ref().map(|s| {
                            let rep = check(&inst, s);
                            assert!(rep.valid, "{m:?} {family} L={l}: invalid schedule");
                            rep.makespan.0
                        });
                        (format!("{:?}", o.status).to_lowercase(), ms)
                    }
                    Err(e) => (format!("error: {e}"), None),
                };
                let ok = matches!(&r, Ok(o) if o.status == Status::Optimal || o.status == Status::Infeasible)
                    && el <= secs as f64;
                println!(
                    "| {family} | {} | {l} | {status} | {} | {el:.2} |",
                    format!("{m:?}").to_lowercase(),
                    opt.map(|x| x.to_string()).unwrap_or("-".into())
                );
                if !ok {
                    break;
                }
                largest = l;
            }
            summary.push((family, m, largest));
        }
    }
    println!();
    println!("| family | method | largest L proven optimal within {secs} s |");
    println!("|---|---|---|");
    for (f, m, l) in summary {
        println!("| {f} | {} | {l} |", format!("{m:?}").to_lowercase());
    }
}
