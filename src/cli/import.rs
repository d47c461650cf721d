//! `offcert import rotor|rockmate FILE -o OUT.json`: convert a rotor chain
//! literal or a rockmate `RK_Chain` JSON dump into a `remat_chain` instance file.
//! Exit 0 when written, 2 on bad input (the file and the field named).

use crate::family::remat_import::{import_rockmate, import_rotor, ImportOptions};
use crate::family::InstanceFile;
use crate::io;
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Source {
    /// rotor's printed `ChainStr` (a Python list of 6-tuples) or a dict of `Chain` attributes.
    Rotor,
    /// A JSON dump of rockmate's `RK_Chain`.
    Rockmate,
}

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    pub source: Source,
    /// The chain file.
    pub file: PathBuf,
    /// Output `remat_chain` instance file.
    #[arg(short = 'o', long = "output")]
    pub out: PathBuf,
    /// Bytes per source memory unit (chains are often discretised into slots).
    #[arg(long, default_value_t = 1)]
    pub mem_unit: u64,
    /// Microseconds per tick (source times are milliseconds; durations are rounded up).
    #[arg(long, default_value_t = 1)]
    pub tick_us: u64,
    /// GPU memory in bytes (default: the peak with nothing rematerialised or offloaded).
    #[arg(long)]
    pub gpu_memory: Option<u64>,
    /// Link bandwidth in bytes per tick (default: 12.2 GB/s).
    #[arg(long)]
    pub bandwidth: Option<u64>,
    /// Instance name (default: the file's stem).
    #[arg(long)]
    pub name: Option<String>,
}

pub fn run(a: ImportArgs) -> anyhow::Result<ExitCode> {
    let file = a.file.display().to_string();
    let text = io::read_text(&a.file)?;
    let o = ImportOptions {
        name: a.name.clone().unwrap_or_else(|| {
            a.file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "imported".into())
        }),
        mem_unit: a.mem_unit,
        tick_us: a.tick_us,
        gpu_memory: a.gpu_memory,
        bandwidth: a.bandwidth,
        source: file.clone(),
    };
    let chain = match a.source {
        Source::Rotor => import_rotor(&text, &o),
        Source::Rockmate => import_rockmate(&text, &o),
    }
    .map_err(|e| io::InputError::Field {
        file: file.clone(),
        field: match &e {
            crate::family::remat_import::ImportError::Field { field, .. } => field.clone(),
            _ => "(syntax)".into(),
        },
        message: match &e {
            crate::family::remat_import::ImportError::Field { message, .. } => message.clone(),
            other => other.to_string(),
        },
    })?;
    let f = InstanceFile::RematChain(chain);
    let inst = f.compile().map_err(|error| io::InputError::Model {
        file: file.clone(),
        error,
    })?;
    let json = serde_json::to_string_pretty(&f)?;
    std::fs::write(&a.out, json + "\n")
        .with_context(|| format!("{}: cannot write", a.out.display()))?;
    println!(
        "wrote {}: remat_chain `{}`, {} layers + loss, M_GPU {} B",
        a.out.display(),
        inst.name,
        inst.ops.iter().filter(|o| o.name.starts_with('B')).count() - 1,
        inst.machine.gpu_capacity
    );
    Ok(ExitCode::SUCCESS)
}
