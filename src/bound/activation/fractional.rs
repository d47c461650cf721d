//! The optimum of the fractional relaxation (activation paper §4, Theorem 2):
//! the no-wait, eager, ordered schedule that offloads exactly
//! Q = M_peak − M_GPU bytes, with transfers that may be split anywhere and
//! release (offload) or take (prefetch) memory byte by byte as they go.
//!
//! Every valid schedule of our model is a schedule of this relaxation (whole,
//! non-interruptible transfers that release at their end and reserve at their
//! start are special cases), so its optimum is a lower bound; Theorem 2 says this
//! schedule attains it. Both steps are argued in `proofs/ACTIVATION-BOUNDS.md`,
//! and the property tests compare the value with checked heuristic makespans and
//! exact optima. Which value is registered depends on the release rule
//! (MODEL.md R10): under the default rule an op holds its inputs to its end,
//! the paper's reading, and the value is the paper's; under the relaxation
//! `after_start` its dying inputs may go once it has started, and the value is
//! adapted to that (lower or equal).
//!
//! The schedule is computed by an exact event sweep in rationals (no floats):
//! - ops run in order F₀ … F_L, B_L … B₀, each as soon as the previous one ended,
//!   the bytes on the CPU `c` satisfy need − c ≤ M_GPU, and the op's own
//!   activations are resident (c ≤ Σ_{j<i} |x_j|);
//! - the link first offloads the eager prefix (x₀, x₁, … up to Q bytes) at rate
//!   β, each x_i once F_i has started (so F_i found it);
//! - then it prefetches (highest index first) at rate β, as early as it can
//!   without ever taking memory that the running op or a later one needs:
//!   c never drops below max over those ops of (need − M_GPU).
//!
//! Owns: [`fractional_optimum`], [`fractional_optimum_under`],
//! [`fractional_optimum_paper`], [`fractional_optimum_relaxed`],
//! [`FractionalOptimum`].
//!
//! Must not import: exact solvers, heuristics, the simulator, traces, reports,
//! the CLI.

use super::{infeasible, ChainProfile};
use crate::bound::{BoundError, Failure};
use crate::family::ActivationChain;
use crate::model::ReleaseRule;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, Zero};

pub struct FractionalOptimum;

pub const SOURCE: &str = "fractional-thm2";

fn int(v: u128) -> BigRational {
    BigRational::from_integer(BigInt::from(v))
}

/// The registered bound under the chain's own release rule
/// ([`fractional_optimum_under`] with `c.release`).
pub fn fractional_optimum(c: &ActivationChain) -> Result<BigRational, BoundError> {
    fractional_optimum_under(c, c.release)
}

/// The registered bound `fractional-thm2` under a release rule
/// (`proofs/ACTIVATION-BOUNDS.md`): under the default rule (an op holds its
/// operands to its end, as the paper's §3.1 says) the paper-literal value;
/// under the relaxation `after_start` the adapted value, which lets an op's
/// dying inputs go once it has started.
pub fn fractional_optimum_under(
    c: &ActivationChain,
    rule: ReleaseRule,
) -> Result<BigRational, BoundError> {
    match rule {
        ReleaseRule::AfterEnd => fractional_optimum_paper(c),
        ReleaseRule::AfterStart => fractional_optimum_relaxed(c),
    }
}

/// Makespan of the Theorem 2 schedule with the paper's reading of §3.1: an op
/// holds its inputs until it ends. Exact, in ticks. A lower bound under the
/// default rule (`instances/examples/chain3.json` at 8 B: 19, the optimum),
/// not under the relaxation (there the optimum of that instance is 15).
pub fn fractional_optimum_paper(c: &ActivationChain) -> Result<BigRational, BoundError> {
    fractional(c, false)
}

/// The same schedule adapted to the relaxation `after_start`: an op's inputs
/// that no later op reads (x_{i+1}, y_{i+1} for B_i, and x_0 for B_0) may be
/// released as soon as it has started. A lower bound under both rules, weaker
/// than [`fractional_optimum_paper`] under the default one.
pub fn fractional_optimum_relaxed(c: &ActivationChain) -> Result<BigRational, BoundError> {
    fractional(c, true)
}

fn fractional(c: &ActivationChain, early_release: bool) -> Result<BigRational, BoundError> {
    let prof = ChainProfile::new(c);
    if let Some(e) = infeasible(SOURCE, &prof, c.gpu_memory) {
        return Err(e);
    }
    let cap = c.gpu_memory as u128;
    let q = prof.m_peak().saturating_sub(cap);
    if q == 0 {
        return Ok(int(0) + BigRational::from_integer(BigInt::from(prof.total_compute())));
    }
    Sweep::new(c, &prof, q, early_release)
        .run()
        .map_err(|cause| BoundError::Failed {
            bound: SOURCE,
            cause,
        })
}

/// The fractional schedule as an event sweep in exact rationals: ops start
/// as early as memory and presence allow; the link offloads (phase 1, until
/// Q bytes are out) then prefetches, each time to its next target level.
struct Sweep<'a> {
    prof: &'a ChainProfile,
    cap: u128,
    q: u128,
    n: usize,
    beta: BigRational,
    /// `floor[p]`: the most any op p.. needs on the CPU at its start.
    floor: Vec<u128>,
    /// `running_floor[p]`: what op p still needs there while it runs, after
    /// releasing its dying inputs (if allowed), with the later ops' needs.
    running_floor: Vec<u128>,
    t: BigRational,
    /// Bytes only on the CPU.
    cpu: BigRational,
    /// Phase 1 until Q bytes are out.
    offloading: bool,
    /// Eager bytes whose first reader started.
    avail: BigRational,
    /// Next op to start.
    next: usize,
    running: Option<(usize, BigRational)>,
}

impl<'a> Sweep<'a> {
    fn new(c: &ActivationChain, prof: &'a ChainProfile, q: u128, early_release: bool) -> Sweep<'a> {
        let cap = c.gpu_memory as u128;
        let n = prof.need.len();
        let bw = c.bandwidth.to_bandwidth();
        // floor[p] = max over ops p.. of (need − cap)⁺: the CPU bytes that must stay
        // there while op p runs or is still to come.
        let mut floor = vec![0u128; n + 1];
        for p in (0..n).rev() {
            floor[p] = floor[p + 1].max(prof.need[p].saturating_sub(cap));
        }
        let running_floor: Vec<u128> = (0..n)
            .map(|p| {
                let during = if early_release {
                    prof.need[p] - prof.dying[p]
                } else {
                    prof.need[p]
                };
                floor[p + 1].max(during.saturating_sub(cap))
            })
            .collect();
        Sweep {
            prof,
            cap,
            q,
            n,
            beta: BigRational::new(BigInt::from(bw.bytes), BigInt::from(bw.ticks)),
            floor,
            running_floor,
            t: BigRational::zero(),
            cpu: BigRational::zero(),
            offloading: true,
            avail: BigRational::zero(),
            next: 0,
            running: None,
        }
    }

    /// The makespan. Each pass either starts or ends an op or moves the link
    /// to its next target; there are at most 2n op events and 2 link targets
    /// per op.
    fn run(mut self) -> Result<BigRational, Failure> {
        let q_r = int(self.q);
        for _ in 0..(64 * self.n + 64) {
            if let Some((_, end)) = &self.running {
                if *end <= self.t {
                    self.running = None;
                }
            }
            if self.offloading && self.cpu == q_r {
                self.offloading = false;
            }
            self.start_ops();
            if self.next == self.n && self.running.is_none() {
                if !self.cpu.is_zero() {
                    return Err(Failure::LeftOnCpu(self.cpu));
                }
                return Ok(self.t);
            }
            self.advance()?;
        }
        Err(Failure::NoConvergence)
    }

    /// Start every op that can start now (zero-length ones end at once).
    fn start_ops(&mut self) {
        let prof = self.prof;
        while self.running.is_none() && self.next < self.n {
            let p = self.next;
            let mem_ok = int(prof.need[p]) - &self.cpu <= int(self.cap);
            let present = self.cpu <= int(prof.offloadable[p]);
            if !(mem_ok && present) {
                break;
            }
            if prof.layer[p].1 {
                let i = prof.layer[p].0;
                self.avail = int(prof.x_prefix[i + 1].min(self.q));
            }
            let end = &self.t + int(prof.duration[p] as u128);
            self.next += 1;
            if end > self.t {
                self.running = Some((p, end));
            }
        }
    }

    /// The link's rate sign and the CPU level at which something changes.
    fn link_target(&self) -> (i8, Option<BigRational>) {
        let prof = self.prof;
        let waiting = self.running.is_none().then_some(self.next);
        if self.offloading {
            if self.cpu >= self.avail {
                return (0, None);
            }
            let mut goal = self.avail.clone();
            if let Some(p) = waiting {
                let lvl = int(prof.need[p].saturating_sub(self.cap));
                if lvl > self.cpu && lvl < goal {
                    goal = lvl;
                }
            }
            return (1, Some(goal));
        }
        let lo = int(match &self.running {
            Some((p, _)) => self.running_floor[*p],
            None => self.floor[self.next],
        });
        if self.cpu <= lo {
            return (0, None);
        }
        let mut goal = lo;
        if let Some(p) = waiting {
            let lvl = int(prof.offloadable[p]);
            if lvl < self.cpu && lvl > goal {
                goal = lvl;
            }
        }
        (-1, Some(goal))
    }

    /// Move time to the next link target or op end.
    fn advance(&mut self) -> Result<(), Failure> {
        let (rate_sign, target) = self.link_target();
        let link_at = target
            .as_ref()
            .map(|g| &self.t + (g - &self.cpu).abs() / &self.beta);
        let op_at = self.running.as_ref().map(|r| r.1.clone());
        let step_to = match (link_at, op_at) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => {
                return Err(Failure::Stuck {
                    at: Box::new(self.t.clone()),
                    op: self.prof.op_name(self.next),
                    cpu: Box::new(self.cpu.clone()),
                })
            }
        };
        let dt = &step_to - &self.t;
        match rate_sign {
            1 => self.cpu += &self.beta * &dt,
            -1 => self.cpu -= &self.beta * &dt,
            _ => {}
        }
        self.t = step_to;
        Ok(())
    }
}

impl super::RuleBound for FractionalOptimum {
    const SOURCE: &'static str = SOURCE;
    fn value(c: &ActivationChain, rule: ReleaseRule) -> Result<BigRational, BoundError> {
        fractional_optimum_under(c, rule)
    }
}
