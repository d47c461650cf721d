//! Text table, CSV and JSON renderings of gap entries: one row per instance,
//! budget and heuristic (plus one row for a budget with no schedule at all).
//!
//! Owns: the text, CSV and JSON renderings.
//! Must not import: the CLI.

use super::gap::GapEntry;

/// The flat columns shared by the text table and the CSV. `bound` is the best
/// *certified* bound; the best solver-reported one stands beside it;
/// `certified_gap` is exact (`p/q`), `certified_gap_percent` rounded up.
pub const COLUMNS: [&str; 19] = [
    "instance",
    "budget_bytes",
    "budget_percent",
    "heuristic",
    "verdict",
    "makespan",
    "ratio_to_bound",
    "bound",
    "bound_source",
    "solver_reported_bound",
    "solver_reported_source",
    "best_schedule",
    "best_schedule_by",
    "certified_gap",
    "certified_gap_percent",
    "ratio_to_optimum",
    "optimum",
    "optimum_claim",
    "note",
];

fn f4(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.4}")).unwrap_or_default()
}

/// The columns of an entry that every one of its rows repeats, from
/// `bound` to `certified_gap_percent` ([`COLUMNS`] 7..15).
fn entry_columns(e: &GapEntry) -> [String; 8] {
    let pair = |b: &Option<super::BoundCell>| match b {
        Some(b) => (b.display.clone(), b.source.clone()),
        None => Default::default(),
    };
    let (bv, bs) = pair(&e.best_certified_bound);
    let (rv, rs) = pair(&e.best_solver_reported);
    let (sm, sb) = match &e.best_schedule {
        Some(b) => (b.makespan().to_string(), b.by.clone()),
        None => Default::default(),
    };
    let (ge, gp) = match &e.certified_gap {
        Some(g) => (g.exact.clone(), g.percent.clone()),
        None => Default::default(),
    };
    [bv, bs, rv, rs, sm, sb, ge, gp]
}

/// Rows of strings, in [`COLUMNS`] order.
pub fn rows(entries: &[GapEntry]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for e in entries {
        let pct = e
            .budget_percent
            .map(|p| format!("{p:.1}"))
            .unwrap_or_default();
        let (ov, oc) = match &e.optimum {
            Some(o) => (o.makespan().to_string(), o.claim.clone()),
            None => Default::default(),
        };
        let head = |h: [String; 3]| {
            let [a, b, c] = h;
            vec![
                e.instance.clone(),
                e.budget.to_string(),
                pct.clone(),
                a,
                b,
                c,
            ]
        };
        if let Some(why) = &e.infeasible {
            let mut r = head([String::new(), "infeasible".into(), String::new()]);
            r.extend(std::iter::repeat_n(String::new(), COLUMNS.len() - 7));
            r.push(why.clone());
            out.push(r);
            continue;
        }
        let common = entry_columns(e);
        for h in &e.heuristics {
            let mut r = head([
                h.heuristic.clone(),
                h.verdict.clone(),
                h.makespan().map(|m| m.to_string()).unwrap_or_default(),
            ]);
            r.push(f4(h.ratio_to_bound));
            r.extend(common.iter().cloned());
            r.extend([
                f4(h.ratio_to_optimum),
                ov.clone(),
                oc.clone(),
                h.reason
                    .clone()
                    .or_else(|| h.note.clone())
                    .unwrap_or_default(),
            ]);
            out.push(r);
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

/// The CSV: the header, then [`csv_rows`].
pub fn csv(entries: &[GapEntry]) -> String {
    let mut s = COLUMNS.join(",");
    s.push('\n');
    s.push_str(&csv_rows(entries));
    s
}

/// The CSV lines of `entries`, without the header (for printing as rows come).
pub fn csv_rows(entries: &[GapEntry]) -> String {
    let mut s = String::new();
    for r in rows(entries) {
        s.push_str(&r.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(","));
        s.push('\n');
    }
    s
}

pub fn json(entries: &[GapEntry]) -> String {
    serde_json::to_string_pretty(entries).expect("gap entries serialise")
}

/// [`json`] written in pieces as rows come: the pieces of
/// [`JsonArray::push`], then [`JsonArray::close`], are [`json`] of all the
/// entries, byte for byte.
#[derive(Default)]
pub struct JsonArray {
    opened: bool,
}

impl JsonArray {
    /// The next entries of the array.
    pub fn push(&mut self, entries: &[GapEntry]) -> String {
        let mut s = String::new();
        for e in entries {
            s.push_str(if self.opened { ",\n" } else { "[\n" });
            self.opened = true;
            let one = serde_json::to_string_pretty(e).expect("gap entries serialise");
            // serde_json escapes newlines inside strings: every line is one of the entry's.
            let lines: Vec<String> = one.lines().map(|l| format!("  {l}")).collect();
            s.push_str(&lines.join("\n"));
        }
        s
    }
    /// The end of the array.
    pub fn close(self) -> &'static str {
        if self.opened {
            "\n]"
        } else {
            "[]"
        }
    }
}

/// The last line of the report: rows (instance × budget), how many are
/// `optimal (certified)` (and cross-checked, open, infeasible), and the
/// largest certified gap with its row.
pub fn summary(entries: &[GapEntry]) -> String {
    let claim = |w: &str| {
        entries
            .iter()
            .filter(|e| e.optimum.as_ref().is_some_and(|o| o.claim == w))
            .count()
    };
    let infeasible = entries.iter().filter(|e| e.infeasible.is_some()).count();
    let open = entries
        .iter()
        .filter(|e| e.infeasible.is_none() && e.optimum.is_none())
        .count();
    let largest = entries
        .iter()
        .filter_map(|e| e.certified_gap.as_ref().map(|g| (g, e)))
        .fold(None::<(&super::GapCell, &GapEntry)>, |m, (g, e)| match m {
            Some((h, _)) if h.value >= g.value => m,
            _ => Some((g, e)),
        });
    let gap = match largest {
        Some((g, e)) => format!(
            "largest certified gap {} % ({} at {})",
            g.percent,
            e.instance,
            human_bytes(e.budget)
        ),
        None => "no certified gap".into(),
    };
    format!(
        "summary: {} rows, {} optimal (certified), {} optimal (cross-checked), {} open, {} infeasible; {gap}",
        entries.len(),
        claim("optimal (certified)"),
        claim("optimal (cross-checked)"),
        open,
        infeasible
    )
}

/// A byte count for text: the one formatter, [`crate::units::Bytes::human`].
pub fn human_bytes(b: u64) -> String {
    crate::units::Bytes(b).human()
}

/// The text table: per instance and budget a header naming the best
/// certified bound (solver-reported bounds beside it), the best checked
/// schedule, the certified gap, the optimum and the anytime search, then one
/// line per heuristic.
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
        if !e.allocator.is_default() {
            let _ = writeln!(
                s,
                "    allocator {}: every schedule judged under it; bounds and exact methods in the exact model",
                e.allocator
            );
            for r in &e.allocator_refused {
                let _ = writeln!(s, "    refused by the allocator: {r}");
            }
        }
        if let Some(why) = &e.infeasible {
            let _ = writeln!(s, "    infeasible: {why}");
            continue;
        }
        header(&mut s, e);
        heuristic_lines(&mut s, e);
        for p in &e.problems {
            let _ = writeln!(s, "    PROBLEM: {p}");
        }
    }
    s
}

/// A figure in ticks as text: a whole number through the one formatter
/// ([`crate::units::Ticks::human`], with its time where the instance knows
/// its tick), any other (a fractional bound) as it is, in ticks.
fn ticks_text(display: &str, tick: Option<crate::units::TickUnit>) -> String {
    match display.parse::<i64>() {
        Ok(v) => crate::units::Ticks(v).human(tick),
        Err(_) => format!("{display} ticks"),
    }
}

/// Bounds, best schedule, certified gap, optimum, anytime search.
fn header(s: &mut String, e: &GapEntry) {
    use std::fmt::Write;
    let best = e.best_certified_bound.as_ref();
    match best {
        Some(b) => {
            let _ = writeln!(
                s,
                "    best certified bound {}: {}, {}",
                ticks_text(&b.display, e.tick),
                b.source,
                b.strength
            );
        }
        None => {
            let _ = writeln!(s, "    no certified bound applies");
        }
    }
    if let Some(r) = &e.best_solver_reported {
        let _ = writeln!(
            s,
            "      solver-reported {}: {} (shown, never used for the gap)",
            ticks_text(&r.display, e.tick),
            r.source
        );
    }
    let same = |a: Option<&super::BoundCell>, b: &super::BoundCell| {
        a.is_some_and(|x| x.source == b.source && x.strength == b.strength)
    };
    for b in &e.bounds {
        if same(best, b) || same(e.best_solver_reported.as_ref(), b) {
            continue;
        }
        let _ = writeln!(
            s,
            "      also {}: {}, {}",
            ticks_text(&b.display, e.tick),
            b.source,
            b.strength
        );
    }
    for f in &e.bound_failures {
        let _ = writeln!(s, "      {}: {}", f.source, f.reason);
    }
    if let Some(b) = &e.best_schedule {
        let _ = writeln!(
            s,
            "    best schedule {}: {}, valid",
            crate::units::Ticks(b.makespan()).human(e.tick),
            b.by
        );
    }
    if let Some(g) = &e.certified_gap {
        let _ = writeln!(
            s,
            "    certified gap {} % = {} (best schedule {} against ⌈bound⌉ {})",
            g.percent, g.exact, g.makespan, g.bound
        );
    }
    match &e.optimum {
        Some(o) => {
            let _ = writeln!(
                s,
                "    optimum {}: {} ({})",
                crate::units::Ticks(o.makespan()).human(e.tick),
                o.claim,
                o.by
            );
        }
        None => {
            let _ = writeln!(s, "    optimum unknown");
        }
    }
    if let Some(a) = &e.anytime {
        let _ = writeln!(
            s,
            "    anytime search: {} after {:.1} s, {} states, own bound {}{}",
            a.stop,
            a.seconds,
            a.states,
            a.search_bound.map_or("-".into(), |b| b.to_string()),
            a.found.map_or(String::new(), |m| format!(", found {m}")),
        );
        if a.stop == "error" {
            for n in &a.notes {
                let _ = writeln!(s, "      {n}");
            }
        }
    }
}

/// One line per heuristic (and its paper-model value where it has one).
fn heuristic_lines(s: &mut String, e: &GapEntry) {
    use std::fmt::Write;
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
        if let Some(n) = &h.note {
            let _ = writeln!(s, "      {}: {n}", h.heuristic);
        }
        if let Some(v) = h.model_value {
            let _ = writeln!(
                s,
                "      {} model value {v:.3} ticks: solver-reported (paper model, fluid transfers), not a makespan",
                h.heuristic
            );
        }
    }
}
