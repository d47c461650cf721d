//! Why is `pofo` worse than `rotor` from 50 % up (issue 23, item 2)? One
//! measurement per hypothesis, on the bundled ResNet-101 and ResNet-152 chains
//! at `--memory 0%:100%:5`, every makespan checked:
//!
//! - **slots**: rotor with the appendix's 50 slots, pofo with more slots
//!   (100; 200 with `OFFCERT_POFO_200=1`: the programme's state is
//!   (i, A, Δ_F, Δ_B), so its time grows with the cube of the slots; 500 is
//!   out of reach on the 2-core machine);
//! - **the printed formulas**: pofo "corrected" counts no δ_L in the forward
//!   phase and lets a run reach the loss (`FAMILIES.md` §2.2.3; with both,
//!   and no offloading, the programme is rotor's DP);
//! - **ε / fluid model**: pofo's own model value beside its checked makespan,
//!   and the same programme with offloading off (the persistent DP, β = 0);
//! - **realisation**: pofo's sequence with every offload dropped (what the
//!   offloads buy or cost once realised under whole-tensor transfers);
//! - **after-end rule**: pofo's sequence realised and checked under
//!   `after_start` (the relaxation).
//!
//! Run: `cargo bench --bench pofo_hypotheses` (release profile);
//! `OFFCERT_GAP_FILTER` as for `gap_certified` (default: resnet101, resnet152).

use offcert::check::{check, CheckOutcome};
use offcert::family::remat_chain::RematChain;
use offcert::family::InstanceFile;
use offcert::heuristic::remat::pofo::Pofo;
use offcert::heuristic::remat::rotor::Rotor;
use offcert::heuristic::{run, Heuristic};
use offcert::model::ReleaseRule;
use offcert::report::{self, BudgetSpec};
use offcert::simulate::{asap_sequence, SeqPlan};
use std::time::Instant;

fn checked(file: &InstanceFile, plan: &SeqPlan) -> String {
    let inst = file.compile().expect("compiles");
    match asap_sequence(&inst, plan) {
        Ok(s) => match check(&inst, &s) {
            CheckOutcome::Valid(k) => k.makespan().to_string(),
            CheckOutcome::Invalid(_) => "INVALID".into(),
        },
        Err(_) => "-".into(),
    }
}

fn heur(h: &dyn Heuristic, file: &InstanceFile) -> String {
    let inst = file.compile().expect("compiles");
    match run(h, file, &inst) {
        Ok(r) => r.checked.makespan().to_string(),
        Err(_) => "-".into(),
    }
}

fn chain_of(f: &InstanceFile) -> RematChain {
    match f {
        InstanceFile::RematChain(c) => c.clone(),
        _ => panic!("not a remat chain"),
    }
}

fn pofo_cells(
    c: &RematChain,
    slots: u64,
    corrected: bool,
) -> (String, String, String, String, f64) {
    let t = Instant::now();
    let p = Pofo {
        slots,
        run_to_loss: corrected,
        forward_delta: !corrected,
        ..Pofo::default()
    };
    let plan = p.solve_afresh(c);
    let secs = t.elapsed().as_secs_f64();
    let Some(plan) = plan else {
        return ("-".into(), "-".into(), "-".into(), "-".into(), secs);
    };
    let file = InstanceFile::RematChain(c.clone());
    let full = checked(&file, &plan.sequence.plan);
    let mut bare = plan.sequence.plan.clone();
    let n_off = bare.offloads.len();
    bare.offloads.clear();
    let no_off = checked(&file, &bare);
    let mut rel = c.clone();
    rel.release = ReleaseRule::AfterStart;
    let after_start = checked(&InstanceFile::RematChain(rel), &plan.sequence.plan);
    (
        format!("{:.0} / {full} ({n_off} off.)", plan.model_value),
        no_off,
        after_start,
        full,
        secs,
    )
}

fn main() {
    let filter: Vec<String> = std::env::var("OFFCERT_GAP_FILTER")
        .ok()
        .filter(|v| !v.is_empty())
        .map_or(vec!["resnet101".into(), "resnet152-224".into()], |f| {
            f.split(',').map(str::to_string).collect()
        });
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/paper/remat");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            filter.iter().any(|f| n.contains(f.as_str()))
        })
        .collect();
    files.sort();
    let spec = BudgetSpec::parse("0%:100%:5").unwrap();
    let with_200 = std::env::var("OFFCERT_POFO_200").is_ok_and(|v| v == "1");
    println!("| chain | memory | rotor 500 | rotor 50 | pofo 50 model / checked | pofo 50 no offloads | pofo 50 after_start | persistent 50 (model) | pofo 50 corrected | pofo 100 | pofo 100 corrected | pofo 200 |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for path in files {
        let (file, _) = offcert::io::load_instance(&path).unwrap();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        for (i, b) in spec.budgets(&file).unwrap().into_iter().enumerate() {
            let f = report::with_budget(&file, b);
            let c = chain_of(&f);
            let r500 = heur(&Rotor::default(), &f);
            let r50 = heur(&Rotor { slots: 50 }, &f);
            let (p50, no_off, after_start, _, t50) = pofo_cells(&c, 50, false);
            let pers = Pofo::persistent(50)
                .solve_afresh(&c)
                .map_or("-".into(), |p| format!("{:.0}", p.model_value));
            let (c50, _, _, _, tc50) = pofo_cells(&c, 50, true);
            let (p100, _, _, _, t100) = pofo_cells(&c, 100, false);
            let (c100, _, _, _, tc100) = pofo_cells(&c, 100, true);
            let p200 = if with_200 {
                let (p, _, _, _, t) = pofo_cells(&c, 200, false);
                format!("{p} [{t:.1} s]")
            } else {
                "not run".into()
            };
            println!(
                "| {name} | {} % | {r500} | {r50} | {p50} [{t50:.1} s] | {no_off} | {after_start} | {pers} | {c50} [{tc50:.1} s] | {p100} [{t100:.1} s] | {c100} [{tc100:.1} s] | {p200} |",
                i * 25
            );
        }
    }
}
