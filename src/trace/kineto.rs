//! PyTorch profiler / Kineto Chrome-trace JSON importer (plain or gzip), streaming.
//!
//! Owns: a small byte scanner that walks the top-level object and cuts the
//! `traceEvents` array into one event at a time; each event is then parsed by
//! serde_json from its own bytes (times kept as raw number text and converted
//! exactly by [`super::time`]). The whole trace is never held as one tree: memory
//! is the compact [`Trace`] plus one event's bytes.
//!
//! Reads current and legacy category names: `kernel`/`Kernel`, `gpu_memcpy`/`Memcpy`,
//! `gpu_memset`/`Memset`, `cuda_runtime`/`cuda_driver`/`Runtime`, `user_annotation`,
//! `gpu_user_annotation`, and `[memory]` instant events (`Bytes`, `Total Allocated`,
//! `Total Reserved`, `Addr`). GPU events take their device
//! from `pid` and their stream from `tid` (a number, or the legacy `"stream 7"`).
//! Must not import: the checker, solvers.

use super::time::{fraction_digits, micros_to_nanos, whole, whole_nonneg};
use super::{
    CopyKind, ExportMeta, Format, GpuEvent, GpuKind, MemoryEvent, Nanos, Range, RangeKind,
    RuntimeCall, Trace, TraceError,
};
use crate::io::FieldError;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

/// Largest single event or unknown top-level value accepted (hostile input guard).
const MAX_VALUE_BYTES: usize = 256 << 20;
const CHUNK: usize = 1 << 20;

/// Import a Kineto trace file (gzip detected by its magic bytes).
pub fn load(path: &Path) -> Result<Trace, TraceError> {
    let file = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|source| TraceError::Read {
        file: file.clone(),
        error: source,
    })?;
    let mut r = std::io::BufReader::with_capacity(1 << 16, f);
    let gz = {
        use std::io::BufRead;
        let head = r.fill_buf().map_err(|source| TraceError::Read {
            file: file.clone(),
            error: source,
        })?;
        head.starts_with(&[0x1f, 0x8b])
    };
    if gz {
        read(&file, flate2::read::MultiGzDecoder::new(r), true)
    } else {
        read(&file, r, false)
    }
}

/// Import from bytes in memory (gzip or plain); `file` names it in errors.
pub fn parse_bytes(file: &str, bytes: &[u8]) -> Result<Trace, TraceError> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        read(file, flate2::read::MultiGzDecoder::new(bytes), true)
    } else {
        read(file, bytes, false)
    }
}

/// Import from a reader of JSON text (`gz` only changes how read errors are worded).
pub fn read<R: Read>(file: &str, r: R, gz: bool) -> Result<Trace, TraceError> {
    let mut sc = Scanner {
        r,
        buf: vec![0; CHUNK],
        pos: 0,
        len: 0,
        consumed: 0,
        eof: false,
        file: file.to_string(),
        gz,
    };
    let mut b = Builder::new(file);
    let mut value = Vec::with_capacity(4096);
    match sc.skip_ws()? {
        Some(b'{') => {
            sc.pos += 1;
            let mut saw_events = false;
            let mut first = true;
            loop {
                match sc.skip_ws()? {
                    Some(b'}') => {
                        sc.pos += 1;
                        break;
                    }
                    Some(b',') if !first => {
                        sc.pos += 1;
                        sc.skip_ws()?;
                    }
                    Some(_) if first => {}
                    Some(c) => {
                        return Err(sc.syntax(format!(
                            "expected `,` or `}}` after a top-level value, found `{}`",
                            c as char
                        )))
                    }
                    None => return Err(sc.truncated("the top-level object")),
                }
                first = false;
                let at = sc.offset();
                sc.capture(&mut value, true)?;
                let key: String = serde_json::from_slice(&value).map_err(|e| TraceError::Json {
                    file: file.to_string(),
                    offset: at,
                    message: format!("expected a string key in the top-level object: {e}"),
                })?;
                match sc.skip_ws()? {
                    Some(b':') => sc.pos += 1,
                    Some(c) => {
                        return Err(sc.syntax(format!(
                            "expected `:` after key `{key}`, found `{}`",
                            c as char
                        )))
                    }
                    None => return Err(sc.truncated("the top-level object")),
                }
                match key.as_str() {
                    "traceEvents" => {
                        saw_events = true;
                        events(&mut sc, &mut b, &mut value)?;
                    }
                    "baseTimeNanoseconds" | "displayTimeUnit" | "deviceProperties" | "offcert" => {
                        sc.capture(&mut value, true)?;
                        b.top_level(&key, &value)?;
                    }
                    _ => sc.capture(&mut value, false)?,
                }
            }
            if !saw_events {
                return Err(TraceError::Field(FieldError {
                    file: file.into(),
                    field: "traceEvents".into(),
                    message: "missing (not a Chrome trace)".into(),
                }));
            }
        }
        // The Chrome trace format also allows a bare array of events.
        Some(b'[') => events(&mut sc, &mut b, &mut value)?,
        Some(c) => {
            return Err(sc.syntax(format!(
                "expected a JSON object or array, found `{}`",
                c as char
            )))
        }
        None => {
            return Err(TraceError::Format {
                file: file.into(),
                message: "empty file".into(),
            })
        }
    }
    if let Some(c) = sc.skip_ws()? {
        return Err(sc.syntax(format!(
            "unexpected `{}` after the end of the trace",
            c as char
        )));
    }
    b.finish()
}

fn events<R: Read>(
    sc: &mut Scanner<R>,
    b: &mut Builder,
    value: &mut Vec<u8>,
) -> Result<(), TraceError> {
    match sc.skip_ws()? {
        Some(b'[') => sc.pos += 1,
        Some(c) => {
            return Err(TraceError::Field(FieldError {
                file: sc.file.clone(),
                field: "traceEvents".into(),
                message: format!(
                    "expected an array, found `{}` at byte {}",
                    c as char,
                    sc.offset()
                ),
            }))
        }
        None => return Err(sc.truncated("traceEvents")),
    }
    let mut first = true;
    loop {
        match sc.skip_ws()? {
            Some(b']') => {
                sc.pos += 1;
                return Ok(());
            }
            Some(b',') if !first => {
                sc.pos += 1;
            }
            Some(_) if first => {}
            Some(c) => {
                return Err(sc.syntax(format!(
                    "expected `,` or `]` after traceEvents[{}], found `{}`",
                    b.index - 1,
                    c as char
                )))
            }
            None => return Err(sc.truncated(&format!("traceEvents[{}]", b.index))),
        }
        first = false;
        let at = sc.offset();
        sc.capture(value, true)?;
        b.event(value, at)?;
    }
}

/// Pull scanner over a reader: enough JSON structure to cut values out, no more.
struct Scanner<R> {
    r: R,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    /// Bytes of the stream before `buf[0]`.
    consumed: u64,
    eof: bool,
    file: String,
    gz: bool,
}

impl<R: Read> Scanner<R> {
    fn offset(&self) -> u64 {
        self.consumed + self.pos as u64
    }

    /// Refill when the buffer is spent; false at the end of the stream.
    fn fill(&mut self) -> Result<bool, TraceError> {
        if self.pos < self.len {
            return Ok(true);
        }
        if self.eof {
            return Ok(false);
        }
        self.consumed += self.len as u64;
        self.pos = 0;
        self.len = 0;
        loop {
            match self.r.read(&mut self.buf) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.len = n;
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(if self.gz {
                        TraceError::Gzip {
                            file: self.file.clone(),
                            offset: self.consumed,
                            message: e.to_string(),
                        }
                    } else {
                        TraceError::Read {
                            file: self.file.clone(),
                            error: e,
                        }
                    })
                }
            }
        }
    }

    /// The next non-whitespace byte, not consumed.
    fn skip_ws(&mut self) -> Result<Option<u8>, TraceError> {
        loop {
            if !self.fill()? {
                return Ok(None);
            }
            while self.pos < self.len {
                let c = self.buf[self.pos];
                if matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                    self.pos += 1;
                } else {
                    return Ok(Some(c));
                }
            }
        }
    }

    fn syntax(&self, message: String) -> TraceError {
        TraceError::Json {
            file: self.file.clone(),
            offset: self.offset(),
            message,
        }
    }

    fn truncated(&self, inside: &str) -> TraceError {
        TraceError::Json {
            file: self.file.clone(),
            offset: self.offset(),
            message: format!("truncated: the input ends inside {inside}"),
        }
    }

    /// Cut out one JSON value (object, array, string or scalar) into `out` (kept
    /// only if `keep`). Validation of its contents is left to serde_json.
    fn capture(&mut self, out: &mut Vec<u8>, keep: bool) -> Result<(), TraceError> {
        out.clear();
        let first = match self.skip_ws()? {
            Some(c) => c,
            None => return Err(self.truncated("a value")),
        };
        if matches!(first, b',' | b']' | b'}' | b':') {
            return Err(self.syntax(format!("expected a value, found `{}`", first as char)));
        }
        let scalar = !matches!(first, b'{' | b'[' | b'"');
        let start_offset = self.offset();
        let mut depth: u32 = 0;
        let mut in_str = false;
        let mut esc = false;
        let mut taken: usize = 0;
        loop {
            if !self.fill()? {
                if scalar && taken > 0 {
                    return Ok(());
                }
                return Err(TraceError::Json {
                    file: self.file.clone(),
                    offset: self.offset(),
                    message: format!("truncated: the input ends inside the value that starts at byte {start_offset}"),
                });
            }
            let chunk = &self.buf[self.pos..self.len];
            let mut done = None;
            for (i, &c) in chunk.iter().enumerate() {
                if in_str {
                    if esc {
                        esc = false;
                    } else if c == b'\\' {
                        esc = true;
                    } else if c == b'"' {
                        in_str = false;
                        if depth == 0 {
                            done = Some(i + 1);
                            break;
                        }
                    }
                } else if scalar {
                    if matches!(c, b',' | b']' | b'}' | b' ' | b'\n' | b'\r' | b'\t' | b':') {
                        done = Some(i);
                        break;
                    }
                } else {
                    match c {
                        b'"' => in_str = true,
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth = depth.saturating_sub(1);
                            if depth == 0 {
                                done = Some(i + 1);
                                break;
                            }
                        }
                        _ => {}
                    }
                }
            }
            let n = done.unwrap_or(chunk.len());
            taken += n;
            if taken > MAX_VALUE_BYTES {
                return Err(TraceError::Json {
                    file: self.file.clone(),
                    offset: start_offset,
                    message: format!("a single value larger than {} MiB", MAX_VALUE_BYTES >> 20),
                });
            }
            if keep {
                out.extend_from_slice(&chunk[..n]);
            }
            self.pos += n;
            if done.is_some() {
                return Ok(());
            }
        }
    }
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(borrow, default)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    dur: Option<&'a RawValue>,
    #[serde(borrow, default)]
    args: Option<RawArgs<'a>>,
}

#[derive(Deserialize, Default)]
struct RawArgs<'a> {
    #[serde(borrow, default)]
    bytes: Option<&'a RawValue>,
    #[serde(borrow, default)]
    stream: Option<&'a RawValue>,
    #[serde(borrow, default)]
    correlation: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "Bytes")]
    mem_bytes: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "Total Allocated")]
    total_allocated: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "Total Reserved")]
    total_reserved: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "Addr")]
    addr: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "Device Type")]
    device_type: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "Device Id")]
    device_id: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct DeviceProp {
    id: i64,
    #[serde(default)]
    name: String,
}

/// Accumulates the compact trace, one event at a time.
struct Builder {
    t: Trace,
    index: u64,
    last_memory: Option<Nanos>,
    fraction_digits: u32,
    any_time: bool,
}

/// Thread or stream identifiers: integers, or strings holding one (`"stream 7"`,
/// `"25738"`); other strings get a stable id from a hash.
fn ident(v: &RawValue) -> Option<i64> {
    let s = v.get();
    if let Ok(n) = whole(s) {
        return Some(n);
    }
    let text: String = serde_json::from_str(s).ok()?;
    let digits = text.trim_start_matches(|c: char| !c.is_ascii_digit());
    if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
        return digits.parse().ok();
    }
    None
}

fn named_ident(v: &RawValue) -> i64 {
    ident(v).unwrap_or_else(|| {
        // Stable (FNV-1a) so that ranges and runtime calls of one named thread match.
        let mut h: u64 = 0xcbf29ce484222325;
        for b in v.get().bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        (h >> 1) as i64 | (1 << 62)
    })
}

impl Builder {
    fn new(file: &str) -> Builder {
        Builder {
            t: Trace::new(file.to_string(), Format::Kineto),
            index: 0,
            last_memory: None,
            fraction_digits: 0,
            any_time: false,
        }
    }

    fn field(&self, f: &str, message: impl std::fmt::Display) -> TraceError {
        TraceError::Field(FieldError {
            file: self.t.file.clone(),
            field: format!("traceEvents[{}].{f}", self.index),
            message: message.to_string(),
        })
    }

    fn time(&mut self, v: Option<&RawValue>, f: &str) -> Result<Nanos, TraceError> {
        let v = v.ok_or_else(|| self.field(f, "missing"))?;
        let (n, dropped) = micros_to_nanos(v.get()).map_err(|e| self.field(f, e))?;
        self.fraction_digits = self.fraction_digits.max(fraction_digits(v.get()));
        self.any_time = true;
        if dropped {
            self.t.subnanosecond_rounded += 1;
        }
        Ok(n)
    }

    fn interval(&mut self, e: &RawEvent) -> Result<(Nanos, Nanos), TraceError> {
        let start = self.time(e.ts, "ts")?;
        let dur = self.time(e.dur, "dur")?;
        if dur.0 < 0 {
            return Err(self.field("dur", format!("negative duration {}", dur.as_micros_text())));
        }
        let end = start
            .0
            .checked_add(dur.0)
            .ok_or_else(|| self.field("dur", "ts + dur overflows 64-bit nanoseconds"))?;
        Ok((start, Nanos(end)))
    }

    fn top_level(&mut self, key: &str, value: &[u8]) -> Result<(), TraceError> {
        let file = self.t.file.clone();
        let bad = |m: String| {
            TraceError::Field(FieldError {
                file: file.clone(),
                field: key.to_string(),
                message: m,
            })
        };
        match key {
            "baseTimeNanoseconds" => {
                let v: &RawValue = serde_json::from_slice(value).map_err(|e| bad(e.to_string()))?;
                let n = whole(v.get()).map_err(|e| bad(e.to_string()))?;
                self.t.base_time = Some(Nanos(n));
            }
            "displayTimeUnit" => {
                // Display only (Chrome trace format): times are microseconds either way,
                // but anything else than the two units the format defines is refused.
                let u: String = serde_json::from_slice(value).map_err(|e| bad(e.to_string()))?;
                if u != "ms" && u != "ns" {
                    return Err(bad(format!(
                        "unknown unit `{u}` (the Chrome trace format allows \"ms\" or \"ns\")"
                    )));
                }
            }
            "deviceProperties" => {
                let v: Vec<DeviceProp> =
                    serde_json::from_slice(value).map_err(|e| bad(e.to_string()))?;
                for d in v {
                    self.t.device_names.insert(d.id, d.name);
                }
            }
            "offcert" => {
                let m: ExportMeta =
                    serde_json::from_slice(value).map_err(|e| bad(e.to_string()))?;
                if m.tick_ns <= 0 {
                    return Err(bad("tick_ns must be > 0".into()));
                }
                self.t.meta = Some(m);
            }
            _ => {}
        }
        Ok(())
    }

    fn event(&mut self, bytes: &[u8], at: u64) -> Result<(), TraceError> {
        let e: RawEvent = match serde_json::from_slice(bytes) {
            Ok(e) => e,
            Err(err) => {
                // Slow path, errors only: find the field's path for the message.
                let mut de = serde_json::Deserializer::from_slice(bytes);
                let path = match serde_path_to_error::deserialize::<_, RawEvent>(&mut de) {
                    Err(pe) if pe.path().to_string() != "." => format!(".{}", pe.path()),
                    _ => String::new(),
                };
                return Err(TraceError::Field(FieldError {
                    file: self.t.file.clone(),
                    field: format!("traceEvents[{}]{path}", self.index),
                    message: format!("{err} (event at byte {at})"),
                }));
            }
        };
        self.t.total_events += 1;
        let cat = e.cat.as_deref().unwrap_or("(none)");
        match self.t.counts.get_mut(cat) {
            Some(n) => *n += 1,
            None => {
                self.t.counts.insert(cat.to_string(), 1);
            }
        }
        let ph = e.ph.as_deref().unwrap_or("");
        let name = e.name.as_deref().unwrap_or("");
        if name == "[memory]" {
            self.memory(&e)?;
        } else if ph == "X" {
            match cat {
                "kernel" | "Kernel" => self.gpu(&e, GpuKind::Kernel)?,
                "gpu_memcpy" | "Memcpy" => {
                    self.gpu(&e, GpuKind::Memcpy(CopyKind::from_name(name)))?
                }
                "gpu_memset" | "Memset" => self.gpu(&e, GpuKind::Memset)?,
                "cuda_runtime" | "cuda_driver" | "Runtime" => {
                    let (start, end) = self.interval(&e)?;
                    let correlation = self.opt_whole(
                        e.args.as_ref().and_then(|a| a.correlation),
                        "args.correlation",
                    )?;
                    let thread = e.tid.map(named_ident).unwrap_or(0);
                    let name = self.t.names.intern(name);
                    self.t.runtime.push(RuntimeCall {
                        thread,
                        start,
                        end,
                        correlation,
                        name,
                    });
                }
                "user_annotation" | "gpu_user_annotation" => {
                    let (start, end) = self.interval(&e)?;
                    let kind = if cat == "user_annotation" {
                        RangeKind::UserAnnotation
                    } else {
                        RangeKind::GpuUserAnnotation
                    };
                    let device = e.pid.map(named_ident).unwrap_or(0);
                    let thread = e.tid.map(named_ident).unwrap_or(0);
                    let name = self.t.names.intern(name);
                    self.t.ranges.push(Range {
                        kind,
                        device,
                        thread,
                        start,
                        end,
                        name,
                    });
                }
                _ => {}
            }
        }
        self.index += 1;
        Ok(())
    }

    fn opt_whole(&self, v: Option<&RawValue>, f: &str) -> Result<Option<i64>, TraceError> {
        match v {
            None => Ok(None),
            Some(v) => whole(v.get()).map(Some).map_err(|e| self.field(f, e)),
        }
    }

    fn opt_nonneg(&self, v: Option<&RawValue>, f: &str) -> Result<Option<u64>, TraceError> {
        match v {
            None => Ok(None),
            Some(v) => whole_nonneg(v.get())
                .map(Some)
                .map_err(|e| self.field(f, e)),
        }
    }

    fn gpu(&mut self, e: &RawEvent, kind: GpuKind) -> Result<(), TraceError> {
        let (start, end) = self.interval(e)?;
        let args = e.args.as_ref();
        let device = match e.pid {
            Some(p) => ident(p).ok_or_else(|| {
                self.field(
                    "pid",
                    format!("expected a device number, found {}", p.get()),
                )
            })?,
            None => return Err(self.field("pid", "missing")),
        };
        let stream = match (e.tid.and_then(ident), args.and_then(|a| a.stream)) {
            (Some(s), _) => s,
            (None, Some(s)) => whole(s.get()).map_err(|err| self.field("args.stream", err))?,
            (None, None) => {
                return Err(self.field(
                    "tid",
                    format!(
                        "expected a stream number, found {}",
                        e.tid.map_or("nothing", |t| t.get())
                    ),
                ))
            }
        };
        let bytes = match (kind, args.and_then(|a| a.bytes)) {
            (GpuKind::Memcpy(_), None) => {
                return Err(self.field(
                    "args.bytes",
                    "missing (a copy must say how many bytes it moved)",
                ))
            }
            (_, None) => None,
            (_, Some(b)) => {
                Some(whole_nonneg(b.get()).map_err(|err| self.field("args.bytes", err))?)
            }
        };
        let correlation = self.opt_whole(args.and_then(|a| a.correlation), "args.correlation")?;
        let name = self.t.names.intern(e.name.as_deref().unwrap_or(""));
        self.t.gpu.push(GpuEvent {
            kind,
            device,
            stream,
            start,
            end,
            bytes,
            correlation,
            name,
        });
        Ok(())
    }

    fn memory(&mut self, e: &RawEvent) -> Result<(), TraceError> {
        let at = self.time(e.ts, "ts")?;
        let args = e
            .args
            .as_ref()
            .ok_or_else(|| self.field("args", "missing ([memory] events carry Bytes)"))?;
        let bytes = args
            .mem_bytes
            .ok_or_else(|| self.field("args.Bytes", "missing"))?;
        let bytes = whole(bytes.get()).map_err(|err| self.field("args.Bytes", err))?;
        let device_type = self
            .opt_whole(args.device_type, "args.Device Type")?
            .unwrap_or(0);
        let device = self
            .opt_whole(args.device_id, "args.Device Id")?
            .unwrap_or(-1);
        let total_allocated = self.opt_whole(args.total_allocated, "args.Total Allocated")?;
        let total_reserved = self.opt_nonneg(args.total_reserved, "args.Total Reserved")?;
        let addr = self.opt_nonneg(args.addr, "args.Addr")?;
        if let Some(last) = self.last_memory {
            if at < last {
                self.t.memory_out_of_order += 1;
            }
        }
        self.last_memory = Some(at);
        self.t.memory.push(MemoryEvent {
            at,
            device_type,
            device,
            bytes,
            total_allocated,
            total_reserved,
            addr,
        });
        Ok(())
    }

    fn finish(mut self) -> Result<Trace, TraceError> {
        self.t.resolution = Nanos(10i64.pow(3 - self.fraction_digits.min(3)));
        if !self.any_time {
            self.t.resolution = Nanos(1000);
        }
        if let Some(base) = self.t.base_time {
            let file = self.t.file.clone();
            let err = || {
                TraceError::Field(FieldError {
                    file: file.clone(),
                    field: "baseTimeNanoseconds".into(),
                    message: "base + relative time overflows 64-bit nanoseconds".into(),
                })
            };
            let add = |n: &mut Nanos| -> Result<(), TraceError> {
                n.0 = n.0.checked_add(base.0).ok_or_else(err)?;
                Ok(())
            };
            for g in &mut self.t.gpu {
                add(&mut g.start)?;
                add(&mut g.end)?;
            }
            for r in &mut self.t.runtime {
                add(&mut r.start)?;
                add(&mut r.end)?;
            }
            for r in &mut self.t.ranges {
                add(&mut r.start)?;
                add(&mut r.end)?;
            }
            for m in &mut self.t.memory {
                add(&mut m.at)?;
            }
        }
        self.t.finish();
        Ok(self.t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Trace, TraceError> {
        parse_bytes("t.json", s.as_bytes())
    }

    #[test]
    fn fractional_times_relative_to_base_are_exact() {
        let t = parse(
            r#"{"traceEvents":[
              {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1.001,"dur":2.5},
              {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH (Device -> Pinned)","pid":0,"tid":20,"ts":0.5,"dur":1,"args":{"bytes":1024}}
            ], "baseTimeNanoseconds": 1700000000000000001}"#,
        )
        .unwrap();
        assert_eq!(t.gpu.len(), 2);
        assert_eq!(t.gpu[0].start, Nanos(1_700_000_000_000_000_501));
        assert_eq!(t.gpu[1].start, Nanos(1_700_000_000_000_001_002));
        assert_eq!(t.gpu[1].end, Nanos(1_700_000_000_000_003_502));
        assert_eq!(t.gpu[0].kind, GpuKind::Memcpy(CopyKind::DtoH));
        assert_eq!(t.resolution, Nanos(1));
    }

    #[test]
    fn legacy_stream_names_and_bare_arrays() {
        let t = parse(r#"[{"ph":"X","cat":"Kernel","name":"k","pid":0,"tid":"stream 7","ts":1623142623531625,"dur":2}]"#).unwrap();
        assert_eq!(t.gpu[0].stream, 7);
        assert_eq!(t.gpu[0].start, Nanos(1_623_142_623_531_625_000));
        assert_eq!(t.resolution, Nanos(1000));
    }

    #[test]
    fn hostile_inputs_name_the_field() {
        let cases: &[(&str, &str)] = &[
            (
                r#"{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1e999,"dur":1}]}"#,
                "traceEvents[0].ts",
            ),
            (
                r#"{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"dur":1}]}"#,
                "traceEvents[0].ts",
            ),
            (
                r#"{"traceEvents":[{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","pid":0,"tid":7,"ts":1,"dur":1}]}"#,
                "traceEvents[0].args.bytes",
            ),
            (
                r#"{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":-1}]}"#,
                "traceEvents[0].dur",
            ),
            (
                r#"{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":"1","dur":1}]}"#,
                "traceEvents[0].ts",
            ),
            (
                r#"{"traceEvents":[], "displayTimeUnit":"fortnights"}"#,
                "displayTimeUnit",
            ),
            (
                r#"{"traceEvents":[{"ph":"i","name":"[memory]","ts":1,"args":{"Bytes":1.5}}]}"#,
                "traceEvents[0].args.Bytes",
            ),
            (
                r#"{"traceEvents":[{"ph":"i","name":"[memory]","ts":1,"args":{"Bytes":1,"Total Reserved":-4}}]}"#,
                "traceEvents[0].args.Total Reserved",
            ),
            (
                r#"{"traceEvents":[{"ph":"i","name":"[memory]","ts":1,"args":{"Bytes":1,"Addr":"0x7f"}}]}"#,
                "traceEvents[0].args.Addr",
            ),
            (
                r#"{"traceEvents":[{"ph":"X","cat":"kernel","name":7}]}"#,
                "traceEvents[0].name",
            ),
            (r#"{"other":[]}"#, "traceEvents"),
        ];
        for (text, field) in cases {
            let e = parse(text).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains(field), "{text}\n→ {msg}");
        }
    }

    #[test]
    fn truncations_are_errors() {
        let full = r#"{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":1}]}"#;
        for cut in 0..full.len() {
            assert!(
                parse(&full[..cut]).is_err(),
                "prefix of {cut} bytes accepted"
            );
        }
        assert!(parse(full).is_ok());
    }
}
