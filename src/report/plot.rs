//! The SVG plot: makespan / ⌈best certified lower bound⌉ against the memory
//! budget, one line per heuristic, one panel per instance (after Figure 5 of
//! the activation paper), the best checked schedule (heuristics, improvement,
//! exact methods, anytime search: what the report's gap is computed from) as
//! its own line, over the certified gap band: at each budget that was run, an
//! interval from 1 (the bound) to the best checked schedule, in which the
//! optimum lies (never joined across budgets). Heuristics whose points are
//! identical share one line and one legend entry naming them all, so no entry
//! is hidden under another. The legend stands right of the plot area, never
//! on the curves. x is the budget's position from the least feasible memory
//! (0 %) to M_peak (100 %) where the family defines them, else GB.
//!
//! Owns: the gap SVG ([`svg`]).
//! Must not import: the CLI.

use super::gap::GapEntry;
use super::ReportError;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// heuristic → (x, ratio) points.
type Series = BTreeMap<String, Vec<(f64, f64)>>;
/// One panel: instance, its series, whether x is a percentage, and the
/// best checked schedule's points (x, best / ⌈bound⌉): the top of the
/// certified gap band at each budget run.
type Panel = (String, Series, bool, Vec<(f64, f64)>);

/// The legend's name of the band.
pub const BAND: &str = "certified gap (optimum inside)";
/// The legend's name of the best checked schedule's line.
pub const BEST: &str = "best checked (the gap's schedule)";
/// Width of the legend column right of each panel's plot area for labels of
/// at most `chars` characters, in pixels (12 px sans-serif: at most 7 px a
/// character), so that no label is cut at the picture's edge.
fn legend_width(chars: usize) -> u32 {
    40 + 7 * chars.max(BEST.len()) as u32
}

fn panels(entries: &[GapEntry]) -> Vec<Panel> {
    let mut order: Vec<String> = Vec::new();
    type Slot = (Series, bool, Vec<(f64, f64)>);
    let mut map: BTreeMap<String, Slot> = BTreeMap::new();
    for e in entries {
        if !order.contains(&e.instance) {
            order.push(e.instance.clone());
        }
        let slot = map
            .entry(e.instance.clone())
            .or_insert_with(|| (BTreeMap::new(), e.budget_percent.is_some(), Vec::new()));
        let x = match (slot.1, e.budget_percent) {
            (true, Some(p)) => p,
            _ => e.budget as f64 / 1e9,
        };
        if let Some(g) = &e.certified_gap {
            slot.2.push((x, g.makespan as f64 / g.bound as f64));
        }
        for h in &e.heuristics {
            let series = slot.0.entry(h.heuristic.clone()).or_default();
            if let Some(r) = h.ratio_to_bound {
                series.push((x, r));
            }
        }
    }
    order
        .into_iter()
        .map(|name| {
            let (s, pct, mut band) = map.remove(&name).unwrap();
            band.sort_by(|a, b| a.0.total_cmp(&b.0));
            (name, s, pct, band)
        })
        .collect()
}

/// The series to draw: heuristics with identical points (same budgets, same
/// ratios) merged into one, named `a = b = c`; series without points left
/// out; each sorted by x. In name order of each group's first member.
pub fn merged(series: &BTreeMap<String, Vec<(f64, f64)>>) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut groups: Vec<(Vec<&str>, Vec<(f64, f64)>)> = Vec::new();
    for (name, points) in series {
        if points.is_empty() {
            continue;
        }
        let mut pts = points.clone();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        match groups.iter_mut().find(|g| g.1 == pts) {
            Some(g) => g.0.push(name),
            None => groups.push((vec![name], pts)),
        }
    }
    groups
        .into_iter()
        .map(|(names, pts)| (names.join(" = "), pts))
        .collect()
}

fn perr(file: &Path, e: impl std::fmt::Display) -> ReportError {
    ReportError::Plot {
        file: file.display().to_string(),
        message: e.to_string(),
    }
}

/// How one legend entry is drawn: a line (with the marker style's colour) or
/// the band's box.
enum Key {
    Line(RGBColor, u32),
    Band(RGBColor),
}

/// The legend, drawn by hand in its own column right of the plot area.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    items: &[(String, Key)],
) -> Result<(), String> {
    let font = ("sans-serif", 12).into_font();
    for (k, (label, key)) in items.iter().enumerate() {
        let y = 40 + 18 * k as i32;
        match key {
            Key::Line(c, w) => area
                .draw(&PathElement::new(vec![(4, y), (22, y)], c.stroke_width(*w)))
                .map_err(|e| e.to_string())?,
            Key::Band(c) => area
                .draw(&Rectangle::new(
                    [(4, y - 5), (22, y + 5)],
                    c.mix(0.25).filled(),
                ))
                .map_err(|e| e.to_string())?,
        }
        area.draw(&Text::new(label.clone(), (28, y - 6), font.clone()))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The x range of a panel, with room on both sides for the end labels.
fn x_range(series: &[(String, Vec<(f64, f64)>)], band: &[(f64, f64)]) -> (f64, f64, f64) {
    let pts = series.iter().flat_map(|s| s.1.iter()).chain(band.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 1.0f64);
    for (x, y) in pts {
        x0 = x0.min(*x);
        x1 = x1.max(*x);
        y1 = y1.max(*y);
    }
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 - x0 < 1e-9 {
        (x0, x1) = (x0 - 0.5, x1 + 0.5);
    }
    let pad = (x1 - x0) * 0.03;
    (x0 - pad, x1 + pad, y1)
}

/// Draw `entries` into `file` (SVG).
pub fn svg(entries: &[GapEntry], file: &Path) -> Result<(), ReportError> {
    let ps = panels(entries);
    if ps.is_empty() {
        return Err(perr(file, "nothing to plot"));
    }
    let cols = (ps.len() as f64).sqrt().ceil() as usize;
    let rows = ps.len().div_ceil(cols);
    let longest = ps
        .iter()
        .flat_map(|p| merged(&p.1))
        .map(|g| g.0.chars().count())
        .max()
        .unwrap_or(0);
    let w = 480 + legend_width(longest);
    let root = SVGBackend::new(file, (w * cols as u32, 340 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| perr(file, e))?;
    let areas = root.split_evenly((rows, cols));
    // A heuristic (or group of identical ones) keeps its colour across panels.
    let mut names: Vec<String> = ps.iter().flat_map(|p| merged(&p.1)).map(|g| g.0).collect();
    names.sort();
    names.dedup();
    let colour =
        |n: &String| PALETTE[names.iter().position(|x| x == n).unwrap_or(0) % PALETTE.len()];
    for (panel, area) in ps.iter().zip(areas.iter()) {
        let (plot, key) = area.split_horizontally(480);
        let items = draw_panel(&plot, panel, &colour).map_err(|e| perr(file, e))?;
        legend(&key, &items).map_err(|e| perr(file, e))?;
    }
    root.present().map_err(|e| perr(file, e))?;
    Ok(())
}

/// One panel's chart: the band at each budget run, the (merged) heuristic
/// lines, then the best checked line on top; returns its legend entries.
fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    (title, series, pct, band): &Panel,
    colour: &dyn Fn(&String) -> RGBColor,
) -> Result<Vec<(String, Key)>, String> {
    let groups = merged(series);
    let (x0, x1, y1) = x_range(&groups, band);
    let e = |e: plotters::drawing::DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let mut chart = ChartBuilder::on(area)
        .caption(
            Path::new(title)
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_else(|| title.clone()),
            ("sans-serif", 15),
        )
        .margin(8)
        .margin_right(24)
        .x_label_area_size(32)
        .y_label_area_size(48)
        .build_cartesian_2d(x0..x1, 1.0..(y1 * 1.02 + 0.01))
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc(if *pct {
            "memory (% from least feasible to M_peak)"
        } else {
            "memory (GB)"
        })
        .y_desc("makespan / best certified lower bound")
        .draw()
        .map_err(e)?;
    let mut items = Vec::new();
    if !band.is_empty() {
        let grey = RGBColor(120, 120, 120);
        // One interval per budget run, never joined across budgets.
        let half = (x1 - x0) * 0.008;
        chart
            .draw_series(band.iter().map(|&(x, top)| {
                Rectangle::new([(x - half, 1.0), (x + half, top)], grey.mix(0.25).filled())
            }))
            .map_err(e)?;
        items.push((BAND.to_string(), Key::Band(grey)));
    }
    for (name, pts) in &groups {
        let c = colour(name);
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(e)?;
        chart
            .draw_series(pts.iter().map(|&(x, y)| Circle::new((x, y), 3, c.filled())))
            .map_err(e)?;
        items.push((name.clone(), Key::Line(c, 2)));
    }
    // The best checked schedule last, thin and black, on top of the
    // heuristic it often equals (a gap of 0).
    if !band.is_empty() {
        let half = (x1 - x0) * 0.008;
        chart
            .draw_series(LineSeries::new(band.clone(), BLACK.stroke_width(1)))
            .map_err(e)?;
        chart
            .draw_series(band.iter().map(|&(x, y)| {
                Rectangle::new([(x - half, y), (x + half, y)], BLACK.stroke_width(3))
            }))
            .map_err(e)?;
        items.push((BEST.to_string(), Key::Line(BLACK, 1)));
    }
    Ok(items)
}
