//! Reserved against allocated device memory, from the trace alone.
//!
//! A caching allocator (PyTorch's) reserves memory from the driver in segments
//! and hands out blocks inside them; Kineto's `[memory]` events record both
//! running totals (`Total Allocated`, `Total Reserved`). What is reserved and
//! not allocated is the allocator's cache and its fragmentation: memory the run
//! held on the device that no tensor used. This module measures it on the
//! timeline of [`super::memory_timeline`]: the peak reserved, the largest
//! reserved − allocated and when, and its time-weighted mean, all in exact
//! integers.
//!
//! Owns: [`ReservedSummary`], [`reserved_against_allocated`]. Judges nothing (no
//! rule is broken by a cache); it reports, with notes for traces that lack the
//! figure.
//! Must not import: the mapped audit, the mapping, the checker, solvers,
//! heuristics, bounds.

use super::trace::{MemoryTimeline, Note};
use crate::trace::Nanos;
use crate::units::Bytes;
use serde::Serialize;

/// One GPU's reserved memory beside its allocated memory. Differences are
/// `Total Reserved` − allocated bytes (the memory timeline's running sum) after
/// the last event of each instant; they are signed, since a hostile or
/// inconsistent trace may report less reserved than allocated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReservedSummary {
    pub device: i64,
    /// Allocator events of this GPU that carry `Total Reserved`.
    pub events: u64,
    pub peak_reserved: Bytes,
    /// The first instant at which reserved memory reaches its peak.
    pub peak_reserved_at: Nanos,
    /// Allocated bytes at that instant.
    pub allocated_at_peak_reserved: i64,
    /// The peak of reserved memory less the peak of allocated memory (over the
    /// instants where reserved is known): what the allocator held beyond the
    /// tensors' own peak.
    pub peak_reserved_over_peak_allocated: i64,
    /// The largest reserved − allocated at one instant, and the first instant
    /// it occurs.
    pub peak_difference: i64,
    pub peak_difference_at: Nanos,
    /// Time-weighted mean of reserved − allocated from the first instant with a
    /// reserved total to the last event, rounded toward −∞; `None` when that
    /// span is empty.
    pub mean_difference: Option<i64>,
    /// The span the mean is taken over.
    pub span: Nanos,
}

fn clamp(v: i128) -> i64 {
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// The reserved summary of one GPU's timeline (`None` when no event carries
/// `Total Reserved`), and the notes on it: no reserved totals at all, some
/// events without one, instants where reserved < allocated.
pub fn reserved_against_allocated(
    tl: &MemoryTimeline,
    dev: i64,
) -> (Option<ReservedSummary>, Vec<Note>) {
    let mut notes = Vec::new();
    let known: Vec<(Nanos, i128, i128)> = tl
        .samples
        .iter()
        .zip(&tl.reserved)
        .filter_map(|(&(at, alloc), r)| r.map(|r| (at, r as i128, alloc)))
        .collect();
    let Some(&(first_at, r0, a0)) = known.first() else {
        notes.push(Note::ReservedMissing {
            device: dev,
            events: tl.events,
        });
        return (None, notes);
    };
    if tl.reserved_missing > 0 {
        notes.push(Note::ReservedPartial {
            device: dev,
            missing: tl.reserved_missing,
            events: tl.events,
        });
    }
    let (mut peak_r, mut peak_r_at, mut alloc_at_peak_r) = (r0, first_at, a0);
    let mut peak_a = a0;
    let (mut peak_d, mut peak_d_at) = (r0 - a0, first_at);
    let mut below: Option<(u64, Nanos)> = None;
    let mut weighted: i128 = 0;
    for (i, &(at, r, a)) in known.iter().enumerate() {
        if r > peak_r {
            (peak_r, peak_r_at, alloc_at_peak_r) = (r, at, a);
        }
        peak_a = peak_a.max(a);
        if r - a > peak_d {
            (peak_d, peak_d_at) = (r - a, at);
        }
        if r < a {
            let b = below.get_or_insert((0, at));
            b.0 += 1;
        }
        if let Some(&(next, _, _)) = known.get(i + 1) {
            weighted += (r - a) * (next.0 as i128 - at.0 as i128);
        }
    }
    if let Some((instants, first_at)) = below {
        notes.push(Note::ReservedBelowAllocated {
            device: dev,
            instants,
            first_at,
        });
    }
    let last_at = known.last().map_or(first_at, |k| k.0);
    let span = last_at.0 as i128 - first_at.0 as i128;
    let summary = ReservedSummary {
        device: dev,
        events: tl.events - tl.reserved_missing,
        peak_reserved: Bytes(peak_r.clamp(0, u64::MAX as i128) as u64),
        peak_reserved_at: peak_r_at,
        allocated_at_peak_reserved: clamp(alloc_at_peak_r),
        peak_reserved_over_peak_allocated: clamp(peak_r - peak_a),
        peak_difference: clamp(peak_d),
        peak_difference_at: peak_d_at,
        mean_difference: (span > 0).then(|| clamp(weighted.div_euclid(span))),
        span: Nanos(clamp(span)),
    };
    (Some(summary), notes)
}
