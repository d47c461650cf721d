//! The step realiser (`FAMILIES.md` §3.5): whole-tensor decisions
//! ([`Rounded`]) become a cyclic [`Schedule`] of timed events.
//!
//! Step t starts at τ_t, the sum of the earlier realised step lengths. In it:
//! the GPU runs the step marker (when H > 0) and the block's op at τ_t, then (backward steps) the `optG.p` of the
//! parameters whose last gradient it produced; the CPU runs `mgmt{t}` (H) at
//! τ_t, then the `optC.p` placed in the step, each after its gradient's offload
//! ends; d2h carries, in order of readiness, the gradients of CPU-updated
//! parameters (with delete, after the backward), the offloaded internals of the
//! previous forward (with delete), and the parameter and state offloads of the
//! step (after their `optG` when it ran in this step); h2d carries the
//! prefetches that make the next step's residency (internals of the next
//! backward, parameters, states; a parameter updated on the CPU in this step is
//! prefetched after its `optC` ends, which orders eqs. (12)/(13)'s same-step
//! races). The step ends when its last stream does; its deletes fall there
//! (Assumption 3), those of the last step at time 0 of the next period. A
//! step with nothing of positive length that deletes a tensor lasts one tick,
//! so that its deletes follow its zero-duration ops. The
//! period is the sum of the steps; S₀ is the state at the boundary.
//!
//! [`realise_paced`] with a [`Pace::Span`] lets transfers and CPU work span
//! step borders (each stream keeps its own clock): step t+1 starts when the GPU
//! is free, `mgmt{t}` has ended (the marker's precedence), the prefetches for
//! t+1 have arrived and the offloads issued `d2h_lag` or more steps earlier
//! have ended (the lag bounds the GPU memory the backlog holds); a forward's
//! offloaded internals leave right after its op (lag ≥ 1); with `cpu_spill`
//! the `optC` of a step may run on into later steps (the next `mgmt` waits for
//! the CPU). A tensor leaving the GPU is deleted at the step border or when
//! its offload ends, whichever is later; the last step ends when every stream
//! has; an `optG` waits for a still running offload of its parameter or
//! states (which copies the old version). Nothing here decides validity: the
//! caller checks.
//!
//! Owns: [`realise`], [`realise_paced`], [`Pace`], [`Realised`]. Must not import: the checker (the caller
//! checks), exact solvers.

use super::postprocess::{group_steps, Rounded, Update};
use crate::family::offmate::Offmate;
use crate::family::offmate_compile::{names, ticks_for};
use crate::heuristic::HeuristicError;
use crate::model::{Direction, Duplex, Instance, OpId, TensorId};
use crate::schedule::{CyclicState, Event, Schedule};
use crate::units::Ticks;
use std::collections::HashMap;

/// A realised schedule and the paper-model figures of the rounded plan.
#[derive(Clone, Debug)]
pub struct Realised {
    pub schedule: Schedule,
    /// Realised length of each step.
    pub steps: Vec<Ticks>,
    /// Per step, the busiest stream's total (GPU, d2h, h2d, CPU), summed: the
    /// post-processed plan's time in the paper's step model (≤ the period).
    pub step_sum: Ticks,
    /// Per step, (GPU, d2h, h2d, CPU) busy ticks: the streams' totals.
    pub streams: Vec<[Ticks; 4]>,
}

/// How steps synchronise their streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// Step synchronous: a step ends when its busiest stream does.
    Sync,
    /// Transfers and CPU work may span step borders (module docs).
    Span {
        /// Step t+1 waits for the offloads issued in steps ≤ t − `d2h_lag`.
        d2h_lag: usize,
        /// May a step's `optC` run on into later steps?
        cpu_spill: bool,
    },
}

impl Pace {
    /// The spanning paces the improvement tries (`heuristic::offmate::improve`).
    pub const SPANS: [Pace; 6] = [
        Pace::Span {
            d2h_lag: 0,
            cpu_spill: true,
        },
        Pace::Span {
            d2h_lag: 1,
            cpu_spill: false,
        },
        Pace::Span {
            d2h_lag: 1,
            cpu_spill: true,
        },
        Pace::Span {
            d2h_lag: 2,
            cpu_spill: true,
        },
        Pace::Span {
            d2h_lag: 4,
            cpu_spill: true,
        },
        Pace::Span {
            d2h_lag: usize::MAX,
            cpu_spill: true,
        },
    ];
    /// The improvement's move name for this pace (`span …`).
    pub fn label(self) -> &'static str {
        match self {
            Pace::Sync => "sync",
            Pace::Span {
                d2h_lag: 0,
                cpu_spill: true,
            } => "span (d2h lag 0, CPU spill)",
            Pace::Span {
                d2h_lag: 1,
                cpu_spill: false,
            } => "span (d2h lag 1)",
            Pace::Span {
                d2h_lag: 1,
                cpu_spill: true,
            } => "span (d2h lag 1, CPU spill)",
            Pace::Span {
                d2h_lag: 2,
                cpu_spill: true,
            } => "span (d2h lag 2, CPU spill)",
            Pace::Span {
                d2h_lag: 4,
                cpu_spill: true,
            } => "span (d2h lag 4, CPU spill)",
            Pace::Span { .. } => "span",
        }
    }
    fn lag(self) -> Option<usize> {
        match self {
            Pace::Sync => None,
            Pace::Span { d2h_lag, .. } => Some(d2h_lag),
        }
    }
    /// Are a forward's offloaded internals issued right after its op?
    fn early_internals(self) -> bool {
        self.lag().is_some_and(|l| l >= 1)
    }
}

/// The stream clocks a spanning pace carries across step borders.
#[derive(Default)]
struct Clocks {
    d2h: Ticks,
    h2d: Ticks,
    cpu: Ticks,
    /// Per step, the end of its last offload (its start when it has none).
    d2h_ends: Vec<Ticks>,
}

struct Ctx<'a> {
    off: &'a Offmate,
    pace: Pace,
    clocks: Clocks,
    inst: &'a Instance,
    r: &'a Rounded,
    t_ix: HashMap<&'a str, TensorId>,
    o_ix: HashMap<&'a str, OpId>,
    events: Vec<Event>,
    /// End of the latest offload of each tensor (gradients, internals).
    off_end: HashMap<TensorId, Ticks>,
    /// The latest delete of each tensor (a prefetch of it starts no earlier).
    del_at: HashMap<TensorId, Ticks>,
    /// The end of each parameter's `optC` so far (a prefetch of it starts no
    /// earlier: spanning, the update may run on into later steps).
    optc_end: HashMap<usize, Ticks>,
}

/// One queued transfer: tensor, ready time, delete flag.
type Item = (TensorId, Ticks, bool);

impl<'a> Ctx<'a> {
    fn t(&self, name: &str) -> Result<TensorId, HeuristicError> {
        self.t_ix.get(name).copied().ok_or_else(|| missing(name))
    }
    fn o(&self, name: &str) -> Result<OpId, HeuristicError> {
        self.o_ix.get(name).copied().ok_or_else(|| missing(name))
    }
    fn compute(&mut self, op: OpId, start: Ticks) -> Ticks {
        let end = start + self.inst.op(op).duration;
        self.events.push(Event::Compute { op, start, end });
        end
    }
    /// When the latest delete of `t` so far happens (0 when none).
    fn deleted(&self, t: TensorId) -> Ticks {
        self.del_at.get(&t).copied().unwrap_or(Ticks::ZERO)
    }
    fn xfer_ticks(&self, t: TensorId) -> Ticks {
        ticks_for(self.inst.machine.bandwidth, self.inst.tensor(t).size)
    }
    /// Transfers in order of readiness on one channel from `free`; returns
    /// (channel end, busy ticks) and each item's tensor and end.
    fn run_channel(
        &mut self,
        dir: Direction,
        mut items: Vec<Item>,
        mut free: Ticks,
    ) -> (Ticks, Ticks, Vec<(TensorId, Ticks)>) {
        items.sort_by_key(|i| i.1);
        let mut busy = Ticks::ZERO;
        let mut ends = Vec::new();
        for (tensor, ready, delete) in items {
            let start = free.max(ready);
            let d = self.xfer_ticks(tensor);
            let end = start + d;
            busy = busy + d;
            self.events.push(Event::Transfer {
                dir,
                tensor,
                start,
                end,
                delete,
            });
            ends.push((tensor, end));
            free = end;
        }
        (free, busy, ends)
    }
}

fn missing(name: &str) -> HeuristicError {
    HeuristicError::NoSchedule {
        heuristic: super::NAME,
        reason: format!("the compiled instance has no `{name}` (not an offmate instance?)"),
    }
}

/// Realise the rounded plan as a cyclic schedule, step synchronous.
pub fn realise(off: &Offmate, inst: &Instance, r: &Rounded) -> Result<Realised, HeuristicError> {
    realise_paced(off, inst, r, Pace::Sync)
}

/// The least period ≥ `tau` in which every event starts before the period's
/// end and every op ends by it (a zero-duration op may sit at the end).
fn cover_events(tau: Ticks, events: &[Event]) -> Ticks {
    events.iter().fold(tau, |p, e| match e {
        Event::Compute { end, .. } => p.max(*end),
        _ => p.max(e.start() + Ticks(1)),
    })
}

/// Realise the rounded plan as a cyclic schedule at `pace`.
pub fn realise_paced(
    off: &Offmate,
    inst: &Instance,
    r: &Rounded,
    pace: Pace,
) -> Result<Realised, HeuristicError> {
    let (t_ix, o_ix) = inst.name_maps();
    let mut c = Ctx {
        off,
        pace,
        clocks: Clocks::default(),
        inst,
        r,
        t_ix,
        o_ix,
        events: Vec::new(),
        off_end: HashMap::new(),
        del_at: HashMap::new(),
        optc_end: HashMap::new(),
    };
    let n = 2 * off.l();
    let mut tau = Ticks::ZERO;
    let mut steps = Vec::with_capacity(n);
    let mut step_sum = Ticks::ZERO;
    let mut streams = Vec::with_capacity(n);
    for t in 0..n {
        let (end, busy) = realise_step(&mut c, t, tau)?;
        let busiest = busy_max(&busy, inst.machine.duplex);
        streams.push(busy);
        let leaving: Vec<TensorId> = residency(&c, t)?
            .into_iter()
            .filter(|&(_, (now, next))| now && !next)
            .map(|(tensor, _)| tensor)
            .collect();
        // A step of length 0 (zero-duration ops only) that deletes lasts one
        // tick: at one instant deletes come before op starts (MODEL.md §2.4),
        // so a delete at its end would take the tensor from its own op.
        let end = if end <= tau && !leaving.is_empty() && t + 1 < n {
            tau + Ticks(1)
        } else {
            end.max(tau)
        };
        steps.push(end - tau);
        step_sum = step_sum + busiest;
        // Deletes at the step's end (spanning: or when the tensor's offload
        // ends, if later); the last step's at time 0 of the next period
        // (after the boundary's zero-duration ops, §2.4 R8).
        for tensor in leaving {
            let at = if t + 1 == n {
                Ticks::ZERO
            } else {
                c.off_end.get(&tensor).map_or(end, |&e| e.max(end))
            };
            c.events.push(Event::Delete { tensor, at });
            c.del_at.insert(tensor, at);
        }
        tau = end;
    }
    // Spanning paces may finish an offload, and so delete its tensor, at or
    // after the last step's end: the period then covers it (every event
    // starts in [0, P), an op ends by P: the checker's period rule).
    let tau = cover_events(tau, &c.events);
    if tau <= Ticks::ZERO {
        return Err(HeuristicError::NoSchedule {
            heuristic: super::NAME,
            reason: "every step has length 0".into(),
        });
    }
    let initial = initial_state(&c)?;
    Ok(Realised {
        schedule: Schedule::cyclic(tau, initial, c.events),
        steps,
        step_sum,
        streams,
    })
}

/// A tensor and whether it is on the GPU during step t and during step t+1.
type Residency = (TensorId, (bool, bool));

/// Every parameter and state tensor with its residency (during t, during t+1).
fn residency(c: &Ctx, t: usize) -> Result<Vec<Residency>, HeuristicError> {
    let n = 2 * c.off.l();
    let u = (t + 1) % n;
    let mut out = Vec::new();
    for (p, pr) in c.r.params.iter().enumerate() {
        let name = &c.off.params[p].name;
        out.push((c.t(name)?, (pr.resident[t], pr.resident[u])));
        if pr.update == Update::Gpu && c.off.optimizer.states > 0 {
            out.push((
                c.t(&names::m(name))?,
                (pr.state_resident[t], pr.state_resident[u]),
            ));
        }
    }
    Ok(out)
}

/// The step's events from τ; returns its end and its streams' busy ticks.
fn realise_step(c: &mut Ctx, t: usize, tau: Ticks) -> Result<(Ticks, [Ticks; 4]), HeuristicError> {
    let off = c.off;
    let l = off.l();
    let n = 2 * l;
    let (blk, fwd) = off.step_block(t);
    let (i, o) = (blk + 1, c.r.option[blk]);
    if off.cpu_management.0 > 0 {
        c.compute(c.o(&names::step(t))?, tau); // the zero-duration step marker
    }
    let op = c.o(&if fwd { names::f(i, o) } else { names::b(i, o) })?;
    let op_end = c.compute(op, tau);
    let mut gpu_end = op_end;
    let mut opt_end: HashMap<usize, Ticks> = HashMap::new();
    let mut d2h: Vec<Item> = Vec::new();
    let early = c.pace.early_internals();
    // Spanning: this forward's internals leave right after its op.
    if early && fwd {
        let po = c.r.option[blk];
        if off.blocks[blk].options[po].offloaded.0 > 0 && t + 1 < n - 1 - blk {
            d2h.push((c.t(&names::h(blk + 1, po))?, op_end, true));
        }
    }
    if !fwd {
        for (p, b1) in off.updated_params() {
            if b1 != i {
                continue;
            }
            let name = &off.params[p].name;
            match c.r.params[p].update {
                Update::Gpu => {
                    // Spanning: an offload of p or its states still running
                    // (it copies the old version) ends before the update.
                    let mut at = gpu_end;
                    for id in [
                        c.t_ix.get(name.as_str()),
                        c.t_ix.get(names::m(name).as_str()),
                    ]
                    .into_iter()
                    .flatten()
                    {
                        at = at.max(c.off_end.get(id).copied().unwrap_or(at));
                    }
                    gpu_end = c.compute(c.o(&names::opt_g(name))?, at);
                    opt_end.insert(p, gpu_end);
                }
                Update::Cpu(_) => d2h.push((c.t(&names::grad(name))?, op_end, true)),
                Update::None => {}
            }
        }
    }
    // The internals of the previous forward leave after it (not when its
    // backward comes right next).
    if t >= 1 && t - 1 < l && !early {
        let pb = t - 1;
        let po = c.r.option[pb];
        if off.blocks[pb].options[po].offloaded.0 > 0 && t < n - 1 - pb {
            d2h.push((c.t(&names::h(pb + 1, po))?, tau, true));
        }
    }
    for (p, pr) in c.r.params.iter().enumerate() {
        let name = &off.params[p].name;
        let ready = opt_end.get(&p).copied().unwrap_or(tau);
        if pr.offload == Some(t) {
            d2h.push((c.t(name)?, ready, false));
        }
        if pr.state_offload == Some(t) {
            d2h.push((c.t(&names::m(name))?, ready, false));
        }
    }
    let d2h_from = tau.max(c.clocks.d2h);
    let (d2h_end, d2h_busy, ends) = c.run_channel(Direction::Offload, d2h, d2h_from);
    for (tensor, end) in ends {
        c.off_end.insert(tensor, end);
    }
    let (mgmt_end, cpu_end, cpu_busy) = cpu_ops(c, t, tau)?;
    let h2d = prefetches(c, t, tau)?;
    let free = if c.inst.machine.duplex == Duplex::HalfDuplex {
        d2h_end
    } else {
        tau
    };
    let (h2d_end, h2d_busy, _) = c.run_channel(Direction::Prefetch, h2d, free.max(c.clocks.h2d));
    let busy = [gpu_end - tau, d2h_busy, h2d_busy, cpu_busy];
    let sync = gpu_end.max(d2h_end).max(h2d_end).max(cpu_end);
    let Pace::Span { d2h_lag, cpu_spill } = c.pace else {
        return Ok((sync, busy));
    };
    c.clocks.d2h = d2h_end;
    c.clocks.h2d = h2d_end;
    c.clocks.cpu = cpu_end;
    c.clocks.d2h_ends.push(d2h_end);
    if t + 1 == n {
        return Ok((
            sync.max(*c.clocks.d2h_ends.iter().max().unwrap_or(&sync)),
            busy,
        ));
    }
    let mut end = gpu_end.max(h2d_end).max(mgmt_end);
    if !cpu_spill {
        end = end.max(cpu_end);
    }
    if let Some(k) = t.checked_sub(d2h_lag) {
        end = end.max(c.clocks.d2h_ends[k]);
    }
    Ok((end, busy))
}

/// The busiest stream of a step (half duplex: both directions share the link).
fn busy_max(b: &[Ticks; 4], duplex: Duplex) -> Ticks {
    let link = if duplex == Duplex::HalfDuplex {
        b[1] + b[2]
    } else {
        b[1].max(b[2])
    };
    b[0].max(link).max(b[3])
}

/// `mgmt{t}` and the step's `optC.p` (each one's end noted in the context);
/// returns (`mgmt` end, CPU end, busy).
fn cpu_ops(c: &mut Ctx, t: usize, tau: Ticks) -> Result<(Ticks, Ticks, Ticks), HeuristicError> {
    let mut free = tau.max(c.clocks.cpu);
    let mut busy = Ticks::ZERO;
    if c.off.cpu_management.0 > 0 {
        let m = c.o(&names::mgmt(t))?;
        free = c.compute(m, free);
        busy = busy + c.off.cpu_management;
    }
    let mgmt_end = free;
    for p in 0..c.r.params.len() {
        if c.r.params[p].update != Update::Cpu(t) {
            continue;
        }
        let name = &c.off.params[p].name;
        let grad = c.t(&names::grad(name))?;
        let ready = c.off_end.get(&grad).copied().unwrap_or(tau);
        let op = c.o(&names::opt_c(name))?;
        busy = busy + c.inst.op(op).duration;
        free = c.compute(op, free.max(ready));
        c.optc_end.insert(p, free);
    }
    Ok((mgmt_end, free, busy))
}

/// The prefetches of step t (what step t+1 needs and t lacks).
fn prefetches(c: &Ctx, t: usize, tau: Ticks) -> Result<Vec<Item>, HeuristicError> {
    let off = c.off;
    let n = 2 * off.l();
    let u = (t + 1) % n;
    let mut out = Vec::new();
    let (ub, ufwd) = off.step_block(u);
    if !ufwd && u > 0 {
        let uo = c.r.option[ub];
        // offloaded when its backward is not right after its forward
        if off.blocks[ub].options[uo].offloaded.0 > 0 && ub + 1 < n - 1 - ub {
            let h = c.t(&names::h(ub + 1, uo))?;
            let ready = c.off_end.get(&h).copied().unwrap_or(tau).max(tau);
            out.push((h, ready, false));
        }
    }
    for (p, pr) in c.r.params.iter().enumerate() {
        let name = &off.params[p].name;
        if pr.resident[u] && !pr.resident[t] {
            let id = c.t(name)?;
            let ready = c.optc_end.get(&p).map_or(tau, |&e| e.max(tau));
            out.push((id, ready.max(c.deleted(id)), false));
        }
        if pr.update == Update::Gpu
            && off.optimizer.states > 0
            && pr.state_resident[u]
            && !pr.state_resident[t]
        {
            let id = c.t(&names::m(name))?;
            out.push((id, tau.max(c.deleted(id)), false));
        }
    }
    Ok(out)
}

/// S₀: the input buffer and the tensors resident at the end of the last step
/// (before time-0 deletes) on the GPU; on the CPU every tensor whose CPU copy
/// holds the latest value at the boundary.
fn initial_state(c: &Ctx) -> Result<CyclicState, HeuristicError> {
    let off = c.off;
    let n = 2 * off.l();
    let mut gpu = vec![c.t(&names::x(0))?];
    let mut cpu = Vec::new();
    for (p, pr) in c.r.params.iter().enumerate() {
        let name = &off.params[p].name;
        let id = c.t(name)?;
        let used = off
            .param_groups()
            .iter()
            .find(|g| g.params.contains(&p))
            .map(|g| g.blocks[0]);
        if pr.resident[n - 1] || pr.resident[0] {
            gpu.push(id);
        }
        let gw = used.map(|b| group_steps(off, b).0);
        match pr.update {
            Update::None | Update::Cpu(_) => cpu.push(id),
            Update::Gpu => {
                if matches!((pr.offload, gw), (Some(s), Some(g)) if s >= g) {
                    cpu.push(id);
                }
            }
        }
        if let Update::Cpu(_) = pr.update {
            cpu.push(c.t(&names::grad(name))?);
        }
        if off.optimizer.states > 0 && pr.update != Update::None {
            let m = c.t(&names::m(name))?;
            match pr.update {
                Update::Cpu(_) => cpu.push(m),
                _ => {
                    if pr.state_resident[n - 1] || pr.state_resident[0] {
                        gpu.push(m);
                    }
                    if matches!((pr.state_offload, gw), (Some(s), Some(g)) if s >= g) {
                        cpu.push(m);
                    }
                }
            }
        }
    }
    for b in 0..off.l() {
        let o = c.r.option[b];
        if off.blocks[b].options[o].offloaded.0 > 0 && b + 1 < n - 1 - b {
            cpu.push(c.t(&names::h(b + 1, o))?);
        }
    }
    Ok(CyclicState { gpu, cpu })
}
