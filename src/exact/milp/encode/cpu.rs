//! The rows of the ops on the CPU (cyclic instances, `models/MILP.md` §"CPU
//! ops", `proofs/EXACTNESS.md` §3.12): the CPU stream, the host-updated
//! tensors' forced eviction after the update, and the host inputs' offload,
//! lap and delete. Each block names the rule of `models/MODEL.md` it encodes.
//!
//! Owns: [`InputVars`] and the CPU blocks of the builder.
//!
//! Must not import: bounds, heuristics, traces, reports, the CLI.

use super::{Builder, Starts, TooShort};
use crate::exact::milp::structure::Anchor;
use crate::lp::{Lin, Var};

/// A host input's columns: its offload's start and its delete (unrolled
/// instants). (Its lap binary, 1 when the CPU op reads the value produced in
/// the period before, follows from the starts and is not decoded.)
#[derive(Clone, Debug)]
pub struct InputVars {
    pub offload: Starts,
    pub release: Starts,
}

impl Builder<'_> {
    /// "CPU op `c` has ended by unrolled instant u", its run shifted by
    /// `shift` periods.
    fn cpu_ended(&self, c: usize, u: i64, shift: i64) -> Lin {
        self.cpu[c].cum(u - self.st.cpu.dur[c] - shift * self.p)
    }

    /// CPU op starts (R2, R4, R8): each CPU op once, in [0, P − d] (compute
    /// lies in [0, P]; a CPU op lasts at least one tick), one at a time, in
    /// the CPU order.
    pub(super) fn cpu_starts(&mut self) -> Result<(), TooShort> {
        let dur = &self.st.cpu.dur;
        let m = dur.len();
        let mut before = 0;
        for c in 0..m {
            let after: i64 = dur[c..].iter().sum();
            let (es, ls) = (before, self.p - after);
            if ls < es {
                return Err(TooShort);
            }
            let s = Starts::new(&mut self.lp, &format!("c_{c}"), es, ls);
            let mut l = Lin::new();
            l.add_all(&s.vars, 1);
            self.lp.eq(format!("R8_cpu_once_{c}"), &l, 1);
            self.cpu.push(s);
            before += dur[c];
        }
        for c in 1..m {
            for u in self.cpu[c].lo..=self.cpu[c].hi() {
                let mut l = self.cpu[c].cum(u);
                l.add_lin(&self.cpu[c - 1].cum(u - dur[c - 1]), -1);
                self.lp.le(format!("R2_cpu_order_{c}_{u}"), &l, 0);
            }
        }
        Ok(())
    }

    /// Host-updated tensors (R1 at GPU readers, R3): the CPU op's end (shifted
    /// by `shift` periods) falls in exactly one window (S_a, S_b] of the
    /// tensor's GPU reads (λ = 1); that window evicts the stale copy and its
    /// prefetch starts at or after the update, so that the reader b finds
    /// the latest version. The CPU copy is current throughout (no GPU op
    /// writes the tensor), so no offload is needed (R6).
    pub(super) fn host_updates(&mut self) -> Result<(), TooShort> {
        let st = self.st;
        for (i, by) in st.cpu.updated_by.iter().enumerate() {
            let Some(c) = *by else { continue };
            let Some(ep) = st.epochs.iter().find(|e| e.tensor.ix() == i) else {
                return Err(TooShort);
            };
            let mut sum = Lin::new();
            for &wi in &ep.windows {
                if self.windows[wi].is_none() {
                    continue; // no eviction fits this window in this frame
                }
                let w = &st.windows[wi];
                let Anchor::Read(a) = w.from else {
                    continue; // persistent windows start at a read
                };
                for shift in 0..=(w.to / self.n) as i64 {
                    let lam = self.lp.binary(format!("lam_{i}_{wi}_{shift}"));
                    sum.add(lam, 1);
                    self.update_in_window(wi, a, c, shift, lam);
                }
            }
            if sum.terms.is_empty() {
                return Err(TooShort); // the update cannot reach the GPU copy
            }
            self.lp.eq(format!("R1_update_window_{i}"), &sum, 1);
        }
        Ok(())
    }

    /// The rows of one λ: the update lies in (S_a, S_b] of window `wi`, which
    /// then evicts and prefetches after the update.
    fn update_in_window(&mut self, wi: usize, a: usize, c: usize, shift: i64, lam: Var) {
        let st = self.st;
        let b = st.windows[wi].to;
        let wv = self.windows[wi].clone().expect("a live window");
        let mut l = Lin::new();
        l.add(lam, 1);
        l.add(wv.z, -1);
        self.lp.le(format!("R1_update_evicts_{wi}_{shift}"), &l, 0);
        // R1/R3: the prefetch carries the CPU copy at its start (MODEL.md
        // §2.3); an update ending at that instant comes first (§2.4).
        for u in wv.prefetch.lo..=wv.prefetch.hi() {
            let mut l = wv.prefetch.cum(u);
            l.add_lin(&self.cpu_ended(c, u, shift), -1);
            l.add(lam, 1);
            self.lp
                .le(format!("R1_prefetch_after_update_{wi}_{shift}_{u}"), &l, 1);
        }
        let dc = st.cpu.dur[c];
        let (lo, hi) = (self.cpu[c].lo + dc, self.cpu[c].hi() + dc);
        for u in lo + shift * self.p..=hi + shift * self.p {
            // After a's start: a read the old version (an update ending at
            // S_a comes before a's start, §2.4, and belongs to the window before).
            let mut l = self.cpu_ended(c, u, shift);
            l.add_lin(&self.op_cum(a, u - 1), -1);
            l.add(lam, 1);
            self.lp
                .le(format!("R1_update_after_read_{wi}_{shift}_{u}"), &l, 1);
        }
        for u in self.op_lo(b)..=self.op_hi(b) {
            // By b's start.
            let mut l = self.op_cum(b, u);
            l.add_lin(&self.cpu_ended(c, u, shift), -1);
            l.add(lam, 1);
            self.lp
                .le(format!("R1_update_before_reader_{wi}_{shift}_{u}"), &l, 1);
        }
    }

    /// Host inputs (R1 on the CPU, R3, R6): one offload of the value the CPU
    /// op reads, after its production ends and ending by the CPU op's start
    /// (in this period, lap 0, or the next, lap 1); the GPU copy deleted after
    /// the offload ends and before the next production starts.
    pub(super) fn host_inputs(&mut self) -> Result<(), TooShort> {
        let st = self.st;
        for (j, inp) in st.cpu.inputs.iter().enumerate() {
            let (i, pb, c) = (inp.tensor.ix(), inp.producer, inp.reader);
            let (d, db, p) = (st.dt[i], st.dur[pb], self.p);
            let prod = self.ops[pb].clone();
            let cpu = self.cpu[c].clone();
            let (olo, ohi) = (prod.lo + db, (cpu.hi() + p - d).min(self.umax));
            let (rlo, rhi) = (olo + d, prod.hi() + p);
            if d > p || olo > ohi || rlo > rhi {
                return Err(TooShort);
            }
            let offload = Starts::new(&mut self.lp, &format!("go_{j}"), olo, ohi);
            let release = Starts::new(&mut self.lp, &format!("gr_{j}"), rlo, rhi);
            let lap = self.lp.binary(format!("glap_{j}"));
            self.lp
                .eq(format!("R6_input_offload_once_{j}"), &offload.cum(ohi), 1);
            self.lp
                .eq(format!("R6_input_delete_once_{j}"), &release.cum(rhi), 1);
            for u in olo..=ohi {
                // R3: an offload needs a present copy: after the producer's end.
                let mut l = offload.cum(u);
                l.add_lin(&prod.cum(u - db), -1);
                self.lp
                    .le(format!("R3_input_offload_after_production_{j}_{u}"), &l, 0);
            }
            for u in cpu.lo..=cpu.hi() {
                // R1 (CPU), lap 0: the offload has ended by the CPU op's start …
                let mut l = cpu.cum(u);
                l.add_lin(&offload.cum(u - d), -1);
                l.add(lap, -1);
                self.lp.le(format!("R1_cpu_input_lap0_{j}_{u}"), &l, 0);
                // … and the value is this period's: E_b ≤ S_c.
                let mut l = cpu.cum(u);
                l.add_lin(&prod.cum(u - db), -1);
                l.add(lap, -1);
                self.lp.le(format!("R1_cpu_input_current0_{j}_{u}"), &l, 0);
                // Lap 1: by the CPU op's start one period later …
                let mut l = cpu.cum(u);
                l.add_lin(&offload.cum(u + p - d), -1);
                l.add(lap, 1);
                self.lp.le(format!("R1_cpu_input_lap1_{j}_{u}"), &l, 1);
            }
            for u in prod.lo + db..=prod.hi() + db {
                // … and the period before's value is the latest: S_c < E_b.
                let mut l = prod.cum(u - db);
                l.add_lin(&cpu.cum(u - 1), -1);
                l.add(lap, 1);
                self.lp.le(format!("R1_cpu_input_current1_{j}_{u}"), &l, 1);
            }
            for u in rlo..=rhi {
                // R6: the delete follows the offload's end (the CPU copy is
                // then current; the offload pins its source until then, R10).
                let mut l = release.cum(u);
                l.add_lin(&offload.cum(u - d), -1);
                self.lp
                    .le(format!("R6_input_delete_after_offload_{j}_{u}"), &l, 0);
            }
            for u in prod.lo + p..=prod.hi() + p {
                // R1: the next production finds no GPU copy.
                let mut l = prod.cum(u - p);
                l.add_lin(&release.cum(u), -1);
                self.lp
                    .le(format!("R1_input_deleted_before_production_{j}_{u}"), &l, 0);
            }
            self.inputs.push(InputVars { offload, release });
        }
        Ok(())
    }

    /// The host inputs' GPU memory at slot s (R7): held over [S_b, r), which
    /// lies in [0, 2P) and lasts at most P; S_b < P ≤ s + P always.
    pub(super) fn host_input_memory(&self, s: i64) -> Lin {
        let st = self.st;
        let mut l = Lin::new();
        for (inp, v) in st.cpu.inputs.iter().zip(&self.inputs) {
            let sz = st.size[inp.tensor.ix()];
            l.add_lin(&self.ops[inp.producer].cum(s), sz);
            l.add_lin(&v.release.cum(s), -sz);
            l.konst(sz);
            l.add_lin(&v.release.cum(s + self.p), -sz);
        }
        l
    }
}
