//! Chen's checkpointing the way Checkmate runs it on a whole graph
//! (`checkmate/core/solvers/strategy_chen.py`, its S from
//! `gen_s_matrix_fixed_checkpoints` and its R from `solve_r_opt` in
//! `checkmate/core/utils/solver_common.py`, github parasj/checkmate):
//!
//! - the candidates C are the *articulation points* of the forward graph
//!   (Checkmate's `DFGraph.articulation_points`: forward nodes whose removal
//!   disconnects the undirected forward graph with a virtual source before
//!   node 0 and a virtual sink after the last one), or every node (the
//!   `_NOAP` variants, "generalized");
//! - `chen-ladder` (`solve_chen_sqrtn`): every ⌊√|C|⌋-th candidate is a
//!   checkpoint; `chen-greedy` (`solve_chen_greedy`, "AP greedy" and
//!   "generalized greedy"): walking the forward nodes in topological order, a
//!   candidate becomes a checkpoint once the forward bytes since the last one
//!   exceed the segment budget b (Checkmate walks its `topological_order_fwd`,
//!   which `toposort` of the successor lists yields sinks first; the walk
//!   here is the forward topological order, Chen's);
//! - S is Checkmate's fixed-checkpoint matrix (each input kept from its
//!   producer to its reader, checkpoints striped, the forward and backward
//!   "ladders" of each segment, the backward nodes' own inputs kept), R its
//!   fix-up, the sequence read off stage by stage ([`super::stages`]).
//!
//! **What Checkmate's public code computes.** Its first rows ("set minimum
//! input requirements": S[t,u] = 1 for every edge u → v and u < t < v) keep
//! every output from its producer to its last reader, so on a training graph
//! (each forward output read by its backward node) nothing is ever dropped:
//! R recomputes nothing and its √n and greedy schedules are checkpoint-all's
//! (the same on Checkmate's own `gen_linear_graph`; the code's comment says
//! the baselines of the paper differed and were "removed in public
//! release"). Each heuristic here therefore runs that S *and* the same S
//! without the minimum-input rows, which is Chen's scheme: between a
//! segment's forward and backward pass only the checkpoints stay, and R's
//! fix-up recomputes the segment (its ladder) when the backward pass needs
//! it. The cheapest of the variants that fits wins.
//!
//! Forward/backward: a node is backward when its output is a gradient
//! (`graph` files: Checkmate's `backward` flag); graphs without any (the
//! random layered ones) are all forward, as in Checkmate. Checkmate runs
//! these baselines without consulting the budget; here each heuristic tries
//! the AP and the generalized variant (and `chen-greedy` a sweep of b over
//! [`GREEDY_STEPS`] equal steps up to the forward bytes, as Checkmate's
//! experiments sweep it), keeps the cheapest whose realised peak fits, and
//! the checker decides.
//!
//! Owns: [`ChenLadder`], [`ChenGreedy`], [`articulation_points`],
//! [`fixed_checkpoints`]. Must not import: exact solvers.

use super::stages::{preds_by_pos, r_of_s, sequence, Stages};
use super::{dag_of, is_graph, realise};
use crate::family::dag::Dag;
use crate::family::InstanceFile;
use crate::heuristic::{Heuristic, HeuristicError};
use crate::model::{Instance, TensorKind};
use crate::schedule::Schedule;
use crate::simulate::dag_sequence::peak_of;

/// Segment budgets tried by `chen-greedy`.
pub const GREEDY_STEPS: u64 = 50;

/// Is each position a backward node?
fn backward_by_pos(inst: &Instance, dag: &Dag) -> Vec<bool> {
    dag.topo
        .iter()
        .map(|&v| inst.tensor(dag.out[v]).kind == TensorKind::Gradient)
        .collect()
}

/// Checkmate's articulation points (positions, ascending) of the forward
/// graph: edges u → v with v forward, plus (source, 0) and (max, sink).
pub fn articulation_points(preds: &[Vec<usize>], backward: &[bool]) -> Vec<usize> {
    let n = preds.len();
    let mut edges: Vec<(usize, usize)> = Vec::new();
    for v in (0..n).filter(|&v| !backward[v]) {
        edges.extend(preds[v].iter().map(|&u| (u, v)));
    }
    let Some(max) = edges.iter().map(|&(u, v)| u.max(v)).max() else {
        return Vec::new();
    };
    let mut on = vec![false; n];
    for &(u, v) in &edges {
        on[u] = true;
        on[v] = true;
    }
    // Vertices 0..n, source n, sink n + 1.
    let (src, sink) = (n, n + 1);
    edges.push((src, 0));
    edges.push((max, sink));
    let mut adj = vec![Vec::new(); n + 2];
    for &(u, v) in &edges {
        adj[u].push(v);
        adj[v].push(u);
    }
    (0..n)
        .filter(|&x| on[x] && components_without(&adj, &edges, x) > 1)
        .collect()
}

/// Connected components of the edges not touching `x` (vertices on them only).
fn components_without(adj: &[Vec<usize>], edges: &[(usize, usize)], x: usize) -> usize {
    let mut seen = vec![false; adj.len()];
    let mut count = 0;
    for &(a, b) in edges {
        if a == x || b == x || seen[a] {
            continue;
        }
        count += 1;
        let mut stack = vec![a];
        seen[a] = true;
        while let Some(u) = stack.pop() {
            for &w in &adj[u] {
                if w != x && !seen[w] {
                    seen[w] = true;
                    stack.push(w);
                }
            }
        }
    }
    count
}

/// Checkmate's `gen_s_matrix_fixed_checkpoints` (positions; `t_fwd` = the
/// number of forward nodes; checkpoints ascending); without its minimum
/// input requirements when `keep_inputs` is false (module doc).
pub fn fixed_checkpoints(
    preds: &[Vec<usize>],
    backward: &[bool],
    checkpoints: &[usize],
    keep_inputs: bool,
) -> Stages {
    let n = preds.len();
    let t_fwd = backward.iter().filter(|&&b| !b).count();
    let mut s: Stages = vec![vec![false; n]; n];
    // Minimum input requirements.
    for (v, ps) in preds.iter().enumerate().filter(|_| keep_inputs) {
        for &u in ps {
            for row in s.iter_mut().take(v).skip(u + 1) {
                row[u] = true;
            }
        }
    }
    // Stripe the checkpoints.
    for (t, row) in s.iter_mut().enumerate().skip(1) {
        for &i in checkpoints.iter().filter(|&&i| i < t) {
            row[i] = true;
        }
    }
    let starts: Vec<usize> = std::iter::once(0)
        .chain(checkpoints.iter().copied())
        .collect();
    let ends: Vec<usize> = checkpoints.iter().copied().chain([t_fwd + 1]).collect();
    for (&start, &end) in starts.iter().zip(&ends) {
        // The checkpoint ladder (stages n − x − 1 for x in the segment).
        for x in start..end {
            if let Some(t) = n.checked_sub(x + 1) {
                for i in start..t.min(end) {
                    s[t][i] = true;
                }
            }
        }
        // The forward checkpoint block.
        for t in (start..=end).filter(|&t| t < n) {
            for i in start..t.min(end) {
                s[t][i] = true;
            }
        }
    }
    // Backward edges: the input kept until its backward reader.
    for v in (0..n).filter(|&v| backward[v]) {
        for &u in preds[v].iter().filter(|&&u| backward[u]) {
            for row in s.iter_mut().take(v + 1).skip(u + 1) {
                row[u] = true;
            }
        }
    }
    s
}

/// The candidates: Checkmate's articulation points, or every node.
fn candidates(preds: &[Vec<usize>], backward: &[bool], ap: bool) -> Vec<usize> {
    if ap {
        articulation_points(preds, backward)
    } else {
        (0..preds.len()).collect()
    }
}

/// `solve_chen_sqrtn`'s checkpoints: every ⌊√|C|⌋-th candidate.
fn sqrt_n(c: &[usize]) -> Vec<usize> {
    let k = (c.len() as f64).sqrt().floor() as usize;
    if k == 0 {
        return Vec::new();
    }
    c.iter()
        .enumerate()
        .filter(|(idx, _)| (idx + 1) % k == 0)
        .map(|(_, &v)| v)
        .collect()
}

/// `solve_chen_greedy`'s checkpoints for segment budget `b`.
fn greedy(dag: &Dag, backward: &[bool], c: &[usize], b: u64) -> Vec<usize> {
    let mut is_c = vec![false; backward.len()];
    for &v in c {
        is_c[v] = true;
    }
    let mut temp = 0u64;
    let mut out = Vec::new();
    for k in (0..backward.len()).filter(|&k| !backward[k]) {
        temp = temp.saturating_add(dag.size[dag.topo[k]]);
        if is_c[k] && temp > b {
            temp = 0;
            out.push(k);
        }
    }
    out
}

/// The checkpoint sets a heuristic tries, from the DAG, its predecessors
/// by position and its backward flags.
type SetsOf = dyn Fn(&Dag, &[Vec<usize>], &[bool]) -> Vec<Vec<usize>>;

/// The cheapest sequence of the checkpoint sets (each with and without the
/// minimum-input rows) whose peak fits, or why none.
fn cheapest(
    h: &'static str,
    file: &InstanceFile,
    inst: &Instance,
    sets_of: &SetsOf,
) -> Result<Schedule, HeuristicError> {
    let dag = dag_of(h, file, inst)?;
    let dag = &dag;
    let preds = preds_by_pos(dag);
    let backward = backward_by_pos(inst, dag);
    let sets = sets_of(dag, &preds, &backward).into_iter();
    let mut best: Option<(i64, Vec<usize>)> = None;
    let mut least: Option<u128> = None;
    for (cps, keep) in sets.flat_map(|c| [(c.clone(), true), (c, false)]) {
        let s = fixed_checkpoints(&preds, &backward, &cps, keep);
        let seq = sequence(dag, &r_of_s(&preds, &s));
        let Some(peak) = peak_of(dag, &seq) else {
            continue;
        };
        least = Some(least.map_or(peak, |p| p.min(peak)));
        let cost: i64 = seq.iter().map(|&v| dag.duration[v]).sum();
        if peak <= dag.capacity as u128 && best.as_ref().is_none_or(|(c, _)| cost < *c) {
            best = Some((cost, seq));
        }
    }
    match best {
        Some((_, seq)) => realise(h, inst, dag, &seq),
        None => Err(HeuristicError::NoSchedule {
            heuristic: h,
            reason: format!(
                "no checkpoint set fits: the least realised peak is {} B, over the GPU memory ({} B)",
                least.unwrap_or(0),
                dag.capacity
            ),
        }),
    }
}

/// `chen-ladder` (module doc).
pub struct ChenLadder;

impl Heuristic for ChenLadder {
    fn name(&self) -> &'static str {
        "chen-ladder"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        is_graph(file)
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        cheapest(self.name(), file, inst, &|_, preds, backward| {
            [true, false]
                .map(|ap| sqrt_n(&candidates(preds, backward, ap)))
                .to_vec()
        })
    }
}

/// `chen-greedy` (module doc).
pub struct ChenGreedy;

impl Heuristic for ChenGreedy {
    fn name(&self) -> &'static str {
        "chen-greedy"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        is_graph(file)
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        cheapest(self.name(), file, inst, &greedy_sets)
    }
}

/// `chen-greedy`'s sets: b over [`GREEDY_STEPS`] equal steps up to the
/// forward bytes, with the articulation points and with every node.
fn greedy_sets(dag: &Dag, preds: &[Vec<usize>], backward: &[bool]) -> Vec<Vec<usize>> {
    let fwd: u64 = (0..dag.len())
        .filter(|&k| !backward[k])
        .map(|k| dag.size[dag.topo[k]])
        .sum();
    let mut sets = Vec::new();
    for ap in [true, false] {
        let c = candidates(preds, backward, ap);
        for step in 0..=GREEDY_STEPS {
            let b = (fwd as u128 * step as u128 / GREEDY_STEPS as u128) as u64;
            let cps = greedy(dag, backward, &c, b);
            if !sets.contains(&cps) {
                sets.push(cps);
            }
        }
    }
    sets
}
