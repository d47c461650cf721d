//! Pictures of schedules and traces (`offcert plot`, `check --plot`, `audit
//! --plot`): the SVG is well-formed XML, has one red marker per violation whose
//! legend line is the checker's own text, its memory curve peaks exactly at the
//! checker's reported peak, and it renders with `rsvg-convert`.

use crate::common;

use common::*;
use offcert::check::{check, check_with_profile, CheckOutcome, Violation};
use offcert::model::Instance;
use offcert::report::schedule_plot::schedule_svg;
use offcert::schedule::Schedule;
use offcert::trace::audit::{audit_trace, Finding, Options};
use offcert::trace::kineto;
use offcert::units::Bytes;
use quickcheck::TestResult;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// What a test reads back from a picture.
struct Drawn {
    markers: usize,
    legend: Vec<String>,
    curve_max: Option<u64>,
    /// The drawn curve's topmost point and the y the max maps to.
    curve_top_y: f64,
    y_of_max: f64,
}

fn class_is(n: &roxmltree::Node, c: &str) -> bool {
    n.attribute("class")
        .is_some_and(|a| a.split_whitespace().any(|x| x == c))
}

/// Parse strictly (panics on malformed XML) and read the markers, legend and curve.
fn read(svg: &str) -> Drawn {
    let doc = roxmltree::Document::parse(svg)
        .unwrap_or_else(|e| panic!("not well-formed XML: {e}\n{svg}"));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let markers = doc
        .descendants()
        .filter(|n| class_is(n, "violation"))
        .count();
    let legend = doc
        .descendants()
        .filter(|n| class_is(n, "legend-item"))
        .map(|n| {
            n.children()
                .filter(|c| c.is_element())
                .nth(1)
                .and_then(|c| c.text())
                .unwrap_or("")
                .to_string()
        })
        .collect();
    let curve = doc.descendants().find(|n| class_is(n, "memory-curve"));
    let (mut curve_max, mut top, mut ymax) = (None, f64::INFINITY, f64::NAN);
    if let Some(c) = curve {
        curve_max = c.attribute("data-max-bytes").map(|v| v.parse().unwrap());
        ymax = c.attribute("data-y-of-max").unwrap().parse().unwrap();
        for p in c.attribute("points").unwrap().split_whitespace() {
            let y: f64 = p.split(',').nth(1).unwrap().parse().unwrap();
            top = top.min(y);
        }
    }
    Drawn {
        markers,
        legend,
        curve_max,
        curve_top_y: top,
        y_of_max: ymax,
    }
}

/// The picture agrees with the report: one marker and one legend line (the
/// checker's text) per violation; the curve's maximum is the reported peak.
fn assert_picture(inst: &Instance, s: &Schedule, what: &str) -> (CheckOutcome, String) {
    let (r, profile) = check_with_profile(inst, s);
    assert_eq!(r, check(inst, s), "{what}: recording changed the verdict");
    let (max, _) = profile.max().expect("a profile has the start sample");
    // The peak is measured at the start state and after every allocation of
    // the reported period (MODEL.md §2.2). A cyclic schedule whose boundary
    // state is not its start state (state_mismatch, not_steady) can carry
    // memory into the reported period that no allocation there measures; the
    // curve, sampled after every event, then shows more than the peak.
    let carried = r.violations.iter().any(|v| {
        matches!(
            v,
            Violation::StateMismatch { .. } | Violation::NotSteady { .. }
        )
    });
    if carried {
        assert!(max >= r.peak_memory, "{what}: profile max below the peak");
    } else {
        assert_eq!(max, r.peak_memory, "{what}: profile max");
    }
    // The reported peak is a sample of the curve (the first maximum may come
    // earlier when the peak value is reached more than once).
    assert!(
        profile
            .samples
            .iter()
            .any(|&(t, b)| (t, b) == (r.peak_at, r.peak_memory)),
        "{what}: the peak ({}, {}) is not on the curve",
        r.peak_memory,
        r.peak_at
    );
    let svg = schedule_svg(inst, &r, &profile, what);
    let d = read(&svg);
    assert_eq!(d.markers, r.violations.len(), "{what}: markers");
    let want: Vec<String> = r
        .violations
        .iter()
        .map(|v| format!("[{}:{}] {}", v.rule(), v.kind(), v.describe(inst)))
        .collect();
    assert_eq!(d.legend, want, "{what}: legend");
    assert_eq!(d.curve_max, Some(max.0), "{what}: curve max");
    assert!(
        (d.curve_top_y - d.y_of_max).abs() < 0.02,
        "{what}: the drawn curve's top {} is not the peak's y {}",
        d.curve_top_y,
        d.y_of_max
    );
    (r, svg)
}

#[test]
fn every_bundled_example_and_rule_fixture_is_drawn_with_its_violations() {
    let mut invalid = 0;
    for dir in ["instances/examples", "instances/fixtures"] {
        for (i, sf) in pairs(&repo().join(dir)) {
            let (inst, s) = load(&i, &sf);
            let (r, _) = assert_picture(&inst, &s, &sf.display().to_string());
            invalid += usize::from(!r.valid);
        }
    }
    assert!(invalid >= 10, "only {invalid} invalid examples drawn");
}

static MARKERS: AtomicUsize = AtomicUsize::new(0);

type Spec = Vec<(u8, u8, u8, u8)>;

/// Randomly broken schedules of both families, at tight memory: the picture
/// agrees with the report.
#[test]
fn randomly_broken_schedules_are_drawn_with_their_violations() {
    fn prop(
        family: bool,
        spec: Spec,
        bw: u8,
        slack: u8,
        mask: u16,
        muts: Vec<(u8, usize, i8)>,
    ) -> TestResult {
        let Some((mut inst, s)) = either_schedule(family, &spec, bw, slack, mask) else {
            return TestResult::discard();
        };
        let m = mutate_up_to_three(s, muts, |_| {});
        // Tight memory: one byte below the peak half of the time.
        let peak = check(&inst, &m).peak_memory;
        if mask & 1 == 1 && peak.0 > 0 {
            inst.machine.gpu_capacity = Bytes(peak.0 - 1);
        }
        let (r, _) = assert_picture(&inst, &m, "random");
        MARKERS.fetch_add(r.violations.len(), Relaxed);
        TestResult::passed()
    }
    qc(60, 30)
        .max_tests(cases(2000))
        .quickcheck(prop as fn(bool, Spec, u8, u8, u16, Vec<(u8, usize, i8)>) -> TestResult);
    assert!(MARKERS.load(Relaxed) >= 30, "too few violations drawn");
}

fn rsvg() -> &'static str {
    let ok = Command::new("rsvg-convert")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "rsvg-convert not found: run scripts/setup.sh (it installs the Debian package librsvg2-bin)"
    );
    "rsvg-convert"
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("offcert-plot-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn render_png(svg: &Path) {
    let png = svg.with_extension("png");
    let o = Command::new(rsvg())
        .arg("-o")
        .arg(&png)
        .arg(svg)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "rsvg-convert {}: {}",
        svg.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 1000);
}

fn offcert(args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_offcert"))
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

/// `offcert plot` and `offcert check --plot` write the same picture, keep the
/// check's exit codes, and the picture renders.
#[test]
fn cli_plot_and_check_plot_render_with_rsvg() {
    for (sched, code) in [
        (
            "instances/examples/w2.short-period.invalid.schedule.json",
            1,
        ),
        (
            "instances/examples/chain3m8.in-use.invalid.schedule.json",
            1,
        ),
        ("instances/examples/w2.crossing.schedule.json", 0),
    ] {
        let stem = Path::new(sched).file_name().unwrap().to_string_lossy();
        let inst = format!(
            "instances/examples/{}.json",
            stem.split('.').next().unwrap()
        );
        let a = tmp(&format!("{stem}.plot.svg"));
        let b = tmp(&format!("{stem}.check.svg"));
        let (c, out) = offcert(&["plot", &inst, sched, "-o", a.to_str().unwrap()]);
        assert_eq!(c, code, "{out}");
        let (c, out) = offcert(&["check", &inst, sched, "--plot", b.to_str().unwrap()]);
        assert_eq!(c, code, "{out}");
        let (sa, sb) = (
            std::fs::read_to_string(&a).unwrap(),
            std::fs::read_to_string(&b).unwrap(),
        );
        assert_eq!(sa, sb);
        let (i, s) = load(&repo().join(&inst), &repo().join(sched));
        assert_eq!(read(&sa).markers, check(&i, &s).violations.len());
        render_png(&a);
    }
    // Cyclic: the period line and the crossing transfer drawn again at 0.
    let svg = std::fs::read_to_string(tmp("w2.crossing.schedule.json.plot.svg")).unwrap();
    assert!(svg.contains("period P = "), "no period line");
    assert!(svg.contains("wrapped"), "no crossing transfer");
    let (c, out) = offcert(&[
        "plot",
        "instances/examples/w2.json",
        "nope.json",
        "-o",
        "x.svg",
    ]);
    assert_eq!(c, 2, "{out}");
}

/// A synthetic trace with thousands of kernels, copies and allocator events:
/// the picture is aggregated to pixel columns (small), keeps the exact peak,
/// and marks each finding.
#[test]
fn a_large_trace_gives_a_small_picture_with_its_findings_marked() {
    use std::fmt::Write;
    let n = 20_000;
    let mut t = String::from(r#"{"traceEvents":["#);
    let mut total = 0i64;
    let mut peak = 0i64;
    for k in 0..n {
        let ts = k * 10;
        let _ = write!(
            t,
            r#"{{"ph":"X","cat":"kernel","name":"k{}","pid":0,"tid":7,"ts":{ts},"dur":6}},"#,
            k % 7
        );
        let b: i64 = if k % 3 == 2 { -2000 } else { 1000 + (k % 5) };
        total += b;
        peak = peak.max(total);
        let _ = write!(
            t,
            r#"{{"ph":"i","name":"[memory]","pid":0,"tid":0,"ts":{ts},"args":{{"Device Type":1,"Device Id":0,"Bytes":{b},"Total Allocated":{total}}}}},"#
        );
        if k % 4 == 0 {
            let _ = write!(
                t,
                r#"{{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":{},"ts":{ts},"dur":50,"args":{{"bytes":100}}}},"#,
                20 + (k / 4) % 2
            );
        }
    }
    t.push_str(r#"{"ph":"X","cat":"kernel","name":"last","pid":0,"tid":7,"ts":0,"dur":1}]}"#);
    let path = tmp("large.trace.json");
    std::fs::write(&path, &t).unwrap();
    let tr = kineto::parse_bytes("large.trace.json", t.as_bytes()).unwrap();
    let opts = Options {
        budget: Some(Bytes(peak as u64 - 1)),
        ..Options::default()
    };
    let ta = audit_trace(&tr, &opts);
    let over = ta
        .findings
        .iter()
        .filter(|f| matches!(f, Finding::MemoryOverBudget { .. }))
        .count();
    assert_eq!(over, 1);
    assert!(ta.findings.len() > 1, "copy overlaps expected");
    let out = tmp("large.svg");
    let (c, text) = offcert(&[
        "audit",
        path.to_str().unwrap(),
        "--budget",
        &(peak - 1).to_string(),
        "--plot",
        out.to_str().unwrap(),
    ]);
    assert_eq!(c, 1, "{text}");
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.len() < 400_000, "{} bytes", svg.len());
    let d = read(&svg);
    assert_eq!(d.markers, ta.findings.len());
    // The legend lines are the text's own finding lines (sentences, no JSON).
    let want: Vec<String> = ta.findings.iter().map(|f| f.line()).collect();
    assert_eq!(d.legend, want);
    for w in &want {
        assert!(text.lines().any(|l| l.trim() == w), "{w} not in\n{text}");
    }
    assert_eq!(d.curve_max, Some(peak as u64));
    assert!((d.curve_top_y - d.y_of_max).abs() < 0.02);
    render_png(&out);
}

/// The heading lines of a picture.
fn heading(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.root_element()
        .children()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(str::to_string))
        .collect()
}

/// `audit --mapping --plan --plot` draws what the text says (issue 21 item 2):
/// the same verdict, and one marker per finding line of the text (trace-only
/// findings and the checker's violations on the reconstructed schedule), whose
/// legend line is the text's line. Runs exported from a late prefetch (a race),
/// a release while in use, and a valid schedule.
#[test]
fn a_mapped_audit_is_drawn_with_the_texts_verdict_and_findings() {
    for (inst, sched, code, findings) in [
        ("chain3", "chain3.late-prefetch.invalid", 1, 1),
        ("chain3m8", "chain3m8.in-use.invalid", 1, 2),
        ("chain3", "chain3.offload-x0", 0, 0),
    ] {
        let inst = format!("instances/examples/{inst}.json");
        let sched = format!("instances/examples/{sched}.schedule.json");
        let trace = tmp(&format!("{findings}.{code}.mapped.trace.json"));
        let svg = tmp(&format!("{findings}.{code}.mapped.svg"));
        let (c, out) = offcert(&["export-trace", &inst, &sched, "-o", trace.to_str().unwrap()]);
        assert_eq!(c, 0, "{out}");
        let (c, text) = offcert(&[
            "audit",
            trace.to_str().unwrap(),
            "--instance",
            &inst,
            "--mapping",
            "instances/traces/export.mapping.json",
            "--plan",
            &sched,
            "--plot",
            svg.to_str().unwrap(),
        ]);
        assert_eq!(c, code, "{sched}: {text}");
        let words = if code == 0 { "clean" } else { "VIOLATIONS" };
        assert!(
            text.lines().any(|l| l == format!("verdict: {words}")),
            "{text}"
        );
        let s = std::fs::read_to_string(&svg).unwrap();
        assert!(
            heading(&s)
                .iter()
                .any(|h| h.contains(&format!("verdict: {words} ("))),
            "{sched}: {:?}",
            heading(&s)
        );
        let d = read(&s);
        let lines: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with('['))
            .map(str::to_string)
            .collect();
        assert_eq!(lines.len(), findings, "{sched}: {text}");
        assert_eq!(d.markers, findings, "{sched}");
        assert_eq!(d.legend, lines, "{sched}");
        render_png(&svg);
    }
}

/// What a test reads back from the gap picture: text elements (x, content),
/// polylines (stroke width, points), filled rectangles (fill) and polygons.
struct GapDrawn {
    texts: Vec<(f64, String)>,
    lines: Vec<(String, Vec<(f64, f64)>)>,
    rect_fills: Vec<String>,
    polygons: usize,
}

fn read_gap(svg: &str) -> GapDrawn {
    let doc = roxmltree::Document::parse(svg)
        .unwrap_or_else(|e| panic!("not well-formed XML: {e}\n{svg}"));
    let num = |n: &roxmltree::Node, a: &str| n.attribute(a).and_then(|v| v.parse().ok());
    let mut d = GapDrawn {
        texts: vec![],
        lines: vec![],
        rect_fills: vec![],
        polygons: 0,
    };
    for n in doc.descendants().filter(|n| n.is_element()) {
        match n.tag_name().name() {
            "text" => d.texts.push((
                num(&n, "x").unwrap_or(f64::NAN),
                n.text().unwrap_or("").trim().to_string(),
            )),
            "polyline" => {
                let pts = n
                    .attribute("points")
                    .unwrap_or("")
                    .split_whitespace()
                    .filter_map(|p| {
                        let (x, y) = p.split_once(',')?;
                        Some((x.parse().ok()?, y.parse().ok()?))
                    })
                    .collect();
                let w = n.attribute("stroke-width").unwrap_or("1").to_string();
                d.lines.push((w, pts));
            }
            "rect" => d
                .rect_fills
                .push(n.attribute("fill").unwrap_or("").to_string()),
            "polygon" => d.polygons += 1,
            _ => {}
        }
    }
    d
}

/// Identical series merge into one legend entry naming them all; distinct
/// ones stay apart; series with no point are left out.
#[test]
fn identical_gap_series_share_one_legend_entry() {
    use std::collections::BTreeMap;
    let s: BTreeMap<String, Vec<(f64, f64)>> = [
        ("tflms", vec![(50.0, 1.2), (0.0, 1.5)]),
        ("greedy", vec![(0.0, 1.5), (50.0, 1.2)]),
        ("greedy-star", vec![(0.0, 1.5), (50.0, 1.2)]),
        ("dynprog", vec![(0.0, 1.4), (50.0, 1.2)]),
        ("l2l", vec![]),
    ]
    .into_iter()
    .map(|(n, p)| (n.to_string(), p))
    .collect();
    let m = offcert::report::plot::merged(&s);
    let names: Vec<&str> = m.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(names, ["dynprog", "greedy = greedy-star = tflms"]);
    assert_eq!(m[1].1, vec![(0.0, 1.5), (50.0, 1.2)], "sorted by x");
}

/// Issue 21 item 8, on a sweep of the bundled examples: every legend entry
/// (the band, the best checked schedule, each heuristic group) stands right
/// of every curve, so it covers none; no two heuristic curves are the same
/// line (one would hide the other); the band is one box per budget run,
/// never a polygon joined across budgets; the best checked schedule is drawn;
/// no axis label reaches past its panel's plot column; and it renders.
#[test]
fn the_gap_picture_shows_every_series_and_the_best_schedule() {
    use offcert::report::plot::{BAND, BEST};
    let svg = tmp("gap.svg");
    let (code, out) = offcert(&[
        "gap",
        "instances/examples/chain3.json",
        "--memory",
        "min:peak:5",
        "--quiet",
        "--json",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    let json = out.split("\nsummary:").next().unwrap();
    let v: serde_json::Value = serde_json::from_str(json).expect("the report");
    let entries = v.as_array().unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    let d = read_gap(&text);
    let width: f64 = roxmltree::Document::parse(&text)
        .unwrap()
        .root_element()
        .attribute("width")
        .and_then(|w| w.parse().ok())
        .expect("the picture's width");
    // The legend: band, best, and every heuristic that has a ratio.
    let mut series = std::collections::BTreeMap::new();
    for e in entries {
        for h in e["heuristics"].as_array().unwrap() {
            if let Some(r) = h["ratio_to_bound"].as_f64() {
                let x = e["budget_percent"].as_f64().unwrap();
                series
                    .entry(h["heuristic"].as_str().unwrap().to_string())
                    .or_insert_with(Vec::new)
                    .push((x, r));
            }
        }
    }
    let groups = offcert::report::plot::merged(&series);
    assert!(!groups.is_empty());
    let mut labels: Vec<String> = groups.iter().map(|g| g.0.clone()).collect();
    labels.extend([BAND.to_string(), BEST.to_string()]);
    // The plot column is 480 pixels wide; the legend's samples lie right of it.
    let plotted: Vec<_> = d
        .lines
        .iter()
        .filter(|l| l.1.iter().all(|p| p.0 < 480.0))
        .collect();
    let rightmost = plotted
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.0))
        .fold(f64::MIN, f64::max);
    for l in &labels {
        let (x, _) = d
            .texts
            .iter()
            .find(|t| &t.1 == l)
            .unwrap_or_else(|| panic!("legend entry {l} missing"));
        assert!(
            *x > rightmost,
            "legend {l} at x {x} over the curves (to {rightmost})"
        );
        // Not cut at the picture's right edge (12 px text: at most 7 px a character).
        assert!(
            x + 7.0 * l.chars().count() as f64 <= width,
            "legend {l} at x {x} is cut at the edge {width}"
        );
    }
    for h in series.keys() {
        assert!(
            labels.iter().any(|l| l.split(" = ").any(|n| n == h)),
            "{h} has no legend entry"
        );
    }
    // Heuristic curves (stroke width 2): pairwise different.
    let curves: Vec<_> = plotted.iter().filter(|l| l.0 == "2").collect();
    assert_eq!(
        curves.len(),
        groups.iter().filter(|g| g.1.len() > 1).count()
    );
    for (i, a) in curves.iter().enumerate() {
        for b in &curves[i + 1..] {
            assert_ne!(a.1, b.1, "two heuristic curves on the same line");
        }
    }
    // The band: one box per row with a certified gap (+ the legend's), no polygon.
    let gaps = entries
        .iter()
        .filter(|e| !e["certified_gap"].is_null())
        .count();
    assert!(gaps >= 2);
    assert_eq!(d.polygons, 0, "the band is joined across budgets");
    assert_eq!(
        d.rect_fills.iter().filter(|f| *f == "#787878").count(),
        gaps + 1
    );
    // The best checked schedule: a thin line through every budget with a gap.
    assert!(plotted.iter().any(|l| l.0 == "1" && l.1.len() == gaps));
    // Axis numbers (centred) stay inside the 480-pixel plot column.
    for (x, t) in &d.texts {
        if t.parse::<f64>().is_ok() {
            assert!(
                x + 3.5 * t.len() as f64 <= 480.0,
                "label {t} at {x} is clipped"
            );
        }
    }
    render_png(&svg);
}
