//! The SVG plot: makespan / ⌈best certified lower bound⌉ against the memory
//! budget, one line per heuristic, one panel per instance (after Figure 5 of
//! the activation paper), over the certified gap band: from 1 (the bound) to
//! the best checked schedule (heuristics, exact methods, anytime search), the
//! band in which the optimum lies. x is the budget's position from the least
//! feasible memory (0 %) to M_peak (100 %) where the family defines them, else GB.
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
/// One panel: instance, its series, whether x is a percentage, and the upper
/// edge of the certified gap band (x, best / ⌈bound⌉).
type Panel = (String, Series, bool, Vec<(f64, f64)>);

/// The legend's name of the band.
pub const BAND: &str = "certified gap (optimum inside)";

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

fn perr(file: &Path, e: impl std::fmt::Display) -> ReportError {
    ReportError::Plot {
        file: file.display().to_string(),
        message: e.to_string(),
    }
}

/// Draw `entries` into `file` (SVG).
pub fn svg(entries: &[GapEntry], file: &Path) -> Result<(), ReportError> {
    let ps = panels(entries);
    if ps.is_empty() {
        return Err(perr(file, "nothing to plot"));
    }
    let cols = (ps.len() as f64).sqrt().ceil() as usize;
    let rows = ps.len().div_ceil(cols);
    let root = SVGBackend::new(file, (480 * cols as u32, 340 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| perr(file, e))?;
    let areas = root.split_evenly((rows, cols));
    // A heuristic keeps its colour across panels.
    let mut names: Vec<&String> = ps.iter().flat_map(|p| p.1.keys()).collect();
    names.sort();
    names.dedup();
    let colour =
        |n: &String| PALETTE[names.iter().position(|x| *x == n).unwrap_or(0) % PALETTE.len()];
    for ((title, series, pct, band), area) in ps.iter().zip(areas.iter()) {
        let pts = series.values().flatten().chain(band.iter());
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
            x1 = x0 + 1.0;
        }
        let mut chart = ChartBuilder::on(area)
            .caption(
                Path::new(title)
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_else(|| title.clone()),
                ("sans-serif", 15),
            )
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(48)
            .build_cartesian_2d(x0..x1, 1.0..(y1 * 1.02 + 0.01))
            .map_err(|e| perr(file, e))?;
        chart
            .configure_mesh()
            .x_desc(if *pct {
                "memory (% from least feasible to M_peak)"
            } else {
                "memory (GB)"
            })
            .y_desc("makespan / best certified lower bound")
            .draw()
            .map_err(|e| perr(file, e))?;
        if !band.is_empty() {
            let grey = RGBColor(120, 120, 120);
            // The band: up along the best schedule, back along the bound (1).
            let mut outline = band.clone();
            outline.extend(band.iter().rev().map(|&(x, _)| (x, 1.0)));
            chart
                .draw_series(std::iter::once(Polygon::new(
                    outline,
                    grey.mix(0.25).filled(),
                )))
                .map_err(|e| perr(file, e))?
                .label(BAND)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 18, y + 5)], grey.mix(0.25).filled())
                });
        }
        for (name, points) in series {
            if points.is_empty() {
                continue;
            }
            let c = colour(name);
            let mut pts = points.clone();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                .map_err(|e| perr(file, e))?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|&(x, y)| Circle::new((x, y), 3, c.filled())))
                .map_err(|e| perr(file, e))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| perr(file, e))?;
    }
    root.present().map_err(|e| perr(file, e))?;
    Ok(())
}
