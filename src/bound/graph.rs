//! Lower bounds for computation graphs (DAG instances, `family::dag`; the
//! `graph` family of models/MODEL.md §4.7), proved in `proofs/GRAPH-BOUNDS.md`:
//!
//! - `graph-compute`: Σ_v d(v). Every node is a required op and runs at least
//!   once on the one GPU stream. Holds with offloading too.
//! - `checkmate-lp`: the LP relaxation of Checkmate's MILP in its
//!   `COVER_ALL_NODES` form with T stages (`lp::checkmate`, models/CHECKMATE.md),
//!   certified from HiGHS's row duals by Neumaier–Shcherbina in exact
//!   rationals (`weight::certify`, as the weight family's §6 bound), capped by
//!   the run-count cut Σd + (T + 1 − n)·d_min (models/CHECKMATE.md §3): every
//!   schedule with at most T runs costs at least the LP value, every other one
//!   at least the cut. No cost noise. Nothing moves in that program, so it
//!   applies only where offloading is off.
//!
//! - `graph-parts` ([`parts`]): a decomposition into parts whose relaxed
//!   optima (other outputs free, but counted while read) add up.
//! - `graph-forced` ([`forced`]): the second runs forced by the outputs a
//!   node's first run must find resident, when they exceed the memory.
//!
//! Owns: [`GraphCompute`], [`CheckmateLp`], [`parts`], [`forced`]. Must not import:
//! heuristics, exact solvers, the simulator, the checker.

pub mod forced;
pub mod parts;

use super::weight::certify::certified_bound;
use super::{BoundError, BoundMethod, Failure, LowerBound, Strength};
use crate::family::dag::Dag;
use crate::family::InstanceFile;
use crate::lp::checkmate::{encode, Graph, Nodes, Stages};
use crate::lp::{self, SolveStatus};
use crate::model::Instance;
use num_bigint::BigInt;
use num_rational::BigRational;
use std::time::Duration;

pub fn bounds() -> Vec<Box<dyn BoundMethod>> {
    vec![
        Box::new(GraphCompute),
        Box::new(CheckmateLp::default()),
        Box::new(parts::GraphParts::default()),
        Box::new(forced::GraphForced),
    ]
}

/// Does the file compile to a DAG instance?
fn is_graph(file: &InstanceFile) -> bool {
    file.compile().is_ok_and(|i| Dag::of(&i).is_ok())
}

fn dag_of(bound: &'static str, inst: &Instance) -> Result<Dag, BoundError> {
    let dag = Dag::of(inst).map_err(|e| BoundError::Failed {
        bound,
        cause: Failure::Graph(e.to_string()),
    })?;
    if let Some(v) = (0..dag.len()).find(|&v| dag.footprint(v) > dag.capacity as u128) {
        return Err(BoundError::Infeasible {
            bound,
            reason: format!(
                "op {} needs {} B with its inputs, more than the GPU memory ({} B)",
                inst.ops[v].name,
                dag.footprint(v),
                dag.capacity
            ),
        });
    }
    Ok(dag)
}

/// `graph-compute`: Σ d(v).
pub struct GraphCompute;

impl BoundMethod for GraphCompute {
    fn name(&self) -> &'static str {
        "graph-compute"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        is_graph(file)
    }
    fn bound(&self, _file: &InstanceFile, inst: &Instance) -> Result<LowerBound, BoundError> {
        let dag = dag_of(self.name(), inst)?;
        Ok(LowerBound::from_ticks(
            dag.total_duration(),
            self.name(),
            Strength::Certified,
        ))
    }
}

/// `checkmate-lp` (module doc).
#[derive(Clone, Debug)]
pub struct CheckmateLp {
    /// T = n + ⌈n · extra_stages_percent / 100⌉.
    pub extra_stages_percent: usize,
    /// The largest program solved, in T · (n + |E|) (the FREE columns).
    pub max_size: usize,
    /// A wall-clock cut on the LP; when it stops the LP, the bound falls
    /// back to the duals' zero vector.
    pub time_limit: Duration,
}

impl Default for CheckmateLp {
    /// At most 40 000 FREE columns and 60 s: on MOCCASIN's random layered
    /// graph of 100 nodes (75 000 columns) the LP ran past 900 s, so
    /// `offcert gap` never finished there; where it runs it was never above
    /// Σd on these graphs (docs/RESULTS.md). The benchmark sets its own.
    fn default() -> CheckmateLp {
        CheckmateLp {
            extra_stages_percent: 50,
            max_size: 40_000,
            time_limit: Duration::from_secs(60),
        }
    }
}

/// The DAG as the encoding's plain data, in its topological order.
pub fn graph_of(dag: &Dag) -> Graph {
    Graph::in_order(
        Nodes {
            preds: &dag.preds,
            size: &dag.size,
            temp: &dag.temp,
            duration: &dag.duration,
            capacity: dag.capacity,
        },
        &dag.topo,
        &dag.pos,
    )
}

fn ticks(x: i64) -> BigRational {
    BigRational::from_integer(BigInt::from(x))
}

impl CheckmateLp {
    pub fn compute(&self, inst: &Instance) -> Result<LowerBound, BoundError> {
        let name = self.name();
        let failed = |cause: Failure| BoundError::Failed { bound: name, cause };
        let dag = dag_of(name, inst)?;
        if dag.movable {
            return Err(failed(Failure::Graph(
                "offloading is enabled: the program moves nothing".into(),
            )));
        }
        let n = dag.len();
        let t = n + (n * self.extra_stages_percent).div_ceil(100);
        let edges: usize = dag.preds.iter().map(Vec::len).sum();
        if t * (n + edges) > self.max_size {
            return Err(failed(Failure::Graph(format!(
                "the program would have {} FREE columns (limit {})",
                t * (n + edges),
                self.max_size
            ))));
        }
        let enc = encode(&graph_of(&dag), Stages::CoverAll(t));
        let s =
            lp::solve_rational(&enc.milp, true, self.time_limit).map_err(|e| failed(e.into()))?;
        let y = if s.status == SolveStatus::Optimal {
            s.row_duals
        } else {
            Vec::new()
        };
        let lp = certified_bound(&enc.milp, &y).map_err(|u| failed(u.into()))?;
        let d_min = dag.duration.iter().copied().min().unwrap_or(0);
        let cut = ticks(dag.total_duration() + (t as i64 + 1 - n as i64) * d_min);
        let value = std::cmp::max(ticks(dag.total_duration()), std::cmp::min(lp, cut));
        Ok(LowerBound {
            value,
            source: name.into(),
            strength: Strength::Certified,
        })
    }
}

impl BoundMethod for CheckmateLp {
    fn name(&self) -> &'static str {
        "checkmate-lp"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        is_graph(file)
    }
    fn bound(&self, _file: &InstanceFile, inst: &Instance) -> Result<LowerBound, BoundError> {
        self.compute(inst)
    }
}
