//! `check` and `plot`: replay a schedule against an instance and say what the
//! checker said (valid or not, the figures are the checker's either way).
//!
//! Owns: the verdict's JSON for Python (`offcert.Verdict`).
//! Must not import: nothing is forbidden; it computes no figure of its own.

use crate::{guarded, release_of, text_of, BindError};
use offcert::check::Violation;
use offcert::check::{check_with_profile, CheckOutcome, MemoryProfile};
use offcert::model::Instance;
use pyo3::prelude::*;
use serde_json::{json, Value};

/// An instance (under `release`) and a schedule, replayed.
struct Replay {
    inst: Instance,
    tick: Option<offcert::units::TickUnit>,
    outcome: CheckOutcome,
    profile: MemoryProfile,
}

fn replay(
    instance: (&str, Option<String>),
    schedule: (&str, Option<String>),
    release: Option<&str>,
) -> Result<Replay, BindError> {
    let itext = text_of(instance.0, instance.1)?;
    let stext = text_of(schedule.0, schedule.1)?;
    let (file, mut inst) = offcert::io::parse_instance(instance.0, &itext)?;
    release_of(release)?.apply(&mut inst);
    let sched = offcert::io::parse_schedule(schedule.0, &stext, &inst)?;
    let (outcome, profile) = check_with_profile(&inst, &sched);
    Ok(Replay {
        inst,
        tick: file.tick_unit(),
        outcome,
        profile,
    })
}

/// One violation: its rule (the JSON tag, e.g. `released_while_in_use`), the
/// rule's name in models/MODEL.md, the event it names, when, and the sentence.
fn violation_json(inst: &Instance, v: &Violation) -> Value {
    let detail = serde_json::to_value(v).unwrap_or(Value::Null);
    let event = ["event", "second", "first"]
        .iter()
        .find_map(|k| detail.get(*k).and_then(Value::as_u64));
    json!({
        "rule": v.kind(),
        "rule_name": v.rule(),
        "event": event,
        "time": v.instant().map(|t| t.0),
        "sentence": v.describe(inst),
        "detail": detail,
    })
}

/// The verdict as `offcert.Verdict` reads it.
fn verdict_json(r: &Replay, iname: &str, sname: &str) -> Value {
    let o = &r.outcome;
    json!({
        "valid": o.valid,
        "instance": iname,
        "schedule": sname,
        "release": o.release.as_str(),
        "cyclic": o.cyclic,
        "makespan": o.makespan.0,
        "peak": o.peak_memory.0,
        "peak_at": o.peak_at.0,
        "peak_cpu": o.peak_cpu_memory.0,
        "compute_idle": o.compute_idle.0,
        "violations": o.violations.iter().map(|v| violation_json(&r.inst, v)).collect::<Vec<_>>(),
        "warnings": o.warnings.iter().map(|w| w.describe(&r.inst)).collect::<Vec<_>>(),
        "instance_sha256": o.instance_sha256,
        "schedule_sha256": o.schedule_sha256,
        "text": offcert::cli::check::render_text(&r.inst, o, iname, sname, r.tick),
    })
}

/// The verdict's JSON, with the SVG picture under `svg` when `draw`.
fn judged(
    instance: (String, Option<String>),
    schedule: (String, Option<String>),
    release: Option<String>,
    draw: bool,
) -> Result<String, BindError> {
    let (iname, sname) = (instance.0.clone(), schedule.0.clone());
    let r = replay(
        (&iname, instance.1),
        (&sname, schedule.1),
        release.as_deref(),
    )?;
    let mut v = verdict_json(&r, &iname, &sname);
    if draw {
        let svg =
            offcert::report::schedule_plot::schedule_svg(&r.inst, &r.outcome, &r.profile, &sname);
        v["svg"] = Value::String(svg);
    }
    Ok(v.to_string())
}

/// Check `schedule` against `instance` (file names; the texts when given as
/// dicts): the verdict as JSON.
#[pyfunction]
#[pyo3(signature = (instance, instance_text, schedule, schedule_text, release=None))]
pub fn check(
    py: Python<'_>,
    instance: String,
    instance_text: Option<String>,
    schedule: String,
    schedule_text: Option<String>,
    release: Option<String>,
) -> PyResult<String> {
    guarded(py, move || {
        judged(
            (instance, instance_text),
            (schedule, schedule_text),
            release,
            false,
        )
    })
}

/// Check and draw (`offcert plot`): `check`'s JSON, with the SVG under `svg`.
#[pyfunction]
#[pyo3(signature = (instance, instance_text, schedule, schedule_text, release=None))]
pub fn plot(
    py: Python<'_>,
    instance: String,
    instance_text: Option<String>,
    schedule: String,
    schedule_text: Option<String>,
    release: Option<String>,
) -> PyResult<String> {
    guarded(py, move || {
        judged(
            (instance, instance_text),
            (schedule, schedule_text),
            release,
            true,
        )
    })
}
