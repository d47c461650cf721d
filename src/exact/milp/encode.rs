//! The time-indexed model for one horizon H (one-shot: every event within
//! [0, H]) or one period P (cyclic), following `models/MILP.md`. Each block of
//! constraints names the rule of `models/MODEL.md` it encodes.
//!
//! Owns: [`Encoding`] (the model and the map from its columns back to events).
//!
//! Must not import: bounds, heuristics, traces, reports, the CLI.

mod cpu;

use super::structure::{Anchor, Base, Release, Structure, UPos};
use crate::lp::{Lin, Lp, Var};
pub use cpu::InputVars;
use std::collections::BTreeMap;

/// Time-indexed start variables of one event kind: `vars[u - lo]` is 1 iff it
/// starts at (unrolled) instant `u`; `cums[u - lo]` is the continuous column
/// Σ_{u' ≤ u} vars(u') (equal to it by a linking row), so that every
/// "started by u" term costs one nonzero.
#[derive(Clone, Debug)]
pub struct Starts {
    pub lo: i64,
    pub vars: Vec<Var>,
    pub cums: Vec<Var>,
}

impl Starts {
    pub fn new(lp: &mut Lp, name: &str, lo: i64, hi: i64) -> Starts {
        let vars: Vec<Var> = (lo..=hi)
            .map(|u| lp.binary(format!("{name}_{u}")))
            .collect();
        let mut cums: Vec<Var> = Vec::with_capacity(vars.len());
        for (i, v) in vars.iter().enumerate() {
            let c = lp.continuous(format!("c{name}_{}", lo + i as i64), 0, 1);
            let mut l = Lin::new();
            l.add(c, 1);
            l.add(*v, -1);
            if i > 0 {
                l.add(cums[i - 1], -1);
            }
            lp.eq(format!("cum_{name}_{}", lo + i as i64), &l, 0);
            cums.push(c);
        }
        Starts { lo, vars, cums }
    }
    pub fn hi(&self) -> i64 {
        self.lo + self.vars.len() as i64 - 1
    }
    /// "Started by instant u".
    pub fn cum(&self, u: i64) -> Lin {
        let mut l = Lin::new();
        let last = (u - self.lo).min(self.vars.len() as i64 - 1);
        if last >= 0 {
            l.add(self.cums[last as usize], 1);
        }
        l
    }
    /// Σ u·var(u): the start instant (0 when the event does not happen).
    pub fn time(&self) -> Lin {
        let mut l = Lin::new();
        for (i, v) in self.vars.iter().enumerate() {
            l.add(*v, self.lo + i as i64);
        }
        l
    }
    /// The chosen instant in a solution.
    pub fn value(&self, x: &[f64]) -> Option<i64> {
        self.vars
            .iter()
            .position(|v| x[v.0] > 0.5)
            .map(|i| self.lo + i as i64)
    }
}

#[derive(Clone, Debug)]
pub struct WindowVars {
    pub z: Var,
    pub release: Starts,
    pub prefetch: Starts,
}

/// The model and everything the decoder needs.
pub struct Encoding {
    pub lp: Lp,
    /// H (one-shot) or P (cyclic).
    pub len: i64,
    pub ops: Vec<Starts>,
    /// Per window; `None` when the window cannot hold an eviction in this frame.
    pub windows: Vec<Option<WindowVars>>,
    /// Per epoch that needs an offload and has a possible window.
    pub offloads: Vec<Option<Starts>>,
    /// Per tensor freed at the end of a reader lasting ≥ 2 ticks: when its
    /// allocation ends (any instant after that reader's start: once its last
    /// reader has started the tensor is dead, and a delete may free it early).
    pub frees: Vec<Option<Starts>>,
    /// CPU op starts, by position on the CPU stream.
    pub cpu: Vec<Starts>,
    /// Per host input (`Structure::cpu.inputs`): its offload and its delete.
    pub inputs: Vec<InputVars>,
}

/// Why no model was built: the frame is too short for the ops alone.
pub struct TooShort;

/// The model under construction: the structure, the frame and every column
/// family built so far. One method per block of rows, named after the rules it
/// encodes; [`Encoding::build`] calls them in a fixed order (columns and rows
/// are numbered in creation order).
struct Builder<'a> {
    st: &'a Structure,
    len: i64,
    /// P (cyclic) or 0 (one-shot).
    p: i64,
    cyc: bool,
    n: usize,
    /// The last unrolled instant a release may sit at.
    umax: i64,
    lp: Lp,
    ops: Vec<Starts>,
    windows: Vec<Option<WindowVars>>,
    offloads: Vec<Option<Starts>>,
    frees: Vec<Option<Starts>>,
    cpu: Vec<Starts>,
    inputs: Vec<InputVars>,
}

impl Encoding {
    pub fn build(st: &Structure, len: i64, optimise: bool) -> Result<Encoding, TooShort> {
        let cyc = st.cyclic;
        let p = if cyc { len } else { 0 };
        let mut b = Builder {
            st,
            len,
            p,
            cyc,
            n: st.n(),
            umax: if cyc { 2 * p - 1 } else { len },
            lp: Lp::default(),
            ops: Vec::new(),
            windows: vec![None; st.windows.len()],
            offloads: vec![None; st.epochs.len()],
            frees: vec![None; st.base.len()],
            cpu: Vec::new(),
            inputs: Vec::new(),
        };
        b.op_starts()?;
        b.cpu_starts()?;
        b.early_frees();
        for e in 0..st.epochs.len() {
            b.epoch(e);
        }
        b.host_updates()?;
        b.host_inputs()?;
        b.channels();
        b.memory_per_slot()?;
        b.memory_at_zero_duration_ops()?;
        if optimise && !cyc {
            let mut obj = b.ops[b.n - 1].time();
            obj.konst(st.dur[b.n - 1]);
            b.lp.objective = obj;
        }
        Ok(Encoding {
            lp: b.lp,
            len,
            ops: b.ops,
            windows: b.windows,
            offloads: b.offloads,
            frees: b.frees,
            cpu: b.cpu,
            inputs: b.inputs,
        })
    }
}

impl Builder<'_> {
    /// "Op at unrolled position q has started by unrolled instant u".
    fn op_cum(&self, q: UPos, u: i64) -> Lin {
        let (k, lap) = (q % self.n, (q / self.n) as i64);
        self.ops[k].cum(u - lap * self.p)
    }
    fn op_lo(&self, q: UPos) -> i64 {
        self.ops[q % self.n].lo + (q / self.n) as i64 * self.p
    }
    fn op_hi(&self, q: UPos) -> i64 {
        self.ops[q % self.n].hi() + (q / self.n) as i64 * self.p
    }
    /// A zero-duration reader in the first lap may sit at P (R8).
    fn at_boundary(&self, a: UPos) -> bool {
        self.cyc && a < self.n && self.st.dur[a] == 0 && self.ops[a].hi() >= self.p
    }

    /// Op starts (R2, R4, R8): each op once, on one stream, in the fixed order.
    fn op_starts(&mut self) -> Result<(), TooShort> {
        let (st, n, len) = (self.st, self.n, self.len);
        let total: i64 = st.dur.iter().sum();
        if total > len {
            return Err(TooShort);
        }
        let mut before = 0;
        for k in 0..n {
            let after: i64 = st.dur[k..].iter().sum();
            let es = before;
            // Cyclic: compute lies in [0, P] (R8): a positive-duration op starts
            // in [0, P); a zero-duration op may start at P when only
            // zero-duration ops follow it (it belongs to the period that ends,
            // models/MODEL.md R8). By rotation, the first op starts at 0 —
            // unless the last op lasts zero ticks: then a rotation may move a
            // boundary instant (zero-duration ops at P, then time-0 deletes)
            // inside the period, where deletes come first, and lose the optimum
            // (proofs/EXACTNESS.md §3.7; instances/regressions/milp/r8-boundary-delete.json).
            // With ops on the CPU a CPU op may run across the first GPU op's
            // start: no rotation is assumed (proofs/EXACTNESS.md §3.12).
            let ls = if self.cyc && k == 0 && st.dur[n - 1] > 0 && st.cpu.n() == 0 {
                0
            } else {
                len - after
            };
            if ls < es {
                return Err(TooShort);
            }
            let s = Starts::new(&mut self.lp, &format!("s_{k}"), es, ls);
            self.ops.push(s);
            before += st.dur[k];
        }
        for k in 0..n {
            let mut l = Lin::new();
            l.add_all(&self.ops[k].vars, 1);
            self.lp.eq(format!("R8_once_{k}"), &l, 1);
        }
        // R2/R8: one stream, the fixed order: S_k ≥ S_{k-1} + d_{k-1}.
        for k in 1..n {
            for u in self.ops[k].lo..=self.ops[k].hi() {
                let mut l = self.ops[k].cum(u);
                l.add_lin(&self.ops[k - 1].cum(u - st.dur[k - 1]), -1);
                self.lp.le(format!("R2_order_{k}_{u}"), &l, 0);
            }
        }
        Ok(())
    }

    /// Early frees (R6, R1, R7), under the relaxation only (`release:
    /// after_start`: R1 checks inputs at an op's start, so R6 allows deleting a
    /// tensor once its last reader has started; the freeing op's end is only
    /// the latest such instant). Under the default rule R10 the freeing op
    /// holds the tensor until it ends, and the static release at its end is
    /// the only one.
    fn early_frees(&mut self) {
        let st = self.st;
        if st.after_end {
            return;
        }
        for (i, b) in st.base.iter().enumerate() {
            let f = match *b {
                Base::Initial(Some(Release::Freed(f)))
                | Base::Produced(_, Some(Release::Freed(f))) => f,
                _ => continue,
            };
            if st.dur[f] < 2 || st.size[i] == 0 {
                continue;
            }
            let (lo, hi) = (self.ops[f].lo + 1, self.ops[f].hi() + st.dur[f]);
            let q = Starts::new(&mut self.lp, &format!("f_{i}"), lo, hi);
            let mut l = q.cum(q.hi());
            self.lp.eq(format!("R6_free_once_{i}"), &l, 1);
            for u in q.lo..=q.hi() {
                // After the reader's start (releases precede starts at an instant) …
                l = q.cum(u);
                l.add_lin(&self.ops[f].cum(u - 1), -1);
                self.lp
                    .le(format!("R1_free_after_last_read_{i}_{u}"), &l, 0);
                // … and by its end at the latest.
                l = self.ops[f].cum(u - st.dur[f]);
                l.add_lin(&q.cum(u), -1);
                self.lp.le(format!("R7_freed_by_end_{i}_{u}"), &l, 0);
            }
            self.frees[i] = Some(q);
        }
    }

    /// One epoch of a tensor (R1, R3, R5, R6): its windows, then the offload
    /// its evictions need.
    fn epoch(&mut self, e: usize) {
        let st = self.st;
        let ep = &st.epochs[e];
        let d = st.dt[ep.tensor.ix()];
        if self.cyc && d > self.p {
            return; // a transfer longer than the period overlaps itself (R2)
        }
        let ready_lo = ep
            .ready
            .map(|m| self.op_lo(m) + st.dur[m % self.n])
            .unwrap_or(0);
        let live: Vec<usize> = ep
            .windows
            .iter()
            .filter(|&&wi| self.window(wi, ep.needs_offload, ready_lo, d))
            .copied()
            .collect();
        if live.is_empty() || !ep.needs_offload {
            return;
        }
        self.offload(e, &live, ready_lo, d);
    }

    /// Window `wi` (an eviction between two uses): z, its release and its
    /// prefetch, with rules R3, R1/R10 and R1/R5 at the next reader. False
    /// when the window cannot hold an eviction in this frame.
    fn window(&mut self, wi: usize, needs_offload: bool, ready_lo: i64, d: i64) -> bool {
        let st = self.st;
        let w = &st.windows[wi];
        // A zero-duration reader in the first lap may sit at P (R8): a
        // release at unrolled P is then the next period's time-0 delete,
        // which comes after it (models/MODEL.md R8), so P is allowed.
        let anchor_lo = match w.from {
            Anchor::Time0 => 0,
            Anchor::Read(a) if self.at_boundary(a) => (self.op_lo(a) + 1).min(self.p),
            Anchor::Read(a) => self.op_lo(a) + st.read_lag(a % self.n),
            Anchor::Ready(a) => self.op_lo(a) + st.dur[a % self.n],
        };
        let rlo = if needs_offload {
            anchor_lo.max(ready_lo + d)
        } else {
            anchor_lo
        };
        let phi = (self.op_hi(w.to) - d).min(self.umax);
        if rlo > phi {
            return false;
        }
        let z = self.lp.binary(format!("z_{wi}"));
        let release = Starts::new(&mut self.lp, &format!("r_{wi}"), rlo, phi);
        let prefetch = Starts::new(&mut self.lp, &format!("p_{wi}"), rlo, phi);
        let mut l = release.cum(phi);
        l.add(z, -1);
        self.lp.eq(format!("W_release_once_{wi}"), &l, 0);
        let mut l = prefetch.cum(phi);
        l.add(z, -1);
        self.lp.eq(format!("W_prefetch_once_{wi}"), &l, 0);
        for u in rlo..=phi {
            // R3: a prefetch needs no GPU copy: released by the time it starts.
            let mut l = prefetch.cum(u);
            l.add_lin(&release.cum(u), -1);
            self.lp
                .le(format!("R3_prefetch_after_release_{wi}_{u}"), &l, 0);
            self.release_after_use(wi, &release, u);
        }
        // R1 at the next reader: the prefetch (≥ ⌈|t|/β⌉ ticks, R5) has ended.
        for u in self.op_lo(w.to)..=self.op_hi(w.to) {
            let mut l = self.op_cum(w.to, u);
            l.add_lin(&prefetch.cum(u - d), -1);
            l.add(z, 1);
            self.lp.le(format!("R1_back_before_reader_{wi}_{u}"), &l, 1);
        }
        self.windows[wi] = Some(WindowVars {
            z,
            release,
            prefetch,
        });
        true
    }

    /// R1 and R10 for window `wi` at instant `u`: a reader a holds t from its
    /// start (releases at an instant come before op starts, R1) to its end
    /// under the default rule (R10: released no earlier than X_a(u − d_a)),
    /// to one tick after its start under the relaxation; a producer or
    /// modifier makes it current at its end.
    fn release_after_use(&mut self, wi: usize, release: &Starts, u: i64) {
        let st = self.st;
        let w = &st.windows[wi];
        let need = match w.from {
            Anchor::Time0 => None,
            // The next period's time-0 delete follows a reader at P.
            Anchor::Read(a) if self.at_boundary(a) && u == self.p => None,
            Anchor::Read(a) => Some(self.op_cum(a, u - st.read_lag(a % self.n))),
            Anchor::Ready(a) => Some(self.op_cum(a, u - st.dur[a % self.n])),
        };
        if let Some(need) = need {
            let mut l = release.cum(u);
            l.add_lin(&need, -1);
            let rule = match w.from {
                Anchor::Read(_) if st.after_end => "R10",
                _ => "R1",
            };
            self.lp
                .le(format!("{rule}_release_after_use_{wi}_{u}"), &l, 0);
        }
    }

    /// R6: every release of epoch `e` follows the end of one offload that
    /// read the epoch's value (it starts after the value became current).
    fn offload(&mut self, e: usize, live: &[usize], ready_lo: i64, d: i64) {
        let ohi = live
            .iter()
            .map(|wi| self.windows[*wi].as_ref().unwrap().release.hi() - d)
            .max()
            .unwrap();
        let off = Starts::new(&mut self.lp, &format!("o_{e}"), ready_lo, ohi);
        let mut sumz = Lin::new();
        for wi in live {
            let wv = self.windows[*wi].as_ref().unwrap();
            sumz.add(wv.z, 1);
            let mut l = Lin::new();
            l.add(wv.z, 1);
            l.add_lin(&off.cum(ohi), -1);
            self.lp.le(format!("R6_offload_needed_{wi}"), &l, 0);
            for u in wv.release.lo..=wv.release.hi() {
                let mut l = wv.release.cum(u);
                l.add_lin(&off.cum(u - d), -1);
                self.lp
                    .le(format!("R6_release_after_offload_{wi}_{u}"), &l, 0);
            }
        }
        // An offload without an eviction is useless (symmetry cut).
        let mut l = off.cum(ohi);
        l.add_lin(&sumz, -1);
        self.lp.le(format!("offload_serves_eviction_{e}"), &l, 0);
        if let Some(m) = self.st.epochs[e].ready {
            for u in off.lo..=off.hi() {
                let mut l = off.cum(u);
                l.add_lin(&self.op_cum(m, u - self.st.dur[m % self.n]), -1);
                self.lp
                    .le(format!("R6_offload_reads_current_{e}_{u}"), &l, 0);
            }
        }
        self.offloads[e] = Some(off);
    }

    /// R2: at most one transfer per channel and slot.
    fn channels(&mut self) {
        let (st, cyc, p) = (self.st, self.cyc, self.p);
        let slot = |u: i64| -> i64 {
            if cyc {
                u.rem_euclid(p)
            } else {
                u
            }
        };
        let mut chan: BTreeMap<(u8, i64), Lin> = BTreeMap::new();
        let half = st.half_duplex;
        let mut occupy = |s: &Starts, d: i64, dir: u8| {
            let c = if half { 0 } else { dir };
            for (i, v) in s.vars.iter().enumerate() {
                for off in 0..d {
                    chan.entry((c, slot(s.lo + i as i64 + off)))
                        .or_default()
                        .add(*v, 1);
                }
            }
        };
        for (e, o) in self.offloads.iter().enumerate() {
            if let Some(o) = o {
                occupy(o, st.dt[st.epochs[e].tensor.ix()], 1);
            }
        }
        for (wi, w) in self.windows.iter().enumerate() {
            if let Some(w) = w {
                occupy(&w.prefetch, st.dt[st.windows[wi].tensor.ix()], 2);
            }
        }
        for (c, v) in st.cpu.inputs.iter().zip(&self.inputs) {
            occupy(&v.offload, st.dt[c.tensor.ix()], 1);
        }
        for ((c, s), l) in &chan {
            if l.terms.len() > 1 {
                self.lp.le(format!("R2_channel_{c}_{s}"), l, 1);
            }
        }
    }

    /// R7 per slot: the state after every action at instant σ; it bounds
    /// every allocation checkpoint at σ except those of zero-duration ops
    /// ([`Builder::memory_at_zero_duration_ops`]).
    fn memory_per_slot(&mut self) -> Result<(), TooShort> {
        let nslots = if self.cyc { self.p } else { self.len };
        for s in 0..nslots {
            let mut l = self.resident_tensors(s);
            l.add_lin(&self.host_input_memory(s), 1);
            let st = self.st;
            for k in 0..self.n {
                if st.tmp[k] > 0 && st.dur[k] > 0 {
                    l.add_lin(&self.ops[k].cum(s), st.tmp[k]);
                    l.add_lin(&self.ops[k].cum(s - st.dur[k]), -st.tmp[k]);
                }
            }
            for (wi, w) in self.windows.iter().enumerate() {
                if let Some(w) = w {
                    let sz = st.size[st.windows[wi].tensor.ix()];
                    let laps: &[i64] = if self.cyc { &[0, 1] } else { &[0] };
                    for lap in laps {
                        let u = s + lap * self.p;
                        l.add_lin(&w.release.cum(u), -sz);
                        l.add_lin(&w.prefetch.cum(u), sz);
                    }
                }
            }
            if l.terms.is_empty() {
                if l.constant > st.cap {
                    // Nothing can change the memory of this slot and it is too much.
                    self.lp.rows.clear();
                    return Err(TooShort);
                }
                continue;
            }
            self.lp.le(format!("R7_slot_{s}"), &l, st.cap);
        }
        Ok(())
    }

    /// The memory of every tensor's static life (before evictions) at slot `s`.
    fn resident_tensors(&self, s: i64) -> Lin {
        let (st, ops) = (self.st, &self.ops);
        let mut l = Lin::new();
        for (i, b) in st.base.iter().enumerate() {
            let sz = st.size[i];
            if sz == 0 {
                continue;
            }
            let released = |l: &mut Lin, r: Option<Release>| match r {
                None => {}
                Some(Release::Consumed(c)) => {
                    l.add_lin(&ops[c].cum(s), -sz);
                }
                Some(Release::Freed(f)) => match &self.frees[i] {
                    Some(q) => {
                        l.add_lin(&q.cum(s), -sz);
                    }
                    None => {
                        l.add_lin(&ops[f].cum(s - st.dur[f]), -sz);
                    }
                },
            };
            match *b {
                Base::None => {}
                Base::Always => {
                    l.konst(sz);
                }
                Base::Initial(r) => {
                    l.konst(sz);
                    released(&mut l, r);
                }
                Base::Produced(pp, r) => {
                    l.add_lin(&ops[pp].cum(s), sz);
                    released(&mut l, r);
                }
            }
        }
        l
    }

    /// R7 at the start of zero-duration ops (models/MODEL.md §2.4): y = 1
    /// per window whose tensor may be absent then.
    fn memory_at_zero_duration_ops(&mut self) -> Result<(), TooShort> {
        let st = self.st;
        let n = self.n;
        for k in 0..n {
            if st.dur[k] != 0 || st.static_mem[k] <= st.cap {
                continue;
            }
            let mut l = Lin::new();
            l.konst(st.static_mem[k]);
            for (wi, w) in st.windows.iter().enumerate() {
                if self.windows[wi].is_none() {
                    continue;
                }
                let a = match w.from {
                    Anchor::Time0 => None,
                    Anchor::Read(a) | Anchor::Ready(a) => Some(a),
                };
                for q in [k, k + n] {
                    if !(a.is_none_or(|a| a < q) && q < w.to) {
                        continue;
                    }
                    let y = self.absent_at_op(wi, k, q);
                    l.add(y, -st.size[w.tensor.ix()]);
                }
            }
            if l.terms.is_empty() {
                return Err(TooShort);
            }
            self.lp.le(format!("R7_zero_op_{k}"), &l, st.cap);
        }
        Ok(())
    }

    /// y = 1 only if window `wi`'s tensor is absent at the start of op `k`
    /// (unrolled position `q`): released at or before it, its prefetch not
    /// started before it.
    fn absent_at_op(&mut self, wi: usize, k: usize, q: UPos) -> Var {
        let big = self.umax + 2;
        let y = self.lp.binary(format!("y_{wi}_{k}"));
        let wv = self.windows[wi].as_ref().unwrap();
        let (z, release, prefetch) = (wv.z, wv.release.time(), wv.prefetch.time());
        let lap = (q / self.n) as i64 * self.p;
        let mut c = Lin::new();
        c.add(y, 1);
        c.add(z, -1);
        self.lp
            .le(format!("R7_absent_needs_eviction_{wi}_{k}"), &c, 0);
        let mut c = release;
        c.add_lin(&self.ops[k].time(), -1);
        c.add(y, big);
        if self.cyc && q < self.n && self.ops[k].hi() >= self.p {
            self.delete_flag_at_p(wi, k, &mut c);
        }
        self.lp
            .le(format!("R7_absent_after_release_{wi}_{k}"), &c, big + lap);
        let mut c = self.ops[k].time();
        c.add_lin(&prefetch, -1);
        c.add(y, big);
        self.lp
            .le(format!("R7_absent_before_prefetch_{wi}_{k}"), &c, big - lap);
        y
    }

    /// Op k at P (R8): a release at unrolled P is, in general, the next
    /// period's time-0 delete, after it; so it must come strictly before P
    /// (+ s_{k,P}) unless it is the `delete` flag of an offload ending at P
    /// (transfer completions at P precede the zero-duration ops there), which
    /// the decoder writes only when the window's reader is not itself at P:
    /// − φ, with φ ≤ s_{k,P}, φ ≤ o_{e,P−dt}, φ ≤ 1 − s_{a,P}. Adds these
    /// terms to the absence row `c`.
    fn delete_flag_at_p(&mut self, wi: usize, k: usize, c: &mut Lin) {
        let (st, p, n) = (self.st, self.p, self.n);
        let w = &st.windows[wi];
        let skp = self.ops[k].vars[(p - self.ops[k].lo) as usize];
        c.add(skp, 1);
        let d = st.dt[w.tensor.ix()];
        let oe = self.offloads[w.epoch]
            .as_ref()
            .filter(|o| o.lo <= p - d && p - d <= o.hi())
            .map(|o| o.vars[(p - d - o.lo) as usize]);
        let Some(oe) = oe else { return };
        let phi = self.lp.binary(format!("phi_{wi}_{k}"));
        let mut f = Lin::new();
        f.add(phi, 1);
        f.add(skp, -1);
        self.lp.le(format!("R7_flag_at_p_{wi}_{k}"), &f, 0);
        let mut f = Lin::new();
        f.add(phi, 1);
        f.add(oe, -1);
        self.lp
            .le(format!("R7_flag_offload_ends_at_p_{wi}_{k}"), &f, 0);
        if let Anchor::Read(a) = w.from {
            if a < n && st.dur[a] == 0 && self.ops[a].hi() >= p {
                let mut f = Lin::new();
                f.add(phi, 1);
                f.add(self.ops[a].vars[(p - self.ops[a].lo) as usize], 1);
                self.lp
                    .le(format!("R7_flag_reader_before_p_{wi}_{k}"), &f, 1);
            }
        }
        c.add(phi, -1);
    }
}
