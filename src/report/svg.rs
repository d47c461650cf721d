//! A timeline picture as hand-written SVG: lanes of labelled bars and marks on
//! one time axis, a memory curve below them with its capacity line and peak,
//! numbered red violation markers, and their numbered legend.
//!
//! Owns: [`Picture`] (what to draw, in display units) and [`render`] (the SVG
//! text). Knows nothing of schedules or traces: [`super::schedule_plot`] and
//! [`super::trace_plot`] build the picture. Coordinates are floats for display
//! only; every figure printed (peak, capacity, legend) arrives as exact text.
//! Large inputs are aggregated to pixel columns (lane coverage per column, a
//! min/max envelope of the memory curve), so the SVG stays small.
//! Must not import: the CLI, the checker (the legend text comes from callers).

use std::fmt::Write as _;

/// What a bar or mark stands for (its CSS class and colour).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Compute,
    Offload,
    Prefetch,
    /// A copy of the other kinds (device to device, …).
    Copy,
    Delete,
}

impl Kind {
    fn class(self) -> &'static str {
        match self {
            Kind::Compute => "compute",
            Kind::Offload => "offload",
            Kind::Prefetch => "prefetch",
            Kind::Copy => "copy",
            Kind::Delete => "delete",
        }
    }
}

/// A bar on a lane, over [start, end) in display units.
#[derive(Clone, Debug)]
pub struct Bar {
    pub start: f64,
    pub end: f64,
    pub kind: Kind,
    pub label: String,
    /// Tooltip.
    pub title: String,
    /// Drawn pale: the part of a transfer that wraps around the period end.
    pub wrapped: bool,
}

/// A mark at an instant on a lane (deletes).
#[derive(Clone, Debug)]
pub struct Mark {
    pub at: f64,
    pub kind: Kind,
    pub label: String,
    pub title: String,
}

#[derive(Clone, Debug, Default)]
pub struct Lane {
    pub name: String,
    pub bars: Vec<Bar>,
    pub marks: Vec<Mark>,
}

/// The memory panel: samples in replay order (several may share an instant).
#[derive(Clone, Debug, Default)]
pub struct Memory {
    pub title: String,
    pub samples: Vec<(f64, u64)>,
    pub capacity: Option<(u64, String)>,
    /// The peak to label: bytes, instant, text.
    pub peak: Option<(u64, f64, String)>,
    /// More step curves on the same scale, dashed (a trace's reserved memory,
    /// and a model's, beside its allocated memory): label and samples each.
    pub others: Vec<(String, Vec<(f64, u64)>)>,
}

/// Where a violation marker sits.
#[derive(Clone, Copy, Debug)]
pub enum Place {
    /// On lane `lane` at an instant.
    Lane(usize, f64),
    /// On the memory curve at (instant, bytes).
    Curve(f64, u64),
    /// On the memory panel's top edge at an instant (a fact about memory or
    /// state with no value on the curve: CPU memory, the period's end state).
    MemoryTop(f64),
    /// At the right end of a lane: something that never happens (a missing op).
    LaneEnd(usize),
}

#[derive(Clone, Debug)]
pub struct Marker {
    pub place: Place,
    /// The legend line.
    pub text: String,
}

#[derive(Clone, Debug, Default)]
pub struct Picture {
    pub heading: Vec<String>,
    pub t0: f64,
    pub t1: f64,
    /// Axis caption, e.g. "time (ticks)".
    pub axis: String,
    /// Cyclic schedules: the period, drawn as a boundary line.
    pub period: Option<f64>,
    pub lanes: Vec<Lane>,
    pub memory: Option<Memory>,
    pub markers: Vec<Marker>,
    /// Lines under the legend (warnings, notes).
    pub footer: Vec<String>,
}

pub const WIDTH: f64 = 1200.0;
const LEFT: f64 = 110.0;
const RIGHT: f64 = 40.0;
const LANE_H: f64 = 30.0;
const MEM_H: f64 = 170.0;
const LINE_H: f64 = 16.0;
/// Plot width in pixels: the aggregation resolution.
pub const PLOT_W: f64 = WIDTH - LEFT - RIGHT;
/// A lane with more bars than this is drawn as coverage per pixel column.
pub const AGGREGATE_BARS: usize = 500;

/// XML text escaping (attribute values too).
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

struct Axis {
    t0: f64,
    t1: f64,
}

impl Axis {
    fn x(&self, t: f64) -> f64 {
        let span = (self.t1 - self.t0).max(1e-12);
        LEFT + ((t - self.t0) / span).clamp(-0.02, 1.02) * PLOT_W
    }
    fn column(&self, t: f64) -> usize {
        let span = (self.t1 - self.t0).max(1e-12);
        (((t - self.t0) / span * PLOT_W).floor().max(0.0) as usize).min(PLOT_W as usize - 1)
    }
}

/// Round-number tick positions covering [t0, t1].
fn ticks(t0: f64, t1: f64) -> Vec<f64> {
    let span = (t1 - t0).max(1e-9);
    let raw = span / 10.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut v = Vec::new();
    let mut t = (t0 / step).ceil() * step;
    while t <= t1 + step * 1e-9 {
        v.push(t);
        t += step;
    }
    v
}

fn num(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        let t = format!("{v:.3}");
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Bytes as a short axis label (B, KB, MB, GB; decimal).
fn bytes_short(b: f64) -> String {
    for (unit, d) in [("GB", 1e9), ("MB", 1e6), ("KB", 1e3)] {
        if b >= d {
            return format!("{} {unit}", num((b / d * 100.0).round() / 100.0));
        }
    }
    format!("{} B", num(b))
}

const STYLE: &str = "text{font-family:sans-serif;font-size:11px;fill:#222}\
.lane-name{font-size:12px;font-weight:bold}\
.compute{fill:#7a9cc6;stroke:#36597f}\
.offload{fill:#f0a040;stroke:#9c5d10}\
.prefetch{fill:#5cb85c;stroke:#2d6e2d}\
.copy{fill:#aaaaaa;stroke:#666}\
.delete{fill:#6a3d9a;stroke:#6a3d9a}\
.wrapped{fill-opacity:0.35;stroke-dasharray:3,2}\
.bar-label{font-size:10px;fill:#000}\
.grid{stroke:#e4e4e4}\
.memory-curve{fill:none;stroke:#1f4e9c;stroke-width:1.5}\
.second-curve{fill:none;stroke:#8c564b;stroke-width:1.2;stroke-dasharray:5,3}\
.third-curve{fill:none;stroke:#2ca02c;stroke-width:1.2;stroke-dasharray:2,2}\
.capacity{stroke:#d62728;stroke-dasharray:6,3}\
.period{stroke:#444;stroke-dasharray:4,4}\
.violation circle{fill:#d62728;stroke:#fff}\
.violation text{fill:#fff;font-weight:bold;font-size:10px}\
.legend{font-size:11px}\
.legend-n{fill:#d62728;font-weight:bold}";

/// The SVG document.
pub fn render(p: &Picture) -> String {
    let ax = Axis { t0: p.t0, t1: p.t1 };
    let head_h = 10.0 + LINE_H * p.heading.len() as f64;
    let lanes_top = head_h + 10.0;
    let lanes_h = LANE_H * p.lanes.len() as f64;
    let axis_y = lanes_top + lanes_h;
    let mem_top = axis_y + 52.0;
    let mem_h = if p.memory.is_some() { MEM_H } else { 0.0 };
    let legend_top = mem_top + mem_h + 36.0;
    let legend_lines = p.markers.len() + p.footer.len() + usize::from(!p.markers.is_empty());
    let height = legend_top + LINE_H * legend_lines as f64 + 10.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}">"#
    );
    let _ = writeln!(s, "<style>{STYLE}</style>");
    let _ = writeln!(
        s,
        r##"<rect x="0" y="0" width="{WIDTH}" height="{height:.0}" fill="#ffffff"/>"##
    );
    for (i, h) in p.heading.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<text x="10" y="{:.1}"{}>{}</text>"#,
            10.0 + LINE_H * (i as f64 + 0.8),
            if i == 0 {
                r#" style="font-size:13px;font-weight:bold""#
            } else {
                ""
            },
            esc(h)
        );
    }
    // Grid and axis.
    let bottom = if p.memory.is_some() {
        mem_top + mem_h
    } else {
        axis_y
    };
    let _ = writeln!(s, r#"<g class="axis">"#);
    for t in ticks(p.t0, p.t1) {
        let x = ax.x(t);
        let _ = writeln!(
            s,
            r#"<line class="grid" x1="{x:.1}" y1="{lanes_top:.1}" x2="{x:.1}" y2="{bottom:.1}"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            axis_y + 14.0,
            num(t)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text></g>"#,
        LEFT + PLOT_W / 2.0,
        axis_y + 28.0,
        esc(&p.axis)
    );
    for (i, lane) in p.lanes.iter().enumerate() {
        draw_lane(&mut s, &ax, lane, lanes_top + LANE_H * i as f64);
    }
    if let Some(m) = &p.memory {
        draw_memory(&mut s, &ax, m, mem_top, mem_h);
    }
    if let Some(per) = p.period {
        let x = ax.x(per);
        let _ = writeln!(
            s,
            r#"<g class="period-boundary"><line class="period" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{bottom:.1}"/><text x="{:.1}" y="{:.1}" text-anchor="end">period P = {}</text></g>"#,
            lanes_top - 4.0,
            x - 3.0,
            lanes_top - 1.0,
            num(per)
        );
    }
    draw_markers(&mut s, p, &ax, lanes_top, mem_top, mem_h);
    draw_legend(&mut s, p, legend_top);
    let _ = writeln!(s, "</g>\n</svg>");
    s
}

/// The violation markers, numbered; stacked sideways where several share a spot.
fn draw_markers(s: &mut String, p: &Picture, ax: &Axis, lanes_top: f64, mem_top: f64, mem_h: f64) {
    let ymem = |b: u64| -> f64 { memory_y(p.memory.as_ref(), b, mem_top, mem_h) };
    let mut used: std::collections::HashMap<(i64, i64), u32> = Default::default();
    for (k, m) in p.markers.iter().enumerate() {
        let (x, y) = match m.place {
            Place::Lane(l, t) => (ax.x(t), lanes_top + LANE_H * l as f64 + LANE_H / 2.0),
            Place::LaneEnd(l) => (
                LEFT + PLOT_W + 14.0,
                lanes_top + LANE_H * l as f64 + LANE_H / 2.0,
            ),
            Place::Curve(t, b) => (ax.x(t), ymem(b)),
            Place::MemoryTop(t) => (ax.x(t), mem_top + 8.0),
        };
        let key = (x.round() as i64 / 8, y.round() as i64 / 8);
        let n = used.entry(key).or_insert(0);
        let dx = 15.0 * *n as f64;
        *n += 1;
        let _ = writeln!(
            s,
            r##"<g class="violation" data-n="{}"><title>{}</title><line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#d62728" stroke-width="1.5"/><circle cx="{:.1}" cy="{y:.1}" r="7"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text></g>"##,
            k + 1,
            esc(&m.text),
            y - 10.0,
            y + 10.0,
            x + dx,
            x + dx,
            y + 3.5,
            k + 1
        );
    }
}

/// The legend: one line per marker (the checker's or the audit's text), then the footer.
fn draw_legend(s: &mut String, p: &Picture, legend_top: f64) {
    let mut y = legend_top;
    let _ = writeln!(s, r#"<g class="legend">"#);
    if !p.markers.is_empty() {
        let _ = writeln!(
            s,
            r#"<text x="10" y="{y:.1}" style="font-weight:bold">{} violation(s):</text>"#,
            p.markers.len()
        );
        y += LINE_H;
        for (k, m) in p.markers.iter().enumerate() {
            let _ = writeln!(
                s,
                r#"<text x="10" y="{y:.1}" class="legend-item" data-n="{}"><tspan class="legend-n">{}</tspan><tspan x="34">{}</tspan></text>"#,
                k + 1,
                k + 1,
                esc(&m.text)
            );
            y += LINE_H;
        }
    }
    for f in &p.footer {
        let _ = writeln!(s, r#"<text x="10" y="{y:.1}">{}</text>"#, esc(f));
        y += LINE_H;
    }
}

fn memory_top_value(m: &Memory) -> f64 {
    let second = m.others.iter().flat_map(|(_, v)| v.iter().map(|x| x.1));
    let mut top = m
        .samples
        .iter()
        .map(|x| x.1)
        .chain(second)
        .max()
        .unwrap_or(0) as f64;
    if let Some((c, _)) = &m.capacity {
        top = top.max(*c as f64);
    }
    (top * 1.1).max(1.0)
}

fn memory_y(m: Option<&Memory>, b: u64, top: f64, h: f64) -> f64 {
    match m {
        Some(m) => top + h - (b as f64 / memory_top_value(m)) * h,
        None => top,
    }
}

fn draw_lane(s: &mut String, ax: &Axis, lane: &Lane, top: f64) {
    let _ = writeln!(
        s,
        r#"<g class="lane" data-name="{}"><text class="lane-name" x="{:.1}" y="{:.1}" text-anchor="end">{}</text><line class="grid" x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/>"#,
        esc(&lane.name),
        LEFT - 8.0,
        top + LANE_H / 2.0 + 4.0,
        esc(&lane.name),
        top + LANE_H,
        LEFT + PLOT_W,
        top + LANE_H
    );
    let (y, h) = (top + 4.0, LANE_H - 8.0);
    if lane.bars.len() > AGGREGATE_BARS {
        // Coverage per pixel column and kind, merged into runs.
        let mut cols: std::collections::BTreeMap<&'static str, Vec<bool>> = Default::default();
        for b in &lane.bars {
            let c = cols
                .entry(b.kind.class())
                .or_insert_with(|| vec![false; PLOT_W as usize]);
            c[ax.column(b.start)..=ax.column(b.end)].fill(true);
        }
        let _ = writeln!(
            s,
            r#"<title>{} bars, aggregated to pixel columns</title>"#,
            lane.bars.len()
        );
        for (class, c) in cols {
            let mut k = 0;
            while k < c.len() {
                if !c[k] {
                    k += 1;
                    continue;
                }
                let a = k;
                while k < c.len() && c[k] {
                    k += 1;
                }
                let _ = writeln!(
                    s,
                    r#"<rect class="{class}" x="{:.1}" y="{y:.1}" width="{}" height="{h:.1}"/>"#,
                    LEFT + a as f64,
                    k - a
                );
            }
        }
    } else {
        for b in &lane.bars {
            let (x0, x1) = (ax.x(b.start), ax.x(b.end));
            let w = (x1 - x0).max(1.0);
            let _ = write!(
                s,
                r#"<rect class="{}{}" x="{x0:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}">"#,
                b.kind.class(),
                if b.wrapped { " wrapped" } else { "" },
            );
            if b.title.is_empty() {
                s.push_str("</rect>");
            } else {
                let _ = write!(s, "<title>{}</title></rect>", esc(&b.title));
            }
            // A label if it fits (about 6 px a character).
            if !b.label.is_empty() && w >= 6.0 * b.label.chars().count() as f64 + 4.0 {
                let _ = write!(
                    s,
                    r#"<text class="bar-label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                    x0 + w / 2.0,
                    y + h / 2.0 + 3.5,
                    esc(&b.label)
                );
            }
            s.push('\n');
        }
    }
    for m in &lane.marks {
        let x = ax.x(m.at);
        let _ = writeln!(
            s,
            r##"<g class="mark {}"><title>{}</title><path d="M{:.1},{:.1} l5,-7 h-10 z"/><line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#6a3d9a"/><text x="{:.1}" y="{:.1}" style="font-size:9px">{}</text></g>"##,
            m.kind.class(),
            esc(&m.title),
            x,
            top + LANE_H - 4.0,
            top + 4.0,
            top + LANE_H - 4.0,
            x + 4.0,
            top + 11.0,
            esc(&m.label)
        );
    }
    let _ = writeln!(s, "</g>");
}

/// The polyline points of a step curve; per pixel column (entering value,
/// least, greatest, last) when there are more samples than columns can show.
fn curve_points(ax: &Axis, samples: &[(f64, u64)], y: &dyn Fn(u64) -> f64) -> Vec<(f64, f64)> {
    let mut pts = Vec::new();
    let Some(&(_, first)) = samples.first() else {
        return pts;
    };
    let mut last = first;
    if (samples.len() as f64) <= 4.0 * PLOT_W {
        for &(t, b) in samples {
            let x = ax.x(t);
            pts.push((x, y(last)));
            pts.push((x, y(b)));
            last = b;
        }
    } else {
        let mut i = 0;
        while i < samples.len() {
            let c = ax.column(samples[i].0);
            let (mut lo, mut hi) = (last, last);
            while i < samples.len() && ax.column(samples[i].0) == c {
                let b = samples[i].1;
                lo = lo.min(b);
                hi = hi.max(b);
                last = b;
                i += 1;
            }
            let x = LEFT + c as f64 + 0.5;
            pts.push((x, y(lo)));
            pts.push((x, y(hi)));
            pts.push((x, y(last)));
        }
    }
    pts.push((ax.x(ax.t1), y(last)));
    pts
}

/// The `i`-th dashed curve and its label at the panel's top right.
fn draw_other_curve(
    s: &mut String,
    ax: &Axis,
    (i, label): (usize, &str),
    samples: &[(f64, u64)],
    y: &dyn Fn(u64) -> f64,
    top: f64,
) {
    let (class, colour) = match i {
        0 => ("second-curve", "#8c564b"),
        _ => ("third-curve", "#2ca02c"),
    };
    let mut p = String::new();
    for (x, yy) in curve_points(ax, samples, y) {
        let _ = write!(p, "{x:.1},{yy:.2} ");
    }
    let max = samples.iter().map(|x| x.1).max().unwrap_or(0);
    let _ = writeln!(
        s,
        r#"<polyline class="{class}" data-max-bytes="{max}" points="{}"/><text x="{:.1}" y="{:.1}" text-anchor="end" style="fill:{colour}">{}</text>"#,
        p.trim_end(),
        LEFT + PLOT_W - 4.0,
        top + 12.0 + 12.0 * i as f64,
        esc(label)
    );
}

fn draw_memory(s: &mut String, ax: &Axis, m: &Memory, top: f64, h: f64) {
    let topv = memory_top_value(m);
    let y = |b: u64| top + h - (b as f64 / topv) * h;
    let _ = writeln!(
        s,
        r##"<g class="memory"><rect x="{LEFT}" y="{top:.1}" width="{PLOT_W}" height="{h:.1}" fill="none" stroke="#999"/><text class="lane-name" x="{:.1}" y="{:.1}" text-anchor="end">memory</text><text x="{LEFT}" y="{:.1}">{}</text>"##,
        LEFT - 8.0,
        top + h / 2.0,
        top - 4.0,
        esc(&m.title)
    );
    for f in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let v = topv / 1.1 * f;
        let yy = top + h - (v / topv) * h;
        let _ = writeln!(
            s,
            r#"<line class="grid" x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}"/><text x="{:.1}" y="{:.1}" text-anchor="end" style="font-size:9px">{}</text>"#,
            LEFT + PLOT_W,
            LEFT - 4.0,
            yy + 3.0,
            bytes_short(v)
        );
    }
    if let Some((c, label)) = &m.capacity {
        let yy = y(*c);
        let _ = writeln!(
            s,
            r#"<line class="capacity" x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}"/><text x="{:.1}" y="{:.1}" text-anchor="end" style="fill:#d62728">{}</text>"#,
            LEFT + PLOT_W,
            LEFT + PLOT_W - 4.0,
            yy + 12.0,
            esc(label)
        );
    }
    for (i, (label, samples)) in m.others.iter().enumerate() {
        draw_other_curve(s, ax, (i, label), samples, &y, top);
    }
    let pts = curve_points(ax, &m.samples, &y);
    let mut p = String::with_capacity(pts.len() * 14);
    for (x, yy) in &pts {
        let _ = write!(p, "{x:.1},{yy:.2} ");
    }
    let max = m.samples.iter().map(|x| x.1).max().unwrap_or(0);
    let _ = writeln!(
        s,
        r#"<polyline class="memory-curve" data-max-bytes="{max}" data-y-of-max="{:.2}" points="{}"/>"#,
        y(max),
        p.trim_end()
    );
    if let Some((b, t, label)) = &m.peak {
        let (x, yy) = (ax.x(*t), y(*b));
        let anchor = if x > LEFT + PLOT_W * 0.7 {
            "end"
        } else {
            "start"
        };
        let _ = writeln!(
            s,
            r##"<g class="peak" data-bytes="{b}"><circle cx="{x:.1}" cy="{yy:.1}" r="3.5" fill="#1f4e9c"/><text x="{:.1}" y="{:.1}" text-anchor="{anchor}" style="font-weight:bold">{}</text></g>"##,
            if anchor == "end" { x - 6.0 } else { x + 6.0 },
            (yy - 6.0).max(top + 10.0),
            esc(label)
        );
    }
    let _ = writeln!(s, "</g>");
}
