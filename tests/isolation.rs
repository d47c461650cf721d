//! The checker must not depend on solver, heuristic, bound or simulator code
//! (models/MODEL.md, src/check module doc): scan its sources for the names.
//! The independent re-check must not share code with the checker or the rules
//! it re-checks.

use std::path::Path;

fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push((
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            ));
        }
    }
}

/// The forbidden names used in code (comments, which name them to say they are
/// forbidden, are skipped), as `line: name` pairs.
fn offending(text: &str, names: &[&str]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for name in names {
            if code.contains(name) {
                out.push((n + 1, name.to_string()));
            }
        }
    }
    out
}

fn forbid(dir: &str, names: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(!files.is_empty(), "no sources under {dir}");
    let mut found = Vec::new();
    for (path, text) in &files {
        for (n, name) in offending(text, names) {
            found.push(format!("{path}:{n}: `{name}`"));
        }
    }
    assert!(found.is_empty(), "forbidden names:\n{}", found.join("\n"));
}

#[test]
fn the_checker_imports_no_solver_heuristic_bound_or_simulator() {
    forbid(
        "src/check",
        &[
            "good_lp",
            "highs",
            "z3",
            "exact::",
            "heuristic::",
            "bound::",
            "simulate",
        ],
    );
}

#[test]
fn the_recheck_shares_no_code_with_the_checker_or_the_rules() {
    forbid(
        "src/recheck",
        &[
            "semantics",
            "check::",
            "good_lp",
            "highs",
            "z3",
            "exact::",
            "heuristic::",
            "bound::",
            "simulate",
        ],
    );
}

#[test]
fn the_scan_finds_imports_and_skips_comments() {
    let text =
        "//! Must not import good_lp.\nuse crate::exact::Outcome; // fine\nlet x = 1; // z3\n";
    assert_eq!(
        offending(text, &["good_lp", "exact::", "z3"]),
        vec![(2, "exact::".to_string())]
    );
}
