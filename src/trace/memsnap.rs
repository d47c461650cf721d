//! PyTorch CUDA caching-allocator snapshots (`torch.cuda.memory._snapshot()`
//! written as JSON, plain or gzip), and their allocation history replayed
//! through the `caching` model (`models/MODEL.md` §2.8,
//! [`crate::allocator::caching`]) from an empty state.
//!
//! A snapshot holds, per device, the allocator's own event history
//! (`device_traces[d][k]`: `action`, `addr`, `size`, `stream`, `time_us`) with
//! the actions `alloc` (`size` = the bytes asked for), `free_requested` (the
//! caller dropped the block), `free_completed` (the block is back in the pool:
//! at once, or once the streams that used it have passed the recorded events),
//! `segment_alloc` / `segment_free` (`cudaMalloc` / `cudaFree` of a segment),
//! `segment_map` / `segment_unmap` (expandable segments), `snapshot` and `oom`;
//! the state at the end (`segments`, with their blocks); and the allocator
//! settings (`allocator_settings`, recent PyTorch only).
//!
//! The replay asks the model for a block on every `alloc` (the request rounded
//! as the model rounds it) and gives the block back on its `free_completed`;
//! it sets the model's segments (sizes, in order, and which allocation made
//! each) and reserved bytes beside the real allocator's. It is meaningful only
//! for a history recorded from before the process's first CUDA allocation: a
//! free of a block allocated before the history is counted (`unknown_frees`)
//! and skipped.
//!
//! Owns: [`Snapshot`], [`load`], [`parse_bytes`], [`is_snapshot`],
//! [`replay`], [`SnapshotReplay`]. Judges nothing (reports, never a verdict).
//! Must not import: the mapped audit, the mapping, the checker, solvers,
//! heuristics, bounds.

use super::TraceError;
use crate::allocator::{Block, CachingAllocator};
use crate::io::FieldError;
use crate::units::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// Largest decompressed snapshot accepted (hostile-input guard).
const MAX_BYTES: u64 = 1 << 30;

/// What the allocator recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Snapshot,
    Oom,
}

/// One entry of a device's history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocatorEvent {
    pub action: Action,
    pub addr: u64,
    pub size: u64,
    #[serde(default)]
    pub stream: i64,
    #[serde(default)]
    pub time_us: Option<i64>,
}

/// A segment of the state at the end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentState {
    pub device: i64,
    pub address: u64,
    pub total_size: u64,
    pub allocated_size: u64,
    #[serde(default)]
    pub stream: i64,
    #[serde(default)]
    pub segment_type: Option<String>,
}

/// The settings the snapshot reports (absent in older PyTorch).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    #[serde(default)]
    pub expandable_segments: bool,
    /// −1: unlimited (the default).
    #[serde(default = "unlimited")]
    pub max_split_size: i64,
}

fn unlimited() -> i64 {
    -1
}

/// A snapshot: the state at the end, and per device (the index in
/// `device_traces`) its history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    pub segments: Vec<SegmentState>,
    #[serde(default)]
    pub device_traces: Vec<Vec<AllocatorEvent>>,
    #[serde(default)]
    pub allocator_settings: Option<Settings>,
}

/// Does the file hold a snapshot? True when the first key of its top-level
/// object (after gunzipping) is `segments` or `device_traces`, as
/// `torch.cuda.memory._snapshot()` writes them; Kineto traces start otherwise.
pub fn is_snapshot(path: &Path) -> bool {
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = Vec::new();
    let mut raw = f.take(1 << 16);
    if raw.read_to_end(&mut head).is_err() {
        return false;
    }
    let mut text = Vec::new();
    if head.starts_with(&[0x1f, 0x8b]) {
        let mut d = flate2::read::MultiGzDecoder::new(head.as_slice()).take(256);
        let _ = d.read_to_end(&mut text);
    } else {
        text = head;
    }
    let rest = text.trim_ascii_start();
    let Some(rest) = rest.strip_prefix(b"{") else {
        return false;
    };
    let rest = rest.trim_ascii_start();
    rest.starts_with(b"\"segments\"") || rest.starts_with(b"\"device_traces\"")
}

/// Read a snapshot file (plain or gzip JSON).
pub fn load(path: &Path) -> Result<Snapshot, TraceError> {
    let file = path.display().to_string();
    let raw = std::fs::read(path).map_err(|error| TraceError::Read {
        file: file.clone(),
        error,
    })?;
    parse_bytes(&file, &raw)
}

/// Parse a snapshot from its bytes (plain or gzip JSON); bad input names the
/// file and the field (`device_traces[0][12].size`).
pub fn parse_bytes(file: &str, raw: &[u8]) -> Result<Snapshot, TraceError> {
    let mut text = Vec::new();
    let bytes: &[u8] = if raw.starts_with(&[0x1f, 0x8b]) {
        flate2::read::MultiGzDecoder::new(raw)
            .take(MAX_BYTES)
            .read_to_end(&mut text)
            .map_err(|e| TraceError::Gzip {
                file: file.into(),
                offset: text.len() as u64,
                message: e.to_string(),
            })?;
        &text
    } else {
        raw
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let snap: Snapshot = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            TraceError::Json {
                file: file.into(),
                offset: byte_offset(bytes, inner.line(), inner.column()),
                message: inner.to_string(),
            }
        } else {
            TraceError::Field(FieldError {
                file: file.into(),
                field: if field == "." {
                    "(top level)".into()
                } else {
                    field
                },
                message: inner.to_string(),
            })
        }
    })?;
    de.end().map_err(|e| TraceError::Json {
        file: file.into(),
        offset: byte_offset(bytes, e.line(), e.column()),
        message: e.to_string(),
    })?;
    Ok(snap)
}

/// The byte offset of serde_json's 1-based line and column.
fn byte_offset(bytes: &[u8], line: usize, column: usize) -> u64 {
    let start: usize = bytes
        .split(|&b| b == b'\n')
        .take(line.saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    (start + column.saturating_sub(1)).min(bytes.len()) as u64
}

/// A segment "cudaMalloc"ed: its size, and which allocation (0-based, among
/// the history's `alloc` events) it was made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SegmentMade {
    pub allocation: u64,
    pub size: Bytes,
}

/// The first point where the model's reserved bytes differ from the real
/// allocator's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ReservedDifference {
    /// Index of the event in the device's history.
    pub event: usize,
    pub real: Bytes,
    pub model: Bytes,
}

/// One device's history replayed through the caching model from empty.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SnapshotReplay {
    pub device: usize,
    pub events: usize,
    pub allocations: u64,
    /// `free_completed` events paired with an allocation of the history.
    pub frees: u64,
    /// `free_completed` events of blocks allocated before the history.
    pub unknown_frees: u64,
    /// Allocations at an address the history holds live already.
    pub reused_live_addresses: u64,
    /// Distinct streams the history's allocations name (the model has one).
    pub streams: Vec<i64>,
    pub real_segments: Vec<SegmentMade>,
    pub model_segments: Vec<SegmentMade>,
    /// Real `segment_free` / `segment_unmap` events (the model, unbounded,
    /// never gives a segment back).
    pub real_segment_frees: u64,
    /// Points compared: after every `alloc`, `free_completed` and segment
    /// release (a real `segment_alloc` is followed by the `alloc` it serves).
    pub compared: u64,
    /// Compared points where the reserved bytes differ.
    pub reserved_differences: u64,
    pub first_difference: Option<ReservedDifference>,
    /// The real reserved bytes before the history: the snapshot's segments at
    /// the end less the history's segment allocations plus its releases.
    pub real_start_reserved: Bytes,
    pub real_peak_reserved: Bytes,
    pub model_peak_reserved: Bytes,
    pub real_final_reserved: Bytes,
    pub model_final_reserved: Bytes,
    /// The model's allocated bytes (block sizes) at their peak and at the end.
    pub model_peak_allocated: Bytes,
    pub model_final_allocated: Bytes,
}

impl SnapshotReplay {
    /// Segments and reserved bytes agree at every compared point.
    pub fn agrees(&self) -> bool {
        self.real_segments == self.model_segments
            && self.reserved_differences == 0
            && self.unknown_frees == 0
    }
}

/// Replay device `device`'s history (`device_traces[device]`) through an
/// empty caching model of unbounded capacity.
pub fn replay(snap: &Snapshot, device: usize) -> Option<SnapshotReplay> {
    let history = snap.device_traces.get(device)?;
    let mut model = CachingAllocator::new(Bytes(u64::MAX));
    let mut live: HashMap<u64, Block> = HashMap::new();
    let mut r = SnapshotReplay {
        device,
        events: history.len(),
        allocations: 0,
        frees: 0,
        unknown_frees: 0,
        reused_live_addresses: 0,
        streams: Vec::new(),
        real_segments: Vec::new(),
        model_segments: Vec::new(),
        real_segment_frees: 0,
        compared: 0,
        reserved_differences: 0,
        first_difference: None,
        real_start_reserved: Bytes(0),
        real_peak_reserved: Bytes(0),
        model_peak_reserved: Bytes(0),
        real_final_reserved: Bytes(0),
        model_final_reserved: Bytes(0),
        model_peak_allocated: Bytes(0),
        model_final_allocated: Bytes(0),
    };
    // The real reserved bytes before the history: the device's segments at the
    // end less those the history allocated, plus those it gave back (0 for a
    // history from the process's start).
    let at_end: u64 = snap
        .segments
        .iter()
        .filter(|g| g.device == device as i64)
        .map(|g| g.total_size)
        .sum();
    let (made, freed) = history
        .iter()
        .fold((0u64, 0u64), |(m, f), e| match e.action {
            Action::SegmentAlloc | Action::SegmentMap => (m.saturating_add(e.size), f),
            Action::SegmentFree | Action::SegmentUnmap => (m, f.saturating_add(e.size)),
            _ => (m, f),
        });
    let mut real: u64 = at_end.saturating_add(freed).saturating_sub(made);
    r.real_start_reserved = Bytes(real);
    r.real_peak_reserved = Bytes(real);
    for (k, e) in history.iter().enumerate() {
        let compare = match e.action {
            Action::Alloc => {
                if !r.streams.contains(&e.stream) {
                    r.streams.push(e.stream);
                }
                if let Some(old) = live.remove(&e.addr) {
                    r.reused_live_addresses += 1;
                    model.free(old);
                }
                let before = model.reserved().0;
                // Unbounded capacity: the model serves every request.
                if let Ok(b) = model.malloc(Bytes(e.size)) {
                    live.insert(e.addr, b);
                }
                if model.reserved().0 > before {
                    let size = Bytes(model.reserved().0 - before);
                    r.model_segments.push(SegmentMade {
                        allocation: r.allocations,
                        size,
                    });
                }
                r.allocations += 1;
                true
            }
            Action::FreeCompleted => {
                match live.remove(&e.addr) {
                    Some(b) => {
                        model.free(b);
                        r.frees += 1;
                    }
                    None => r.unknown_frees += 1,
                }
                true
            }
            Action::SegmentAlloc | Action::SegmentMap => {
                real = real.saturating_add(e.size);
                if e.action == Action::SegmentAlloc {
                    r.real_segments.push(SegmentMade {
                        allocation: r.allocations,
                        size: Bytes(e.size),
                    });
                }
                false
            }
            Action::SegmentFree | Action::SegmentUnmap => {
                real = real.saturating_sub(e.size);
                r.real_segment_frees += 1;
                true
            }
            Action::FreeRequested | Action::Snapshot | Action::Oom => false,
        };
        r.real_peak_reserved = r.real_peak_reserved.max(Bytes(real));
        r.model_peak_reserved = r.model_peak_reserved.max(model.reserved());
        r.model_peak_allocated = r.model_peak_allocated.max(model.allocated());
        if compare {
            r.compared += 1;
            if model.reserved().0 != real {
                r.reserved_differences += 1;
                r.first_difference.get_or_insert(ReservedDifference {
                    event: k,
                    real: Bytes(real),
                    model: model.reserved(),
                });
            }
        }
    }
    r.real_final_reserved = Bytes(real);
    r.model_final_reserved = model.reserved();
    r.model_final_allocated = model.allocated();
    Some(r)
}
