//! `offcert import rotor-sequence SEQUENCE --chain CHAIN.json -o OUT.schedule.json`
//! (alias `rockmate-sequence`): a sequence that rotor or rockmate computed for
//! a chain ([`crate::family::remat_sequence`]), as the schedule their
//! executors run ([`crate::simulate::chain_sequence`]), written and checked.
//!
//! Exit 0 when the schedule is valid, 1 when the checker refutes it (the
//! violations are printed, and the schedule is written all the same so that
//! `offcert check` and `offcert plot` can show it), 2 on bad input (the file
//! and the op named).
//!
//! Owns: the `import rotor-sequence` handler.
//! Must not import: nothing is forbidden (the top layer); a handler computes no
//! figure of its own, it prints a `Checked`'s or a `Rejected`'s.

use crate::check::check;
use crate::family::remat_sequence::{parse_sequence, rotor_notation};
use crate::family::InstanceFile;
use crate::io;
use crate::schedule::ScheduleFile;
use crate::simulate::chain_sequence::{back_to_back, plan_of};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct SequenceArgs {
    /// The sequence: rotor's printed list (`[CF_0, Fn_1, Fe_2, L, B_2, ...]`), a JSON
    /// list of the same strings, or `{"ops": [...]}` as
    /// `scripts/export_rockmate_sequence.py` writes it (with options).
    pub sequence: PathBuf,
    /// The `remat_chain` instance the sequence was computed for (`offcert import
    /// rotor|rockmate` writes one); its `gpu_memory` is the budget checked.
    #[arg(long)]
    pub chain: PathBuf,
    /// Output schedule file.
    #[arg(short = 'o', long = "output")]
    pub out: PathBuf,
    /// Check against this GPU memory instead of the chain file's (`1500`, `2G`, …):
    /// the budget the tool was given.
    #[arg(long, value_parser = super::bytes_arg)]
    pub gpu_memory: Option<u64>,
}

pub fn run(a: SequenceArgs) -> anyhow::Result<ExitCode> {
    let chain_file = a.chain.display().to_string();
    let (file, mut inst) = io::load_instance(&a.chain)?;
    let InstanceFile::RematChain(c) = &file else {
        return Err(io::InputError::Field(io::FieldError {
            file: chain_file,
            field: "family".into(),
            message: format!(
                "a rotor or rockmate sequence needs a remat_chain instance, not {}",
                file.family()
            ),
        })
        .into());
    };
    if let Some(m) = a.gpu_memory {
        inst.machine.gpu_capacity = crate::units::Bytes(m);
    }
    let seq_file = a.sequence.display().to_string();
    let text = io::read_text(&a.sequence)?;
    let ops = parse_sequence(&text, c).map_err(|e| {
        io::InputError::Field(io::FieldError {
            file: seq_file.clone(),
            field: e.field,
            message: e.message,
        })
    })?;
    let plan = plan_of(c, &inst, &ops);
    let schedule = back_to_back(&inst, &plan);
    let mut sf = ScheduleFile::from_schedule(&schedule, &inst);
    sf.note = Some(format!(
        "imported from {seq_file}: {} (run back to back, as rotor's and rockmate's executors run it)",
        rotor_notation(&ops)
    ));
    std::fs::write(&a.out, serde_json::to_string_pretty(&sf)? + "\n")
        .with_context(|| format!("{}: cannot write", a.out.display()))?;
    println!(
        "wrote {}: {} ops of the sequence, {} compute events",
        a.out.display(),
        ops.len(),
        plan.seq.len()
    );
    let report = check(&inst, &schedule);
    print!(
        "{}",
        super::check::render_text(
            &inst,
            &report,
            &chain_file,
            &a.out.display().to_string(),
            file.tick_unit(),
        )
    );
    Ok(super::verdict_code(report.valid))
}
