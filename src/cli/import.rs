//! `offcert import et TRACE [--kineto K] -o INSTANCE`: a PyTorch execution trace
//! as an `op_sequence` instance ([`crate::trace::et`]). Bad input exits 2 with
//! the file and field named.

use crate::family::BandwidthFile;
use crate::trace::et::{self, EtOptions};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub what: ImportKind,
}

#[derive(clap::Subcommand, Debug)]
pub enum ImportKind {
    /// A PyTorch execution trace (schema 1.0.1 or Chakra 1.x.y-chakra.*), gzip or plain.
    Et(EtArgs),
}

#[derive(clap::Args, Debug)]
pub struct EtArgs {
    /// The execution trace (`*.json` or `*.json.gz`).
    pub trace: PathBuf,
    /// A Kineto trace of the same run: durations from its GPU kernels.
    #[arg(long)]
    pub kineto: Option<PathBuf>,
    /// Output instance file.
    #[arg(short, long)]
    pub out: PathBuf,
    /// GPU memory in bytes (default: the no-offload peak).
    #[arg(long)]
    pub gpu_memory: Option<u64>,
    /// Link bandwidth per direction in bytes per ns (= GB/s); default 12 (PCIe 3.0 x16, assumption).
    #[arg(long, default_value_t = 12)]
    pub bandwidth: u64,
    /// Instance name (default: the trace's file stem).
    #[arg(long)]
    pub name: Option<String>,
}

pub fn run(a: ImportArgs) -> anyhow::Result<ExitCode> {
    let ImportKind::Et(a) = a.what;
    if a.bandwidth == 0 {
        anyhow::bail!("--bandwidth must be positive");
    }
    let name = a.name.clone().unwrap_or_else(|| {
        let s = a
            .trace
            .file_name()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        s.trim_end_matches(".gz")
            .trim_end_matches(".json")
            .to_string()
    });
    let opts = EtOptions {
        name,
        gpu_memory: a.gpu_memory,
        bandwidth: BandwidthFile::PerTick(a.bandwidth),
    };
    let (seq, rep) = et::import_files(&a.trace, a.kineto.as_deref(), &opts)?;
    let mut v = serde_json::to_value(&seq)?;
    if let Some(o) = v.as_object_mut() {
        // `family` first, as in the other instance files.
        let mut m = serde_json::Map::new();
        m.insert("family".into(), "op_sequence".into());
        m.extend(std::mem::take(o));
        *o = m;
    }
    std::fs::write(&a.out, serde_json::to_string_pretty(&v)? + "\n")
        .with_context(|| a.out.display().to_string())?;
    println!(
        "wrote {}: {} functions, {} variables ({} persistent), gpu_memory {} B",
        a.out.display(),
        rep.functions,
        rep.variables,
        rep.persistent,
        seq.gpu_memory
    );
    println!("durations: {}", rep.duration_source);
    if a.kineto.is_some() {
        println!(
            "linked {} of {} operators to Kineto ({} GPU activities); not linked: {}",
            rep.linked,
            rep.functions,
            rep.kernels_linked,
            rep.unlinked.len()
        );
        for u in rep.unlinked.iter().take(20) {
            println!("  not linked: {u}");
        }
        if rep.unlinked.len() > 20 {
            println!("  … and {} more", rep.unlinked.len() - 20);
        }
    }
    println!(
        "left out: {} host tensor references, {} empty storages",
        rep.host_tensors_skipped, rep.empty_storages_skipped
    );
    Ok(ExitCode::SUCCESS)
}
