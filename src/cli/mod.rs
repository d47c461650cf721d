//! Command-line definitions and handlers: one file per subcommand, each a thin
//! layer over library functions. Errors are `anyhow` here and only here.

pub mod audit;
pub mod check;
pub mod examples;
pub mod export;
pub mod gap;
pub mod import;
pub mod solve;

use clap::{Parser, Subcommand};
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
    Solve(solve::SolveArgs),
    /// The papers' lower bounds for an instance.
    Bound(gap::BoundArgs),
    /// Run one of the papers' heuristics and check its schedule.
    Heuristic(gap::HeuristicArgs),
    /// Optimality-gap report: heuristics against bounds and optima.
    Gap(gap::GapArgs),
    /// Generate a series of memory budgets of one instance.
    Sweep(gap::SweepArgs),
    /// Audit a runtime trace (Kineto JSON or Nsight Systems SQLite).
    Audit(audit::AuditArgs),
    /// Export a schedule as a Chrome-trace JSON (Perfetto, chrome://tracing).
    ExportTrace(export::ExportArgs),
    /// Import a rotor or rockmate chain as a `remat_chain` instance file.
    Import(import::ImportArgs),
}

pub fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Check(a) => check::run(a),
        Command::Examples(a) => examples::run(a),
        Command::Solve(a) => solve::run(a),
        Command::Bound(a) => gap::run_bound(a),
        Command::Heuristic(a) => gap::run_heuristic(a),
        Command::Gap(a) => gap::run_gap(a),
        Command::Sweep(a) => gap::run_sweep(a),
        Command::Audit(a) => audit::run(a),
        Command::ExportTrace(a) => export::run(a),
        Command::Import(a) => import::run(a),
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

/// Exit code for a verdict.
pub fn verdict_code(valid: bool) -> ExitCode {
    if valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
