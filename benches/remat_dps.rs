//! Speed of the `remat_chain` dynamic programmes (rotor, pofo, offload-only)
//! on the bundled paper chains. Goal (issue 11): every bundled chain's five
//! budgets of `offcert gap --memory min:peak:5` in a few minutes at most on the
//! 2-core development machine, i.e. pofo on the longest chain (DenseNet-201,
//! 103 layers) well under a minute per budget.
//!
//! Run: `cargo bench --bench remat_dps` (release profile). Budgets: 25 %, 50 %
//! and 75 % of the way from the least feasible memory to the keep-everything
//! peak, as `--memory P%` takes them.

use offcert::family::remat_chain::RematChain;
use offcert::family::InstanceFile;
use offcert::heuristic::remat::pofo::Pofo;
use offcert::heuristic::remat::rotor::Table;
use offcert::heuristic::remat::DEFAULT_SLOTS;
use std::time::Instant;

fn load(name: &str) -> RematChain {
    let path = format!(
        "{}/instances/paper/remat/{name}-remat.json",
        env!("CARGO_MANIFEST_DIR")
    );
    match offcert::io::load_instance(std::path::Path::new(&path))
        .unwrap()
        .0
    {
        InstanceFile::RematChain(c) => c,
        _ => panic!("{path} is not a remat chain"),
    }
}

fn at_percent(c: &RematChain, pct: u64) -> RematChain {
    let (lo, hi) = (c.min_memory().unwrap(), c.store_all_peak().unwrap());
    let mut c = c.clone();
    c.gpu_memory = lo + (hi - lo) * pct / 100;
    c
}

fn secs(f: impl FnOnce() -> Option<f64>) -> (f64, Option<f64>) {
    let t = Instant::now();
    let v = std::hint::black_box(f());
    (t.elapsed().as_secs_f64(), v)
}

fn main() {
    for name in [
        "resnet101-224px-b32",
        "densenet121-224px-b32",
        "densenet201-224px-b32",
    ] {
        let c0 = load(name);
        for pct in [25, 50, 75] {
            let c = at_percent(&c0, pct);
            let (tr, r) = secs(|| Table::build(&c, DEFAULT_SLOTS).value().map(|v| v as f64));
            let (tp, p) = secs(|| Pofo::default().solve_afresh(&c).map(|p| p.model_value));
            let (to, o) = secs(|| Pofo::offload_only().solve_afresh(&c).map(|p| p.model_value));
            println!(
                "{name:<24} L={:<4} {pct:>3}%  rotor {tr:>7.3} s ({r:?})  pofo {tp:>7.3} s ({p:?})  offload-only {to:>7.3} s ({o:?})",
                c.layers.len()
            );
        }
    }
}
