//! `offcert solve` (issue 3; being written).
use std::process::ExitCode;
#[derive(clap::Args, Debug)]
pub struct SolveArgs {
    pub instance: std::path::PathBuf,
}
pub fn run(_a: SolveArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`solve` is not implemented yet")
}
