//! `gap`: the optimality-gap report's rows (`offcert gap --json`), computed by
//! the same code as the CLI's (`cli::gap::entries`). With `with_schedules`,
//! each row also carries its best checked schedule and the instance file at
//! the row's budget, so that a receiver (a Ray driver) can check it again.
//!
//! Owns: the rows' JSON for Python (`offcert.GapReport`).
//! Must not import: nothing is forbidden; it computes no figure of its own.

use crate::{guarded, release_of, BindError};
use offcert::cli::gap::GapArgs;
use offcert::family::InstanceFile;
use offcert::report::{self, table, GapEntry};
use offcert::schedule::ScheduleFile;
use pyo3::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The row `e`'s best schedule (as a file) and the instance file at its budget.
fn evidence(
    e: &GapEntry,
    files: &mut BTreeMap<String, InstanceFile>,
    release: Option<&str>,
) -> Result<(Value, Value), BindError> {
    let Some(best) = &e.best_schedule else {
        return Ok((Value::Null, Value::Null));
    };
    if !files.contains_key(&e.instance) {
        let (mut f, _) = offcert::io::load_instance(Path::new(&e.instance))?;
        if let Some(r) = release_of(release)?.release {
            f.set_release(r);
        }
        files.insert(e.instance.clone(), f);
    }
    let at = report::with_budget(&files[&e.instance], e.budget);
    let inst = at.compile().map_err(|err| {
        BindError::Input(format!("{} at memory {} B: {err}", e.instance, e.budget))
    })?;
    let sf = ScheduleFile::from_schedule(best.checked().schedule(), &inst);
    Ok((serde_json::to_value(sf)?, at.to_json()?))
}

fn rows_json(
    entries: &[GapEntry],
    with_schedules: bool,
    release: Option<&str>,
) -> Result<Value, BindError> {
    let mut files = BTreeMap::new();
    let mut rows = Vec::new();
    for e in entries {
        let mut v = serde_json::to_value(e)?;
        if with_schedules {
            let (schedule, instance) = evidence(e, &mut files, release)?;
            v["best_schedule_file"] = schedule;
            v["instance_file_at_budget"] = instance;
        }
        rows.push(v);
    }
    Ok(json!({
        "rows": rows,
        "summary": table::summary(entries),
        "text": table::text(entries),
        "csv": table::csv(entries),
    }))
}

/// The gap report of `instances` (files or folders), as `offcert gap` would
/// compute it: JSON `{rows, summary, text, csv}`.
#[pyfunction]
#[pyo3(signature = (instances, memory=None, exact=false, exact_max_ops=8, time_limit=None,
    heuristics=Vec::new(), jobs=None, release=None, with_schedules=false, allocator=None))]
#[allow(clippy::too_many_arguments)]
pub fn gap(
    py: Python<'_>,
    instances: Vec<String>,
    memory: Option<String>,
    exact: bool,
    exact_max_ops: usize,
    time_limit: Option<u64>,
    heuristics: Vec<String>,
    jobs: Option<u64>,
    release: Option<String>,
    with_schedules: bool,
    allocator: Option<String>,
) -> PyResult<String> {
    guarded(py, move || {
        if jobs == Some(0) {
            return Err(BindError::Input("jobs: must be at least 1".into()));
        }
        let allocator = match allocator.as_deref() {
            None => None,
            Some(text) => Some(
                text.parse::<offcert::model::Allocator>()
                    .map_err(|e| BindError::Input(format!("allocator: {e}")))?,
            ),
        };
        let a = GapArgs {
            instances: instances.iter().map(PathBuf::from).collect(),
            memory,
            exact,
            exact_max_ops,
            time_limit,
            heuristics,
            csv: false,
            json: false,
            plot: None,
            quiet: true,
            jobs,
            shard: None,
            release: release_of(release.as_deref())?,
            allocator: offcert::cli::AllocatorOpt { allocator },
        };
        let entries = offcert::cli::gap::entries(&a)?;
        Ok(rows_json(&entries, with_schedules, release.as_deref())?.to_string())
    })
}

/// The instance files `offcert gap` would read for `instances` (folders
/// expanded, sorted), in the report's order.
#[pyfunction]
pub fn expand_instances(py: Python<'_>, instances: Vec<String>) -> PyResult<Vec<String>> {
    guarded(py, move || {
        let paths: Vec<PathBuf> = instances.iter().map(PathBuf::from).collect();
        Ok(offcert::cli::gap::expand(&paths)?
            .iter()
            .map(|p| p.display().to_string())
            .collect())
    })
}
