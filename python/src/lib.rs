//! offcert from Python: the extension module `offcert._offcert` behind the
//! `offcert` package (python/offcert/). Strings in (a file's name, and its text
//! when the caller passes a dict), JSON text out; the Python side wraps it in
//! typed classes. Every figure crossing this boundary is read from a `Checked`
//! or a `Rejected` (the same types the CLI prints), or from a `LowerBound`.
//!
//! Owns: the boundary: argument conversion, bad input as `ValueError` (the
//! CLI's exit-2 errors, the file and the field named), a panic as
//! `RuntimeError` (a last resort; the typed errors come first).
//! Must not import: nothing is forbidden (a front-end like the CLI); it computes
//! no figure of its own.
#![forbid(unsafe_code)]

mod runs;
mod sweep;
mod verdict;

use offcert::model::ReleaseRule;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::process::ExitCode;

/// What can go wrong at the boundary.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// Bad input (the CLI's exit 2): the message names the file and the field.
    #[error("{0}")]
    Input(String),
}

impl From<anyhow::Error> for BindError {
    fn from(e: anyhow::Error) -> Self {
        BindError::Input(format!("{e:#}"))
    }
}

impl From<offcert::io::InputError> for BindError {
    fn from(e: offcert::io::InputError) -> Self {
        BindError::Input(e.to_string())
    }
}

impl From<serde_json::Error> for BindError {
    fn from(e: serde_json::Error) -> Self {
        BindError::Input(e.to_string())
    }
}

/// Run `f`, without the GIL: its error as `ValueError`, a panic (a bug, never
/// bad input) as `RuntimeError`.
pub fn guarded<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, BindError> + Send,
) -> PyResult<T> {
    match py.allow_threads(|| catch_unwind(AssertUnwindSafe(f))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(BindError::Input(m))) => Err(PyValueError::new_err(m)),
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(PyRuntimeError::new_err(format!(
                "offcert: internal error (a panic, please report it): {msg}"
            )))
        }
    }
}

/// The text of the file `name`, or `text` when the caller gave it (a dict,
/// serialised by the Python side; `name` then says where it came from).
pub fn text_of(name: &str, text: Option<String>) -> Result<String, BindError> {
    match text {
        Some(t) => Ok(t),
        None => Ok(offcert::io::read_text(Path::new(name))?),
    }
}

/// `release="after_end"|"after_start"`, overriding the instance's (R10).
pub fn release_of(release: Option<&str>) -> Result<offcert::cli::ReleaseOpt, BindError> {
    let release = release
        .map(|r| r.parse::<ReleaseRule>())
        .transpose()
        .map_err(|e| BindError::Input(format!("release: {e}")))?;
    Ok(offcert::cli::ReleaseOpt { release })
}

/// Run an `offcert` subcommand in this process (`args` without the program
/// name), as the CLI would; its output goes to this process's stdout, which
/// the Python side captures. Returns the exit code (0 or 1); bad input raises.
#[pyfunction]
fn run_cli(py: Python<'_>, args: Vec<String>) -> PyResult<i32> {
    use clap::error::ErrorKind;
    use clap::Parser;
    use std::io::Write;
    guarded(py, move || {
        let argv = std::iter::once("offcert".to_string()).chain(args);
        let cli = match offcert::cli::Cli::try_parse_from(argv) {
            Ok(cli) => cli,
            // `--help` and `--version` are answers, not errors (exit 0).
            Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
                print!("{}", e.render());
                let _ = std::io::stdout().flush();
                return Ok(0);
            }
            Err(e) => {
                return Err(BindError::Input(
                    e.render().to_string().trim_end().to_string(),
                ))
            }
        };
        let code = offcert::cli::run_with(cli);
        let _ = std::io::stdout().flush();
        let code = code?;
        Ok(if code == ExitCode::SUCCESS {
            0
        } else if code == ExitCode::from(1) {
            1
        } else {
            2
        })
    })
}

/// The extension module.
#[pymodule]
fn _offcert(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(verdict::check, m)?)?;
    m.add_function(wrap_pyfunction!(verdict::plot, m)?)?;
    m.add_function(wrap_pyfunction!(runs::bound, m)?)?;
    m.add_function(wrap_pyfunction!(runs::heuristic, m)?)?;
    m.add_function(wrap_pyfunction!(runs::solve, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::gap, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::expand_instances, m)?)?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    Ok(())
}
