//! Benchmark (issue 13): import the ResNet execution trace
//! (`tests/data/traces/param_resnet_et.json.gz`, 3,705 functions), run the
//! window heuristic at the middle of its budget range, realise and check the
//! schedule; goal under 1 s. Also the linear ET with its Kineto trace.
//! Prints the median of 5 runs per stage.
//!
//! Run: `cargo bench --bench op_sequence`.

use offcert::check::check;
use offcert::family::{BandwidthFile, InstanceFile};
use offcert::heuristic::op_sequence::{plan::realise, Window};
use offcert::trace::et::{import, read_bytes, EtOptions};
use std::path::PathBuf;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run(name: &str, et: &str, kineto: Option<&str>) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/traces");
    let opts = EtOptions {
        name: name.into(),
        gpu_memory: None,
        bandwidth: BandwidthFile::PerTick(12),
        split_reused_storages: true,
    };
    let mut stages: Vec<Vec<f64>> = vec![vec![]; 5];
    let mut last = String::new();
    for _ in 0..5 {
        let t0 = Instant::now();
        let eb = read_bytes(&dir.join(et)).expect("trace");
        let kb = kineto.map(|k| read_bytes(&dir.join(k)).expect("kineto"));
        let (mut seq, _) = import(et, &eb, kineto.zip(kb.as_deref()), &opts).expect("import");
        let t1 = Instant::now();
        let u = seq.uses().expect("uses");
        seq.gpu_memory = (u.least_memory() + u.resident_peak()) / 2;
        let inst = InstanceFile::OpSequence(seq.clone())
            .compile()
            .expect("compile");
        let plan = Window::nnabla().plan(&u, seq.gpu_memory).expect("window");
        let t2 = Instant::now();
        let s = realise(&inst, &u, &plan);
        let t3 = Instant::now();
        let r = check(&inst, &s);
        let t4 = Instant::now();
        assert!(r.valid, "{:?}", r.violations.first());
        for (k, d) in [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0]
            .into_iter()
            .enumerate()
        {
            stages[k].push(d.as_secs_f64());
        }
        last = format!(
            "{} functions, {} variables, {} events, period {} ns",
            u.n(),
            u.bytes.len(),
            s.events.len(),
            r.makespan.0
        );
    }
    let m: Vec<f64> = stages.into_iter().map(median).collect();
    println!(
        "{name}: {last}\n  import {:.3} s, window {:.3} s, realise {:.3} s, check {:.3} s, total {:.3} s (median of 5){}",
        m[0], m[1], m[2], m[3], m[4],
        if m[4] < 1.0 { "  [goal < 1 s: met]" } else { "  [goal < 1 s: MISSED]" }
    );
}

fn main() {
    run("resnet", "param_resnet_et.json.gz", None);
    run(
        "linear",
        "param_linear_et.json.gz",
        Some("param_linear_kineto.json.gz"),
    );
}
