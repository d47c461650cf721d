//! A node sequence of a `graph` instance (repeats = recomputations) as the
//! plan offcert runs: the ops in order and, after each, the releases of the
//! graph tools' rule ([`Graph::releases`]: each copy goes at the end of its
//! last reader before the node's next computation, or at the end of its own
//! run when nothing reads it). Realise it with
//! [`super::chain_sequence::back_to_back`] (one stream, nothing moved: what
//! Checkmate's and MOCCASIN's executors run) or [`super::asap_sequence`].
//!
//! Owns: [`plan_of`], [`plan_with`]. Must not import: the checker, solvers, heuristics.

use super::SeqPlan;
use crate::family::graph::Graph;

/// The plan of node sequence `seq` on graph `g`: op `v` for node `v`, each
/// copy released per [`Graph::releases`]; no offloads.
pub fn plan_of(g: &Graph, seq: &[usize]) -> SeqPlan {
    plan_with(g, seq, &g.releases(seq))
}

/// The plan of node sequence `seq` with the given releases `(position, node)`
/// (a decoded answer's: `family::graph_solution::Decoded`); no offloads.
pub fn plan_with(g: &Graph, seq: &[usize], releases: &[(usize, usize)]) -> SeqPlan {
    SeqPlan {
        seq: seq.iter().map(|&v| g.op_id(v)).collect(),
        deletes_after: releases.iter().map(|&(p, v)| (p, g.tensor_id(v))).collect(),
        offloads: vec![],
        lookahead: None,
    }
}
