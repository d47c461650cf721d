//! Benchmark: import and audit a large synthetic Kineto trace (goal: 1 GB in under
//! 20 s and under 2 GB of memory). The trace is generated here, into a temporary
//! directory, never committed. Size: `OFFCERT_TRACE_BENCH_MB` (default 1024).
//! Peak memory is the process's VmHWM from /proc/self/status (Linux).
//!
//! Run: `cargo bench --bench trace_import`.

use offcert::trace::audit::{audit_trace, LinkRate, Options};
use offcert::units::Bytes;
use std::io::Write;
use std::time::Instant;

fn vm_hwm_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Write a Kineto-like trace of about `target` bytes: per step a CPU op with a
/// call stack, a runtime launch with its flow arrows, a kernel, and every 16th step
/// a copy and a pair of `[memory]` events; fractional µs relative to a base time.
fn generate(path: &std::path::Path, target: u64) -> std::io::Result<(u64, u64)> {
    let f = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    write!(w, "{{\"schemaVersion\": 1, \"baseTimeNanoseconds\": 1700000000000000000, \"deviceProperties\": [{{\"id\": 0, \"name\": \"synthetic\"}}],\n\"traceEvents\": [\n")?;
    let mut written: u64 = 0;
    let mut events: u64 = 0;
    let mut t: u64 = 0; // ns
    let mut step: u64 = 0;
    let mut first = true;
    let us = |ns: u64| format!("{}.{:03}", ns / 1000, ns % 1000);
    while written < target {
        let mut chunk = String::with_capacity(2048);
        let corr = step + 1;
        chunk.push_str(&format!(
            "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::conv2d\", \"pid\": 4242, \"tid\": 4242, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {corr}, \"Sequence number\": {step}, \"Input Dims\": [[32, 64, 56, 56], [64, 64, 3, 3], [], [], [], [], []], \"Call stack\": \"model.py(42): forward;torch/nn/modules/module.py(1130): _call_impl\"}}}},\n",
            us(t), us(9_500)
        ));
        chunk.push_str(&format!(
            "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 4242, \"tid\": 4242, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {corr}, \"cbid\": 211, \"correlation\": {corr}}}}},\n",
            us(t + 100), us(3_250)
        ));
        chunk.push_str(&format!("{{\"ph\": \"s\", \"id\": {corr}, \"pid\": 4242, \"tid\": 4242, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\"}},\n", us(t + 100)));
        chunk.push_str(&format!("{{\"ph\": \"f\", \"id\": {corr}, \"pid\": 0, \"tid\": 7, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}},\n", us(t + 4_000)));
        chunk.push_str(&format!(
            "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void cudnn::cnn::conv2d_grouped_direct_kernel<float, float, float, float, float, true, false, 0, 0, 0>(cudnn::cnn::GroupedDirectFpropParams, float const*, float const*, float*, float, float)\", \"pid\": 0, \"tid\": 7, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {corr}, \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 7, \"correlation\": {corr}, \"registers per thread\": 64, \"shared memory\": 12288, \"blocks per SM\": 3.2, \"warps per SM\": 12.8, \"grid\": [196, 1, 32], \"block\": [256, 1, 1], \"est. achieved occupancy %\": 50}}}}",
            us(t + 4_000), us(5_000)
        ));
        events += 5;
        if step % 16 == 0 {
            chunk.push_str(&format!(
                ",\n{{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pinned -> Device)\", \"pid\": 0, \"tid\": 20, \"ts\": {}, \"dur\": {}, \"args\": {{\"device\": 0, \"context\": 1, \"stream\": 20, \"correlation\": {corr}, \"bytes\": 4194304, \"memory bandwidth (GB/s)\": 11.9}}}}",
                us(t + 1_000), us(400_000)
            ));
            chunk.push_str(&format!(
                ",\n{{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 4242, \"tid\": 4242, \"ts\": {}, \"args\": {{\"Device Type\": 1, \"Device Id\": 0, \"Addr\": 140000000000, \"Bytes\": 4194304, \"Total Allocated\": {}, \"Total Reserved\": 8589934592}}}}",
                us(t + 1_000), 1_000_000_000u64 + 4_194_304
            ));
            chunk.push_str(&format!(
                ",\n{{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 4242, \"tid\": 4242, \"ts\": {}, \"args\": {{\"Device Type\": 1, \"Device Id\": 0, \"Addr\": 140000000000, \"Bytes\": -4194304, \"Total Allocated\": 1000000000, \"Total Reserved\": 8589934592}}}}",
                us(t + 9_000)
            ));
            events += 3;
        }
        if !first {
            w.write_all(b",\n")?;
            written += 2;
        }
        first = false;
        w.write_all(chunk.as_bytes())?;
        written += chunk.len() as u64;
        t += 10_000;
        step += 1;
    }
    w.write_all(b"\n]}\n")?;
    w.flush()?;
    Ok((written, events))
}

fn main() {
    // `cargo bench` passes `--bench`; ignore arguments.
    let mb: u64 = std::env::var("OFFCERT_TRACE_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let dir = std::env::temp_dir().join(format!("offcert-trace-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("synthetic.pt.trace.json");
    let t0 = Instant::now();
    let (bytes, events) = generate(&path, mb << 20).expect("write the synthetic trace");
    let gen = t0.elapsed();
    let hwm_before = vm_hwm_kib();
    let t1 = Instant::now();
    let trace = offcert::trace::load(&path).expect("import");
    let import = t1.elapsed();
    let t2 = Instant::now();
    let opts = Options {
        budget: Some(Bytes(2_000_000_000)),
        link: Some(LinkRate::from_gbps("12").unwrap()),
        ..Options::default()
    };
    let a = audit_trace(&trace, &opts);
    let audit = t2.elapsed();
    let hwm = vm_hwm_kib();
    assert_eq!(trace.total_events, events, "every generated event is read");
    println!(
        "trace_import: {:.1} MB, {} events (generated in {:.1} s)",
        bytes as f64 / 1e6,
        events,
        gen.as_secs_f64()
    );
    println!(
        "  import  {:>7.2} s  ({:.0} MB/s)",
        import.as_secs_f64(),
        bytes as f64 / 1e6 / import.as_secs_f64()
    );
    println!(
        "  audit   {:>7.2} s  ({} kernels, {} copies, {} violations)",
        audit.as_secs_f64(),
        trace.kernels().count(),
        trace.copies().count(),
        a.violations()
    );
    println!("  total   {:>7.2} s", (import + audit).as_secs_f64());
    println!(
        "  peak RSS (VmHWM) {} MiB (before import: {} MiB)",
        hwm.map_or(0, |k| k / 1024),
        hwm_before.map_or(0, |k| k / 1024)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
