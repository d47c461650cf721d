//! `pofo` and `offload-only`: the dynamic programme of the NeurIPS 2021
//! appendix (Lemma 1, eqs. (1)–(2), Table 2), read as `FAMILIES.md` §2.4 writes
//! it, with the corrections of §2.2 (M^x from ColossalAI, the ranges of B.1
//! Case 2 and B.3 Case 2, the prefetch volume of B.1 Case 2, M^{i,j} in B.3
//! Case 1). B.3 Case 1 uses the memory of F^i_all and B_i, as printed (until
//! issue 11's fix it used layer j's, and pofo without offloading could find a
//! plan where none exists; rotor's DP now agrees with it, tested on random
//! chains). `offload-only` is the same programme with Case 2 (F_ck / F_∅, i.e.
//! every recomputation) disabled.
//!
//! Several options per block (rockmate's `RK_Chain`, `layers[ℓ].options`,
//! compiled to `Fall{ℓ}.{k}` / `B{ℓ}.{k}` in the variant group `bwd{ℓ}`):
//! every F^i_all choice (B.1 Case 1, B.3 Case 1 and its base case) ranges over
//! the block's options k, with that option's u_F, u_B, |ā|, o_f and o_b; the
//! forward state's x, which says whether the subchain input is a_{i−1} or
//! ā_{i−1}, is 1 + k when it is option k's ā (so its size and the tensor an
//! offload moves are that option's); the reconstruction runs `Fall{i}.{k}` and
//! the backward `B{i}.{k}` of the same k. Runs (F_ck, F_∅) use the fast
//! forward `F{ℓ}` (`ff_u_f`, `ff_o_f`; by default option 0's u_F and o_f).
//! One option per block: the same programme, bit for bit.
//!
//! The programme's own value assumes **fluid** transfers (memory freed and taken
//! continuously at rate β). It is only a model value: [`PofoPlan::model_value`],
//! printed as `solver-reported (paper model, fluid transfers)`. The decisions
//! (op sequence, which subchain inputs are offloaded) are realised by the ASAP
//! simulator under offcert's whole-tensor rule and checked; a plan that does not
//! fit is reported with the simulator's reason.
//!
//! Memory is in slots (sizes up, budget down), idle times and durations in ticks
//! as `f64` (model values only), transfer volumes `time·β` rounded down to slots.
//!
//! Evaluation: memoised recursion from OC_0(1, 0, 0, 0), so only reachable
//! states are computed, in flat tables indexed by the state (forward: row
//! (i, x, A, Δ_F), column Δ_B; backward: row (i, j, A), column Δ; rows
//! allocated on first use; A, Δ beyond M + 1 slots, which are rare, spill into
//! a map). What depends on no state variable
//! (the ε_F peaks of both Cases 2, the Σ u_F of a run) is tabulated once per
//! solve in exact integers. `tests/remat_pofo.rs` checks value and plan bit for
//! bit against the first, map-memoised version kept in `tests/pofo_reference`.
//!
//! Owns: the `pofo` and `offload-only` dynamic programmes.
//! Must not import: exact solvers, traces, reports, the CLI.

use super::{chain_any, Sequence, SlotOption, Slots};
use crate::family::remat_chain::{Dims, RematChain};
use crate::family::InstanceFile;
use crate::heuristic::{Heuristic, HeuristicError};
use crate::model::Instance;
use crate::schedule::Schedule;
use crate::simulate::asap_sequence;
use std::collections::HashMap;
use std::sync::Mutex;

/// The paper's N_GPU (B.4: 50 values suffice in its experiments).
pub const POFO_SLOTS: u64 = 50;

/// Most rows of a memo table (4 bytes each before any is allocated).
const MAX_ROWS: usize = 1 << 24;

#[derive(Clone, Debug)]
pub struct Pofo {
    pub slots: u64,
    /// Allow recomputation (Case 2). `false`: offload-only.
    pub remat: bool,
    /// B.1 Case 2 ranges over i ≤ j ≤ L−1 as printed; `true` lets a run end at L.
    pub run_to_loss: bool,
    /// Count δ_L in the forward-phase memory formulas, as printed (§2.2.3).
    pub forward_delta: bool,
    /// Allow offloading a subchain's input (Table 2's v = 1). `false` keeps
    /// every input (v = 2 only) and sets β = 0 in the ε terms (Lemma 1's
    /// memory frees up at rate β only while data moves): the persistent
    /// rematerialisation DP, which `FAMILIES.md` §2.4 says rotor's is (tested
    /// against it).
    pub offload: bool,
    /// The last chain solved and the answer (see [`LastSolve`]).
    pub last: LastSolve,
}

/// The switches that change the programme's answer.
type Switches = (u64, bool, bool, bool, bool);

/// The last chain [`Pofo::solve`] solved, under which switches, and its answer:
/// the gap report asks a heuristic for its schedule and then for its model
/// value, and both come from one solve. A clone starts empty.
#[derive(Debug, Default)]
pub struct LastSolve(Mutex<Option<(Switches, RematChain, Option<PofoPlan>)>>);

/// The last [`SHARED_SOLVES`] solves of any [`Pofo`] in this process: on a
/// chain of more than 35 layers `pofo-as-run` may run the programme at the
/// appendix's 50 slots with printed pofo's switches
/// ([`super::pofo_run::run_slots`]), and then reuses printed pofo's solve of
/// the same row instead of repeating it (13 s of CPU on a DenseNet-201 row).
static SHARED: Mutex<Vec<(Switches, RematChain, Option<PofoPlan>)>> = Mutex::new(Vec::new());

/// How many solves [`SHARED`] keeps (a few rows of `offcert gap --jobs N`).
const SHARED_SOLVES: usize = 4;

impl Clone for LastSolve {
    fn clone(&self) -> Self {
        LastSolve::default()
    }
}

impl Default for Pofo {
    fn default() -> Self {
        Pofo {
            slots: POFO_SLOTS,
            remat: true,
            run_to_loss: false,
            forward_delta: true,
            offload: true,
            last: LastSolve::default(),
        }
    }
}

impl Pofo {
    pub fn offload_only() -> Pofo {
        Pofo {
            remat: false,
            ..Pofo::default()
        }
    }

    /// The programme that `FAMILIES.md` §2.4 says is rotor's persistent DP:
    /// no offloading (v = 2 only), δ_L not counted, runs may reach the loss.
    pub fn persistent(slots: u64) -> Pofo {
        Pofo {
            slots,
            remat: true,
            run_to_loss: true,
            forward_delta: false,
            offload: false,
            ..Pofo::default()
        }
    }
}

/// A solved programme.
#[derive(Clone, Debug)]
pub struct PofoPlan {
    /// OC_0(1, 0, 0, 0) in ticks (fluid model).
    pub model_value: f64,
    pub sequence: Sequence,
}

/// A memo table: the key's leading coordinates pick a row of `width` values
/// (allocated on first use in one pool, NaN = not computed yet: a computed
/// value is a minimum folded from +∞ with `f64::min`, never NaN), the last one
/// a column. A key outside the rows' range spills into a map, so the table holds
/// exactly what a map of the full state would.
struct Memo {
    width: usize,
    /// Row → its index in `pool` (in rows), `u32::MAX` = not allocated.
    rows: Vec<u32>,
    pool: Vec<f64>,
    spill: HashMap<[u64; 5], f64>,
}

impl Memo {
    fn new(rows: usize, width: usize) -> Memo {
        Memo {
            width,
            rows: vec![u32::MAX; rows],
            pool: Vec::new(),
            spill: HashMap::new(),
        }
    }
    #[inline]
    fn get(&self, at: Option<(usize, usize)>, key: &[u64; 5]) -> Option<f64> {
        match at {
            Some((r, c)) => match self.rows[r] {
                u32::MAX => None,
                p => Some(self.pool[p as usize * self.width + c]).filter(|v| !v.is_nan()),
            },
            None => self.spill.get(key).copied(),
        }
    }
    #[inline]
    fn set(&mut self, at: Option<(usize, usize)>, key: [u64; 5], v: f64) {
        let Some((r, c)) = at else {
            self.spill.insert(key, v);
            return;
        };
        if self.rows[r] == u32::MAX {
            self.rows[r] = (self.pool.len() / self.width) as u32;
            self.pool.resize(self.pool.len() + self.width, f64::NAN);
        }
        self.pool[self.rows[r] as usize * self.width + c] = v;
    }
}

struct Dp<'a> {
    c: &'a RematChain,
    cfg: &'a Pofo,
    sl: Slots,
    dm: Dims,
    /// Bytes per tick.
    beta: f64,
    m: i64,
    /// Table extent of A, Δ_F, Δ_B and Δ (larger values spill).
    cap: usize,
    /// OC_x(i, A, Δ_F, Δ_B): row (i, x, A, Δ_F), column Δ_B.
    fw: Memo,
    /// C_Δ(i, j, A, Δ): row (i, j, A), column Δ.
    bw: Memo,
    /// `ck_peak[i][i']` = max_{k=i..i'} (M^{i,j}(F^k_∅) − δ_j − ⌊β Σ_{h=k+1}^{i'} u_{F_h}⌋),
    /// B.3 Case 2's ε_F peak without δ_j (exact integers).
    ck_peak: Vec<Vec<i64>>,
    /// `fck_peak[i][j]` = max_{k=i..j} (M^{i,L}(F^k_∅) − ⌊β Σ_{h=i}^{k−1} u_{F_h}⌋),
    /// B.1 Case 2's ε_F peak (it depends on no state variable).
    fck_peak: Vec<Vec<i64>>,
    /// `uf_pre[k]` = Σ_{h<k} u_{F_h} of the fast forwards `F{h}` (the ops of
    /// a run F_ck, F_∅, …).
    uf_pre: Vec<i64>,
    /// Per layer ℓ = 1..=L+1 (entry 0 empty): its options (the loss: one).
    opts: Vec<Vec<SlotOption>>,
    /// Per layer ℓ = 1..=L+1 (entry ℓ): the fast forward's scratch in slots.
    ff_o_f: Vec<u64>,
    /// 1 + the most options of a layer: the forward state's x is 0 (the
    /// subchain input is a_{i−1}) or 1 + k (ā_{i−1} of option k).
    xs: usize,
}

/// A forward-phase choice; `k` is the option F^i_all saves.
#[derive(Clone, Copy, Debug, PartialEq)]
enum FChoice {
    Loss,
    All { v: u8, k: usize },
    Ck { j: usize, v: u8 },
}

/// A backward-phase choice; `k` is the option F^i_all saves (B_i reads it).
#[derive(Clone, Copy, Debug, PartialEq)]
enum BChoice {
    Base { k: usize },
    All { k: usize },
    Ck { ip: usize },
}

impl<'a> Dp<'a> {
    fn new(c: &'a RematChain, cfg: &'a Pofo) -> Dp<'a> {
        let dm = c.dims();
        let sl = Slots::new(c, &dm, cfg.slots);
        let bw = c.bandwidth.to_bandwidth();
        // No offloading: nothing moves, so no memory frees up while ops run
        // (β = 0 in every ε and volume; FAMILIES.md §2.4, rotor's DP).
        let beta = if cfg.offload {
            bw.bytes as f64 / bw.ticks as f64
        } else {
            0.0
        };
        let m = sl.budget as i64;
        let n = dm.l + 2;
        let (opts, ff) = super::slot_options(c, &dm, &sl);
        let ff_o_f: Vec<u64> = ff.iter().map(|f| f.1).collect();
        let xs = 1 + opts.iter().map(Vec::len).max().unwrap_or(1);
        // A, Δ_F, Δ_B ≤ M + 1 slots in the tables (the forward one has
        // xs·(L+2)(cap+1)² rows; with many slots the range shrinks so that it
        // stays at most MAX_ROWS, and the rest spills: same values, slower).
        let mut cap = sl.budget as usize + 1;
        while cap > 0 && n * xs * (cap + 1) * (cap + 1) > MAX_ROWS {
            cap /= 2;
        }
        // Runs use the fast forward F{h} (its own duration when the file
        // sets one; the loss is never in a run).
        let mut uf_pre = vec![0i64; n + 1];
        for k in 0..n {
            let ff = if (1..=dm.l).contains(&k) {
                c.layers[k - 1].ff_u_f.unwrap_or(dm.u_f[k])
            } else {
                dm.u_f[k]
            };
            uf_pre[k + 1] = uf_pre[k] + ff;
        }
        let mut dp = Dp {
            c,
            cfg,
            sl,
            dm,
            beta,
            m,
            cap,
            fw: Memo::new(n * xs * (cap + 1) * (cap + 1), cap + 1),
            bw: Memo::new(n * n * (cap + 1), cap + 1),
            ck_peak: Vec::new(),
            fck_peak: Vec::new(),
            uf_pre,
            opts,
            ff_o_f,
            xs,
        };
        dp.ck_peak = dp.ck_peaks();
        dp.fck_peak = dp.fck_peaks();
        dp
    }
    fn fck_peaks(&self) -> Vec<Vec<i64>> {
        let n = self.dm.l + 2;
        let dl = self.dj(self.dm.l, true);
        let mut t = vec![vec![i64::MIN; n]; n];
        for (i, row) in t.iter_mut().enumerate().skip(1) {
            let mut peak = i64::MIN;
            for (j, cell) in row.iter_mut().enumerate().skip(i) {
                let before = (self.uf_pre[j] - self.uf_pre[i]) as f64;
                let shift = (before * self.beta / self.sl.slot as f64).floor() as i64;
                peak = peak.max(self.m_f0(i, j, dl) - shift);
                *cell = peak;
            }
        }
        t
    }
    fn ck_peaks(&self) -> Vec<Vec<i64>> {
        let n = self.dm.l + 2;
        let mut t = vec![vec![i64::MIN; n]; n];
        for (i, row) in t.iter_mut().enumerate().skip(1) {
            for (ip, cell) in row.iter_mut().enumerate().skip(i) {
                let mut peak = i64::MIN;
                for k in i..=ip {
                    let after = (self.uf_pre[ip + 1] - self.uf_pre[k + 1]) as f64;
                    let shift = (after * self.beta / self.sl.slot as f64).floor() as i64;
                    peak = peak.max(self.m_f0(i, k, 0) - shift);
                }
                *cell = peak;
            }
        }
        t
    }
    /// Σ_{k=i..=j} u_{F_k} (exact: integer ticks).
    fn uf_sum(&self, i: usize, j: usize) -> f64 {
        (self.uf_pre[j + 1] - self.uf_pre[i]) as f64
    }
    #[inline]
    fn fidx(&self, i: usize, x: u8, a: u64, df: u64, db: u64) -> Option<(usize, usize)> {
        let w = self.cap as u64 + 1;
        if a >= w || df >= w || db >= w {
            return None;
        }
        let w = self.cap + 1;
        let r = (((i * self.xs + x as usize) * w) + a as usize) * w + df as usize;
        Some((r, db as usize))
    }
    #[inline]
    fn bidx(&self, i: usize, j: usize, a: u64, d: u64) -> Option<(usize, usize)> {
        let w = self.cap as u64 + 1;
        if a >= w || d >= w {
            return None;
        }
        let n = self.dm.l + 2;
        Some(((i * n + j) * (self.cap + 1) + a as usize, d as usize))
    }
    /// Slots → idle ticks: ε = bytes/β.
    fn eps(&self, slots: i64) -> f64 {
        if slots <= 0 {
            return 0.0;
        }
        // β = 0 (no offloading): waiting frees nothing, ε = ∞.
        slots as f64 * self.sl.slot as f64 / self.beta
    }
    /// Volume moved in `t` ticks, in whole slots (rounded down).
    fn vol(&self, t: f64) -> u64 {
        // `as` truncates towards zero, which is the floor on the non-negative
        // values that remain after `max` (and saturates as floor would).
        (t * self.beta / self.sl.slot as f64).max(0.0) as u64
    }
    fn l1(&self) -> usize {
        self.dm.l + 1
    }
    /// δ_j in the memory formulas (forward phase: δ_L, or 0 with the option off).
    fn dj(&self, j: usize, forward: bool) -> i64 {
        if forward && !self.cfg.forward_delta {
            0
        } else {
            self.sl.d[j] as i64
        }
    }
    /// The memory of F^k_ck / F^k_∅ (the fast forward) in a run from i.
    fn m_f0(&self, i: usize, k: usize, dj: i64) -> i64 {
        let s = &self.sl;
        if k == i {
            dj + (s.a[i] + self.ff_o_f[i]) as i64
        } else {
            dj + (s.a[k - 1] + s.a[k] + self.ff_o_f[k]) as i64
        }
    }
    /// |ā_i| of option `k`, in slots.
    fn abar(&self, i: usize, k: usize) -> u64 {
        self.sl.a[i] + self.opts[i][k].s
    }
    /// M^{i,j}(F^i_all) with option `k`.
    fn m_fall(&self, i: usize, k: usize, dj: i64) -> i64 {
        dj + (self.abar(i, k) + self.opts[i][k].o_f) as i64
    }
    /// M^{i,j}(B_i) with option `k`.
    fn m_b(&self, i: usize, k: usize) -> i64 {
        let s = &self.sl;
        (self.abar(i, k) + s.d[i] + s.d[i - 1] + self.opts[i][k].o_b) as i64
    }
    /// The subchain input: a_{i−1} (x = 0) or ā_{i−1} of option x − 1.
    fn input(&self, i: usize, x: u8) -> u64 {
        if x >= 1 {
            self.abar(i - 1, x as usize - 1)
        } else {
            self.sl.a[i - 1]
        }
    }

    /// Table 2: the state after a subchain start, v = 1 offloads I, v = 2 keeps it.
    #[allow(clippy::too_many_arguments)]
    fn next_state(
        &self,
        v: u8,
        a: u64,
        df: u64,
        db: u64,
        i_: u64,
        dfv: u64,
        dbv: u64,
    ) -> (u64, u64, u64) {
        if v == 1 {
            (
                a,
                (df + i_).saturating_sub(dfv),
                db.saturating_sub(dbv) + i_,
            )
        } else {
            (a + i_, df.saturating_sub(dfv), db.saturating_sub(dbv))
        }
    }

    /// Every option at a forward state, with its cost, in a fixed order (the
    /// reconstruction takes the first that achieves the minimum).
    fn f_options(
        &mut self,
        i: usize,
        x: u8,
        (a, df, db): (u64, u64, u64),
        out: &mut dyn FnMut(f64, FChoice),
    ) {
        let l1 = self.l1();
        let ii = self.input(i, x) as i64;
        let free = self.m - a as i64;
        let dl = self.dj(self.dm.l, true);
        // Case 1 (and the loss, B.2), with each option of F^i_all in turn.
        let dj = if i == l1 { 0 } else { dl };
        for k in 0..self.opts[i].len() {
            let (uf, ub) = (self.opts[i][k].u_f as f64, self.opts[i][k].u_b as f64);
            let mf = self.m_fall(i, k, dj);
            let mb = self.m_b(i, k);
            if mf + ii > free || mb + ii > free {
                continue;
            }
            let ef = self.eps(mf - self.m + a as i64 + df as i64 + ii);
            let eb = self.eps(mb - self.m + a as i64 + db as i64 + ii);
            let (dfv, dbv) = (self.vol(uf + ef), self.vol(ub + eb));
            if i == l1 {
                let (_, df2, db2) = self.next_state(2, a, df, db, ii as u64, dfv, dbv);
                let eg = self.eps((df2 + db2) as i64);
                out(uf + ub + ef + eb + eg, FChoice::Loss);
                continue;
            }
            for v in [1u8, 2] {
                if v == 1 && !self.cfg.offload {
                    continue;
                }
                let (a2, df2, db2) = self.next_state(v, a, df, db, ii as u64, dfv, dbv);
                let rest = self.oc(i + 1, 1 + k as u8, a2, df2, db2);
                if rest.is_finite() {
                    out(uf + ub + ef + eb + rest, FChoice::All { v, k });
                }
            }
        }
        if self.cfg.remat && i != l1 {
            self.f_ck_options(i, x, (a, df, db), out);
        }
    }

    /// B.1 Case 2: F^i_ck, F^{i+1..j}_∅, checkpoint a_j.
    fn f_ck_options(
        &mut self,
        i: usize,
        x: u8,
        (a, df, db): (u64, u64, u64),
        out: &mut dyn FnMut(f64, FChoice),
    ) {
        let ii = self.input(i, x) as i64;
        let free = self.m - a as i64;
        let dl = self.dj(self.dm.l, true);
        let jmax = if self.cfg.run_to_loss {
            self.dm.l
        } else {
            self.dm.l - 1
        };
        let mut fits_kept = true;
        let mut fits_off = true;
        for j in i..=jmax {
            let mk = self.m_f0(i, j, dl);
            let peak = self.fck_peak[i][j];
            let fsum = self.uf_sum(i, j);
            fits_kept &= mk + ii <= free;
            fits_off &= if j == i { mk + ii <= free } else { mk <= free };
            if !fits_off && !fits_kept {
                break;
            }
            let ef = self.eps(peak - self.m + a as i64 + df as i64 + ii);
            let cd = self.c_delta(i, j, a + ii as u64, db);
            if !cd.is_finite() {
                continue;
            }
            let (dfv, dbv) = (self.vol(fsum + ef), self.vol(cd));
            for v in [1u8, 2] {
                if (v == 1 && (!fits_off || !self.cfg.offload)) || (v == 2 && !fits_kept) {
                    continue;
                }
                let (a2, df2, db2) = self.next_state(v, a, df, db, ii as u64, dfv, dbv);
                let rest = self.oc(j + 1, 0, a2, df2, db2);
                if rest.is_finite() {
                    out(fsum + rest + cd + ef, FChoice::Ck { j, v });
                }
            }
        }
    }

    /// OC_x(i, A, Δ_F, Δ_B), eq. (1).
    fn oc(&mut self, i: usize, x: u8, a: u64, df: u64, db: u64) -> f64 {
        let at = self.fidx(i, x, a, df, db);
        let key = [i as u64, x as u64, a, df, db];
        if let Some(v) = self.fw.get(at, &key) {
            return v;
        }
        let mut best = f64::INFINITY;
        self.f_options(i, x, (a, df, db), &mut |c, _| best = best.min(c));
        self.fw.set(at, key, best);
        best
    }

    /// Every option of C_Δ(i, j, A, Δ), eq. (2), in a fixed order.
    fn b_options(
        &mut self,
        i: usize,
        j: usize,
        (a, d): (u64, u64),
        out: &mut dyn FnMut(f64, BChoice),
    ) {
        let free = self.m - a as i64;
        let base = -self.m + a as i64 + d as i64;
        let dj = self.sl.d[j] as i64;
        if i == j {
            for k in 0..self.opts[i].len() {
                let (uf, ub) = (self.opts[i][k].u_f as f64, self.opts[i][k].u_b as f64);
                let (mf, mb) = (self.m_fall(i, k, dj), self.m_b(i, k));
                if mf <= free && mb <= free {
                    let shift = (ub * self.beta / self.sl.slot as f64).floor() as i64;
                    let e = self.eps(mf - shift + base).max(self.eps(mb + base));
                    out(uf + ub + e, BChoice::Base { k });
                }
            }
            return;
        }
        // Case 1: F^i_all first. Its ops are F^i_all and B_i: M^{i,j}(F^i_all)
        // and M^{i,j}(B_i), layer i's (the first version used layer j's, which
        // missed e.g. a B_i that does not fit:
        // instances/regressions/remat/pofo-no-offload-vs-rotor.json).
        for k in 0..self.opts[i].len() {
            let (uf, ub) = (self.opts[i][k].u_f as f64, self.opts[i][k].u_b as f64);
            let (mf, mb) = (self.m_fall(i, k, dj), self.m_b(i, k));
            if mf > free || mb > free {
                continue;
            }
            let eb = self.eps(mb + base);
            let d1 = d.saturating_sub(self.vol(ub + eb));
            let r = self.c_delta(i + 1, j, a + self.abar(i, k), d1);
            if r.is_finite() {
                let d2 = d1.saturating_sub(self.vol(r));
                let ef = self.eps(mf - self.m + a as i64 + d2 as i64);
                out(uf + r + ub + ef + eb, BChoice::All { k });
            }
        }
        // Case 2: F^i_ck, F^{i+1..i'}_∅, checkpoint a_{i'}.
        for ip in i..j {
            // The run i..=i' fits iff the one up to i'−1 did and F^{i'} fits.
            if self.m_f0(i, ip, dj) > free {
                break;
            }
            let cl = self.c_delta(i, ip, a, d);
            if !cl.is_finite() {
                continue;
            }
            let d2 = d.saturating_sub(self.vol(cl));
            let cr = self.c_delta(ip + 1, j, a + self.sl.a[ip], d2);
            if !cr.is_finite() {
                continue;
            }
            let d3 = d2.saturating_sub(self.vol(cr));
            let peak = dj + self.ck_peak[i][ip];
            let ef = self.eps(peak - self.m + a as i64 + d3 as i64);
            out(self.uf_sum(i, ip) + cr + cl + ef, BChoice::Ck { ip });
        }
    }

    fn c_delta(&mut self, i: usize, j: usize, a: u64, d: u64) -> f64 {
        let at = self.bidx(i, j, a, d);
        let key = [i as u64, j as u64, a, d, 0];
        if let Some(v) = self.bw.get(at, &key) {
            return v;
        }
        let mut best = f64::INFINITY;
        self.b_options(i, j, (a, d), &mut |c, _| best = best.min(c));
        self.bw.set(at, key, best);
        best
    }

    /// The first option at a forward state achieving its value.
    fn f_argmin(&mut self, i: usize, x: u8, a: u64, df: u64, db: u64) -> FChoice {
        let want = self.oc(i, x, a, df, db);
        let mut ch = None;
        self.f_options(i, x, (a, df, db), &mut |c, o| {
            if ch.is_none() && c == want {
                ch = Some(o);
            }
        });
        ch.expect("finite state has an argmin")
    }

    /// The first option of C_Δ(i, j, A, Δ) achieving its value.
    fn b_argmin(&mut self, i: usize, j: usize, a: u64, d: u64) -> BChoice {
        let want = self.c_delta(i, j, a, d);
        let mut ch = None;
        self.b_options(i, j, (a, d), &mut |c, o| {
            if ch.is_none() && c == want {
                ch = Some(o);
            }
        });
        ch.expect("finite state has an argmin")
    }

    fn emit_f(&mut self, i: usize, x: u8, a: u64, df: u64, db: u64, s: &mut Sequence) {
        let ch = self.f_argmin(i, x, a, df, db);
        let c = self.c;
        let ii = self.input(i, x);
        let saved = (x >= 1).then(|| self.opts[i - 1][x as usize - 1].saved);
        let offload = |s: &mut Sequence| {
            s.offload_after_last(c.a_id(i - 1));
            if let Some(t) = saved {
                s.offload_after_last(t);
            }
        };
        // Recompute the transfer volumes exactly as in f_options.
        match ch {
            FChoice::Loss => {
                s.f_all(c, i);
                s.b(c, i);
            }
            FChoice::All { v, k } => {
                let o = self.opts[i][k].clone();
                let (uf, ub) = (o.u_f as f64, o.u_b as f64);
                let dl = self.dj(self.dm.l, true);
                let (mf, mb) = (self.m_fall(i, k, dl), self.m_b(i, k));
                let ef = self.eps(mf - self.m + a as i64 + df as i64 + ii as i64);
                let eb = self.eps(mb - self.m + a as i64 + db as i64 + ii as i64);
                let (dfv, dbv) = (self.vol(uf + ef), self.vol(ub + eb));
                let (a2, df2, db2) = self.next_state(v, a, df, db, ii, dfv, dbv);
                s.plan.seq.push(o.fall);
                if v == 1 {
                    offload(s);
                }
                self.emit_f(i + 1, 1 + k as u8, a2, df2, db2, s);
                s.plan.seq.push(o.b);
            }
            FChoice::Ck { j, v } => {
                let (peak, fsum) = (self.fck_peak[i][j], self.uf_sum(i, j));
                let ef = self.eps(peak - self.m + a as i64 + df as i64 + ii as i64);
                let cd = self.c_delta(i, j, a + ii, db);
                let (dfv, dbv) = (self.vol(fsum + ef), self.vol(cd));
                let (a2, df2, db2) = self.next_state(v, a, df, db, ii, dfv, dbv);
                s.f_keep(c, i);
                if v == 1 {
                    offload(s);
                }
                for h in i + 1..=j {
                    s.f_drop(c, h);
                }
                self.emit_f(j + 1, 0, a2, df2, db2, s);
                s.delete_after_last(c.a_id(j));
                self.emit_b(i, j, a + ii, db, s);
            }
        }
    }

    fn emit_b(&mut self, i: usize, j: usize, a: u64, d: u64, s: &mut Sequence) {
        let ch = self.b_argmin(i, j, a, d);
        let c = self.c;
        match ch {
            BChoice::Base { k } => {
                s.plan.seq.push(self.opts[i][k].fall);
                s.plan.seq.push(self.opts[i][k].b);
            }
            BChoice::All { k } => {
                let o = self.opts[i][k].clone();
                let eb = self.eps(self.m_b(i, k) - self.m + a as i64 + d as i64);
                let d1 = d.saturating_sub(self.vol(o.u_b as f64 + eb));
                s.plan.seq.push(o.fall);
                self.emit_b(i + 1, j, a + self.abar(i, k), d1, s);
                s.plan.seq.push(o.b);
            }
            BChoice::Ck { ip } => {
                let cl = self.c_delta(i, ip, a, d);
                let d2 = d.saturating_sub(self.vol(cl));
                s.f_keep(c, i);
                for h in i + 1..=ip {
                    s.f_drop(c, h);
                }
                self.emit_b(ip + 1, j, a + self.sl.a[ip], d2, s);
                s.delete_after_last(c.a_id(ip));
                self.emit_b(i, ip, a, d, s);
            }
        }
    }
}

impl Pofo {
    /// Solve the programme; `None` when no sequence fits its memory model.
    pub fn solve(&self, c: &RematChain) -> Option<PofoPlan> {
        let key = (
            self.slots,
            self.remat,
            self.run_to_loss,
            self.forward_delta,
            self.offload,
        );
        let lock = || self.last.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((k, chain, plan)) = &*lock() {
            if *k == key && chain == c {
                return plan.clone();
            }
        }
        let shared = || SHARED.lock().unwrap_or_else(|e| e.into_inner());
        let hit = shared()
            .iter()
            .find(|(k, chain, _)| *k == key && chain == c)
            .map(|x| x.2.clone());
        let plan = hit.unwrap_or_else(|| {
            let plan = self.solve_afresh(c);
            let mut v = shared();
            if v.len() >= SHARED_SOLVES {
                v.remove(0);
            }
            v.push((key, c.clone(), plan.clone()));
            plan
        });
        *lock() = Some((key, c.clone(), plan.clone()));
        plan
    }

    /// Solve the programme, ignoring [`Pofo::last`].
    pub fn solve_afresh(&self, c: &RematChain) -> Option<PofoPlan> {
        let mut dp = Dp::new(c, self);
        let v = dp.oc(1, 0, 0, 0, 0);
        if !v.is_finite() {
            return None;
        }
        let mut s = Sequence::default();
        dp.emit_f(1, 0, 0, 0, 0, &mut s);
        Some(PofoPlan {
            model_value: v,
            sequence: s,
        })
    }
    fn label(&self) -> &'static str {
        if self.remat {
            "pofo"
        } else {
            "offload-only"
        }
    }
}

impl Heuristic for Pofo {
    fn name(&self) -> &'static str {
        self.label()
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        matches!(file, InstanceFile::RematChain(_))
    }
    fn model_value(&self, file: &InstanceFile) -> Option<f64> {
        match file {
            InstanceFile::RematChain(c) => self.solve(c).map(|p| p.model_value),
            _ => None,
        }
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let c = chain_any(self.label(), file)?;
        let plan = self.solve(c).ok_or_else(|| HeuristicError::NoSchedule {
            heuristic: self.label(),
            reason: format!(
                "the programme finds no sequence within {} slots of {} B",
                c.gpu_memory / c.gpu_memory.div_ceil(self.slots.max(1)).max(1),
                c.gpu_memory.div_ceil(self.slots.max(1)).max(1)
            ),
        })?;
        asap_sequence(inst, &plan.sequence.plan).map_err(|e| HeuristicError::NoSchedule {
            heuristic: self.label(),
            reason: format!(
                "plan not realisable under whole-tensor transfers (model value {:.1} assumes fluid transfers): {e}",
                plan.model_value
            ),
        })
    }
}
