//! The trace's own allocated bytes beside the model's peak (a note of the
//! mapped audit, never a finding).
//!
//! The caching allocator counts a block from the CPU's request (`torch.empty`
//! on the host thread) to the CPU's free; the model counts a tensor on the GPU
//! from the start of the event that makes it to the end of its release
//! (`models/MODEL.md` §2). With the CPU running ahead of the GPU, a prefetch
//! buffer is allocated before its copy starts: the trace's allocated bytes then
//! exceed the model's peak although the schedule is valid. The figures here say
//! by how much and when, counting the trace's bytes above its baseline (what
//! was allocated before its first memory event: the weights and whatever else
//! the model leaves out).
//!
//! Owns: [`AllocatedAboveModel`], [`allocated_above_model`].
//! Must not import: solvers, heuristics, bounds; judges nothing.

use super::mapped::MappedAudit;
use super::trace::memory_timeline;
use crate::trace::{Nanos, Trace, CUDA_DEVICE_TYPE};
use crate::units::Bytes;
use serde::Serialize;
use std::collections::BTreeSet;

/// A GPU whose allocated bytes above their baseline exceed the model's peak.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AllocatedAboveModel {
    pub device: i64,
    /// The trace's allocated bytes less its baseline, at their peak (the first
    /// instant of it).
    pub trace_peak: Bytes,
    pub trace_peak_at: Nanos,
    /// The checker's peak on the reconstructed schedule.
    pub model_peak: Bytes,
    /// `trace_peak − model_peak`.
    pub excess: Bytes,
    /// The first instant above the model's peak.
    pub first_above_at: Nanos,
    /// How long the trace stays above it in all (up to its last memory event).
    pub time_above: Nanos,
}

/// Per GPU with memory events, the trace's allocated bytes above the model's
/// peak, if they ever are.
pub fn allocated_above_model(trace: &Trace, mapped: &MappedAudit) -> Vec<AllocatedAboveModel> {
    let model_peak = mapped.report.peak_memory;
    let devices: BTreeSet<i64> = trace
        .memory
        .iter()
        .filter(|m| m.device_type == CUDA_DEVICE_TYPE)
        .map(|m| m.device)
        .collect();
    let mut out = Vec::new();
    for dev in devices {
        let Some(tl) = memory_timeline(trace, dev) else {
            continue;
        };
        let above = |b: i128| b - tl.baseline > model_peak.0 as i128;
        let mut peak = (0i128, Nanos(0));
        let mut first = None;
        let mut time = 0i64;
        for (k, &(at, b)) in tl.samples.iter().enumerate() {
            if b - tl.baseline > peak.0 {
                peak = (b - tl.baseline, at);
            }
            if above(b) {
                first.get_or_insert(at);
                if let Some(&(next, _)) = tl.samples.get(k + 1) {
                    time += next.0 - at.0;
                }
            }
        }
        if let Some(first_above_at) = first {
            let trace_peak = Bytes(peak.0.clamp(0, u64::MAX as i128) as u64);
            out.push(AllocatedAboveModel {
                device: dev,
                trace_peak,
                trace_peak_at: peak.1,
                model_peak,
                excess: Bytes(trace_peak.0 - model_peak.0),
                first_above_at,
                time_above: Nanos(time),
            });
        }
    }
    out
}
