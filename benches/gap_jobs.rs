//! The speed-up of `offcert gap --jobs N` (issue 21, rows in parallel): the
//! README's main job (`offcert gap`, every default instance at its own
//! budget, no time limit) run end to end with `--jobs 1` and then with each
//! N of `OFFCERT_GAP_JOBS`; each report must equal the `--jobs 1` one, byte
//! for byte (text), and the wall-clock times and speed-ups are printed.
//!
//! Run: `cargo bench --bench gap_jobs` (release profile). Environment:
//! - `OFFCERT_GAP_JOBS`: comma-separated job counts after 1 (default: 2 and
//!   the machine's cores, when more);
//! - `OFFCERT_GAP_ARGS`: the `gap` arguments, whitespace-separated (default:
//!   none, the main job), e.g. `instances/paper/activation --memory 0%:100%:3`.
//!
//! Wall-clock figures depend on the machine and its load: record both with
//! them (docs/RESULTS.md, "offcert gap --jobs N").

use std::process::Command;
use std::time::{Duration, Instant};

fn gap(args: &[String], jobs: usize) -> (Duration, String) {
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_offcert"))
        .arg("gap")
        .args(args)
        .args(["--quiet", "--jobs", &jobs.to_string()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("offcert runs");
    let wall = t.elapsed();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "offcert gap --jobs {jobs}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (wall, String::from_utf8_lossy(&out.stdout).into())
}

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let counts: Vec<usize> = match std::env::var("OFFCERT_GAP_JOBS") {
        Ok(v) if !v.is_empty() => v
            .split(',')
            .map(|n| n.trim().parse().expect("OFFCERT_GAP_JOBS: numbers"))
            .collect(),
        _ => {
            let mut v = vec![2];
            if cores > 2 {
                v.push(cores);
            }
            v
        }
    };
    let args: Vec<String> = std::env::var("OFFCERT_GAP_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    println!("offcert gap {} ({cores} cores available)", args.join(" "));
    let (base, report) = gap(&args, 1);
    let rows = report
        .lines()
        .filter(|l| l.starts_with("  memory "))
        .count();
    println!("--jobs 1: {:.1} s wall, {rows} rows", base.as_secs_f64());
    for n in counts {
        let (wall, r) = gap(&args, n);
        assert_eq!(r, report, "--jobs {n} changed the report");
        println!(
            "--jobs {n}: {:.1} s wall, speed-up {:.2}x, report identical to --jobs 1",
            wall.as_secs_f64(),
            base.as_secs_f64() / wall.as_secs_f64()
        );
    }
}
