//! Audits of an imported trace: the trace-only audit ([`trace`]) and the mapped
//! audit ([`mapped`]), re-exported here so that `trace::audit::…` paths name both.
//!
//! Owns: the split between the two audits. The trace-only audit reads the trace
//! alone (memory against a budget, copies against the link and the channels);
//! the mapped audit reads the trace as a schedule of an instance and lets the
//! checker judge it.
//! Must not import: solvers, heuristics, bounds, reports, the CLI.

pub mod ahead;
pub mod mapped;
pub mod replay;
pub mod reserved;
pub mod trace;

pub use ahead::*;
pub use mapped::*;
pub use replay::*;
pub use reserved::*;
pub use trace::*;

use crate::trace::{CopyKind, Nanos, Trace, TraceError, CUDA_DEVICE_TYPE};
use serde::Serialize;
use std::collections::BTreeSet;

/// Refuse what would audit as a vacuous `clean`: a trace with no events, one
/// with no GPU activity, device-memory event or annotation range (nothing the
/// rules or a mapping read), and a `--device` GPU the trace does not have. Bad
/// input, with the file named.
pub fn require_content(trace: &Trace, opts: &Options) -> Result<(), TraceError> {
    let refuse = |message: String| {
        Err(TraceError::Format {
            file: trace.file.clone(),
            message,
        })
    };
    if trace.total_events == 0 {
        return refuse("the trace holds no events: nothing to audit".into());
    }
    let memory = trace
        .memory
        .iter()
        .filter(|m| m.device_type == CUDA_DEVICE_TYPE);
    if trace.gpu.is_empty() && trace.ranges.is_empty() && memory.clone().next().is_none() {
        return refuse(format!(
            "{} event(s), but no GPU activity, device-memory event or annotation range: nothing to audit",
            trace.total_events
        ));
    }
    let mut gpus: BTreeSet<i64> = trace.gpu.iter().map(|g| g.device).collect();
    gpus.extend(memory.map(|m| m.device));
    match opts.device {
        Some(d) if !gpus.contains(&d) => {
            let list: Vec<String> = gpus.iter().map(|g| g.to_string()).collect();
            refuse(format!(
                "--device {d}: the trace has no GPU {d} (its GPUs: {})",
                if list.is_empty() {
                    "none".to_string()
                } else {
                    list.join(", ")
                }
            ))
        }
        _ => Ok(()),
    }
}

/// Where a finding happened on the trace's timeline (trace nanoseconds), for
/// pictures: on a GPU's memory curve, on a copy lane, on a kernel lane, or at no
/// instant. `device: None` is the audited GPU (mapped findings: the model has one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Spot {
    Memory {
        device: Option<i64>,
        at: Nanos,
    },
    Copy {
        device: Option<i64>,
        kind: CopyKind,
        at: Nanos,
    },
    Compute {
        at: Nanos,
    },
    Nowhere,
}

impl Spot {
    /// The GPU it names, if any.
    pub fn device(&self) -> Option<i64> {
        match self {
            Spot::Memory { device, .. } | Spot::Copy { device, .. } => *device,
            Spot::Compute { .. } | Spot::Nowhere => None,
        }
    }
}

/// One finding held against the run, as printed and as drawn: `[rule] sentence`
/// (the sentence carries the facts to re-check it), and where it happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Line {
    pub text: String,
    pub spot: Spot,
}

/// The audit's verdict: clean when no trace-only rule is broken and the checker
/// finds the reconstructed schedule valid, less the violations that rounding to
/// ticks alone made ([`MappedAudit::valid`]).
pub fn clean(ta: &TraceAudit, mapped: Option<&MappedAudit>) -> bool {
    ta.violations() == 0 && mapped.is_none_or(|m| m.valid())
}

/// The verdict's words, the same in the text and in the picture.
pub fn verdict_words(clean: bool) -> &'static str {
    if clean {
        "clean"
    } else {
        "VIOLATIONS"
    }
}

/// Every finding the verdict holds against the run, in print order: the
/// trace-only findings (the first [`MAX_WITNESSES`] of each rule), then the
/// checker's violations on the reconstructed schedule that the trace's
/// nanoseconds confirm ([`MappedAudit::findings`]).
pub fn findings(ta: &TraceAudit, mapped: Option<&MappedAudit>) -> Vec<Line> {
    let mut out: Vec<Line> = ta
        .findings
        .iter()
        .map(|f| Line {
            text: f.line(),
            spot: f.spot(),
        })
        .collect();
    if let Some(m) = mapped {
        out.extend(m.findings.iter().cloned());
    }
    out
}
