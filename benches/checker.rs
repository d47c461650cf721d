//! Benchmark: check a generated valid schedule of 1,000,000 events (issue 2,
//! item 11; goal < 1 s on the 2-core development machine).
//!
//! The instance is an activation chain of 250,000 layers (u_F = u_B = 2 ticks,
//! |x_i| = 4 B, β = 2 B/tick, so every transfer takes 2 ticks). The schedule
//! offloads every x_i during F_i and prefetches it during B_{i+1}: 250,000
//! forward ops, 250,000 backward ops, 250,000 offloads and 250,000 prefetches,
//! with the link busy almost all the time. It prints the parse time of the
//! schedule file and the best of several `check` runs; it fails if the schedule
//! is not valid (so the figure is for a full, clean replay).
//!
//! Run: `cargo bench --bench checker` (release build), or without rebuilding the
//! dependencies in release: `CARGO_PROFILE_DEV_OPT_LEVEL=3 cargo bench --profile dev --bench checker`.

use offcert::check::check;
use offcert::family::activation_chain::{ActivationChain, ActivationLayer};
use offcert::family::BandwidthFile;
use offcert::model::{Direction, Instance};
use offcert::schedule::{Event, Schedule, ScheduleFile};
use offcert::units::Ticks;
use std::time::{Duration, Instant};

/// CPU time of this thread so far (user + system), from /proc (Linux), so that
/// the figure means something on a shared, loaded machine. `None` elsewhere.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are the
    // 14th and 15th fields of the whole line, in clock ticks (100 per second on
    // Linux unless configured otherwise).
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

fn main() {
    let n: usize = std::env::var("OFFCERT_BENCH_LAYERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(250_000);
    let (chain, inst) = instance(n);
    let sched = schedule(&chain, n);
    println!("events: {}", sched.events.len());
    time_parse(&inst, &sched);
    time_check(&inst, &sched);
    time_digests(&inst, &sched);
}

/// The chain of `n` layers of the module docs, and its instance.
fn instance(n: usize) -> (ActivationChain, Instance) {
    let chain = ActivationChain {
        name: "bench".into(),
        note: None,
        layers: vec![
            ActivationLayer {
                u_f: 2,
                u_b: 2,
                x: 4,
                y: 0,
                ex_f: 0,
                ex_b: 0,
            };
            n
        ],
        x_last: 4,
        y_last: 0,
        gpu_memory: 64,
        bandwidth: BandwidthFile::PerTick(2),
        release: Default::default(),
        allocator: Default::default(),
    };
    let inst = chain.compile().expect("valid instance");
    (chain, inst)
}

/// The valid schedule of the module docs: every x_i offloaded during F_i and
/// prefetched during B_{i+1}.
fn schedule(chain: &ActivationChain, n: usize) -> Schedule {
    let t = |x: usize| Ticks(x as i64);
    let mut events = Vec::with_capacity(4 * n);
    // Forward: F_i [2i, 2i+2); x_i offloaded [2i, 2i+2) and released at its end.
    for i in 0..n {
        events.push(Event::Compute {
            op: chain.f_id(i),
            start: t(2 * i),
            end: t(2 * i + 2),
        });
        events.push(Event::Transfer {
            dir: Direction::Offload,
            tensor: chain.x_id(i),
            start: t(2 * i),
            end: t(2 * i + 2),
            delete: true,
        });
    }
    // Backward from T = 2n: x_{n-1} comes back [T, T+2); B_i runs
    // [T + 2(n-i), T + 2(n-i) + 2) while x_{i-1} comes back.
    let end_f = 2 * n;
    events.push(Event::Transfer {
        dir: Direction::Prefetch,
        tensor: chain.x_id(n - 1),
        start: t(end_f),
        end: t(end_f + 2),
        delete: false,
    });
    for i in (0..n).rev() {
        let s = end_f + 2 * (n - i);
        events.push(Event::Compute {
            op: chain.b_id(i),
            start: t(s),
            end: t(s + 2),
        });
        if i > 0 {
            events.push(Event::Transfer {
                dir: Direction::Prefetch,
                tensor: chain.x_id(i - 1),
                start: t(s),
                end: t(s + 2),
                delete: false,
            });
        }
    }
    Schedule::one_shot(events)
}

/// Parse time of the schedule file (names resolved against the instance).
fn time_parse(inst: &Instance, sched: &Schedule) {
    let text = serde_json::to_string(&ScheduleFile::from_schedule(sched, inst)).unwrap();
    let t0 = Instant::now();
    let parsed = offcert::io::parse_schedule("bench.schedule.json", &text, inst).unwrap();
    let parse = t0.elapsed();
    assert_eq!(&parsed, sched);
    println!(
        "parse: {:.3} s ({} MB of JSON)",
        parse.as_secs_f64(),
        text.len() / 1_000_000
    );
}

/// The best of three `check` runs, wall and CPU time; each must be valid.
fn time_check(inst: &Instance, sched: &Schedule) {
    let mut best = Duration::MAX;
    let mut best_cpu = Duration::MAX;
    for run in 0..3 {
        let c0 = cpu_time();
        let t0 = Instant::now();
        let r = check(inst, sched);
        let took = t0.elapsed();
        if let (Some(a), Some(b)) = (c0, cpu_time()) {
            best_cpu = best_cpu.min(b - a);
        }
        assert!(r.valid, "{:?}", &r.violations[..r.violations.len().min(5)]);
        if run == 0 {
            println!(
                "valid: makespan {} ticks, peak {} B, link busy {} ticks",
                r.makespan, r.peak_memory, r.channel_busy[0].busy
            );
        }
        best = best.min(took);
    }
    println!(
        "check: best of 3 = {:.3} s wall, {:.2} s CPU",
        best.as_secs_f64(),
        best_cpu.as_secs_f64()
    );
}

/// What part of that is the report's canonical digests of the instance and
/// the schedule (the same functions the checker calls).
fn time_digests(inst: &Instance, sched: &Schedule) {
    let t0 = Instant::now();
    let a = offcert::check::instance_digest(inst);
    let b = offcert::check::schedule_digest(sched);
    println!(
        "  of which hashing instance and schedule: about {:.3} s ({} {})",
        t0.elapsed().as_secs_f64(),
        &a[..8],
        &b[..8]
    );
}
