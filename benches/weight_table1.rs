//! Table 1 of the weight paper, recomputed on our paper-scale instances, with the
//! speed figures. `cargo bench --bench weight_table1 [-- FILTER] [--milp-seconds N]`
//! prints a markdown table: Σu, the certified LP bound, the §6 MILP bound (HiGHS,
//! solver-reported), Greedy, L2L and Greedy* (checker-validated periods), next to
//! the paper's numbers, and the wall time of each computation.

#[path = "../tests/it/weight_table1/mod.rs"]
mod table1;

use offcert::bound::weight::{Sec6Certified, Sec6Milp};
use offcert::family::InstanceFile;
use offcert::heuristic::{run, weight};
use std::time::{Duration, Instant};

fn ms(ticks: i64) -> String {
    format!("{:.0}", ticks as f64 / 1000.0)
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mut milp_seconds = 60u64;
    let mut filter = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--milp-seconds" {
            milp_seconds = it
                .next()
                .and_then(|s| s.parse().ok())
                .expect("--milp-seconds N");
        } else {
            filter.push(a.clone());
        }
    }
    println!("| instance | Σu | LP bound (cert.) | §6 MILP | Greedy | L2L | Greedy* | paper ILP / Greedy / L2L / Greedy* | times: LP, MILP, Greedy, Greedy*, L2L |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for row in table1::TABLE1.iter() {
        let name = row.name();
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let chain = table1::derive(row);
        let file = InstanceFile::WeightChain(chain.clone());
        let inst = file.compile().expect("paper instance compiles");
        let t = Instant::now();
        let cert = Sec6Certified::default().compute(&chain);
        let t_cert = t.elapsed();
        let t = Instant::now();
        let milp = Sec6Milp {
            time_limit: Duration::from_secs(milp_seconds),
            ..Default::default()
        }
        .compute(&chain);
        let t_milp = t.elapsed();
        let mut cells = Vec::new();
        let mut times = vec![
            format!("{:.2}s", t_cert.as_secs_f64()),
            format!("{:.1}s", t_milp.as_secs_f64()),
        ];
        for h in weight::heuristics() {
            let t = Instant::now();
            let r = run(h.as_ref(), &file, &inst);
            times.push(format!("{:.3}s", t.elapsed().as_secs_f64()));
            cells.push(match r {
                Ok(r) => ms(r.checked.report().makespan.0),
                Err(e) => format!("error: {e}"),
            });
        }
        let show = |b: &Result<offcert::bound::LowerBound, offcert::bound::BoundError>| match b {
            Ok(b) => ms(b.ceil_ticks()),
            Err(e) => format!("error: {e}"),
        };
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} / {} / {} / {} | {} |",
            row.sum_u,
            show(&cert),
            show(&milp),
            cells[0],
            cells[2],
            cells[1],
            row.ilp,
            row.greedy,
            row.l2l,
            row.greedy_star,
            times.join(", ")
        );
    }
}
