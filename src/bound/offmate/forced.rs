//! Certified lower bounds on the period of an `offmate` instance that see the
//! forced traffic, the CPU time and the turnaround (`proofs/OFFMATE-BOUNDS.md`).
//!
//! Every bound here is "P ≥ the maximum of some *lines*", each line linear in
//! b (the trainable bytes updated on the CPU, b ∈ [0, T_g]) plus one term per
//! block that depends on the block's chosen option o_i:
//!   P ≥ c + s·b + Σ_i v_i(o_i).
//! Neither b nor the options are known, so the bound is the minimum over them
//! of the maximum of the lines. Two relaxations of that minimum are computed in
//! exact rationals and the larger is reported (both are lower bounds):
//! - *option-free*: each line's option terms at their own minimum, then the
//!   exact min over b of a maximum of lines in b (`volume::min_of_max`);
//! - *Lagrangian*: for weights μ ≥ 0 with Σ μ = 1, max_j line_j ≥ Σ_j μ_j line_j,
//!   whose minimum over b and the options separates (an end of [0, T_g]; per
//!   block its cheapest option). Any μ gives a bound; μ is searched in f64
//!   (exponentiated subgradient) and only the final μ, a rational, is
//!   evaluated exactly. No float decides the value.
//!
//! The lines (proofs/OFFMATE-BOUNDS.md §2–§4): GPU (all GPU ops of a period),
//! CPU (CPU Adam steps and the management ops H), the turnaround (the bytes
//! that cannot all be on the GPU when the first backward starts must be
//! prefetched after the whole forward), and the per-period link volumes with
//! the turnaround's forced bytes.
//!
//! Owns: [`OffmateCpu`], [`OffmateTraffic`], [`OffmateTurnaround`], [`forced_bound`].
//! Must not import: heuristics, exact solvers, the simulator.

use super::ilp::{per_byte, q};
use super::volume::{self, min_of_max};
use crate::bound::{BoundError, BoundMethod, LowerBound, Strength};
use crate::family::offmate::Offmate;
use crate::family::InstanceFile;
use crate::model::{Duplex, Instance};
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, ToPrimitive, Zero};

/// The three bounds of this module.
pub fn bounds() -> Vec<Box<dyn BoundMethod>> {
    vec![
        Box::new(OffmateCpu),
        Box::new(OffmateTraffic),
        Box::new(OffmateTurnaround),
    ]
}

/// Which lines a bound uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// GPU and CPU (with H).
    Cpu,
    /// GPU, CPU and the per-period link volumes with the turnaround's bytes.
    Traffic,
    /// All of them and the turnaround line (forward, then the prefetches).
    Turnaround,
}

/// P ≥ c + s·b + Σ_i per[i][o_i].
#[derive(Clone, Debug)]
pub(super) struct Line {
    pub(super) c: BigRational,
    pub(super) s: BigRational,
    pub(super) per: Vec<Vec<BigRational>>,
}

/// The instance's quantities, as exact rationals (bytes, ticks, ticks/byte).
struct Quantities {
    /// T_g, and S + k T_g + X + out(B_L) − M (the turnaround's bytes at b = 0, less M).
    tg: BigRational,
    rest: BigRational,
    /// N, the frozen bytes of used parameters, and k.
    n: BigRational,
    k: BigRational,
    /// Σ over the management ops of H (2L·H when H > 0).
    mgmt: BigRational,
    a_g: BigRational,
    a_c: BigRational,
    /// 1/β.
    ib: BigRational,
}

fn quantities(inst: &Offmate) -> Quantities {
    let groups = inst.param_groups();
    let l = inst.l();
    let tg: u64 = groups.iter().map(|g| g.trainable.0).sum();
    let s: u64 = groups.iter().map(|g| g.bytes.0).sum();
    let k = inst.optimizer.states as u64;
    let x: u64 = inst.input.0 + inst.blocks.iter().map(|b| b.out.0).sum::<u64>();
    // B_L's outputs, allocated at its start: g_{L−1} and the gradients it produces.
    let mut out_bl: u64 = if l >= 2 {
        let b = &inst.blocks[l - 2];
        b.grad_out.unwrap_or(b.out).0
    } else {
        0
    };
    out_bl += inst
        .updated_params()
        .iter()
        .filter(|(_, blk)| *blk == l)
        .map(|(p, _)| inst.params[*p].bytes.0)
        .sum::<u64>();
    let h = inst.cpu_management.0.max(0) as u64;
    let mgmt = if h > 0 { q(2 * l as u64) * q(h) } else { q(0) };
    Quantities {
        rest: q(s) + q(k) * q(tg) + q(x) + q(out_bl) - q(inst.gpu_memory.0),
        tg: q(tg),
        n: q(s - tg),
        k: q(k),
        mgmt,
        a_g: per_byte(inst.optimizer.gpu_speed),
        a_c: per_byte(inst.optimizer.cpu_speed),
        ib: per_byte(inst.bandwidth),
    }
}

/// Per block and option: (t_fwd + t_bwd, t_fwd, a), where a is the bytes the
/// option holds at the turnaround (stored plus offloaded internals; for the
/// last block also its backward's overhead).
fn option_terms(inst: &Offmate) -> Vec<Vec<(BigRational, BigRational, BigRational)>> {
    let l = inst.l();
    inst.blocks
        .iter()
        .enumerate()
        .map(|(i, b)| {
            b.options
                .iter()
                .map(|o| {
                    let over = if i + 1 == l { o.bwd_overhead.0 } else { 0 };
                    let tf = o.t_fwd.0.max(0) as u64;
                    let tb = o.t_bwd.0.max(0) as u64;
                    (q(tf + tb), q(tf), q(o.saved.0 + o.offloaded.0 + over))
                })
                .collect()
        })
        .collect()
}

/// The lines of `which` (proofs/OFFMATE-BOUNDS.md §5).
pub(super) fn lines(inst: &Offmate, which: Lines) -> (Vec<Line>, BigRational) {
    let qn = quantities(inst);
    let terms = option_terms(inst);
    let zero = BigRational::zero;
    let per = |f: &dyn Fn(&(BigRational, BigRational, BigRational)) -> BigRational| {
        terms
            .iter()
            .map(|opts| opts.iter().map(f).collect())
            .collect::<Vec<Vec<BigRational>>>()
    };
    let none = per(&|_| zero());
    let line = |c: BigRational, s: BigRational, per: Vec<Vec<BigRational>>| Line { c, s, per };
    let mut v = vec![
        line(zero(), zero(), none.clone()),
        line(&qn.tg * &qn.a_g, -qn.a_g.clone(), per(&|t| t.0.clone())),
        line(qn.mgmt.clone(), qn.a_c.clone(), none.clone()),
    ];
    if which == Lines::Cpu {
        return (v, qn.tg);
    }
    // Volumes per period, in bytes: b, D_O(b) = rest + Σ a_i − k b, D_O − N, 0.
    let vol_b = (zero(), BigRational::from_integer(1.into()), none.clone());
    let vol_d = (qn.rest.clone(), -qn.k.clone(), per(&|t| t.2.clone()));
    let vol_dn = (&qn.rest - &qn.n, -qn.k.clone(), per(&|t| t.2.clone()));
    let vol_0 = (zero(), zero(), none.clone());
    let scaled = |parts: &[&(BigRational, BigRational, Vec<Vec<BigRational>>)]| {
        let mut c = zero();
        let mut s = zero();
        let mut p = none.clone();
        for (pc, ps, pp) in parts {
            c += pc;
            s += ps;
            for (row, add) in p.iter_mut().zip(pp) {
                for (x, y) in row.iter_mut().zip(add) {
                    *x += y;
                }
            }
        }
        let p = p
            .into_iter()
            .map(|r| r.into_iter().map(|x| x * &qn.ib).collect())
            .collect();
        line(c * &qn.ib, s * &qn.ib, p)
    };
    match inst.duplex {
        Duplex::FullDuplex => {
            for part in [&vol_b, &vol_d, &vol_dn] {
                v.push(scaled(&[part]));
            }
        }
        Duplex::HalfDuplex => {
            for h in [&vol_b, &vol_d, &vol_0] {
                for d in [&vol_b, &vol_dn] {
                    v.push(scaled(&[h, d]));
                }
            }
        }
    }
    if which == Lines::Turnaround {
        // Σ t_fwd(o_i) + D_O(b)/β.
        let ib = qn.ib.clone();
        v.push(line(
            &qn.rest * &ib,
            -(&qn.k * &ib),
            per(&|t| &t.1 + &t.2 * &ib),
        ));
    }
    (v, qn.tg)
}

/// Each line with its option terms at their minimum: a line in b alone.
fn option_free(lines: &[Line]) -> Vec<volume::Line> {
    lines
        .iter()
        .map(|l| {
            let mut c = l.c.clone();
            for opts in &l.per {
                if let Some(m) = opts.iter().min() {
                    c += m;
                }
            }
            volume::Line { c, s: l.s.clone() }
        })
        .collect()
}

/// min over b ∈ [0, T_g] and the options of Σ_j μ_j line_j (exact).
fn lagrangian(lines: &[Line], tg: &BigRational, mu: &[BigRational]) -> BigRational {
    let mut value = BigRational::zero();
    let mut slope = BigRational::zero();
    for (l, m) in lines.iter().zip(mu) {
        value += &l.c * m;
        slope += &l.s * m;
    }
    if slope.is_negative() {
        value += slope * tg;
    }
    let blocks = lines.first().map_or(0, |l| l.per.len());
    for i in 0..blocks {
        let options = lines[0].per[i].len();
        let best = (0..options)
            .map(|o| {
                lines
                    .iter()
                    .zip(mu)
                    .map(|(l, m)| &l.per[i][o] * m)
                    .fold(BigRational::zero(), |a, x| a + x)
            })
            .min();
        if let Some(b) = best {
            value += b;
        }
    }
    value
}

/// A line in f64, for the search only.
struct LineF {
    c: f64,
    s: f64,
    per: Vec<Vec<f64>>,
}

fn to_f(x: &BigRational) -> f64 {
    x.to_f64().unwrap_or(0.0)
}

/// The Lagrangian in f64 at μ, and each line's value at its minimiser (a
/// subgradient).
fn lagrangian_f(lines: &[LineF], tg: f64, mu: &[f64]) -> (f64, Vec<f64>) {
    let slope: f64 = lines.iter().zip(mu).map(|(l, m)| l.s * m).sum();
    let b = if slope < 0.0 { tg } else { 0.0 };
    let mut value: f64 = lines.iter().zip(mu).map(|(l, m)| l.c * m).sum::<f64>() + slope * b;
    let mut sub: Vec<f64> = lines.iter().map(|l| l.c + l.s * b).collect();
    for i in 0..lines[0].per.len() {
        let mut best = (f64::INFINITY, 0);
        for o in 0..lines[0].per[i].len() {
            let w: f64 = lines.iter().zip(mu).map(|(l, m)| l.per[i][o] * m).sum();
            if w < best.0 {
                best = (w, o);
            }
        }
        value += best.0;
        for (x, l) in sub.iter_mut().zip(lines) {
            *x += l.per[i][best.1];
        }
    }
    (value, sub)
}

const ITERATIONS: usize = 4000;

/// Weights μ found by an exponentiated subgradient ascent (f64), as exact
/// rationals summing to 1.
fn search(lines: &[Line], tg: &BigRational) -> Vec<BigRational> {
    let lf: Vec<LineF> = lines
        .iter()
        .map(|l| LineF {
            c: to_f(&l.c),
            s: to_f(&l.s),
            per: l.per.iter().map(|r| r.iter().map(to_f).collect()).collect(),
        })
        .collect();
    let m = lines.len();
    let mut mu = vec![1.0 / m as f64; m];
    let mut best = (f64::NEG_INFINITY, mu.clone());
    for it in 0..ITERATIONS {
        let (v, sub) = lagrangian_f(&lf, to_f(tg), &mu);
        if v > best.0 {
            best = (v, mu.clone());
        }
        let top = sub.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let scale = top.abs().max(1.0);
        let eta = 5.0 / ((it + 1) as f64).sqrt();
        for (x, g) in mu.iter_mut().zip(&sub) {
            *x *= ((g - top) / scale * eta).exp();
        }
        let z: f64 = mu.iter().sum();
        if !(z.is_finite() && z > 0.0) {
            break;
        }
        mu.iter_mut().for_each(|x| *x /= z);
    }
    let n: Vec<i64> = best
        .1
        .iter()
        .map(|x| (x * (1u64 << 32) as f64).round().max(0.0) as i64)
        .collect();
    let total: i64 = n.iter().sum();
    let (n, total) = if total > 0 {
        (n, total)
    } else {
        (vec![1; m], m as i64)
    };
    n.iter()
        .map(|&x| BigRational::new(BigInt::from(x), BigInt::from(total)))
        .collect()
}

/// One set of lines (exact): the larger of the option-free and the
/// Lagrangian relaxation, and at least 0.
fn relaxed(inst: &Offmate, which: Lines) -> BigRational {
    let (lines, tg) = lines(inst, which);
    let free = min_of_max(&option_free(&lines), &tg);
    let mu = search(&lines, &tg);
    let lag = lagrangian(&lines, &tg, &mu);
    free.max(lag).max(BigRational::zero())
}

/// The bound of `which` on `inst` (exact). The line sets nest (Cpu ⊂ Traffic
/// ⊂ Turnaround), so each smaller set's value is a bound too; the largest is
/// taken (the f64 search may land lower on a larger set).
pub fn forced_bound(inst: &Offmate, which: Lines) -> BigRational {
    let sets: &[Lines] = match which {
        Lines::Cpu => &[Lines::Cpu],
        Lines::Traffic => &[Lines::Cpu, Lines::Traffic],
        Lines::Turnaround => &[Lines::Cpu, Lines::Traffic, Lines::Turnaround],
    };
    sets.iter()
        .map(|&w| relaxed(inst, w))
        .max()
        .unwrap_or_else(BigRational::zero)
}

fn certified(
    name: &'static str,
    file: &InstanceFile,
    which: Lines,
) -> Result<LowerBound, BoundError> {
    let inst = file.offmate().ok_or_else(|| BoundError::NotApplicable {
        bound: name,
        family: file.family().into(),
    })?;
    inst.validate().map_err(|e| BoundError::Failed {
        bound: name,
        cause: e.into(),
    })?;
    Ok(LowerBound {
        value: forced_bound(inst, which),
        source: name.into(),
        strength: Strength::Certified,
    })
}

macro_rules! offmate_bound {
    ($ty:ident, $name:literal, $lines:expr, $doc:literal) => {
        #[doc = $doc]
        pub struct $ty;

        impl BoundMethod for $ty {
            fn name(&self) -> &'static str {
                $name
            }
            fn applies(&self, file: &InstanceFile) -> bool {
                file.offmate().is_some()
            }
            fn bound(&self, file: &InstanceFile, _: &Instance) -> Result<LowerBound, BoundError> {
                certified(self.name(), file, $lines)
            }
        }
    };
}

offmate_bound!(
    OffmateCpu,
    "offmate-cpu",
    Lines::Cpu,
    "GPU compute with the chosen options, and the CPU's Adam steps plus its management time H."
);
offmate_bound!(
    OffmateTraffic,
    "offmate-traffic",
    Lines::Traffic,
    "`offmate-cpu` and the link volumes forced by the bytes that cannot be on the GPU at the turnaround."
);
offmate_bound!(
    OffmateTurnaround,
    "offmate-turnaround",
    Lines::Turnaround,
    "`offmate-traffic` and the turnaround: the whole forward, then the prefetches of what was absent."
);
