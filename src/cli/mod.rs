//! Command-line definitions and handlers: one file per subcommand, each a thin
//! layer over library functions. Errors are `anyhow` here and only here.
//!
//! Owns: the argument definitions, `run` and the exit-code mapping.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

pub mod audit;
pub mod bound;
pub mod check;
pub mod examples;
pub mod export;
pub mod gap;
pub mod heuristic;
pub mod import;
pub mod import_offmate;
pub mod import_sequence;
pub mod offmate;
pub mod plot;
pub mod solve;
pub mod sweep;
pub mod table1;

use anyhow::Context;
use clap::{Parser, Subcommand};
use std::path::Path;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "offcert",
    version,
    about = "Provable GPU-memory offloading schedules"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Replay a schedule against an instance; exit 0 valid, 1 invalid, 2 bad input.
    Check(check::CheckArgs),
    /// Check every bundled example schedule and print its verdict.
    Examples(examples::ExamplesArgs),
    /// Exact optimum of a small instance (MILP, SMT, search), cross-checked.
    #[command(
        after_help = "Exit codes: 0 a schedule was found and checked (optimal or feasible); \
1 no schedule: infeasible, or no result (every method failed, was outside its scope, or \
stopped at the time limit without a schedule; each method's reason is printed); \
2 bad input (the file and the field named) or a bad option."
    )]
    Solve(solve::SolveArgs),
    /// The papers' lower bounds for an instance.
    Bound(bound::BoundArgs),
    /// Run one of the papers' heuristics and check its schedule.
    Heuristic(heuristic::HeuristicArgs),
    /// Optimality-gap report: heuristics against bounds and optima.
    Gap(gap::GapArgs),
    /// Generate a series of memory budgets of one instance.
    Sweep(sweep::SweepArgs),
    /// Audit a runtime trace (Kineto JSON or Nsight Systems SQLite).
    Audit(audit::AuditArgs),
    /// Export a schedule as a Chrome-trace JSON (Perfetto, chrome://tracing).
    ExportTrace(export::ExportArgs),
    /// Check a schedule and draw it as SVG: lanes, memory curve, violations marked.
    Plot(plot::PlotArgs),
    /// Import a program as an instance (`import et`: a PyTorch execution trace).
    Import(import::ImportArgs),
    /// OFFMATE end to end: ILP, post-processing, realiser, checker (and baselines).
    Offmate(offmate::OffmateArgs),
    /// The out-of-core paper's Table 1 on a synthetic ResNet-50 (window heuristic, checked).
    WindowTable1(table1::Table1Args),
}

pub fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Check(a) => check::run(a),
        Command::Examples(a) => examples::run(a),
        Command::Solve(a) => solve::run(a),
        Command::Bound(a) => bound::run(a),
        Command::Heuristic(a) => heuristic::run(a),
        Command::Gap(a) => gap::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Audit(a) => audit::run(a),
        Command::ExportTrace(a) => export::run(a),
        Command::Plot(a) => plot::run(a),
        Command::Import(a) => import::run(a),
        Command::WindowTable1(a) => table1::run(a),
        Command::Offmate(a) => offmate::run(a),
    }
}

/// `--release RULE`: override the instance file's release rule (R10).
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct ReleaseOpt {
    /// Release rule, overriding the instance file's: `after_end` (the default:
    /// an operation holds its operands until it ends) or `after_start` (a
    /// relaxation, optimistic: an op needs its inputs only at its start).
    #[arg(long, value_name = "RULE")]
    pub release: Option<crate::model::ReleaseRule>,
}

impl ReleaseOpt {
    pub fn apply(self, inst: &mut crate::model::Instance) {
        if let Some(r) = self.release {
            inst.release = r;
        }
    }
    pub fn apply_file(self, f: &mut crate::family::InstanceFile) {
        if let Some(r) = self.release {
            f.set_release(r);
        }
    }
}

/// `--allocator A`: the allocator R7 counts with (MODEL.md §2.8),
/// overriding the instance file's.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct AllocatorOpt {
    /// Allocator R7 counts with, overriding the instance file's: `exact` (the
    /// default, the papers' model: exact bytes), `va:CHUNK` (virtual
    /// addressing: every GPU allocation rounded up to whole chunks, e.g.
    /// `va:40MB`, `va:2MiB`) or `caching` (a model of PyTorch's caching
    /// best-fit allocator).
    #[arg(long, value_name = "A")]
    pub allocator: Option<crate::model::Allocator>,
}

impl AllocatorOpt {
    /// The allocator in force: the flag's, else the instance's.
    pub fn chosen(self, inst: &crate::model::Instance) -> crate::model::Allocator {
        self.allocator.unwrap_or(inst.allocator)
    }
    pub fn apply(self, inst: &mut crate::model::Instance) {
        inst.allocator = self.chosen(inst);
    }
}

/// The line a report under a non-default allocator adds (none under `exact`).
pub fn allocator_line(a: crate::model::Allocator) -> Option<String> {
    (!a.is_default()).then(|| format!("allocator: {a} ({})", a.describe()))
}

/// The instance file at `path` under `release`, at the one budget given by
/// `memory` (bytes with K/M/G suffixes, `min`, `peak` or `P%`; default: the
/// file's own), compiled. The file is loaded and checked as given first, so bad
/// input fails before the budget is parsed.
pub fn load_at_memory(
    path: &Path,
    release: ReleaseOpt,
    memory: Option<&str>,
) -> anyhow::Result<(crate::family::InstanceFile, crate::model::Instance)> {
    let text = crate::io::read_text(path)?;
    let (_, f) = file_at_memory(path, &text, release, memory)?;
    let inst = f.compile().with_context(|| path.display().to_string())?;
    Ok((f, inst))
}

/// The instance file `text` (read from `path`) as given, checked (it must
/// compile), and as used: under `release` and at the budget `memory` (see
/// [`load_at_memory`]), not yet compiled.
pub fn file_at_memory(
    path: &Path,
    text: &str,
    release: ReleaseOpt,
    memory: Option<&str>,
) -> anyhow::Result<(crate::family::InstanceFile, crate::family::InstanceFile)> {
    let (given, _) = crate::io::parse_instance(&path.display().to_string(), text)?;
    let mut used = given.clone();
    release.apply_file(&mut used);
    if let Some(spec) = memory {
        let b = crate::report::BudgetSpec::parse(spec)
            .and_then(|s| s.budgets(&used))
            .with_context(|| format!("--memory {spec}"))?;
        used = crate::report::with_budget(&used, b[0]);
    }
    Ok((given, used))
}

/// The first line of a per-instance listing: file, family, memory and release rule.
pub fn instance_line(
    path: &Path,
    file: &crate::family::InstanceFile,
    inst: &crate::model::Instance,
) -> String {
    format!(
        "instance {} ({}), memory {}, release rule {}{}",
        path.display(),
        file.family(),
        crate::units::Bytes(file.gpu_memory()).human(),
        inst.release,
        file.tick_unit()
            .map_or(String::new(), |u| format!(", 1 tick = {u}"))
    )
}

/// Every option that takes an amount of memory parses it here, with the one
/// parser [`crate::units::Bytes::parse`] (`1500`, `2G`, `1.5GB`, `64MiB`, …).
pub fn bytes_arg(s: &str) -> Result<u64, String> {
    crate::units::Bytes::parse(s)
        .map(|b| b.0)
        .map_err(|e| e.to_string())
}

/// Every wall-clock limit (`--time-limit`): a time with the one parser
/// [`crate::units::parse_ns`] (`90`, `90s`, `1.5m`, `500ms`; a bare number is
/// in seconds), positive; as seconds.
pub fn seconds_arg(s: &str) -> Result<f64, String> {
    let ns = crate::units::parse_ns(s, Some("s")).map_err(|e| e.to_string())?;
    if ns == 0 {
        return Err(format!("`{s}`: must be positive"));
    }
    Ok(ns as f64 / 1e9)
}

/// A time as a positive whole number of `unit` (`ns`, `us`, `s`; also the
/// bare-number unit), with the one parser.
fn whole_time(s: &str, unit: &str, per: u128) -> Result<u64, String> {
    let ns = crate::units::parse_ns(s, Some(unit)).map_err(|e| e.to_string())?;
    if ns == 0 || ns % per != 0 {
        return Err(format!("`{s}`: must be a positive whole number of {unit}"));
    }
    u64::try_from(ns / per).map_err(|_| format!("`{s}`: too large"))
}

/// `--tick-ns`: a tick length (`1000`, `1us`, `250ns`; bare: nanoseconds).
pub fn tick_ns_arg(s: &str) -> Result<i64, String> {
    let v = whole_time(s, "ns", 1)?;
    i64::try_from(v).map_err(|_| format!("`{s}`: too large"))
}

/// `--tick-us`: a tick length in whole microseconds (`1`, `10us`, `1ms`).
pub fn tick_us_arg(s: &str) -> Result<u64, String> {
    whole_time(s, "us", 1_000)
}

/// A limit in whole seconds (`60`, `60s`, `2m`).
pub fn whole_seconds_arg(s: &str) -> Result<u64, String> {
    whole_time(s, "s", 1_000_000_000)
}

/// Exit code for a verdict.
pub fn verdict_code(valid: bool) -> ExitCode {
    if valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
