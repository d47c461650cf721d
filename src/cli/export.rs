//! `offcert export-trace` (issue 5; being written).
use std::process::ExitCode;
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    pub instance: std::path::PathBuf,
    pub schedule: std::path::PathBuf,
    #[arg(short = 'o')]
    pub out: std::path::PathBuf,
}
pub fn run(_a: ExportArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`export-trace` is not implemented yet")
}
