//! What Cargo cannot say about offcert's layers.
//!
//! Cargo enforces the trusted crates' layering (ARCHITECTURE.md): each crate of
//! `crates/` can name only the crates its manifest lists, so `offcert-model`
//! names none of the others, `offcert-recheck` and `offcert-frontend` name only
//! the model, and `offcert-core` (the checker) names the model and no re-check,
//! front-end, solver or heuristic. What Cargo does not check is that those
//! manifests stay so; the tests here assert it on the graph `cargo metadata`
//! resolves, and that every crate forbids `unsafe` code.
//!
//! Inside the `offcert` crate the layers are modules, which Cargo does not
//! separate. Their rule (ARCHITECTURE.md's layer table) is asserted by a token
//! scan of `src/`, with comments and string and char literals blanked, that sees
//! through aliases (`use crate::exact as e`, `use crate::{exact as x}`,
//! `super::super::exact`, `extern crate self as me`, `r#exact`): it resolves
//! every path that reaches the crate root (`crate::`, `$crate::`, `super::`
//! chains, brace groups, aliases of the root) and follows the top-level modules
//! it names, from the starting module to its whole dependency closure; a
//! forbidden module in the closure is a finding, and so is a glob import of the
//! crate root, a `#[path = ..]` attribute and `include!`; a path to a root-level
//! item (a re-export in `lib.rs`) makes the scan follow `lib.rs`'s own paths.
//! Each trick is planted in an in-memory copy of the sources and asserted caught.
//!
//! Last, the house rule on function size, over every crate: no function longer
//! than about 120 lines, except the listed ones, and no stale exemption.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// Sources by path relative to a `src/` folder (`bound/mod.rs`, `lib.rs`).
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

/// Findings for one file: `#[path]`, `include!`; and the root references of its
/// paths.
fn scan_file(rel: &str, text: &str, findings: &mut Vec<String>) -> Vec<(String, usize)> {
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
    for (k, (tok, line)) in t.iter().enumerate() {
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
fn scan(tree: &Tree, start: &str, forbidden_modules: &[&str]) -> (BTreeSet<String>, Vec<String>) {
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
            for (r, line) in scan_file(rel, text, &mut findings) {
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

/// The repository root (the `offcert` crate's folder, the workspace root).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The crates of `crates/`, by package name (`offcert-core`), with their folders.
fn trusted_crates() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .map(|p| (p.file_name().unwrap().to_string_lossy().to_string(), p))
        .collect();
    out.sort();
    out
}

/// Crates that must not be reachable from any crate of `crates/`, directly or
/// transitively, nor from the checker's own tests (its dev-dependencies).
const FORBIDDEN_CRATES: &[&str] = &[
    "good_lp",
    "highs",
    "highs-sys",
    "z3",
    "z3-sys",
    "offcert",
    "rusqlite",
    "libsqlite3-sys",
    "plotters",
];

/// The offcert crates each crate of `crates/` may reach through its normal and
/// build dependencies (ARCHITECTURE.md): the re-check and the front-ends the
/// model alone, the checker the model but not the re-check (the second route to
/// the same verdict) nor the front-ends.
const MAY_REACH: &[(&str, &[&str])] = &[
    ("offcert-model", &[]),
    ("offcert-recheck", &["offcert-model"]),
    ("offcert-frontend", &["offcert-model"]),
    ("offcert-core", &["offcert-model"]),
];

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

/// `cargo metadata`'s resolved graph, filtered to the host platform: package id
/// to (name, [(dependency id, its kinds: "normal", "build" or "dev")]).
///
/// Filtered to the host platform: without `--filter-platform`, `cargo
/// metadata` wants every platform's crates (Windows-only ones such as
/// `anstyle-wincon`), which a build on Linux never downloads, so `--offline`
/// failed on a cold Cargo cache (issue 21).
type Graph = BTreeMap<String, (String, Vec<(String, Vec<String>)>)>;

fn resolved_graph() -> Graph {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &host_triple(), "--manifest-path"])
        .arg(root().join("Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let mut graph = Graph::new();
    for node in meta["resolve"]["nodes"].as_array().expect("resolve graph") {
        let id = node["id"].as_str().unwrap();
        let deps = node["deps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let kinds = d["dep_kinds"].as_array().unwrap().iter();
                let kinds = kinds.map(|k| k["kind"].as_str().unwrap_or("normal").to_string());
                (d["pkg"].as_str().unwrap().to_string(), kinds.collect())
            })
            .collect();
        graph.insert(id.to_string(), (names[id].to_string(), deps));
    }
    graph
}

/// The names of the packages reachable from `name`: through its dependencies of
/// the kinds `first` (its own manifest), then through normal and build
/// dependencies (what a build of those links).
fn reachable(graph: &Graph, name: &str, first: &[&str]) -> BTreeSet<String> {
    let start = graph
        .iter()
        .find(|(_, (n, _))| n == name)
        .unwrap_or_else(|| panic!("{name} not in the workspace"))
        .0;
    let follows = |kinds: &[String], k: &[&str]| kinds.iter().any(|x| k.contains(&x.as_str()));
    let mut queue: VecDeque<String> = graph[start]
        .1
        .iter()
        .filter(|(_, kinds)| follows(kinds, first))
        .map(|(id, _)| id.clone())
        .collect();
    let mut seen = BTreeSet::new();
    while let Some(id) = queue.pop_front() {
        if seen.insert(id.clone()) {
            for (dep, kinds) in &graph[&id].1 {
                if follows(kinds, &["normal", "build"]) {
                    queue.push_back(dep.clone());
                }
            }
        }
    }
    seen.iter().map(|id| graph[id].0.clone()).collect()
}

#[test]
fn no_solver_sqlite_or_offcert_crate_is_reachable_from_the_trusted_crates() {
    let graph = resolved_graph();
    let crates = trusted_crates();
    let listed: BTreeSet<&str> = MAY_REACH.iter().map(|(c, _)| *c).collect();
    let found: BTreeSet<&str> = crates.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(
        listed, found,
        "every crate of crates/ needs a MAY_REACH row"
    );
    for (name, may) in MAY_REACH {
        let names = reachable(&graph, name, &["normal", "build"]);
        for f in FORBIDDEN_CRATES {
            assert!(
                !names.contains(*f),
                "`{f}` is reachable from {name}: {names:?}"
            );
        }
        let ours: BTreeSet<&str> = names
            .iter()
            .map(|n| n.as_str())
            .filter(|n| n.starts_with("offcert"))
            .collect();
        assert_eq!(ours, may.iter().copied().collect(), "{name} reaches");
    }
    // The graph is really walked: the checker links sha2 and serde.
    let core = reachable(&graph, "offcert-core", &["normal", "build"]);
    assert!(core.contains("sha2") && core.contains("serde"), "{core:?}");
}

/// `cargo test -p offcert-core` certifies the checker without a solver: its
/// tests' dependencies (`cargo tree -p offcert-core -e normal,build,dev`) reach
/// the front-ends and the re-check, and no solver, SQLite or plotting crate.
#[test]
fn the_checkers_own_tests_link_no_solver() {
    let graph = resolved_graph();
    let names = reachable(&graph, "offcert-core", &["normal", "build", "dev"]);
    for must in ["offcert-frontend", "offcert-recheck", "quickcheck"] {
        assert!(names.contains(must), "{must} not reached: {names:?}");
    }
    for f in FORBIDDEN_CRATES {
        assert!(
            !names.contains(*f),
            "`{f}` is reachable from offcert-core's tests"
        );
    }
}

/// Every crate root says `#![forbid(unsafe_code)]` (blanked comments and
/// strings, so a commented-out attribute does not count).
#[test]
fn every_crate_forbids_unsafe_code() {
    let mut roots = vec![root().join("src/lib.rs")];
    roots.extend(
        trusted_crates()
            .into_iter()
            .map(|(_, d)| d.join("src/lib.rs")),
    );
    for lib in roots {
        let code = strip(&std::fs::read_to_string(&lib).unwrap());
        let squeezed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
        assert!(
            squeezed.contains("#![forbid(unsafe_code)]"),
            "{} does not forbid unsafe code",
            lib.display()
        );
    }
    let squeezed = strip("// #![forbid(unsafe_code)]\n");
    assert!(!squeezed.contains("forbid"), "comments are blanked");
}

/// The `offcert` crate's sources (`src/`), for its layering rules.
fn offcert_tree() -> Tree {
    let mut t = Tree::new();
    load(&root().join("src"), "", &mut t);
    assert!(t.contains_key("lib.rs") && t.contains_key("heuristic/mod.rs"));
    t
}

/// The layers of ARCHITECTURE.md: each top-level module of the `offcert` crate
/// and the modules its whole dependency closure may not reach (the crates of
/// `crates/`, re-exported as `check`, `model`, `family`, `io`, …, are outside
/// this tree; Cargo keeps them free of all of these). Each row: the layer, then
/// what it must not reach, space-separated.
const LAYERS: &[(&str, &str)] = &[
    (
        "lp",
        "family io simulate bound exact heuristic trace report cli",
    ),
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

/// The findings of `layer`'s rule in `tree`.
fn layer_findings(tree: &Tree, layer: &str) -> Vec<String> {
    scan(tree, layer, &forbidden(layer)).1
}

#[test]
fn each_layer_of_the_offcert_crate_imports_only_the_layers_below_it() {
    let tree = offcert_tree();
    let mut all = Vec::new();
    for (layer, _) in LAYERS {
        let (closure, findings) = scan(&tree, layer, &forbidden(layer));
        assert!(closure.contains(*layer), "{layer} not scanned");
        all.extend(findings.into_iter().map(|f| format!("{layer}: {f}")));
    }
    assert!(all.is_empty(), "layering broken:\n{}", all.join("\n"));
    // The closure is really followed: the reports reach every layer but the CLI.
    let (closure, _) = scan(&tree, "report", &[]);
    for m in ["bound", "exact", "heuristic", "trace", "lp", "simulate"] {
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
    let f = layer_findings(&tree, "bound");
    assert!(f.iter().any(|x| x.contains("`report`")), "{f:?}");
    // Two hops: heuristic -> a planted bound import of exact.
    let mut tree = offcert_tree();
    tree.get_mut("bound/mod.rs")
        .unwrap()
        .push_str("\nfn f() { let _ = crate::exact::Method::Milp; }\n");
    let f = layer_findings(&tree, "heuristic");
    assert!(f.iter().any(|x| x.contains("`exact`")), "{f:?}");
    // A re-exported front-end is still a module `lp` may not reach.
    let mut tree = offcert_tree();
    tree.get_mut("lp/mod.rs")
        .unwrap()
        .push_str("\nuse crate::family::InstanceFile;\n");
    let f = layer_findings(&tree, "lp");
    assert!(f.iter().any(|x| x.contains("`family`")), "{f:?}");
}

/// A copy of the `offcert` crate's `src/` with `code` appended to one file.
fn planted(file: &str, code: &str) -> Tree {
    let mut tree = offcert_tree();
    let text = tree
        .get_mut(file)
        .unwrap_or_else(|| panic!("no src/{file}"));
    text.push('\n');
    text.push_str(code);
    text.push('\n');
    tree
}

#[test]
fn planted_aliases_are_caught() {
    let cases: &[(&str, &str)] = &[
        ("bound/mod.rs", "use crate::exact as e;"),
        ("bound/mod.rs", "use crate::{lp, exact as x};"),
        (
            "bound/mod.rs",
            "use crate::{lp::{LpError}, heuristic::{self as h}};",
        ),
        (
            "bound/mod.rs",
            "fn f() -> i64 { crate::exact::milp::MAX_HORIZON }",
        ),
        (
            "bound/mod.rs",
            "fn f() -> i64 { crate :: exact :: milp :: MAX_HORIZON }",
        ),
        ("bound/mod.rs", "use crate::r#exact as e;"),
        ("bound/mod.rs", "use super::simulate as s;"),
        ("bound/weight/mod.rs", "use super::super::simulate as s;"),
        ("bound/weight/mod.rs", "use super::{super::exact as e};"),
        (
            "bound/mod.rs",
            "extern crate self as me; use me::heuristic as h;",
        ),
        ("bound/mod.rs", "#[path = \"../exact/mod.rs\"] mod e;"),
        ("bound/mod.rs", "mod e { include!(\"../exact/mod.rs\"); }"),
        // In a module the bounds depend on.
        ("lp/mod.rs", "use crate::exact as e;"),
        ("lp/rational.rs", "use super::super::trace as t;"),
    ];
    for (file, code) in cases {
        let f = layer_findings(&planted(file, code), "bound");
        assert!(!f.is_empty(), "not caught: `{code}` in src/{file}");
    }
}

#[test]
fn aliases_that_hide_the_name_are_caught_by_the_closure() {
    // The crate root as an alias, then a module the bounds may not reach.
    let f = layer_findings(
        &planted(
            "bound/weight/mod.rs",
            "use super::super as root; use root::report as r;",
        ),
        "bound",
    );
    assert!(
        f.iter().any(|x| x.contains("forbidden module `report`")),
        "{f:?}"
    );
    // A glob of the crate root, and a root-level re-export.
    let f = layer_findings(&planted("bound/mod.rs", "use crate::*;"), "bound");
    assert!(f.iter().any(|x| x.contains("glob import")), "{f:?}");
    let mut tree = planted("bound/mod.rs", "use crate::Solver as S;");
    tree.get_mut("lib.rs")
        .unwrap()
        .push_str("\npub use exact::Method as Solver;\n");
    let f = layer_findings(&tree, "bound");
    assert!(
        f.iter().any(|x| x.contains("forbidden module `exact`")),
        "{f:?}"
    );
}

#[test]
fn the_scan_skips_comments_and_strings() {
    let benign = "// use crate::exact as e;\n/* crate::exact /* nested */ bound */\n\
        const S: &str = \"crate::exact\"; const R: &str = r#\"use crate::heuristic\"#;\n\
        const C: char = '\"'; fn g<'a>(x: &'a str) -> &'a str { x }\n";
    let f = layer_findings(&planted("bound/mod.rs", benign), "bound");
    assert!(f.is_empty(), "{f:?}");
    // `super` inside an inline module is one level deeper.
    let f = layer_findings(
        &planted("bound/mod.rs", "mod inner { use super::*; }"),
        "bound",
    );
    assert!(f.is_empty(), "{f:?}");
    let f = layer_findings(
        &planted(
            "bound/mod.rs",
            "mod inner { use super::super::exact as e; }",
        ),
        "bound",
    );
    assert!(f.iter().any(|x| x.contains("`exact`")), "{f:?}");
}

/// Functions that may stay over [`MAX_FN_LINES`] (repository-relative
/// `file::name`), with the reason. An entry whose function is short again, or
/// gone, fails the test: remove it.
const LONG_FUNCTIONS: &[(&str, &str)] = &[];

/// The house rule: functions of about 120 lines at most.
const MAX_FN_LINES: usize = 120;

/// Every `fn` of the sources in `tree`, from its signature to the `}` at its
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

/// Every crate's sources, keyed by repository-relative path (`src/lib.rs`,
/// `crates/offcert-core/src/check/mod.rs`).
fn all_sources() -> Tree {
    let mut tree = Tree::new();
    load(&root().join("src"), "src", &mut tree);
    for (_, dir) in trusted_crates() {
        let rel = dir.strip_prefix(root()).unwrap().join("src");
        load(&dir.join("src"), &rel.to_string_lossy(), &mut tree);
    }
    tree
}

/// What breaks the rule: a function over [`MAX_FN_LINES`] that `exempt` does
/// not list, and an entry of `exempt` whose function is not over it (short
/// again, or gone).
fn size_findings(lengths: &[(String, usize)], exempt: &[(&str, &str)]) -> Vec<String> {
    let listed = |f: &str| exempt.iter().any(|(e, _)| *e == f);
    let mut out: Vec<String> = lengths
        .iter()
        .filter(|(f, n)| *n > MAX_FN_LINES && !listed(f))
        .map(|(f, n)| format!("{f}: {n} lines; split it by concern"))
        .collect();
    for (e, _) in exempt {
        if !lengths.iter().any(|(f, n)| f == e && *n > MAX_FN_LINES) {
            out.push(format!("{e}: a stale exemption (short or gone); remove it"));
        }
    }
    out
}

#[test]
fn no_function_is_longer_than_about_120_lines() {
    let lengths = function_lengths(&all_sources());
    for f in [
        "src/cli/mod.rs::run",
        "crates/offcert-core/src/check/mod.rs::check",
    ] {
        assert!(lengths.iter().any(|(g, _)| g == f), "the scan finds {f}");
    }
    let found = size_findings(&lengths, LONG_FUNCTIONS);
    assert!(found.is_empty(), "{}", found.join("\n"));
    // A planted long function is caught, and so are stale exemptions.
    let planted = format!(
        "fn planted() {{\n{}}}\nfn short() {{\n}}\n",
        "    let _ = 1;\n".repeat(130)
    );
    let t: Tree = [("x.rs".to_string(), planted)].into();
    let lengths = function_lengths(&t);
    assert_eq!(
        lengths,
        vec![
            ("x.rs::planted".to_string(), 132),
            ("x.rs::short".to_string(), 2)
        ]
    );
    assert_eq!(
        size_findings(&lengths, &[("x.rs::planted", "a reason")]),
        Vec::<String>::new()
    );
    assert_eq!(size_findings(&lengths, &[]).len(), 1);
    let stale = size_findings(
        &lengths,
        &[
            ("x.rs::planted", "r"),
            ("x.rs::short", "r"),
            ("x.rs::gone", "r"),
        ],
    );
    assert_eq!(stale.len(), 2, "{stale:?}");
    assert!(
        stale.iter().all(|s| s.contains("stale exemption")),
        "{stale:?}"
    );
}
