//! The whole-tensor window bound `whole-tensor-windows`
//! (`proofs/ACTIVATION-BOUNDS.md`, "Whole-tensor windows"): the makespan is the
//! compute sum Σu plus the compute stream's idle gaps, and windows of the op
//! sequence are shown to hold idle time because whole tensors must cross the
//! link inside them while the ops there leave no room for them.
//!
//! For an op p with deficit D = need(p) − M_GPU > 0, the set A of activations
//! absent from the GPU at p's start is a set of *whole* x_j (j < i(p)) with
//! Σ_A |x_j| ≥ D. Each x_j ∈ A was offloaded inside [end of F_{j−1}, s(p)]
//! and is prefetched inside [s(p), s(B_j)]. A transfer of x_j cannot overlap
//! an op q that *blocks* it: q holds need(q) − offloadable(q) bytes to its
//! end, so with x_j on the GPU (an offload's source stays until its end, a
//! prefetch reserves at its start) there must be |x_j| bytes of slack. For a
//! size threshold θ, the tensors of A in a window with |x_j| ≥ θ occupy the
//! link for at least Σ ⌈|x_j|/β⌉, of which the ops in the window with slack
//! ≥ θ can hide at most their durations: the rest is compute idle inside the
//! window. The least such excess over every whole set A (a min-cover subset
//! sum, exact by a bitset DP, or its fractional value when the DP would be
//! too large) is the window's idle; windows with disjoint gaps add up
//! (weighted interval scheduling).
//!
//! Owns: [`whole_tensor_windows`], [`windows`], [`best_disjoint`],
//! [`Window`], [`WindowKind`], [`WholeTensorWindows`].
//! Must not import: exact solvers, heuristics, the simulator, traces, reports,
//! the CLI.

use super::{infeasible, ChainProfile};
use crate::bound::BoundError;
use crate::family::ActivationChain;
use crate::model::ReleaseRule;
use num_bigint::BigInt;
use num_rational::BigRational;

pub struct WholeTensorWindows;

pub const SOURCE: &str = "whole-tensor-windows";

/// The largest bitset (in bits) the min-cover DP builds; beyond it the
/// fractional cover (the deficit itself) is used, which is still a bound.
const DP_BITS: u128 = 1 << 20;

/// Which transfers a window holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowKind {
    /// The offloads of A ∩ [from, i(anchor)): from the end of F_{from−1} (0
    /// for from = 0) to the anchor's start; gaps from..=anchor.
    Head,
    /// The prefetches of A ∩ [from, i(anchor)): from the anchor's start to
    /// the start of B_from; gaps anchor+1..=idx(B_from).
    Tail,
}

/// A window with a certified idle time: the compute-idle gaps g_lo ..= g_hi
/// (g_k is the idle time just before op k in the order F₀ … F_L, B_L … B₀)
/// add up to at least `idle` ticks in every valid schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub lo: usize,
    pub hi: usize,
    pub idle: u128,
    pub kind: WindowKind,
    /// The op whose start the window is anchored at (position in the order).
    pub anchor: usize,
    /// The least layer index j of the tensors counted.
    pub from: usize,
}

/// The bound in ticks under a release rule: Σu + the best disjoint windows.
pub fn whole_tensor_windows(
    c: &ActivationChain,
    rule: ReleaseRule,
) -> Result<BigRational, BoundError> {
    let prof = ChainProfile::new(c);
    if let Some(e) = infeasible(SOURCE, &prof, c.gpu_memory) {
        return Err(e);
    }
    let idle = best_disjoint(&windows_of(c, &prof, rule));
    Ok(BigRational::from_integer(
        BigInt::from(prof.total_compute()) + BigInt::from(idle),
    ))
}

/// Every window with a positive certified idle time (for reports and tests).
pub fn windows(c: &ActivationChain, rule: ReleaseRule) -> Result<Vec<Window>, BoundError> {
    let prof = ChainProfile::new(c);
    if let Some(e) = infeasible(SOURCE, &prof, c.gpu_memory) {
        return Err(e);
    }
    Ok(windows_of(c, &prof, rule))
}

/// The largest total idle of windows whose gap ranges are pairwise disjoint
/// (weighted interval scheduling; gaps are disjoint time intervals, so idle
/// times certified for disjoint gap sets add up).
pub fn best_disjoint(ws: &[Window]) -> u128 {
    let mut ws: Vec<&Window> = ws.iter().collect();
    ws.sort_by_key(|w| (w.hi, w.lo));
    let mut dp = vec![0u128; ws.len() + 1];
    for t in 0..ws.len() {
        // Windows 0..k end before ws[t] begins.
        let k = ws[..t].partition_point(|w| w.hi < ws[t].lo);
        dp[t + 1] = dp[t].max(dp[k] + ws[t].idle);
    }
    dp[ws.len()]
}

/// Per-chain figures the window search reads, all in bytes or ticks.
struct Setup {
    /// Layers L+1; ops are 0..2n in the fixed order.
    n: usize,
    x: Vec<u128>,
    /// ⌈|x_j| τ / b⌉: the least duration of a transfer of x_j (R5).
    tau: Vec<u128>,
    /// The distinct thresholds θ: 0 and every positive |x_j|, j ≤ L.
    thetas: Vec<u128>,
    /// Per θ: prefix sums over ops of u_q for ops with slack(q) ≥ θ.
    usable: Vec<Vec<u128>>,
    /// Per θ: prefix sums over F_k (by k) of u_{F_k} for blocked F_k with
    /// |x_k| ≥ θ (F_k may overlap the offload of its own input x_k).
    own: Vec<Vec<u128>>,
    /// Per θ: prefix sums over j of |x_j| for 0 < |x_j| and |x_j| ≥ θ.
    costly: Vec<Vec<u128>>,
    /// Per θ: prefix sums over j of τ_j for the same tensors (the cost of
    /// taking every costly tensor: an upper bound on the least cover's).
    costly_tau: Vec<Vec<u128>>,
    /// Tensor indices 0..=L by decreasing size (for the greedy cover).
    by_size: Vec<usize>,
    /// β = beta_bytes / beta_ticks.
    beta_bytes: u128,
    beta_ticks: u128,
}

fn ceil_div(a: u128, b: u128) -> u128 {
    a.div_ceil(b)
}

impl Setup {
    fn new(c: &ActivationChain, prof: &ChainProfile, rule: ReleaseRule) -> Setup {
        let n = c.layers.len();
        let cap = c.gpu_memory as u128;
        let bw = c.bandwidth.to_bandwidth();
        let x: Vec<u128> = (0..=n + 1).map(|j| c.x_size(j) as u128).collect();
        let tau: Vec<u128> = x
            .iter()
            .map(|&v| ceil_div(v * bw.ticks as u128, bw.bytes as u128))
            .collect();
        let slack: Vec<u128> = (0..2 * n)
            .map(|q| cap.saturating_sub(held(c, prof, rule, q)))
            .collect();
        let u: Vec<u128> = prof
            .duration
            .iter()
            .map(|&d| u128::try_from(d).unwrap_or(0))
            .collect();
        let mut by_size: Vec<usize> = (0..n).collect();
        by_size.sort_by(|a, b| x[*b].cmp(&x[*a]));
        let mut thetas: Vec<u128> = x[..n].iter().copied().filter(|&v| v > 0).collect();
        thetas.push(0);
        thetas.sort_unstable();
        thetas.dedup();
        let prefix = |f: &dyn Fn(usize) -> u128, len: usize| -> Vec<u128> {
            let mut v = vec![0u128; len + 1];
            for k in 0..len {
                v[k + 1] = v[k] + f(k);
            }
            v
        };
        let mut usable = Vec::with_capacity(thetas.len());
        let mut own = Vec::with_capacity(thetas.len());
        let mut costly = Vec::with_capacity(thetas.len());
        let mut costly_tau = Vec::with_capacity(thetas.len());
        for &th in &thetas {
            usable.push(prefix(&|q| if slack[q] >= th { u[q] } else { 0 }, 2 * n));
            own.push(prefix(
                &|k| {
                    if x[k] > 0 && x[k] >= th && slack[k] < th {
                        u[k]
                    } else {
                        0
                    }
                },
                n,
            ));
            costly.push(prefix(
                &|j| if x[j] > 0 && x[j] >= th { x[j] } else { 0 },
                n,
            ));
            costly_tau.push(prefix(
                &|j| if x[j] > 0 && x[j] >= th { tau[j] } else { 0 },
                n,
            ));
        }
        Setup {
            n,
            x,
            tau,
            thetas,
            usable,
            own,
            costly,
            costly_tau,
            by_size,
            beta_bytes: bw.bytes as u128,
            beta_ticks: bw.ticks as u128,
        }
    }

    /// ⌈bytes · τ / b⌉: a lower bound on Σ⌈|x_j| τ / b⌉ over any tensors whose
    /// sizes add up to `bytes` (a sum of ceilings is at least the ceiling of
    /// the sum).
    fn ticks_for(&self, bytes: u128) -> u128 {
        ceil_div(bytes * self.beta_ticks, self.beta_bytes)
    }

    /// Position of B_m in the order.
    fn idx_b(&self, m: usize) -> usize {
        2 * self.n - 1 - m
    }
}

/// Bytes op q holds on the GPU over its whole run besides the activations
/// x_j, j < i(q): under `after_end` need(q) − offloadable(q) (its inputs to
/// its end, R10; its outputs and scratch from its start); under the
/// relaxation `after_start` only its scratch, since inputs may go once it
/// has started (a conservative figure: fewer ops block, the bound is lower).
fn held(c: &ActivationChain, prof: &ChainProfile, rule: ReleaseRule, q: usize) -> u128 {
    match rule {
        ReleaseRule::AfterEnd => prof.need[q] - prof.offloadable[q],
        ReleaseRule::AfterStart => {
            let (i, fwd) = prof.layer[q];
            let l = &c.layers[i];
            (if fwd { l.ex_f } else { l.ex_b }) as u128
        }
    }
}

/// Every window with positive idle, for every anchor with a deficit.
fn windows_of(c: &ActivationChain, prof: &ChainProfile, rule: ReleaseRule) -> Vec<Window> {
    let s = Setup::new(c, prof, rule);
    let cap = c.gpu_memory as u128;
    let mut out = vec![];
    for p in 0..2 * s.n {
        let d = prof.need[p].saturating_sub(cap);
        if d == 0 {
            continue;
        }
        let ip = prof.layer[p].0;
        for m in (0..ip).rev() {
            anchor_windows(&s, p, ip, m, d, prof.x_prefix[ip], &mut out);
        }
    }
    out
}

/// The head and tail windows of anchor p over the tensors x_m … x_{ip−1}.
fn anchor_windows(
    s: &Setup,
    p: usize,
    ip: usize,
    m: usize,
    deficit: u128,
    offloadable: u128,
    out: &mut Vec<Window>,
) {
    let end_b = s.idx_b(m);
    let (mut head, mut tail) = (0u128, 0u128);
    // The last cover computed (items, deficit, cost): consecutive thresholds
    // often leave the same items.
    let mut last: Option<(Vec<usize>, u128, u128)> = None;
    for t in 0..s.thetas.len() {
        let th = s.thetas[t];
        let costly_vol = s.costly[t][ip] - s.costly[t][m];
        let free = offloadable - costly_vol;
        if deficit <= free {
            continue;
        }
        let r = deficit - free;
        let u_tail = s.usable[t][end_b] - s.usable[t][p];
        let u_head = s.usable[t][p] - s.usable[t][m] + s.own[t][ip] - s.own[t][m];
        // Upper estimates of the least cover's cost (every costly tensor,
        // then a greedy cover): skip θ if even they cannot raise either
        // window.
        let worth = |c: u128, u: u128, best: u128| c > u && c - u > best;
        let all = s.costly_tau[t][ip] - s.costly_tau[t][m];
        if !worth(all, u_head, head) && !worth(all, u_tail, tail) {
            continue;
        }
        let greedy = greedy_cover_cost(s, m, ip, th, r);
        if !worth(greedy, u_head, head) && !worth(greedy, u_tail, tail) {
            continue;
        }
        let items: Vec<usize> = (m..ip).filter(|&j| s.x[j] > 0 && s.x[j] >= th).collect();
        let cost = if s.ticks_for(r) >= greedy {
            // The fractional cover already costs as much as a whole one.
            greedy
        } else if let Some((_, _, c)) = last.as_ref().filter(|l| l.0 == items && l.1 == r) {
            *c
        } else {
            let sizes: Vec<u128> = items.iter().map(|&j| s.x[j]).collect();
            let c = s.ticks_for(min_cover_sum(&sizes, r));
            last = Some((items, r, c));
            c
        };
        head = head.max(cost.saturating_sub(u_head));
        tail = tail.max(cost.saturating_sub(u_tail));
    }
    for (kind, idle, lo, hi) in [
        (WindowKind::Head, head, m, p),
        (WindowKind::Tail, tail, p + 1, end_b),
    ] {
        if idle > 0 {
            out.push(Window {
                lo,
                hi,
                idle,
                kind,
                anchor: p,
                from: m,
            });
        }
    }
}

/// Σ τ_j of the cover that takes the costly tensors of [m, ip) (size ≥ θ)
/// largest first until they reach `r` (a feasible cover, so at least the
/// least cover's cost); `u128::MAX` when they cannot reach `r`.
fn greedy_cover_cost(s: &Setup, m: usize, ip: usize, th: u128, r: u128) -> u128 {
    let (mut vol, mut cost) = (0u128, 0u128);
    for &j in &s.by_size {
        if vol >= r {
            break;
        }
        if (m..ip).contains(&j) && s.x[j] > 0 && s.x[j] >= th {
            vol += s.x[j];
            cost += s.tau[j];
        }
    }
    if vol >= r {
        cost
    } else {
        u128::MAX
    }
}

/// A lower bound on the least subset sum of `sizes` that is at least `r`
/// (exact by a bitset DP over multiples of the sizes' gcd, or `r` itself
/// when the DP would exceed [`DP_BITS`]). `r` when no subset reaches it
/// (the caller's anchor then has no valid schedule; `r` keeps it a bound).
pub fn min_cover_sum(sizes: &[u128], r: u128) -> u128 {
    if r == 0 {
        return 0;
    }
    let large = sizes.iter().copied().filter(|&v| v >= r).min();
    let small: Vec<u128> = sizes.iter().copied().filter(|&v| v < r).collect();
    let total: u128 = small.iter().sum();
    let g = small.iter().fold(0u128, |g, &v| gcd(g, v));
    let from_small = if total < r || g == 0 {
        None
    } else if (total - r) / g < r.div_ceil(g) {
        // Fewer bits the other way round: the least cover leaves out the
        // largest subset whose sum is at most total − r.
        let k = (total - r) / g;
        reachable(&small, g, k)
            .and_then(|bits| (0..=k as usize).rev().find(|&i| bit(&bits, i)))
            .map(|i| total - i as u128 * g)
    } else {
        let rg = r.div_ceil(g);
        let hi = rg + small.iter().max().copied().unwrap_or(0) / g;
        reachable(&small, g, hi)
            .and_then(|bits| (rg as usize..=hi as usize).find(|&i| bit(&bits, i)))
            .map(|i| i as u128 * g)
    };
    match (from_small, large) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) => a,
        (None, Some(b)) => b,
        // The DP was too large (or nothing reaches r): the fractional cover.
        (None, None) => r,
    }
}

/// The subset sums of `sizes` (in units of g) up to `hi`, as a bitset; `None`
/// when it would exceed [`DP_BITS`].
fn reachable(sizes: &[u128], g: u128, hi: u128) -> Option<Vec<u64>> {
    if hi + 1 > DP_BITS {
        return None;
    }
    let mut bits = vec![0u64; (hi as usize + 1).div_ceil(64)];
    bits[0] = 1;
    for &v in sizes {
        if v / g <= hi {
            shift_or(&mut bits, (v / g) as usize);
        }
    }
    // Clear the bits above hi (the top word's spare bits).
    let spare = bits.len() * 64 - (hi as usize + 1);
    if spare > 0 {
        let last = bits.len() - 1;
        bits[last] &= u64::MAX >> spare;
    }
    Some(bits)
}

fn bit(bits: &[u64], i: usize) -> bool {
    bits[i / 64] >> (i % 64) & 1 == 1
}

/// bits |= bits << v, in place (from the top word down, so every word read
/// is still the old one).
fn shift_or(bits: &mut [u64], v: usize) {
    let (ws, bs) = (v / 64, v % 64);
    for i in (ws..bits.len()).rev() {
        let mut w = bits[i - ws] << bs;
        if bs > 0 && i > ws {
            w |= bits[i - ws - 1] >> (64 - bs);
        }
        bits[i] |= w;
    }
}

fn gcd(a: u128, b: u128) -> u128 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl super::RuleBound for WholeTensorWindows {
    const SOURCE: &'static str = SOURCE;
    fn value(c: &ActivationChain, rule: ReleaseRule) -> Result<BigRational, BoundError> {
        whole_tensor_windows(c, rule)
    }
}
