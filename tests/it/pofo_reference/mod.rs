//! The `pofo` dynamic programme as first written (issue 11, main at 6c27eee):
//! memoised recursion over `HashMap`s of the full state, options collected in
//! vectors. Kept verbatim (only the paths changed, and B.3 Case 1's memory
//! made layer i's, M^{i,j}(F^i_all) and M^{i,j}(B_i), the fix that the table
//! version got in the same commit) as the oracle that the
//! table-driven `offcert::heuristic::remat::pofo` must reproduce exactly:
//! the same model value (bit for bit) and the same op sequence.

#![allow(dead_code, clippy::too_many_arguments)]

use offcert::family::remat_chain::{Dims, RematChain};
use offcert::heuristic::remat::pofo::Pofo;
use offcert::heuristic::remat::{Sequence, Slots};
use std::collections::HashMap;

/// The reference's answer: the model value and the op sequence.
pub fn solve(cfg: &Pofo, c: &RematChain) -> Option<(f64, Sequence)> {
    let mut dp = Dp::new(c, cfg);
    let v = dp.oc(1, 0, 0, 0, 0);
    if !v.is_finite() {
        return None;
    }
    let mut s = Sequence::default();
    dp.emit_f(1, 0, 0, 0, 0, &mut s);
    Some((v, s))
}

type FKey = (usize, u8, u64, u64, u64);
type BKey = (usize, usize, u64, u64);

struct Dp<'a> {
    c: &'a RematChain,
    cfg: &'a Pofo,
    sl: Slots,
    dm: Dims,
    /// Bytes per tick.
    beta: f64,
    m: i64,
    fw: HashMap<FKey, f64>,
    bw: HashMap<BKey, f64>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum FChoice {
    Loss,
    All { v: u8 },
    Ck { j: usize, v: u8 },
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum BChoice {
    Base,
    All,
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
        Dp {
            c,
            cfg,
            sl,
            dm,
            beta,
            m,
            fw: HashMap::new(),
            bw: HashMap::new(),
        }
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
        (t * self.beta / self.sl.slot as f64).floor().max(0.0) as u64
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
    fn m_f0(&self, i: usize, k: usize, dj: i64) -> i64 {
        let s = &self.sl;
        if k == i {
            dj + (s.a[i] + s.o_f[i]) as i64
        } else {
            dj + (s.a[k - 1] + s.a[k] + s.o_f[k]) as i64
        }
    }
    fn m_fall(&self, i: usize, k: usize, dj: i64) -> i64 {
        let s = &self.sl;
        if k == i {
            dj + (s.abar(i) + s.o_f[i]) as i64
        } else {
            dj + (s.a[k - 1] + s.abar(k) + s.o_f[k]) as i64
        }
    }
    fn m_b(&self, i: usize, k: usize) -> i64 {
        let s = &self.sl;
        let base = s.abar(k) + s.d[k] + s.d[k - 1] + s.o_b[k];
        (if k == i { base } else { base + s.a[k - 1] }) as i64
    }
    fn input(&self, i: usize, x: u8) -> u64 {
        if x == 1 {
            self.sl.abar(i - 1)
        } else {
            self.sl.a[i - 1]
        }
    }

    /// Table 2: the state after a subchain start, v = 1 offloads I, v = 2 keeps it.
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

    /// Every option at a forward state, with its cost.
    fn f_options(&mut self, i: usize, x: u8, a: u64, df: u64, db: u64) -> Vec<(f64, FChoice)> {
        let l1 = self.l1();
        let ii = self.input(i, x) as i64;
        let free = self.m - a as i64;
        let dl = self.dj(self.dm.l, true);
        let mut out = Vec::new();
        let (uf, ub) = (self.dm.u_f[i] as f64, self.dm.u_b[i] as f64);
        // Case 1 (and the loss, B.2).
        let dj = if i == l1 { 0 } else { dl };
        let mf = self.m_fall(i, i, dj);
        let mb = self.m_b(i, i);
        if mf + ii <= free && mb + ii <= free {
            let ef = self.eps(mf - self.m + a as i64 + df as i64 + ii);
            let eb = self.eps(mb - self.m + a as i64 + db as i64 + ii);
            let (dfv, dbv) = (self.vol(uf + ef), self.vol(ub + eb));
            if i == l1 {
                let (_, df2, db2) = self.next_state(2, a, df, db, ii as u64, dfv, dbv);
                let eg = self.eps((df2 + db2) as i64);
                out.push((uf + ub + ef + eb + eg, FChoice::Loss));
            } else {
                for v in [1u8, 2] {
                    if v == 1 && !self.cfg.offload {
                        continue;
                    }
                    let (a2, df2, db2) = self.next_state(v, a, df, db, ii as u64, dfv, dbv);
                    let rest = self.oc(i + 1, 1, a2, df2, db2);
                    if rest.is_finite() {
                        out.push((uf + ub + ef + eb + rest, FChoice::All { v }));
                    }
                }
            }
        }
        if !self.cfg.remat || i == l1 {
            return out;
        }
        // Case 2: F^i_ck, F^{i+1..j}_∅, checkpoint a_j.
        let jmax = if self.cfg.run_to_loss {
            self.dm.l
        } else {
            self.dm.l - 1
        };
        let mut fsum = 0.0;
        let mut peak = i64::MIN; // max_k (M(F^k_∅) − β Σ_{h<k} u_F)
        let mut fits_kept = true;
        let mut fits_off = true;
        for j in i..=jmax {
            let mk = self.m_f0(i, j, dl);
            peak = peak.max(mk - (fsum * self.beta / self.sl.slot as f64).floor() as i64);
            fsum += self.dm.u_f[j] as f64;
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
                    out.push((fsum + rest + cd + ef, FChoice::Ck { j, v }));
                }
            }
        }
        out
    }

    /// OC_x(i, A, Δ_F, Δ_B), eq. (1).
    fn oc(&mut self, i: usize, x: u8, a: u64, df: u64, db: u64) -> f64 {
        let key = (i, x, a, df, db);
        if let Some(v) = self.fw.get(&key) {
            return *v;
        }
        let best = self
            .f_options(i, x, a, df, db)
            .iter()
            .map(|o| o.0)
            .fold(f64::INFINITY, f64::min);
        self.fw.insert(key, best);
        best
    }

    /// Every option of C_Δ(i, j, A, Δ), eq. (2).
    fn b_options(&mut self, i: usize, j: usize, a: u64, d: u64) -> Vec<(f64, BChoice)> {
        let free = self.m - a as i64;
        let base = -self.m + a as i64 + d as i64;
        let (uf, ub) = (self.dm.u_f[i] as f64, self.dm.u_b[i] as f64);
        let dj = self.sl.d[j] as i64;
        let mut out = Vec::new();
        if i == j {
            let (mf, mb) = (self.m_fall(i, i, dj), self.m_b(i, i));
            if mf <= free && mb <= free {
                let shift = (ub * self.beta / self.sl.slot as f64).floor() as i64;
                let e = self.eps(mf - shift + base).max(self.eps(mb + base));
                out.push((uf + ub + e, BChoice::Base));
            }
            return out;
        }
        // Case 1: F^i_all first.
        let (mf, mb) = (self.m_fall(i, i, dj), self.m_b(i, i));
        if mf <= free && mb <= free {
            let eb = self.eps(mb + base);
            let d1 = d.saturating_sub(self.vol(ub + eb));
            let r = self.c_delta(i + 1, j, a + self.sl.abar(i), d1);
            if r.is_finite() {
                let d2 = d1.saturating_sub(self.vol(r));
                let ef = self.eps(mf - self.m + a as i64 + d2 as i64);
                out.push((uf + r + ub + ef + eb, BChoice::All));
            }
        }
        // Case 2: F^i_ck, F^{i+1..i'}_∅, checkpoint a_{i'}.
        for ip in i..j {
            if (i..=ip).any(|k| self.m_f0(i, k, dj) > free) {
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
            let mut peak = i64::MIN;
            let mut after = 0.0;
            for k in (i..=ip).rev() {
                let shift = (after * self.beta / self.sl.slot as f64).floor() as i64;
                peak = peak.max(self.m_f0(i, k, dj) - shift);
                after += self.dm.u_f[k] as f64;
            }
            let fsum: f64 = (i..=ip).map(|k| self.dm.u_f[k] as f64).sum();
            let ef = self.eps(peak - self.m + a as i64 + d3 as i64);
            out.push((fsum + cr + cl + ef, BChoice::Ck { ip }));
        }
        out
    }

    fn c_delta(&mut self, i: usize, j: usize, a: u64, d: u64) -> f64 {
        let key = (i, j, a, d);
        if let Some(v) = self.bw.get(&key) {
            return *v;
        }
        let best = self
            .b_options(i, j, a, d)
            .iter()
            .map(|o| o.0)
            .fold(f64::INFINITY, f64::min);
        self.bw.insert(key, best);
        best
    }

    fn emit_f(&mut self, i: usize, x: u8, a: u64, df: u64, db: u64, s: &mut Sequence) {
        let want = self.oc(i, x, a, df, db);
        let (_, ch) = self
            .f_options(i, x, a, df, db)
            .into_iter()
            .find(|o| o.0 == want)
            .expect("finite state has an argmin");
        let c = self.c;
        let ii = self.input(i, x);
        let offload = |s: &mut Sequence| {
            s.offload_after_last(c.a_id(i - 1));
            if x == 1 {
                s.offload_after_last(c.s_id(i - 1));
            }
        };
        // Recompute the transfer volumes exactly as in f_options.
        match ch {
            FChoice::Loss => {
                s.f_all(c, i);
                s.b(c, i);
            }
            FChoice::All { v } => {
                let (uf, ub) = (self.dm.u_f[i] as f64, self.dm.u_b[i] as f64);
                let dl = self.dj(self.dm.l, true);
                let (mf, mb) = (self.m_fall(i, i, dl), self.m_b(i, i));
                let ef = self.eps(mf - self.m + a as i64 + df as i64 + ii as i64);
                let eb = self.eps(mb - self.m + a as i64 + db as i64 + ii as i64);
                let (dfv, dbv) = (self.vol(uf + ef), self.vol(ub + eb));
                let (a2, df2, db2) = self.next_state(v, a, df, db, ii, dfv, dbv);
                s.f_all(c, i);
                if v == 1 {
                    offload(s);
                }
                self.emit_f(i + 1, 1, a2, df2, db2, s);
                s.b(c, i);
            }
            FChoice::Ck { j, v } => {
                let dl = self.dj(self.dm.l, true);
                let mut fsum = 0.0;
                let mut peak = i64::MIN;
                for k in i..=j {
                    let mk = self.m_f0(i, k, dl);
                    peak = peak.max(mk - (fsum * self.beta / self.sl.slot as f64).floor() as i64);
                    fsum += self.dm.u_f[k] as f64;
                }
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
        let want = self.c_delta(i, j, a, d);
        let (_, ch) = self
            .b_options(i, j, a, d)
            .into_iter()
            .find(|o| o.0 == want)
            .expect("finite state has an argmin");
        let c = self.c;
        match ch {
            BChoice::Base => {
                s.f_all(c, i);
                s.b(c, i);
            }
            BChoice::All => {
                let ub = self.dm.u_b[i] as f64;
                let eb = self.eps(self.m_b(i, i) - self.m + a as i64 + d as i64);
                let d1 = d.saturating_sub(self.vol(ub + eb));
                s.f_all(c, i);
                self.emit_b(i + 1, j, a + self.sl.abar(i), d1, s);
                s.b(c, i);
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
