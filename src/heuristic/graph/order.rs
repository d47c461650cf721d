//! Orders that compute every node of a DAG exactly once (no recomputation,
//! no transfer): `graph-order`, the search `graph-best` tries first, and the
//! low-peak orders it hands to the eviction engines when no such order fits.
//!
//! With no recomputation an output is needed exactly while some reader is
//! not yet computed, and releasing it after its last reader is best
//! (`simulate::dag_sequence`'s releases, models/MODEL.md §4.7 "Memory at a
//! step"), so the memory while v runs after the down-set D (the nodes
//! computed so far) is |v| + tmp(v) plus the bytes of the outputs in D that a
//! node outside D reads: a function of D and v alone.
//!
//! - [`search`]: depth-first over the down-sets, each visited at most once
//!   (a hash set of bitsets), a node following D when its inputs are in D and
//!   the memory above fits; children in a greedy order (the most bytes freed
//!   net first, then the smallest output, then the smallest id). It finds an
//!   order ([`Outcome::Found`]; its makespan is Σd, the least any schedule
//!   can have), or visits every reachable down-set ([`Outcome::Exhausted`]:
//!   every schedule recomputes or transfers something; this says nothing
//!   about how much more than Σd a schedule needs), or stops at a cap on the
//!   down-sets visited or a clock ([`Outcome::Stopped`]).
//! - `bound::graph::forced::forced_peak`: a lower bound on the peak of
//!   every such order (proofs/GRAPH-BOUNDS.md §5). When x runs, every
//!   ancestor u of x with a reader in desc(x) ∪ {x} has been computed (once)
//!   and is read at or after x's start, so its only copy is resident: the
//!   peak is at least |x| + tmp(x) + Σ|u| over those u. When that exceeds the
//!   memory for some x the search is not run at all ([`Outcome::Forced`]).
//! - [`least_peak_order`]: a beam search over the down-sets for an order of
//!   low peak regardless of the memory (key: the peak so far, then the live
//!   bytes), the order the eviction engines then repair with recomputations
//!   where it does not fit.
//! - `graph-order` ([`Order`]): [`search`] as a heuristic of its own; a found
//!   order is realised and checked like every candidate, exhaustion is
//!   reported as `no schedule` with its reason, never as a bound.
//!
//! Owns: [`Outcome`], [`search`], [`search_within`], [`max_downsets`],
//! [`least_peak_order`], [`Order`]. Must not import: exact
//! solvers.

use super::{dag_of, is_graph, realise};
use crate::bound::graph::forced::forced_peak;
use crate::family::dag::Dag;
use crate::family::InstanceFile;
use crate::heuristic::{Found, Heuristic, HeuristicError, SolverLimit};
use crate::model::Instance;
use crate::schedule::Schedule;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// The most work (down-sets × (n + |E|)) one search does.
const WORK: usize = 1_000_000_000;

/// The most down-sets a search visits (a count, so the result is the same on
/// every machine).
pub const STATE_CAP: usize = 300_000;

/// The most down-sets the search visits on `dag` (at most [`STATE_CAP`],
/// fewer on larger graphs: each visit costs O(n + |E|)).
pub fn max_downsets(dag: &Dag) -> usize {
    let edges: usize = dag.preds.iter().map(Vec::len).sum();
    (WORK / (dag.len() + edges).max(1)).min(STATE_CAP)
}

/// How a search ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every node once, in this order, within the memory.
    Found(Vec<usize>),
    /// Every reachable down-set visited (this many): no such order exists.
    Exhausted(usize),
    /// `forced_peak` exceeds the memory (bytes, at this node): no such
    /// order exists, and nothing was searched.
    Forced { bytes: u128, node: usize },
    /// Stopped at the down-set cap or the clock after this many down-sets.
    Stopped(usize),
}

/// A set of nodes as bits.
type Bits = Vec<u64>;

fn has(s: &[u64], v: usize) -> bool {
    s[v / 64] >> (v % 64) & 1 == 1
}

fn set(s: &mut [u64], v: usize) {
    s[v / 64] |= 1 << (v % 64);
}

/// A frame of the depth-first stack: extend the path's first `depth` nodes
/// by `v`; `live` is the bytes of the outputs then still read outside.
struct Frame {
    depth: usize,
    v: usize,
    live: u128,
}

/// The search's state along the current path.
struct Path<'a> {
    dag: &'a Dag,
    nodes: Vec<usize>,
    done: Bits,
    /// Inputs of each node not yet computed.
    missing: Vec<usize>,
    /// Readers of each node not yet computed.
    unread: Vec<usize>,
}

impl<'a> Path<'a> {
    fn new(dag: &'a Dag) -> Path<'a> {
        let n = dag.len();
        Path {
            dag,
            nodes: Vec::with_capacity(n),
            done: vec![0; n.div_ceil(64).max(1)],
            missing: dag.preds.iter().map(Vec::len).collect(),
            unread: dag.succs.iter().map(Vec::len).collect(),
        }
    }

    fn push(&mut self, v: usize) {
        self.nodes.push(v);
        set(&mut self.done, v);
        self.dag.succs[v].iter().for_each(|&w| self.missing[w] -= 1);
        self.dag.preds[v].iter().for_each(|&u| self.unread[u] -= 1);
    }

    fn truncate(&mut self, depth: usize) {
        while self.nodes.len() > depth {
            let v = self.nodes.pop().expect("a node");
            self.done[v / 64] &= !(1 << (v % 64));
            self.dag.succs[v].iter().for_each(|&w| self.missing[w] += 1);
            self.dag.preds[v].iter().for_each(|&u| self.unread[u] += 1);
        }
    }

    /// The nodes that may follow (inputs computed; with `cap`, fitting it),
    /// each as (the memory while it runs, net bytes kept, |v|, v, the live
    /// bytes after it), unsorted.
    fn children(&self, live: u128, cap: Option<u128>) -> Vec<(u128, i128, u64, usize, u128)> {
        let dag = self.dag;
        (0..dag.len())
            .filter(|&v| !has(&self.done, v) && self.missing[v] == 0)
            .map(|v| (v, live + dag.size[v] as u128 + dag.temp[v] as u128))
            .filter(|&(_, m)| cap.is_none_or(|c| m <= c))
            .map(|(v, m)| {
                // Inputs whose last reader is v go at v's end.
                let freed: u128 = dag.preds[v]
                    .iter()
                    .filter(|&&u| self.unread[u] == 1)
                    .map(|&u| dag.size[u] as u128)
                    .sum();
                let kept = if dag.succs[v].is_empty() {
                    0
                } else {
                    dag.size[v] as u128
                };
                let after = live + kept - freed;
                (m, kept as i128 - freed as i128, dag.size[v], v, after)
            })
            .collect()
    }
}

/// An order computing every node once within the memory, or `None` (none
/// exists, or the cap stopped the search first).
pub fn search(dag: &Dag, max: usize) -> Option<Vec<usize>> {
    match search_within(dag, max, None) {
        Outcome::Found(order) => Some(order),
        _ => None,
    }
}

/// Search `dag` for an order computing every node once within its capacity,
/// visiting at most `max` down-sets and stopping at `deadline`.
pub fn search_within(dag: &Dag, max: usize, deadline: Option<Instant>) -> Outcome {
    let n = dag.len();
    let cap = dag.capacity as u128;
    if let Some((bytes, node)) = forced_peak(dag).filter(|&(b, _)| b > cap) {
        return Outcome::Forced { bytes, node };
    }
    let mut path = Path::new(dag);
    let mut seen: HashSet<Box<[u64]>> = HashSet::new();
    seen.insert(path.done.clone().into_boxed_slice());
    let mut stack: Vec<Frame> = Vec::new();
    let mut live: u128 = 0;
    let mut expanded: u64 = 0;
    loop {
        if path.nodes.len() == n {
            return Outcome::Found(path.nodes);
        }
        let mut kids = path.children(live, Some(cap));
        // The stack pops the least key first.
        kids.sort_by(|a, b| (b.1, b.2, b.3).cmp(&(a.1, a.2, a.3)));
        let depth = path.nodes.len();
        for (_, _, _, v, after) in kids {
            set(&mut path.done, v);
            if !seen.contains(&path.done[..]) {
                seen.insert(path.done.clone().into_boxed_slice());
                stack.push(Frame {
                    depth,
                    v,
                    live: after,
                });
            }
            path.done[v / 64] &= !(1 << (v % 64));
        }
        expanded += 1;
        let late = expanded % 1024 == 0 && deadline.is_some_and(|d| Instant::now() >= d);
        if seen.len() > max || late {
            return Outcome::Stopped(seen.len());
        }
        let Some(f) = stack.pop() else {
            return Outcome::Exhausted(seen.len());
        };
        path.truncate(f.depth);
        path.push(f.v);
        live = f.live;
    }
}

/// A beam state: its order so far, the peak so far, the live bytes.
struct Beam {
    order: Vec<usize>,
    peak: u128,
    live: u128,
}

/// An order of low peak whatever the memory (the module doc's beam search,
/// `width` down-sets kept per depth, each down-set once per depth).
pub fn least_peak_order(dag: &Dag, width: usize) -> Vec<usize> {
    let n = dag.len();
    let mut beam = vec![Beam {
        order: Vec::new(),
        peak: 0,
        live: 0,
    }];
    for _ in 0..n {
        // Down-set → ((peak, live), state index, node added).
        let mut next: HashMap<Bits, ((u128, u128), usize, usize)> = HashMap::new();
        for (i, b) in beam.iter().enumerate() {
            let mut path = Path::new(dag);
            b.order.iter().for_each(|&v| path.push(v));
            for (m, _, _, v, after) in path.children(b.live, None) {
                let key = (b.peak.max(m), after);
                let mut done = path.done.clone();
                set(&mut done, v);
                let e = next.entry(done).or_insert((key, i, v));
                if (key, i, v) < *e {
                    *e = (key, i, v);
                }
            }
        }
        let mut kept: Vec<((u128, u128), usize, usize)> = next.into_values().collect();
        kept.sort_unstable();
        kept.truncate(width.max(1));
        beam = kept
            .into_iter()
            .map(|((peak, live), i, v)| {
                let mut order = beam[i].order.clone();
                order.push(v);
                Beam { order, peak, live }
            })
            .collect();
    }
    beam.swap_remove(0).order
}

/// `graph-order`.
pub struct Order;

impl Order {
    fn found(&self, inst: &Instance, dag: &Dag, out: Outcome) -> Result<Schedule, HeuristicError> {
        let why = |reason: String| HeuristicError::NoSchedule {
            heuristic: "graph-order",
            reason,
        };
        match out {
            Outcome::Found(seq) => realise(self.name(), inst, dag, &seq),
            Outcome::Exhausted(k) => Err(why(format!(
                "every order computing each node once exceeds the GPU memory ({} B): \
                 all {k} reachable down-sets visited (a schedule must recompute or offload; \
                 no bound is claimed)",
                dag.capacity
            ))),
            Outcome::Forced { bytes, node } => Err(why(format!(
                "every order computing each node once exceeds the GPU memory ({} B): \
                 node {node} runs beside {bytes} B of outputs it forces resident \
                 (a schedule must recompute or offload; no bound is claimed)",
                dag.capacity
            ))),
            Outcome::Stopped(k) => Err(why(format!(
                "stopped at its limit after {k} down-sets without an order"
            ))),
        }
    }
}

impl Heuristic for Order {
    fn name(&self) -> &'static str {
        "graph-order"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        is_graph(file)
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let dag = dag_of(self.name(), file, inst)?;
        self.found(inst, &dag, search_within(&dag, max_downsets(&dag), None))
    }
    fn schedule_within(
        &self,
        file: &InstanceFile,
        inst: &Instance,
        limit: SolverLimit,
    ) -> Result<Found, HeuristicError> {
        let dag = dag_of(self.name(), file, inst)?;
        let deadline = match limit {
            SolverLimit::Deterministic => None,
            SolverLimit::Time(d) => Some(Instant::now() + d),
        };
        let out = search_within(&dag, max_downsets(&dag), deadline);
        Ok(Found {
            schedule: self.found(inst, &dag, out)?,
            note: None,
        })
    }
}
