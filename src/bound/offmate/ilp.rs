//! The OFFMATE ILP (1)–(23) (HAL hal-04660745, §4.1) as an exact rational MILP,
//! as printed or corrected (`proofs/OFFMATE-ILP.md`), every row named after the
//! equation it encodes.
//!
//! Steps are 0-based (t = 0..2L, the paper's t − 1); a wrapped sum from g_w to t
//! runs around the cycle ([`span`]). Time is in ticks; memory rows are divided
//! by M_GPU (M_CPU) so that HiGHS sees coefficients near 1 (exact rationals, so
//! the scaling changes nothing).
//!
//! Owns: the variables, the rows, their names ([`Ilp`]). Solving and reading
//! the plan back are in the parent module. Must not import: heuristics, exact
//! solvers, the checker. HiGHS is reached only through [`crate::lp`].

use crate::family::offmate::{IlpMode, Offmate, ParamGroup};
use crate::family::BandwidthFile;
use crate::lp::rational::Milp;
use crate::model::Duplex;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Zero};
use std::collections::BTreeMap;

/// A rational from an integer.
pub(crate) fn q(n: u64) -> BigRational {
    BigRational::from_integer(BigInt::from(n))
}

/// Ticks per byte of a speed given in bytes per tick (1/β, 1/α).
pub(crate) fn per_byte(b: BandwidthFile) -> BigRational {
    let b = b.to_bandwidth();
    BigRational::new(BigInt::from(b.ticks), BigInt::from(b.bytes))
}

/// The steps of a wrapped sum from `from` to `to`: inclusive of `to`, or
/// stopping just before it (empty when `to == from`).
pub fn span(from: usize, to: usize, steps: usize, inclusive: bool) -> Vec<usize> {
    let n = (to + steps - from) % steps + usize::from(inclusive);
    (0..n).map(|k| (from + k) % steps).collect()
}

/// The step indices of one parameter group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSteps {
    /// f_w: the first step using w (the forward of its lowest block).
    pub first: usize,
    /// g_w: the step computing its last gradient (the backward of its lowest block).
    pub last_grad: usize,
    /// The first backward using w (the backward of its highest block): its
    /// gradient buffer lives from here to g_w.
    pub first_bwd: usize,
}

/// The columns of one group in one step.
#[derive(Clone, Copy, Debug)]
pub struct FracCols {
    pub sto: usize,
    pub ofl: usize,
    pub prf: usize,
    pub sto_o: usize,
    pub ofl_o: usize,
    pub prf_o: usize,
    /// Opt exists only in the wrapped window [g_w, f_w] (eq. (4)).
    pub opt: Option<usize>,
}

/// The ILP: the rational MILP, its row names, and where each variable lives.
#[derive(Clone, Debug)]
pub struct Ilp {
    pub mode: IlpMode,
    pub milp: Milp,
    /// `names[r]` says which equation row r encodes, e.g. "(7) t=3 w=1".
    pub names: Vec<String>,
    pub groups: Vec<ParamGroup>,
    pub steps: Vec<GroupSteps>,
    /// Comp_i^o.
    pub comp: Vec<Vec<usize>>,
    /// Time_t.
    pub time: Vec<usize>,
    /// `frac[w][t]`.
    pub frac: Vec<Vec<FracCols>>,
}

/// A linear expression with a constant.
#[derive(Clone, Debug, Default)]
pub(crate) struct Expr {
    terms: BTreeMap<usize, BigRational>,
    constant: BigRational,
}

impl Expr {
    fn new() -> Expr {
        Expr::default()
    }
    fn konst(c: BigRational) -> Expr {
        Expr {
            terms: BTreeMap::new(),
            constant: c,
        }
    }
    fn add(&mut self, j: usize, c: &BigRational) -> &mut Expr {
        if !c.is_zero() {
            *self.terms.entry(j).or_insert_with(BigRational::zero) += c;
        }
        self
    }
    fn add_const(&mut self, c: &BigRational) -> &mut Expr {
        self.constant += c;
        self
    }
    fn add_expr(&mut self, e: &Expr, scale: &BigRational) -> &mut Expr {
        for (j, c) in &e.terms {
            self.add(*j, &(c * scale));
        }
        self.constant += &e.constant * scale;
        self
    }
}

impl Ilp {
    /// Add the named row `lhs ≥ rhs`.
    fn geq(&mut self, name: String, lhs: &Expr, rhs: &Expr) {
        let mut e = lhs.clone();
        e.add_expr(rhs, &-BigRational::one());
        let coefs: Vec<(usize, BigRational)> =
            e.terms.into_iter().filter(|(_, c)| !c.is_zero()).collect();
        self.milp.row(coefs, Some(-e.constant), None);
        self.names.push(name);
    }
    /// Add the named row `lhs ≤ rhs`.
    fn leq(&mut self, name: String, lhs: &Expr, rhs: &Expr) {
        self.geq(name, rhs, lhs);
    }
    /// X_w = Σ_t Opt_t^w over the window.
    fn x(&self, w: usize) -> Expr {
        let mut e = Expr::new();
        for f in &self.frac[w] {
            if let Some(o) = f.opt {
                e.add(o, &BigRational::one());
            }
        }
        e
    }
    fn corrected(&self) -> bool {
        self.mode == IlpMode::Corrected
    }
    fn t_steps(&self) -> usize {
        self.time.len()
    }
}

/// Build the ILP (1)–(23) for `inst` (which must be valid) in `mode`.
pub fn build(inst: &Offmate, mode: IlpMode) -> Ilp {
    let groups = inst.param_groups();
    let l = inst.l();
    let steps: Vec<GroupSteps> = groups
        .iter()
        .map(|g| {
            let lo = g.blocks[0];
            let hi = *g.blocks.last().expect("a group has a block");
            GroupSteps {
                first: lo,
                last_grad: 2 * l - 1 - lo,
                first_bwd: 2 * l - 1 - hi,
            }
        })
        .collect();
    let mut ilp = Ilp {
        mode,
        milp: Milp::default(),
        names: Vec::new(),
        groups,
        steps,
        comp: Vec::new(),
        time: Vec::new(),
        frac: Vec::new(),
    };
    columns(&mut ilp, inst);
    eq1(&mut ilp);
    eq5_6(&mut ilp, inst);
    eq7_10(&mut ilp);
    eq11_13(&mut ilp);
    eq17(&mut ilp, inst);
    eq18(&mut ilp, inst);
    eq19_20(&mut ilp, inst);
    eq21_23(&mut ilp, inst);
    ilp
}

/// Columns (1)–(4) and the objective min Σ_t Time_t.
fn columns(ilp: &mut Ilp, inst: &Offmate) {
    let zero = BigRational::zero;
    let one = BigRational::one;
    let m = &mut ilp.milp;
    for b in &inst.blocks {
        let cols = b
            .options
            .iter()
            .map(|_| m.col(zero(), zero(), Some(one()), true))
            .collect();
        ilp.comp.push(cols);
    }
    let n = 2 * inst.l();
    ilp.time = (0..n).map(|_| m.col(one(), zero(), None, false)).collect();
    for s in &ilp.steps {
        let window = span(s.last_grad, s.first, n, true);
        let mut per_step = Vec::with_capacity(n);
        for t in 0..n {
            let mut c = || m.col(zero(), zero(), Some(one()), false);
            per_step.push(FracCols {
                sto: c(),
                ofl: c(),
                prf: c(),
                sto_o: c(),
                ofl_o: c(),
                prf_o: c(),
                opt: window.contains(&t).then(&mut c),
            });
        }
        ilp.frac.push(per_step);
    }
}

/// (1): one option per block.
fn eq1(ilp: &mut Ilp) {
    for i in 0..ilp.comp.len() {
        let mut e = Expr::new();
        for &c in &ilp.comp[i] {
            e.add(c, &BigRational::one());
        }
        let one = Expr::konst(BigRational::one());
        ilp.geq(format!("(1) i={i} >="), &e, &one);
        ilp.leq(format!("(1) i={i} <="), &e, &one);
    }
}

/// (5): a block's parameters are on the GPU in its steps; (6): the GPU-optimised
/// states are on the GPU at g_w.
fn eq5_6(ilp: &mut Ilp, inst: &Offmate) {
    let one = Expr::konst(BigRational::one());
    for t in 0..ilp.t_steps() {
        let (b, _) = inst.step_block(t);
        for w in 0..ilp.groups.len() {
            if ilp.groups[w].blocks.contains(&b) {
                let e = col(ilp.frac[w][t].sto);
                ilp.geq(format!("(5) t={t} w={w}"), &e, &one);
            }
        }
    }
    for w in 0..ilp.groups.len() {
        if ilp.groups[w].trainable.0 == 0 {
            continue;
        }
        let g = ilp.steps[w].last_grad;
        let mut rhs = Expr::konst(BigRational::one());
        rhs.add_expr(&ilp.x(w), &-BigRational::one());
        ilp.geq(format!("(6) w={w}"), &col(ilp.frac[w][g].sto_o), &rhs);
    }
}

fn col(j: usize) -> Expr {
    let mut e = Expr::new();
    e.add(j, &BigRational::one());
    e
}

/// (7)/(8): what is not on the GPU was offloaded since g_w (corrected: in an
/// earlier step, and an offload in step t needs the fraction stored in t);
/// (9)/(10): presence grows only by prefetch.
fn eq7_10(ilp: &mut Ilp) {
    let n = ilp.t_steps();
    let corrected = ilp.corrected();
    for w in 0..ilp.groups.len() {
        let g = ilp.steps[w].last_grad;
        for t in 0..n {
            let f = ilp.frac[w][t];
            let mut lhs7 = col(f.sto);
            let mut lhs8 = col(f.sto_o);
            for s in span(g, t, n, !corrected) {
                lhs7.add(ilp.frac[w][s].ofl, &BigRational::one());
                lhs8.add(ilp.frac[w][s].ofl_o, &BigRational::one());
            }
            let mut rhs8 = Expr::konst(BigRational::one());
            rhs8.add_expr(&ilp.x(w), &-BigRational::one());
            ilp.geq(
                format!("(7) t={t} w={w}"),
                &lhs7,
                &Expr::konst(BigRational::one()),
            );
            ilp.geq(format!("(8) t={t} w={w}"), &lhs8, &rhs8);
            if corrected {
                ilp.leq(format!("(7c) t={t} w={w}"), &col(f.ofl), &col(f.sto));
                ilp.leq(format!("(8c) t={t} w={w}"), &col(f.ofl_o), &col(f.sto_o));
            }
            let next = ilp.frac[w][(t + 1) % n];
            let mut r9 = col(f.sto);
            r9.add(f.prf, &BigRational::one());
            let mut r10 = col(f.sto_o);
            r10.add(f.prf_o, &BigRational::one());
            ilp.leq(format!("(9) t={t} w={w}"), &col(next.sto), &r9);
            ilp.leq(format!("(10) t={t} w={w}"), &col(next.sto_o), &r10);
        }
    }
}

/// (11): the CPU-optimised part is prefetched before f_w; (12): only what was
/// offloaded is optimised (corrected: offloaded in an earlier step); (13): what
/// awaits optimisation is neither on nor coming to the GPU (corrected: counting
/// the optimisation of earlier steps only, and at g_w, where the old value is
/// in use by (5), barring only its prefetch). Corrected (11) counts the
/// prefetches strictly between g_w and f_w: one during g_w would fetch the old
/// value, one during f_w comes too late for (5).
fn eq11_13(ilp: &mut Ilp) {
    let n = ilp.t_steps();
    let corrected = ilp.corrected();
    for w in 0..ilp.groups.len() {
        let gw = q(ilp.groups[w].trainable.0);
        if gw.is_zero() {
            continue;
        }
        let size = q(ilp.groups[w].bytes.0);
        let GroupSteps {
            first, last_grad, ..
        } = ilp.steps[w];
        let mut lhs11 = Expr::new();
        lhs11.add_expr(&ilp.x(w), &gw);
        let mut rhs11 = Expr::new();
        // Corrected: only a prefetch after g_w and before f_w brings the new value.
        let window = if corrected {
            span((last_grad + 1) % n, first, n, false)
        } else {
            span(last_grad, first, n, true)
        };
        for s in window {
            rhs11.add(ilp.frac[w][s].prf, &size);
        }
        ilp.leq(format!("(11) w={w}"), &lhs11, &rhs11);
        for t in 0..n {
            let opt_upto = |inclusive: bool| {
                let mut e = Expr::new();
                for s in span(last_grad, t, n, inclusive) {
                    if let Some(o) = ilp.frac[w][s].opt {
                        e.add(o, &BigRational::one());
                    }
                }
                e
            };
            let (opt_incl, opt_13) = (opt_upto(true), opt_upto(!corrected));
            let mut lhs12 = Expr::new();
            lhs12.add_expr(&opt_incl, &gw);
            let mut rhs12 = Expr::new();
            for s in span(last_grad, t, n, !corrected) {
                rhs12.add(ilp.frac[w][s].ofl, &size);
            }
            ilp.leq(format!("(12) t={t} w={w}"), &lhs12, &rhs12);
            let mut lhs13 = ilp.x(w);
            lhs13.add_expr(&opt_13, &-BigRational::one());
            let lhs13 = {
                let mut e = Expr::new();
                e.add_expr(&lhs13, &gw);
                e
            };
            let f = ilp.frac[w][t];
            let mut rhs13 = Expr::konst(size.clone());
            rhs13.add(f.prf, &-size.clone());
            // At g_w the old value is in use (5); corrected, only its prefetch is barred.
            if !(corrected && t == last_grad) {
                rhs13.add(f.sto, &-size.clone());
            }
            ilp.leq(format!("(13) t={t} w={w}"), &lhs13, &rhs13);
        }
    }
}

/// A_t: interface activations and gradients during step t (a paper input; this
/// reading follows the compilation of `models/MODEL.md` §4: every output x_j
/// is kept from its forward to the backward of block j+1, which frees it).
/// Forward of block i: the input and x_0..x_i. Backward of block i: the input,
/// x_0..x_{i−1}, the gradient of x_i and the one it produces.
pub fn interface_bytes(inst: &Offmate, t: usize) -> u64 {
    let (i, fwd) = inst.step_block(t);
    let out = |j: usize| inst.blocks[j].out.0;
    let grad = |j: usize| inst.blocks[j].grad_out.unwrap_or(inst.blocks[j].out).0;
    let kept: u64 = (0..i).map(out).sum();
    if fwd {
        inst.input.0 + kept + out(i)
    } else {
        inst.input.0 + kept + grad(i) + if i > 0 { grad(i - 1) } else { 0 }
    }
}

/// Σ_o Comp_i^o · v(o).
fn by_option(ilp: &Ilp, inst: &Offmate, i: usize, v: impl Fn(usize) -> u64) -> Expr {
    let mut e = Expr::new();
    for o in 0..inst.blocks[i].options.len() {
        e.add(ilp.comp[i][o], &q(v(o)));
    }
    e
}

/// (14)–(17): W_t + O_t + S_t + A_t ≤ M_GPU. Corrected also counts the chosen
/// option's transient overhead, its offloaded activations O_i^o in both of its
/// steps (until the offload ends; from the prefetch's start), every gradient
/// buffer from the first backward using w to g_w, and the GPU optimiser's
/// scratch memory at g_w.
fn eq17(ilp: &mut Ilp, inst: &Offmate) {
    let n = ilp.t_steps();
    let k = q(inst.optimizer.states as u64);
    let scale = BigRational::new(BigInt::one(), BigInt::from(inst.gpu_memory.0.max(1)));
    for t in 0..n {
        let (b, fwd) = inst.step_block(t);
        let mut lhs = Expr::konst(q(interface_bytes(inst, t)));
        for w in 0..ilp.groups.len() {
            let f = ilp.frac[w][t];
            let size = q(ilp.groups[w].bytes.0);
            let states = &k * q(ilp.groups[w].trainable.0);
            lhs.add(f.sto, &size).add(f.prf, &size);
            lhs.add(f.sto_o, &states).add(f.prf_o, &states);
        }
        for i in 0..=b {
            let saved = by_option(ilp, inst, i, |o| inst.blocks[i].options[o].saved.0);
            lhs.add_expr(&saved, &BigRational::one());
        }
        if ilp.corrected() {
            let opts = &inst.blocks[b].options;
            let peak = by_option(ilp, inst, b, |o| {
                opts[o].offloaded.0
                    + if fwd {
                        opts[o].fwd_overhead.0
                    } else {
                        opts[o].bwd_overhead.0
                    }
            });
            lhs.add_expr(&peak, &BigRational::one());
            let factor = q(inst.optimizer.gpu_temp_factor as u64);
            for w in 0..ilp.groups.len() {
                let s = &ilp.steps[w];
                let gw = q(ilp.groups[w].trainable.0);
                if !fwd && span(s.first_bwd, s.last_grad, n, true).contains(&t) {
                    lhs.add_const(&gw);
                }
                if t == s.last_grad && !factor.is_zero() {
                    let temp = &factor * &gw;
                    lhs.add_const(&temp);
                    lhs.add_expr(&ilp.x(w), &-temp);
                }
            }
        }
        let mut scaled = Expr::new();
        scaled.add_expr(&lhs, &scale);
        let m = Expr::konst(q(inst.gpu_memory.0) * &scale);
        ilp.leq(format!("(17) t={t}"), &scaled, &m);
    }
}

/// (18): CPU memory (both modes as printed: every parameter, the chosen
/// options' offloaded activations, offloaded states, CPU-optimised states and
/// gradients; Assumption 7, nothing is freed).
fn eq18(ilp: &mut Ilp, inst: &Offmate) {
    let k = inst.optimizer.states as u64;
    let scale = BigRational::new(BigInt::one(), BigInt::from(inst.cpu_memory.0.max(1)));
    let params: u64 = ilp.groups.iter().map(|g| g.bytes.0).sum();
    let mut lhs = Expr::konst(q(params));
    for i in 0..inst.l() {
        let o = by_option(ilp, inst, i, |o| inst.blocks[i].options[o].offloaded.0);
        lhs.add_expr(&o, &BigRational::one());
    }
    for w in 0..ilp.groups.len() {
        let gw = ilp.groups[w].trainable.0;
        for f in &ilp.frac[w] {
            lhs.add(f.ofl_o, &q(k * gw));
            if let Some(o) = f.opt {
                lhs.add(o, &q((k + 1) * gw));
            }
        }
    }
    let mut scaled = Expr::new();
    scaled.add_expr(&lhs, &scale);
    let m = Expr::konst(q(inst.cpu_memory.0) * &scale);
    ilp.leq("(18)".into(), &scaled, &m);
}

/// (19a) L_t, the self-offload of the block's own parameters and states
/// (corrected: k |w|_g for the states).
fn self_offload(ilp: &Ilp, inst: &Offmate, t: usize) -> Expr {
    let (b, _) = inst.step_block(t);
    let beta = per_byte(inst.bandwidth);
    let k = if ilp.corrected() {
        inst.optimizer.states as u64
    } else {
        1
    };
    let mut e = Expr::new();
    for w in 0..ilp.groups.len() {
        if ilp.groups[w].blocks.contains(&b) {
            let f = ilp.frac[w][t];
            e.add(f.ofl, &(q(ilp.groups[w].bytes.0) * &beta));
            e.add(f.ofl_o, &(q(k * ilp.groups[w].trainable.0) * &beta));
        }
    }
    e
}

/// (19b) forward and (20) backward GPU time. As printed, the backward charges
/// the GPU update of every parameter of the block at 1/α_C and a forward step
/// no L_t; corrected, the update of the parameters whose g_w is t at 1/α_G, and
/// L_t in every step (the paper's "cannot overlap", and rockmate's code).
fn eq19_20(ilp: &mut Ilp, inst: &Offmate) {
    let n = ilp.t_steps();
    let corrected = ilp.corrected();
    let alpha = per_byte(if corrected {
        inst.optimizer.gpu_speed
    } else {
        inst.optimizer.cpu_speed
    });
    for t in 0..n {
        let (b, fwd) = inst.step_block(t);
        let opts = &inst.blocks[b].options;
        let mut rhs = by_option(ilp, inst, b, |o| {
            (if fwd { opts[o].t_fwd } else { opts[o].t_bwd }).0 as u64
        });
        if !fwd || corrected {
            rhs.add_expr(&self_offload(ilp, inst, t), &BigRational::one());
        }
        if !fwd {
            for w in 0..ilp.groups.len() {
                let charged = if corrected {
                    ilp.steps[w].last_grad == t
                } else {
                    ilp.groups[w].blocks.contains(&b)
                };
                let gw = q(ilp.groups[w].trainable.0) * &alpha;
                if charged && !gw.is_zero() {
                    rhs.add_const(&gw);
                    rhs.add_expr(&ilp.x(w), &-gw);
                }
            }
        }
        let name = if fwd { "(19b)" } else { "(20)" };
        ilp.geq(format!("{name} t={t}"), &col(ilp.time[t]), &rhs);
    }
}

/// (21) prefetch, (22) offload and (23) CPU time per step. Corrected, the
/// chosen option's activations occupy the link: offloaded in the forward,
/// prefetched in the backward (Assumption 6); on a half-duplex link both
/// directions share one channel.
fn eq21_23(ilp: &mut Ilp, inst: &Offmate) {
    let n = ilp.t_steps();
    let beta = per_byte(inst.bandwidth);
    let alpha_c = per_byte(inst.optimizer.cpu_speed);
    let k = q(inst.optimizer.states as u64);
    for t in 0..n {
        let (b, fwd) = inst.step_block(t);
        let mut h2d = Expr::new();
        let mut d2h = Expr::new();
        let mut cpu = Expr::konst(q(inst.cpu_management.0 as u64));
        for w in 0..ilp.groups.len() {
            let f = ilp.frac[w][t];
            let size = q(ilp.groups[w].bytes.0) * &beta;
            let states = &k * q(ilp.groups[w].trainable.0) * &beta;
            h2d.add(f.prf, &size).add(f.prf_o, &states);
            d2h.add(f.ofl, &size).add(f.ofl_o, &states);
            if let Some(o) = f.opt {
                cpu.add(o, &(q(ilp.groups[w].trainable.0) * &alpha_c));
            }
        }
        if ilp.corrected() {
            let act = by_option(ilp, inst, b, |o| inst.blocks[b].options[o].offloaded.0);
            let dir = if fwd { &mut d2h } else { &mut h2d };
            dir.add_expr(&act, &beta);
        }
        let time = col(ilp.time[t]);
        ilp.geq(format!("(21) t={t}"), &time, &h2d);
        ilp.geq(format!("(22) t={t}"), &time, &d2h);
        if ilp.corrected() && inst.duplex == Duplex::HalfDuplex {
            let mut both = h2d.clone();
            both.add_expr(&d2h, &BigRational::one());
            ilp.geq(format!("(21+22) half duplex t={t}"), &time, &both);
        }
        ilp.geq(format!("(23) t={t}"), &time, &cpu);
    }
}
