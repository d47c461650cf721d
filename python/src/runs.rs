//! `bound`, `heuristic` and `solve` on one instance: the same library calls as
//! the CLI's subcommands, answered as JSON (every schedule is a `Checked`'s).
//!
//! Owns: those three functions' JSON for Python.
//! Must not import: nothing is forbidden; it computes no figure of its own.

use crate::{guarded, release_of, text_of, BindError};
use offcert::exact::{crosscheck, Limits, Method};
use offcert::family::InstanceFile;
use offcert::model::Instance;
use offcert::schedule::ScheduleFile;
use pyo3::prelude::*;
use serde_json::{json, Value};
use std::path::Path;

/// The instance `name` as used: under `release`, at the budget `memory`
/// (bytes with suffixes, `min`, `peak` or `P%`), compiled.
fn used(
    name: &str,
    text: Option<String>,
    release: Option<&str>,
    memory: Option<&str>,
) -> Result<(InstanceFile, Instance), BindError> {
    let text = text_of(name, text)?;
    let (_, f) =
        offcert::cli::file_at_memory(Path::new(name), &text, release_of(release)?, memory)?;
    let inst = f
        .compile()
        .map_err(|e| BindError::Input(format!("{name}: {e}")))?;
    Ok((f, inst))
}

/// The papers' lower bounds (`offcert bound --json`).
#[pyfunction]
#[pyo3(signature = (instance, instance_text, memory=None, release=None))]
pub fn bound(
    py: Python<'_>,
    instance: String,
    instance_text: Option<String>,
    memory: Option<String>,
    release: Option<String>,
) -> PyResult<String> {
    guarded(py, move || {
        let (file, inst) = used(
            &instance,
            instance_text,
            release.as_deref(),
            memory.as_deref(),
        )?;
        let rows: Vec<Value> = offcert::bound::evaluate(&file, &inst)
            .iter()
            .map(|(name, r)| match r {
                Ok(b) => json!({
                    "source": b.source, "strength": b.strength.words(),
                    "value": b.value.to_string(), "ceil": b.ceil_ticks(),
                }),
                Err(e) => json!({
                    "source": name, "error": e.to_string(),
                    "infeasible": matches!(e, offcert::bound::BoundError::Infeasible { .. }),
                }),
            })
            .collect();
        Ok(json!({
            "instance": instance,
            "family": file.family(),
            "release": inst.release.as_str(),
            "memory": file.gpu_memory(),
            "bounds": rows,
        })
        .to_string())
    })
}

/// The papers' heuristics, each schedule checked (`offcert heuristic --json`,
/// with the checked schedule itself).
#[pyfunction]
#[pyo3(signature = (instance, instance_text, names=Vec::new(), memory=None, release=None))]
pub fn heuristic(
    py: Python<'_>,
    instance: String,
    instance_text: Option<String>,
    names: Vec<String>,
    memory: Option<String>,
    release: Option<String>,
) -> PyResult<String> {
    use offcert::heuristic::{self as h, HeuristicError};
    guarded(py, move || {
        let (file, inst) = used(
            &instance,
            instance_text,
            release.as_deref(),
            memory.as_deref(),
        )?;
        let all = h::all();
        if let Some(n) = names
            .iter()
            .find(|n| !all.iter().any(|x| x.name() == n.as_str()))
        {
            return Err(BindError::Input(format!(
                "unknown heuristic `{n}`; known, per family: {}",
                offcert::cli::heuristic::names_per_family()
            )));
        }
        let chosen: Vec<_> = all
            .iter()
            .filter(|x| x.applies(&file))
            .filter(|x| names.is_empty() || names.iter().any(|n| n == x.name()))
            .collect();
        if chosen.is_empty() {
            return Err(BindError::Input(format!(
                "{instance}: no chosen heuristic applies to family {}",
                file.family()
            )));
        }
        let mut out = Vec::new();
        for x in chosen {
            let t = std::time::Instant::now();
            let r = h::run(x.as_ref(), &file, &inst);
            let secs = t.elapsed().as_secs_f64();
            out.push(match r {
                Ok(run) => {
                    let rep = run.checked.report();
                    json!({
                        "heuristic": run.name, "verdict": "valid",
                        "release": rep.release.as_str(), "makespan": rep.makespan.0,
                        "peak": rep.peak_memory.0, "compute_idle": rep.compute_idle.0,
                        "schedule_sha256": rep.schedule_sha256, "seconds": secs,
                        "schedule": ScheduleFile::from_schedule(run.checked.schedule(), &inst),
                    })
                }
                Err(e) => json!({
                    "heuristic": x.name(),
                    "verdict": if matches!(e, HeuristicError::Invalid { .. }) { "invalid" } else { "no schedule" },
                    "error": e.to_string(), "seconds": secs,
                }),
            });
        }
        Ok(Value::Array(out).to_string())
    })
}

fn methods(method: &str) -> Result<Vec<Method>, BindError> {
    Ok(match method {
        "milp" => vec![Method::Milp],
        "smt" => vec![Method::Smt],
        "search" => vec![Method::Search],
        "all" => vec![Method::Milp, Method::Smt, Method::Search],
        other => {
            return Err(BindError::Input(format!(
                "method: `{other}`: expected milp, smt, search or all"
            )))
        }
    })
}

/// The exact methods through the cross-check (`offcert solve --json`, with the
/// checked schedule itself).
#[pyfunction]
#[pyo3(signature = (instance, instance_text, method="all".to_string(), time_limit=60.0, memory=None, release=None))]
pub fn solve(
    py: Python<'_>,
    instance: String,
    instance_text: Option<String>,
    method: String,
    time_limit: f64,
    memory: Option<String>,
    release: Option<String>,
) -> PyResult<String> {
    guarded(py, move || {
        if !(time_limit > 0.0 && time_limit.is_finite()) {
            return Err(BindError::Input(
                "time_limit: must be a positive number of seconds".into(),
            ));
        }
        let ms = methods(&method)?;
        let (_, inst) = used(
            &instance,
            instance_text,
            release.as_deref(),
            memory.as_deref(),
        )?;
        let limits = Limits {
            time_limit: std::time::Duration::from_secs_f64(time_limit),
            cancel: Default::default(),
            progress: false,
        };
        let v = crosscheck::run(&inst, &ms, &limits);
        Ok(json!({
            "instance": instance,
            "release": inst.release.as_str(),
            "cyclic": inst.mode == offcert::model::Mode::Cyclic,
            "status": v.label.words(),
            "label": v.label,
            "makespan": v.makespan().map(|t| t.0),
            "bound": v.bound.map(|t| t.0),
            "elapsed_ms": v.elapsed.as_millis() as u64,
            "methods": v.methods,
            "evidence": v.evidence,
            "disagreements": v.disagreements,
            "checker_valid": v.checked.as_ref().map(|c| c.report().valid),
            "schedule": v.checked.as_ref().map(|c| ScheduleFile::from_schedule(c.schedule(), &inst)),
        })
        .to_string())
    })
}
