//! A step-balanced OFFMATE plan (`offmate-balance`), built without the ILP.
//!
//! Why not the bound's LP: the realiser ([`super::realise`]) is step
//! synchronous, so a plan's period is Σ_t max(GPU_t, link_t, CPU_t), while the
//! bounds (`proofs/OFFMATE-BOUNDS.md`) see each stream's total only. On the
//! Llama2-7B rows Algorithm 1's schedules have every stream's total near the
//! bound and lose the rest to steps where one stream waits for another (CPU
//! Adam steps of 113 ms in forward steps of 78 ms, activation offloads of
//! 98 ms in the same forwards, h2d-bound backwards; `docs/RESULTS.md`,
//! "Schedules, branch offsched"). A plan read off the LP's balance point has
//! the same totals and says nothing about their placement; this source builds
//! the plan on the step model itself:
//!
//! 1. Options: per block the fastest option that keeps no activation on the
//!    GPU (or the one that moves the fewest bytes), the top `fastest_top`
//!    blocks their fastest option; a few such vectors are tried.
//! 2. Residency: every parameter on the GPU in the steps that use it only
//!    (prefetched in the step before), the optimiser states of a GPU-updated
//!    parameter for its Adam step only (prefetched `lead` steps before,
//!    offloaded after it), unless pinned (kept on the GPU throughout).
//! 3. Adam steps, largest tensors first: on the GPU, or on the CPU in one step
//!    of its window (after the gradient's offload, before the next forward),
//!    whichever raises the estimated Σ_t max of the per-step stream loads
//!    least.
//! 4. Realised and **checked**; then the memory the checker's peak leaves
//!    free is spent on pins (states, then parameters, by the link time they
//!    save per byte), re-planned and checked again, halving the pins when the
//!    checker refutes them for memory.
//!
//! Nothing is trusted: the best checked schedule is returned, or `no
//! schedule` with the checker's reason when no plan fits. The gap report's
//! improvement then runs on it when it is the row's best.
//!
//! Owns: [`Balance`], [`plan`]. Must not import: exact solvers, reports.

use super::postprocess::{group_steps, ParamRound, Rounded, Update};
use super::realise::realise;
use crate::check::{check, CheckOutcome, Checked, Rejected};
use crate::family::offmate::Offmate;
use crate::family::offmate_compile::ticks_for;
use crate::family::InstanceFile;
use crate::heuristic::{Found, Heuristic, HeuristicError, SolverLimit};
use crate::model::{Duplex, Instance};
use crate::units::{Bandwidth, Bytes};
use std::time::Instant;

/// The heuristic's name in the registry and the gap report.
pub const NAME: &str = "offmate-balance";

/// Plans realised and checked before the pin rounds (the best by estimate).
const FIRST_CHECKS: usize = 10;
/// Plans whose free memory is then spent on pins.
const PINNED_PLANS: usize = 3;
/// Pin rounds per plan (each may halve its pins up to [`HALVINGS`] times).
const PIN_ROUNDS: usize = 3;
const HALVINGS: usize = 3;

/// The streams of a step: GPU, d2h, h2d, CPU; then the d2h work that can
/// only start when the block op ends (gradients, offloads right after an
/// Adam step), and the block op's own length.
const GPU: usize = 0;
const D2H: usize = 1;
const H2D: usize = 2;
const CPU: usize = 3;
const TAIL: usize = 4;
const OP: usize = 5;

/// The knobs of one plan.
#[derive(Clone, Debug, PartialEq)]
struct Knobs {
    /// Blocks (from the top) that take their fastest option.
    fastest_top: usize,
    /// Base option: fewest bytes offloaded (else fastest) among those that
    /// keep no activation on the GPU.
    low_link: bool,
    /// Steps before its Adam step that a state is prefetched (1 or 2).
    lead: usize,
    /// Steps after its Adam step that a GPU-updated tensor and its states
    /// stay on the GPU before they are offloaded (0 or 1; with 1 the offload
    /// runs beside the next block op instead of after this one).
    delay: usize,
    /// Kept on the GPU throughout: parameters, optimiser states.
    pin_param: Vec<bool>,
    pin_state: Vec<bool>,
}

/// Per-step stream loads (ticks) in the realiser's step model.
#[derive(Clone)]
struct Loads {
    l: Vec<[i64; 6]>,
    half: bool,
}

/// One load: (step, stream, ticks).
type Add = (usize, usize, i64);

impl Loads {
    fn length(&self, x: &[i64; 6]) -> i64 {
        let link = if self.half {
            x[D2H] + x[H2D]
        } else {
            x[D2H].max(x[H2D])
        };
        x[GPU].max(link).max(x[CPU]).max(x[OP] + x[TAIL])
    }
    fn total(&self) -> i64 {
        self.l.iter().map(|x| self.length(x)).sum()
    }
    /// How much Σ_t length grows with `adds`.
    fn delta(&self, adds: &[Add]) -> i64 {
        let mut steps: Vec<usize> = adds.iter().map(|a| a.0).collect();
        steps.sort_unstable();
        steps.dedup();
        steps
            .iter()
            .map(|&t| {
                let mut x = self.l[t];
                for a in adds.iter().filter(|a| a.0 == t) {
                    x[a.1] += a.2;
                }
                self.length(&x) - self.length(&self.l[t])
            })
            .sum()
    }
    fn apply(&mut self, adds: &[Add]) {
        for a in adds {
            self.l[a.0][a.1] += a.2;
        }
    }
}

/// The instance's figures the planner uses.
struct Ctx<'a> {
    off: &'a Offmate,
    n: usize,
    link: Bandwidth,
    half: bool,
    /// Per parameter: the first block using it, and every step using it.
    first: Vec<Option<usize>>,
    uses: Vec<Vec<bool>>,
}

impl<'a> Ctx<'a> {
    fn new(off: &'a Offmate, inst: &Instance) -> Ctx<'a> {
        let n = 2 * off.l();
        let mut first = vec![None; off.params.len()];
        let mut uses = vec![vec![false; n]; off.params.len()];
        for g in off.param_groups() {
            for &p in &g.params {
                first[p] = Some(g.blocks[0]);
                for &b in &g.blocks {
                    uses[p][b] = true;
                    uses[p][n - 1 - b] = true;
                }
            }
        }
        Ctx {
            off,
            n,
            link: inst.machine.bandwidth,
            half: inst.machine.duplex == Duplex::HalfDuplex,
            first,
            uses,
        }
    }
    fn xfer(&self, bytes: u64) -> i64 {
        ticks_for(self.link, Bytes(bytes)).0
    }
    fn states(&self, p: usize) -> u64 {
        self.off.optimizer.states as u64 * self.off.params[p].bytes.0
    }
    /// g_w of `p`'s group (the step of its last gradient).
    fn gw(&self, p: usize) -> usize {
        self.first[p].map_or(0, |b| group_steps(self.off, b).0)
    }
    /// Steps strictly between g_w and f_w (cyclic) where a CPU update may
    /// run, less the step of the prefetch before f_w when there are others
    /// (a prefetch there would wait for the update).
    fn window(&self, p: usize) -> Vec<usize> {
        let Some(b0) = self.first[p] else {
            return Vec::new();
        };
        let (gw, fw) = group_steps(self.off, b0);
        let end = (fw + self.n - gw) % self.n;
        let mut w: Vec<usize> = (1..end).map(|j| (gw + j) % self.n).collect();
        if w.len() > 1 {
            w.pop();
        }
        w
    }
    /// The step whose d2h offloads a GPU-updated `p` and its states.
    fn offload_step(&self, p: usize, k: &Knobs) -> usize {
        (self.gw(p) + k.delay.min(self.n - 1)) % self.n
    }
    /// Steps with a GPU-updated, unpinned `p` on the GPU: its uses and the
    /// steps up to its offload.
    fn param_steps(&self, p: usize, k: &Knobs) -> Vec<bool> {
        let mut v = self.uses[p].clone();
        for j in 0..=k.delay.min(self.n - 1) {
            v[(self.gw(p) + j) % self.n] = true;
        }
        v
    }
    /// Steps with the state of a GPU-updated `p` on the GPU: `lead` steps
    /// before its Adam step at g_w, and up to its offload.
    fn state_steps(&self, p: usize, k: &Knobs) -> Vec<bool> {
        let gw = self.gw(p);
        let mut v = vec![false; self.n];
        for j in 0..k.lead.clamp(1, self.n) {
            v[(gw + self.n - j) % self.n] = true;
        }
        for j in 0..=k.delay.min(self.n - 1) {
            v[(gw + j) % self.n] = true;
        }
        v
    }
    /// The d2h loads of an offload of `bytes` at `p`'s offload step (after
    /// the block op when it is g_w).
    fn offload_adds(&self, p: usize, k: &Knobs, bytes: u64, sign: i64) -> Vec<Add> {
        let t = self.offload_step(p, k);
        let x = sign * self.xfer(bytes);
        if t == self.gw(p) {
            vec![(t, D2H, x), (t, TAIL, x)]
        } else {
            vec![(t, D2H, x)]
        }
    }
}

/// Prefetches (step before each arrival) of a residency.
fn arrivals(res: &[bool]) -> Vec<usize> {
    let n = res.len();
    (0..n).filter(|&t| !res[t] && res[(t + 1) % n]).collect()
}

/// The option vector of `k`.
fn options(off: &Offmate, k: &Knobs) -> Vec<usize> {
    let l = off.l();
    off.blocks
        .iter()
        .enumerate()
        .map(|(b, blk)| {
            let time = |o: usize| blk.options[o].t_fwd.0 + blk.options[o].t_bwd.0;
            let all = 0..blk.options.len();
            if b + k.fastest_top >= l {
                return all.min_by_key(|&o| (time(o), o)).unwrap_or(0);
            }
            let kept: Vec<usize> = all
                .clone()
                .filter(|&o| blk.options[o].saved.0 == 0)
                .collect();
            let pool = if kept.is_empty() { all.collect() } else { kept };
            pool.into_iter()
                .min_by_key(|&o| {
                    let moved = blk.options[o].offloaded.0 as i64;
                    if k.low_link {
                        (moved, time(o), o as i64)
                    } else {
                        (time(o), moved, o as i64)
                    }
                })
                .unwrap_or(0)
        })
        .collect()
}

/// The loads every plan with these options has: block ops, management, the
/// internals' offloads and prefetches, the parameters' prefetches.
fn base_loads(c: &Ctx, option: &[usize], k: &Knobs) -> Loads {
    let off = c.off;
    let n = c.n;
    let mut l = vec![[0i64; 6]; n];
    for (t, x) in l.iter_mut().enumerate() {
        let (b, fwd) = off.step_block(t);
        let o = &off.blocks[b].options[option[b]];
        x[GPU] = if fwd { o.t_fwd.0 } else { o.t_bwd.0 };
        x[OP] = x[GPU];
        x[CPU] = off.cpu_management.0;
    }
    for (b, blk) in off.blocks.iter().enumerate() {
        let h = blk.options[option[b]].offloaded.0;
        if h > 0 && b + 1 < n - 1 - b {
            l[b + 1][D2H] += c.xfer(h);
            l[n - 2 - b][H2D] += c.xfer(h);
        }
    }
    for p in 0..off.params.len() {
        if c.first[p].is_some() && !k.pin_param[p] {
            for t in arrivals(&c.uses[p]) {
                l[t][H2D] += c.xfer(off.params[p].bytes.0);
            }
        }
    }
    Loads { l, half: c.half }
}

/// The loads of `p`'s Adam step on the GPU.
fn gpu_adds(c: &Ctx, p: usize, k: &Knobs) -> Vec<Add> {
    let off = c.off;
    let gw = c.gw(p);
    let bytes = off.params[p].bytes.0;
    let alpha = off.optimizer.gpu_speed.to_bandwidth();
    let mut v = vec![(gw, GPU, ticks_for(alpha, Bytes(bytes)).0)];
    let st = c.state_steps(p, k);
    if c.states(p) > 0 && !k.pin_state[p] && st.iter().any(|x| !x) {
        for t in arrivals(&st) {
            v.push((t, H2D, c.xfer(c.states(p))));
        }
        v.extend(c.offload_adds(p, k, c.states(p), 1));
    }
    if !k.pin_param[p] && c.param_steps(p, k).iter().any(|x| !x) {
        v.extend(c.offload_adds(p, k, bytes, 1));
    }
    v
}

/// The loads of `p`'s Adam step on the CPU in step `s`: its gradient's
/// offload after the block op at g_w, the update.
fn cpu_adds(c: &Ctx, p: usize, s: usize) -> Vec<Add> {
    let off = c.off;
    let gw = c.gw(p);
    let bytes = off.params[p].bytes.0;
    let x = c.xfer(bytes);
    let alpha = off.optimizer.cpu_speed.to_bandwidth();
    vec![
        (gw, D2H, x),
        (gw, TAIL, x),
        (s, CPU, ticks_for(alpha, Bytes(bytes)).0),
    ]
}

/// Step 3: each trainable used parameter's Adam step where it raises the
/// estimate least (largest tensors first; ties: the GPU, then the step with
/// the least CPU load, then the earliest). Returns the updates and the loads.
fn assign(c: &Ctx, option: &[usize], k: &Knobs) -> (Vec<Update>, Loads) {
    let off = c.off;
    let mut loads = base_loads(c, option, k);
    let mut update = vec![Update::None; off.params.len()];
    let mut order: Vec<usize> = off.updated_params().into_iter().map(|(p, _)| p).collect();
    order.sort_by_key(|&p| (std::cmp::Reverse(off.params[p].bytes.0), p));
    for p in order {
        let g = gpu_adds(c, p, k);
        // (estimate's growth, GPU first, CPU load of the step), then the update.
        let mut key = (loads.delta(&g), 0, 0i64);
        let mut best = (Update::Gpu, g);
        if !k.pin_param[p] {
            for s in c.window(p) {
                let a = cpu_adds(c, p, s);
                let cand = (loads.delta(&a), 1, loads.l[s][CPU]);
                if cand < key {
                    key = cand;
                    best = (Update::Cpu(s), a);
                }
            }
        }
        loads.apply(&best.1);
        update[p] = best.0;
    }
    (update, loads)
}

/// The whole-tensor plan of `k` (steps 1–3), and its estimate.
fn plan_of(c: &Ctx, k: &Knobs) -> (Rounded, i64) {
    let off = c.off;
    let n = c.n;
    let option = options(off, k);
    let (update, loads) = assign(c, &option, k);
    let params = (0..off.params.len())
        .map(|p| {
            let used = c.first[p].is_some();
            let gpu = update[p] == Update::Gpu;
            let resident = if k.pin_param[p] {
                vec![true; n]
            } else if gpu {
                c.param_steps(p, k)
            } else {
                c.uses[p].clone()
            };
            let moved = resident.iter().any(|x| !x);
            let at = c.offload_step(p, k);
            let (state_resident, state_offload) = if !gpu || off.optimizer.states == 0 {
                (vec![false; n], None)
            } else if k.pin_state[p] {
                (vec![true; n], None)
            } else {
                let st = c.state_steps(p, k);
                let away = st.iter().any(|x| !x);
                (st, away.then_some(at))
            };
            ParamRound {
                offload: (used && gpu && moved).then_some(at),
                resident,
                update: update[p],
                state_resident,
                state_offload,
            }
        })
        .collect();
    (Rounded { option, params }, loads.total())
}

/// Realise and check a plan.
fn realise_check(
    off: &Offmate,
    inst: &Instance,
    r: &Rounded,
) -> Result<CheckOutcome, HeuristicError> {
    let s = realise(off, inst, r)?.schedule;
    Ok(check(inst, &s))
}

/// Refuted for the GPU memory alone?
fn memory_only(r: &Rejected) -> bool {
    super::only_capacity(r)
}

/// The best checked schedule of the search, the last refutation, and the
/// number of plans checked.
#[derive(Default)]
struct Outcome {
    best: Option<Checked>,
    refuted: Option<Rejected>,
    checked: usize,
}

impl Outcome {
    fn offer(&mut self, o: CheckOutcome) -> Option<Checked> {
        self.checked += 1;
        match o {
            CheckOutcome::Valid(c) => {
                if self
                    .best
                    .as_ref()
                    .is_none_or(|b| c.makespan() < b.makespan())
                {
                    self.best = Some(c.clone());
                }
                Some(c)
            }
            CheckOutcome::Invalid(r) => {
                if self.refuted.as_ref().is_none_or(|_| !memory_only(&r)) {
                    self.refuted = Some(r);
                }
                None
            }
        }
    }
}

/// A necessary condition on the options (`proofs/OFFMATE-BOUNDS.md` Lemma 2):
/// at the first backward's start the inputs, every interface output, the
/// activations each option keeps and that op's transient memory are all on
/// the GPU. Plans that break it are not realised.
fn fits_turnaround(off: &Offmate, option: &[usize]) -> bool {
    let mut need = off.input.0 as u128;
    for (b, blk) in off.blocks.iter().enumerate() {
        need += blk.out.0 as u128 + blk.options[option[b]].saved.0 as u128;
    }
    if let Some((b, blk)) = off.blocks.iter().enumerate().last() {
        need += blk.options[option[b]].bwd_overhead.0 as u128;
    }
    need <= off.gpu_memory.0 as u128
}

/// The initial knob settings (options that pass [`fits_turnaround`]), ranked
/// by their estimate.
fn first_plans(c: &Ctx) -> Vec<(i64, Knobs)> {
    let off = c.off;
    let np = off.params.len();
    let mut out: Vec<(i64, Knobs)> = Vec::new();
    let mut seen: Vec<(Vec<usize>, usize, usize)> = Vec::new();
    for fastest_top in [0, 1, 2, 3, 4, 6, 8, 12] {
        for low_link in [false, true] {
            for (lead, delay) in [(1, 0), (2, 0), (1, 1), (2, 1)] {
                let k = Knobs {
                    fastest_top: fastest_top.min(off.l()),
                    low_link,
                    lead,
                    delay,
                    pin_param: vec![false; np],
                    pin_state: vec![false; np],
                };
                let key = (options(off, &k), lead, delay);
                if seen.contains(&key) || !fits_turnaround(off, &key.0) {
                    continue;
                }
                seen.push(key);
                out.push((plan_of(c, &k).1, k));
            }
        }
    }
    out.sort_by_key(|(e, k)| (*e, k.fastest_top, k.low_link, k.lead, k.delay));
    if out.is_empty() {
        // Nothing passes the filter: the least-memory plan, so that the
        // checker states why it does not fit.
        let k = Knobs {
            fastest_top: 0,
            low_link: true,
            lead: 1,
            delay: 0,
            pin_param: vec![false; np],
            pin_state: vec![false; np],
        };
        out.push((plan_of(c, &k).1, k));
    }
    out
}

/// Pins for `free` bytes on top of `k`: states, then parameters, of the
/// GPU-updated (or frozen) tensors, by the estimated link time they save per
/// byte.
fn pins(c: &Ctx, k: &Knobs, update: &[Update], loads: &Loads, free: u64) -> Knobs {
    let off = c.off;
    let mut cands: Vec<(i64, u64, usize, bool)> = Vec::new();
    for p in 0..off.params.len() {
        if c.first[p].is_none() || matches!(update[p], Update::Cpu(_)) {
            continue;
        }
        if update[p] == Update::Gpu && c.states(p) > 0 && !k.pin_state[p] {
            let st = c.state_steps(p, k);
            let mut minus: Vec<Add> = arrivals(&st)
                .into_iter()
                .map(|t| (t, H2D, -c.xfer(c.states(p))))
                .collect();
            minus.extend(c.offload_adds(p, k, c.states(p), -1));
            cands.push((-loads.delta(&minus), c.states(p), p, true));
        }
        if !k.pin_param[p] {
            let bytes = off.params[p].bytes.0;
            let mut minus: Vec<Add> = arrivals(&c.uses[p])
                .into_iter()
                .map(|t| (t, H2D, -c.xfer(bytes)))
                .collect();
            if update[p] == Update::Gpu {
                minus.extend(c.offload_adds(p, k, bytes, -1));
            }
            cands.push((-loads.delta(&minus), bytes, p, false));
        }
    }
    // Most saving per byte first (cross-multiplied, exact).
    cands.sort_by(|a, b| {
        ((b.0 as i128) * (a.1 as i128))
            .cmp(&((a.0 as i128) * (b.1 as i128)))
            .then(a.2.cmp(&b.2))
            .then(b.3.cmp(&a.3))
    });
    let mut left = free;
    let mut out = k.clone();
    for (gain, bytes, p, state) in cands {
        if gain <= 0 || bytes > left {
            continue;
        }
        left -= bytes;
        if state {
            out.pin_state[p] = true;
        } else {
            out.pin_param[p] = true;
        }
    }
    out
}

/// Pin rounds from `k`, whose checked schedule is `c0`.
fn pin_rounds(
    c: &Ctx,
    inst: &Instance,
    mut k: Knobs,
    mut cur: Checked,
    out: &mut Outcome,
    deadline: Option<Instant>,
) -> Result<(), HeuristicError> {
    let cap = inst.machine.gpu_capacity.0;
    for _ in 0..PIN_ROUNDS {
        let option = options(c.off, &k);
        let (update, loads) = assign(c, &option, &k);
        let mut free = cap.saturating_sub(cur.report().peak_memory.0);
        let mut moved = false;
        for _ in 0..=HALVINGS {
            if free == 0 || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(());
            }
            let next = pins(c, &k, &update, &loads, free);
            if next == k {
                return Ok(());
            }
            let (r, _) = plan_of(c, &next);
            match out.offer(realise_check(c.off, inst, &r)?) {
                Some(ch) if ch.makespan() < cur.makespan() => {
                    (k, cur, moved) = (next, ch, true);
                    break;
                }
                Some(_) => return Ok(()),
                None => free /= 2,
            }
        }
        if !moved {
            return Ok(());
        }
    }
    Ok(())
}

/// The search: the first plans by estimate, realised and checked; pin rounds
/// on the best valid ones. Stops at `deadline` (with what it has).
fn search(
    off: &Offmate,
    inst: &Instance,
    deadline: Option<Instant>,
) -> Result<Outcome, HeuristicError> {
    let c = Ctx::new(off, inst);
    let mut out = Outcome::default();
    let mut valid: Vec<(Checked, Knobs)> = Vec::new();
    for (_, k) in first_plans(&c).into_iter().take(FIRST_CHECKS) {
        if deadline.is_some_and(|d| Instant::now() >= d) && out.checked > 0 {
            break;
        }
        let (r, _) = plan_of(&c, &k);
        if let Some(ch) = out.offer(realise_check(off, inst, &r)?) {
            valid.push((ch, k));
        }
    }
    valid.sort_by_key(|(ch, _)| ch.makespan());
    for (ch, k) in valid.into_iter().take(PINNED_PLANS) {
        pin_rounds(&c, inst, k, ch, &mut out, deadline)?;
    }
    Ok(out)
}

/// The best checked `offmate-balance` schedule of `off`, or why there is none.
pub fn plan(off: &Offmate, inst: &Instance, limit: SolverLimit) -> Result<Found, HeuristicError> {
    let deadline = match limit {
        SolverLimit::Deterministic => None,
        SolverLimit::Time(d) => Instant::now().checked_add(d),
    };
    let out = search(off, inst, deadline)?;
    match (out.best, out.refuted) {
        (Some(best), _) => Ok(Found {
            schedule: best.schedule().clone(),
            note: Some(format!(
                "step-balanced plan, best of {} checked",
                out.checked
            )),
        }),
        (None, Some(r)) if memory_only(&r) => Err(HeuristicError::NoSchedule {
            heuristic: NAME,
            reason: format!(
                "none of its {} plans fits: {}",
                out.checked,
                r.violations()
                    .first()
                    .map(|v| v.describe(inst))
                    .unwrap_or_default()
            ),
        }),
        // Refuted for another rule: a bug, which `heuristic::run` reports as
        // `invalid` with the checker's reason.
        (None, Some(r)) => Ok(Found {
            schedule: r.schedule().clone(),
            note: None,
        }),
        (None, None) => Err(HeuristicError::NoSchedule {
            heuristic: NAME,
            reason: "no plan was checked (time limit)".into(),
        }),
    }
}

/// `offmate-balance` in the heuristic registry.
pub struct Balance;

impl Heuristic for Balance {
    fn name(&self) -> &'static str {
        NAME
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        file.offmate().is_some()
    }
    fn schedule(
        &self,
        file: &InstanceFile,
        inst: &Instance,
    ) -> Result<crate::schedule::Schedule, HeuristicError> {
        self.schedule_within(file, inst, SolverLimit::Deterministic)
            .map(|f| f.schedule)
    }
    fn schedule_within(
        &self,
        file: &InstanceFile,
        inst: &Instance,
        limit: SolverLimit,
    ) -> Result<Found, HeuristicError> {
        let off = file
            .offmate()
            .ok_or_else(|| HeuristicError::NotApplicable {
                heuristic: NAME,
                family: file.family().into(),
            })?;
        plan(off, inst, limit)
    }
}
