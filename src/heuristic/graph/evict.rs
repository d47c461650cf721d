//! `graph-evict` and `graph-best`: the topological order, missing inputs
//! recomputed on demand, and evictions chosen by a scoring [`Rule`] whenever
//! the next op would not fit.
//!
//! The scheduler keeps a resident set R and its bytes. To run v: every input
//! of v not in R is run first (an [`Engine`]: its missing ancestors once each
//! in a planned post-order, or a work stack that pins only the running op's
//! inputs), then, while |R| + |v| + tmp(v) exceeds the capacity, an unpinned member of
//! R is evicted (the rule picks which); then v runs and joins R. The realised
//! schedule keeps each output from its production to its last touch before
//! its next production, an interval inside its stay in R, so its memory at
//! every op start is at most the scheduler's: a sequence the scheduler
//! finishes always fits (the checker confirms it). It fails when the pinned
//! inputs alone leave no room, or (the stack) when its recomputations exceed
//! a budget of 16·n + 1024 ops.
//!
//! With offloading enabled (`graph-offload`, [`Offload`]), an evicted output
//! whose transfer fits in the compute before its next first-time reader is
//! offloaded (once) instead, and prefetched before that reader; the
//! sequence, its releases and its offloads are realised by the simulator's
//! ASAP loop (`simulate::asap_sequence`), which waits for memory and the link.
//!
//! Owns: [`Rule`], [`Engine`], [`sequence`], [`plan`], [`low_memory_order`], [`Evict`],
//! [`Best`], [`Offload`]. Must not import: exact
//! solvers.

use super::{dag_of, is_graph, realise};
use crate::check::check;
use crate::family::dag::Dag;
use crate::family::InstanceFile;
use crate::heuristic::effort::Effort;
use crate::heuristic::{Heuristic, HeuristicError};
use crate::model::Instance;
use crate::schedule::Schedule;
use crate::semantics::transfer_ticks;
use crate::simulate::asap_sequence;
use crate::simulate::dag_sequence::{peak_of, plan_of};

/// Which resident output goes first when room is needed. Outputs that no
/// first-time reader needs any more always go first, the largest first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Rule {
    /// The least d(u) / (|u| · distance to its next first-time reader): DTR's
    /// heuristic with the distance for staleness.
    #[default]
    CostPerByteDistance,
    /// The farthest next first-time reader (Belady), the largest on ties.
    Belady,
    /// The least d(u) / |u|, the farthest on ties.
    CostPerByte,
    /// DTR's heuristic with its evicted neighbourhood (Kirisame et al.): the
    /// least (d(u) + Σ d(p) over the inputs p of u not resident) / (|u| ·
    /// distance to its next first-time reader): an output whose inputs are
    /// gone costs their recomputation too, so it is kept longer.
    Neighbourhood,
    /// The neighbourhood rule looking ahead to the next use: an input p of
    /// u counts as gone when it is not resident now or when its last
    /// first-time reader comes before u's next one (it will be released by
    /// then, so recomputing u then recomputes p too).
    NextUse,
}

/// How the scheduler recomputes a missing input (both never recompute an
/// output twice while it stays resident).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// All missing ancestors of the op, once each, in a planned post-order,
    /// their inputs pinned until their last planned reader
    /// (`Run::compute_planned`).
    #[default]
    Planned,
    /// A work stack, only the running op's inputs pinned and the waiting
    /// ops' inputs evicted last (`Run::compute_stacked`).
    Stack,
}

/// Both engines, in the order `graph-best` tries them.
pub const ENGINES: [Engine; 2] = [Engine::Planned, Engine::Stack];

/// Every rule, in the order `graph-best` tries them.
pub const RULES: [Rule; 5] = [
    Rule::CostPerByteDistance,
    Rule::Belady,
    Rule::CostPerByte,
    Rule::Neighbourhood,
    Rule::NextUse,
];

struct Run<'a> {
    dag: &'a Dag,
    rule: Rule,
    resident: Vec<bool>,
    pinned: Vec<u32>,
    /// Inputs of the ops waiting on the recomputation stack: evicted last.
    soft: Vec<u32>,
    /// The most ops the sequence may hold (recomputations included).
    budget: usize,
    done: Vec<bool>,
    used: u128,
    /// The topological position being run for the first time.
    at: usize,
    seq: Vec<usize>,
    /// Offloading: per node, its transfer time when it may move.
    xfer: Vec<Option<i64>>,
    /// Σ of the durations of the first `k` nodes of the topological order.
    prefix: Vec<i64>,
    /// Offloaded once already (one offload per output: a second eviction
    /// recomputes).
    offloaded: Vec<bool>,
    /// On the CPU, to be prefetched before its next reader.
    away: Vec<bool>,
    /// The place of each node in the order of first runs.
    pos: Vec<usize>,
    /// The last position of the sequence that touched each output.
    last_touch: Vec<usize>,
    /// (node, position): offload the output once the op there has started.
    offloads: Vec<(usize, usize)>,
}

impl Run<'_> {
    /// The nearest position of a reader of `u` not yet run once.
    fn next_use(&self, u: usize) -> Option<usize> {
        self.dag.succs[u]
            .iter()
            .filter(|&&w| !self.done[w])
            .map(|&w| self.pos[w])
            .min()
    }

    /// The farthest position of a reader of `u` (its last first-time use).
    fn last_use(&self, u: usize) -> usize {
        self.dag.succs[u]
            .iter()
            .map(|&w| self.pos[w])
            .max()
            .unwrap_or(0)
    }

    /// The eviction key: smaller goes first.
    fn key(&self, u: usize) -> (u8, f64) {
        let size = self.dag.size[u].max(1) as f64;
        let soft = self.soft[u] > 0;
        let Some(next) = self.next_use(u) else {
            return (if soft { 2 } else { 0 }, -size);
        };
        let dist = (next.saturating_sub(self.at)).max(1) as f64;
        let d = self.dag.duration[u].max(0) as f64 + 1e-9;
        let k = match self.rule {
            Rule::CostPerByteDistance => d / (size * dist),
            Rule::Belady => -(dist * 1e12 + size),
            Rule::CostPerByte => d / size - dist * 1e-12,
            Rule::Neighbourhood => {
                let gone: i64 = self.dag.preds[u]
                    .iter()
                    .filter(|&&p| !self.resident[p])
                    .map(|&p| self.dag.duration[p].max(0))
                    .sum();
                (d + gone as f64) / (size * dist)
            }
            Rule::NextUse => {
                let gone: i64 = self.dag.preds[u]
                    .iter()
                    .filter(|&&p| !self.resident[p] || self.last_use(p) < next)
                    .map(|&p| self.dag.duration[p].max(0))
                    .sum();
                (d + gone as f64) / (size * dist)
            }
        };
        (if soft { 2 } else { 1 }, k)
    }

    fn make_room(&mut self, need: u128) -> Result<(), String> {
        while self.used + need > self.dag.capacity as u128 {
            let victim = (0..self.dag.len())
                .filter(|&u| self.resident[u] && self.pinned[u] == 0 && self.dag.size[u] > 0)
                .min_by(|&a, &b| {
                    self.key(a)
                        .partial_cmp(&self.key(b))
                        .unwrap_or(std::cmp::Ordering::Equal)
                });
            let Some(u) = victim else {
                return Err(format!(
                    "no room: {} B pinned, {need} B needed, capacity {} B",
                    self.used, self.dag.capacity
                ));
            };
            self.resident[u] = false;
            self.used -= self.dag.size[u] as u128;
            self.maybe_offload(u);
        }
        Ok(())
    }

    /// Offload an evicted output instead of recomputing it when its transfer
    /// fits in the compute before its next first-time reader.
    fn maybe_offload(&mut self, u: usize) {
        let (Some(x), Some(next)) = (self.xfer[u], self.next_use(u)) else {
            return;
        };
        if self.offloaded[u] || x > self.prefix[next] - self.prefix[self.at] {
            return;
        }
        self.offloads.push((u, self.last_touch[u]));
        self.offloaded[u] = true;
        self.away[u] = true;
    }

    /// `Engine::Stack`: run `v`, recomputing its missing inputs first with a work stack:
    /// the top op runs once its inputs are resident, otherwise a missing
    /// input goes on the stack (an offloaded one is prefetched instead). Only
    /// the inputs of the op being run are pinned; the inputs of the ops
    /// waiting on the stack are protected softly (evicted only when nothing
    /// else can go, and then recomputed again), so the scheduler is stuck
    /// only when one op's inputs and output exceed the memory, and stops when
    /// the sequence outgrows its budget (`Run::budget`).
    fn compute_stacked(&mut self, v: usize) -> Result<(), String> {
        let dag = self.dag;
        let mut stack = vec![v];
        dag.preds[v].iter().for_each(|&p| self.soft[p] += 1);
        while let Some(&x) = stack.last() {
            if self.seq.len() > self.budget {
                return Err(format!(
                    "recomputation budget of {} ops exceeded",
                    self.budget
                ));
            }
            let missing = dag.preds[x].iter().copied().find(|&u| !self.resident[u]);
            if let Some(u) = missing.filter(|&u| !self.away[u]) {
                stack.push(u);
                dag.preds[u].iter().for_each(|&p| self.soft[p] += 1);
                continue;
            }
            let preds = &dag.preds[x];
            preds.iter().for_each(|&w| self.pinned[w] += 1);
            let r = match missing {
                // Prefetched before x (the realiser places it).
                Some(u) => self.make_room(dag.size[u] as u128).map(|()| {
                    self.away[u] = false;
                    self.resident[u] = true;
                    self.used += dag.size[u] as u128;
                }),
                None => self.make_room(dag.size[x] as u128 + dag.temp[x] as u128),
            };
            let preds = &dag.preds[x];
            preds.iter().for_each(|&w| self.pinned[w] -= 1);
            r?;
            if missing.is_some() {
                continue;
            }
            self.seq.push(x);
            let p = self.seq.len() - 1;
            for &u in dag.preds[x].iter().chain(std::iter::once(&x)) {
                self.last_touch[u] = p;
            }
            self.resident[x] = true;
            self.used += dag.size[x] as u128;
            dag.preds[x].iter().for_each(|&p| self.soft[p] -= 1);
            stack.pop();
        }
        Ok(())
    }

    /// The missing ancestors of `v` that its run needs, each once, in a
    /// depth-first post-order ending with `v` itself; an offloaded one is
    /// prefetched, not recomputed (its own inputs are not needed).
    fn recompute_plan(&self, v: usize) -> Vec<usize> {
        let mut plan = Vec::new();
        let mut seen = std::collections::HashSet::new();
        // Iterative DFS: (node, index of the next input to visit).
        let mut stack = vec![(v, 0usize)];
        while let Some(top) = stack.len().checked_sub(1) {
            let (x, i) = stack[top];
            let preds = &self.dag.preds[x];
            if (self.away[x] && x != v) || i >= preds.len() {
                plan.push(x);
                stack.pop();
                continue;
            }
            stack[top].1 += 1;
            let u = preds[i];
            if !self.resident[u] && seen.insert(u) {
                stack.push((u, 0));
            }
        }
        plan
    }

    /// `Engine::Planned`: run `v`; its missing ancestors are recomputed once each, in the
    /// plan's order (`recompute_plan`); every input of a planned op is pinned
    /// from the start of the plan to its last planned reader, so nothing
    /// planned is evicted before its use and the work is linear in the plan.
    fn compute_planned(&mut self, v: usize) -> Result<(), String> {
        let plan = self.recompute_plan(v);
        let mut uses: std::collections::HashMap<usize, usize> = Default::default();
        for &x in &plan {
            if self.away[x] && x != v {
                continue;
            }
            for &p in &self.dag.preds[x] {
                *uses.entry(p).or_default() += 1;
            }
        }
        let pinned_now: Vec<usize> = uses.keys().copied().filter(|&p| self.resident[p]).collect();
        pinned_now.iter().for_each(|&p| self.pinned[p] += 1);
        let r = self.run_plan(v, &plan, &mut uses);
        // Unpin what is still pinned (all of it when the plan stopped early).
        for (&p, &left) in &uses {
            if left > 0 && self.resident[p] && self.pinned[p] > 0 {
                self.pinned[p] -= 1;
            }
        }
        r
    }

    fn run_plan(
        &mut self,
        v: usize,
        plan: &[usize],
        uses: &mut std::collections::HashMap<usize, usize>,
    ) -> Result<(), String> {
        for &x in plan {
            let prefetch = self.away[x] && x != v;
            let need = if prefetch {
                self.dag.size[x] as u128
            } else {
                self.dag.size[x] as u128 + self.dag.temp[x] as u128
            };
            self.make_room(need)?;
            if prefetch {
                // Prefetched before its reader (the realiser places it).
                self.away[x] = false;
            } else {
                self.seq.push(x);
                let p = self.seq.len() - 1;
                for &u in self.dag.preds[x].iter().chain(std::iter::once(&x)) {
                    self.last_touch[u] = p;
                }
            }
            self.resident[x] = true;
            self.used += self.dag.size[x] as u128;
            if uses.get(&x).is_some_and(|&k| k > 0) {
                self.pinned[x] += 1;
            }
            if prefetch {
                continue;
            }
            for &p in &self.dag.preds[x] {
                let k = uses.get_mut(&p).expect("counted");
                *k -= 1;
                if *k == 0 {
                    self.pinned[p] -= 1;
                }
            }
        }
        Ok(())
    }
}

/// The eviction scheduler's node sequence under `rule`, or why it stopped.
pub fn sequence(dag: &Dag, rule: Rule) -> Result<Vec<usize>, String> {
    Ok(plan(dag, &dag.topo, rule, Engine::Planned, None)?.0)
}

/// A topological order that keeps memory low (list scheduling): among the
/// nodes whose inputs have all run, the one whose run frees the most bytes
/// net (its output less the inputs it is the last reader of), the smaller
/// output on ties, then the earlier in `dag.topo`.
///
/// With `local`, among equal nets the node that reads the most recently run
/// output goes first (a depth-first flavour that keeps chains together).
pub fn low_memory_order(dag: &Dag, local: bool) -> Vec<usize> {
    let n = dag.len();
    let mut waiting: Vec<usize> = dag.preds.iter().map(Vec::len).collect();
    let mut readers_left: Vec<usize> = dag.succs.iter().map(Vec::len).collect();
    let mut ready: Vec<usize> = (0..n).filter(|&v| waiting[v] == 0).collect();
    let mut placed = vec![0usize; n];
    let mut order = Vec::with_capacity(n);
    while !ready.is_empty() {
        let net = |v: usize| -> i128 {
            let freed: i128 = dag.preds[v]
                .iter()
                .filter(|&&u| readers_left[u] == 1)
                .map(|&u| dag.size[u] as i128)
                .sum();
            dag.size[v] as i128 - freed
        };
        let recent = |v: usize| -> std::cmp::Reverse<usize> {
            let latest = dag.preds[v].iter().map(|&u| placed[u] + 1).max();
            std::cmp::Reverse(if local { latest.unwrap_or(0) } else { 0 })
        };
        let (i, &v) = ready
            .iter()
            .enumerate()
            .min_by_key(|&(_, &v)| (net(v), recent(v), dag.size[v], dag.pos[v]))
            .expect("non-empty");
        ready.swap_remove(i);
        placed[v] = order.len();
        order.push(v);
        for &u in &dag.preds[v] {
            readers_left[u] -= 1;
        }
        for &w in &dag.succs[v] {
            waiting[w] -= 1;
            if waiting[w] == 0 {
                ready.push(w);
            }
        }
    }
    order
}

/// The node sequence and, with `xfer` (each node's transfer time where it
/// may move), the offloads `(node, position)` that replace recomputations.
pub fn plan(
    dag: &Dag,
    order: &[usize],
    rule: Rule,
    engine: Engine,
    xfer: Option<Vec<Option<i64>>>,
) -> Result<(Vec<usize>, Vec<(usize, usize)>), String> {
    let n = dag.len();
    let mut prefix = vec![0i64; n + 1];
    let mut pos = vec![0; n];
    for (k, &v) in order.iter().enumerate() {
        prefix[k + 1] = prefix[k] + dag.duration[v];
        pos[v] = k;
    }
    let mut run = Run {
        dag,
        rule,
        resident: vec![false; n],
        pinned: vec![0; n],
        soft: vec![0; n],
        budget: 16 * n + 1024,
        done: vec![false; n],
        used: 0,
        at: 0,
        seq: Vec::new(),
        xfer: xfer.unwrap_or_else(|| vec![None; n]),
        prefix,
        offloaded: vec![false; n],
        away: vec![false; n],
        pos,
        last_touch: vec![0; n],
        offloads: Vec::new(),
    };
    for (p, &v) in order.iter().enumerate() {
        run.at = p;
        match engine {
            Engine::Planned => run.compute_planned(v)?,
            Engine::Stack => run.compute_stacked(v)?,
        }
        run.done[v] = true;
    }
    Ok((run.seq, run.offloads))
}

/// `graph-evict`: one rule.
#[derive(Clone, Copy, Debug, Default)]
pub struct Evict {
    pub rule: Rule,
}

fn no_schedule(h: &'static str, reason: String) -> HeuristicError {
    HeuristicError::NoSchedule {
        heuristic: h,
        reason,
    }
}

impl Heuristic for Evict {
    fn name(&self) -> &'static str {
        "graph-evict"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        is_graph(file)
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let dag = dag_of(self.name(), file, inst)?;
        let seq = sequence(&dag, self.rule).map_err(|r| no_schedule(self.name(), r))?;
        realise(self.name(), inst, &dag, &seq)
    }
}

/// `graph-best`: every rule, and Chen's checkpoints at every segment length
/// from 1 to n (each realised and checked); the least checked makespan.
pub struct Best;

/// The beam widths of the least-peak orders `graph-best` hands the engines.
pub const LEAST_PEAK_WIDTHS: [usize; 2] = [4, 32];

/// How many of the best candidates `graph-best` improves
/// ([`super::improve::drop_computations`]), and the effort on each.
pub const IMPROVED: usize = 4;
pub const IMPROVE_EFFORT: u64 = 20_000;

/// The candidate sequences `graph-best` tries: an order that computes every
/// node once within the memory ([`super::order::search`]; alone when found),
/// else each rule and engine in the
/// topological order, in the two low-memory orders and in the least-peak
/// order ([`super::order::least_peak_order`]: where no order fits, the one
/// closest to fitting, repaired by the engines' recomputations), on graphs of at most
/// [`super::small::MAX_NODES`] nodes the capped A* search
/// ([`super::small::sequence`]), and Chen's checkpoints.
pub fn candidates(dag: &Dag) -> Vec<Vec<usize>> {
    // An order without recomputation has makespan Σd, the least of all:
    // nothing else is tried when the search finds one.
    if let Some(order) = super::order::search(dag, super::order::max_downsets(dag)) {
        return vec![order];
    }
    let orders = [
        dag.topo.clone(),
        low_memory_order(dag, false),
        low_memory_order(dag, true),
        super::order::least_peak_order(dag, LEAST_PEAK_WIDTHS[0]),
        super::order::least_peak_order(dag, LEAST_PEAK_WIDTHS[1]),
    ];
    let mut out: Vec<Vec<usize>> = Vec::new();
    for order in &orders {
        for engine in ENGINES {
            out.extend(
                RULES
                    .iter()
                    .filter_map(|&r| plan(dag, order, r, engine, None).ok().map(|p| p.0)),
            );
        }
    }
    // Small graphs: the capped A* search (complete where it settles).
    out.extend(super::small::sequence(dag));
    // Chen's checkpoints: every segment length up to 64, then a geometric
    // series (each candidate costs O(n²·deg / k) to build).
    let n = dag.len().max(1);
    let mut k = 1;
    while k <= n {
        out.push(super::chen_sequence(dag, k));
        k = if k < 8 { k + 1 } else { (k * 3).div_ceil(2) };
    }
    out
}

impl Heuristic for Best {
    fn name(&self) -> &'static str {
        "graph-best"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        is_graph(file)
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let h = self.name();
        let dag = dag_of(h, file, inst)?;
        // Each candidate that fits, by its length in ticks (Σ d, back to back).
        let mut fits: Vec<(i64, Vec<usize>)> = candidates(&dag)
            .into_iter()
            .filter(|seq| peak_of(&dag, seq).is_some_and(|p| p <= dag.capacity as u128))
            .map(|seq| (seq.iter().map(|&v| dag.duration[v]).sum(), seq))
            .collect();
        fits.sort();
        fits.dedup();
        // The best few, each with its repeated computations dropped where
        // the memory still fits (a dropped run only shortens it).
        let improved: Vec<Vec<usize>> = fits
            .iter()
            .take(IMPROVED)
            .map(|(_, seq)| {
                let mut meter = Effort::Candidates(IMPROVE_EFFORT).start();
                super::improve::drop_computations(&dag, seq, &mut meter)
            })
            .collect();
        let mut best: Option<(crate::units::Ticks, Schedule)> = None;
        for seq in improved.iter().chain(fits.iter().map(|(_, s)| s)) {
            let Ok(s) = realise(h, inst, &dag, seq) else {
                continue;
            };
            if let Ok(c) = check(inst, &s).into_result() {
                if best.as_ref().is_none_or(|(m, _)| c.makespan() < *m) {
                    best = Some((c.makespan(), c.into_schedule()));
                }
            }
        }
        best.map(|(_, s)| s)
            .ok_or_else(|| no_schedule(h, "no candidate fits the memory".into()))
    }
}

/// `graph-offload`: the eviction scheduler with offloading (module doc); the
/// best over the rules. Without movable outputs it finds nothing.
pub struct Offload;

impl Heuristic for Offload {
    fn name(&self) -> &'static str {
        "graph-offload"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        is_graph(file)
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let h = self.name();
        let dag = dag_of(h, file, inst)?;
        if !dag.movable {
            return Err(no_schedule(
                h,
                "offloading is off (no movable output)".into(),
            ));
        }
        let xfer: Vec<Option<i64>> = (0..dag.len())
            .map(|v| {
                let t = inst.tensor(dag.out[v]);
                (t.transferable && t.size.0 > 0).then(|| transfer_ticks(inst, dag.out[v]).0)
            })
            .collect();
        let mut best: Option<(crate::units::Ticks, Schedule)> = None;
        let mut why = String::from("no rule finished");
        for (rule, engine) in RULES.iter().flat_map(|&r| ENGINES.map(|e| (r, e))) {
            let (seq, offloads) = match plan(&dag, &dag.topo, rule, engine, Some(xfer.clone())) {
                Ok(p) => p,
                Err(e) => {
                    why = e;
                    continue;
                }
            };
            let mut sp = plan_of(&dag, &seq);
            sp.offloads = offloads.iter().map(|&(u, p)| (dag.out[u], p)).collect();
            let s = match asap_sequence(inst, &sp) {
                Ok(s) => s,
                Err(e) => {
                    why = e.to_string();
                    continue;
                }
            };
            if let Ok(c) = check(inst, &s).into_result() {
                if best.as_ref().is_none_or(|(m, _)| c.makespan() < *m) {
                    best = Some((c.makespan(), c.into_schedule()));
                }
            }
        }
        best.map(|(_, s)| s).ok_or_else(|| no_schedule(h, why))
    }
}
