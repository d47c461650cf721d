//! The trace's own allocation sequence replayed through the `caching`
//! allocator model (`models/MODEL.md` §2.8, [`crate::allocator::caching`]), and
//! the model's reserved bytes set beside the trace's `Total Reserved`.
//!
//! Kineto's `[memory]` events of a CUDA device are the caching allocator's
//! blocks: `Bytes` is the block's size (positive when handed out, negative when
//! given back) and `Addr` its address. The replay pairs each free with the
//! allocation of the same address before it, and asks the model for a block of
//! the same size on every allocation. What the trace does not say is the
//! allocator's state before its first event, so the replay starts from an
//! empty model holding what was live then: the bytes of the frees with no
//! allocation in the window (one block each, in the order of their frees), and
//! the rest of the baseline (the memory timeline's, read from
//! `Total Allocated`) as one block first. The model's capacity is unbounded, so
//! it never gives a cached segment back (PyTorch does so only when a
//! reservation fails, or on `empty_cache`).
//!
//! Owns: [`CachingReplay`], [`replay_caching`]. Judges nothing: the model's
//! figures are an estimate of what a fresh caching allocator would reserve for
//! the same requests, reported beside the trace's.
//! Must not import: the mapped audit, the mapping, the checker, solvers,
//! heuristics, bounds.

use super::trace::{MemoryTimeline, Note};
use crate::allocator::{Block, CachingAllocator};
use crate::trace::{MemoryEvent, Nanos, Trace, CUDA_DEVICE_TYPE};
use crate::units::Bytes;
use serde::Serialize;
use std::collections::HashMap;

/// The caching model replayed on one GPU's allocation sequence, beside the
/// trace's reserved totals. Differences are the trace's `Total Reserved` less
/// the model's reserved bytes, after the last event of each instant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CachingReplay {
    pub device: i64,
    /// Allocation events replayed.
    pub allocations: u64,
    /// Frees paired with an allocation of the window.
    pub frees: u64,
    /// Frees of blocks allocated before the window (seeded live at the start).
    pub unpaired_frees: u64,
    /// Bytes seeded live at the start: the baseline, or the unpaired frees'
    /// bytes if those are more.
    pub seeded: Bytes,
    /// Frees whose size differs from the size their allocation asked for.
    pub size_mismatches: u64,
    /// Allocations at an address the window holds live already (a free the
    /// trace lost): the older block is given back first.
    pub reused_live_addresses: u64,
    /// Requests the model could not serve (none with an unbounded capacity,
    /// unless the model's address space overflows).
    pub model_failures: u64,
    pub model_peak_reserved: Bytes,
    pub model_peak_reserved_at: Nanos,
    /// The model's allocated bytes (block sizes) at their peak.
    pub model_peak_allocated: Bytes,
    pub model_final_reserved: Bytes,
    /// The trace's figures, where its events carry `Total Reserved`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub against_trace: Option<ReservedComparison>,
    /// The model's reserved bytes after each instant (for pictures).
    #[serde(skip)]
    pub curve: Vec<(Nanos, u64)>,
}

/// The trace's reserved curve against the model's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReservedComparison {
    pub trace_peak_reserved: Bytes,
    /// The trace's peak less the model's.
    pub peak_difference: i64,
    /// The first instant at which the two differ, if any.
    pub first_divergence: Option<Nanos>,
    /// The largest and the least trace − model, each with its first instant.
    pub largest: (i64, Nanos),
    pub least: (i64, Nanos),
    /// Time-weighted mean of trace − model, rounded toward −∞ (`None` over an
    /// empty span).
    pub mean: Option<i64>,
}

fn clamp(v: i128) -> i64 {
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// The GPU's allocator events (as [`super::memory_timeline`] takes them).
fn events(trace: &Trace, dev: i64) -> Vec<&MemoryEvent> {
    trace
        .memory
        .iter()
        .filter(|m| m.device_type == CUDA_DEVICE_TYPE && m.device == dev)
        .collect()
}

/// The frees with no allocation of the same address before them in the
/// window, in order: (address, bytes).
fn unpaired_frees(mem: &[&MemoryEvent]) -> Vec<(u64, u64)> {
    let mut live = std::collections::HashSet::new();
    let mut out = Vec::new();
    for m in mem {
        let addr = m.addr.unwrap_or(0);
        if m.bytes > 0 {
            live.insert(addr);
        } else if m.bytes < 0 && !live.remove(&addr) {
            out.push((addr, m.bytes.unsigned_abs()));
        }
    }
    out
}

/// The replay's running state: the model, the live blocks by trace address.
struct Replay {
    model: CachingAllocator,
    live: HashMap<u64, Block>,
    seeded: HashMap<u64, Vec<Block>>,
    r: CachingReplay,
}

impl Replay {
    fn malloc(&mut self, bytes: u64) -> Option<Block> {
        match self.model.malloc(Bytes(bytes)) {
            Ok(b) => Some(b),
            Err(_) => {
                self.r.model_failures += 1;
                None
            }
        }
    }

    fn event(&mut self, m: &MemoryEvent) {
        let addr = m.addr.unwrap_or(0);
        if m.bytes > 0 {
            self.r.allocations += 1;
            if let Some(old) = self.live.remove(&addr) {
                self.r.reused_live_addresses += 1;
                self.model.free(old);
            }
            if let Some(b) = self.malloc(m.bytes as u64) {
                self.live.insert(addr, b);
            }
        } else if m.bytes < 0 {
            let block = match self.live.remove(&addr) {
                Some(b) => {
                    self.r.frees += 1;
                    Some(b)
                }
                None => self.seeded.get_mut(&addr).and_then(|v| v.pop()),
            };
            if let Some(b) = block {
                if b.requested.0 != m.bytes.unsigned_abs() {
                    self.r.size_mismatches += 1;
                }
                self.model.free(b);
            }
        }
    }
}

/// Replay GPU `dev`'s allocation sequence through the caching model (`None`
/// without allocator events, or when some lack `Addr`: a note says so), and
/// compare its reserved bytes with the trace's on `tl`'s instants.
pub fn replay_caching(
    trace: &Trace,
    tl: &MemoryTimeline,
    dev: i64,
) -> (Option<CachingReplay>, Vec<Note>) {
    let mem = events(trace, dev);
    let without = mem.iter().filter(|m| m.addr.is_none()).count() as u64;
    if mem.is_empty() || without > 0 {
        let notes = if without > 0 {
            vec![Note::ReplayWithoutAddr {
                device: dev,
                missing: without,
                events: mem.len() as u64,
            }]
        } else {
            Vec::new()
        };
        return (None, notes);
    }
    let mut rp = Replay {
        model: CachingAllocator::new(Bytes(u64::MAX)),
        live: HashMap::new(),
        seeded: HashMap::new(),
        r: CachingReplay {
            device: dev,
            allocations: 0,
            frees: 0,
            unpaired_frees: 0,
            seeded: Bytes(0),
            size_mismatches: 0,
            reused_live_addresses: 0,
            model_failures: 0,
            model_peak_reserved: Bytes(0),
            model_peak_reserved_at: mem[0].at,
            model_peak_allocated: Bytes(0),
            model_final_reserved: Bytes(0),
            against_trace: None,
            curve: Vec::new(),
        },
    };
    seed(&mut rp, &unpaired_frees(&mem), tl.baseline.max(0) as u64);
    for (i, m) in mem.iter().enumerate() {
        rp.event(m);
        if mem.get(i + 1).is_none_or(|n| n.at != m.at) {
            let (res, alloc) = (rp.model.reserved(), rp.model.allocated());
            if res > rp.r.model_peak_reserved {
                rp.r.model_peak_reserved = res;
                rp.r.model_peak_reserved_at = m.at;
            }
            rp.r.model_peak_allocated = rp.r.model_peak_allocated.max(alloc);
            rp.r.curve.push((m.at, res.0));
        }
    }
    rp.r.model_final_reserved = rp.model.reserved();
    rp.r.against_trace = compare(tl, &rp.r);
    (Some(rp.r), Vec::new())
}

/// What was live before the window: the rest of the baseline as one block,
/// then each unpaired free's block.
fn seed(rp: &mut Replay, unpaired: &[(u64, u64)], baseline: u64) {
    let unpaired_bytes: u64 = unpaired.iter().map(|u| u.1).sum();
    let rest = baseline.saturating_sub(unpaired_bytes);
    if rest > 0 {
        rp.malloc(rest);
    }
    for &(addr, bytes) in unpaired {
        if let Some(b) = rp.malloc(bytes) {
            rp.seeded.entry(addr).or_default().push(b);
        }
    }
    for v in rp.seeded.values_mut() {
        v.reverse(); // popped in the order of the frees
    }
    rp.r.unpaired_frees = unpaired.len() as u64;
    rp.r.seeded = Bytes(rest + unpaired_bytes);
}

/// Trace − model reserved on the instants where the trace has a reserved total
/// (the timeline's samples after the baseline, which the model's curve
/// follows one for one).
fn compare(tl: &MemoryTimeline, r: &CachingReplay) -> Option<ReservedComparison> {
    let pts: Vec<(Nanos, i128)> = tl.reserved[1..]
        .iter()
        .zip(&r.curve)
        .filter_map(|(t, &(at, m))| t.map(|t| (at, t as i128 - m as i128)))
        .collect();
    let &(first_at, d0) = pts.first()?;
    let trace_peak = tl.reserved.iter().flatten().max().copied().unwrap_or(0);
    let (mut largest, mut least) = ((d0, first_at), (d0, first_at));
    let mut weighted = 0i128;
    for (i, &(at, d)) in pts.iter().enumerate() {
        if d > largest.0 {
            largest = (d, at);
        }
        if d < least.0 {
            least = (d, at);
        }
        if let Some(&(next, _)) = pts.get(i + 1) {
            weighted += d * (next.0 as i128 - at.0 as i128);
        }
    }
    let span = pts
        .last()
        .map_or(0, |p| p.0 .0 as i128 - first_at.0 as i128);
    Some(ReservedComparison {
        trace_peak_reserved: Bytes(trace_peak),
        peak_difference: clamp(trace_peak as i128 - r.model_peak_reserved.0 as i128),
        first_divergence: pts.iter().find(|p| p.1 != 0).map(|p| p.0),
        largest: (clamp(largest.0), largest.1),
        least: (clamp(least.0), least.1),
        mean: (span > 0).then(|| clamp(weighted.div_euclid(span))),
    })
}
