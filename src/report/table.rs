//! Text table, CSV and JSON renderings of gap entries: one row per instance,
//! budget and heuristic (plus one row for a budget with no schedule at all).
//!
//! Owns: the text, CSV and JSON renderings.
//! Must not import: the CLI.

use super::gap::GapEntry;

/// The flat columns shared by the text table and the CSV.
pub const COLUMNS: [&str; 14] = [
    "instance",
    "budget_bytes",
    "budget_percent",
    "heuristic",
    "verdict",
    "makespan",
    "ratio_to_bound",
    "bound",
    "bound_source",
    "bound_strength",
    "ratio_to_optimum",
    "optimum",
    "optimum_claim",
    "note",
];

fn f4(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.4}")).unwrap_or_default()
}

/// Rows of strings, in [`COLUMNS`] order.
pub fn rows(entries: &[GapEntry]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for e in entries {
        let pct = e
            .budget_percent
            .map(|p| format!("{p:.1}"))
            .unwrap_or_default();
        let (bv, bs, bw) = match &e.best_bound {
            Some(b) => (b.display.clone(), b.source.clone(), b.strength.clone()),
            None => Default::default(),
        };
        let (ov, oc) = match &e.optimum {
            Some(o) => (o.makespan().to_string(), o.claim.clone()),
            None => Default::default(),
        };
        if let Some(why) = &e.infeasible {
            out.push(vec![
                e.instance.clone(),
                e.budget.to_string(),
                pct.clone(),
                String::new(),
                "infeasible".into(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                why.clone(),
            ]);
            continue;
        }
        for h in &e.heuristics {
            out.push(vec![
                e.instance.clone(),
                e.budget.to_string(),
                pct.clone(),
                h.heuristic.clone(),
                h.verdict.clone(),
                h.makespan().map(|m| m.to_string()).unwrap_or_default(),
                f4(h.ratio_to_bound),
                bv.clone(),
                bs.clone(),
                bw.clone(),
                f4(h.ratio_to_optimum),
                ov.clone(),
                oc.clone(),
                h.reason.clone().unwrap_or_default(),
            ]);
        }
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn csv(entries: &[GapEntry]) -> String {
    let mut s = COLUMNS.join(",");
    s.push('\n');
    for r in rows(entries) {
        s.push_str(&r.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(","));
        s.push('\n');
    }
    s
}

pub fn json(entries: &[GapEntry]) -> String {
    serde_json::to_string_pretty(entries).expect("gap entries serialise")
}

/// Human units for a byte count (display only).
pub fn human_bytes(b: u64) -> String {
    let v = b as f64;
    if v >= 1e9 {
        format!("{:.3} GB", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.3} MB", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.3} kB", v / 1e3)
    } else {
        format!("{b} B")
    }
}

/// The text table: per instance and budget a header naming the best bound and
/// the optimum, then one line per heuristic.
pub fn text(entries: &[GapEntry]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let mut current = String::new();
    for e in entries {
        if e.instance != current {
            let _ = writeln!(
                s,
                "== {} ({}, release rule {})",
                e.instance, e.family, e.release
            );
            current = e.instance.clone();
        }
        let pct = e
            .budget_percent
            .map(|p| format!(" ({p:.0}% of least..peak)"))
            .unwrap_or_default();
        let _ = writeln!(s, "  memory {}{}", human_bytes(e.budget), pct);
        if let Some(why) = &e.infeasible {
            let _ = writeln!(s, "    infeasible: {why}");
            continue;
        }
        match &e.best_bound {
            Some(b) => {
                let _ = writeln!(
                    s,
                    "    best bound {} ticks: {}, {}",
                    b.display, b.source, b.strength
                );
            }
            None => {
                let _ = writeln!(s, "    no bound applies");
            }
        }
        for b in &e.bounds {
            if e.best_bound.as_ref().is_some_and(|x| x.source == b.source) {
                continue;
            }
            let _ = writeln!(
                s,
                "      also {} ticks: {}, {}",
                b.display, b.source, b.strength
            );
        }
        for f in &e.bound_failures {
            let _ = writeln!(s, "      {}: {}", f.source, f.reason);
        }
        match &e.optimum {
            Some(o) => {
                let _ = writeln!(
                    s,
                    "    optimum {} ticks: {} ({})",
                    o.makespan(),
                    o.claim,
                    o.by
                );
            }
            None => {
                let _ = writeln!(s, "    optimum unknown");
            }
        }
        let _ = writeln!(
            s,
            "    {:<12} {:<12} {:>14} {:>9} {:>9}",
            "heuristic", "verdict", "makespan", "×bound", "×opt"
        );
        for h in &e.heuristics {
            let _ = writeln!(
                s,
                "    {:<12} {:<12} {:>14} {:>9} {:>9}{}",
                h.heuristic,
                h.verdict,
                h.makespan().map(|m| m.to_string()).unwrap_or("-".into()),
                h.ratio_to_bound
                    .map(|r| format!("{r:.4}"))
                    .unwrap_or("-".into()),
                h.ratio_to_optimum
                    .map(|r| format!("{r:.4}"))
                    .unwrap_or("-".into()),
                h.reason
                    .as_ref()
                    .map(|r| format!("  ({r})"))
                    .unwrap_or_default()
            );
            if let Some(v) = h.model_value {
                let _ = writeln!(
                    s,
                    "      {} model value {v:.3} ticks: solver-reported (paper model, fluid transfers), not a makespan",
                    h.heuristic
                );
            }
        }
        for p in &e.problems {
            let _ = writeln!(s, "    PROBLEM: {p}");
        }
    }
    s
}
