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
//! Four additions of ours (issue 14, and the fourth from a property's case), none of which changes what a schedule
//! is: every schedule is the simulator's and passes the checker.
//! - Where rounding up makes an op's *least* need (everything before it
//!   offloaded) exceed S although its true least need fits, that op is tested
//!   against its rounded least need instead of S ([`Discrete::rooms`]). Without
//!   this a budget at (or within a few slots of) the least feasible memory is
//!   "no schedule" on every grid, since the rounded-up terms of the tight op
//!   add up to more than S unless each is a whole number of slots.
//! - When one grid ends without a schedule, the grid is refined (2S, then 4S:
//!   [`REFINEMENTS`]).
//! - Where no grid's choice realises (the relaxation, whose transfers may be
//!   interrupted, can prefer a set whose whole transfers stick, and raising
//!   the rounded sizes need not change its choice), the set of every
//!   candidate, which is in the program's space, is realised last. So DYNPROG
//!   has a schedule wherever offload-all has one (regression:
//!   `activation_properties::dynprog_falls_back_to_every_candidate`; before,
//!   S = 9 and S = 50 ended "stuck" on a 4-layer chain at its least memory).
//! - Sets of equal discretised idle time are indistinguishable to the
//!   relaxation, whose transfers may be interrupted and free memory as they go;
//!   their whole-transfer realisations are not. The program returns up to
//!   [`MAX_TIES`] tied sets and the one whose realisation ends first is kept
//!   (the paper leaves ties open; before, the set offloading the fewest bytes
//!   was taken: on DenseNet-121 at 60 % memory {x₀, x₁, x₆}, whose whole
//!   prefetch of x₆ (77 MB) cannot reserve its memory until late in the
//!   backward phase, so B₆ waits 6318 ticks for it: 130658 ticks against
//!   GREEDY's 125135, although the relaxation gives both sets idle time 0).
//!
//! Owns: DYNPROG.
//! Must not import: exact solvers, traces, reports, the CLI.

use super::{candidates, no_schedule, simulate_plan, ChainHeuristic};
use crate::bound::activation::ChainProfile;
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
    /// The capacity, in slots, that F_i / B_i are tested against: S, or more
    /// where rounding up made the op's least need exceed S although its true
    /// least need fits ([`Discrete::new`]).
    pub room_f: Vec<i64>,
    pub room_b: Vec<i64>,
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
            x.push(cur - prev);
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
        let mut d = Discrete {
            s: slots as i64,
            x,
            y: (0..=n).map(|i| up(c.y_size(i))).collect(),
            ex_f: c.layers.iter().map(|l| up(l.ex_f)).collect(),
            ex_b: c.layers.iter().map(|l| up(l.ex_b)).collect(),
            uf,
            ub: ub_exec,
            room_f: Vec::new(),
            room_b: Vec::new(),
        };
        for (i, b) in bump.iter().enumerate().take(d.x.len()) {
            d.x[i] += b;
        }
        (d.room_f, d.room_b) = d.rooms(c);
        d
    }

    /// Adaptive rounding where the grid fails. Op p's least need (everything
    /// before it offloaded) is ex_p + |x_i| + |x_{i+1}| (+ the y's of B_i, and
    /// y_{L+1} for F_L); rounded up term by term it may exceed S by up to one
    /// slot per term even when the true least need fits in M_GPU (at the least
    /// feasible memory it always does, unless every term is a whole number of
    /// slots, and no finer grid changes that). There, and only there, the op's
    /// capacity is raised by that excess, so a feasible budget never becomes
    /// "no schedule" for rounding's sake. The test is then optimistic at that
    /// op by less than one slot per term; the simulator and the checker settle
    /// it, as they settle the optimistic rounding of |x|. Computed after the
    /// bumps of |x̃|: a bump corrects the cost of *keeping* x_i, and must not
    /// make the op that reads x_i impossible.
    fn rooms(&self, c: &ActivationChain) -> (Vec<i64>, Vec<i64>) {
        let prof = ChainProfile::new(c);
        let cap = c.gpu_memory as u128;
        let l = self.ex_f.len();
        let least = |p: usize| prof.need[p] - prof.offloadable[p];
        let room = |disc: i64, p: usize| {
            if least(p) <= cap {
                disc.max(self.s)
            } else {
                self.s
            }
        };
        let mut room_f = Vec::with_capacity(l);
        let mut room_b = Vec::with_capacity(l);
        for i in 0..l {
            let y_out = if i + 1 == l { self.y[i + 1] } else { 0 };
            let f = self.x[i] + self.ex_f[i] + self.x[i + 1] + y_out;
            let b = self.y[i] + self.x[i] + self.ex_b[i] + self.x[i + 1] + self.y[i + 1];
            // Op order in ChainProfile: F_0..F_{L}, then B_{L}..B_0.
            room_f.push(room(f, i));
            room_b.push(room(b, 2 * l - 1 - i));
        }
        (room_f, room_b)
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

/// How many tied offload sets [`solve`] returns besides its first.
pub const MAX_TIES: usize = 32;

/// What the program found: the offload set and its (discretised) idle time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub offload: Vec<usize>,
    /// Other offload sets of the same discretised idle time (at most
    /// [`MAX_TIES`]), best-ranked first: the relaxation cannot tell them from
    /// `offload`, their whole-transfer realisations may differ.
    pub ties: Vec<Vec<usize>>,
    /// Total idle time in slot-transfer units; `None` for the set of every
    /// candidate realised as the last resort (addition 4), which no program
    /// run chose.
    pub idle: Option<i64>,
    /// Number of states stored over all layers.
    pub states: usize,
    /// The grid it was found on (S).
    pub slots: u32,
}

/// Algorithm 1 on a discretised chain; `allowed[i]`: may x_i be offloaded.
/// `None` when no schedule of the relaxation fits.
pub fn solve(d: &Discrete, allowed: &[bool]) -> Option<Decision> {
    let n_layers = d.ex_f.len();
    let clamp = clamp_of(d);
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
    let ranked = ranked_finals(d, layers.last()?);
    let &(idle, k) = ranked.first()?;
    let offload = backtrack(&layers, k);
    let mut ties: Vec<Vec<usize>> = Vec::new();
    for &(_, k) in ranked.iter().skip(1).take_while(|(t, _)| *t == idle) {
        if ties.len() == MAX_TIES {
            break;
        }
        let set = backtrack(&layers, k);
        if set != offload && !ties.contains(&set) {
            ties.push(set);
        }
    }
    Some(Decision {
        offload,
        ties,
        idle: Some(idle),
        states: total_states,
        slots: d.s as u32,
    })
}

/// Negative Δ (idle link) only matters in ε_G, and only up to this much.
fn clamp_of(d: &Discrete) -> i64 {
    let sum_x: i64 = d.x.iter().sum();
    let y_max = d.y.iter().copied().max().unwrap_or(0);
    let ex_max = d.ex_f.iter().chain(&d.ex_b).copied().max().unwrap_or(0);
    -(2 * sum_x + 2 * y_max + ex_max + d.s + 2)
}

/// The states after layer `i` reached from `prev` (equations (2)–(8)), one per
/// key (n, df, db) with the least idle time; Δ below `clamp` is cut to it.
fn transitions(d: &Discrete, i: usize, prev: &[Node], may_offload: bool, clamp: i64) -> Vec<Node> {
    let l = d.ex_f.len() - 1;
    let x_next = d.x[i + 1];
    let y_out = if i == l { d.y[i + 1] } else { 0 };
    let f_fixed = d.ex_f[i] + x_next + y_out;
    let b_fixed = d.ex_b[i] + x_next + d.y[i + 1];
    let (room_f, room_b) = (d.room_f[i], d.room_b[i]);
    let mut map: FxMap<(i64, i64, i64), u32> = FxMap::default();
    let mut next: Vec<Node> = Vec::new();
    for (pi, st) in prev.iter().enumerate() {
        // Validity (Algorithm 1, with Δ⁺): the op fits once all pending
        // offloads are done / before any pending prefetch.
        if st.n + f_fixed > room_f || d.y[i] + st.n + b_fixed > room_b {
            continue;
        }
        let mf = st.n + st.df.max(0);
        let mb = d.y[i] + st.n + st.db.max(0);
        let ef = (mf + f_fixed - room_f).max(0);
        let eb = (mb + b_fixed - room_b).max(0);
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

/// The final states by total idle time (their own plus ε_G), least first, with
/// that time.
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
fn ranked_finals(d: &Discrete, last: &[Node]) -> Vec<(i64, usize)> {
    let s = d.s;
    let n_layers = d.ex_f.len();
    let mut suffix_x = vec![0i64; n_layers + 2]; // Σ_{i≥k} x_i
    for k in (0..=n_layers).rev() {
        suffix_x[k] = suffix_x[k + 1] + d.x[k];
    }
    let (mut ub_u, mut uf_u) = (0i64, 0i64);
    let (mut gb, mut gf) = (i64::MIN / 4, i64::MIN / 4);
    for j in (0..n_layers).rev() {
        let rb = d.ex_b[j] + d.y[j] + d.y[j + 1] - suffix_x[j + 2] - (d.room_b[j] - s);
        let rf = d.ex_f[j] - suffix_x[j + 2] - (d.room_f[j] - s);
        gb = gb.max(rb - ub_u);
        gf = gf.max(rf - uf_u);
        ub_u += d.ub[j];
        uf_u += d.uf[j];
    }
    let y_last = d.y[n_layers];
    let mut ranked: Vec<(i64, i64, usize)> = last
        .iter()
        .enumerate()
        .map(|(k, st)| {
            let mut eg = (st.df + st.db).max(0);
            if st.df > 0 {
                eg = eg.max(gb + st.n + st.df - s);
            }
            if st.db > 0 {
                eg = eg.max(gf + y_last + st.n + st.db - s);
            }
            (st.idle + eg, -st.n, k)
        })
        .collect();
    // Ties: offload the least (largest n) first, as Lemma 2 suggests; every
    // offload is a whole transfer, and a prefetch, in the real schedule.
    ranked.sort_unstable();
    ranked.into_iter().map(|(t, _, k)| (t, k)).collect()
}

/// The discretised idle time (its own plus ε_G) of one offload set, by the
/// same transitions as [`solve`]; `None` when the set does not fit. [`solve`]'s
/// optimum is at most this for every set it may choose.
pub fn idle_of(d: &Discrete, offload: &[usize]) -> Option<i64> {
    let clamp = clamp_of(d);
    let mut state = vec![Node {
        n: d.x[0],
        df: 0,
        db: 0,
        idle: 0,
        parent: u32::MAX,
        offload: false,
    }];
    for i in 0..d.ex_f.len() {
        let want = offload.contains(&i);
        let next = transitions(d, i, &state, want, clamp);
        state = vec![*next.iter().find(|nd| nd.offload == want)?];
    }
    ranked_finals(d, &state).first().map(|&(idle, _)| idle)
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

/// How many times [`dynprog`] doubles the number of slots where a grid finds
/// no schedule that the simulator accepts.
pub const REFINEMENTS: u32 = 2;

/// DYNPROG's offload set and schedule: the iterative rounding of |x_i| on the
/// grid of `slots` slots and, where that ends without a schedule, on grids
/// twice and four times as fine ([`REFINEMENTS`]). The decision's `slots` says
/// which grid gave it.
pub fn dynprog(
    c: &ActivationChain,
    inst: &Instance,
    slots: u32,
) -> Result<(Decision, Schedule), HeuristicError> {
    let mut allowed = vec![false; c.layers.len() + 1];
    for i in candidates(c) {
        allowed[i] = true;
    }
    let mut last_err: Option<SimError> = None;
    for k in 0..=REFINEMENTS {
        let s = slots.saturating_mul(1 << k);
        match rounds(c, inst, s, &allowed) {
            Ok(found) => return Ok(found),
            Err(e) => last_err = e.or(last_err),
        }
    }
    // Addition 4 (module doc): the set of every candidate is in the program's
    // space; where no grid's choice realises, it is the last one tried.
    let every = Decision {
        offload: candidates(c),
        ties: Vec::new(),
        idle: None,
        states: 0,
        slots: slots.saturating_mul(1 << REFINEMENTS),
    };
    match realise(c, inst, every) {
        Ok(found) => return Ok(found),
        Err(e) => last_err = Some(e),
    }
    Err(match last_err {
        Some(e) => no_schedule(NAME, e),
        None => HeuristicError::NoSchedule {
            heuristic: NAME,
            reason: format!(
                "no offload set fits in {} to {} slots",
                slots,
                slots.saturating_mul(1 << REFINEMENTS)
            ),
        },
    })
}

/// The iterative rounding on one grid: solve, realise, and while the simulator
/// rejects every set the program chose, raise the rounded |x̃_i| that is below,
/// but closest to, |x_i| (§5.3.2). `Err(None)`: the program found no set.
fn rounds(
    c: &ActivationChain,
    inst: &Instance,
    slots: u32,
    allowed: &[bool],
) -> Result<(Decision, Schedule), Option<SimError>> {
    let n = c.layers.len();
    let cap = c.gpu_memory.max(1) as u128;
    let s = slots as u128;
    let mut bump = vec![0i64; n + 2];
    let mut last_err: Option<SimError> = None;
    for _round in 0..=n + 1 {
        let d = Discrete::new(c, slots, &bump);
        let Some(dec) = solve(&d, allowed) else {
            break;
        };
        match realise(c, inst, dec) {
            Ok(found) => return Ok(found),
            Err(e) => last_err = Some(e),
        }
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
    Err(last_err)
}

/// The simulator's realisation of the decision's set and of its ties; the
/// least makespan wins (ties: the program's own ranking). The decision's
/// `offload` becomes the winning set.
fn realise(
    c: &ActivationChain,
    inst: &Instance,
    mut dec: Decision,
) -> Result<(Decision, Schedule), SimError> {
    let mut best: Option<(Schedule, usize)> = None;
    let mut last_err = None;
    let sets: Vec<&Vec<usize>> = std::iter::once(&dec.offload).chain(&dec.ties).collect();
    for (k, set) in sets.iter().enumerate() {
        match simulate_plan(c, inst, set, None) {
            Ok(s) => {
                if best
                    .as_ref()
                    .is_none_or(|(b, _)| s.last_end() < b.last_end())
                {
                    best = Some((s, k));
                }
            }
            Err(e) => last_err = Some(e),
        }
    }
    match best {
        Some((sched, k)) => {
            if k > 0 {
                let chosen = dec.ties[k - 1].clone();
                dec.ties[k - 1] = std::mem::replace(&mut dec.offload, chosen);
            }
            Ok((dec, sched))
        }
        None => Err(last_err.expect("at least one set was simulated")),
    }
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
