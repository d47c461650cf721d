//! Checkmate's MILP as an exact method (Jain et al., MLSys 2020, §4): R (node
//! computed in a stage), S (output resident at a stage start), FREE (released
//! after a node) and U (memory), encoded once in [`crate::lp::checkmate`] with
//! each row's rule (`models/CHECKMATE.md`), solved by HiGHS with zero gap,
//! decoded to its node sequence (stage by stage, in topological order),
//! realised with the tightest releases (`simulate::dag_sequence`) and replayed
//! by the checker.
//!
//! **Exactness.** Checkmate's default stages (n stages, node t first computed
//! in stage t) fix the order of first computations and lose optima
//! (`models/CHECKMATE.md` §3). The method therefore solves Checkmate's
//! `COVER_ALL_NODES` form with T stages, each an increasing run of the
//! topological order: every schedule with at most T such runs is a solution
//! of no more memory and the same cost (§3). A schedule with more runs has
//! more than T op runs, so it costs at least Σd + (T + 1 − n)·d_min. Hence
//! min(V_T, Σd + (T + 1 − n)·d_min) is a lower bound on every schedule, and
//! V_T is the optimum when it is not above the second term; T grows from n
//! until it is (models/CHECKMATE.md §3), within the time limit.
//!
//! Scope: [`SCOPE`] (a free order); the finer limits of the graph methods
//! (`exact::graph_limits`) are refused with [`ExactError::Unsupported`].
//!
//! Owns: [`SCOPE`], [`solve`], [`solve_full_schedule`], [`graph_of`].
//! Must not import: the other methods, the door, the cross-check, bounds,
//! heuristics.

use super::graph_limits::exact_dag;
use super::scope::{Feature, Scope};
use super::{ExactError, Limits, Method, Outcome, Status};
use crate::family::dag::Dag;
use crate::lp::checkmate::{encode, Graph, Nodes, Stages};
use crate::lp::{self, MipStatus};
use crate::model::Instance;
use crate::simulate::dag_sequence::schedule_of;
use crate::units::Ticks;
use std::time::{Duration, Instant};

/// What Checkmate's MILP encodes: a free compute order, directly.
pub const SCOPE: Scope = Scope {
    encodes: &[Feature::FreeOrder],
    reductions: &[],
};

/// The largest graph encoded (the program has O(T·(n + |E|)) binaries).
pub const MAX_NODES: usize = 60;

const METHOD: Method = Method::Checkmate;

/// The DAG renumbered in its topological order (node k = `dag.topo[k]`), as
/// the plain data of the encoding.
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

/// One MIP solve: the decoded node sequence (original ids) when there is an
/// incumbent, and whether it is proven optimal / the program infeasible.
enum Solved {
    Optimal(Vec<usize>),
    Feasible(Vec<usize>),
    Infeasible,
    Unknown,
}

fn solve_stages(dag: &Dag, stages: Stages, time: Duration) -> Result<Solved, ExactError> {
    let enc = encode(&graph_of(dag), stages);
    let s = lp::solve_mip(&enc.milp, time).map_err(|source| ExactError::Lp {
        method: METHOD,
        source,
    })?;
    let seq = || -> Vec<usize> {
        let mut seq = Vec::new();
        for row in &enc.r {
            for (k, &c) in row.iter().enumerate() {
                if s.columns[c] > 0.5 {
                    seq.push(dag.topo[k]);
                }
            }
        }
        seq
    };
    Ok(match s.status {
        MipStatus::Optimal => Solved::Optimal(seq()),
        MipStatus::Feasible { .. } => Solved::Feasible(seq()),
        MipStatus::Infeasible => Solved::Infeasible,
        MipStatus::NoSolution => Solved::Unknown,
        MipStatus::Other(other) => {
            return Err(ExactError::Backend {
                method: METHOD,
                message: format!("HiGHS status {other}"),
            })
        }
    })
}

fn dag_in_scope(inst: &Instance) -> Result<Dag, ExactError> {
    SCOPE.direct(METHOD, inst)?;
    let dag = exact_dag(inst, METHOD)?;
    if dag.len() > MAX_NODES {
        return Err(ExactError::Unsupported {
            method: METHOD,
            reason: format!("{} nodes (the MILP takes at most {MAX_NODES})", dag.len()),
        });
    }
    Ok(dag)
}

/// Σd + (T + 1 − n)·d_min: the least cost of a schedule with more than T runs.
fn beyond(dag: &Dag, t: usize) -> i64 {
    let d_min = dag.duration.iter().copied().min().unwrap_or(0);
    dag.total_duration() + (t as i64 + 1 - dag.len() as i64) * d_min
}

/// The most runs a schedule cheaper than `m` can have: it has at most
/// n + ⌈(m − Σd)/d_min⌉ − 1 op runs (each beyond the n first ones costs at
/// least d_min).
fn enough(dag: &Dag, m: i64) -> usize {
    let d_min = dag.duration.iter().copied().min().unwrap_or(1).max(1);
    let extra = (m - dag.total_duration()).max(0);
    (dag.len() as i64 + (extra + d_min - 1) / d_min - 1).max(1) as usize
}

/// The exact optimum (module doc): Checkmate's `COVER_ALL_NODES` MILP with
/// T = n stages, then more, until its value is proven below every schedule
/// with more runs (after an optimum m above the cut, T jumps to the most runs
/// a schedule cheaper than m can have), or the time limit.
pub fn solve(inst: &Instance, limits: &Limits) -> Result<Outcome, ExactError> {
    let dag = dag_in_scope(inst)?;
    let start = Instant::now();
    let n = dag.len().max(1);
    let mut notes = vec![format!(
        "Checkmate's MILP (COVER_ALL_NODES), {} nodes, exact by the run-count argument of models/CHECKMATE.md §3",
        dag.len()
    )];
    let mut best: Option<(crate::check::Checked, usize)> = None;
    let mut bound: Option<Ticks> = None;
    let mut status = Status::Unknown;
    let mut t = n;
    while t <= 16 * n {
        let left = limits.time_limit.saturating_sub(start.elapsed());
        if left.is_zero() {
            break;
        }
        let solved = solve_stages(&dag, Stages::CoverAll(t), left)?;
        let cut = beyond(&dag, t);
        let mut raise = |b: i64| bound = Some(Ticks(bound.map_or(b, |x| x.0.max(b))));
        // Go on only after a proven answer at this T; a time-limited solve
        // ends the loop.
        let seq = match solved {
            Solved::Optimal(seq) => seq,
            Solved::Feasible(seq) => {
                let c = ExactError::checked(METHOD, inst, &schedule_of(inst, &dag, &seq))?;
                keep_best(&mut best, c, t);
                break;
            }
            Solved::Infeasible => {
                raise(cut);
                t *= 2;
                continue;
            }
            Solved::Unknown => break,
        };
        let c = ExactError::checked(METHOD, inst, &schedule_of(inst, &dag, &seq))?;
        let m = c.makespan().0;
        raise(m.min(cut));
        keep_best(&mut best, c, t);
        if m <= cut {
            status = Status::Optimal;
            break;
        }
        // A schedule below m has fewer than n + (m − Σd)/d_min op runs, so
        // at most `enough` runs: V_enough is the optimum (it is ≤ m).
        t = enough(&dag, m).max(t + 1);
    }
    if status != Status::Optimal && best.is_some() {
        status = Status::Feasible;
    }
    if let Some((_, t)) = &best {
        notes.push(format!("{t} stages"));
    }
    Ok(Outcome {
        method: METHOD,
        status,
        schedule: best.map(|(c, _)| c.into_schedule()),
        bound,
        elapsed: start.elapsed(),
        notes,
    })
}

fn keep_best(
    best: &mut Option<(crate::check::Checked, usize)>,
    c: crate::check::Checked,
    t: usize,
) {
    if best
        .as_ref()
        .is_none_or(|(b, _)| c.makespan() < b.makespan())
    {
        *best = Some((c, t));
    }
}

/// Checkmate's own program (`FULL_SCHEDULE`: node t first computed in stage
/// t), exactly as Checkmate restricts it: the best schedule *within those
/// stages* (checked), never an optimum over every schedule.
pub fn solve_full_schedule(inst: &Instance, limits: &Limits) -> Result<Outcome, ExactError> {
    let dag = dag_in_scope(inst)?;
    let start = Instant::now();
    let solved = solve_stages(&dag, Stages::FullSchedule, limits.time_limit)?;
    let (status, seq) = match solved {
        Solved::Optimal(seq) => (Status::Optimal, Some(seq)),
        Solved::Feasible(seq) => (Status::Feasible, Some(seq)),
        Solved::Infeasible => (Status::Infeasible, None),
        Solved::Unknown => (Status::Unknown, None),
    };
    let schedule = match seq {
        Some(seq) => {
            let c = ExactError::checked(METHOD, inst, &schedule_of(inst, &dag, &seq))?;
            Some(c.into_schedule())
        }
        None => None,
    };
    Ok(Outcome {
        method: METHOD,
        status,
        schedule,
        bound: None,
        elapsed: start.elapsed(),
        notes: vec![
            "Checkmate's FULL_SCHEDULE stages (first computations in the topological order): best within those stages, not an optimum".into(),
        ],
    })
}
