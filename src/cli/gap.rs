//! `offcert bound|heuristic|gap|sweep` (issue 4; being written).
use std::process::ExitCode;
#[derive(clap::Args, Debug)]
pub struct BoundArgs {
    pub instance: std::path::PathBuf,
}
#[derive(clap::Args, Debug)]
pub struct HeuristicArgs {
    pub instance: std::path::PathBuf,
}
#[derive(clap::Args, Debug)]
pub struct GapArgs {
    pub instances: Vec<std::path::PathBuf>,
}
#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    pub instance: std::path::PathBuf,
}
pub fn run_bound(_a: BoundArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`bound` is not implemented yet")
}
pub fn run_heuristic(_a: HeuristicArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`heuristic` is not implemented yet")
}
pub fn run_gap(_a: GapArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`gap` is not implemented yet")
}
pub fn run_sweep(_a: SweepArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`sweep` is not implemented yet")
}
