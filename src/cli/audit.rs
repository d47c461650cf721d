//! `offcert audit` (issue 5; being written).
use std::process::ExitCode;
#[derive(clap::Args, Debug)]
pub struct AuditArgs {
    pub trace: std::path::PathBuf,
}
pub fn run(_a: AuditArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`audit` is not implemented yet")
}
