//! Anytime exact search: the A* search of this module's parent, run as a
//! best-first branch and bound with an incumbent, so that it returns, within
//! a time limit, the best checked schedule it knows and a **certified lower
//! bound**: the least estimate among the nodes it has not finished with
//! (`proofs/ANYTIME.md`). When the two meet the result is optimal.
//!
//! Owns: [`AnytimeOptions`], [`AnytimeOutcome`], [`Progress`], [`Stop`] and
//! [`solve_anytime`]; the strengthened estimate (remaining compute, the
//! prefetches still owed on the prefetch channel); the open list with its
//! floor (the least estimate of every node given up: dropped for memory, or
//! expanded only in part).
//! Must not import: heuristics, bounds (incumbents and bound values come in
//! as arguments: [`AnytimeOptions::incumbent`], [`AnytimeOptions::known_bound`]),
//! the MILP, the SMT method.
//!
//! Every successor is the parent's (the shared semantics' transitions, the
//! structural limits of `proofs/SEARCH.md`); every schedule it returns is
//! replayed by the checker. The search is complete within those limits, which
//! is what makes the least open estimate a bound.

use super::driver::{closes_period, context, rebuild, search_scope, start_nodes, End};
use super::expand::expand;
use super::node::{Ctx, Node};
use crate::check::{check, CheckOutcome, Checked};
use crate::exact::{ExactError, Method};
use crate::model::Direction;
use crate::semantics::GpuCopy;
use crate::units::Ticks;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A progress report, passed to [`AnytimeOptions::progress`].
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    pub elapsed: Duration,
    /// The best makespan (period) known so far, checked.
    pub incumbent: Option<Ticks>,
    /// The certified lower bound so far (the known bound included).
    pub lower_bound: Ticks,
    /// States expanded so far.
    pub states: u64,
    /// Nodes in the open list.
    pub open: usize,
}

impl Progress {
    /// (incumbent − bound) / bound, if there is an incumbent and a positive bound.
    pub fn gap(&self) -> Option<f64> {
        gap(self.incumbent, self.lower_bound)
    }
}

fn gap(inc: Option<Ticks>, lb: Ticks) -> Option<f64> {
    let u = inc?;
    (lb.0 > 0).then(|| (u.0 - lb.0) as f64 / lb.0 as f64)
}

/// The callback type of [`AnytimeOptions::progress`].
pub type ProgressFn<'a> = dyn Fn(&Progress) + 'a;

/// Controls of [`solve_anytime`]. `Default`: 60 s, no incumbent, no known
/// bound, no progress, no interrupt.
pub struct AnytimeOptions<'a> {
    pub time_limit: Duration,
    /// A checked schedule of this instance to start from (a heuristic's); it
    /// is re-checked against the instance, and the search prunes every node
    /// whose estimate reaches its makespan.
    pub incumbent: Option<Checked>,
    /// A lower bound on the optimum proved elsewhere (a certified bound of
    /// `crate::bound`); the caller vouches for it. It is reported in
    /// [`AnytimeOutcome::lower_bound`] (the max with the search's own) and
    /// ends the search once the incumbent meets it; the search's own bound,
    /// [`AnytimeOutcome::search_bound`], never uses it.
    pub known_bound: Option<Ticks>,
    /// Called every [`AnytimeOptions::progress_every`] and at the end.
    pub progress: Option<&'a ProgressFn<'a>>,
    pub progress_every: Duration,
    /// Set to true to stop; the outcome then holds what the search has.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// Only schedules shorter than this are wanted (a checked schedule of
    /// that makespan is known elsewhere, e.g. for another op sequence of a
    /// free-order instance): nodes whose estimate reaches it are pruned as if
    /// an incumbent of that makespan were held. A search that empties its
    /// open list then proves "none shorter than the cutoff" (its bound is the
    /// cutoff), never infeasibility.
    pub cutoff: Option<Ticks>,
    /// Stop after expanding this many states.
    pub max_states: u64,
    /// The most nodes kept open; beyond it the worse half is given up (its
    /// least estimate stays in the bound).
    pub max_open: usize,
    /// The most delete sets of live tensors tried per choice of starts at an
    /// instant; a node cut there stays in the bound with its estimate.
    pub mask_budget: usize,
}

impl Default for AnytimeOptions<'_> {
    fn default() -> Self {
        AnytimeOptions {
            time_limit: Duration::from_secs(60),
            incumbent: None,
            known_bound: None,
            progress: None,
            progress_every: Duration::from_secs(2),
            interrupt: None,
            cutoff: None,
            max_states: u64::MAX,
            max_open: 400_000,
            mask_budget: 64,
        }
    }
}

/// Why the search stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Stop {
    /// The bound met the incumbent (or the open list emptied): nothing left.
    Closed,
    /// Every node kept was done with, but some were given up (memory or the
    /// mask budget): the bound is their least estimate.
    GaveUp,
    TimeLimit,
    StateLimit,
    Interrupted,
    /// Cyclic: too many boundary states to search from; nothing searched.
    TooManyRoots,
}

/// What [`solve_anytime`] established.
#[derive(Clone, Debug)]
pub struct AnytimeOutcome {
    /// The best schedule known (the incumbent given, or one the search found),
    /// checked against the instance.
    pub best: Option<Checked>,
    /// Whether [`AnytimeOutcome::best`] was found by the search (else it is
    /// the incumbent passed in).
    pub best_from_search: bool,
    /// Certified lower bound on the optimal makespan (period): the max of the
    /// search's own bound and the known bound passed in (0 if neither).
    pub lower_bound: Ticks,
    /// The search's own certified bound (`proofs/ANYTIME.md`), when it ran.
    pub search_bound: Option<Ticks>,
    /// States expanded.
    pub states: u64,
    /// The best schedule meets the lower bound: `optimal (certified)`.
    pub proven_optimal: bool,
    /// No schedule exists (within the structural limits of proofs/SEARCH.md):
    /// the search emptied its open list without giving anything up and no
    /// incumbent was given.
    pub infeasible: bool,
    pub stop: Stop,
    pub elapsed: Duration,
    pub notes: Vec<String>,
}

impl AnytimeOutcome {
    /// (best − bound) / bound, if there is a best schedule and a positive bound.
    pub fn gap(&self) -> Option<f64> {
        gap(self.best.as_ref().map(Checked::makespan), self.lower_bound)
    }

    /// The claim words for the outcome.
    pub fn claim(&self) -> &'static str {
        if self.proven_optimal {
            "optimal (certified)"
        } else if self.infeasible {
            "infeasible (certified)"
        } else if self.best.is_some() {
            "valid"
        } else {
            "lower bound (certified)"
        }
    }
}

/// The open list: a heap on the estimate over a slab of nodes, and the floor
/// (least estimate of every node given up).
struct Open {
    heap: BinaryHeap<Reverse<(i64, i64, usize)>>,
    slab: Vec<Option<Node>>,
    free: Vec<usize>,
    floor: i64,
    counter: i64,
}

impl Open {
    fn push(&mut self, n: Node, f: i64) {
        self.counter += 1;
        let id = match self.free.pop() {
            Some(id) => {
                self.slab[id] = Some(n);
                id
            }
            None => {
                self.slab.push(Some(n));
                self.slab.len() - 1
            }
        };
        // Ties: the newest first (deeper, closer to a finished schedule).
        self.heap.push(Reverse((f, -self.counter, id)));
    }

    fn pop(&mut self) -> Option<(Node, i64)> {
        let Reverse((f, _, id)) = self.heap.pop()?;
        let n = self.slab[id].take()?;
        self.free.push(id);
        Some((n, f))
    }

    fn min(&self) -> i64 {
        self.heap.peek().map_or(i64::MAX, |Reverse((f, _, _))| *f)
    }

    /// Give up the worse half of the open nodes (their least estimate is
    /// kept as the floor of the bound).
    fn shrink(&mut self) {
        let mut all = std::mem::take(&mut self.heap).into_sorted_vec();
        // into_sorted_vec of Reverse is descending in f: the worst first.
        let cut = all.len() / 2;
        for Reverse((f, _, id)) in all.drain(..cut) {
            self.floor = self.floor.min(f);
            self.slab[id] = None;
            self.free.push(id);
        }
        self.heap = all.into();
    }
}

/// Search for a schedule better than the incumbent, within
/// `opts.time_limit`, and return the best schedule known with a certified
/// lower bound (`proofs/ANYTIME.md`). Scope: the search's
/// ([`super::solve`]); anything else is refused with
/// [`ExactError::Unsupported`]. An incumbent the checker rejects for this
/// instance is refused with [`ExactError::CheckerRejected`].
pub fn solve_anytime(
    inst: &crate::model::Instance,
    opts: &AnytimeOptions,
) -> Result<AnytimeOutcome, ExactError> {
    let started = Instant::now();
    let (order, reads_at) = search_scope(inst)?;
    let mut ctx = context(inst, order, reads_at);
    if !ctx.cpu_order.is_empty() {
        // Its bound and its estimates count one stream.
        return Err(ExactError::Unencoded {
            method: Method::Search,
            feature: crate::exact::scope::Feature::CpuOps,
        });
    }
    let incumbent = match &opts.incumbent {
        None => None,
        Some(c) => match check(inst, c.schedule()) {
            CheckOutcome::Valid(c) => Some(c),
            CheckOutcome::Invalid(r) => {
                return Err(ExactError::CheckerRejected {
                    method: Method::Search,
                    rejected: Box::new(r),
                })
            }
        },
    };
    let known = opts.known_bound.unwrap_or(Ticks(0));
    let mut run = Run {
        opts,
        started,
        best: incumbent,
        best_from_search: false,
        known,
        states: 0,
        last_report: Instant::now(),
    };
    let Some((starts, closing)) = start_nodes(&mut ctx) else {
        return Ok(run.outcome(
            None,
            Stop::TooManyRoots,
            vec![format!(
            "search: more than {} boundary states S0; not searched (the bound is the known one)",
            super::MAX_ROOTS
        )],
        ));
    };
    let mut open = Open {
        heap: BinaryHeap::new(),
        slab: vec![],
        free: vec![],
        floor: i64::MAX,
        counter: 0,
    };
    let extra = Extra::new(&ctx);
    for n in starts {
        let f = strong_estimate(&ctx, &extra, &n);
        open.push(n, f);
    }
    let stop = branch_and_bound(&ctx, &extra, &closing, &mut run, &mut open)?;
    let search_bound = open.min().min(open.floor).min(run.upper());
    let notes = vec![
        format!("anytime search: {} states expanded", run.states),
        format!("release rule: {}", inst.release),
        "bound: the least estimate (remaining compute; prefetches owed on the prefetch channel) over the nodes not done with; complete within the structural limits of proofs/SEARCH.md (proofs/ANYTIME.md)".into(),
    ];
    let sb = (search_bound < i64::MAX).then_some(Ticks(search_bound));
    let mut out = run.outcome(sb, stop, notes);
    out.infeasible = out.best.is_none() && search_bound == i64::MAX && stop == Stop::Closed;
    Ok(out)
}

/// The state of one run: the incumbent, counters, the reporting clock.
struct Run<'o, 'a> {
    opts: &'o AnytimeOptions<'a>,
    started: Instant,
    best: Option<Checked>,
    best_from_search: bool,
    known: Ticks,
    states: u64,
    last_report: Instant,
}

impl Run<'_, '_> {
    /// The incumbent's makespan, or +∞.
    /// The incumbent's makespan (or the cutoff, if lower), or +∞.
    fn upper(&self) -> i64 {
        let cut = self.opts.cutoff.map_or(i64::MAX, |t| t.0);
        self.best.as_ref().map_or(cut, |c| c.makespan().0.min(cut))
    }

    fn stop_reason(&self) -> Option<Stop> {
        if self
            .opts
            .interrupt
            .as_ref()
            .is_some_and(|i| i.load(Ordering::Relaxed))
        {
            Some(Stop::Interrupted)
        } else if self.started.elapsed() >= self.opts.time_limit {
            Some(Stop::TimeLimit)
        } else if self.states >= self.opts.max_states {
            Some(Stop::StateLimit)
        } else {
            None
        }
    }

    fn report(&mut self, bound: i64, open: usize, force: bool) {
        let Some(cb) = self.opts.progress else { return };
        if !force && self.last_report.elapsed() < self.opts.progress_every {
            return;
        }
        self.last_report = Instant::now();
        let b = if bound == i64::MAX {
            self.upper()
        } else {
            bound
        };
        cb(&Progress {
            elapsed: self.started.elapsed(),
            incumbent: self.best.as_ref().map(Checked::makespan),
            lower_bound: Ticks(b.min(i64::MAX - 1)).max(self.known),
            states: self.states,
            open,
        });
    }

    /// A finished schedule (one-shot) or closed period of this length: rebuild
    /// and check it; it becomes the incumbent if it is better.
    fn offer(&mut self, ctx: &Ctx, end: End) -> Result<(), ExactError> {
        if end.0 >= self.upper() {
            return Ok(());
        }
        let (sched, _) = rebuild(ctx, end)?;
        match check(ctx.inst, &sched) {
            CheckOutcome::Valid(c) => {
                self.best = Some(c);
                self.best_from_search = true;
                Ok(())
            }
            CheckOutcome::Invalid(r) => Err(ExactError::CheckerRejected {
                method: Method::Search,
                rejected: Box::new(r),
            }),
        }
    }

    fn outcome(
        &self,
        search_bound: Option<Ticks>,
        stop: Stop,
        notes: Vec<String>,
    ) -> AnytimeOutcome {
        let lower_bound = search_bound.unwrap_or(Ticks(0)).max(self.known);
        let lower_bound = match &self.best {
            Some(c) => lower_bound.min(c.makespan()),
            None => lower_bound,
        };
        let proven_optimal = self
            .best
            .as_ref()
            .is_some_and(|c| c.makespan() <= lower_bound);
        let out = AnytimeOutcome {
            best: self.best.clone(),
            best_from_search: self.best_from_search,
            lower_bound,
            search_bound,
            states: self.states,
            proven_optimal,
            infeasible: false,
            stop,
            elapsed: self.started.elapsed(),
            notes,
        };
        if let Some(cb) = self.opts.progress {
            cb(&Progress {
                elapsed: out.elapsed,
                incumbent: out.best.as_ref().map(Checked::makespan),
                lower_bound: out.lower_bound,
                states: out.states,
                open: 0,
            });
        }
        out
    }
}

/// Expansions between two dives (greedy descents that look for incumbents).
const DIVE_EVERY: u64 = 2_000;
/// Dominance entries kept (beyond, the table is cleared: dominance only saves
/// work, the bound never depends on it).
const MAX_CLOSED: usize = 400_000;

/// The branch and bound proper. Returns why it stopped; `open` keeps the
/// nodes not done with (and the floor of those given up).
fn branch_and_bound(
    ctx: &Ctx,
    extra: &Extra,
    closing: &[Vec<i64>],
    run: &mut Run,
    open: &mut Open,
) -> Result<Stop, ExactError> {
    let mut closed: HashMap<Vec<i64>, i64> = HashMap::new();
    let mut current: Option<(Node, i64)> = None;
    let mut since_dive: u64 = DIVE_EVERY;
    loop {
        if let Some(s) = run.stop_reason() {
            if let Some((n, f)) = current.take() {
                open.push(n, f);
            }
            return Ok(s);
        }
        let (mut n, f) = match current.take() {
            Some(x) => x,
            None => {
                let Some((n, f)) = open.pop() else {
                    return Ok(if open.floor < i64::MAX {
                        Stop::GaveUp
                    } else {
                        Stop::Closed
                    });
                };
                if f >= run.upper() || Ticks(run.upper()) <= run.known {
                    open.push(n, f);
                    return Ok(
                        if open.floor < run.upper() && Ticks(run.upper()) > run.known {
                            Stop::GaveUp
                        } else {
                            Stop::Closed
                        },
                    );
                }
                (n, f)
            }
        };
        run.states += 1;
        since_dive += 1;
        let bound_now = open.min().min(open.floor).min(f);
        run.report(bound_now, open.heap.len(), false);
        if !ctx.complete(&mut n) {
            continue;
        }
        if let Some(end) = closes_period(ctx, &n, closing) {
            run.offer(ctx, end)?;
            continue;
        }
        let key = ctx.key(&n);
        match closed.get(&key) {
            Some(&t) if t <= n.time => continue,
            _ => {
                if closed.len() >= MAX_CLOSED {
                    closed.clear();
                }
                closed.insert(key, n.time);
            }
        }
        let mut truncated = false;
        let children = expand(ctx, &n, run.opts.mask_budget, &mut truncated);
        if truncated {
            open.floor = open.floor.min(f);
        }
        let mut kept: Vec<(Node, i64)> = vec![];
        for (child, done) in children {
            if let Some(ms) = done {
                run.offer(ctx, (ms, child.trail.clone(), 0, vec![]))?;
                continue;
            }
            // Path-max: the parent's estimate bounds every completion through it.
            let fc = strong_estimate(ctx, extra, &child).max(f);
            if fc < run.upper() {
                kept.push((child, fc));
            }
        }
        let dive = since_dive >= DIVE_EVERY || run.best.is_none() && run.states < 50_000;
        if dive && !kept.is_empty() {
            // Continue with the best child: least estimate, then most ops
            // started, then earliest.
            let ix = (0..kept.len())
                .min_by_key(|&i| (kept[i].1, Reverse(kept[i].0.next), kept[i].0.time))
                .unwrap_or(0);
            current = Some(kept.swap_remove(ix));
        } else if dive {
            since_dive = 0;
        }
        for (c, fc) in kept {
            open.push(c, fc);
        }
        if open.heap.len() > run.opts.max_open {
            open.shrink();
        }
    }
}

/// What the strengthened estimate needs besides [`Ctx`]: per position the
/// op's allocation at its start (outputs and scratch) and what it consumes;
/// per tensor the position of its producer.
struct Extra {
    alloc: Vec<i128>,
    consumes: Vec<Vec<usize>>,
    producer: Vec<Option<usize>>,
    /// β = bytes per ticks.
    bw_bytes: i128,
    bw_ticks: i128,
    /// One-shot only: the memory term is not used for cyclic instances.
    memory_term: bool,
    /// Per tensor, per entry of `Ctx::reads_at`: the last position j before
    /// that reader with a positive op that cannot run while a copy of the
    /// tensor is on the GPU (its outputs, scratch and — under `after_end` —
    /// inputs plus the tensor exceed the capacity). A prefetch of the tensor
    /// for that reader starts at or after that op's end.
    blocker: Vec<Vec<Option<usize>>>,
}

impl Extra {
    fn new(ctx: &Ctx) -> Extra {
        let inst = ctx.inst;
        let nt = inst.tensors.len();
        let mut producer = vec![None; nt];
        let mut consumes = vec![vec![]; ctx.order.len()];
        let mut alloc = vec![0i128; ctx.order.len()];
        for (k, o) in ctx.order.iter().enumerate() {
            let op = inst.op(*o);
            for t in &op.produces {
                producer[t.ix()] = Some(k);
                alloc[k] += inst.tensor(*t).size.0 as i128;
            }
            alloc[k] += op.temp.0 as i128;
            consumes[k] = op.consumes.iter().map(|t| t.ix()).collect();
        }
        let after_end = ctx.after_end;
        // Memory an op holds all through its run.
        let held: Vec<i128> = (0..ctx.order.len())
            .map(|k| {
                let op = inst.op(ctx.order[k]);
                let inputs: i128 = if after_end {
                    op.reads
                        .iter()
                        .filter(|t| !op.consumes.contains(t) && !op.produces.contains(t))
                        .map(|t| inst.tensor(*t).size.0 as i128)
                        .sum()
                } else {
                    0
                };
                alloc[k] + inputs
            })
            .collect();
        let blocker = (0..nt)
            .map(|i| {
                let size = inst.tensors[i].size.0 as i128;
                ctx.reads_at[i]
                    .iter()
                    .map(|&p| {
                        (0..p).rev().find(|&j| {
                            ctx.dur[j] > 0
                                && held[j] + size > ctx.cap
                                && !inst.op(ctx.order[j]).reads.iter().any(|t| t.ix() == i)
                        })
                    })
                    .collect()
            })
            .collect();
        let bw = inst.machine.bandwidth;
        Extra {
            blocker,
            alloc,
            consumes,
            producer,
            bw_bytes: bw.bytes as i128,
            bw_ticks: bw.ticks as i128,
            memory_term: !ctx.cyclic,
        }
    }
}

/// The parent's estimate, strengthened (admissible: `proofs/ANYTIME.md` §2)
/// by a lower bound on the start of every op still to run, p:
/// - the ops before it run one at a time (the parent's term);
/// - *prefetch channel*: every tensor read at a position ≤ p that is neither
///   on the GPU nor on its way there, and whose CPU copy is current, is
///   prefetched (⌈|t|/β⌉ ticks, one at a time, after the transfer in flight
///   on that channel) before its reader starts;
/// - *memory* (one-shot): at p's start the GPU holds p's outputs and scratch,
///   p's inputs (but what it consumes), and every tensor read after p that
///   has existed (or is produced before p) unless it has a current CPU copy;
///   a tensor without one now needs an offload, on the offload channel after
///   its transfer in flight, ending by p's start. If that memory exceeds the
///   capacity by E > 0, offloads of at least E bytes, ⌈E/β⌉ ticks, end by
///   p's start.
///
/// The ops from p on then run one at a time.
fn strong_estimate(ctx: &Ctx, x: &Extra, n: &Node) -> i64 {
    let base = ctx.estimate(n);
    let len = ctx.order.len();
    let free_at = |dir: Direction| {
        n.flights
            .get(ctx.channel_ix(dir))
            .copied()
            .flatten()
            .map_or(n.time, |f| f.end.max(n.time))
    };
    let r_pf = free_at(Direction::Prefetch);
    let r_off = free_at(Direction::Offload);
    let mut owed = vec![0i64; len + 1];
    // (reader, blocking op, ticks): the prefetch starts after the blocker ends.
    let mut single: Vec<(usize, usize, i64)> = vec![];
    // Memory at p's start, by kind: must stay (u), could go with an offload (c).
    let mut u = vec![0i128; len + 2];
    let mut c = vec![0i128; len + 2];
    for (i, ts) in n.state.tensors.iter().enumerate() {
        let ten = &ctx.inst.tensors[i];
        let size = ten.size.0 as i128;
        if size == 0 {
            continue;
        }
        let reads = &ctx.reads_at[i];
        let Some(&last) = reads.last() else { continue };
        if last < n.next {
            continue;
        }
        if ten.transferable && matches!(ts.gpu, GpuCopy::Absent) && ts.cpu_current() {
            if let Some(ix) = reads.iter().position(|&p| p >= n.next) {
                let p = reads[ix];
                owed[p] += ctx.tau[i];
                if let Some(j) = x.blocker[i][ix] {
                    if j + 1 >= n.next {
                        single.push((p, j, ctx.tau[i]));
                    }
                }
            }
        }
        if !x.memory_term {
            continue;
        }
        let produced_before = x.producer[i].is_some_and(|q| q < n.next);
        let lo = if ts.exists || produced_before {
            if !ts.on_gpu() && !ts.cpu_current() {
                continue; // lost: the transitions will refuse its reader
            }
            n.next
        } else {
            match x.producer[i] {
                Some(q) if q >= n.next => q + 1,
                _ => continue,
            }
        };
        if lo > last {
            continue;
        }
        let free = ts.exists && (ts.cpu_current() || ts.cpu_incoming > 0);
        // Baseline over [lo, last]: free 0, transferable c, else u.
        if !free {
            let arr = if ten.transferable { &mut c } else { &mut u };
            arr[lo] += size;
            arr[last + 1] -= size;
        }
        // At its readers it must be present (unless consumed there).
        for &r in reads.iter().filter(|&&r| r >= lo) {
            if !free && ten.transferable {
                c[r] -= size;
                c[r + 1] += size;
            } else if !free {
                u[r] -= size;
                u[r + 1] += size;
            }
            if !x.consumes[r].contains(&i) {
                u[r] += size;
                u[r + 1] -= size;
            }
        }
    }
    let mut s = n.time + n.running.map_or(0, |(_, e)| e - n.time);
    let mut cum = r_pf;
    // Earliest end of each op (the running one: its end).
    let mut ends = vec![i64::MIN; len];
    if let Some((k, e)) = n.running {
        ends[k] = e;
    }
    single.sort_unstable();
    let mut si = 0;
    let (mut uu, mut cc) = (0i128, 0i128);
    for k in 0..len {
        uu += u[k];
        cc += c[k];
        if k < n.next {
            continue;
        }
        cum += owed[k];
        if owed[k] > 0 {
            s = s.max(cum);
        }
        while si < single.len() && single[si].0 == k {
            let (_, j, tau) = single[si];
            if ends[j] > i64::MIN {
                s = s.max(ends[j] + tau);
            }
            si += 1;
        }
        if x.memory_term {
            let excess = x.alloc[k] + uu + cc - ctx.cap;
            if excess > 0 && cc >= excess {
                let ticks = (excess * x.bw_ticks + x.bw_bytes - 1) / x.bw_bytes;
                s = s.max(r_off.saturating_add(i64::try_from(ticks).unwrap_or(i64::MAX / 4)));
            }
        }
        s += ctx.dur[k];
        ends[k] = s;
    }
    base.max(s)
}
