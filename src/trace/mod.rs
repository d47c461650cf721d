//! Runtime traces: import profiler traces (PyTorch/Kineto Chrome-trace JSON, Nsight
//! Systems SQLite), audit them against the model, compare a plan with the run, and
//! export schedules as Chrome traces.
//!
//! Owns: the imported [`Trace`] (GPU activities, runtime calls, annotation ranges,
//! memory events, all with exact integer-nanosecond times), [`TraceError`], and the
//! submodules:
//! - [`time`]: exact decimal timestamps;
//! - [`kineto`], [`nsys`]: streaming importers;
//! - [`et`]: PyTorch execution traces → `op_sequence` instances;
//! - [`memsnap`]: PyTorch caching-allocator snapshots, replayed through the
//!   `caching` allocator model;
//! - [`intervals`]: interval unions for busy/idle/overlap measures;
//! - [`mapping`]: names in a trace → the model's ops and tensors, and the
//!   reconstruction of a [`crate::schedule::Schedule`];
//! - [`audit`]: trace-only rules, and mapped rules that run [`crate::check::check`];
//! - [`plan`]: plan against actual;
//! - [`export`]: schedules → Chrome-trace JSON, memory from [`crate::semantics::State`].
//!
//! Must not import: solvers (`exact`), heuristics, bounds, good_lp, z3. Validity of
//! a reconstructed schedule is decided by the checker, never here.

pub mod audit;
pub mod et;
pub mod export;
pub mod intervals;
pub mod kineto;
pub mod mapping;
pub mod memsnap;
pub mod nsys;
pub mod plan;
pub mod time;

pub use time::Nanos;

use crate::io::FieldError;

use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;

/// Why a trace, mapping or related input could not be read. Every variant names the
/// file, and where it can the field (`traceEvents[12].ts`) or the byte offset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    // The io::Error is in the message, not a `source` (anyhow's `{:#}` would print it twice).
    #[error("{file}: cannot read: {error}")]
    Read { file: String, error: std::io::Error },
    #[error("{file}: corrupt or truncated gzip stream near decompressed byte {offset}: {message}")]
    Gzip {
        file: String,
        offset: u64,
        message: String,
    },
    #[error("{file}: byte {offset}: malformed JSON: {message}")]
    Json {
        file: String,
        offset: u64,
        message: String,
    },
    #[error(transparent)]
    Field(#[from] FieldError),
    #[error("{file}: SQLite: {message}")]
    Sqlite { file: String, message: String },
    #[error("{file}: {message}")]
    Format { file: String, message: String },
    #[error("{file}: cannot write: {error}")]
    Write { file: String, error: std::io::Error },
}

/// Which importer produced the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Kineto,
    Nsys,
}

/// Direction of a copy, as the profiler names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum CopyKind {
    HtoD,
    DtoH,
    DtoD,
    HtoH,
    PtoP,
    Other,
}

impl CopyKind {
    /// From a Kineto name such as `Memcpy HtoD (Pageable -> Device)`.
    pub fn from_name(name: &str) -> CopyKind {
        for (k, s) in [
            (CopyKind::HtoD, "HtoD"),
            (CopyKind::DtoH, "DtoH"),
            (CopyKind::DtoD, "DtoD"),
            (CopyKind::HtoH, "HtoH"),
            (CopyKind::PtoP, "PtoP"),
        ] {
            if name.contains(s) {
                return k;
            }
        }
        CopyKind::Other
    }
    /// Does it cross the host↔device link?
    pub fn on_link(self) -> bool {
        matches!(self, CopyKind::HtoD | CopyKind::DtoH)
    }
    pub fn label(self) -> &'static str {
        match self {
            CopyKind::HtoD => "HtoD",
            CopyKind::DtoH => "DtoH",
            CopyKind::DtoD => "DtoD",
            CopyKind::HtoH => "HtoH",
            CopyKind::PtoP => "PtoP",
            CopyKind::Other => "other",
        }
    }
}

/// What a GPU activity is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum GpuKind {
    Kernel,
    Memcpy(CopyKind),
    Memset,
}

/// Index into [`Trace::names`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct NameId(pub u32);

/// One activity on a GPU stream. `end = start + duration`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuEvent {
    pub kind: GpuKind,
    pub device: i64,
    pub stream: i64,
    pub start: Nanos,
    pub end: Nanos,
    /// Bytes moved or set (copies and memsets).
    pub bytes: Option<u64>,
    pub correlation: Option<i64>,
    pub name: NameId,
}

/// A CUDA runtime (or driver) call on a CPU thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuntimeCall {
    pub thread: i64,
    pub start: Nanos,
    pub end: Nanos,
    pub correlation: Option<i64>,
    pub name: NameId,
}

/// Where an annotation range was recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RangeKind {
    /// `record_function` on a CPU thread (Kineto `user_annotation`).
    UserAnnotation,
    /// The same range projected on a GPU stream (Kineto `gpu_user_annotation`).
    GpuUserAnnotation,
    /// An NVTX push/pop or start/end range.
    Nvtx,
}

/// A named range: `thread` is the CPU thread, or the GPU stream for GPU ranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub kind: RangeKind,
    /// GPU device for GPU ranges; process id otherwise.
    pub device: i64,
    pub thread: i64,
    pub start: Nanos,
    pub end: Nanos,
    pub name: NameId,
}

/// An allocator event: `bytes > 0` allocates, `< 0` frees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryEvent {
    pub at: Nanos,
    /// Kineto `Device Type` (0 CPU, 1 CUDA).
    pub device_type: i64,
    pub device: i64,
    pub bytes: i64,
    /// The allocator's running total after this event, where recorded.
    pub total_allocated: Option<i64>,
    /// The allocator's reserved total after this event (Kineto `Total Reserved`:
    /// what the caching allocator holds from the driver, free cached blocks
    /// included), where recorded.
    pub total_reserved: Option<u64>,
    /// The block's device address (Kineto `Addr`), where recorded: pairs an
    /// allocation with its free.
    pub addr: Option<u64>,
}

/// CUDA devices in Kineto's `[memory]` events have `Device Type` 1.
pub const CUDA_DEVICE_TYPE: i64 = 1;

/// Interned strings (kernel and range names repeat thousands of times).
#[derive(Clone, Debug, Default)]
pub struct Names {
    list: Vec<String>,
    index: HashMap<String, NameId>,
}

impl Names {
    pub fn intern(&mut self, s: &str) -> NameId {
        if let Some(id) = self.index.get(s) {
            return *id;
        }
        let id = NameId(self.list.len() as u32);
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), id);
        id
    }
    pub fn get(&self, id: NameId) -> &str {
        &self.list[id.0 as usize]
    }
    pub fn len(&self) -> usize {
        self.list.len()
    }
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// Export provenance, carried by traces that `offcert export-trace` wrote (top-level
/// key `offcert`), so that a mapped audit knows the tick and cyclic state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportMeta {
    pub instance: String,
    /// Nanoseconds per model tick.
    pub tick_ns: i64,
    /// Trace time of model time 0.
    pub origin_ns: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial: Option<crate::schedule::CyclicStateFile>,
}

/// An imported trace. Lists are sorted by start time (memory events stably by time,
/// so that events at one instant keep the file's order).
#[derive(Clone, Debug)]
pub struct Trace {
    pub file: String,
    pub format: Format,
    pub names: Names,
    pub gpu: Vec<GpuEvent>,
    pub runtime: Vec<RuntimeCall>,
    pub ranges: Vec<Range>,
    pub memory: Vec<MemoryEvent>,
    /// Events read, by category (Kineto `cat`, or the Nsight table), including those
    /// not kept (CPU operators, flow arrows, metadata).
    pub counts: BTreeMap<String, u64>,
    /// All events read (Kineto `traceEvents` entries, or rows of the four tables).
    pub total_events: u64,
    /// `[memory]` events earlier than the `[memory]` event before them in the file.
    pub memory_out_of_order: u64,
    /// Timestamps that carried sub-nanosecond digits (rounded toward −∞).
    pub subnanosecond_rounded: u64,
    /// Finest timestamp step the file can express: 1000 ns for integer
    /// microseconds, 1 ns for three decimals or Nsight.
    pub resolution: Nanos,
    /// Kineto `baseTimeNanoseconds` (already added to every time), if present.
    pub base_time: Option<Nanos>,
    pub device_names: BTreeMap<i64, String>,
    pub meta: Option<ExportMeta>,
}

impl Trace {
    pub(crate) fn new(file: String, format: Format) -> Trace {
        Trace {
            file,
            format,
            names: Names::default(),
            gpu: Vec::new(),
            runtime: Vec::new(),
            ranges: Vec::new(),
            memory: Vec::new(),
            counts: BTreeMap::new(),
            total_events: 0,
            memory_out_of_order: 0,
            subnanosecond_rounded: 0,
            resolution: Nanos(1),
            base_time: None,
            device_names: BTreeMap::new(),
            meta: None,
        }
    }

    /// Sort every list by time; memory events stably (the allocator's order at one
    /// instant is the file's).
    pub(crate) fn finish(&mut self) {
        self.gpu.sort_by_key(|e| (e.start, e.end));
        self.runtime.sort_by_key(|e| (e.start, e.end));
        self.ranges
            .sort_by_key(|e| (e.start, std::cmp::Reverse(e.end)));
        self.memory.sort_by_key(|e| e.at);
    }

    pub fn count(&self, category: &str) -> u64 {
        self.counts.get(category).copied().unwrap_or(0)
    }

    pub fn kernels(&self) -> impl Iterator<Item = &GpuEvent> {
        self.gpu.iter().filter(|e| e.kind == GpuKind::Kernel)
    }

    pub fn copies(&self) -> impl Iterator<Item = &GpuEvent> {
        self.gpu
            .iter()
            .filter(|e| matches!(e.kind, GpuKind::Memcpy(_)))
    }

    pub fn name(&self, id: NameId) -> &str {
        self.names.get(id)
    }
}

/// Import a trace, choosing the importer by the file's first bytes: SQLite
/// (`SQLite format 3`), gzip (`1f 8b`, a Kineto JSON inside) or plain JSON.
pub fn load(path: &Path) -> Result<Trace, TraceError> {
    let file = path.display().to_string();
    let mut head = [0u8; 16];
    let n = {
        let mut f = std::fs::File::open(path).map_err(|source| TraceError::Read {
            file: file.clone(),
            error: source,
        })?;
        let mut n = 0;
        while n < head.len() {
            match f.read(&mut head[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(source) => {
                    return Err(TraceError::Read {
                        file: file.clone(),
                        error: source,
                    })
                }
            }
        }
        n
    };
    if head[..n].starts_with(b"SQLite format 3\0") {
        nsys::load(path)
    } else {
        kineto::load(path)
    }
}
