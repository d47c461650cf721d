//! The mapping file: names in a trace (record_function / NVTX ranges, kernels) →
//! the model's operations and tensors, and the reconstruction of a
//! [`Schedule`] from a trace with it. Format and example: `models/TRACES.md`.
//!
//! Owns: [`Mapping`], pattern matching, and [`reconstruct`]. It decides only what
//! each trace event *is* in the model and when it happened (in ticks); whether the
//! result obeys the rules is for [`crate::check::check`].
//! Must not import: the checker, solvers.

use super::{GpuKind, Nanos, Range, RangeKind, Trace, TraceError};
use crate::io::FieldError;
use crate::model::{Direction, Instance, Mode};
use crate::schedule::{CyclicStateFile, EventFile, Schedule, ScheduleFile, ScheduleFormat};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// What a matched trace event is in the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Compute,
    Offload,
    Prefetch,
    Delete,
    /// Matched on purpose and dropped (listed before broader rules).
    Ignore,
}

/// Which trace events a rule looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// GPU annotation ranges if the trace has any, else CPU annotation and NVTX ranges
    /// (PyTorch records each `record_function` on both sides: use one).
    #[default]
    Auto,
    GpuAnnotation,
    CpuAnnotation,
    Nvtx,
    /// Every range kind.
    AnyRange,
    /// Kernel names (timed by the kernel itself).
    Kernel,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Glob over the event name: `*` matches any run of characters; the runs are
    /// `$1`, `$2`, … in `name`.
    #[serde(rename = "match")]
    pub pattern: String,
    #[serde(rename = "as")]
    pub role: Role,
    /// The op (compute) or tensor (transfers, deletes) name; may use `$1`…`$9`.
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub source: Source,
    /// Offloads only: is the GPU copy released when the copy ends? (default true)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<bool>,
}

/// A mapping file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mapping {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Nanoseconds per model tick (default: the trace's export metadata, else 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_ns: Option<i64>,
    /// Trace time (ns) of model time 0 (default: export metadata, else the earliest
    /// mapped event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_ns: Option<i64>,
    /// Cyclic instances: the period in ticks and the state at time 0 (default: the
    /// trace's export metadata).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial: Option<CyclicStateFile>,
    pub rules: Vec<Rule>,
}

impl Mapping {
    /// Parse a mapping file's text; errors name the file and the field.
    pub fn parse(file: &str, text: &str) -> Result<Mapping, TraceError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let m: Mapping = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            TraceError::Field(FieldError {
                file: file.into(),
                field: if path == "." {
                    "(top level)".into()
                } else {
                    path
                },
                message: e.into_inner().to_string(),
            })
        })?;
        de.end().map_err(|e| {
            TraceError::Field(FieldError {
                file: file.into(),
                field: "(top level)".into(),
                message: e.to_string(),
            })
        })?;
        for (i, r) in m.rules.iter().enumerate() {
            if r.pattern.is_empty() {
                return Err(TraceError::Field(FieldError {
                    file: file.into(),
                    field: format!("rules[{i}].match"),
                    message: "empty pattern".into(),
                }));
            }
            if r.role != Role::Ignore && r.name.is_empty() {
                return Err(TraceError::Field(FieldError {
                    file: file.into(),
                    field: format!("rules[{i}].name"),
                    message: "missing (the op or tensor name, may use $1)".into(),
                }));
            }
            if r.delete.is_some() && r.role != Role::Offload {
                return Err(TraceError::Field(FieldError {
                    file: file.into(),
                    field: format!("rules[{i}].delete"),
                    message: "only offloads take `delete`".into(),
                }));
            }
        }
        if let Some(t) = m.tick_ns {
            if t <= 0 {
                return Err(TraceError::Field(FieldError {
                    file: file.into(),
                    field: "tick_ns".into(),
                    message: "must be > 0".into(),
                }));
            }
        }
        Ok(m)
    }

    pub fn load(path: &std::path::Path) -> Result<Mapping, TraceError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TraceError::Read {
            file: file.clone(),
            error: source,
        })?;
        Mapping::parse(&file, &text)
    }
}

/// Match `name` against a `*` glob; on success the runs the stars matched.
pub fn glob(pattern: &str, name: &str) -> Option<Vec<String>> {
    fn go(p: &[u8], s: &[u8], caps: &mut Vec<(usize, usize)>, base: usize) -> bool {
        match p.first() {
            None => s.is_empty(),
            Some(b'*') => {
                // Shortest first: `fwd:*:*` splits at the first colon.
                for k in 0..=s.len() {
                    caps.push((base, base + k));
                    if go(&p[1..], &s[k..], caps, base + k) {
                        return true;
                    }
                    caps.pop();
                }
                false
            }
            Some(c) => s.first() == Some(c) && go(&p[1..], &s[1..], caps, base + 1),
        }
    }
    let mut caps = Vec::new();
    if pattern.matches('*').count() > 9 {
        return None;
    }
    if go(pattern.as_bytes(), name.as_bytes(), &mut caps, 0) {
        // Byte offsets land on char boundaries: stars are ASCII and the literal
        // parts matched byte for byte.
        Some(
            caps.iter()
                .map(|(a, b)| String::from_utf8_lossy(&name.as_bytes()[*a..*b]).into_owned())
                .collect(),
        )
    } else {
        None
    }
}

/// `$1`…`$9` in `template` replaced by the captures.
pub fn expand(template: &str, caps: &[String]) -> String {
    let mut out = String::new();
    let mut it = template.chars().peekable();
    while let Some(c) = it.next() {
        if c == '$' {
            if let Some(d) = it.peek().and_then(|d| d.to_digit(10)) {
                it.next();
                if d >= 1 {
                    out.push_str(caps.get(d as usize - 1).map(String::as_str).unwrap_or(""));
                }
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// Something the mapping could not use, reported as a note.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "note", rename_all = "snake_case")]
pub enum MappingNote {
    /// Events matched rule `rule` but named no op or tensor of the instance.
    UnknownName {
        rule: usize,
        count: u64,
        first_event: String,
        first_name: String,
    },
    /// Times that were not whole ticks (start rounded down, end up).
    Rounded { count: u64 },
    /// Copies attributed to a transfer whose byte count differs from the tensor's size.
    SizeMismatch {
        tensor: String,
        trace_bytes: u64,
        model_bytes: u64,
    },
    /// Transfer ranges with no copy inside: the range's own times were used.
    TransferWithoutCopy { count: u64 },
}

impl MappingNote {
    /// A sentence for people.
    pub fn describe(&self) -> String {
        match self {
            MappingNote::UnknownName {
                rule,
                count,
                first_event,
                first_name,
            } => format!(
                "{count} event(s) matched rules[{rule}] but name no op or tensor of the instance (the first: event `{first_event}`, name `{first_name}`)"
            ),
            MappingNote::Rounded { count } => format!(
                "{count} time(s) were not whole ticks (starts rounded down, ends up)"
            ),
            MappingNote::SizeMismatch {
                tensor,
                trace_bytes,
                model_bytes,
            } => format!(
                "the copies attributed to a transfer of {tensor} move {trace_bytes} B, but the instance gives {tensor} {model_bytes} B"
            ),
            MappingNote::TransferWithoutCopy { count } => format!(
                "{count} transfer range(s) hold no copy: the range's own times were used"
            ),
        }
    }
}

/// A reconstructed schedule and what was left out.
#[derive(Clone, Debug)]
pub struct Reconstruction {
    pub schedule: Schedule,
    /// The same schedule with names, as a schedule file.
    pub file: ScheduleFile,
    pub tick_ns: i64,
    pub origin_ns: i64,
    /// Each schedule event's trace times in nanoseconds, before rounding to ticks
    /// (same index as `schedule.events`; a delete has start = end).
    pub event_ns: Vec<(Nanos, Nanos)>,
    /// Matched events per role.
    pub matched: HashMap<&'static str, u64>,
    pub notes: Vec<MappingNote>,
}

struct Item {
    role: Role,
    rule: usize,
    name: String,
    delete: bool,
    start: Nanos,
    end: Nanos,
    bytes: Option<u64>,
    label: String,
}

/// Build the schedule the trace shows, in ticks, per the mapping.
pub fn reconstruct(
    trace: &Trace,
    mapping: &Mapping,
    inst: &Instance,
    mapping_file: &str,
) -> Result<Reconstruction, TraceError> {
    let mut matcher = Matcher::new(trace, mapping);
    let mut items: Vec<Item> = trace
        .ranges
        .iter()
        .filter_map(|r| matcher.range_item(r))
        .collect();
    if mapping.rules.iter().any(|r| r.source == Source::Kernel) {
        items.extend(trace.kernels().filter_map(|g| matcher.kernel_item(g)));
    }
    let meta = trace.meta.as_ref();
    let tick_ns = mapping.tick_ns.or(meta.map(|m| m.tick_ns)).unwrap_or(1000);
    let origin_ns = match mapping.origin_ns.or(meta.map(|m| m.origin_ns)) {
        Some(o) => o,
        None => items.iter().map(|i| i.start.0).min().unwrap_or(0),
    };
    let mut ticker = Ticker {
        tick_ns,
        origin_ns,
        rounded: 0,
        mapping_file,
    };
    let mut ev = events(&items, inst, &mut ticker)?;
    ev.events.sort_by_key(|(s, o, _, _)| (*s, *o));
    let event_ns: Vec<(Nanos, Nanos)> = ev.events.iter().map(|e| e.3).collect();
    let (period, initial) = cyclic_frame(trace, mapping, inst, mapping_file)?;
    let file = ScheduleFile {
        format: ScheduleFormat::CURRENT,
        note: Some(format!(
            "reconstructed from {} with {mapping_file}",
            trace.file
        )),
        period,
        initial,
        events: ev.events.into_iter().map(|e| e.2).collect(),
    };
    let schedule = file.resolve(inst).map_err(|e| {
        TraceError::Field(FieldError {
            file: mapping_file.into(),
            field: "(reconstructed schedule)".into(),
            message: e.to_string(),
        })
    })?;
    let mut notes: Vec<MappingNote> = ev
        .unknown
        .into_iter()
        .map(
            |(rule, (count, first_event, first_name))| MappingNote::UnknownName {
                rule,
                count,
                first_event,
                first_name,
            },
        )
        .collect();
    notes.sort_by_key(|n| match n {
        MappingNote::UnknownName { rule, .. } => *rule,
        _ => usize::MAX,
    });
    if ticker.rounded > 0 {
        notes.push(MappingNote::Rounded {
            count: ticker.rounded,
        });
    }
    if matcher.without_copy > 0 {
        notes.push(MappingNote::TransferWithoutCopy {
            count: matcher.without_copy,
        });
    }
    notes.extend(ev.size_notes);
    Ok(Reconstruction {
        schedule,
        file,
        tick_ns,
        origin_ns,
        event_ns,
        matched: ev.matched,
        notes,
    })
}

/// Matches trace events against the mapping's rules.
struct Matcher<'a> {
    trace: &'a Trace,
    mapping: &'a Mapping,
    has_gpu_ranges: bool,
    /// GPU activities by correlation id, for CPU ranges that launch copies/kernels.
    by_corr: HashMap<i64, Vec<usize>>,
    /// Transfer ranges with no copy inside.
    without_copy: u64,
}

impl<'a> Matcher<'a> {
    fn new(trace: &'a Trace, mapping: &'a Mapping) -> Self {
        let mut by_corr: HashMap<i64, Vec<usize>> = HashMap::new();
        for (i, g) in trace.gpu.iter().enumerate() {
            if let Some(c) = g.correlation {
                by_corr.entry(c).or_default().push(i);
            }
        }
        Matcher {
            trace,
            mapping,
            has_gpu_ranges: trace
                .ranges
                .iter()
                .any(|r| r.kind == RangeKind::GpuUserAnnotation),
            by_corr,
            without_copy: 0,
        }
    }

    /// Does a rule with source `src` look at range `r`?
    fn wants(&self, src: Source, r: &Range) -> bool {
        match src {
            Source::Auto => {
                if self.has_gpu_ranges {
                    r.kind == RangeKind::GpuUserAnnotation
                } else {
                    r.kind != RangeKind::GpuUserAnnotation
                }
            }
            Source::GpuAnnotation => r.kind == RangeKind::GpuUserAnnotation,
            Source::CpuAnnotation => r.kind == RangeKind::UserAnnotation,
            Source::Nvtx => r.kind == RangeKind::Nvtx,
            Source::AnyRange => true,
            Source::Kernel => false,
        }
    }

    /// The first rule whose source passes `pred` and whose pattern matches `name`
    /// (not an ignore rule), with the captures.
    fn first_match(
        &self,
        name: &str,
        pred: &dyn Fn(Source) -> bool,
    ) -> Option<(usize, &'a Rule, Vec<String>)> {
        for (k, rule) in self.mapping.rules.iter().enumerate() {
            if !pred(rule.source) {
                continue;
            }
            if let Some(c) = glob(&rule.pattern, name) {
                return (rule.role != Role::Ignore).then_some((k, rule, c));
            }
        }
        None
    }

    /// A range as an item, timed by what ran on the GPU for it (copies for
    /// transfers, kernels for ops) when anything did.
    fn range_item(&mut self, r: &Range) -> Option<Item> {
        let trace = self.trace;
        let nm = trace.name(r.name);
        let (k, rule, caps) = self.first_match(nm, &|s| self.wants(s, r))?;
        let (mut start, mut end, mut bytes) = (r.start, r.end, None);
        let is_transfer = matches!(rule.role, Role::Offload | Role::Prefetch);
        let inside = if rule.role == Role::Delete {
            Vec::new()
        } else {
            self.gpu_inside(r, is_transfer)
        };
        if !inside.is_empty() {
            start = inside
                .iter()
                .map(|i| trace.gpu[*i].start)
                .min()
                .unwrap_or(start);
            end = inside
                .iter()
                .map(|i| trace.gpu[*i].end)
                .max()
                .unwrap_or(end);
            if is_transfer {
                bytes = Some(
                    inside
                        .iter()
                        .map(|i| trace.gpu[*i].bytes.unwrap_or(0))
                        .sum(),
                );
            }
        } else if is_transfer {
            self.without_copy += 1;
        }
        if rule.role == Role::Delete {
            end = start;
        }
        Some(Item {
            role: rule.role,
            rule: k,
            name: expand(&rule.name, &caps),
            delete: rule.delete.unwrap_or(true),
            start,
            end,
            bytes,
            label: nm.to_string(),
        })
    }

    /// Indices of the GPU activities of range `r`: copies (`transfer`) or
    /// kernels on its stream within it (GPU ranges), or launched by runtime
    /// calls within it on its thread (CPU and NVTX ranges).
    fn gpu_inside(&self, r: &Range, transfer: bool) -> Vec<usize> {
        let trace = self.trace;
        let want_kind = |g: &super::GpuEvent| {
            if transfer {
                matches!(g.kind, GpuKind::Memcpy(_))
            } else {
                g.kind == GpuKind::Kernel
            }
        };
        let mut inside: Vec<usize> = Vec::new();
        match r.kind {
            RangeKind::GpuUserAnnotation => {
                let lo = trace.gpu.partition_point(|g| g.start < r.start);
                for (i, g) in trace.gpu.iter().enumerate().skip(lo) {
                    if g.start > r.end {
                        break;
                    }
                    if g.device == r.device
                        && g.stream == r.thread
                        && g.end <= r.end
                        && want_kind(g)
                    {
                        inside.push(i);
                    }
                }
            }
            RangeKind::UserAnnotation | RangeKind::Nvtx => {
                let lo = trace.runtime.partition_point(|c| c.start < r.start);
                for c in trace.runtime.iter().skip(lo) {
                    if c.start > r.end {
                        break;
                    }
                    if c.thread != r.thread || c.end > r.end {
                        continue;
                    }
                    if let Some(v) = c.correlation.and_then(|x| self.by_corr.get(&x)) {
                        inside.extend(v.iter().copied().filter(|i| want_kind(&trace.gpu[*i])));
                    }
                }
            }
        }
        inside
    }

    /// A kernel matched by a `kernel` rule, as an item timed by the kernel.
    fn kernel_item(&self, g: &super::GpuEvent) -> Option<Item> {
        let nm = self.trace.name(g.name);
        let (k, rule, caps) = self.first_match(nm, &|s| s == Source::Kernel)?;
        Some(Item {
            role: rule.role,
            rule: k,
            name: expand(&rule.name, &caps),
            delete: rule.delete.unwrap_or(true),
            start: g.start,
            end: g.end,
            bytes: None,
            label: nm.to_string(),
        })
    }
}

/// Trace nanoseconds to model ticks; counts the times that were not whole ticks.
struct Ticker<'a> {
    tick_ns: i64,
    origin_ns: i64,
    rounded: u64,
    mapping_file: &'a str,
}

impl Ticker<'_> {
    /// `t` in ticks, rounded down, or up with `up`.
    fn ticks(&mut self, t: Nanos, up: bool) -> Result<i64, TraceError> {
        let d = (t.0 as i128) - (self.origin_ns as i128);
        let q = d.div_euclid(self.tick_ns as i128);
        let r = d.rem_euclid(self.tick_ns as i128);
        if r != 0 {
            self.rounded += 1;
        }
        let v = if up && r != 0 { q + 1 } else { q };
        i64::try_from(v).map_err(|_| {
            TraceError::Field(FieldError {
                file: self.mapping_file.into(),
                field: "tick_ns".into(),
                message: "times in ticks overflow".into(),
            })
        })
    }
}

/// The items that name something in the instance, as schedule events.
struct Events {
    /// (start, same-instant order, event, trace times), unsorted.
    events: Vec<(i64, u8, EventFile, (Nanos, Nanos))>,
    matched: HashMap<&'static str, u64>,
    /// Per rule: items that named nothing, the first event's and name's text.
    unknown: HashMap<usize, (u64, String, String)>,
    size_notes: Vec<MappingNote>,
}

fn events(items: &[Item], inst: &Instance, ticker: &mut Ticker) -> Result<Events, TraceError> {
    let (tmap, omap) = inst.name_maps();
    let mut out = Events {
        events: Vec::new(),
        matched: HashMap::new(),
        unknown: HashMap::new(),
        size_notes: Vec::new(),
    };
    for it in items {
        let known = match it.role {
            Role::Compute => omap.contains_key(it.name.as_str()),
            _ => tmap.contains_key(it.name.as_str()),
        };
        if !known {
            let e = out
                .unknown
                .entry(it.rule)
                .or_insert((0, it.label.clone(), it.name.clone()));
            e.0 += 1;
            continue;
        }
        let start = ticker.ticks(it.start, false)?;
        let end = ticker.ticks(it.end, true)?;
        let Some((ev, key, order)) = event_file(it, start, end) else {
            continue;
        };
        if let (Some(b), Some(t)) = (it.bytes, tmap.get(it.name.as_str())) {
            let size = inst.tensor(*t).size.0;
            if b != size && out.size_notes.len() < 20 {
                out.size_notes.push(MappingNote::SizeMismatch {
                    tensor: it.name.clone(),
                    trace_bytes: b,
                    model_bytes: size,
                });
            }
        }
        *out.matched.entry(key).or_insert(0) += 1;
        out.events.push((start, order, ev, (it.start, it.end)));
    }
    Ok(out)
}

/// An item as a schedule event, with its role's name and same-instant order
/// (deletes, offloads, prefetches, computes); `None` for an ignored one.
fn event_file(it: &Item, start: i64, end: i64) -> Option<(EventFile, &'static str, u8)> {
    Some(match it.role {
        Role::Compute => (
            EventFile::Compute {
                op: it.name.clone(),
                start,
                end: Some(end),
            },
            "compute",
            3,
        ),
        Role::Offload => (
            EventFile::Offload {
                tensor: it.name.clone(),
                start,
                end,
                delete: it.delete,
            },
            "offload",
            1,
        ),
        Role::Prefetch => (
            EventFile::Prefetch {
                tensor: it.name.clone(),
                start,
                end,
            },
            "prefetch",
            2,
        ),
        Role::Delete => (
            EventFile::Delete {
                tensor: it.name.clone(),
                at: start,
            },
            "delete",
            0,
        ),
        Role::Ignore => return None,
    })
}

/// A cyclic instance's period and state at 0: the mapping's, else the trace's
/// export metadata; `(None, None)` for a one-shot instance.
fn cyclic_frame(
    trace: &Trace,
    mapping: &Mapping,
    inst: &Instance,
    mapping_file: &str,
) -> Result<(Option<i64>, Option<CyclicStateFile>), TraceError> {
    if inst.mode != Mode::Cyclic {
        return Ok((None, None));
    }
    let meta = trace.meta.as_ref();
    let period = mapping.period.or(meta.and_then(|m| m.period));
    let initial = mapping
        .initial
        .clone()
        .or(meta.and_then(|m| m.initial.clone()));
    if period.is_none() {
        return Err(TraceError::Field(FieldError {
            file: mapping_file.into(),
            field: "period".into(),
            message: "a cyclic instance needs the period in ticks (mapping `period`)".into(),
        }));
    }
    Ok((period, initial))
}

/// Direction of a transfer role.
pub fn direction(role: Role) -> Option<Direction> {
    match role {
        Role::Offload => Some(Direction::Offload),
        Role::Prefetch => Some(Direction::Prefetch),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_captures() {
        assert_eq!(glob("fwd:*", "fwd:F3"), Some(vec!["F3".to_string()]));
        assert_eq!(
            glob("*:*", "a:b:c"),
            Some(vec!["a".to_string(), "b:c".to_string()])
        );
        assert_eq!(glob("fwd:*", "bwd:F3"), None);
        assert_eq!(glob("x", "x"), Some(vec![]));
        assert_eq!(expand("B$1_$2$", &["3".into(), "x".into()]), "B3_x$");
    }

    #[test]
    fn mapping_errors_name_the_field() {
        let e =
            Mapping::parse("m.json", r#"{"rules":[{"match":"a*","as":"compute"}]}"#).unwrap_err();
        assert!(e.to_string().contains("rules[0].name"), "{e}");
        let e = Mapping::parse(
            "m.json",
            r#"{"rules":[{"match":"a*","as":"fly","name":"x"}]}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("rules[0].as"), "{e}");
        let e = Mapping::parse("m.json", r#"{"tick_ns":0,"rules":[]}"#).unwrap_err();
        assert!(e.to_string().contains("tick_ns"), "{e}");
    }
}
