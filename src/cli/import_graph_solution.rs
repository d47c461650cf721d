//! `offcert import checkmate-solution SOL.json --graph G.json -o S.json` and
//! `offcert import moccasin-solution SOL.json --graph G.json -o S.json`: the
//! other tools' answers on a `graph` instance, decoded
//! ([`crate::family::graph_solution`]), run back to back as their executors run
//! them ([`crate::simulate::graph_sequence`]), written and checked under
//! offcert's rules (the instance's release rule, or `--release`). The tool's own
//! memory count of the answer is printed beside the checker's peak.
//!
//! Exit 0 when the schedule is valid, 1 when the checker refutes it (the
//! violations are printed; the schedule is written all the same), 2 on bad
//! input (the file and the field named).
//!
//! Owns: the two handlers. Must not import: nothing is forbidden (the top
//! layer); a handler computes no figure of its own, it prints a `Checked`'s or a
//! `Rejected`'s (and the tool's count, labelled as the tool's).

use crate::check::check;
use crate::family::graph_solution::{checkmate_solution, moccasin_solution, SolutionError};
use crate::family::InstanceFile;
use crate::io;
use crate::model::ReleaseRule;
use crate::schedule::ScheduleFile;
use crate::simulate::chain_sequence::back_to_back;
use crate::simulate::graph_sequence;
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct GraphSolutionArgs {
    /// The tool's answer (Checkmate: `{"R": [[…]], "S": [[…]]}`; MOCCASIN: its
    /// `schedule` list, or `{"intervals": [{"node", "start", "end"}]}`).
    pub solution: PathBuf,
    /// The `graph` instance the answer is for (`offcert import graph` writes one);
    /// its `gpu_memory` is the budget checked.
    #[arg(long)]
    pub graph: PathBuf,
    /// Output schedule file.
    #[arg(short = 'o', long = "output")]
    pub out: PathBuf,
    /// Check against this GPU memory instead of the graph file's (`1500`, `2G`, …).
    #[arg(long, value_parser = super::bytes_arg)]
    pub gpu_memory: Option<u64>,
    /// The release rule (R10) to check under (default: the instance's).
    #[arg(long)]
    pub release: Option<ReleaseRule>,
}

/// Which tool wrote the answer.
#[derive(Clone, Copy, Debug)]
pub enum Tool {
    Checkmate,
    Moccasin,
}

pub fn run(tool: Tool, a: GraphSolutionArgs) -> anyhow::Result<ExitCode> {
    let graph_file = a.graph.display().to_string();
    let (mut file, _) = io::load_instance(&a.graph)?;
    if let Some(r) = a.release {
        file.set_release(r);
    }
    let InstanceFile::Graph(g) = &file else {
        return Err(io::InputError::Field(io::FieldError {
            file: graph_file,
            field: "family".into(),
            message: format!(
                "a graph tool's answer needs a graph instance, not {}",
                file.family()
            ),
        })
        .into());
    };
    let mut inst = file.compile().map_err(|error| io::InputError::Model {
        file: graph_file.clone(),
        error,
    })?;
    if let Some(m) = a.gpu_memory {
        inst.machine.gpu_capacity = crate::units::Bytes(m);
    }
    let sol_file = a.solution.display().to_string();
    let text = io::read_text(&a.solution)?;
    let decoded = match tool {
        Tool::Checkmate => checkmate_solution(g, &text),
        Tool::Moccasin => moccasin_solution(g, &text),
    }
    .map_err(|e| {
        let SolutionError { field, message } = e;
        io::InputError::Field(io::FieldError {
            file: sol_file.clone(),
            field,
            message,
        })
    })?;
    let plan = graph_sequence::plan_with(g, &decoded.seq, &decoded.releases);
    let schedule = back_to_back(&inst, &plan);
    let (name, count) = match tool {
        Tool::Checkmate => ("Checkmate", "its MILP's U"),
        Tool::Moccasin => ("MOCCASIN", "its get_mem_from_schedule"),
    };
    let mut sf = ScheduleFile::from_schedule(&schedule, &inst);
    sf.note = Some(format!(
        "imported from {sol_file}: {name}'s answer, {} node runs run back to back, each output released after its last reader ({name}'s rule; MODEL.md §4.7)",
        decoded.seq.len()
    ));
    std::fs::write(&a.out, serde_json::to_string_pretty(&sf)? + "\n")
        .with_context(|| format!("{}: cannot write", a.out.display()))?;
    println!(
        "wrote {}: {} node runs{}",
        a.out.display(),
        decoded.seq.len(),
        match decoded.stages.last() {
            Some(t) => format!(" in {} stages", t + 1),
            None => String::new(),
        }
    );
    println!(
        "{name}'s own memory count ({count}): {} B (solver-reported)",
        decoded.tool_peak
    );
    let report = check(&inst, &schedule);
    print!(
        "{}",
        super::check::render_text(
            &inst,
            &report,
            &graph_file,
            &a.out.display().to_string(),
            file.tick_unit(),
        )
    );
    Ok(super::verdict_code(report.valid))
}
