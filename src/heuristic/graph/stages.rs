//! Checkmate's stage matrices as a node sequence: the (R, S) layout of its
//! MILP with Checkmate's default stages (`FULL_SCHEDULE`: n stages, stage t
//! computes node t, nodes numbered in a topological order), and Checkmate's
//! own fix-up that derives R from S (`solve_r_opt` in
//! `checkmate/core/utils/solver_common.py`, github parasj/checkmate). The
//! baselines that choose S ([`super::lp_round`], [`super::chen_ladder`]) share
//! it.
//!
//! Positions: node k of a stage matrix is `dag.topo[k]`. A sequence is read
//! off R stage by stage, each stage in increasing k (a topological order);
//! it is realised with the tightest releases (`simulate::dag_sequence`), which
//! never hold more than Checkmate's S keeps, and the checker decides whether
//! it fits.
//!
//! Owns: [`Stages`] (a stage × node 0/1 matrix), [`r_of_s`], [`sequence`],
//! [`preds_by_pos`]. Must not import: exact solvers.

use crate::family::dag::Dag;

/// A T × n 0/1 matrix (rows: stages; columns: node positions).
pub type Stages = Vec<Vec<bool>>;

/// The predecessors of each position, as positions.
pub fn preds_by_pos(dag: &Dag) -> Vec<Vec<usize>> {
    dag.topo
        .iter()
        .map(|&v| dag.preds[v].iter().map(|&u| dag.pos[u]).collect())
        .collect()
}

/// Checkmate's `solve_r_opt`: the least recomputation R given the checkpoints
/// S (n × n): R[t,t] = 1; R[t,v] = 1 where S[t+1,v] = 1 and S[t,v] = 0; then,
/// from the last node of stage t down, every input of a computed node that is
/// not in S[t] is computed in stage t too.
pub fn r_of_s(preds: &[Vec<usize>], s: &Stages) -> Stages {
    let n = s.len();
    let mut r: Stages = (0..n).map(|t| (0..n).map(|k| k == t).collect()).collect();
    for t in 0..n.saturating_sub(1) {
        for v in 0..n {
            if s[t + 1][v] && !s[t][v] {
                r[t][v] = true;
            }
        }
    }
    for t in 0..n {
        for v in (0..=t).rev() {
            if !r[t][v] {
                continue;
            }
            for &u in &preds[v] {
                if !r[t][u] && !s[t][u] {
                    r[t][u] = true;
                }
            }
        }
    }
    r
}

/// The node sequence (original ids) of R: stage by stage, each in increasing
/// position.
pub fn sequence(dag: &Dag, r: &Stages) -> Vec<usize> {
    r.iter()
        .flat_map(|row| {
            row.iter()
                .enumerate()
                .filter(|(_, &x)| x)
                .map(|(k, _)| dag.topo[k])
        })
        .collect()
}
