//! `graph-forced`: the recomputation that the outputs a node forces resident
//! make necessary (DAG instances with nothing movable), proved in
//! `proofs/GRAPH-BOUNDS.md` §5.
//!
//! For a node x let F(x) be its ancestors u with a reader in desc(x) ∪ {x}.
//! At the start of x's first run every ancestor has run, and an u ∈ F(x)
//! computed only once is still resident (a run of that reader comes at or
//! after x's first run and needs the one copy). So the nodes of F(x) that
//! a schedule computes once weigh at most M − |x| − tmp(x), and the others
//! (at least the excess e(x) = |x| + tmp(x) + Σ_{F(x)} |u| − M bytes of
//! them) each run a second time, for at least d(u) more ticks. The least such
//! cost is a covering knapsack; its fractional relaxation (cheapest d/|u|
//! first) rounded up bounds it. The bound is Σd plus the largest of these
//! over the nodes x.
//!
//! With every such excess ≤ 0 the bound is Σd; [`forced_peak`] (the largest
//! |x| + tmp(x) + Σ_{F(x)} |u|) is then also a lower bound on the peak of
//! every order that computes each node once, which the graph heuristics use.
//!
//! Owns: [`GraphForced`], [`forced_peak`], [`forced_extra`]. Must not import:
//! heuristics, exact solvers, the simulator, the checker.

use super::{dag_of, is_graph};
use crate::bound::{BoundError, BoundMethod, LowerBound, Strength};
use crate::family::dag::Dag;
use crate::family::InstanceFile;
use crate::model::Instance;

type Bits = Vec<u64>;

fn has(s: &[u64], v: usize) -> bool {
    s[v / 64] >> (v % 64) & 1 == 1
}

/// Ancestors (or, with `down`, descendants) of every node, as bit sets.
fn closure(dag: &Dag, down: bool) -> Vec<Bits> {
    let words = dag.len().div_ceil(64).max(1);
    let mut out = vec![vec![0u64; words]; dag.len()];
    let order: Vec<usize> = if down {
        dag.topo.iter().rev().copied().collect()
    } else {
        dag.topo.clone()
    };
    for v in order {
        let next = if down { &dag.succs[v] } else { &dag.preds[v] };
        let mut acc = vec![0u64; words];
        for &u in next {
            acc.iter_mut().zip(&out[u]).for_each(|(a, b)| *a |= b);
            acc[u / 64] |= 1 << (u % 64);
        }
        out[v] = acc;
    }
    out
}

/// F(x) of the module doc, for every node x.
fn forced_sets(dag: &Dag) -> Vec<Vec<usize>> {
    let anc = closure(dag, false);
    let desc = closure(dag, true);
    (0..dag.len())
        .map(|x| {
            (0..dag.len())
                .filter(|&u| has(&anc[x], u))
                .filter(|&u| dag.succs[u].iter().any(|&w| w == x || has(&desc[x], w)))
                .collect()
        })
        .collect()
}

fn forced_bytes(dag: &Dag, x: usize, set: &[usize]) -> u128 {
    let own = dag.size[x] as u128 + dag.temp[x] as u128;
    own + set.iter().map(|&u| dag.size[u] as u128).sum::<u128>()
}

/// The largest |x| + tmp(x) + Σ_{F(x)} |u| and its node x (the least such x
/// on ties); `None` on an empty graph.
pub fn forced_peak(dag: &Dag) -> Option<(u128, usize)> {
    forced_sets(dag)
        .iter()
        .enumerate()
        .map(|(x, set)| (forced_bytes(dag, x, set), x))
        .max_by_key(|&(b, x)| (b, std::cmp::Reverse(x)))
}

/// The least ticks of second runs that cover `excess` bytes of `set`,
/// fractionally, rounded up (`None`: the set holds fewer bytes).
fn cover(dag: &Dag, set: &[usize], excess: u128) -> Option<i64> {
    let mut items: Vec<(u128, u128)> = set
        .iter()
        .filter(|&&u| dag.size[u] > 0)
        .map(|&u| (dag.duration[u].max(0) as u128, dag.size[u] as u128))
        .collect();
    // Cheapest ticks per byte first: d1 / s1 < d2 / s2 ⇔ d1·s2 < d2·s1.
    items.sort_by(|a, b| (a.0 * b.1).cmp(&(b.0 * a.1)));
    let (mut left, mut ticks) = (excess, 0u128);
    for (d, s) in items {
        if left == 0 {
            break;
        }
        if s <= left {
            ticks += d;
            left -= s;
        } else {
            // A fraction left/s of d, rounded up with the whole sum.
            ticks += (d * left).div_ceil(s);
            left = 0;
        }
    }
    (left == 0).then(|| i64::try_from(ticks).unwrap_or(i64::MAX))
}

/// The bound's extra over Σd and the node x that gives it (0 and `None`
/// when no node forces more than the memory); `Err(x)` when x's forced
/// bytes cannot be brought under the memory at all (no schedule exists).
pub fn forced_extra(dag: &Dag) -> Result<(i64, Option<usize>), usize> {
    let cap = dag.capacity as u128;
    let mut best = (0i64, None);
    for (x, set) in forced_sets(dag).iter().enumerate() {
        let bytes = forced_bytes(dag, x, set);
        if bytes <= cap {
            continue;
        }
        let extra = cover(dag, set, bytes - cap).ok_or(x)?;
        if extra > best.0 {
            best = (extra, Some(x));
        }
    }
    Ok(best)
}

/// `graph-forced` (module doc).
pub struct GraphForced;

impl GraphForced {
    pub fn compute(&self, inst: &Instance) -> Result<LowerBound, BoundError> {
        let name = "graph-forced";
        let dag = dag_of(name, inst)?;
        if dag.movable {
            return Err(BoundError::Failed {
                bound: name,
                cause: crate::bound::Failure::Graph(
                    "offloading is enabled: a transfer may replace a recomputation".into(),
                ),
            });
        }
        match forced_extra(&dag) {
            Ok((extra, _)) => Ok(LowerBound::from_ticks(
                dag.total_duration().saturating_add(extra),
                name,
                Strength::Certified,
            )),
            Err(x) => Err(BoundError::Infeasible {
                bound: name,
                reason: format!(
                    "op {} with its own output, scratch and the outputs it forces resident \
                     exceeds the GPU memory even when all of those are recomputed",
                    inst.ops[x].name
                ),
            }),
        }
    }
}

impl BoundMethod for GraphForced {
    fn name(&self) -> &'static str {
        "graph-forced"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        is_graph(file)
    }
    fn bound(&self, _file: &InstanceFile, inst: &Instance) -> Result<LowerBound, BoundError> {
        self.compute(inst)
    }
}
