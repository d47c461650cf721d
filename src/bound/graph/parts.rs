//! `graph-parts`: a decomposition bound for computation graphs (DAG instances
//! with nothing movable), proved in `proofs/GRAPH-BOUNDS.md` §3.
//!
//! Cut the nodes into disjoint parts. Restricted to the runs of one part P,
//! every schedule is a schedule of P's *relaxed instance*: nodes outside P are
//! free to have, but the outputs a run of P reads from outside P occupy memory
//! while it runs (they are resident then in the real schedule). The makespan
//! is at least the sum over the parts of their relaxed optima, and each of
//! those is at least the part's Σd. A part's relaxed optimum is computed by a
//! best-first search over (computed, resident) node sets of the part, ordered
//! by the recomputation paid so far; a search stopped by its limits gives the
//! least recomputation it had not yet ruled out (Dijkstra's invariant), still
//! a bound. A relaxed instance without any schedule proves the whole instance
//! infeasible.
//!
//! The parts tried: windows of consecutive nodes of two topological orders
//! (two offsets each) and the neighbourhood of each op with the largest
//! footprints; those with a positive excess (relaxed optimum − Σd of the part)
//! are packed greedily into disjoint parts.
//!
//! Owns: [`GraphParts`], [`part_bound`], [`PartBound`], [`partition_bound`].
//! Must not import: heuristics, exact solvers, the simulator, the checker.

use super::{dag_of, is_graph};
use crate::bound::{BoundError, BoundMethod, LowerBound, Strength};
use crate::family::dag::Dag;
use crate::family::InstanceFile;
use crate::model::Instance;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::{Duration, Instant};

/// The largest part searched (its node sets are 64-bit masks).
pub const MAX_PART: usize = 64;

/// What the search proved about a part's relaxed instance, in ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartBound {
    /// Its relaxed optimum.
    Exact(i64),
    /// A lower bound on its relaxed optimum (the search was stopped).
    AtLeast(i64),
    /// It has no schedule, so neither has the instance.
    Infeasible,
}

impl PartBound {
    /// The bound in ticks (`None`: infeasible).
    pub fn ticks(self) -> Option<i64> {
        match self {
            PartBound::Exact(t) | PartBound::AtLeast(t) => Some(t),
            PartBound::Infeasible => None,
        }
    }
}

/// A part's relaxed instance as bit masks over its nodes.
struct Relaxed {
    /// The in-part inputs of each node.
    inputs: Vec<u64>,
    /// The bytes each run takes besides the part's resident outputs: its
    /// output, its scratch and its inputs from outside the part.
    own: Vec<u128>,
    size: Vec<u128>,
    duration: Vec<i64>,
    capacity: u128,
}

fn relaxed(dag: &Dag, part: &[usize]) -> Relaxed {
    let index: HashMap<usize, usize> = part.iter().enumerate().map(|(i, &v)| (v, i)).collect();
    let mut inputs = vec![0u64; part.len()];
    let mut own = vec![0u128; part.len()];
    for (i, &v) in part.iter().enumerate() {
        own[i] = dag.size[v] as u128 + dag.temp[v] as u128;
        for &u in &dag.preds[v] {
            match index.get(&u) {
                Some(&j) => inputs[i] |= 1 << j,
                None => own[i] += dag.size[u] as u128,
            }
        }
    }
    Relaxed {
        inputs,
        own,
        size: part.iter().map(|&v| dag.size[v] as u128).collect(),
        duration: part.iter().map(|&v| dag.duration[v]).collect(),
        capacity: dag.capacity as u128,
    }
}

/// The relaxed optimum of `part` (distinct nodes of `dag`, at most
/// [`MAX_PART`]), or a bound on it when the search pops more than `max_pops`
/// states or runs past `deadline`. States (D, L): D the part's nodes run at
/// least once, L ⊆ D those resident; a run of v ∉ L with its in-part inputs
/// in L fits when Σ_L |u| + |v| + tmp(v) + Σ of v's outside inputs ≤ cap; a
/// delete is free. The key is the recomputation paid so far (the cost of the
/// runs of nodes already in D), so a popped key k proves every schedule pays
/// at least k beyond the part's Σd.
pub fn part_bound(dag: &Dag, part: &[usize], max_pops: u64, deadline: Instant) -> PartBound {
    assert!(part.len() <= MAX_PART, "a part of at most {MAX_PART} nodes");
    let r = relaxed(dag, part);
    let k = part.len();
    let base: i64 = r.duration.iter().sum();
    let all: u64 = if k == 64 { u64::MAX } else { (1u64 << k) - 1 };
    let mut best: HashMap<(u64, u64), i64> = HashMap::new();
    // Least extra first, then the most nodes done (reaches a goal sooner).
    let mut heap = BinaryHeap::new();
    best.insert((0, 0), 0);
    heap.push(Reverse((0i64, Reverse(0u32), 0u64, 0u64)));
    let mut pops: u64 = 0;
    while let Some(Reverse((extra, _, done, live))) = heap.pop() {
        if best.get(&(done, live)).is_some_and(|&e| e < extra) {
            continue;
        }
        if done == all {
            return PartBound::Exact(base + extra);
        }
        pops += 1;
        if pops > max_pops || (pops % 1024 == 0 && Instant::now() >= deadline) {
            return PartBound::AtLeast(base + extra);
        }
        let used: u128 = (0..k)
            .filter(|&i| live >> i & 1 == 1)
            .map(|i| r.size[i])
            .sum();
        let mut push = |next: (u64, u64), e: i64| {
            if best.get(&next).is_none_or(|&b| e < b) {
                best.insert(next, e);
                heap.push(Reverse((e, Reverse(next.0.count_ones()), next.0, next.1)));
            }
        };
        for i in 0..k {
            let bit = 1u64 << i;
            if live & bit != 0 {
                push((done, live & !bit), extra);
            } else if r.inputs[i] & !live == 0 && used + r.own[i] <= r.capacity {
                let paid = if done & bit != 0 { r.duration[i] } else { 0 };
                push((done | bit, live | bit), extra + paid);
            }
        }
    }
    PartBound::Infeasible
}

/// Σ over disjoint `parts` of their relaxed bounds, plus d(v) for every node
/// in no part (`None`: some part is infeasible). `proofs/GRAPH-BOUNDS.md` §3.
pub fn partition_bound(
    dag: &Dag,
    parts: &[Vec<usize>],
    max_pops: u64,
    deadline: Instant,
) -> Option<i64> {
    let mut covered = vec![false; dag.len()];
    let mut total = 0i64;
    for p in parts {
        for &v in p {
            assert!(!covered[v], "parts are disjoint");
            covered[v] = true;
        }
        total += part_bound(dag, p, max_pops, deadline).ticks()?;
    }
    let rest: i64 = (0..dag.len())
        .filter(|&v| !covered[v])
        .map(|v| dag.duration[v])
        .sum();
    Some(total + rest)
}

/// A topological order by longest-path depth from the sources, then id.
fn depth_order(dag: &Dag) -> Vec<usize> {
    let mut depth = vec![0usize; dag.len()];
    for &v in &dag.topo {
        depth[v] = dag.preds[v]
            .iter()
            .map(|&u| depth[u] + 1)
            .max()
            .unwrap_or(0);
    }
    let mut order: Vec<usize> = (0..dag.len()).collect();
    order.sort_by_key(|&v| (depth[v], v));
    order
}

/// The neighbourhood of `w`: w, then breadth-first its inputs (largest
/// output first), their inputs and its readers, up to `max` nodes.
fn neighbourhood(dag: &Dag, w: usize, max: usize) -> Vec<usize> {
    let mut part = vec![w];
    let mut at = 0;
    while at < part.len() && part.len() < max {
        let v = part[at];
        at += 1;
        let mut next: Vec<usize> = dag.preds[v].clone();
        next.sort_by_key(|&u| Reverse(dag.size[u]));
        next.extend(dag.succs[v].iter().copied());
        for u in next {
            if part.len() < max && !part.contains(&u) {
                part.push(u);
            }
        }
    }
    part
}

/// The candidate parts (module doc), each of at most `max` nodes.
fn candidates(dag: &Dag, max: usize, around: usize) -> Vec<Vec<usize>> {
    let mut parts = Vec::new();
    for order in [dag.topo.clone(), depth_order(dag)] {
        for offset in [0, max / 2] {
            if offset > 0 {
                parts.push(order[..offset.min(order.len())].to_vec());
            }
            parts.extend(
                order[offset.min(order.len())..]
                    .chunks(max)
                    .map(<[usize]>::to_vec),
            );
        }
    }
    let mut heavy: Vec<usize> = (0..dag.len()).collect();
    heavy.sort_by_key(|&v| (Reverse(dag.footprint(v)), v));
    parts.extend(
        heavy
            .into_iter()
            .take(around)
            .map(|w| neighbourhood(dag, w, max)),
    );
    parts
}

/// `graph-parts` (module doc).
#[derive(Clone, Debug)]
pub struct GraphParts {
    /// The largest part (at most [`MAX_PART`]).
    pub max_part: usize,
    /// How many ops' neighbourhoods are tried (those of largest footprint).
    pub around: usize,
    /// The most states one part's search pops.
    pub max_pops: u64,
    /// The wall-clock budget of all the parts together; parts not reached
    /// count their Σd.
    pub time_limit: Duration,
}

impl Default for GraphParts {
    fn default() -> GraphParts {
        GraphParts {
            max_part: 12,
            around: 32,
            max_pops: 200_000,
            time_limit: Duration::from_secs(10),
        }
    }
}

impl GraphParts {
    pub fn compute(&self, inst: &Instance) -> Result<LowerBound, BoundError> {
        let name = self.name();
        let dag = dag_of(name, inst)?;
        if dag.movable {
            return Err(BoundError::Failed {
                bound: name,
                cause: crate::bound::Failure::Graph(
                    "offloading is enabled: a transfer may replace a recomputation".into(),
                ),
            });
        }
        if let Some(v) = (0..dag.len()).find(|&v| dag.duration[v] <= 0) {
            return Err(BoundError::Failed {
                bound: name,
                cause: crate::bound::Failure::Graph(format!(
                    "op {} has duration 0 (the proof orders runs by their start)",
                    inst.ops[v].name
                )),
            });
        }
        let deadline = Instant::now() + self.time_limit;
        let max = self.max_part.clamp(1, MAX_PART);
        // (excess over the part's Σd, part), for the parts with some.
        let mut found: Vec<(i64, Vec<usize>)> = Vec::new();
        for part in candidates(&dag, max, self.around) {
            if Instant::now() >= deadline {
                break;
            }
            let sum: i64 = part.iter().map(|&v| dag.duration[v]).sum();
            match part_bound(&dag, &part, self.max_pops, deadline) {
                PartBound::Infeasible => {
                    let names: Vec<&str> =
                        part.iter().map(|&v| inst.ops[v].name.as_str()).collect();
                    return Err(BoundError::Infeasible {
                        bound: name,
                        reason: format!(
                            "ops {} have no schedule even with every other output free",
                            names.join(", ")
                        ),
                    });
                }
                b => {
                    let excess = b.ticks().unwrap_or(sum) - sum;
                    if excess > 0 {
                        found.push((excess, part));
                    }
                }
            }
        }
        // Pack disjoint parts, largest excess first.
        found.sort_by_key(|(e, p)| (Reverse(*e), p.len()));
        let mut used = vec![false; dag.len()];
        let mut extra = 0i64;
        for (e, p) in found {
            if p.iter().all(|&v| !used[v]) {
                p.iter().for_each(|&v| used[v] = true);
                extra += e;
            }
        }
        Ok(LowerBound::from_ticks(
            dag.total_duration() + extra,
            name,
            Strength::Certified,
        ))
    }
}

impl BoundMethod for GraphParts {
    fn name(&self) -> &'static str {
        "graph-parts"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        is_graph(file)
    }
    fn bound(&self, _file: &InstanceFile, inst: &Instance) -> Result<LowerBound, BoundError> {
        self.compute(inst)
    }
}
