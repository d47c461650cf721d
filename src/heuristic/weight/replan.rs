//! Local improvement of cyclic `weight_chain` schedules by re-planning their
//! transfers (issue 14, part 3).
//!
//! A *plan* is what Algorithm 2 ([`super::frame::simulate`]) realises: the
//! selection (which weights leave the GPU between B_k and F_k, and between F_k
//! and B_k), the cut (which (k, 1) prefetches run at the end of the previous
//! period) and the policy. The search starts from
//! - Greedy's and Greedy*'s own plans (every selection and cut they try), and
//! - *streaming* plans (R, K, c): w_k stays on the GPU from B_k to F_k for
//!   k ≤ R and from F_k to B_k for k > K; every other weight leaves after each
//!   use and streams back (the first c of the backward's prefetches at the end
//!   of the previous period), under each policy;
//!
//! and climbs from the best of them: flip one decision, swap two neighbouring
//! decisions of one kind, flip both decisions of one layer, toggle the policy.
//! At a local optimum it perturbs the best plan (a few random flips, fixed
//! seed) and climbs again, until the effort ([`Effort`]) is spent, the target is met, or
//! 20 · L perturbations in a row found nothing better. Every
//! plan is simulated; one whose simulated period is shorter than the best
//! **checked** period so far is checked, and only a checked schedule becomes
//! the result.
//!
//! Owns: [`improve`], the plan neighbourhood.
//! Must not import: bounds, exact solvers, reports, the CLI.
//! Property (`tests/weight_replan.rs`): every schedule it returns passes the
//! checker and is strictly better than its input.

use super::frame::{simulate, Plan, Policy};
use super::greedy::{cut_masks, Greedy};
use super::selection::Selection;
use crate::check::{check, CheckOutcome, Checked};
use crate::family::WeightChain;
use crate::heuristic::effort::{Effort, Meter};
use crate::model::Instance;
use crate::schedule::Schedule;

/// A plan the search owns (the simulator's [`Plan`] borrows its selection).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedPlan {
    pub sel: Selection,
    pub cut: Vec<bool>,
    pub policy: Policy,
}

/// The policies tried: the paper's Greedy (discount, uploads), the discount
/// alone, Greedy*'s (neither).
const POLICIES: [Policy; 3] = [
    Policy {
        discount: true,
        uploads: true,
        just_in_time: false,
    },
    Policy {
        discount: true,
        uploads: false,
        just_in_time: false,
    },
    Policy {
        discount: false,
        uploads: false,
        just_in_time: false,
    },
];

/// Cuts tried with every streaming plan.
const STREAM_CUTS: [usize; 3] = [0, 1, 2];

/// Flips per perturbation: 2 to 2 + PERTURB.
const PERTURB: u64 = 5;

/// Perturbations per layer without a better plan before the search gives up
/// (before the time is up, on small chains).
const STALL_PER_LAYER: usize = 20;

impl OwnedPlan {
    /// A cut weight must be a (k, 1) choice: the cut is dropped where it is not.
    fn normalise(&mut self) {
        for (cut, off1) in self.cut.iter_mut().zip(&self.sel.off1) {
            *cut &= *off1;
        }
    }

    /// The simulated schedule, `None` if the plan gets stuck.
    fn simulate(&self, c: &WeightChain, inst: &Instance, mem: &[u64]) -> Option<Schedule> {
        let plan = Plan {
            sel: &self.sel,
            cut: self.cut.clone(),
            policy: self.policy,
        };
        simulate(c, inst, mem, &plan)
    }

    /// The bits of one kind: 0 = (k, 0), 1 = (k, 1), 2 = the cut.
    fn bits(&mut self, kind: usize) -> &mut Vec<bool> {
        match kind {
            0 => &mut self.sel.off0,
            1 => &mut self.sel.off1,
            _ => &mut self.cut,
        }
    }
}

/// The streaming plan (R, K, c) (module documentation).
pub fn streaming(l: usize, r: usize, k: usize, cut: usize, policy: Policy) -> OwnedPlan {
    let off0: Vec<bool> = (1..=l).map(|i| i > r).collect();
    let off1: Vec<bool> = (1..=l).map(|i| i <= k).collect();
    let mut cuts = vec![false; l];
    for i in (1..=k.min(l)).rev().take(cut) {
        cuts[i - 1] = true;
    }
    OwnedPlan {
        sel: Selection { off0, off1 },
        cut: cuts,
        policy,
    }
}

/// One move of the neighbourhood.
#[derive(Clone, Copy, Debug)]
enum Move {
    /// Flip decision `kind` of layer k (0-based).
    Flip(usize, usize),
    /// Swap decision `kind` of layers k and k + 1.
    Swap(usize, usize),
    /// Flip (k, 0) and (k, 1) of layer k.
    Both(usize),
    /// Toggle the discount (0) or the uploads (1).
    Policy(u8),
}

fn apply(p: &OwnedPlan, m: Move) -> Option<OwnedPlan> {
    let mut q = p.clone();
    match m {
        Move::Flip(kind, k) => q.bits(kind)[k] ^= true,
        Move::Swap(kind, k) => {
            let b = q.bits(kind);
            if b[k] == b[k + 1] {
                return None;
            }
            b.swap(k, k + 1);
        }
        Move::Both(k) => {
            q.sel.off0[k] ^= true;
            q.sel.off1[k] ^= true;
        }
        Move::Policy(0) => q.policy.discount ^= true,
        Move::Policy(_) => q.policy.uploads ^= true,
    }
    q.normalise();
    (q != *p).then_some(q)
}

fn moves(l: usize) -> Vec<Move> {
    let mut v = vec![Move::Policy(0), Move::Policy(1)];
    for kind in 0..3 {
        v.extend((0..l).map(|k| Move::Flip(kind, k)));
        v.extend((0..l.saturating_sub(1)).map(|k| Move::Swap(kind, k)));
    }
    v.extend((0..l).map(Move::Both));
    v
}

/// The search's state: the best checked schedule and the clock.
struct Search<'a> {
    c: &'a WeightChain,
    inst: &'a Instance,
    mem: Vec<u64>,
    /// The work done against the limit (one unit per plan evaluated).
    meter: Meter,
    /// Stop once a checked period is at most this.
    target: i64,
    /// The best checked period so far (the start's, at first).
    best_period: i64,
    best: Option<(String, Checked, OwnedPlan)>,
}

impl Search<'_> {
    fn out_of_time(&self) -> bool {
        self.meter.spent() || self.best_period <= self.target
    }

    /// The simulated period of `p`; checks (and keeps) its schedule when it
    /// beats the best checked period.
    fn eval(&mut self, p: &OwnedPlan, origin: &str) -> Option<i64> {
        self.meter.charge();
        let s = p.simulate(self.c, self.inst, &self.mem)?;
        let period = s.period?.0;
        if period < self.best_period {
            match check(self.inst, &s) {
                CheckOutcome::Valid(k) if k.makespan().0 < self.best_period => {
                    self.best_period = k.makespan().0;
                    self.best = Some((origin.to_string(), k, p.clone()));
                }
                // Never trust the simulation: a plan the checker rejects is not a move.
                _ => return None,
            }
        }
        Some(period)
    }

    /// Every seed (module documentation); the best one by simulated period.
    fn seeds(&mut self) -> Option<(OwnedPlan, i64, String)> {
        let l = self.c.l();
        let mut best: Option<(OwnedPlan, i64, String)> = None;
        let mut consider = |s: &mut Self, p: OwnedPlan, origin: String| {
            if let Some(period) = s.eval(&p, &origin) {
                if best.as_ref().is_none_or(|b| period < b.1) {
                    best = Some((p, period, origin));
                }
            }
        };
        for g in [Greedy::paper(), Greedy::no_discount()] {
            let name = super::super::Heuristic::name(&g);
            for sel in g.selections(self.c).0 {
                for cut in cut_masks(l, &sel) {
                    let p = OwnedPlan {
                        sel: sel.clone(),
                        cut,
                        policy: g.policy(),
                    };
                    consider(self, p, name.to_string());
                }
            }
        }
        for policy in POLICIES {
            for r in 0..=l {
                for k in 0..=l {
                    if self.out_of_time() {
                        return best;
                    }
                    for cut in STREAM_CUTS {
                        let p = streaming(l, r, k, cut, policy);
                        consider(self, p, format!("streaming(R={r},K={k},c={cut})"));
                    }
                }
            }
        }
        best
    }

    /// First-improvement hill climbing from `p` (simulated period `period`).
    fn climb(&mut self, mut p: OwnedPlan, mut period: i64, origin: &str) -> (OwnedPlan, i64) {
        let all = moves(self.c.l());
        'climb: loop {
            for &m in &all {
                if self.out_of_time() {
                    break 'climb;
                }
                let Some(q) = apply(&p, m) else { continue };
                if let Some(x) = self.eval(&q, origin) {
                    if x < period {
                        (p, period) = (q, x);
                        continue 'climb;
                    }
                }
            }
            break;
        }
        (p, period)
    }
}

/// xorshift64: the perturbations' fixed-seed generator.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A strictly better checked schedule than `start` (module documentation),
/// with the name of the plan it grew from (`<origin>+improve`), or `None`.
/// Stops early once the period reaches `target` (e.g. ⌈a certified bound⌉).
pub fn improve(
    c: &WeightChain,
    inst: &Instance,
    start: &Checked,
    target: Option<i64>,
    effort: impl Into<Effort>,
) -> Option<(String, Checked)> {
    let mem = c.op_memory()?;
    let l = c.l();
    let mut s = Search {
        c,
        inst,
        mem,
        meter: effort.into().start(),
        target: target.unwrap_or(i64::MIN),
        best_period: start.makespan().0,
        best: None,
    };
    let (seed, period, origin) = s.seeds()?;
    let (mut cur, mut cur_period) = s.climb(seed, period, &origin);
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut stall = 0;
    while !s.out_of_time() && l > 0 && stall < STALL_PER_LAYER * l {
        stall += 1;
        let mut q = cur.clone();
        for _ in 0..2 + next(&mut rng) % PERTURB {
            let kind = (next(&mut rng) % 3) as usize;
            let k = (next(&mut rng) % l as u64) as usize;
            q.bits(kind)[k] ^= true;
        }
        q.normalise();
        let Some(x) = s.eval(&q, &origin) else {
            continue;
        };
        let (q, x) = s.climb(q, x, &origin);
        if x < cur_period {
            (cur, cur_period) = (q, x);
            stall = 0;
        }
    }
    s.best
        .map(|(origin, k, _)| (format!("{origin}+improve"), k))
}
