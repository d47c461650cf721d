//! OFFMATE's post-processing (§4.2, App. B): the ILP's fractions become
//! decisions on whole tensors.
//!
//! Per parameter group w, Algorithm 1 walks the steps cyclically from g_w (the
//! step of w's last gradient, where every tensor of w is on the GPU): it offloads
//! at least the cumulative |w|·ΣOfl (SELECT over the tensors not yet offloaded),
//! deletes at least down to |w|·Sto of the next step (SELECT over offloaded and
//! alive tensors: only an offloaded tensor may be deleted, so nothing is lost),
//! and prefetches at most up to it (the complement of a SELECT). Then one global
//! SELECT per group picks the CPU-updated tensors among the candidates (trainable
//! tensors absent from the GPU at some step between g_w and f_w), and their
//! updates are placed greedily, by increasing block index, in the steps whose
//! CPU room (the ILP's Time_t − H) holds them. Finally Algorithm 1 runs again on the optimiser states of
//! the GPU-updated tensors (StoO, OflO).
//!
//! Two readings are made explicit (`models/MODEL.md` §4.6): residency is decided
//! per step boundary (delete at a step's end, prefetch during the step before
//! the use, Assumption 3), and the steps where a block uses w force all of w
//! resident (eq. (5)), as g_w forces all of w's states (eq. (6)).
//! A non-trainable tensor's CPU copy is always current, so it counts as offloaded
//! from the start and is never moved to the CPU.
//!
//! Owns: [`Rounded`], [`ParamRound`], [`Update`], [`round`].
//! Must not import: the checker, the core model (this works in the paper's
//! notation), exact solvers.

use super::select::select;
use crate::family::offmate::{Offmate, StepPlan};
use crate::heuristic::HeuristicError;

/// How a parameter is updated once per period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    /// Not trainable, or used by no block.
    None,
    /// `optG.p` right after the backward step g_w (Assumption 5).
    Gpu,
    /// `optC.p` on the CPU during this step (its gradient offloaded at g_w).
    Cpu(usize),
}

/// The whole-tensor decisions for one parameter tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamRound {
    /// On the GPU during step t (0..2L).
    pub resident: Vec<bool>,
    /// The step whose d2h carries its offload (GPU-updated tensors only).
    pub offload: Option<usize>,
    pub update: Update,
    /// Its optimiser states `m.p` on the GPU during step t (GPU-updated only).
    pub state_resident: Vec<bool>,
    pub state_offload: Option<usize>,
}

/// The plan on whole tensors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rounded {
    /// The option per block.
    pub option: Vec<usize>,
    /// Per entry of [`Offmate::params`].
    pub params: Vec<ParamRound>,
}

/// A fraction from the solver, snapped to 0 or 1 within 1e-6.
fn snap(f: f64) -> f64 {
    if !f.is_finite() || f < 1e-6 {
        0.0
    } else if f > 1.0 - 1e-6 {
        1.0
    } else {
        f
    }
}

/// Algorithm 1 on one set of tensors: residency per step and offload step.
struct Walk {
    resident: Vec<Vec<bool>>,
    offload: Vec<Option<usize>>,
}

/// Inputs of one walk: tensor sizes, which are offloaded from the start, the
/// start step, the scale (|w| or k|w|_g), the steps that force everything
/// resident, and the per-step (Sto, Ofl) fractions.
struct WalkInput<'a> {
    sizes: &'a [u64],
    pre_offloaded: &'a [bool],
    start: usize,
    scale: f64,
    force: &'a [bool],
    sto_ofl: &'a dyn Fn(usize) -> (f64, f64),
}

fn total(sizes: &[u64], set: &[usize]) -> u64 {
    set.iter().map(|&i| sizes[i]).sum()
}

/// SELECT over a subset (indices into `sizes`), returning indices into `sizes`;
/// the whole subset when it falls short of the target.
fn select_in(sizes: &[u64], subset: &[usize], target: u64) -> Vec<usize> {
    let sub: Vec<u64> = subset.iter().map(|&i| sizes[i]).collect();
    match select(&sub, target) {
        Some(chosen) => chosen.into_iter().map(|j| subset[j]).collect(),
        None => subset.to_vec(),
    }
}

fn algorithm1(w: &WalkInput) -> Walk {
    let n = w.force.len();
    let m = w.sizes.len();
    let all: u64 = w.sizes.iter().sum();
    let mut resident = vec![vec![false; n]; m];
    let mut offload = vec![None; m];
    let mut ofl: Vec<bool> = w.pre_offloaded.to_vec();
    let mut alive = vec![true; m];
    let mut cum = 0.0f64;
    for r in resident.iter_mut() {
        r[w.start] = true;
    }
    for j in 0..n {
        let t = (w.start + j) % n;
        let u = (t + 1) % n;
        let (_, ofl_t) = (w.sto_ofl)(t);
        cum += snap(ofl_t);
        let target = (w.scale * cum.min(1.0)).ceil() as u64;
        let have: u64 = (0..m).filter(|&i| ofl[i]).map(|i| w.sizes[i]).sum();
        if target > have {
            let free: Vec<usize> = (0..m).filter(|&i| !ofl[i]).collect();
            for i in select_in(w.sizes, &free, target - have) {
                ofl[i] = true;
                offload[i] = Some(t);
            }
        }
        let desired = if u == w.start || w.force[u] {
            all
        } else {
            (w.scale * snap((w.sto_ofl)(u).0)).round().min(all as f64) as u64
        };
        let alive_set: Vec<usize> = (0..m).filter(|&i| alive[i]).collect();
        let alive_b = total(w.sizes, &alive_set);
        if desired < alive_b {
            let cand: Vec<usize> = alive_set.iter().copied().filter(|&i| ofl[i]).collect();
            for i in select_in(w.sizes, &cand, alive_b - desired) {
                alive[i] = false;
            }
        } else if desired > alive_b {
            let dead: Vec<usize> = (0..m).filter(|&i| !alive[i]).collect();
            let dead_b = total(w.sizes, &dead);
            let room = desired - alive_b;
            let kept = select_in(w.sizes, &dead, dead_b.saturating_sub(room));
            for i in dead {
                if !kept.contains(&i) {
                    alive[i] = true;
                }
            }
        }
        for i in 0..m {
            resident[i][u] = alive[i];
        }
    }
    Walk { resident, offload }
}

/// Steps of group w: g_w (backward of its first block) and f_w (its forward).
pub fn group_steps(off: &Offmate, first_block: usize) -> (usize, usize) {
    (2 * off.l() - 1 - first_block, first_block)
}

/// Round a plan to whole tensors (Algorithm 1 and the CPU-update choice).
pub fn round(off: &Offmate, plan: &StepPlan) -> Result<Rounded, HeuristicError> {
    let n = 2 * off.l();
    check_shape(off, plan, n)?;
    let mut params: Vec<ParamRound> = off
        .params
        .iter()
        .map(|_| ParamRound {
            resident: vec![false; n],
            offload: None,
            update: Update::None,
            state_resident: vec![false; n],
            state_offload: None,
        })
        .collect();
    // CPU room per step, in ticks: the ILP's Time_t less H (eq. (23)).
    let h = off.cpu_management.0 as f64;
    let mut cpu_budget: Vec<f64> = (0..n)
        .map(|t| plan.time.get(t).map_or(0.0, |x| (x - h).max(0.0)))
        .collect();
    let mut order: Vec<usize> = (0..plan.groups.len()).collect();
    order.sort_by_key(|&w| plan.groups[w].blocks[0]);
    for w in order {
        round_group(off, plan, w, &mut params, &mut cpu_budget);
    }
    Ok(Rounded {
        option: plan.option.clone(),
        params,
    })
}

fn check_shape(off: &Offmate, plan: &StepPlan, n: usize) -> Result<(), HeuristicError> {
    let bad = |reason: String| HeuristicError::NoSchedule {
        heuristic: super::NAME,
        reason,
    };
    if plan.option.len() != off.l() {
        return Err(bad(format!(
            "plan has {} options for {} blocks",
            plan.option.len(),
            off.l()
        )));
    }
    for (b, &o) in plan.option.iter().enumerate() {
        if o >= off.blocks[b].options.len() {
            return Err(bad(format!(
                "plan.option[{b}] = {o} is not an option of the block"
            )));
        }
    }
    if plan.groups != off.param_groups() {
        return Err(bad(
            "plan.groups differ from the instance's parameter groups".into(),
        ));
    }
    if plan.fractions.len() != plan.groups.len() || plan.fractions.iter().any(|f| f.len() != n) {
        return Err(bad(format!("plan.fractions must be [groups][{n} steps]")));
    }
    Ok(())
}

fn round_group(
    off: &Offmate,
    plan: &StepPlan,
    w: usize,
    params: &mut [ParamRound],
    cpu_budget: &mut [f64],
) {
    let n = 2 * off.l();
    let g = &plan.groups[w];
    let (gw, fw) = group_steps(off, g.blocks[0]);
    let mut force = vec![false; n];
    for &b in &g.blocks {
        force[b] = true;
        force[2 * off.l() - 1 - b] = true;
    }
    let sizes: Vec<u64> = g.params.iter().map(|&p| off.params[p].bytes.0).collect();
    let trainable: Vec<bool> = g.params.iter().map(|&p| off.params[p].trainable).collect();
    let pre: Vec<bool> = trainable.iter().map(|t| !t).collect();
    let fr = &plan.fractions[w];
    let sto_ofl = |t: usize| (fr[t].sto, fr[t].ofl);
    let walk = algorithm1(&WalkInput {
        sizes: &sizes,
        pre_offloaded: &pre,
        start: gw,
        scale: g.bytes.0 as f64,
        force: &force,
        sto_ofl: &sto_ofl,
    });
    for (j, &p) in g.params.iter().enumerate() {
        params[p].resident = walk.resident[j].clone();
        params[p].offload = walk.offload[j];
        params[p].update = if trainable[j] {
            Update::Gpu
        } else {
            Update::None
        };
    }
    choose_cpu_updates(off, plan, w, (gw, fw), params, cpu_budget);
    round_states(off, plan, w, gw, params);
}

/// Walk position of step t when the walk starts at `start`.
fn pos(t: usize, start: usize, n: usize) -> usize {
    (t + n - start) % n
}

/// The CPU-update candidates of group w: trainable tensors absent from the GPU
/// at some step strictly between g_w and f_w. A candidate's update runs after
/// g_w (its gradient leaves then) and no later than its last absent step before
/// f_w (whose prefetch follows the update); its GPU copy, which the update
/// would make stale, is deleted before the update's step. Then one SELECT of at least
/// X_w|w|_g bytes and a greedy placement (groups by increasing block index): the
/// first step whose CPU room (the ILP's Time_t − H, less the updates placed
/// there) holds the update, else the step with the most room.
fn choose_cpu_updates(
    off: &Offmate,
    plan: &StepPlan,
    w: usize,
    (gw, fw): (usize, usize),
    params: &mut [ParamRound],
    cpu_budget: &mut [f64],
) {
    let n = 2 * off.l();
    let g = &plan.groups[w];
    let x_w: f64 = (0..n)
        .map(|t| snap(plan.fractions[w][t].opt))
        .sum::<f64>()
        .min(1.0);
    let target = (x_w * g.trainable.0 as f64).ceil() as u64;
    if target == 0 {
        return;
    }
    let end = pos(fw, gw, n);
    // (param, last walk position at which it is absent before f_w)
    let mut cand: Vec<(usize, usize)> = Vec::new();
    for &p in &g.params {
        if !off.params[p].trainable {
            continue;
        }
        let r = &params[p].resident;
        let absent = |j: usize| !r[(gw + j) % n];
        if let Some(last) = (1..end).rev().find(|&j| absent(j)) {
            cand.push((p, last));
        }
    }
    let sizes: Vec<u64> = cand.iter().map(|&(p, _)| off.params[p].bytes.0).collect();
    let all: Vec<usize> = (0..cand.len()).collect();
    let mut chosen = select_in(&sizes, &all, target);
    chosen.sort_unstable();
    for k in chosen {
        let (p, last) = cand[k];
        let alpha = off.optimizer.cpu_speed.to_bandwidth();
        let cost = alpha
            .min_ticks(off.params[p].bytes)
            .map_or(f64::MAX, |x| x.0 as f64);
        // Positions 1..=last: any step after g_w up to the last absent step
        // before f_w, whose prefetch follows the update.
        let steps: Vec<usize> = (1..=last).map(|j| (gw + j) % n).collect();
        let step = steps
            .iter()
            .copied()
            .find(|&t| cpu_budget[t] >= cost)
            .unwrap_or_else(|| {
                *steps
                    .iter()
                    .max_by(|a, b| cpu_budget[**a].total_cmp(&cpu_budget[**b]).then(b.cmp(a)))
                    .expect("window has step g_w")
            });
        cpu_budget[step] -= cost;
        params[p].update = Update::Cpu(step);
        params[p].offload = None;
        // The GPU copy would be stale once the update ends: it is deleted
        // before the update's step (less memory, the same prefetch), so no
        // stale copy is ever resident, at the period boundary included.
        for j in pos(step, gw, n)..=last {
            params[p].resident[(gw + j) % n] = false;
        }
    }
}

/// Algorithm 1 on the optimiser states of w's GPU-updated tensors.
fn round_states(off: &Offmate, plan: &StepPlan, w: usize, gw: usize, params: &mut [ParamRound]) {
    let n = 2 * off.l();
    let g = &plan.groups[w];
    let k = off.optimizer.states as u64;
    let members: Vec<usize> = g
        .params
        .iter()
        .copied()
        .filter(|&p| params[p].update == Update::Gpu)
        .collect();
    if members.is_empty() || k == 0 {
        return;
    }
    let sizes: Vec<u64> = members.iter().map(|&p| k * off.params[p].bytes.0).collect();
    let pre = vec![false; members.len()];
    let force = vec![false; n];
    let fr = &plan.fractions[w];
    let sto_ofl = |t: usize| (fr[t].sto_o, fr[t].ofl_o);
    let walk = algorithm1(&WalkInput {
        sizes: &sizes,
        pre_offloaded: &pre,
        start: gw,
        scale: (k * g.trainable.0) as f64,
        force: &force,
        sto_ofl: &sto_ofl,
    });
    for (j, &p) in members.iter().enumerate() {
        params[p].state_resident = walk.resident[j].clone();
        params[p].state_offload = walk.offload[j];
    }
}
