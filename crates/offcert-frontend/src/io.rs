//! Reading instance and schedule files, with errors that name the file and the
//! line (for malformed JSON) or the field path (for bad values and unknown names).
//!
//! Owns: [`InputError`], [`FieldError`] (shared with the trace loaders) and the
//! loaders. Must not import: the checker or solvers.

use crate::family::{
    ActivationChain, CoreFile, Graph, InstanceFile, Offmate, OpSequence, RematChain, WeightChain,
    INSTANCE_FORMAT,
};
use crate::model::{Instance, ModelError};
use crate::schedule::{Schedule, ScheduleError, ScheduleFile};
use serde::de::DeserializeOwned;
use std::path::Path;

/// A bad value in an input file: the file, the path of the field in it
/// (`traceEvents[12].ts`, `rules[0].match`, `(top level)`), and what is wrong.
/// The one field error of every loader: instance and schedule files here, traces
/// and mappings in [`crate::trace::TraceError::Field`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {field}: {message}")]
pub struct FieldError {
    pub file: String,
    pub field: String,
    pub message: String,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    #[error("{file}: cannot read: {error}")]
    Read { file: String, error: std::io::Error },
    #[error("{file}:{line}:{column}: malformed JSON: {message}")]
    Json {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error(transparent)]
    Field(#[from] FieldError),
    // The inner error is part of this message and deliberately not a `source`:
    // `{:#}` in main would otherwise print it twice.
    #[error("{file}: {error}")]
    Model { file: String, error: ModelError },
    #[error("{file}: {error}")]
    Schedule { file: String, error: ScheduleError },
}

/// A JSON syntax error, with the file and the line and column it names.
pub fn json_error(file: &str, e: serde_json::Error) -> InputError {
    InputError::Json {
        file: file.to_string(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    }
}

/// Deserialize `T` from a parsed value, reporting the path of a bad field.
fn typed<T: DeserializeOwned>(file: &str, v: serde_json::Value) -> Result<T, InputError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        InputError::Field(FieldError {
            file: file.to_string(),
            field: if path == "." {
                "(top level)".into()
            } else {
                path
            },
            message: e.into_inner().to_string(),
        })
    })
}

/// The instance file's `format` field: missing (today's format), or the one
/// version this build reads ([`INSTANCE_FORMAT`]); anything else is bad input.
fn check_instance_format(file: &str, v: Option<serde_json::Value>) -> Result<(), InputError> {
    match v {
        None => Ok(()),
        Some(serde_json::Value::String(s)) if s == INSTANCE_FORMAT => Ok(()),
        Some(other) => Err(InputError::Field(FieldError {
            file: file.into(),
            field: "format".into(),
            message: format!(
                "unknown instance file format {other} (this build reads `{INSTANCE_FORMAT}`, or no `format` field)"
            ),
        })),
    }
}

/// Parse an instance file's text. `file` names it in errors.
pub fn parse_instance_file(file: &str, text: &str) -> Result<InstanceFile, InputError> {
    let mut v: serde_json::Value = serde_json::from_str(text).map_err(|e| json_error(file, e))?;
    let fam = match v.as_object_mut() {
        None => {
            return Err(InputError::Field(FieldError {
                file: file.into(),
                field: "(top level)".into(),
                message: "expected a JSON object".into(),
            }))
        }
        Some(o) => {
            check_instance_format(file, o.remove("format"))?;
            o.remove("family")
        }
    };
    let fam = match fam {
        Some(serde_json::Value::String(s)) => s,
        Some(_) => {
            return Err(InputError::Field(FieldError {
                file: file.into(),
                field: "family".into(),
                message: "expected a string".into(),
            }))
        }
        None => return Err(InputError::Field(FieldError {
            file: file.into(),
            field: "family".into(),
            message:
                "missing (one of activation_chain, weight_chain, remat_chain, core, op_sequence, offmate, graph)"
                    .into(),
        })),
    };
    Ok(match fam.as_str() {
        "activation_chain" => InstanceFile::ActivationChain(typed::<ActivationChain>(file, v)?),
        "weight_chain" => InstanceFile::WeightChain(typed::<WeightChain>(file, v)?),
        "remat_chain" => InstanceFile::RematChain(typed::<RematChain>(file, v)?),
        "core" => InstanceFile::Core(typed::<CoreFile>(file, v)?),
        "op_sequence" => InstanceFile::OpSequence(typed::<OpSequence>(file, v)?),
        "offmate" => InstanceFile::Offmate(typed::<Offmate>(file, v)?),
        "graph" => InstanceFile::Graph(typed::<Graph>(file, v)?),
        other => {
            return Err(InputError::Field(FieldError {
                file: file.into(),
                field: "family".into(),
                message: format!(
                    "unknown family `{other}` (expected activation_chain, weight_chain, remat_chain, core, op_sequence, offmate or graph)"
                ),
            }))
        }
    })
}

/// Parse and compile an instance.
pub fn parse_instance(file: &str, text: &str) -> Result<(InstanceFile, Instance), InputError> {
    let f = parse_instance_file(file, text)?;
    let inst = f.compile().map_err(|error| InputError::Model {
        file: file.to_string(),
        error,
    })?;
    Ok((f, inst))
}

pub fn read_text(path: &Path) -> Result<String, InputError> {
    std::fs::read_to_string(path).map_err(|error| InputError::Read {
        file: path.display().to_string(),
        error,
    })
}

pub fn load_instance(path: &Path) -> Result<(InstanceFile, Instance), InputError> {
    parse_instance(&path.display().to_string(), &read_text(path)?)
}

/// Parse a schedule file's text against its instance.
pub fn parse_schedule(file: &str, text: &str, inst: &Instance) -> Result<Schedule, InputError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let sf: ScheduleFile = match serde_path_to_error::deserialize(&mut de) {
        Ok(sf) => sf,
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if inner.is_syntax() || inner.is_eof() || path == "." {
                return Err(json_error(file, inner));
            }
            return Err(InputError::Field(FieldError {
                file: file.into(),
                field: path,
                message: inner.to_string(),
            }));
        }
    };
    de.end().map_err(|e| json_error(file, e))?;
    sf.resolve(inst).map_err(|error| InputError::Schedule {
        file: file.to_string(),
        error,
    })
}

pub fn load_schedule(path: &Path, inst: &Instance) -> Result<Schedule, InputError> {
    parse_schedule(&path.display().to_string(), &read_text(path)?, inst)
}
