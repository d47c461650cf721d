//! Heuristics for `op_sequence` (out-of-core window paper; FAMILIES.md §4):
//! the window (nnabla's variant, `window`, and the paper's, `window-paper`),
//! an LMS-style threshold baseline over the DAG (`lms`), furthest-next-use
//! eviction with early prefetch (`belady`, [`belady`]), and `no-offload`.
//!
//! Owns: the registry of op_sequence heuristics. Every schedule is built by the
//! shared realiser ([`plan::realise`]) and checked by [`crate::heuristic::run`].
//! Must not import: exact solvers, the checker.

pub mod belady;
pub mod plan;
pub mod window;

use super::{Heuristic, HeuristicError};
use crate::family::op_sequence::Uses;
use crate::family::{InstanceFile, OpSequence};
use crate::model::Instance;
use crate::schedule::Schedule;
use plan::{realise, Action, ActionPlan};
use window::{Variant, WindowOptions};

pub fn heuristics() -> Vec<Box<dyn Heuristic>> {
    vec![
        Box::new(Window::nnabla()),
        Box::new(Window::paper()),
        Box::new(Lms),
        Box::new(Belady),
        Box::new(NoOffload),
    ]
}

fn seq<'a>(name: &'static str, file: &'a InstanceFile) -> Result<&'a OpSequence, HeuristicError> {
    match file {
        InstanceFile::OpSequence(s) => Ok(s),
        other => Err(HeuristicError::NotApplicable {
            heuristic: name,
            family: other.family().into(),
        }),
    }
}

fn uses(name: &'static str, file: &InstanceFile) -> Result<Uses, HeuristicError> {
    seq(name, file)?
        .uses()
        .map_err(|e| HeuristicError::NoSchedule {
            heuristic: name,
            reason: e.to_string(),
        })
}

/// The window heuristic with W = `num/den`·B.
///
/// `window` (nnabla's variant) first asks whether the program fits without
/// offloading (the resident peak ≤ B); if so it keeps every variable on the
/// GPU (the [`NoOffload`] plan) and plans no swap at all. That is the right
/// rule for the window algorithm rather than a larger window: the window plan
/// ends each iteration with every variable dropped or on the host (S₀ has an
/// empty GPU), so even an unbounded window moves every persistent variable in
/// and out once per iteration, and its WAITs serialise transfers that
/// no-offload never makes. No-offload's period is Σ durations (a drop on the
/// last instant moves to instant 0 of the next iteration), which no schedule
/// beats (the GPU runs the functions one after another), so it is
/// the best the window could reach there; nnabla likewise swaps only when
/// memory runs short. `window-paper` is the paper's algorithm as printed:
/// it swaps at every budget (the baseline the paper measured).
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub variant: Variant,
    pub num: u64,
    pub den: u64,
}

impl Window {
    pub fn nnabla() -> Window {
        Window {
            variant: Variant::Nnabla,
            num: 3,
            den: 2,
        }
    }
    pub fn paper() -> Window {
        Window {
            variant: Variant::Paper,
            num: 3,
            den: 2,
        }
    }
    pub fn options(&self, budget: u64) -> WindowOptions {
        let w = (budget as u128 * self.num as u128 / self.den.max(1) as u128).min(u64::MAX as u128);
        WindowOptions {
            variant: self.variant,
            budget,
            window: w as u64,
        }
    }
    /// The action plan at the instance's budget.
    pub fn plan(&self, u: &Uses, budget: u64) -> Result<ActionPlan, HeuristicError> {
        window::plan(u, &self.options(budget)).map_err(|e| HeuristicError::NoSchedule {
            heuristic: self.name(),
            reason: e.to_string(),
        })
    }
}

impl Heuristic for Window {
    fn name(&self) -> &'static str {
        match self.variant {
            Variant::Nnabla => "window",
            Variant::Paper => "window-paper",
        }
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        matches!(file, InstanceFile::OpSequence(_))
    }
    /// `window` takes the no-offload plan when it fits; `window-paper` runs
    /// the algorithm as printed at every budget.
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let u = uses(self.name(), file)?;
        let cap = inst.machine.gpu_capacity.0;
        if self.variant == Variant::Nnabla && u.resident_peak() <= cap {
            return Ok(realise(inst, &u, &no_offload_plan(&u)));
        }
        let p = self.plan(&u, cap)?;
        Ok(realise(inst, &u, &p))
    }
}

/// LMS (Le et al. 2019) beyond chains: after a use of a variable whose next use
/// is more than `out` functions away, swap it out (drop it if its host copy is
/// current); swap it in `ahead` functions before that use. No memory model:
/// every (out, ahead) on a grid is realised, candidates whose memory sweep
/// exceeds the budget are discarded, and the shortest period is kept.
///
/// The grid: `out` in {0, 1, 2, 4, …, 1024, n} and ∞ (a threshold beyond
/// every distance, across the iteration boundary too: never swap, which is
/// the [`NoOffload`] plan, so LMS is never worse than no-offload where that
/// is valid); `ahead` in {0, 1, 2, 4, …, 1024}. `ahead` = 0 (swap in right
/// before the use) with `out` = 0 (swap out after every use) is the
/// least-memory setting, needed at the least budgets. Programs of at most
/// [`FULL_SCAN`] functions try every threshold pair in 0..=n (a threshold
/// beyond n acts as n), so there LMS finds a schedule wherever one of its
/// thresholds gives one.
pub struct Lms;

/// Up to this many functions, [`Lms`] tries every (out, ahead) in 0..=n.
pub const FULL_SCAN: usize = 48;

/// The LMS plan for thresholds (`out`, `ahead`), in functions.
pub fn lms_plan(u: &Uses, out: usize, ahead: usize) -> ActionPlan {
    let n = u.n();
    let mut p = ActionPlan::new(n);
    let nv = u.bytes.len();
    let mut next = vec![None::<usize>; nv];
    let mut nexts: Vec<Vec<Option<usize>>> = vec![vec![]; n];
    for f in (0..n).rev() {
        nexts[f] = u.uses[f].iter().map(|&(v, _)| next[v]).collect();
        for &(v, _) in &u.uses[f] {
            next[v] = Some(f);
        }
    }
    let mut cpu = u.persistent.clone();
    let mut on_gpu = vec![false; nv];
    // First uses of persistent variables.
    for (v, first) in next.iter().enumerate() {
        if let (Some(g), true) = (first, u.persistent[v]) {
            let needs = u.uses[*g].iter().any(|&(x, a)| x == v && a.needs_data());
            if needs {
                p.begin[g.saturating_sub(ahead)].push(Action::SwapIn(v));
            }
        }
    }
    for f in 0..n {
        for (k, &(v, a)) in u.uses[f].iter().enumerate() {
            on_gpu[v] = true;
            if a != plan_read() {
                cpu[v] = false;
            }
            let keep = match nexts[f][k] {
                None => false,
                Some(g) => g - f <= out,
            };
            if keep {
                continue;
            }
            let dirty = !cpu[v];
            let must_save = dirty && (nexts[f][k].is_some() || u.persistent[v]);
            p.end[f].push(Some(if must_save {
                Action::SwapOut(v)
            } else {
                Action::Drop(v)
            }));
            if must_save {
                cpu[v] = true;
            }
            on_gpu[v] = false;
            if let Some(g) = nexts[f][k] {
                p.begin[(f + 1).max(g.saturating_sub(ahead))].push(Action::SwapIn(v));
            }
        }
    }
    p.cpu0 = (0..nv).filter(|&v| cpu[v]).collect();
    p
}

fn plan_read() -> crate::family::op_sequence::Access {
    crate::family::op_sequence::Access::Read
}

impl Heuristic for Lms {
    fn name(&self) -> &'static str {
        "lms"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        matches!(file, InstanceFile::OpSequence(_))
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let u = uses(self.name(), file)?;
        let cap = inst.machine.gpu_capacity.0;
        let n = u.n();
        let grid: Vec<usize> = if n <= FULL_SCAN {
            (0..=n).collect()
        } else {
            [0usize, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
                .into_iter()
                .filter(|&x| x <= n)
                .collect()
        };
        let outs: Vec<usize> = grid.iter().copied().chain([n]).collect();
        let mut best: Option<Schedule> = None;
        let mut keep = |s: Schedule| {
            if best.as_ref().is_none_or(|b| s.period < b.period) {
                best = Some(s);
            }
        };
        // out = ∞: never swap (fits iff the resident peak does).
        if u.resident_peak() <= cap {
            keep(realise(inst, &u, &no_offload_plan(&u)));
        }
        for &out in &outs {
            for &ahead in &grid {
                let p = lms_plan(&u, out, ahead);
                let s = realise(inst, &u, &p);
                if plan::peak_memory(&u, &p, &s) <= cap {
                    keep(s);
                }
            }
        }
        best.ok_or_else(|| HeuristicError::NoSchedule {
            heuristic: "lms",
            reason: format!("every threshold on the grid exceeds the memory ({cap} B)"),
        })
    }
}

/// Furthest-next-use eviction with early prefetch ([`belady`]): every
/// option of [`belady::variants`] (victim rule × prefetch look-ahead) is
/// planned and realised, candidates whose memory sweep exceeds the budget are
/// discarded, and the shortest period is kept; the [`NoOffload`] plan is a
/// candidate too, so `belady` is never worse than no-offload where that is
/// valid. The checker has the last word ([`crate::heuristic::run`]).
pub struct Belady;

/// The realised candidates of [`Belady`] within the memory, shortest period
/// first (ties: the order tried).
pub fn belady_candidates(inst: &Instance, u: &Uses) -> Vec<Schedule> {
    let cap = inst.machine.gpu_capacity.0;
    let mut out: Vec<Schedule> = Vec::new();
    if u.resident_peak() <= cap {
        out.push(realise(inst, u, &no_offload_plan(u)));
    }
    for o in belady::variants(u.n()) {
        if let Ok(p) = belady::plan(u, cap, &o) {
            let s = realise(inst, u, &p);
            if plan::peak_memory(u, &p, &s) <= cap {
                out.push(s);
            }
        }
    }
    out.sort_by_key(|s| s.period.map(|p| p.0));
    out
}

impl Heuristic for Belady {
    fn name(&self) -> &'static str {
        "belady"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        matches!(file, InstanceFile::OpSequence(_))
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let u = uses(self.name(), file)?;
        let cap = inst.machine.gpu_capacity.0;
        belady_candidates(inst, &u)
            .into_iter()
            .next()
            .ok_or_else(|| HeuristicError::NoSchedule {
                heuristic: "belady",
                reason: format!(
                    "no eviction plan fits the memory ({cap} B; the largest function needs {} B)",
                    u.least_memory()
                ),
            })
    }
}

/// No offload: every used persistent variable stays on the GPU (S₀ has them
/// there), each other variable lives from its first write to the end of its
/// last use; no transfers, period = Σ durations. Needs the no-offload peak.
pub struct NoOffload;

impl Heuristic for NoOffload {
    fn name(&self) -> &'static str {
        "no-offload"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        matches!(file, InstanceFile::OpSequence(_))
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let u = uses(self.name(), file)?;
        let peak = u.resident_peak();
        let cap = inst.machine.gpu_capacity.0;
        if peak > cap {
            return Err(HeuristicError::NoSchedule {
                heuristic: "no-offload",
                reason: format!("needs {peak} B without offloading, memory is {cap} B"),
            });
        }
        Ok(realise(inst, &u, &no_offload_plan(&u)))
    }
}

/// The no-offload plan: used persistent variables on the GPU from S₀ on,
/// unused ones on the host, every other variable dropped after its last use.
pub fn no_offload_plan(u: &Uses) -> ActionPlan {
    let mut p = ActionPlan::new(u.n());
    let used = u.used_persistent();
    for (v, s) in u.span().iter().enumerate() {
        match s {
            Some((_, b)) if !u.persistent[v] => p.end[*b].push(Some(Action::Drop(v))),
            _ if used[v] => p.gpu0.push(v),
            _ if u.persistent[v] => p.cpu0.push(v),
            _ => {}
        }
    }
    p
}
