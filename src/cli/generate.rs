//! `offcert generate graph --nodes N … -o FILE`: a random layered computation
//! graph ([`crate::family::graph_generate`]), deterministic from `--seed`,
//! written as networkx `node_link_data` JSON in MOCCASIN's random-layered
//! schema (read it with `offcert import graph`).
//!
//! Exit 0 when written, 2 on a bad option.
//!
//! Owns: the `generate` subcommand. Must not import: nothing is forbidden (the
//! top layer).

use crate::family::graph_generate::{random_layered, RandomLayered};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct GenerateArgs {
    #[command(subcommand)]
    pub what: GenerateKind,
}

#[derive(clap::Subcommand, Debug)]
pub enum GenerateKind {
    /// A random layered graph after Gagrani et al. (NeurIPS 2022, App. A).
    Graph(GraphGenArgs),
}

#[derive(clap::Args, Debug)]
pub struct GraphGenArgs {
    /// Nodes, the source and the sink included.
    #[arg(long)]
    pub nodes: usize,
    /// Width w: layers of about 2w√n nodes.
    #[arg(long, default_value_t = 0.3)]
    pub width: f64,
    /// Node level variance: relative spread of a layer's width.
    #[arg(long, default_value_t = 0.75)]
    pub level_variance: f64,
    /// Edge density between consecutive layers.
    #[arg(long, default_value_t = 0.2)]
    pub edge_density: f64,
    /// Skip connection density.
    #[arg(long, default_value_t = 0.14)]
    pub skip_density: f64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output file (networkx node_link_data JSON).
    #[arg(short = 'o', long = "output")]
    pub out: PathBuf,
}

pub fn run(a: GenerateArgs) -> anyhow::Result<ExitCode> {
    let GenerateKind::Graph(a) = a.what;
    let p = RandomLayered {
        n: a.nodes,
        width: a.width,
        level_variance: a.level_variance,
        edge_density: a.edge_density,
        skip_density: a.skip_density,
        seed: a.seed,
    };
    let v = match random_layered(&p) {
        Ok(v) => v,
        Err(m) => {
            eprintln!("error: {m}");
            return Ok(ExitCode::from(2));
        }
    };
    std::fs::write(&a.out, serde_json::to_string(&v)? + "\n")
        .with_context(|| format!("{}: cannot write", a.out.display()))?;
    println!(
        "wrote {}: {} ({} nodes, {} links)",
        a.out.display(),
        p.name(),
        p.n,
        v["links"].as_array().map_or(0, Vec::len)
    );
    Ok(ExitCode::SUCCESS)
}
