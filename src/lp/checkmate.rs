//! Checkmate's MILP (Jain et al., MLSys 2020, §4; `checkmate/core/solvers/
//! gurobi_solver.py`) over a computation graph given as plain data, as an
//! exact rational [`Milp`]: the one encoding that both the exact method
//! (`exact::checkmate`, solved as a MIP) and the certified bound
//! (`bound::graph`, its LP relaxation with safe duals) use, so that the two
//! can never describe different programs. The rows, each with the rule of
//! `models/MODEL.md` it encodes, are written out in `models/CHECKMATE.md`.
//!
//! Owns: [`Graph`], [`Nodes`], [`Stages`], [`Encoding`], [`encode`]. Must not import:
//! any other `offcert` module (the graph is plain slices, not a front-end type).

use super::rational::Milp;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Zero};

/// A DAG as plain data, its nodes numbered in a topological order: every
/// predecessor of node k is below k.
#[derive(Clone, Debug)]
pub struct Graph {
    pub preds: Vec<Vec<usize>>,
    pub size: Vec<u64>,
    pub temp: Vec<u64>,
    pub duration: Vec<i64>,
    pub capacity: u64,
}

/// The node data in the field names a DAG view uses, in any numbering.
#[derive(Clone, Copy, Debug)]
pub struct Nodes<'a> {
    pub preds: &'a [Vec<usize>],
    pub size: &'a [u64],
    pub temp: &'a [u64],
    pub duration: &'a [i64],
    pub capacity: u64,
}

impl Graph {
    /// `nodes` renumbered in the topological order `topo` (`pos` its inverse).
    pub fn in_order(nodes: Nodes<'_>, topo: &[usize], pos: &[usize]) -> Graph {
        Graph {
            preds: topo
                .iter()
                .map(|&v| nodes.preds[v].iter().map(|&u| pos[u]).collect())
                .collect(),
            size: topo.iter().map(|&v| nodes.size[v]).collect(),
            temp: topo.iter().map(|&v| nodes.temp[v]).collect(),
            duration: topo.iter().map(|&v| nodes.duration[v]).collect(),
            capacity: nodes.capacity,
        }
    }
}

/// Which schedules the stages may describe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stages {
    /// Checkmate's default (`ImposedSchedule.FULL_SCHEDULE`): n stages, stage
    /// t computes node t for the first time and may recompute nodes below t
    /// (R[t,t] = 1, R[t,i>t] = 0, S[t,i≥t] = 0).
    FullSchedule,
    /// Checkmate's `ImposedSchedule.COVER_ALL_NODES` with this many stages:
    /// each stage an increasing run of nodes, every node at least once.
    CoverAll(usize),
}

/// The program and where its columns are.
#[derive(Clone, Debug)]
pub struct Encoding {
    pub milp: Milp,
    /// `r[t][k]`: the column of R[t,k] (node k computed in stage t).
    pub r: Vec<Vec<usize>>,
    /// `s[t][k]`: the column of S[t,k] (node k's output resident at the
    /// start of stage t).
    pub s: Vec<Vec<usize>>,
    /// The divisor of every size and of the capacity (rounded down).
    pub ram_gcd: u64,
}

fn q(x: i64) -> BigRational {
    BigRational::from_integer(BigInt::from(x))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Build the program (see `models/CHECKMATE.md` for each row's rule).
pub fn encode(g: &Graph, stages: Stages) -> Encoding {
    let n = g.size.len();
    let t_count = match stages {
        Stages::FullSchedule => n,
        Stages::CoverAll(t) => t.max(1),
    };
    let ram_gcd = g
        .size
        .iter()
        .chain(&g.temp)
        .fold(0, |a, &b| gcd(a, b))
        .max(1);
    let ram: Vec<i64> = g.size.iter().map(|s| (s / ram_gcd) as i64).collect();
    let tmp: Vec<i64> = g.temp.iter().map(|s| (s / ram_gcd) as i64).collect();
    let cap = q((g.capacity / ram_gcd) as i64);
    let mut succs = vec![Vec::new(); n];
    for (v, ps) in g.preds.iter().enumerate() {
        for &u in ps {
            succs[u].push(v);
        }
    }
    let mut m = Milp::default();
    let (zero, one) = (BigRational::zero(), BigRational::one());
    let bin = |m: &mut Milp, cost: i64, fixed: Option<i64>| {
        let (lo, hi) = match fixed {
            Some(v) => (q(v), q(v)),
            None => (zero.clone(), one.clone()),
        };
        m.col(q(cost), lo, Some(hi), true)
    };
    let mut r = vec![vec![0; n]; t_count];
    let mut s = vec![vec![0; n]; t_count];
    for t in 0..t_count {
        for k in 0..n {
            let (rf, sf) = match stages {
                Stages::FullSchedule => (
                    (k > t).then_some(0).or((k == t).then_some(1)),
                    (k >= t).then_some(0),
                ),
                Stages::CoverAll(_) => (None, (t == 0).then_some(0)),
            };
            r[t][k] = bin(&mut m, g.duration[k], rf);
            s[t][k] = bin(&mut m, 0, sf);
        }
    }
    for t in 0..t_count {
        for k in 0..n {
            // R1: an op does not produce a tensor whose copy still exists.
            m.row(
                vec![(r[t][k], one.clone()), (s[t][k], one.clone())],
                None,
                Some(one.clone()),
            );
            // R1/R6: a copy is resident at a stage start only if it was at the
            // previous one or was produced in it.
            if t + 1 < t_count {
                m.row(
                    vec![
                        (s[t + 1][k], one.clone()),
                        (s[t][k], -one.clone()),
                        (r[t][k], -one.clone()),
                    ],
                    None,
                    Some(zero.clone()),
                );
            }
            // R1: every input present when the op starts.
            for &u in &g.preds[k] {
                m.row(
                    vec![
                        (r[t][k], one.clone()),
                        (r[t][u], -one.clone()),
                        (s[t][u], -one.clone()),
                    ],
                    None,
                    Some(zero.clone()),
                );
            }
        }
    }
    if let Stages::CoverAll(_) = stages {
        // R8: every required op runs.
        for k in 0..n {
            let coefs = (0..t_count).map(|t| (r[t][k], one.clone())).collect();
            m.row(coefs, Some(one.clone()), None);
        }
        used_stages_first(&mut m, &r);
    }
    memory_rows(&mut m, g, &succs, (&r, &s), (&ram, &tmp), &cap);
    Encoding {
        milp: m,
        r,
        s,
        ram_gcd,
    }
}

/// Symmetry cut (no rule): y_t = 1 iff stage t computes something, and the
/// used stages come first (y_{t+1} ≤ y_t). An empty stage between two runs
/// changes nothing (S[t+1] ≤ S[t]), so moving it to the end keeps every
/// schedule (models/CHECKMATE.md §3).
fn used_stages_first(m: &mut Milp, r: &[Vec<usize>]) {
    let one = BigRational::one();
    let mut prev: Option<usize> = None;
    for row in r {
        let y = m.col(q(0), q(0), Some(one.clone()), true);
        for &c in row {
            m.row(vec![(c, one.clone()), (y, -one.clone())], None, Some(q(0)));
        }
        let mut any: Vec<(usize, BigRational)> = row.iter().map(|&c| (c, -one.clone())).collect();
        any.push((y, one.clone()));
        m.row(any, None, Some(q(0)));
        if let Some(p) = prev {
            m.row(vec![(y, one.clone()), (p, -one.clone())], None, Some(q(0)));
        }
        prev = Some(y);
    }
}

/// FREE, U and the memory rows (R7, with the releases of R6/R10).
fn memory_rows(
    m: &mut Milp,
    g: &Graph,
    succs: &[Vec<usize>],
    (r, s): (&[Vec<usize>], &[Vec<usize>]),
    (ram, tmp): (&[i64], &[i64]),
    cap: &BigRational,
) {
    let n = g.size.len();
    let t_count = r.len();
    let one = BigRational::one();
    for t in 0..t_count {
        // free[k]: the (i, column) pairs released after node k in stage t.
        let mut free: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
        for i in 0..n {
            for &k in succs[i].iter().chain(std::iter::once(&i)) {
                let f = m.col(q(0), q(0), Some(one.clone()), true);
                free[k].push((i, f));
                // hazards h = 1 − R[t,k] + S[t+1,i] + Σ_{j ∈ succ(i), j > k} R[t,j]:
                // i is released after k iff k ran, i is not kept into the next
                // stage, and no later reader of i runs in this stage (R6, R10).
                let later: Vec<usize> = succs[i].iter().copied().filter(|&j| j > k).collect();
                let mut h: Vec<(usize, BigRational)> = vec![(r[t][k], -one.clone())];
                if t + 1 < t_count {
                    h.push((s[t + 1][i], one.clone()));
                }
                h.extend(later.iter().map(|&j| (r[t][j], one.clone())));
                let max_h = h.len() as i64; // 1 + the terms that can be 1 (R[t,k] counts as its "1 −")
                                            // 1 − F ≤ h  ⇔  −F − h_vars ≤ 0 with h_vars = h − 1.
                let mut up: Vec<(usize, BigRational)> = vec![(f, -one.clone())];
                up.extend(h.iter().map(|(c, a)| (*c, -a.clone())));
                m.row(up, None, Some(q(0)));
                // max_h (1 − F) ≥ h  ⇔  −max_h F − h_vars ≥ 1 − max_h.
                let mut down: Vec<(usize, BigRational)> = vec![(f, q(-max_h))];
                down.extend(h.iter().map(|(c, a)| (*c, -a.clone())));
                m.row(down, Some(q(1 - max_h)), None);
            }
        }
        // U[t,k]: memory while node k runs in stage t (its output included).
        let mut prev: Option<usize> = None;
        for k in 0..n {
            let u = m.col(q(0), q(0), Some(cap.clone()), false);
            let mut coefs = vec![(u, one.clone()), (r[t][k], q(-ram[k]))];
            match prev {
                None => coefs.extend((0..n).map(|i| (s[t][i], q(-ram[i])))),
                Some(p) => {
                    coefs.push((p, -one.clone()));
                    coefs.extend(free[k - 1].iter().map(|&(i, f)| (f, q(ram[i]))));
                }
            }
            coefs.retain(|(_, a)| !a.is_zero());
            m.row(coefs, Some(q(0)), Some(q(0)));
            if tmp[k] > 0 {
                // R7 with the op's scratch.
                m.row(
                    vec![(u, one.clone()), (r[t][k], q(tmp[k]))],
                    None,
                    Some(cap.clone()),
                );
            }
            prev = Some(u);
        }
    }
}
