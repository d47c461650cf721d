//! The trusted core (`crates/offcert-core`: units, model, schedule, semantics,
//! check, recheck) must not depend on solver, heuristic, bound or simulator
//! code (models/MODEL.md, the check module doc), and the independent re-check
//! must not share code with the checker or the rules it re-checks.
//!
//! Cargo enforces the first now that the core is its own crate: it cannot name a
//! module of the `offcert` crate, and it can only use the crates its manifest
//! lists. So the first tests here read that manifest, and the dependency graph
//! `cargo metadata` resolves, and assert that no solver crate and no `offcert`
//! crate is reachable from the core.
//!
//! Inside the core, the recheck/checker separation is guarded by a token scan of
//! `crates/offcert-core/src`, with comments and string and char literals blanked,
//! that sees through aliases (`use crate::check as c`, `use crate::{check as x}`,
//! `super::super::check`, `extern crate self as me`, `r#check`):
//! 1. it resolves every path that reaches the crate root (`crate::`, `$crate::`,
//!    `super::` chains, brace groups, aliases of the root) and follows the
//!    top-level modules it names, from the starting module to its whole
//!    dependency closure; a forbidden module in the closure is a finding, and so
//!    is a glob import of the crate root and a path to a root-level item (a
//!    re-export in `lib.rs`, whose own paths are then followed too);
//! 2. in every file of the closure, a forbidden name used as an identifier in any
//!    position (an alias still has to name the module once), a `#[path = ..]`
//!    attribute and `include!` are findings.
//!
//! The same scan still runs for the checker (no solver names in its closure), as
//! a second line behind Cargo; each trick is planted in an in-memory copy of the
//! core's sources and asserted caught.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

/// Sources by path relative to the core's `src/` (`check/mod.rs`, `lib.rs`).
type Tree = BTreeMap<String, String>;

fn load(dir: &Path, rel: &str, out: &mut Tree) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let r = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if p.is_dir() {
            load(&p, &r, out);
        } else if name.ends_with(".rs") {
            out.insert(r, std::fs::read_to_string(&p).unwrap());
        }
    }
}

fn core_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/offcert-core")
}

fn src_tree() -> Tree {
    let mut t = Tree::new();
    load(&core_dir().join("src"), "", &mut t);
    assert!(t.contains_key("lib.rs") && t.contains_key("check/mod.rs"));
    t
}

/// Comments, string literals (plain, byte, raw) and char literals replaced by
/// spaces; newlines kept so that line numbers hold. Lifetimes are kept.
fn strip(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < c.len() {
        let ident_before = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if !ident_before && (c[i] == 'r' || (c[i] == 'b' && c.get(i + 1) == Some(&'r'))) && {
            let mut j = i + if c[i] == 'b' { 2 } else { 1 };
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            c.get(j) == Some(&'"')
        } {
            // Raw string: r"..", r#".."#, br"..".
            let mut j = i + if c[i] == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while c[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (0..hashes).all(|k| c.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for ch in &c[i..j.min(c.len())] {
                out.push(blank(*ch));
            }
            i = j;
        } else if c[i] == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c[i] == '\'' {
            // A char literal ('x', '\n', '\u{..}'), else a lifetime or label.
            let end = if c.get(i + 1) == Some(&'\\') {
                (i + 3..c.len()).find(|&j| c[j] == '\'')
            } else if c.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    for _ in i..=e {
                        out.push(' ');
                    }
                    i = e + 1;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// A token and its line: identifiers (`r#x` read as `x`), `::`, and single
/// punctuation characters.
fn tokens(code: &str) -> Vec<(String, usize)> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphabetic() || ch == '_' {
            if ch == 'r' && c.get(i + 1) == Some(&'#') {
                i += 2;
            }
            let s = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((c[s..i].iter().collect(), line));
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(("::".into(), line));
            i += 2;
        } else {
            out.push((ch.to_string(), line));
            i += 1;
        }
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// How many modules below the crate root a file's module is.
fn depth(rel: &str) -> usize {
    let parts: Vec<&str> = rel.split('/').collect();
    let last = *parts.last().unwrap();
    let n = parts.len();
    if last == "lib.rs" && n == 1 {
        0
    } else if last == "mod.rs" {
        n - 1
    } else {
        n
    }
}

/// Walk one path (or use tree) from token `i`. `level` is how many modules below
/// the root the prefix so far is (`None`: not anchored). Root references (the
/// segment right after the root, or `*`) are pushed with their line. Returns the
/// next token and the level at the end of the path.
fn walk(
    t: &[(String, usize)],
    mut i: usize,
    mut level: Option<usize>,
    start: usize,
    aliases: &BTreeSet<String>,
    refs: &mut Vec<(String, usize)>,
) -> (usize, Option<usize>) {
    let mut first = true;
    while i < t.len() {
        let (tok, line) = (&t[i].0, t[i].1);
        match tok.as_str() {
            "crate" if first => level = Some(0),
            "super" => level = Some(level.unwrap_or(start).saturating_sub(1)),
            "self" if first => level = Some(level.unwrap_or(start)),
            a if first && aliases.contains(a) => level = Some(0),
            "{" => {
                i += 1;
                while i < t.len() && t[i].0 != "}" {
                    let (j, _) = walk(t, i, level, start, aliases, refs);
                    i = j;
                    // Skip `as NAME` and anything up to the next item.
                    while i < t.len() && t[i].0 != "," && t[i].0 != "}" {
                        i += 1;
                    }
                    if i < t.len() && t[i].0 == "," {
                        i += 1;
                    }
                }
                return (i + 1, None);
            }
            "*" => {
                if level == Some(0) {
                    refs.push(("*".into(), line));
                }
                return (i + 1, None);
            }
            x if is_ident(x) => {
                let at_root = level == Some(0) || (level.is_none() && first && start == 0);
                if at_root {
                    refs.push((x.to_string(), line));
                }
                level = if at_root { Some(1) } else { None };
            }
            _ => return (i, level),
        }
        first = false;
        i += 1;
        if i < t.len() && t[i].0 == "::" {
            i += 1;
        } else {
            return (i, level);
        }
    }
    (i, level)
}

/// Findings for one file: forbidden identifiers, `#[path]`, `include!`; and the
/// root references of its paths.
fn scan_file(
    rel: &str,
    text: &str,
    forbidden_names: &[&str],
    findings: &mut Vec<String>,
) -> Vec<(String, usize)> {
    let t = tokens(&strip(text));
    let start = depth(rel);
    // The module depth at each token: inline `mod x { .. }` blocks go one deeper.
    let mut at = Vec::with_capacity(t.len());
    let (mut braces, mut inline): (usize, Vec<usize>) = (0, Vec::new());
    for k in 0..t.len() {
        match t[k].0.as_str() {
            "{" => {
                braces += 1;
                if k >= 2 && t[k - 2].0 == "mod" {
                    inline.push(braces);
                }
            }
            "}" => {
                if inline.last() == Some(&braces) {
                    inline.pop();
                }
                braces = braces.saturating_sub(1);
            }
            _ => {}
        }
        at.push(start + inline.len());
    }
    // `mod NAME;` declarations in lib.rs are not uses.
    let declared = |k: usize| k > 0 && t[k - 1].0 == "mod";
    for (k, (tok, line)) in t.iter().enumerate() {
        if forbidden_names.contains(&tok.as_str()) && !(start == 0 && declared(k)) {
            findings.push(format!("{rel}:{line}: names `{tok}`"));
        }
        if tok == "path" && k >= 2 && t[k - 1].0 == "[" && t[k - 2].0 == "#" {
            findings.push(format!("{rel}:{line}: #[path] attribute"));
        }
        if tok == "include" && t.get(k + 1).is_some_and(|n| n.0 == "!") {
            findings.push(format!("{rel}:{line}: include!"));
        }
    }
    // Aliases of the crate root: `extern crate self as X`, `use crate as X`,
    // `use super::super as X` (reaching the root).
    let mut aliases = BTreeSet::new();
    for k in 0..t.len() {
        if t[k].0 == "extern" && t.get(k + 1).is_some_and(|x| x.0 == "crate") {
            if let (Some(a), Some(b), Some(n)) = (t.get(k + 2), t.get(k + 3), t.get(k + 4)) {
                if a.0 == "self" && b.0 == "as" {
                    aliases.insert(n.0.clone());
                }
            }
        }
        if t[k].0 == "use" {
            let mut sink = Vec::new();
            let (j, level) = walk(&t, k + 1, None, at[k], &BTreeSet::new(), &mut sink);
            if level == Some(0) && t.get(j).is_some_and(|x| x.0 == "as") {
                if let Some(n) = t.get(j + 1) {
                    aliases.insert(n.0.clone());
                }
            }
        }
    }
    let mut refs = Vec::new();
    let mut k = 0;
    while k < t.len() {
        let tok = t[k].0.as_str();
        let head = k == 0 || t[k - 1].0 != "::";
        let anchored = matches!(tok, "crate" | "super" | "self") || aliases.contains(tok);
        let follows = t.get(k + 1).is_some_and(|x| x.0 == "::");
        // Bare paths in lib.rs (`pub use exact::x`) start at the root.
        let lib_use = at[k] == 0 && k > 0 && t[k - 1].0 == "use";
        if head && ((anchored && follows) || lib_use) {
            let (j, _) = walk(&t, k, None, at[k], &aliases, &mut refs);
            k = j.max(k + 1);
        } else {
            k += 1;
        }
    }
    refs
}

/// The files of a top-level module (`check` → `check/mod.rs`, `check/x.rs`, …;
/// `units` → `units.rs`).
fn files_of<'a>(tree: &'a Tree, module: &str) -> Vec<(&'a String, &'a String)> {
    tree.iter()
        .filter(|(rel, _)| {
            rel.as_str() == format!("{module}.rs") || rel.starts_with(&format!("{module}/"))
        })
        .collect()
}

/// Scan `start`'s dependency closure in `tree`: the modules reached, and the
/// findings (empty when the rules hold).
fn scan(
    tree: &Tree,
    start: &str,
    forbidden_modules: &[&str],
    forbidden_names: &[&str],
) -> (BTreeSet<String>, Vec<String>) {
    let top: BTreeSet<String> = tree
        .keys()
        .filter(|k| k.as_str() != "lib.rs" && k.as_str() != "main.rs")
        .map(|k| {
            k.split('/')
                .next()
                .unwrap()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    let mut findings = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut queue = VecDeque::from([start.to_string()]);
    while let Some(m) = queue.pop_front() {
        if !seen.insert(m.clone()) {
            continue;
        }
        if forbidden_modules.contains(&m.as_str()) {
            findings.push(format!("`{start}` depends on forbidden module `{m}`"));
        }
        let files: Vec<(&String, &String)> = if m == "lib.rs" {
            tree.get_key_value("lib.rs").into_iter().collect()
        } else {
            files_of(tree, &m)
        };
        for (rel, text) in files {
            for (r, line) in scan_file(rel, text, forbidden_names, &mut findings) {
                if r == "*" {
                    findings.push(format!("{rel}:{line}: glob import of the crate root"));
                } else if top.contains(&r) || forbidden_modules.contains(&r.as_str()) {
                    queue.push_back(r);
                } else {
                    // A root-level item: a re-export in lib.rs; follow lib.rs.
                    queue.push_back("lib.rs".into());
                }
            }
        }
    }
    findings.sort();
    findings.dedup();
    (seen, findings)
}

const CHECKER_MODULES: &[&str] = &["exact", "heuristic", "bound", "simulate"];
const CHECKER_NAMES: &[&str] = &[
    "exact",
    "heuristic",
    "bound",
    "simulate",
    "good_lp",
    "highs",
    "z3",
];
const RECHECK_MODULES: &[&str] = &[
    "check",
    "semantics",
    "exact",
    "heuristic",
    "bound",
    "simulate",
];
const RECHECK_NAMES: &[&str] = &[
    "semantics",
    "exact",
    "heuristic",
    "bound",
    "simulate",
    "good_lp",
    "highs",
    "z3",
];

fn checker_findings(tree: &Tree) -> Vec<String> {
    scan(tree, "check", CHECKER_MODULES, CHECKER_NAMES).1
}

#[test]
fn the_checker_and_its_dependencies_import_no_solver_heuristic_bound_or_simulator() {
    let tree = src_tree();
    let (closure, findings) = scan(&tree, "check", CHECKER_MODULES, CHECKER_NAMES);
    assert!(findings.is_empty(), "forbidden:\n{}", findings.join("\n"));
    // The closure is really followed: the checker replays through the semantics.
    for m in ["check", "semantics", "model", "schedule", "units"] {
        assert!(closure.contains(m), "{m} not reached: {closure:?}");
    }
}

#[test]
fn the_recheck_shares_no_code_with_the_checker_or_the_rules() {
    let tree = src_tree();
    let (closure, findings) = scan(&tree, "recheck", RECHECK_MODULES, RECHECK_NAMES);
    assert!(findings.is_empty(), "forbidden:\n{}", findings.join("\n"));
    assert!(closure.contains("model"), "{closure:?}");
}

/// A copy of the core's `src/` with `code` appended to one file.
fn planted(file: &str, code: &str) -> Tree {
    let mut tree = src_tree();
    let text = tree
        .get_mut(file)
        .unwrap_or_else(|| panic!("no crates/offcert-core/src/{file}"));
    text.push('\n');
    text.push_str(code);
    text.push('\n');
    tree
}

#[test]
fn planted_aliases_are_caught() {
    let cases: &[(&str, &str)] = &[
        ("check/mod.rs", "use crate::exact as e;"),
        ("check/mod.rs", "use crate::{model, exact as x};"),
        (
            "check/mod.rs",
            "use crate::{model::{Instance}, heuristic::{self as h}};",
        ),
        (
            "check/mod.rs",
            "fn f() -> i64 { crate::exact::milp::MAX_HORIZON }",
        ),
        (
            "check/mod.rs",
            "fn f() -> i64 { crate :: exact :: milp :: MAX_HORIZON }",
        ),
        ("check/mod.rs", "use crate::r#exact as e;"),
        ("check/mod.rs", "use super::bound as b;"),
        ("check/violation.rs", "use super::super::simulate as s;"),
        ("check/violation.rs", "use super::{super::exact as e};"),
        (
            "check/mod.rs",
            "extern crate self as me; use me::heuristic as h;",
        ),
        ("check/mod.rs", "#[path = \"../exact/mod.rs\"] mod e;"),
        ("check/mod.rs", "mod e { include!(\"../exact/mod.rs\"); }"),
        ("check/mod.rs", "use highs as h;"),
        ("check/mod.rs", "use ::good_lp as g;"),
        // In a module the checker depends on.
        ("semantics/mod.rs", "use crate::exact as e;"),
        ("semantics/order.rs", "use super::super::bound as b;"),
        ("units.rs", "use crate::{heuristic as h};"),
        ("model/mod.rs", "pub use crate::simulate::*;"),
    ];
    for (file, code) in cases {
        let f = checker_findings(&planted(file, code));
        assert!(!f.is_empty(), "not caught: `{code}` in src/{file}");
    }
}

#[test]
fn aliases_that_hide_the_name_are_caught_by_the_closure() {
    // No forbidden name in the checker's files: the dependency is two hops away
    // (through a `report` module planted in the copy, which names `exact`).
    let mut tree = planted("model/mod.rs", "use crate::report as r;");
    tree.insert(
        "report/mod.rs".into(),
        "pub use crate::exact::Method;\n".into(),
    );
    let f = checker_findings(&tree);
    assert!(
        f.iter().any(|x| x.contains("forbidden module `exact`")),
        "{f:?}"
    );
    // The crate root as an alias, then a module the checker may not reach.
    let mut tree = planted(
        "check/violation.rs",
        "use super::super as root; use root::report as r;",
    );
    tree.insert(
        "report/mod.rs".into(),
        "pub use crate::exact::Method;\n".into(),
    );
    let f = checker_findings(&tree);
    assert!(f.iter().any(|x| x.contains("forbidden module")), "{f:?}");
    // A glob of the crate root, and a root-level re-export.
    let f = checker_findings(&planted("check/mod.rs", "use crate::*;"));
    assert!(f.iter().any(|x| x.contains("glob import")), "{f:?}");
    let mut tree = planted("check/mod.rs", "use crate::Solver as S;");
    tree.get_mut("lib.rs")
        .unwrap()
        .push_str("\npub use exact::Method as Solver;\n");
    let f = checker_findings(&tree);
    assert!(
        f.iter().any(|x| x.contains("forbidden module `exact`")),
        "{f:?}"
    );
}

#[test]
fn the_scan_skips_comments_strings_and_longer_names() {
    let benign = "// use crate::exact as e;\n/* crate::exact /* nested */ bound */\n\
        const S: &str = \"crate::exact\"; const R: &str = r#\"use crate::heuristic\"#;\n\
        const C: char = '\"'; fn g<'a>(x: &'a str) -> &'a str { x }\n\
        fn h() { let exactly = 1; let bound_x = exactly; let _ = bound_x; }\n";
    let f = checker_findings(&planted("check/mod.rs", benign));
    assert!(f.is_empty(), "{f:?}");
    // `super` inside an inline module is one level deeper.
    let f = checker_findings(&planted("check/mod.rs", "mod inner { use super::*; }"));
    assert!(f.is_empty(), "{f:?}");
    let f = checker_findings(&planted(
        "check/mod.rs",
        "mod inner { use super::super::exact as e; }",
    ));
    assert!(f.iter().any(|x| x.contains("`exact`")), "{f:?}");
    // The recheck may not reach the checker or the rules, however named.
    let f = scan(
        &planted("recheck/mod.rs", "use crate::{check as c};"),
        "recheck",
        RECHECK_MODULES,
        RECHECK_NAMES,
    )
    .1;
    assert!(f.iter().any(|x| x.contains("`check`")), "{f:?}");
}

/// Crates the core may depend on directly; anything else needs a reason here.
const CORE_ALLOWED_DEPS: &[&str] = &["serde", "serde_json", "thiserror", "sha2"];
/// Crates that must not be reachable from the core, directly or transitively.
const CORE_FORBIDDEN_CRATES: &[&str] = &[
    "good_lp",
    "highs",
    "highs-sys",
    "z3",
    "z3-sys",
    "offcert",
    "rusqlite",
    "plotters",
];

/// The names in the `[dependencies]`-like tables of a manifest (any table whose
/// header mentions `dependencies`, including target-specific and dev ones).
fn manifest_deps(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_deps = l.contains("dependencies");
            // `[dependencies.foo]`
            if let Some(rest) = l
                .trim_matches(|c| c == '[' || c == ']')
                .split_once("dependencies.")
                .map(|(_, r)| r)
            {
                out.push(rest.trim_matches('"').to_string());
                in_deps = false;
            }
            continue;
        }
        if in_deps && !l.is_empty() && !l.starts_with('#') {
            if let Some((name, _)) = l.split_once('=') {
                out.push(name.trim().trim_matches('"').to_string());
            }
        }
    }
    out
}

#[test]
fn the_core_manifest_lists_no_solver_heuristic_or_offcert_dependency() {
    let text = std::fs::read_to_string(core_dir().join("Cargo.toml")).unwrap();
    let deps = manifest_deps(&text);
    assert!(
        deps.contains(&"serde".to_string()),
        "manifest not parsed: {deps:?}"
    );
    for d in &deps {
        assert!(
            CORE_ALLOWED_DEPS.contains(&d.as_str()),
            "offcert-core depends on `{d}`, which is not on the allow list; the core may not \
             depend on a solver, a heuristic or the offcert crate"
        );
    }
    // The scan of the manifest itself is not fooled by a planted dependency.
    for planted in [
        "highs = \"2\"",
        "good_lp = { version = \"1\" }",
        "offcert = { path = \"../..\" }",
    ] {
        let t = format!("{text}\n{planted}\n");
        assert!(manifest_deps(&t)
            .iter()
            .any(|d| !CORE_ALLOWED_DEPS.contains(&d.as_str())));
    }
    let t = format!("{text}\n[target.'cfg(unix)'.dependencies.z3]\nversion = \"0.12\"\n");
    assert!(manifest_deps(&t).contains(&"z3".to_string()));
}

/// The host's target triple, from `rustc -vV` (the compiler Cargo uses).
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = std::process::Command::new(rustc)
        .arg("-vV")
        .output()
        .expect("run rustc -vV");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .trim()
        .to_string()
}

/// `cargo metadata`'s resolved graph: no forbidden crate is reachable from
/// offcert-core through its normal or build dependencies.
///
/// Filtered to the host platform: without `--filter-platform`, `cargo
/// metadata` wants every platform's crates (Windows-only ones such as
/// `anstyle-wincon`), which a build on Linux never downloads, so `--offline`
/// failed on a cold Cargo cache (issue 21).
#[test]
fn cargo_resolves_no_solver_crate_under_the_core() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &host_triple(), "--manifest-path"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let nodes = meta["resolve"]["nodes"].as_array().expect("resolve graph");
    let name_of = |id: &str| -> String {
        meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == id)
            .map(|p| p["name"].as_str().unwrap().to_string())
            .unwrap_or_default()
    };
    let core = nodes
        .iter()
        .find(|n| name_of(n["id"].as_str().unwrap()) == "offcert-core")
        .expect("offcert-core in the workspace")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut seen = BTreeSet::new();
    let mut queue = VecDeque::from([core]);
    while let Some(id) = queue.pop_front() {
        if !seen.insert(id.clone()) {
            continue;
        }
        let node = nodes.iter().find(|n| n["id"] == id.as_str()).unwrap();
        for dep in node["deps"].as_array().unwrap() {
            let normal = dep["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].is_null() || k["kind"] == "build");
            if normal {
                queue.push_back(dep["pkg"].as_str().unwrap().to_string());
            }
        }
    }
    let names: BTreeSet<String> = seen.iter().map(|id| name_of(id)).collect();
    assert!(
        names.contains("sha2") && names.contains("serde"),
        "{names:?}"
    );
    for f in CORE_FORBIDDEN_CRATES {
        assert!(
            !names.contains(*f),
            "`{f}` is reachable from offcert-core: {names:?}"
        );
    }
}

/// The `offcert` crate's sources (`src/`), for its layering rules.
fn offcert_tree() -> Tree {
    let mut t = Tree::new();
    load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        "",
        &mut t,
    );
    assert!(t.contains_key("lib.rs") && t.contains_key("heuristic/mod.rs"));
    t
}

/// The layers of ARCHITECTURE.md: each top-level module of the `offcert` crate
/// and the modules its whole dependency closure may not reach (the core crate's
/// modules are outside this tree; Cargo keeps the core free of all of these).
/// Each row: the layer, then what it must not reach, space-separated.
const LAYERS: &[(&str, &str)] = &[
    (
        "family",
        "io lp simulate bound exact heuristic trace report cli",
    ),
    (
        "lp",
        "family io simulate bound exact heuristic trace report cli",
    ),
    ("io", "lp simulate bound exact heuristic trace report cli"),
    ("simulate", "lp bound exact heuristic trace report cli"),
    ("bound", "simulate exact heuristic trace report cli"),
    ("exact", "bound heuristic trace report cli"),
    ("heuristic", "exact trace report cli"),
    ("trace", "lp bound exact heuristic report cli"),
    ("report", "cli"),
];

/// What `layer` must not reach, from [`LAYERS`].
fn forbidden(layer: &str) -> Vec<&'static str> {
    let (_, f) = LAYERS.iter().find(|(l, _)| *l == layer).expect("a layer");
    f.split_whitespace().collect()
}

#[test]
fn each_layer_of_the_offcert_crate_imports_only_the_layers_below_it() {
    let tree = offcert_tree();
    let mut all = Vec::new();
    for (layer, _) in LAYERS {
        let (closure, findings) = scan(&tree, layer, &forbidden(layer), &[]);
        assert!(closure.contains(*layer), "{layer} not scanned");
        all.extend(findings.into_iter().map(|f| format!("{layer}: {f}")));
    }
    assert!(all.is_empty(), "layering broken:\n{}", all.join("\n"));
    // The closure is really followed: the reports reach every layer but the CLI.
    let (closure, _) = scan(&tree, "report", &[], &[]);
    for m in [
        "bound",
        "exact",
        "heuristic",
        "trace",
        "family",
        "lp",
        "simulate",
    ] {
        assert!(
            closure.contains(m),
            "{m} not reached from report: {closure:?}"
        );
    }
    // Every top-level module has a rule (cli may import everything).
    let top: BTreeSet<String> = tree
        .keys()
        .map(|k| {
            k.split('/')
                .next()
                .unwrap()
                .trim_end_matches(".rs")
                .to_string()
        })
        .filter(|m| m != "lib" && m != "main" && m != "cli")
        .collect();
    let ruled: BTreeSet<String> = LAYERS.iter().map(|(l, _)| l.to_string()).collect();
    assert_eq!(top, ruled, "a module without a layering rule");
}

#[test]
fn a_planted_upward_import_breaks_the_layering() {
    let mut tree = offcert_tree();
    tree.get_mut("bound/mod.rs")
        .unwrap()
        .push_str("\nuse crate::report as r;\n");
    let (_, f) = scan(&tree, "bound", &forbidden("bound"), &[]);
    assert!(f.iter().any(|x| x.contains("`report`")), "{f:?}");
    // Two hops: heuristic -> a planted bound import of exact.
    let mut tree = offcert_tree();
    tree.get_mut("bound/mod.rs")
        .unwrap()
        .push_str("\nfn f() { let _ = crate::exact::Method::Milp; }\n");
    let (_, f) = scan(&tree, "heuristic", &forbidden("heuristic"), &[]);
    assert!(f.iter().any(|x| x.contains("`exact`")), "{f:?}");
}

/// Functions that may stay over [`MAX_FN_LINES`], with the reason.
const LONG_FUNCTIONS: &[(&str, &str)] = &[(
    "family/remat_import.rs::import_rockmate",
    "being rewritten with the remat_chain importer (issue 11)",
)];

/// The house rule: functions of about 120 lines at most.
const MAX_FN_LINES: usize = 120;

/// Every `fn` of both crates' sources, from its signature to the `}` at its
/// own indentation (rustfmt's layout), as (file::name, lines).
fn function_lengths(tree: &Tree) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (file, text) in tree {
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let body = line.trim_start();
            let indent = line.len() - body.len();
            let sig = [
                "pub ",
                "pub(crate) ",
                "pub(super) ",
                "const ",
                "async ",
                "unsafe ",
            ]
            .iter()
            .fold(body, |b, p| b.strip_prefix(p).unwrap_or(b));
            let Some(rest) = sig.strip_prefix("fn ") else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // A declaration without a body (trait method) ends with `;`.
            let Some(open) = (i..lines.len())
                .find(|&j| lines[j].contains('{') || lines[j].trim_end().ends_with(';'))
            else {
                continue;
            };
            if !lines[open].contains('{') {
                continue;
            }
            let close = (open + 1..lines.len()).find(|&k| {
                let l = lines[k];
                l.len() > indent && l[..indent].trim().is_empty() && l[indent..].starts_with('}')
            });
            if let Some(close) = close {
                out.push((format!("{file}::{name}"), close - i + 1));
            }
        }
    }
    out
}

#[test]
fn no_function_is_longer_than_about_120_lines() {
    let mut tree = offcert_tree();
    tree.extend(
        src_tree()
            .into_iter()
            .map(|(k, v)| (format!("core/{k}"), v)),
    );
    let lengths = function_lengths(&tree);
    assert!(
        lengths
            .iter()
            .any(|(f, _)| f == "check/mod.rs::check" || f == "core/check/mod.rs::check"),
        "the scan finds functions"
    );
    let long: Vec<String> = lengths
        .iter()
        .filter(|(f, n)| *n > MAX_FN_LINES && !LONG_FUNCTIONS.iter().any(|(e, _)| e == f))
        .map(|(f, n)| format!("{f}: {n} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "split these by concern:\n{}",
        long.join("\n")
    );
    // A planted long function is caught.
    let planted = format!("fn planted() {{\n{}}}\n", "    let _ = 1;\n".repeat(130));
    let t: Tree = [("x.rs".to_string(), planted)].into();
    assert_eq!(
        function_lengths(&t),
        vec![("x.rs::planted".to_string(), 132)]
    );
}
