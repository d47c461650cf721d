//! `rotor`: the persistent rematerialisation DP (Beaumont et al.; rotor's
//! `persistent.compute_table`), no offloading, with memory counted exactly as
//! offcert's semantics count it for the sequence it outputs.
//!
//! C(i, j, m): least compute time to run layers i..=j (forwards and backwards),
//! with a_{i-1} stored outside the m slots and δ_j (none for the loss) held
//! inside them at the start; at the end only δ_{i-1} is held. Choices:
//! - F^i_all, then C(i+1, j, m − |ā_i|), then B_i
//!   (peaks δ_j + ā_i + o_f and δ_i + ā_i + δ_{i-1} + o_b);
//! - F^i_ck, F^{i+1..k}_∅ (each dropping its input at its end), then
//!   C(k+1, j, m − |a_k|), delete a_k after B_{k+1}, then C(i, k, m)
//!   (peaks δ_j + a_i + o_f_i and δ_j + a_{h-1} + a_h + o_f_h), i ≤ k < j;
//! - i = j: F^i_all then B_i.
//!
//! The answer is C(1, L+1, ⌊M/slot⌋ − ⌈|a_0|/slot⌉): layer L+1 is the loss.
//!
//! Owns: the `rotor` persistent DP.
//! Must not import: exact solvers, traces, reports, the CLI.

use super::{chain, Sequence, Slots, DEFAULT_SLOTS};
use crate::family::remat_chain::{Dims, RematChain};
use crate::family::InstanceFile;
use crate::heuristic::{Heuristic, HeuristicError};
use crate::model::Instance;
use crate::schedule::Schedule;
use crate::simulate::asap_sequence;

const INF: i64 = i64::MAX / 4;

#[derive(Clone, Debug)]
pub struct Rotor {
    pub slots: u64,
}

impl Default for Rotor {
    fn default() -> Self {
        Rotor {
            slots: DEFAULT_SLOTS,
        }
    }
}

/// The filled table and what the reconstruction needs.
pub struct Table {
    l1: usize,
    budget: usize,
    cost: Vec<i64>,
    pub sl: Slots,
    pub dm: Dims,
}

impl Table {
    fn ix(&self, i: usize, j: usize, m: usize) -> usize {
        ((i - 1) * self.l1 + (j - 1)) * (self.budget + 1) + m
    }
    pub fn get(&self, i: usize, j: usize, m: i64) -> i64 {
        if m < 0 {
            return INF;
        }
        let m = (m as usize).min(self.budget);
        self.cost[self.ix(i, j, m)]
    }
    /// The DP's value for the whole chain, or `None` when nothing fits.
    pub fn value(&self) -> Option<i64> {
        let v = self.get(1, self.l1, self.top());
        (v < INF).then_some(v)
    }
    fn top(&self) -> i64 {
        self.sl.budget as i64 - self.sl.a[0] as i64
    }

    fn fall_peak(&self, i: usize, j: usize) -> (i64, i64) {
        let s = &self.sl;
        let f = s.d[j] + s.abar(i) + s.o_f[i];
        let b = s.d[i] + s.abar(i) + s.d[i - 1] + s.o_b[i];
        (f as i64, b as i64)
    }
    /// Peak of F^i_ck, F^{i+1..k}_∅ with δ_j held.
    fn run_peak(&self, i: usize, j: usize, k: usize) -> i64 {
        let s = &self.sl;
        let mut p = s.d[j] + s.a[i] + s.o_f[i];
        for h in i + 1..=k {
            p = p.max(s.d[j] + s.a[h - 1] + s.a[h] + s.o_f[h]);
        }
        p as i64
    }

    /// Cost of each choice at (i, j, m): `None` = F_all first, `Some(k)` = checkpoint a_k.
    fn options(&self, i: usize, j: usize, m: i64) -> Vec<(i64, Option<usize>)> {
        let dm = &self.dm;
        let mut out = Vec::new();
        let (pf, pb) = self.fall_peak(i, j);
        if pf <= m && pb <= m {
            let rest = if i == j {
                0
            } else {
                self.get(i + 1, j, m - self.sl.abar(i) as i64)
            };
            if rest < INF {
                out.push((dm.u_f[i] + rest + dm.u_b[i], None));
            }
        }
        let mut fsum = 0;
        for k in i..j {
            fsum += dm.u_f[k];
            if self.run_peak(i, j, k) > m {
                break; // the run only grows with k
            }
            let right = self.get(k + 1, j, m - self.sl.a[k] as i64);
            let left = self.get(i, k, m);
            if right < INF && left < INF {
                out.push((fsum + right + left, Some(k)));
            }
        }
        out
    }

    /// Fill the whole table (O(L³·S)).
    pub fn build(c: &RematChain, slots: u64) -> Table {
        let dm = c.dims();
        let sl = Slots::new(c, &dm, slots);
        let l1 = dm.l + 1;
        let budget = sl.budget as usize;
        let mut t = Table {
            l1,
            budget,
            cost: vec![INF; l1 * l1 * (budget + 1)],
            sl,
            dm,
        };
        for len in 0..l1 {
            for i in 1..=l1 - len {
                let j = i + len;
                for m in 0..=budget {
                    let best = t
                        .options(i, j, m as i64)
                        .into_iter()
                        .map(|o| o.0)
                        .min()
                        .unwrap_or(INF);
                    let ix = t.ix(i, j, m);
                    t.cost[ix] = best;
                }
            }
        }
        t
    }

    /// The op sequence achieving C(i, j, m).
    pub fn sequence(&self, c: &RematChain) -> Option<Sequence> {
        self.value()?;
        let mut s = Sequence::default();
        self.emit(c, 1, self.l1, self.top(), &mut s);
        Some(s)
    }

    fn emit(&self, c: &RematChain, i: usize, j: usize, m: i64, s: &mut Sequence) {
        let want = self.get(i, j, m);
        let (_, choice) = self
            .options(i, j, m)
            .into_iter()
            .find(|o| o.0 == want)
            .expect("a finite entry has an option achieving it");
        match choice {
            None => {
                s.f_all(c, i);
                if i < j {
                    self.emit(c, i + 1, j, m - self.sl.abar(i) as i64, s);
                }
                s.b(c, i);
            }
            Some(k) => {
                s.f_keep(c, i);
                for h in i + 1..=k {
                    s.f_drop(c, h);
                }
                self.emit(c, k + 1, j, m - self.sl.a[k] as i64, s);
                s.delete_after_last(c.a_id(k));
                self.emit(c, i, k, m, s);
            }
        }
    }
}

impl Heuristic for Rotor {
    fn name(&self) -> &'static str {
        "rotor"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        matches!(file, InstanceFile::RematChain(_))
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        let c = chain(self.name(), file)?;
        let t = Table::build(c, self.slots);
        let seq = t.sequence(c).ok_or_else(|| HeuristicError::NoSchedule {
            heuristic: "rotor",
            reason: format!(
                "no rematerialisation sequence fits in {} slots of {} B",
                t.sl.budget, t.sl.slot
            ),
        })?;
        asap_sequence(inst, &seq.plan).map_err(|e| HeuristicError::NoSchedule {
            heuristic: "rotor",
            reason: format!("plan not realisable: {e}"),
        })
    }
}
