//! Schedules for computation graphs (DAG instances, `family::dag`; the
//! `graph` family, models/MODEL.md §4.7): Checkmate's baselines and a
//! memory-aware eviction scheduler of our own. Each builds a node sequence;
//! `simulate::dag_sequence` realises it back to back with the tightest
//! releases, and [`super::run`] passes it through the checker.
//!
//! - `checkpoint-all` (Checkmate's `strategy_checkpoint_all`): every node
//!   once, in the topological order, every output kept until its last reader.
//! - `chen-sqrt-n` (Checkmate's `solve_chen_sqrtn`, on the linearised graph:
//!   the topological order): every ⌊√n⌋-th node is a checkpoint; at the end
//!   of each segment the outputs of the segment's other nodes are dropped,
//!   and a later reader recomputes them (and their dropped ancestors) from the
//!   checkpoints when it needs them. Memory is not consulted (Chen's scheme
//!   has none); the checker says whether it fits.
//! - `graph-evict` ([`evict`]): the topological order, each missing input
//!   recomputed on demand, and before every op as many resident outputs
//!   evicted as the memory needs, the least costly first (outputs no
//!   first-time reader needs any more, then the largest bytes × distance to
//!   next use per tick of recomputation). Feasible by construction whenever it
//!   finishes (its resident set bounds the realised memory).
//! - `graph-best` ([`evict::Best`]): first a depth-first search over the
//!   down-sets for an order that computes every node once within the memory
//!   ([`order`]: makespan Σd, the least possible; capped); else the eviction scheduler under each
//!   scoring rule and recomputation engine, in the topological order, in
//!   two low-memory orders (list scheduling: the ready node that frees the
//!   most bytes net first; ties by the latest input or by the topological
//!   order) and in a least-peak order (a beam search over the down-sets,
//!   [`order::least_peak_order`]), on graphs of at most 16 nodes a capped A* search over op
//!   sequences ([`small`]: complete where it settles), and Chen's checkpoints
//!   at several segment lengths; the four shortest candidates that fit also
//!   with their repeated computations dropped ([`improve::drop_computations`]);
//!   the least makespan the checker accepts.
//! - [`improve`]: the checked improvement of a graph schedule (drop a
//!   computation the sequence repeats while the memory still fits), offered
//!   by the gap report as `<finder>+improve`.
//!
//! - `graph-order` ([`order::Order`]): the order search alone: a checked
//!   schedule of makespan Σd, or `no schedule` saying whether it visited
//!   every down-set (none exists), a node forces more than the memory
//!   ([`order::forced_peak`]), or it stopped at its cap.
//! - `graph-offload` ([`evict::Offload`]): with offloading enabled, the
//!   eviction scheduler offloads (once) an evicted output whose transfer fits
//!   in the compute before its next reader, instead of recomputing it; the
//!   simulator's ASAP loop realises the transfers.
//!
//! - Checkmate's baselines as its code defines them (its stage matrices,
//!   [`stages`]): `chen-ladder` and `chen-greedy` ([`chen_ladder`]:
//!   articulation-point √n and greedy checkpoints, Checkmate's S and R) and
//!   `checkmate-lp-round` ([`lp_round`]: rounding of the LP relaxation).
//!
//! Owns: the graph heuristics and their registry. Must not import: exact
//! solvers.

pub mod chen_ladder;
pub mod evict;
pub mod improve;
pub mod lp_round;
pub mod order;
pub mod small;
pub mod stages;

use super::{Heuristic, HeuristicError};
use crate::family::dag::Dag;
use crate::family::InstanceFile;
use crate::model::Instance;
use crate::schedule::Schedule;
use crate::simulate::dag_sequence::{peak_of, schedule_of};

pub fn heuristics() -> Vec<Box<dyn Heuristic>> {
    vec![
        Box::new(CheckpointAll),
        Box::new(ChenSqrtN),
        Box::new(evict::Evict::default()),
        Box::new(evict::Best),
        Box::new(evict::Offload),
        Box::new(order::Order),
        Box::new(chen_ladder::ChenLadder),
        Box::new(chen_ladder::ChenGreedy),
        Box::new(lp_round::LpRound::default()),
    ]
}

/// Does the file compile to a DAG instance?
fn is_graph(file: &InstanceFile) -> bool {
    file.compile().is_ok_and(|i| Dag::of(&i).is_ok())
}

fn dag_of(h: &'static str, file: &InstanceFile, inst: &Instance) -> Result<Dag, HeuristicError> {
    Dag::of(inst).map_err(|_| HeuristicError::NotApplicable {
        heuristic: h,
        family: file.family().into(),
    })
}

/// The schedule of `seq`, or why it does not fit (its realised peak).
fn realise(
    h: &'static str,
    inst: &Instance,
    dag: &Dag,
    seq: &[usize],
) -> Result<Schedule, HeuristicError> {
    let peak = peak_of(dag, seq).ok_or_else(|| HeuristicError::NoSchedule {
        heuristic: h,
        reason: "the sequence lacks an input (internal error)".into(),
    })?;
    if peak > dag.capacity as u128 {
        return Err(HeuristicError::NoSchedule {
            heuristic: h,
            reason: format!(
                "its peak is {peak} B, over the GPU memory ({} B)",
                dag.capacity
            ),
        });
    }
    Ok(schedule_of(inst, dag, seq))
}

/// `checkpoint-all`.
pub struct CheckpointAll;

impl Heuristic for CheckpointAll {
    fn name(&self) -> &'static str {
        "checkpoint-all"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        is_graph(file)
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let dag = dag_of(self.name(), file, inst)?;
        realise(self.name(), inst, &dag, &dag.topo)
    }
}

/// `chen-sqrt-n`.
pub struct ChenSqrtN;

/// Chen's sequence: checkpoints every `k`-th node of the topological order.
pub fn chen_sequence(dag: &Dag, k: usize) -> Vec<usize> {
    let n = dag.len();
    let k = k.max(1);
    let checkpoint: Vec<bool> = (0..n).map(|v| (dag.pos[v] + 1) % k == 0).collect();
    let mut resident = vec![false; n];
    let mut seq = Vec::new();
    for (p, &v) in dag.topo.iter().enumerate() {
        materialise(dag, v, &mut resident, &mut seq);
        if (p + 1) % k == 0 {
            // The segment ends: keep the checkpoints and what no later node reads.
            for u in 0..n {
                let later = dag.succs[u].iter().any(|&w| dag.pos[w] > p);
                if resident[u] && !checkpoint[u] && later {
                    resident[u] = false;
                }
            }
        }
    }
    seq
}

/// Compute `v` after recomputing its missing inputs (recursively).
fn materialise(dag: &Dag, v: usize, resident: &mut [bool], seq: &mut Vec<usize>) {
    for &u in &dag.preds[v] {
        if !resident[u] {
            materialise(dag, u, resident, seq);
        }
    }
    seq.push(v);
    resident[v] = true;
}

impl Heuristic for ChenSqrtN {
    fn name(&self) -> &'static str {
        "chen-sqrt-n"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        is_graph(file)
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let dag = dag_of(self.name(), file, inst)?;
        let k = (dag.len() as f64).sqrt().floor() as usize;
        realise(self.name(), inst, &dag, &chen_sequence(&dag, k))
    }
}
