//! `offcert bound|heuristic|gap|sweep` (issue 4): thin handlers over
//! [`crate::bound`], [`crate::heuristic`] and [`crate::report`].

use crate::bound;
use crate::family::InstanceFile;
use crate::heuristic;
use crate::io;
use crate::report::{self, table, BudgetSpec, GapEntry, GapOptions};
use crate::schedule::ScheduleFile;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct BoundArgs {
    /// Instance file (JSON, tagged by `family`).
    pub instance: PathBuf,
    /// GPU memory to use instead of the file's (bytes, K/M/G suffixes, `min`, `peak` or `P%`).
    #[arg(long)]
    pub memory: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub release: super::ReleaseOpt,
}

#[derive(clap::Args, Debug)]
pub struct HeuristicArgs {
    /// Instance file (JSON, tagged by `family`).
    pub instance: PathBuf,
    /// Heuristic(s) to run (default: every one that applies). Repeatable.
    #[arg(long = "name", short = 'n')]
    pub names: Vec<String>,
    /// GPU memory to use instead of the file's (bytes, K/M/G suffixes, `min`, `peak` or `P%`).
    #[arg(long)]
    pub memory: Option<String>,
    /// Write the (checked) schedule to this file; needs exactly one heuristic.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub release: super::ReleaseOpt,
}

#[derive(clap::Args, Debug)]
pub struct GapArgs {
    /// Instance files or folders of them (every `*.json` that is not a
    /// `*.schedule.json`). Default: instances/paper/activation,
    /// instances/paper/weight and instances/examples, where present.
    pub instances: Vec<PathBuf>,
    /// Memory budgets: FROM:TO:STEPS or one value; FROM/TO in bytes (K/M/G/Ki/Mi/Gi
    /// suffixes), `min`, `peak` or `P%` (0% = least feasible, 100% = M_peak).
    /// Default: each file's own budget.
    #[arg(long)]
    pub memory: Option<String>,
    /// Also compute the exact optimum for every instance (default: only for
    /// instances with at most --exact-max-ops ops).
    #[arg(long)]
    pub exact: bool,
    /// Largest instance (in ops) whose optimum is computed without --exact.
    #[arg(long, default_value_t = 8)]
    pub exact_max_ops: usize,
    /// Time limit per exact solve, in seconds.
    #[arg(long, default_value_t = 20)]
    pub time_limit: u64,
    /// Only these heuristics (repeatable).
    #[arg(long = "heuristic")]
    pub heuristics: Vec<String>,
    /// Print CSV instead of the text table.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Print JSON instead of the text table.
    #[arg(long)]
    pub json: bool,
    /// Draw ratio to the best bound against memory, per heuristic, into this SVG.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Never show the progress bar.
    #[arg(long)]
    pub quiet: bool,
    #[command(flatten)]
    pub release: super::ReleaseOpt,
}

#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// Instance file (JSON, tagged by `family`).
    pub instance: PathBuf,
    /// FROM:TO:STEPS; FROM/TO in bytes (K/M/G suffixes), `min`, `peak` or `P%`.
    #[arg(long)]
    pub memory: String,
    /// Write one instance file per budget into this folder (default: print the budgets).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn load(path: &Path) -> anyhow::Result<(InstanceFile, crate::model::Instance)> {
    Ok(io::load_instance(path)?)
}

/// The file at one budget given by `spec` (a single value), recompiled.
fn at_budget(
    path: &Path,
    file: InstanceFile,
    spec: Option<&str>,
) -> anyhow::Result<(InstanceFile, crate::model::Instance)> {
    let Some(spec) = spec else {
        let inst = file.compile().with_context(|| path.display().to_string())?;
        return Ok((file, inst));
    };
    let b = BudgetSpec::parse(spec)?.budgets(&file)?;
    let f = report::with_budget(&file, b[0]);
    let inst = f.compile().with_context(|| path.display().to_string())?;
    Ok((f, inst))
}

pub fn run_bound(a: BoundArgs) -> anyhow::Result<ExitCode> {
    let (mut file, _) = load(&a.instance)?;
    a.release.apply_file(&mut file);
    let (file, inst) = at_budget(&a.instance, file, a.memory.as_deref())?;
    let results = bound::evaluate(&file, &inst);
    if a.json {
        let v: Vec<serde_json::Value> = results
            .iter()
            .map(|(name, r)| match r {
                Ok(b) => serde_json::json!({
                    "source": b.source, "strength": b.strength.words(),
                    "value": b.value.to_string(), "ceil": b.ceil_ticks(),
                }),
                Err(e) => serde_json::json!({"source": name, "error": e.to_string()}),
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "instance": a.instance.display().to_string(),
                "family": file.family(),
                "release": inst.release.as_str(),
                "memory": report::budget::own_budget(&file),
                "bounds": v,
            }))?
        );
    } else {
        println!(
            "instance {} ({}), memory {} B, release rule {}",
            a.instance.display(),
            file.family(),
            report::budget::own_budget(&file),
            inst.release
        );
        if results.is_empty() {
            println!("no bound applies to family {}", file.family());
        }
        for (name, r) in &results {
            match r {
                Ok(b) => println!(
                    "  {:<18} {:>16} ticks  {}  (exact {})",
                    b.source,
                    b.display(),
                    b.strength.words(),
                    b.value
                ),
                Err(e) => println!("  {name:<18} {e}"),
            }
        }
    }
    let infeasible = results
        .iter()
        .any(|(_, r)| matches!(r, Err(bound::BoundError::Infeasible { .. })));
    Ok(if infeasible {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn run_heuristic(a: HeuristicArgs) -> anyhow::Result<ExitCode> {
    let (mut file, _) = load(&a.instance)?;
    a.release.apply_file(&mut file);
    let (file, inst) = at_budget(&a.instance, file, a.memory.as_deref())?;
    let all = heuristic::all();
    let known: Vec<&str> = all.iter().map(|h| h.name()).collect();
    for n in &a.names {
        if !known.contains(&n.as_str()) {
            anyhow::bail!("unknown heuristic `{n}` (known: {})", known.join(", "));
        }
    }
    let chosen: Vec<_> = all
        .iter()
        .filter(|h| h.applies(&file))
        .filter(|h| a.names.is_empty() || a.names.iter().any(|n| n == h.name()))
        .collect();
    if chosen.is_empty() {
        anyhow::bail!("no chosen heuristic applies to family {}", file.family());
    }
    if a.out.is_some() && chosen.len() != 1 {
        anyhow::bail!("--out needs exactly one heuristic (use --name)");
    }
    let mut ok = true;
    let mut out = Vec::new();
    for h in chosen {
        let t = std::time::Instant::now();
        let r = heuristic::run(h.as_ref(), &file, &inst);
        let secs = t.elapsed().as_secs_f64();
        match r {
            Ok(run) => {
                if let Some(path) = &a.out {
                    let sf = ScheduleFile::from_schedule(run.checked.schedule(), &inst);
                    std::fs::write(path, serde_json::to_string_pretty(&sf)? + "\n")
                        .with_context(|| path.display().to_string())?;
                }
                out.push(serde_json::json!({
                    "heuristic": run.name, "verdict": "valid",
                    "release": run.checked.report().release.as_str(),
                    "makespan": run.checked.report().makespan.0,
                    "peak_memory": run.checked.report().peak_memory.0,
                    "compute_idle": run.checked.report().compute_idle.0,
                    "schedule_sha256": run.checked.report().schedule_sha256,
                    "seconds": secs,
                }));
            }
            Err(e) => {
                if matches!(e, heuristic::HeuristicError::Invalid { .. }) {
                    ok = false;
                }
                out.push(serde_json::json!({
                    "heuristic": h.name(),
                    "verdict": if matches!(e, heuristic::HeuristicError::Invalid { .. }) { "invalid" } else { "no schedule" },
                    "error": e.to_string(), "seconds": secs,
                }));
            }
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "instance {} ({}), memory {} B, release rule {}",
            a.instance.display(),
            file.family(),
            report::budget::own_budget(&file),
            inst.release
        );
        for o in &out {
            match o.get("makespan") {
                Some(m) => println!(
                    "  {:<12} valid (checked)  makespan {:>12}  peak memory {} B  ({:.3} s)",
                    o["heuristic"].as_str().unwrap_or(""),
                    m,
                    o["peak_memory"],
                    o["seconds"].as_f64().unwrap_or(0.0)
                ),
                None => println!(
                    "  {:<12} {}",
                    o["heuristic"].as_str().unwrap_or(""),
                    o["error"].as_str().unwrap_or("")
                ),
            }
        }
    }
    Ok(super::verdict_code(ok))
}

/// Expand folders into their instance files, sorted.
fn expand(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let defaults = [
        "instances/paper/activation",
        "instances/paper/weight",
        "instances/examples",
    ];
    let given: Vec<PathBuf> = if paths.is_empty() {
        defaults
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.is_dir())
            .collect()
    } else {
        paths.to_vec()
    };
    let mut out = Vec::new();
    for p in given {
        if p.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(&p)
                .with_context(|| p.display().to_string())?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    let n = f.to_string_lossy();
                    n.ends_with(".json") && !n.ends_with(".schedule.json")
                })
                .collect();
            v.sort();
            out.extend(v);
        } else {
            out.push(p);
        }
    }
    if out.is_empty() {
        anyhow::bail!("no instance files given (and no default folder found)");
    }
    Ok(out)
}

/// The exact optimum via the exact solvers' cross-check, when this build has them.
fn exact_optimum(limit: std::time::Duration) -> Box<report::OptimumFn<'static>> {
    Box::new(move |inst| crate::report::exact::optimum(inst, limit))
}

pub fn run_gap(a: GapArgs) -> anyhow::Result<ExitCode> {
    let files = expand(&a.instances)?;
    let spec = a.memory.as_deref().map(BudgetSpec::parse).transpose()?;
    // Load everything first: bad input fails before any long computation.
    let mut jobs: Vec<(String, InstanceFile, Vec<u64>)> = Vec::new();
    for f in &files {
        let (mut file, _) = load(f)?;
        a.release.apply_file(&mut file);
        let budgets = match &spec {
            Some(s) => s.budgets(&file).with_context(|| f.display().to_string())?,
            None => vec![report::budget::own_budget(&file)],
        };
        jobs.push((f.display().to_string(), file, budgets));
    }
    let total: u64 = jobs.iter().map(|j| j.2.len() as u64).sum();
    let bar = if a.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:30} {pos}/{len} budgets  {elapsed_precise}  {msg}",
            )
            .expect("valid template"),
        );
        b
    };
    let optimum = exact_optimum(std::time::Duration::from_secs(a.time_limit));
    let max_ops = a.exact_max_ops;
    let force = a.exact;
    let exact_for = move |inst: &crate::model::Instance| force || inst.ops.len() <= max_ops;
    let opts = GapOptions {
        optimum: Some(optimum.as_ref()),
        exact_for: &exact_for,
        only: a.heuristics.clone(),
    };
    let mut entries: Vec<GapEntry> = Vec::new();
    for (label, file, budgets) in &jobs {
        for &b in budgets {
            let name = Path::new(label)
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            bar.set_message(format!("{name} @ {}", table::human_bytes(b)));
            let f = report::with_budget(file, b);
            let inst = f
                .compile()
                .with_context(|| format!("{label} at memory {b} B"))?;
            entries.push(report::gap(label, &f, &inst, &opts));
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    if a.json {
        println!("{}", table::json(&entries));
    } else if a.csv {
        print!("{}", table::csv(&entries));
    } else {
        print!("{}", table::text(&entries));
    }
    if let Some(p) = &a.plot {
        report::plot::svg(&entries, p)?;
        if !a.json && !a.csv {
            println!("plot written to {}", p.display());
        }
    }
    let problems: usize = entries.iter().map(|e| e.problems.len()).sum();
    if problems > 0 {
        eprintln!("offcert gap: {problems} problem(s) found (bound above a checked makespan, or an invalid schedule)");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run_sweep(a: SweepArgs) -> anyhow::Result<ExitCode> {
    let (file, _) = load(&a.instance)?;
    let spec = BudgetSpec::parse(&a.memory)?;
    let budgets = spec
        .budgets(&file)
        .with_context(|| a.instance.display().to_string())?;
    let stem = a
        .instance
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "instance".into());
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    println!("{:>16} {:>10}  file", "memory (B)", "percent");
    for (k, b) in budgets.iter().enumerate() {
        let f = report::with_budget(&file, *b);
        f.compile()
            .with_context(|| format!("{} at memory {b} B", a.instance.display()))?;
        let pct = report::budget::position(&file, *b)
            .map(|p| format!("{p:.1}%"))
            .unwrap_or_default();
        let written = match &a.out {
            Some(dir) => {
                let path = dir.join(format!("{stem}.mem{k:03}.json"));
                let mut v = serde_json::to_value(&f)?;
                if let Some(o) = v.as_object_mut() {
                    let note = o
                        .get("note")
                        .and_then(|n| n.as_str())
                        .map(|s| format!("{s} "))
                        .unwrap_or_default();
                    o.insert(
                        "note".into(),
                        serde_json::Value::String(format!(
                            "{note}[offcert sweep {}: budget {} of {}]",
                            spec.text,
                            k + 1,
                            budgets.len()
                        )),
                    );
                }
                std::fs::write(&path, serde_json::to_string_pretty(&v)? + "\n")
                    .with_context(|| path.display().to_string())?;
                path.display().to_string()
            }
            None => String::new(),
        };
        println!("{b:>16} {pct:>10}  {written}");
    }
    Ok(ExitCode::SUCCESS)
}
