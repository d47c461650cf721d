//! The OFFMATE ILP (1)–(23) as printed and corrected: known answers on tiny
//! instances (derived by hand in `proofs/OFFMATE-ILP.md`), the counterexample of
//! each printed error (`instances/offmate/counterexamples/`), status honesty,
//! and the certified bounds.

use offcert::bound::offmate::{build, lp_relaxation, solve_ilp, volume, OffmateIlpError};
use offcert::family::offmate::{IlpMode, Offmate, PlanStatus, StepPlan};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);
const EPS: f64 = 1e-6;

/// An `offmate` family file (the `family` tag dropped until `InstanceFile` has the variant).
fn load(name: &str) -> Offmate {
    load_path(&format!(
        "{}/instances/offmate/counterexamples/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

fn load_path(path: &str) -> Offmate {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let obj = v.as_object_mut().unwrap();
    assert_eq!(obj.remove("family").unwrap(), "offmate");
    let inst: Offmate = serde_json::from_value(v).unwrap();
    inst.validate().unwrap();
    inst
}

fn solve(inst: &Offmate, mode: IlpMode) -> StepPlan {
    let plan = solve_ilp(inst, mode, LIMIT).unwrap();
    assert_eq!(plan.status, PlanStatus::Optimal, "{mode:?}");
    assert_eq!(plan.mode, mode);
    let sum: f64 = plan.time.iter().sum();
    assert!((sum - plan.objective).abs() < EPS, "objective = Σ Time_t");
    plan
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-5 * b.abs().max(1.0)
}

fn both(name: &str, printed: f64, corrected: f64) -> (Offmate, StepPlan, StepPlan) {
    let inst = load(name);
    let p = solve(&inst, IlpMode::AsPrinted);
    let c = solve(&inst, IlpMode::Corrected);
    assert!(
        close(p.objective, printed),
        "{name} printed {}",
        p.objective
    );
    assert!(
        close(c.objective, corrected),
        "{name} corrected {}",
        c.objective
    );
    (inst, p, c)
}

fn infeasible_when_corrected(name: &str, printed: f64) {
    let inst = load(name);
    let p = solve(&inst, IlpMode::AsPrinted);
    assert!(
        close(p.objective, printed),
        "{name} printed {}",
        p.objective
    );
    let c = solve_ilp(&inst, IlpMode::Corrected, LIMIT);
    assert!(
        matches!(
            c,
            Err(OffmateIlpError::Infeasible {
                mode: IlpMode::Corrected
            })
        ),
        "{name}: {c:?}"
    );
}

#[test]
fn every_row_is_named_after_its_equation() {
    let inst = load("eq12-13-race.json");
    for mode in [IlpMode::AsPrinted, IlpMode::Corrected] {
        let ilp = build(&inst, mode);
        assert_eq!(ilp.names.len(), ilp.milp.rows.len());
        for n in &ilp.names {
            assert!(n.starts_with('('), "{n}");
        }
        let has = |p: &str| ilp.names.iter().any(|n| n.starts_with(p));
        for eq in [
            "(1)", "(5)", "(6)", "(7)", "(8)", "(9)", "(10)", "(11)", "(12)", "(13)",
        ] {
            assert!(has(eq), "{mode:?} lacks {eq}");
        }
        for eq in ["(17)", "(18)", "(19b)", "(20)", "(21)", "(22)", "(23)"] {
            assert!(has(eq), "{mode:?} lacks {eq}");
        }
        assert_eq!(has("(7c)"), mode == IlpMode::Corrected);
    }
}

/// One block: nothing can move (w is used in both steps), so the plan is the
/// block plus its GPU update: 10 + 20 + 100/α.
#[test]
fn one_block_known_answers_and_the_alpha_typo_of_20() {
    let (_, p, c) = both("one-block-alpha.json", 40.0, 31.0);
    assert!(close(p.time[1], 30.0) && close(c.time[1], 21.0));
    for plan in [&p, &c] {
        assert_eq!(plan.option, vec![0]);
        assert!(plan.fractions[0]
            .iter()
            .all(|f| close(f.sto, 1.0) && f.opt < EPS));
    }
}

/// (7) off by one: as printed, w (100 B) is "offloaded during" B1 (step 4)
/// without being stored there, so step 4 counts 100 B (the gradient of x_0)
/// where 200 B are resident until the offload ends: M = 100 exceeded by |w|.
#[test]
fn eq7_off_by_one() {
    let (inst, p, c) = both("eq7-off-by-one.json", 710.0, 810.0);
    let f = &p.fractions[0][4];
    assert!(close(f.ofl, 1.0) && f.sto < EPS, "{f:?}");
    let resident = offcert::bound::offmate::ilp::interface_bytes(&inst, 4) + 100;
    assert_eq!(resident, 2 * inst.gpu_memory.0);
    // Corrected: the offload is in B2 (step 3), where w is stored, after the block.
    let g = &c.fractions[0];
    assert!(close(g[3].ofl, 1.0) && close(g[3].sto, 1.0) && g[4].ofl < EPS);
    assert!(close(c.time[3], 300.0));
}

#[test]
fn eq17_option_overhead() {
    infeasible_when_corrected("eq17-overhead.json", 30.0);
}

#[test]
fn eq17_offloaded_activations_until_their_offload_ends() {
    infeasible_when_corrected("eq17-offloaded.json", 200.0);
}

#[test]
fn eq17_gradient_buffer() {
    infeasible_when_corrected("eq17-gradient.json", 40.0);
}

/// (19a) without k: as printed, the states (200 B) leave in B0 (step 3) at a
/// charge of 100 ticks on the GPU stream; the link needs 200.
#[test]
fn eq19a_states_offload_needs_k() {
    let (_, p, c) = both("eq19a-states.json", 601.0, 701.0);
    let f = &p.fractions[0][3];
    assert!(close(f.ofl_o, 1.0), "{f:?}");
    // Time_3 − T_bwd − GPU update = the charged self-offload.
    assert!(close(p.time[3] - 300.0 - 1.0, 100.0));
    assert!(close(c.time[3] - 300.0 - 1.0, 200.0));
}

/// (21)/(22) without activation traffic: as printed, w (100 B) is offloaded
/// in F0 beside the option's 100 B of activations: 200 ticks of d2h in a step
/// of 100.
#[test]
fn eq21_22_activation_traffic() {
    let (inst, p, c) = both("eq21-22-activations.json", 310.0, 410.0);
    let f = &p.fractions[0][0];
    assert!(close(f.ofl, 1.0), "{f:?}");
    let d2h = 100.0 * f.ofl + inst.blocks[0].options[0].offloaded.0 as f64;
    assert!(close(d2h - p.time[0], 100.0));
    let g = &c.fractions[0];
    let corrected_d2h = 100.0 * g[0].ofl + 100.0;
    assert!(corrected_d2h <= c.time[0] + EPS);
}

/// (12)/(13) same-step races: as printed, (13) at g_w forces every CPU update
/// into g_w, beside the gradient's offload; the two run in parallel in the
/// model although the update needs the offloaded gradient.
#[test]
fn eq12_13_same_step_race() {
    let (_, p, c) = both("eq12-13-race.json", 500.0, 550.0);
    let g = 2; // B1
    let f = &p.fractions[0][g];
    assert!(close(f.opt, 1.0) && close(f.ofl, 1.0), "{f:?}");
    // Offload (100) then CPU update (200) in a step of 200.
    assert!(close(p.time[g], 200.0));
    // Corrected: half is updated on the CPU in B0 (step 3), after its
    // gradient's offload in B1; the other half on the GPU in B1.
    let h = &c.fractions[0];
    assert!(h[g].opt < EPS && close(h[3].opt, 0.5) && close(h[g].ofl, 0.5));
    assert!(close(c.time[g], 250.0));
}

/// A run stopped by its time limit is never reported optimal.
#[test]
fn a_time_limited_run_is_not_optimal() {
    let inst = larger_instance(12);
    match solve_ilp(&inst, IlpMode::Corrected, Duration::from_millis(1)) {
        Ok(plan) => assert!(
            matches!(plan.status, PlanStatus::Feasible { gap } if gap >= 0.0),
            "{:?}",
            plan.status
        ),
        Err(OffmateIlpError::NoSolution { .. }) => {}
        Err(e) => panic!("{e}"),
    }
}

/// L blocks of three options (no remat, full remat, offload), one weight and
/// one frozen norm per block, memory for about a third of the model.
fn larger_instance(l: usize) -> Offmate {
    let mut blocks = Vec::new();
    let mut params = Vec::new();
    for i in 0..l {
        let (w, n) = (format!("w{i}"), format!("n{i}"));
        params.push(serde_json::json!({"name": w, "bytes": 1000 + 37 * i, "trainable": true}));
        params.push(serde_json::json!({"name": n, "bytes": 10, "trainable": false}));
        blocks.push(
            serde_json::json!({"name": format!("b{i}"), "out": 50, "params": [w, n],
            "options": [
                {"t_fwd": 100, "t_bwd": 200, "saved": 400, "offloaded": 0},
                {"t_fwd": 100, "t_bwd": 300, "saved": 0, "offloaded": 0},
                {"t_fwd": 120, "t_bwd": 220, "saved": 0, "offloaded": 400}]}),
        );
    }
    let v = serde_json::json!({"name": "larger", "input": 50, "blocks": blocks, "params": params,
        "optimizer": {"states": 2, "gpu_speed": 100, "cpu_speed": 10},
        "cpu_management": 5, "gpu_memory": 1200 * l as u64, "cpu_memory": 1_000_000_000u64,
        "bandwidth": 20});
    let inst: Offmate = serde_json::from_value(v).unwrap();
    inst.validate().unwrap();
    inst
}

/// The paper-model relaxation is at most the ILP, in both modes.
#[test]
fn lp_relaxation_is_below_the_ilp() {
    for name in [
        "one-block-alpha.json",
        "eq7-off-by-one.json",
        "eq12-13-race.json",
    ] {
        let inst = load(name);
        for mode in [IlpMode::AsPrinted, IlpMode::Corrected] {
            let lp = lp_relaxation(&inst, mode, LIMIT).unwrap().unwrap();
            let ilp = solve(&inst, mode).objective;
            assert!(lp <= ilp + 1e-6, "{name} {mode:?}: {lp} > {ilp}");
        }
    }
    let inst = load("eq17-overhead.json");
    assert_eq!(
        lp_relaxation(&inst, IlpMode::Corrected, LIMIT).unwrap(),
        None
    );
}

/// The certified bounds on the one-block instance (hand-derived in the proof).
#[test]
fn certified_bounds_known_answers() {
    use num_rational::BigRational;
    let r = |n: i64| BigRational::from_integer(n.into());
    let inst = load("one-block-alpha.json");
    // GPU 30 + (100 − b)/100 and CPU b/10 never cross on [0, 100]: at b = 100, 30.
    let compute = volume::period_bound(&inst, false);
    assert_eq!(compute, r(30));
    // Memory is ample, so the link adds b/10 ≤ 10 (each direction): no change.
    assert_eq!(volume::period_bound(&inst, true), compute);
    let inst = load("eq7-off-by-one.json");
    // G0 = 3 × 210; frozen w: D = 100 − 100 = 0; no link term.
    assert_eq!(volume::period_bound(&inst, true), r(630));
}

/// The exporter's output format (`scripts/export_offmate.py --sample`, no
/// rockmate needed) is an `offmate` file offcert reads: ms → µs ticks rounded
/// up (95 + 3.2 ms wait = 98200), speeds as exact ratios, S = mem − offload.
#[test]
fn exporter_sample_loads_and_solves() {
    let inst = load_path(&format!(
        "{}/tests/data/offmate_export_sample.json",
        env!("CARGO_MANIFEST_DIR")
    ));
    assert_eq!(inst.l(), 3);
    let cheap = &inst.blocks[1].options[2];
    assert_eq!(cheap.t_fwd.0, 98_200);
    assert_eq!(cheap.t_bwd.0, 210_900);
    assert_eq!(cheap.saved.0, 1_275_068_416 - 1_241_513_984);
    assert_eq!(inst.optimizer.cpu_speed.to_bandwidth().bytes, 1100);
    assert_eq!(inst.cpu_management.0, 50_000);
    let groups = inst.param_groups();
    assert_eq!(groups.len(), 3);
    assert_eq!(groups[1].trainable.0, 67_108_864);
    for mode in [IlpMode::AsPrinted, IlpMode::Corrected] {
        let plan = solve(&inst, mode);
        let bound = volume::period_bound(&inst, true);
        let b = num_traits::ToPrimitive::to_f64(&bound).unwrap();
        if mode == IlpMode::Corrected {
            assert!(b <= plan.objective + 1e-6, "{b} > {}", plan.objective);
        }
    }
}

/// Assumption 3 (memory per whole step): a schedule that swaps u and w between
/// the blocks exists in offcert's model, but the ILP and its LP relaxation are
/// infeasible in both modes, so the LP is no relaxation of the event model
/// (`proofs/OFFMATE-ILP.md` §3). The bounds stay finite and below 240.
#[test]
fn the_ilp_is_not_a_relaxation_of_the_event_model() {
    let inst = load("not-a-relaxation.json");
    for mode in [IlpMode::AsPrinted, IlpMode::Corrected] {
        assert_eq!(lp_relaxation(&inst, mode, LIMIT).unwrap(), None, "{mode:?}");
        assert!(matches!(
            solve_ilp(&inst, mode, LIMIT),
            Err(OffmateIlpError::Infeasible { .. })
        ));
    }
    // G0 = 40; D = 200 − 100 = 100 frozen bytes: h2d ≥ 100, d2h ≥ 0.
    let b = volume::period_bound(&inst, true);
    assert_eq!(b, num_rational::BigRational::from_integer(100.into()));
}
