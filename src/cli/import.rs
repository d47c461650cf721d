//! `offcert import KIND …`: convert a program description into an instance file.
//! - `import et TRACE [--kineto K] -o INSTANCE`: a PyTorch execution trace as an
//!   `op_sequence` instance ([`crate::trace::et`]).
//! - `import rotor|rockmate FILE -o OUT.json`: a rotor chain literal or a rockmate
//!   `RK_Chain` JSON dump as a `remat_chain` instance
//!   ([`crate::family::remat_import`]).
//! - `import rotor-sequence SEQ --chain CHAIN -o OUT` (alias `rockmate-sequence`):
//!   a rotor or rockmate op sequence as a checked schedule
//!   ([`super::import_sequence`]).
//! - `import offmate-solution INSTANCE SOLUTION`: OFFMATE's own plan, realised,
//!   checked and compared with Algorithm 1 ([`super::import_offmate`]).
//!
//! - `import graph FILE -o OUT`: a networkx computation graph as a `graph`
//!   instance ([`super::import_graph`]).
//! - `import checkmate-solution|moccasin-solution SOL --graph G -o S`: the other
//!   tools' answers as schedules, checked ([`super::import_graph_solution`]).
//!
//! Exit 0 when written, 2 on bad input (the file and the field named).
//!
//! Owns: the `import` subcommand.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::family::remat_import::{
    import_rockmate, import_rotor, ImportError, ImportOptions, RockmateTmp,
};
use crate::family::{BandwidthFile, InstanceFile};
use crate::io;
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
    /// rotor's printed `ChainStr` (a Python list of 6-tuples) or a dict of `Chain` attributes,
    /// as a `remat_chain` instance.
    Rotor(ChainArgs),
    /// A JSON dump of rockmate's `RK_Chain`, as a `remat_chain` instance.
    Rockmate(ChainArgs),
    /// A sequence rotor or rockmate computed for a chain (`[CF_0, Fn_1, L, B_0]`, or
    /// `{"ops": [...]}` from scripts/export_rockmate_sequence.py), as a schedule, checked.
    #[command(alias = "rockmate-sequence")]
    RotorSequence(super::import_sequence::SequenceArgs),
    /// OFFMATE's own plan for an `offmate` instance (`scripts/export_offmate.py
    /// --solution`): realised, checked, and compared with Algorithm 1.
    OffmateSolution(super::import_offmate::OffmateSolutionArgs),
    /// A networkx `node_link_data` computation graph (MOCCASIN's Checkmate-derived or
    /// random layered schema) as a `graph` instance, budget ⌈m × baseline peak⌉.
    Graph(super::import_graph::GraphArgs),
    /// Checkmate's R and S matrices for a `graph` instance (JSON), as a schedule, checked.
    CheckmateSolution(super::import_graph_solution::GraphSolutionArgs),
    /// MOCCASIN's computation order or intervals for a `graph` instance, as a schedule, checked.
    MoccasinSolution(super::import_graph_solution::GraphSolutionArgs),
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
    /// GPU memory (bytes: `1500`, `2G`, `1.5GB`, `64MiB`; default: the no-offload peak).
    #[arg(long, value_parser = super::bytes_arg)]
    pub gpu_memory: Option<u64>,
    /// Link bandwidth per direction in bytes per ns (= GB/s); default 12 (PCIe 3.0 x16, assumption).
    #[arg(long, default_value_t = 12)]
    pub bandwidth: u64,
    /// Instance name (default: the trace's file stem).
    #[arg(long)]
    pub name: Option<String>,
    /// The reading before 2026-11-27, kept to compare: every reuse of a storage
    /// id (the allocator gave a freed block to a new tensor) reads as a
    /// modification of one long-lived variable. By default a fresh tensor at a
    /// reused id is a new variable `s{id}.{k}`.
    #[arg(long, conflicts_with = "split_reused_storages")]
    pub merge_reused_storages: bool,
    /// The default (kept so that older commands still run): a fresh tensor at a
    /// reused storage id is a new variable `s{id}.{k}`.
    #[arg(long, hide = true)]
    pub split_reused_storages: bool,
}

#[derive(clap::Args, Debug)]
pub struct ChainArgs {
    /// The chain file.
    pub file: PathBuf,
    /// Output `remat_chain` instance file.
    #[arg(short = 'o', long = "output")]
    pub out: PathBuf,
    /// Bytes per source memory unit (chains are often discretised into slots; `1`, `1Mi`, …).
    #[arg(long, default_value_t = 1, value_parser = super::bytes_arg)]
    pub mem_unit: u64,
    /// Length of a tick, whole microseconds (`1`, `10us`, `1ms`; bare: µs;
    /// source times are milliseconds; durations are rounded up).
    #[arg(long, default_value_t = 1, value_parser = super::tick_us_arg)]
    pub tick_us: u64,
    /// GPU memory (bytes: `1500`, `2G`, `64MiB`; default: the peak with nothing rematerialised or offloaded).
    #[arg(long, value_parser = super::bytes_arg)]
    pub gpu_memory: Option<u64>,
    /// Link bandwidth in bytes per tick (default: 12.2 GB/s).
    #[arg(long)]
    pub bandwidth: Option<u64>,
    /// Instance name (default: the file's stem).
    #[arg(long)]
    pub name: Option<String>,
    /// rockmate: keep only each block's fastest option (least fw + bw), not every option.
    #[arg(long)]
    pub fastest_only: bool,
    /// rockmate: what ff_fwd_tmp / bwd_tmp include besides scratch (versions differ):
    /// as-is (sound for every version, looser), hrockmate, rk-rotor.
    #[arg(long, value_enum, default_value_t = RockmateTmpArg::AsIs)]
    pub rockmate_tmp: RockmateTmpArg,
}

/// `--rockmate-tmp` (see `family::remat_import::RockmateTmp`).
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum RockmateTmpArg {
    AsIs,
    Hrockmate,
    RkRotor,
}

/// Which chain format `run_chain` parses.
#[derive(Clone, Copy, Debug)]
enum ChainSource {
    Rotor,
    Rockmate,
}

pub fn run(a: ImportArgs) -> anyhow::Result<ExitCode> {
    match a.what {
        ImportKind::Et(a) => run_et(a),
        ImportKind::Rotor(a) => run_chain(ChainSource::Rotor, a),
        ImportKind::Rockmate(a) => run_chain(ChainSource::Rockmate, a),
        ImportKind::RotorSequence(a) => super::import_sequence::run(a),
        ImportKind::OffmateSolution(a) => super::import_offmate::run(a),
        ImportKind::Graph(a) => super::import_graph::run(a),
        ImportKind::CheckmateSolution(a) => {
            super::import_graph_solution::run(super::import_graph_solution::Tool::Checkmate, a)
        }
        ImportKind::MoccasinSolution(a) => {
            super::import_graph_solution::run(super::import_graph_solution::Tool::Moccasin, a)
        }
    }
}

fn run_et(a: EtArgs) -> anyhow::Result<ExitCode> {
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
        split_reused_storages: !a.merge_reused_storages,
    };
    let (seq, rep) = et::import_files(&a.trace, a.kineto.as_deref(), &opts)?;
    let v = InstanceFile::OpSequence(seq.clone()).to_json()?;
    std::fs::write(&a.out, serde_json::to_string_pretty(&v)? + "\n")
        .with_context(|| a.out.display().to_string())?;
    println!(
        "wrote {}: {} functions, {} variables ({} persistent), gpu_memory {}",
        a.out.display(),
        rep.functions,
        rep.variables,
        rep.persistent,
        crate::units::Bytes(seq.gpu_memory).human()
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

fn run_chain(source: ChainSource, a: ChainArgs) -> anyhow::Result<ExitCode> {
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
        fastest_only: a.fastest_only,
        rockmate_tmp: match a.rockmate_tmp {
            RockmateTmpArg::AsIs => RockmateTmp::AsIs,
            RockmateTmpArg::Hrockmate => RockmateTmp::Hrockmate,
            RockmateTmpArg::RkRotor => RockmateTmp::RkRotor,
        },
    };
    let chain = match source {
        ChainSource::Rotor => import_rotor(&text, &o),
        ChainSource::Rockmate => import_rockmate(&text, &o),
    }
    .map_err(|e| {
        io::InputError::Field(io::FieldError {
            file: file.clone(),
            field: match &e {
                ImportError::Field { field, .. } => field.clone(),
                _ => "(syntax)".into(),
            },
            message: match &e {
                ImportError::Field { message, .. } => message.clone(),
                other => other.to_string(),
            },
        })
    })?;
    let chain = if a.gpu_memory.is_none() {
        checked_peak_default(chain).map_err(|message| {
            io::InputError::Field(io::FieldError {
                file: file.clone(),
                field: "(converted chain)".into(),
                message,
            })
        })?
    } else {
        chain
    };
    let layers = chain.l();
    let options: usize = chain.layers.iter().map(|x| x.options.len() + 1).sum();
    let f = InstanceFile::RematChain(chain);
    let inst = f.compile().map_err(|error| io::InputError::Model {
        file: file.clone(),
        error,
    })?;
    let json = serde_json::to_string_pretty(&f.to_json()?)?;
    std::fs::write(&a.out, json + "\n")
        .with_context(|| format!("{}: cannot write", a.out.display()))?;
    // Count layers from the chain: a block's backward options are ops too.
    println!(
        "wrote {}: remat_chain `{}`, {layers} layers + loss ({options} options), M_GPU {}",
        a.out.display(),
        inst.name,
        inst.machine.gpu_capacity.human()
    );
    Ok(ExitCode::SUCCESS)
}

/// The import default M_GPU: `peak (checked, keep everything)`
/// ([`crate::report::budget::remat_budgets`]), with the note saying so.
fn checked_peak_default(
    mut chain: crate::family::remat_chain::RematChain,
) -> Result<crate::family::remat_chain::RematChain, String> {
    let b = crate::report::budget::remat_budgets(&chain)?;
    let old = format!(
        "M_GPU = {} B (default: the peak with nothing rematerialised or offloaded)",
        chain.gpu_memory
    );
    let new = format!(
        "M_GPU = {} B (default: {} of the keep-everything schedule; {} {} B)",
        b.peak,
        crate::report::budget::PEAK_LABEL,
        crate::report::budget::LEAST_LABEL,
        b.least
    );
    chain.note = chain.note.map(|n| n.replace(&old, &new));
    chain.gpu_memory = b.peak;
    Ok(chain)
}
