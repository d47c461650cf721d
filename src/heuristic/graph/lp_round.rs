//! `checkmate-lp-round`: Checkmate's approximation by rounding the LP
//! relaxation of its MILP (`checkmate/core/solvers/strategy_approx_lp.py`,
//! github parasj/checkmate: `solve_approx_lp_deterministic_sweep`, strategy
//! `APPROX_DET_ROUND_LP_SWEEP`, and `solve_approx_lp_randomized`,
//! `APPROX_RANDOMIZED_ROUND`).
//!
//! As Checkmate does it: the LP relaxation of (R, S, FREE, U) with its
//! default stages (`FULL_SCHEDULE`) at ⌊0.9 × B⌋ ("hack to get values under
//! the budget"), built by the one encoding `lp::checkmate` (the program that
//! `checkmate-lp` relaxes and the exact method solves) and solved by HiGHS;
//! S is rounded, by the thresholds 0.1, 0.2, …, 0.9 and by
//! [`LpRound::rounds`] randomized roundings (S[t,i] = 1 with probability
//! S*[t,i], a fixed seed); each rounding is fixed up by Checkmate's
//! `solve_r_opt` ([`super::stages::r_of_s`]) and read off as a sequence; the
//! cheapest whose realised peak fits B wins and goes through the checker.
//!
//! Differences from Checkmate, all stated: no 1 % cost noise (`eps_noise`;
//! the LP is solved on the true costs); where the LP is infeasible at
//! ⌊0.9 B⌋ it is solved again at B (Checkmate then reports infeasible); the
//! LP is refused above [`LpRound::max_size`] FREE columns and stopped at
//! [`LpRound::time_limit`], as the report caps `checkmate-lp`. When nothing
//! fits: `no schedule`, with the reason (the LP's status, or the least peak
//! of the roundings).
//!
//! Owns: [`LpRound`]. Must not import: exact solvers.

use super::stages::{preds_by_pos, r_of_s, sequence, Stages};
use super::{dag_of, is_graph, realise};
use crate::family::dag::Dag;
use crate::family::InstanceFile;
use crate::heuristic::{Heuristic, HeuristicError};
use crate::lp::checkmate::{encode, Graph, Nodes, Stages as LpStages};
use crate::lp::{self, SolveStatus};
use crate::model::Instance;
use crate::schedule::Schedule;
use crate::simulate::dag_sequence::peak_of;
use std::time::Duration;

/// `checkmate-lp-round` (module doc).
#[derive(Clone, Debug)]
pub struct LpRound {
    /// The largest LP solved, in n · (n + |E|) (its FREE columns).
    pub max_size: usize,
    /// A wall-clock cut on the LP.
    pub time_limit: Duration,
    /// Randomized roundings (Checkmate's `num_rounds` is 100).
    pub rounds: usize,
}

impl Default for LpRound {
    /// The report's cap on `checkmate-lp` (40 000 FREE columns, 60 s) and
    /// Checkmate's 100 randomized roundings.
    fn default() -> LpRound {
        LpRound {
            max_size: 40_000,
            time_limit: Duration::from_secs(60),
            rounds: 100,
        }
    }
}

const NAME: &str = "checkmate-lp-round";

fn no_schedule(reason: String) -> HeuristicError {
    HeuristicError::NoSchedule {
        heuristic: NAME,
        reason,
    }
}

/// splitmix64: a fixed, dependency-free stream for the randomized rounding.
fn next_unit(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

impl LpRound {
    /// S* of the LP relaxation at `capacity` (None: infeasible), or why none.
    fn relaxed_s(&self, dag: &Dag, capacity: u64) -> Result<Option<Vec<Vec<f64>>>, String> {
        let g = Graph::in_order(
            Nodes {
                preds: &dag.preds,
                size: &dag.size,
                temp: &dag.temp,
                duration: &dag.duration,
                capacity,
            },
            &dag.topo,
            &dag.pos,
        );
        let enc = encode(&g, LpStages::FullSchedule);
        let s = lp::solve_rational(&enc.milp, true, self.time_limit).map_err(|e| e.to_string())?;
        match s.status {
            SolveStatus::Optimal if !s.columns.is_empty() => Ok(Some(
                enc.s
                    .iter()
                    .map(|row| row.iter().map(|&c| s.columns[c]).collect())
                    .collect(),
            )),
            SolveStatus::Infeasible => Ok(None),
            SolveStatus::ReachedTimeLimit => Err(format!(
                "the LP stopped at its time limit ({} s)",
                self.time_limit.as_secs_f64()
            )),
            other => Err(format!("the LP ended with status {other:?}")),
        }
    }

    /// The roundings of S*: the threshold sweep, then the randomized ones.
    fn roundings(&self, s: &[Vec<f64>]) -> Vec<Stages> {
        let by = |keep: &mut dyn FnMut(f64) -> bool| -> Stages {
            s.iter()
                .map(|row| row.iter().map(|&x| keep(x)).collect())
                .collect()
        };
        let mut out: Vec<Stages> = (1..=9).map(|k| by(&mut |x| x >= k as f64 / 10.0)).collect();
        let mut seed = 0x0FFC_E27u64;
        for _ in 0..self.rounds {
            out.push(by(&mut |x| next_unit(&mut seed) <= x));
        }
        out
    }
}

impl Heuristic for LpRound {
    fn name(&self) -> &'static str {
        NAME
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        is_graph(file)
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let dag = dag_of(NAME, file, inst)?;
        let n = dag.len();
        let edges: usize = dag.preds.iter().map(Vec::len).sum();
        if n * (n + edges) > self.max_size {
            return Err(no_schedule(format!(
                "the LP would have {} FREE columns (limit {})",
                n * (n + edges),
                self.max_size
            )));
        }
        let tight = dag.capacity / 10 * 9 + dag.capacity % 10 * 9 / 10;
        let s = match self.relaxed_s(&dag, tight).map_err(no_schedule)? {
            Some(s) => s,
            None => self
                .relaxed_s(&dag, dag.capacity)
                .map_err(no_schedule)?
                .ok_or_else(|| no_schedule("the LP relaxation is infeasible at B".into()))?,
        };
        let preds = preds_by_pos(&dag);
        let mut best: Option<(i64, Vec<usize>)> = None;
        let mut least_peak: Option<u128> = None;
        for rounded in self.roundings(&s) {
            let seq = sequence(&dag, &r_of_s(&preds, &rounded));
            let Some(peak) = peak_of(&dag, &seq) else {
                continue;
            };
            least_peak = Some(least_peak.map_or(peak, |p| p.min(peak)));
            if peak > dag.capacity as u128 {
                continue;
            }
            let cost: i64 = seq.iter().map(|&v| dag.duration[v]).sum();
            if best.as_ref().is_none_or(|(c, _)| cost < *c) {
                best = Some((cost, seq));
            }
        }
        match best {
            Some((_, seq)) => realise(NAME, inst, &dag, &seq),
            None => Err(no_schedule(format!(
                "no rounding fits: the least realised peak is {} B, over the GPU memory ({} B)",
                least_peak.unwrap_or(0),
                dag.capacity
            ))),
        }
    }
}
