//! Speed of DYNPROG (S = 500) and the other activation heuristics and bounds on
//! paper-scale chains. Goal (issue 4): DYNPROG on 150 layers under 1 s on the
//! 2-core development machine.
//!
//! Run: `cargo bench --bench activation_dynprog` (release profile). Chains: the
//! bundled DenseNet-201 (104 layers) at its own memory, and a 150-layer chain
//! made by repeating DenseNet-201's layers (synthetic: the x sizes of a repeated
//! layer do not continue the previous one's output, which the model allows), at
//! 25 %, 50 % and 75 % of the way from the least feasible memory to M_peak,
//! and the same at 0 % (the least memory), where the whole-tensor window bound
//! has the most windows to search.

use offcert::bound::activation::{fractional_optimum, whole_tensor_windows, ChainProfile};
use offcert::family::{ActivationChain, InstanceFile};
use offcert::heuristic::activation::dynprog::dynprog;
use offcert::heuristic::{self, Heuristic};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time<T>(reps: usize, mut f: impl FnMut() -> T) -> Duration {
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                t.elapsed()
            })
            .collect(),
    )
}

fn load(name: &str) -> ActivationChain {
    let path = format!(
        "{}/instances/paper/activation/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let (f, _) = offcert::io::load_instance(std::path::Path::new(&path)).unwrap();
    match f {
        InstanceFile::ActivationChain(c) => c,
        _ => panic!("{path} is not an activation chain"),
    }
}

fn at_percent(c: &ActivationChain, pct: u64) -> ActivationChain {
    let p = ChainProfile::new(c);
    let (lo, hi) = (p.min_memory() as u64, p.m_peak() as u64);
    let mut c = c.clone();
    c.gpu_memory = lo + (hi - lo) * pct / 100;
    c
}

fn bench(label: &str, c: &ActivationChain) {
    let file = InstanceFile::ActivationChain(c.clone());
    let inst = file.compile().unwrap();
    let dp = time(5, || dynprog(c, &inst, 500));
    let rounds = dynprog(c, &inst, 500)
        .map(|(d, s)| format!("{} offloaded, makespan {}", d.offload.len(), s.last_end().0))
        .unwrap_or_else(|e| e.to_string());
    let frac = time(5, || fractional_optimum(c));
    let win = time(3, || whole_tensor_windows(c, c.release));
    println!(
        "{label:<40} L+1={:<4} dynprog(S=500) {:>9.3} ms ({rounds}); fractional bound {:>7.3} ms; whole-tensor windows {:>7.3} ms",
        c.layers.len(),
        dp.as_secs_f64() * 1e3,
        frac.as_secs_f64() * 1e3,
        win.as_secs_f64() * 1e3
    );
    for h in heuristic::all().iter().filter(|h| h.applies(&file)) {
        let t = time(3, || {
            heuristic::run(h.as_ref() as &dyn Heuristic, &file, &inst)
        });
        println!(
            "    {:<12} checked run {:>9.3} ms",
            h.name(),
            t.as_secs_f64() * 1e3
        );
    }
}

fn main() {
    let d201 = load("densenet201-224px-b32");
    bench("densenet201-224px-b32 (own memory)", &d201);
    let mut long = d201.clone();
    long.name = "densenet201x150".into();
    long.layers = (0..150)
        .map(|i| d201.layers[i % d201.layers.len()].clone())
        .collect();
    for pct in [0, 25, 50, 75] {
        bench(
            &format!("150-layer DenseNet-201 repeat @ {pct}%"),
            &at_percent(&long, pct),
        );
    }
}
