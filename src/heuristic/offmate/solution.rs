//! OFFMATE's own plan ([`OffmateSolution`], exported from rockmate by
//! `scripts/export_offmate.py --solution`) as whole-tensor decisions
//! ([`Rounded`]), so that offcert's realiser turns it into a schedule and the
//! checker judges it; and the differences between two such plans (OFFMATE's
//! and Algorithm 1 as offcert realises it).
//!
//! Reading (per parameter, a replay of the steps from `initial`): during step
//! t a parameter (its states) is on the GPU when it was at step 0 and no
//! later op of the steps before took it away, or a prefetch brought it back;
//! a step's ops act after its block op, so they decide steps t+1 on. Its
//! offload step is the step of its first `offload` of the parameter
//! (states); its update is the device and step of its `optimize` (none
//! when the plan has none: the checker then reports the missing update). Ops
//! on gradients are the realiser's business (it offloads the gradient of a
//! CPU-updated parameter after its backward).
//!
//! Owns: [`rounded`], [`Differences`], [`differences`]. Must not import: the
//! checker, exact solvers, reports.

use super::postprocess::{ParamRound, Rounded, Update};
use crate::family::offmate::Offmate;
use crate::family::offmate_solution::{
    OffmateSolution, SolutionDevice, SolutionOpKind, SolutionTensor,
};
use crate::heuristic::HeuristicError;

/// The whole-tensor decisions of OFFMATE's plan (validated against `off`).
pub fn rounded(off: &Offmate, sol: &OffmateSolution) -> Result<Rounded, HeuristicError> {
    sol.validate(off).map_err(|e| HeuristicError::NoSchedule {
        heuristic: "offmate-solution",
        reason: e.to_string(),
    })?;
    let n = 2 * off.l();
    let params = off
        .params
        .iter()
        .map(|p| {
            let mut alive = sol.initial.params.contains(&p.name);
            let mut states = sol.initial.states.contains(&p.name);
            let mut r = ParamRound {
                resident: vec![false; n],
                offload: None,
                update: Update::None,
                state_resident: vec![false; n],
                state_offload: None,
            };
            for (t, step) in sol.steps.iter().enumerate() {
                r.resident[t] = alive;
                r.state_resident[t] = states;
                for op in step.ops.iter().filter(|o| o.param == p.name) {
                    match (op.op, op.tensor) {
                        (SolutionOpKind::Optimize, _) => {
                            r.update = match op.device {
                                SolutionDevice::Gpu => Update::Gpu,
                                SolutionDevice::Cpu => Update::Cpu(t),
                            }
                        }
                        (SolutionOpKind::Offload, SolutionTensor::Param) => {
                            r.offload.get_or_insert(t);
                        }
                        (SolutionOpKind::Offload, SolutionTensor::States) => {
                            r.state_offload.get_or_insert(t);
                        }
                        (SolutionOpKind::Delete, SolutionTensor::Param) => alive = false,
                        (SolutionOpKind::Delete, SolutionTensor::States) => states = false,
                        (SolutionOpKind::Prefetch, SolutionTensor::Param) => alive = true,
                        (SolutionOpKind::Prefetch, SolutionTensor::States) => states = true,
                        (_, SolutionTensor::Grad) => {}
                    }
                }
            }
            if r.update != Update::Gpu {
                r.offload = None;
                r.state_resident = vec![false; n];
                r.state_offload = None;
            }
            r
        })
        .collect();
    Ok(Rounded {
        option: sol.options.clone(),
        params,
    })
}

/// Where two plans differ (`a`: OFFMATE's, `b`: Algorithm 1 as offcert
/// realises it).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Differences {
    /// Blocks whose option differs.
    pub options: usize,
    /// Parameters whose Adam step runs elsewhere (device or step).
    pub updates: usize,
    /// Parameters whose GPU residency differs in some step.
    pub residency: usize,
    /// Parameters whose states' residency differs in some step.
    pub states: usize,
    /// One line per difference, blocks first.
    pub lines: Vec<String>,
}

fn update_words(u: Update) -> String {
    match u {
        Update::None => "no update".into(),
        Update::Gpu => "Adam on the GPU".into(),
        Update::Cpu(t) => format!("Adam on the CPU in step {t}"),
    }
}

fn steps_on(v: &[bool]) -> String {
    let on: Vec<String> = (0..v.len())
        .filter(|&t| v[t])
        .map(|t| t.to_string())
        .collect();
    format!("[{}]", on.join(" "))
}

/// The differences between two plans of `off`.
pub fn differences(off: &Offmate, a: &Rounded, b: &Rounded) -> Differences {
    let mut d = Differences::default();
    for (i, blk) in off.blocks.iter().enumerate() {
        let (x, y) = (a.option[i], b.option[i]);
        if x != y {
            d.options += 1;
            let name = |o: usize| blk.options[o].name.clone().unwrap_or_else(|| o.to_string());
            d.lines.push(format!(
                "block {}: option {} (OFFMATE) vs {} (Algorithm 1)",
                blk.name,
                name(x),
                name(y)
            ));
        }
    }
    for (p, par) in off.params.iter().enumerate() {
        let (x, y) = (&a.params[p], &b.params[p]);
        if x.update != y.update {
            d.updates += 1;
            d.lines.push(format!(
                "{}: {} (OFFMATE) vs {} (Algorithm 1)",
                par.name,
                update_words(x.update),
                update_words(y.update)
            ));
        }
        if x.resident != y.resident {
            d.residency += 1;
            d.lines.push(format!(
                "{}: on the GPU in steps {} (OFFMATE) vs {} (Algorithm 1)",
                par.name,
                steps_on(&x.resident),
                steps_on(&y.resident)
            ));
        }
        if x.state_resident != y.state_resident {
            d.states += 1;
            d.lines.push(format!(
                "{}: states on the GPU in steps {} (OFFMATE) vs {} (Algorithm 1)",
                par.name,
                steps_on(&x.state_resident),
                steps_on(&y.state_resident)
            ));
        }
    }
    d
}

/// A plan as OFFMATE's solution format (the inverse of [`rounded`] on the
/// decisions it reads): used by tests to generate solution files, and by
/// `offcert offmate` users to compare plans.
pub fn to_solution(off: &Offmate, r: &Rounded) -> OffmateSolution {
    use crate::family::offmate_solution::{SolutionInitial, SolutionOp, SolutionStep};
    let n = 2 * off.l();
    let mut steps: Vec<SolutionStep> = vec![SolutionStep::default(); n];
    let op = |op, param: &str, tensor, device| SolutionOp {
        op,
        param: param.to_string(),
        tensor,
        device,
    };
    let mut initial = SolutionInitial::default();
    for (p, par) in off.params.iter().enumerate() {
        let pr = &r.params[p];
        let name = par.name.as_str();
        let (gpu, param, states) = (
            SolutionDevice::Gpu,
            SolutionTensor::Param,
            SolutionTensor::States,
        );
        if pr.resident[0] {
            initial.params.push(name.into());
        }
        if pr.update == Update::Gpu && pr.state_resident[0] {
            initial.states.push(name.into());
        }
        for t in 0..n {
            let u = (t + 1) % n;
            let ops = &mut steps[t].ops;
            match pr.update {
                Update::Cpu(s) if s == t => ops.push(op(
                    SolutionOpKind::Optimize,
                    name,
                    param,
                    SolutionDevice::Cpu,
                )),
                Update::Gpu if Some(t) == gw_step(off, p) => {
                    ops.push(op(SolutionOpKind::Optimize, name, param, gpu))
                }
                _ => {}
            }
            if pr.offload == Some(t) {
                ops.push(op(SolutionOpKind::Offload, name, param, gpu));
            }
            if pr.state_offload == Some(t) {
                ops.push(op(SolutionOpKind::Offload, name, states, gpu));
            }
            if pr.resident[t] && !pr.resident[u] {
                ops.push(op(SolutionOpKind::Delete, name, param, gpu));
            }
            if !pr.resident[t] && pr.resident[u] {
                ops.push(op(SolutionOpKind::Prefetch, name, param, gpu));
            }
            if pr.update == Update::Gpu {
                let (x, y) = (pr.state_resident[t], pr.state_resident[u]);
                if x && !y {
                    ops.push(op(SolutionOpKind::Delete, name, states, gpu));
                }
                if !x && y {
                    ops.push(op(SolutionOpKind::Prefetch, name, states, gpu));
                }
            }
        }
    }
    OffmateSolution {
        format: crate::family::offmate_solution::SOLUTION_FORMAT.into(),
        instance: Some(off.name.clone()),
        note: None,
        options: r.option.clone(),
        initial,
        steps,
    }
}

/// g_w of parameter `p`: the backward step of its first using block.
fn gw_step(off: &Offmate, p: usize) -> Option<usize> {
    off.updated_params()
        .into_iter()
        .find(|&(q, _)| q == p)
        .map(|(_, b1)| 2 * off.l() - 1 - (b1 - 1))
}
