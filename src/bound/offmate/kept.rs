//! `offmate-kept`: the lines of `offmate-turnaround`, minimised only over the
//! option vectors whose kept bytes fit on the GPU at the turnaround
//! (`proofs/OFFMATE-BOUNDS.md` §7).
//!
//! At the start s of B_L every interface activation x_0..x_L, every kept
//! activation σ_i^{o_i}, the last block's parameters, its offloaded internals
//! η_L, its transient memory and its outputs are on the GPU (none of the first
//! two kinds is transferable; the others are B_L's operands or allocations), so
//! a valid schedule's options O satisfy
//!   K + Σ_{i<L} σ_i(o_i) + (σ_L + η_L + tmp_L)(o_L) ≤ M.
//! The Lagrangian of [`super::forced`] minimises over every O, so it may
//! choose options whose kept activations cannot fit (the "no-remat" option on
//! every layer). Here the minimum over O of the exact min over b of the
//! maximum of the lines is taken by enumeration, over the option vectors that
//! satisfy the restriction only: blocks with identical option terms form a
//! class, and a class is enumerated by how many of its blocks take each
//! option (options dominated in every line and in kept bytes are dropped
//! first). When the enumeration would exceed [`LIMIT`] vectors the bound falls
//! back to `offmate-turnaround`'s value (still a bound, just not the
//! restricted one). Exact rationals throughout; no float decides anything.
//!
//! Owns: [`OffmateKept`], [`kept_bound`], [`Restriction`].
//! Must not import: heuristics, exact solvers, the simulator.

use super::forced::{forced_bound, lines, Line, Lines};
use super::ilp::q;
use super::volume::{self, min_of_max};
use crate::bound::{BoundError, BoundMethod, LowerBound, Strength};
use crate::family::offmate::Offmate;
use crate::family::InstanceFile;
use crate::model::Instance;
use num_rational::BigRational;
use num_traits::Zero;
use std::collections::{BTreeMap, BTreeSet};

/// The bound of this module.
pub fn bounds() -> Vec<Box<dyn BoundMethod>> {
    vec![Box::new(OffmateKept)]
}

/// At most this many option vectors (products of per-class counts) are
/// enumerated; beyond it the restriction is not used.
pub const LIMIT: u128 = 20_000;

/// The restriction on the options: Σ_i kept[i][o_i] ≤ room.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restriction {
    /// M − K, where K = |x_0..x_L| + |out(B_L)| + |params of block L|.
    pub room: BigRational,
    /// σ_i^o for i < L; σ_L^o + η_L^o + bwd_overhead_L^o for the last block.
    pub kept: Vec<Vec<BigRational>>,
}

/// The restriction of `inst` (proofs/OFFMATE-BOUNDS.md §7, Lemma 5).
pub fn restriction(inst: &Offmate) -> Restriction {
    let l = inst.l();
    let x: u64 = inst.input.0 + inst.blocks.iter().map(|b| b.out.0).sum::<u64>();
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
    let last_params: BTreeSet<usize> = inst.blocks.last().map_or_else(BTreeSet::new, |b| {
        b.params
            .iter()
            .filter_map(|n| inst.params.iter().position(|p| &p.name == n))
            .collect()
    });
    let p_l: u64 = last_params.iter().map(|&p| inst.params[p].bytes.0).sum();
    let kept = inst
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| {
            b.options
                .iter()
                .map(|o| {
                    let extra = if i + 1 == l {
                        o.offloaded.0 + o.bwd_overhead.0
                    } else {
                        0
                    };
                    q(o.saved.0 + extra)
                })
                .collect()
        })
        .collect();
    Restriction {
        room: q(inst.gpu_memory.0) - q(x) - q(out_bl) - q(p_l),
        kept,
    }
}

/// One option as the enumeration sees it (or a sum of options): its kept
/// bytes and its term in every line.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Choice {
    kept: BigRational,
    per: Vec<BigRational>,
}

impl Choice {
    fn zero(lines: usize) -> Choice {
        Choice {
            kept: BigRational::zero(),
            per: vec![BigRational::zero(); lines],
        }
    }
    fn add(&self, other: &Choice, times: usize) -> Choice {
        let t = q(times as u64);
        Choice {
            kept: &self.kept + &other.kept * &t,
            per: self
                .per
                .iter()
                .zip(&other.per)
                .map(|(a, b)| a + b * &t)
                .collect(),
        }
    }
    fn dominates(&self, other: &Choice) -> bool {
        self.kept <= other.kept && self.per.iter().zip(&other.per).all(|(a, b)| a <= b)
    }
}

/// A block's options without duplicates and without those another option
/// dominates (no more kept bytes, no larger term in any line): replacing a
/// dominated option keeps a vector inside the restriction and lowers no line.
fn undominated(mut opts: Vec<Choice>) -> Vec<Choice> {
    opts.sort();
    opts.dedup();
    opts.iter()
        .filter(|o| !opts.iter().any(|p| p != *o && p.dominates(o)))
        .cloned()
        .collect()
}

/// C(n + k − 1, k − 1): the count vectors of n blocks over k options (saturating).
fn compositions(n: usize, k: usize) -> u128 {
    let mut c: u128 = 1;
    for j in 1..k {
        c = c.saturating_mul((n + j) as u128) / j as u128;
    }
    c
}

/// Every sum of `n` options of `opts` (with repetition), as count vectors.
fn sums(opts: &[Choice], n: usize, acc: Choice, out: &mut Vec<Choice>) {
    match opts.split_first() {
        None => out.push(acc),
        Some((first, [])) => out.push(acc.add(first, n)),
        Some((first, rest)) => {
            for m in 0..=n {
                sums(rest, n - m, acc.add(first, m), out);
            }
        }
    }
}

/// The classes of identical blocks, each as the list of its count-vector
/// sums; `None` when the product of their sizes exceeds [`LIMIT`].
fn classes(lines: &[Line], r: &Restriction) -> Option<Vec<Vec<Choice>>> {
    let blocks = r.kept.len();
    let mut by_options: BTreeMap<Vec<Choice>, usize> = BTreeMap::new();
    for i in 0..blocks {
        let opts = (0..r.kept[i].len())
            .map(|o| Choice {
                kept: r.kept[i][o].clone(),
                per: lines.iter().map(|l| l.per[i][o].clone()).collect(),
            })
            .collect();
        *by_options.entry(undominated(opts)).or_insert(0) += 1;
    }
    let mut total: u128 = 1;
    for (opts, &n) in &by_options {
        total = total.saturating_mul(compositions(n, opts.len()));
    }
    if total > LIMIT {
        return None;
    }
    Some(
        by_options
            .iter()
            .map(|(opts, &n)| {
                let mut out = Vec::new();
                sums(opts, n, Choice::zero(lines.len()), &mut out);
                out
            })
            .collect(),
    )
}

/// The least, over the classes' sums whose kept bytes fit in `room`, of the
/// exact min over b of the maximum of the lines; `None` when nothing fits.
fn least(
    lines: &[Line],
    tg: &BigRational,
    classes: &[Vec<Choice>],
    room: &BigRational,
) -> Option<BigRational> {
    // rest[c]: the fewest kept bytes classes c.. can take.
    let mut rest = vec![BigRational::zero(); classes.len() + 1];
    for c in (0..classes.len()).rev() {
        let m = classes[c]
            .iter()
            .map(|s| &s.kept)
            .min()
            .cloned()
            .unwrap_or_else(BigRational::zero);
        rest[c] = &rest[c + 1] + m;
    }
    let mut best: Option<BigRational> = None;
    let mut stack = vec![(0usize, Choice::zero(lines.len()))];
    while let Some((c, acc)) = stack.pop() {
        if &(&acc.kept + &rest[c]) > room {
            continue;
        }
        if c == classes.len() {
            let at: Vec<volume::Line> = lines
                .iter()
                .zip(&acc.per)
                .map(|(l, p)| volume::Line {
                    c: &l.c + p,
                    s: l.s.clone(),
                })
                .collect();
            let v = min_of_max(&at, tg);
            if best.as_ref().map_or(true, |b| &v < b) {
                best = Some(v);
            }
            continue;
        }
        for s in &classes[c] {
            stack.push((c + 1, acc.add(s, 1)));
        }
    }
    best
}

/// The restricted minimum: `None` when the enumeration is too large or no
/// option vector fits (then no valid schedule exists).
pub fn restricted_min(inst: &Offmate) -> Option<BigRational> {
    let (lines, tg) = lines(inst, Lines::Turnaround);
    let r = restriction(inst);
    let classes = classes(&lines, &r)?;
    least(&lines, &tg, &classes, &r.room)
}

/// `offmate-kept`'s value: the restricted minimum, and at least
/// `offmate-turnaround`'s (which it extends).
pub fn kept_bound(inst: &Offmate) -> BigRational {
    let base = forced_bound(inst, Lines::Turnaround);
    match restricted_min(inst) {
        Some(v) => v.max(base),
        None => base,
    }
}

/// `offmate-turnaround`'s lines over the option vectors whose kept
/// activations fit at the turnaround (exact enumeration).
pub struct OffmateKept;

impl BoundMethod for OffmateKept {
    fn name(&self) -> &'static str {
        "offmate-kept"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        file.offmate().is_some()
    }
    fn bound(&self, file: &InstanceFile, _: &Instance) -> Result<LowerBound, BoundError> {
        let name = self.name();
        let inst = file.offmate().ok_or_else(|| BoundError::NotApplicable {
            bound: name,
            family: file.family().into(),
        })?;
        inst.validate().map_err(|e| BoundError::Failed {
            bound: name,
            cause: e.into(),
        })?;
        Ok(LowerBound {
            value: kept_bound(inst),
            source: name.into(),
            strength: Strength::Certified,
        })
    }
}
