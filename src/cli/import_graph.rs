//! `offcert import graph FILE -o OUT.json [--memory-multiplier m] [--offload
//! --bandwidth B]`: a networkx `node_link_data` graph in either of MOCCASIN's
//! schemas ([`crate::family::graph_import`]) as a `graph` instance, with
//! MOCCASIN's budget B = ⌈m × peak of the baseline order⌉, the peak measured by
//! the checker ([`crate::report::budget::graph_baseline_checked`]).
//!
//! Exit 0 when written, 2 on bad input (the file and the field named).
//!
//! Owns: the `import graph` handler and the exact parse of `m`.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s.

use crate::family::graph::Offload;
use crate::family::graph_import::{parse_node_link, GraphImportError};
use crate::family::{BandwidthFile, InstanceFile};
use crate::io;
use crate::report::budget::graph_baseline_checked;
use crate::units::Bytes;
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct GraphArgs {
    /// The graph: networkx `node_link_data` JSON (Checkmate-derived or random layered).
    pub file: PathBuf,
    /// Output `graph` instance file.
    #[arg(short = 'o', long = "output")]
    pub out: PathBuf,
    /// m: the budget is ⌈m × the checked peak of the baseline order⌉ (a decimal,
    /// read exactly: `0.8`, `0.9`, `1`).
    #[arg(long, default_value = "1", value_parser = multiplier_arg)]
    pub memory_multiplier: Multiplier,
    /// Let outputs be offloaded (off: pure rematerialisation, the tools' setting).
    #[arg(long, requires = "bandwidth")]
    pub offload: bool,
    /// Link bandwidth in bytes per tick (with --offload; half duplex).
    #[arg(long, requires = "offload")]
    pub bandwidth: Option<u64>,
    /// Instance name (default: the file's `graph.name`).
    #[arg(long)]
    pub name: Option<String>,
}

/// A non-negative decimal `num / den`, exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Multiplier {
    pub num: u128,
    pub den: u128,
    pub text: String,
}

/// `--memory-multiplier`: digits, optionally `.` and at most 12 decimals;
/// positive and at most 1000.
pub fn multiplier_arg(s: &str) -> Result<Multiplier, String> {
    let bad = || format!("`{s}`: expected a positive decimal such as 0.8");
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || int.len() > 4
        || frac.len() > 12
    {
        return Err(bad());
    }
    let den = 10u128.pow(frac.len() as u32);
    let num = format!("{int}{frac}").parse::<u128>().unwrap_or(0);
    if num == 0 || num > 1000 * den {
        return Err(format!("`{s}`: must be positive and at most 1000"));
    }
    Ok(Multiplier {
        num,
        den,
        text: s.to_string(),
    })
}

pub fn run(a: GraphArgs) -> anyhow::Result<ExitCode> {
    let file = a.file.display().to_string();
    let text = io::read_text(&a.file)?;
    let imported = parse_node_link(&text, a.name.clone()).map_err(|e| {
        let GraphImportError { field, message } = e;
        anyhow::Error::from(io::InputError::Field(io::FieldError {
            file: file.clone(),
            field,
            message,
        }))
    })?;
    let mut g = imported.graph.clone();
    if a.offload {
        let b = a.bandwidth.unwrap_or(0);
        if b == 0 {
            anyhow::bail!("--bandwidth must be positive");
        }
        g.offload = Some(Offload {
            bandwidth: BandwidthFile::PerTick(b),
            duplex: crate::model::Duplex::HalfDuplex,
        });
    }
    let checked = graph_baseline_checked(&g).map_err(|m| anyhow::anyhow!("{file}: {m}"))?;
    let peak = checked.report().peak_memory.0;
    let m = &a.memory_multiplier;
    let budget = (peak as u128 * m.num).div_ceil(m.den);
    g.gpu_memory = u64::try_from(budget).context("the budget exceeds 2^64 bytes")?;
    let order = if imported.has_order {
        "graph.order"
    } else {
        "node ids increasing (topological)"
    };
    g.note = Some(format!(
        "imported by `offcert import graph` from {} ({} schema, {} nodes, {} edges); budget ⌈{} × {} B⌉ = {} B, the checked peak of the baseline order ({order}) with each output released after its last reader; {} zero costs mapped to 1 tick; {} non-zero param_cost ignored",
        a.file.file_name().map_or(file.clone(), |s| s.to_string_lossy().into_owned()),
        imported.schema.as_str(),
        g.n(),
        imported.edges,
        m.text,
        peak,
        g.gpu_memory,
        imported.zero_costs,
        imported.param_costs_ignored,
    ));
    let least = g.least_memory();
    let v = InstanceFile::Graph(g.clone()).to_json()?;
    std::fs::write(&a.out, serde_json::to_string_pretty(&v)? + "\n")
        .with_context(|| format!("{}: cannot write", a.out.display()))?;
    print_summary(&a, &g, &imported, peak, least);
    Ok(ExitCode::SUCCESS)
}

fn print_summary(
    a: &GraphArgs,
    g: &crate::family::graph::Graph,
    imp: &crate::family::graph_import::NodeLink,
    peak: u64,
    least: u64,
) {
    println!(
        "wrote {}: {} nodes, {} edges ({} schema{})",
        a.out.display(),
        g.n(),
        imp.edges,
        imp.schema.as_str(),
        if imp.duplicate_edges > 0 {
            format!(", {} repeated links kept once", imp.duplicate_edges)
        } else {
            String::new()
        }
    );
    println!(
        "baseline order ({}): peak {} B (checked), total compute {} ticks",
        if imp.has_order {
            "graph.order"
        } else {
            "node ids"
        },
        peak,
        g.nodes.iter().map(|n| n.duration).sum::<i64>()
    );
    println!(
        "gpu_memory = ⌈{} × {} B⌉ = {} ({} B); least memory of any schedule {} B",
        a.memory_multiplier.text,
        peak,
        Bytes(g.gpu_memory).human(),
        g.gpu_memory,
        least
    );
    if g.gpu_memory < least {
        println!("no schedule exists at this budget: a node's output and inputs need {least} B");
    }
    if imp.zero_costs > 0 {
        println!(
            "{} nodes of cost 0 run 1 tick each (MODEL.md §4.7 item 5)",
            imp.zero_costs
        );
    }
    if imp.param_costs_ignored > 0 {
        println!(
            "{} nodes have a param_cost, ignored as MOCCASIN ignores it",
            imp.param_costs_ignored
        );
    }
    if let Some(o) = &g.offload {
        println!(
            "offloading on: {:?} bytes per tick, half duplex",
            o.bandwidth
        );
    }
}
