//! `rotor`: the persistent rematerialisation DP (Beaumont et al.; rotor's
//! `persistent.compute_table`), no offloading, with memory counted exactly as
//! offcert's semantics count it for the sequence it outputs.
//!
//! C(i, j, m): least compute time to run layers i..=j (forwards and backwards),
//! with a_{i-1} stored outside the m slots and δ_j (none for the loss) held
//! inside them at the start; at the end only δ_{i-1} is held. Choices:
//! - F^i_all with option k, then C(i+1, j, m − |ā_i,k|), then B_i with the same
//!   option k (peaks δ_j + ā_i,k + o_f,k and δ_i + ā_i,k + δ_{i-1} + o_b,k);
//! - F^i_ck, F^{i+1..k}_∅ (each dropping its input at its end; the fast forward
//!   `F{h}`, duration u_FF(h), scratch o_FF(h)), then C(k+1, j, m − |a_k|),
//!   delete a_k after B_{k+1}, then C(i, k, m)
//!   (peaks δ_j + a_i + o_FF_i and δ_j + a_{h-1} + a_h + o_FF_h), i ≤ k < j;
//! - i = j: F^i_all then B_i, with the same option k.
//!
//! Several options per block (rockmate's `RK_Chain`, `layers[ℓ].options`): as
//! rockmate's own rotor DP (`rotor_solver.psolve_dp_functional`, "solution 2"),
//! the F_all choice takes the least over the block's options k of its cost with
//! that option's u_F, u_B, |ā|, o_f, o_b, and the reconstruction runs
//! `Fall{i}.{k}` and `B{i}.{k}` for that k. One option per block and no
//! distinct fast forward: the same table as before options existed.
//!
//! The answer is C(1, L+1, ⌊M/slot⌋ − ⌈|a_0|/slot⌉): layer L+1 is the loss.
//!
//! Owns: the `rotor` persistent DP.
//! Must not import: exact solvers, traces, reports, the CLI.

use super::{chain_any, Sequence, SlotOption, Slots, DEFAULT_SLOTS};
use crate::family::remat_chain::{Dims, RematChain};
use crate::family::InstanceFile;
use crate::heuristic::{Heuristic, HeuristicError};
use crate::model::Instance;
use crate::schedule::Schedule;
use crate::simulate::asap_sequence;
use std::sync::Mutex;

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
    /// Per layer ℓ = 1..=L+1 (entry ℓ; entry 0 empty): its options.
    opts: Vec<Vec<SlotOption>>,
    /// Per layer ℓ = 1..=L (entry ℓ): the fast forward `F{ℓ}`'s duration and
    /// scratch in slots (u_F, o_f of option 0 unless the file sets them apart).
    ff: Vec<(i64, u64)>,
}

/// A choice at (i, j, m).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Choice {
    /// F^i_all with option k first.
    All(usize),
    /// F^i_ck, F^{i+1..k}_∅: checkpoint a_k.
    Ck(usize),
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

    /// |ā_i| of option `o`, in slots.
    fn abar(&self, i: usize, o: &SlotOption) -> u64 {
        self.sl.a[i] + o.s
    }
    fn fall_peak(&self, i: usize, j: usize, o: &SlotOption) -> (i64, i64) {
        let s = &self.sl;
        let f = s.d[j] + self.abar(i, o) + o.o_f;
        let b = s.d[i] + self.abar(i, o) + s.d[i - 1] + o.o_b;
        (f as i64, b as i64)
    }
    /// Peak of F^i_ck, F^{i+1..k}_∅ with δ_j held.
    fn run_peak(&self, i: usize, j: usize, k: usize) -> i64 {
        let s = &self.sl;
        let mut p = s.d[j] + s.a[i] + self.ff[i].1;
        for h in i + 1..=k {
            p = p.max(s.d[j] + s.a[h - 1] + s.a[h] + self.ff[h].1);
        }
        p as i64
    }

    /// Cost of each choice at (i, j, m): every option of F^i_all first (in
    /// option order), then every checkpoint a_k.
    fn options(&self, i: usize, j: usize, m: i64) -> Vec<(i64, Choice)> {
        let mut out = Vec::new();
        for (k, o) in self.opts[i].iter().enumerate() {
            let (pf, pb) = self.fall_peak(i, j, o);
            if pf > m || pb > m {
                continue;
            }
            let rest = if i == j {
                0
            } else {
                self.get(i + 1, j, m - self.abar(i, o) as i64)
            };
            if rest < INF {
                out.push((o.u_f + rest + o.u_b, Choice::All(k)));
            }
        }
        let mut fsum = 0;
        for k in i..j {
            fsum += self.ff[k].0;
            if self.run_peak(i, j, k) > m {
                break; // the run only grows with k
            }
            let right = self.get(k + 1, j, m - self.sl.a[k] as i64);
            let left = self.get(i, k, m);
            if right < INF && left < INF {
                out.push((fsum + right + left, Choice::Ck(k)));
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
        let (opts, ff) = super::slot_options(c, &dm, &sl);
        let mut t = Table {
            l1,
            budget,
            cost: vec![INF; l1 * l1 * (budget + 1)],
            sl,
            dm,
            opts,
            ff,
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

    /// The op sequence of the table read at a smaller memory `m` (bytes): the
    /// same slots, budget ⌊m/slot⌋ (the table must have been built over at
    /// least `m`); `None` when nothing fits.
    pub fn sequence_within(&self, c: &RematChain, m: u64) -> Option<Sequence> {
        let top = (m / self.sl.slot).min(self.sl.budget) as i64 - self.sl.a[0] as i64;
        if self.get(1, self.l1, top) >= INF {
            return None;
        }
        let mut s = Sequence::default();
        self.emit(c, 1, self.l1, top, &mut s);
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
            Choice::All(k) => {
                // The backward runs the option its forward saved.
                let o = &self.opts[i][k];
                s.push(o.fall);
                if i < j {
                    self.emit(c, i + 1, j, m - self.abar(i, o) as i64, s);
                }
                s.push(o.b);
            }
            Choice::Ck(k) => {
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
        let c = chain_any(self.name(), file)?;
        let dp = plan(c, self.slots)
            .map_err(|reason| HeuristicError::NoSchedule {
                heuristic: "rotor",
                reason,
            })
            .and_then(|seq| {
                asap_sequence(inst, &seq.plan).map_err(|e| HeuristicError::NoSchedule {
                    heuristic: "rotor",
                    reason: format!("plan not realisable: {e}"),
                })
            });
        // The slots round sizes up and the budget down, so at the peak itself
        // the DP finds nothing although keeping everything fits: offer the
        // keep-everything sequence too when the simulator can realise it in
        // this memory, and take the shorter.
        let keep = asap_sequence(inst, &super::keep_everything(c).plan).ok();
        Ok(match (dp, keep) {
            (Ok(s), Some(k)) if makespan(&k) < makespan(&s) => k,
            (Ok(s), _) => s,
            (Err(_), Some(k)) => k,
            (Err(e), None) => return Err(e),
        })
    }
}

/// Rotor's sequence for `c` at `slots` (or why there is none), from the
/// table; the last [`SHARED_PLANS`] answers are kept for the process, so
/// that `pofo-as-run`, which realises rotor's plan as its fallback, does not
/// fill the table a second time in the same gap row (5 s of CPU on a
/// DenseNet-201 row).
fn plan(c: &RematChain, slots: u64) -> Result<Sequence, String> {
    type Plans = Vec<(u64, RematChain, Result<Sequence, String>)>;
    static SHARED: Mutex<Plans> = Mutex::new(Vec::new());
    let shared = || SHARED.lock().unwrap_or_else(|e| e.into_inner());
    let hit = shared()
        .iter()
        .find(|(s, chain, _)| *s == slots && chain == c)
        .map(|x| x.2.clone());
    hit.unwrap_or_else(|| {
        let t = Table::build(c, slots);
        let seq = t.sequence(c).ok_or_else(|| {
            format!(
                "no rematerialisation sequence fits in {} slots of {} B",
                t.sl.budget, t.sl.slot
            )
        });
        let mut v = shared();
        if v.len() >= SHARED_PLANS {
            drop(v.remove(0));
        }
        v.push((slots, c.clone(), seq.clone()));
        seq
    })
}

/// How many of rotor's answers [`plan`] keeps (a few rows of `offcert gap
/// --jobs N`).
const SHARED_PLANS: usize = 4;

/// The last event end of a realised schedule.
fn makespan(s: &Schedule) -> crate::units::Ticks {
    s.events
        .iter()
        .map(|e| e.end())
        .max()
        .unwrap_or(crate::units::Ticks(0))
}
