//! DYNPROG (activation paper §5.3, Algorithm 1, with the discretisation of
//! §5.3.2): a dynamic program over layers finds the offload set minimising the
//! idle time of the ordered, no-wait schedule in the relaxation where transfers
//! may be interrupted (and release memory as they go); the schedule reported is
//! the simulator's whole-transfer realisation of that set.
//!
//! State after layer i−1 (all quantities in memory *slots*, time in the time one
//! slot takes over the link, so β = 1):
//! - `n`  = M_{F_i} − Δ⁺_{F_i}: memory that is never offloaded, plus x_i;
//! - `df` = Δ_{F_i}: offload work pending at the end of F_{i−1} (negative: link
//!   idle for that long);
//! - `db` = Δ_{B_i}: prefetch work that must happen before B_{i−1} starts, seen
//!   backwards from the end (negative: link idle);
//!
//! and M_{F_i} = n + df⁺, M_{B_i} = |y_i| + n + db⁺ (Algorithm 1). The
//! transitions are equations (1)–(8) and the gap between the phases is (9)/(10),
//! with two corrections of evident typos: (6) uses ex^B_i (the text has ex^F_i),
//! and R^B_j = ex^B_j + |y_j| + |y_{j+1}| − Σ_{i>j+1}|x_i| (the memory of B_j,
//! §3.2; the text has |y_{j−1}|). The validity test of Algorithm 1 uses Δ⁺.
//!
//! Discretisation (§5.3.2): S slots of M_GPU/S bytes; ex, |y| rounded up; the
//! partial sums of u_F β and u_B β rounded down; the partial sums of |x| rounded
//! up (optimistic), and while the simulator finds the chosen set infeasible, the
//! rounded |x_i| that is below, but closest to, its true value is increased by
//! one slot and the program is run again.
//!
//! Owns: DYNPROG.
//! Must not import: exact solvers, traces, reports, the CLI.

use super::{candidates, no_schedule, simulate_plan, ChainHeuristic};
use crate::family::ActivationChain;
use crate::heuristic::HeuristicError;
use crate::model::Instance;
use crate::schedule::Schedule;
use crate::simulate::SimError;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

pub const NAME: &str = "dynprog";

/// DYNPROG with `slots` memory slots (the paper's S; 500 by default).
pub struct DynProg {
    pub slots: u32,
}

impl Default for DynProg {
    fn default() -> DynProg {
        DynProg { slots: 500 }
    }
}

/// The discretised chain: every size in slots, every time × β in slots.
#[derive(Clone, Debug)]
pub struct Discrete {
    pub s: i64,
    /// |x̃_i| for i = 0..=L+1.
    pub x: Vec<i64>,
    pub y: Vec<i64>,
    pub ex_f: Vec<i64>,
    pub ex_b: Vec<i64>,
    pub uf: Vec<i64>,
    pub ub: Vec<i64>,
}

fn ceil_div(a: u128, b: u128) -> u128 {
    a.div_ceil(b)
}

fn sat(v: u128) -> i64 {
    v.min(i64::MAX as u128 / 4) as i64
}

impl Discrete {
    /// Rounded as in §5.3.2, plus `bump[i]` slots on |x̃_i|.
    pub fn new(c: &ActivationChain, slots: u32, bump: &[i64]) -> Discrete {
        let s = slots as u128;
        let cap = c.gpu_memory.max(1) as u128;
        let n = c.layers.len();
        let up = |v: u64| sat(ceil_div(v as u128 * s, cap));
        let mut x = Vec::with_capacity(n + 2);
        let mut prefix: u128 = 0;
        let mut prev = 0i64;
        for i in 0..=n {
            prefix += c.x_size(i) as u128;
            let cur = sat(ceil_div(prefix * s, cap));
            x.push(cur - prev + bump.get(i).copied().unwrap_or(0));
            prev = cur;
        }
        let bw = c.bandwidth.to_bandwidth();
        // Σ u β in slots = Σu · bytes · S / (ticks · cap), rounded down.
        let partial = |u: &mut dyn Iterator<Item = i64>| -> Vec<i64> {
            let mut out = Vec::with_capacity(n);
            let mut sum: u128 = 0;
            let mut prev = 0i64;
            for d in u {
                sum += d.max(0) as u128;
                let v = sum.saturating_mul(bw.bytes as u128).saturating_mul(s)
                    / (bw.ticks as u128 * cap);
                let cur = sat(v);
                out.push(cur - prev);
                prev = cur;
            }
            out
        };
        let uf = partial(&mut c.layers.iter().map(|l| l.u_f));
        // Backward partial sums in execution order (B_L first), stored by layer.
        let mut ub_exec = partial(&mut c.layers.iter().rev().map(|l| l.u_b));
        ub_exec.reverse();
        Discrete {
            s: slots as i64,
            x,
            y: (0..=n).map(|i| up(c.y_size(i))).collect(),
            ex_f: c.layers.iter().map(|l| up(l.ex_f)).collect(),
            ex_b: c.layers.iter().map(|l| up(l.ex_b)).collect(),
            uf,
            ub: ub_exec,
        }
    }
}

#[derive(Default)]
struct Fx(u64);
impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64)
    }
}
type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

#[derive(Clone, Copy)]
struct Node {
    n: i64,
    df: i64,
    db: i64,
    idle: i64,
    parent: u32,
    offload: bool,
}

/// What the program found: the offload set and its (discretised) idle time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub offload: Vec<usize>,
    /// Total idle time in slot-transfer units.
    pub idle: i64,
    /// Number of states stored over all layers.
    pub states: usize,
}

/// Algorithm 1 on a discretised chain; `allowed[i]`: may x_i be offloaded.
/// `None` when no schedule of the relaxation fits.
pub fn solve(d: &Discrete, allowed: &[bool]) -> Option<Decision> {
    let n_layers = d.ex_f.len();
    let sum_x: i64 = d.x.iter().sum();
    let y_max = d.y.iter().copied().max().unwrap_or(0);
    let ex_max = d.ex_f.iter().chain(&d.ex_b).copied().max().unwrap_or(0);
    // Negative Δ (idle link) only matters in ε_G, and only up to this much.
    let clamp = -(2 * sum_x + 2 * y_max + ex_max + d.s + 2);
    let mut layers: Vec<Vec<Node>> = Vec::with_capacity(n_layers + 1);
    layers.push(vec![Node {
        n: d.x[0],
        df: 0,
        db: 0,
        idle: 0,
        parent: u32::MAX,
        offload: false,
    }]);
    let mut total_states = 1usize;
    for i in 0..n_layers {
        let may_offload = allowed.get(i).copied().unwrap_or(false);
        let next = prune(transitions(d, i, &layers[i], may_offload, clamp));
        total_states += next.len();
        if next.is_empty() {
            return None;
        }
        layers.push(next);
    }
    let (idle, k) = best_final(d, layers.last().unwrap())?;
    Some(Decision {
        offload: backtrack(&layers, k),
        idle,
        states: total_states,
    })
}

/// The states after layer `i` reached from `prev` (equations (2)–(8)), one per
/// key (n, df, db) with the least idle time; Δ below `clamp` is cut to it.
fn transitions(d: &Discrete, i: usize, prev: &[Node], may_offload: bool, clamp: i64) -> Vec<Node> {
    let s = d.s;
    let l = d.ex_f.len() - 1;
    let x_next = d.x[i + 1];
    let y_out = if i == l { d.y[i + 1] } else { 0 };
    let f_fixed = d.ex_f[i] + x_next + y_out;
    let b_fixed = d.ex_b[i] + x_next + d.y[i + 1];
    let mut map: FxMap<(i64, i64, i64), u32> = FxMap::default();
    let mut next: Vec<Node> = Vec::new();
    for (pi, st) in prev.iter().enumerate() {
        // Validity (Algorithm 1, with Δ⁺): the op fits once all pending
        // offloads are done / before any pending prefetch.
        if st.n + f_fixed > s || d.y[i] + st.n + b_fixed > s {
            continue;
        }
        let mf = st.n + st.df.max(0);
        let mb = d.y[i] + st.n + st.db.max(0);
        let ef = (mf + f_fixed - s).max(0);
        let eb = (mb + b_fixed - s).max(0);
        let idle = st.idle + ef + eb;
        let spent_f = ef + d.uf[i];
        let spent_b = eb + d.ub[i];
        let mut push = |n: i64, df: i64, db: i64, offload: bool| {
            let key = (n, df.max(clamp), db.max(clamp));
            let node = Node {
                n,
                df: key.1,
                db: key.2,
                idle,
                parent: pi as u32,
                offload,
            };
            match map.get(&key) {
                Some(&k) => {
                    if idle < next[k as usize].idle {
                        next[k as usize] = node;
                    }
                }
                None => {
                    map.insert(key, next.len() as u32);
                    next.push(node);
                }
            }
        };
        // x_i kept (equations (4), (5), (8)).
        push(st.n + x_next, st.df - spent_f, st.db - spent_b, false);
        // x_i offloaded (equations (2), (3), (7)).
        if may_offload {
            push(
                st.n + x_next - d.x[i],
                st.df.max(0) + d.x[i] - spent_f,
                d.x[i] + (st.db - spent_b).max(0),
                true,
            );
        }
    }
    next
}

/// The final state of least total idle time (its own plus ε_G) and that time.
///
/// ε_G, equations (9) and (10), in one formula:
///   ε_G = max(0, Δ_F + Δ_B,
///             [Δ_F > 0] max_j (R^B_j + n + Δ_F − S − U^B_j),
///             [Δ_B > 0] max_j (R^F_j + |y_{L+1}| + n + Δ_B − S − U^F_j))
/// with U^B_j = Σ_{i=j+1..L} ub_i (U^F_j likewise), R^B_j = ex^B_j + y_j +
/// y_{j+1} − Σ_{i>j+1} x_i, R^F_j = ex^F_j − Σ_{i>j+1} x_i. The paper takes the
/// max over the ops that run before the first prefetch (U_j < Av) only; we take
/// it over all j: a pending offload constrains every op until it completes, the
/// extra terms never bind once it has (validity gives R_j + n ≤ S), and the
/// formula becomes monotone in Δ_F and Δ_B, which the pruning relies on.
/// In the four cases of the text it gives: 0; (9); (10); Δ_F + Δ_B.
fn best_final(d: &Discrete, last: &[Node]) -> Option<(i64, usize)> {
    let s = d.s;
    let n_layers = d.ex_f.len();
    let mut suffix_x = vec![0i64; n_layers + 2]; // Σ_{i≥k} x_i
    for k in (0..=n_layers).rev() {
        suffix_x[k] = suffix_x[k + 1] + d.x[k];
    }
    let (mut ub_u, mut uf_u) = (0i64, 0i64);
    let (mut gb, mut gf) = (i64::MIN / 4, i64::MIN / 4);
    for j in (0..n_layers).rev() {
        let rb = d.ex_b[j] + d.y[j] + d.y[j + 1] - suffix_x[j + 2];
        let rf = d.ex_f[j] - suffix_x[j + 2];
        gb = gb.max(rb - ub_u);
        gf = gf.max(rf - uf_u);
        ub_u += d.ub[j];
        uf_u += d.uf[j];
    }
    let y_last = d.y[n_layers];
    let mut best: Option<(i64, usize)> = None;
    for (k, st) in last.iter().enumerate() {
        let mut eg = (st.df + st.db).max(0);
        if st.df > 0 {
            eg = eg.max(gb + st.n + st.df - s);
        }
        if st.db > 0 {
            eg = eg.max(gf + y_last + st.n + st.db - s);
        }
        let total = st.idle + eg;
        // Ties: offload the least (largest n), as Lemma 2 suggests; every
        // offload is a whole transfer, and a prefetch, in the real schedule.
        if best.is_none_or(|(b, bk)| (total, -st.n) < (b, -last[bk].n)) {
            best = Some((total, k));
        }
    }
    best
}

/// The offloaded layers on the path to final state `k`, in increasing order.
fn backtrack(layers: &[Vec<Node>], mut k: usize) -> Vec<usize> {
    let mut offload = Vec::new();
    for i in (1..layers.len()).rev() {
        let node = layers[i][k];
        if node.offload {
            offload.push(i - 1);
        }
        k = node.parent as usize;
    }
    offload.reverse();
    offload
}

/// Drop dominated states: with the same `n`, a state with `df`, `db` and idle
/// all ≤ another's is at least as good in every continuation (the transitions
/// and ε_G are monotone in Δ_F and Δ_B), so only the Pareto front is kept.
fn prune(mut v: Vec<Node>) -> Vec<Node> {
    if v.len() < 2 {
        return v;
    }
    v.sort_unstable_by_key(|s| (s.n, s.df, s.db, s.idle));
    let mut out = Vec::with_capacity(v.len());
    let mut start = 0;
    while start < v.len() {
        let mut end = start + 1;
        while end < v.len() && v[end].n == v[start].n {
            end += 1;
        }
        let group = &v[start..end];
        // Sweep by df ascending; a Fenwick tree over the ranks of db answers
        // "least idle among kept states with db' ≤ db".
        let mut dbs: Vec<i64> = group.iter().map(|s| s.db).collect();
        dbs.sort_unstable();
        dbs.dedup();
        let mut fen = vec![i64::MAX; dbs.len() + 1];
        for st in group {
            let r = dbs.partition_point(|&x| x < st.db) + 1;
            let mut q = r;
            let mut least = i64::MAX;
            while q > 0 {
                least = least.min(fen[q]);
                q &= q - 1;
            }
            if st.idle < least {
                out.push(*st);
                let mut q = r;
                while q < fen.len() {
                    fen[q] = fen[q].min(st.idle);
                    q += q & q.wrapping_neg();
                }
            }
        }
        start = end;
    }
    out
}

/// DYNPROG's offload set and schedule, with the iterative rounding of |x_i|.
pub fn dynprog(
    c: &ActivationChain,
    inst: &Instance,
    slots: u32,
) -> Result<(Decision, Schedule), HeuristicError> {
    let n = c.layers.len();
    let mut allowed = vec![false; n + 1];
    for i in candidates(c) {
        allowed[i] = true;
    }
    let cap = c.gpu_memory.max(1) as u128;
    let s = slots as u128;
    let mut bump = vec![0i64; n + 2];
    let mut last_err: Option<SimError> = None;
    for _round in 0..=n + 1 {
        let d = Discrete::new(c, slots, &bump);
        let Some(dec) = solve(&d, &allowed) else {
            break;
        };
        match simulate_plan(c, inst, &dec.offload, None) {
            Ok(sched) => return Ok((dec, sched)),
            Err(e) => last_err = Some(e),
        }
        // Raise the rounded |x̃_i| that is below, but closest to, |x_i|:
        // gap_i = |x_i|·S − x̃_i·M_GPU > 0, least first.
        let pick = (0..=n)
            .filter_map(|i| {
                let real = c.x_size(i) as u128 * s;
                let disc = d.x[i].max(0) as u128 * cap;
                (disc < real).then(|| (real - disc, i))
            })
            .min();
        match pick {
            Some((_, i)) => bump[i] += 1,
            None => break,
        }
    }
    Err(match last_err {
        Some(e) => no_schedule(NAME, e),
        None => HeuristicError::NoSchedule {
            heuristic: NAME,
            reason: format!("no offload set fits in {} slots", slots),
        },
    })
}

impl ChainHeuristic for DynProg {
    const NAME: &'static str = NAME;
    fn schedule_chain(
        &self,
        c: &ActivationChain,
        inst: &Instance,
    ) -> Result<Schedule, HeuristicError> {
        dynprog(c, inst, self.slots).map(|(_, s)| s)
    }
}
