//! Furthest-next-use eviction (Belady's rule) with early prefetch, over the
//! cyclic program (issue 25, Deliver 2): the `belady` heuristic's plans.
//!
//! Owns: [`BeladyOptions`], [`plan`] (one plan per option) and [`variants`]
//! (the options the heuristic tries). Must not import: the checker (the
//! caller checks every realised schedule).
//!
//! The plan walks the functions once per round, keeping a function-level
//! account of GPU memory that is conservative for the realiser
//! ([`super::plan::realise`]): `held` = the bytes resident (present, or a
//! prefetch issued) + the bytes of swap-outs not yet WAITed (an offload
//! releases its copy only at its end, which only a WAIT makes the realiser
//! wait for). At each function f:
//! 1. make room for f's variables that are not resident: WAIT the oldest
//!    swap-out, else evict the resident variable, not used by f and not
//!    prefetched for a later function, whose next use is furthest (across the
//!    iteration boundary for persistent variables), placed after its last use
//!    (a drop if its host copy is current, else a swap-out); a variable of S₀
//!    not used yet leaves S₀ instead;
//! 2. swap in what f reads and is away; reserve what f writes;
//! 3. after f: drop the non-persistent variables f uses last;
//! 4. prefetch, in order of use, what the next `lookahead` functions read and
//!    is away (a value that exists: persistent, or written already in this
//!    iteration), while it fits beside the largest footprint among the
//!    functions until that use (so that no later function is left without
//!    room), evicting for it only variables used after it, as the option says.
//!
//! Steady state: S₀'s GPU set starts as every used persistent variable and
//! shrinks to those still resident at the end of the round; S₀'s host copies
//! are the round's final ones. Rounds repeat until the end state equals the
//! start state (each round shrinks S₀'s GPU set or fixes host copies, so at
//! most 2·(variables)+2 rounds); a persistent variable resident at the end
//! but not in S₀ is evicted after its last use.

use super::plan::{Action, ActionPlan};
use crate::family::op_sequence::{Access, Uses};
use std::collections::VecDeque;

/// How the victim is chosen among the evictable variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Victim {
    /// Belady: the furthest next use (ties: the larger variable).
    Furthest,
    /// Furthest next use, a clean variable (no transfer to evict it) counting
    /// as twice as far.
    FurthestClean,
    /// The largest distance × bytes (fewer, larger evictions).
    FurthestBytes,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BeladyOptions {
    /// Prefetch a variable at most this many functions before its use.
    pub lookahead: usize,
    pub victim: Victim,
    /// When short of memory, drop a clean evictable variable (no transfer,
    /// no wait) before WAITing a swap-out; otherwise WAIT first.
    pub drop_first: bool,
    /// Whether a prefetch may evict, to make its room, variables whose next
    /// use comes after the prefetched one's.
    pub prefetch_room: PrefetchRoom,
}

/// What a prefetch may evict to make its room (only variables used later
/// than the prefetched one, Belady's exchange argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefetchRoom {
    /// Nothing: a prefetch waits for free memory.
    Never,
    /// Clean variables (dropped at once).
    Clean,
    /// Any, a dirty one swapped out and WAITed before the prefetch.
    Any,
}

/// No plan: function `function` needs `need` bytes, the memory is `budget`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoRoom {
    pub function: usize,
    pub need: u64,
    pub budget: u64,
}

impl std::fmt::Display for NoRoom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "function {} needs {} B beside what it cannot evict, memory is {} B",
            self.function, self.need, self.budget
        )
    }
}

/// The options the `belady` heuristic tries: every victim rule, WAIT or drop
/// first, every [`PrefetchRoom`], with the look-aheads 0, 1, 2, 4, 16, 64,
/// 256 functions and n (those below n; at most 64 where a prefetch may
/// evict).
pub fn variants(n: usize) -> Vec<BeladyOptions> {
    let mut las: Vec<usize> = [1usize, 2, 4, 16, 64, 256]
        .into_iter()
        .filter(|&l| l < n)
        .collect();
    las.insert(0, 0);
    las.push(n);
    las.dedup();
    let mut v = Vec::new();
    for prefetch_room in [PrefetchRoom::Never, PrefetchRoom::Clean, PrefetchRoom::Any] {
        for drop_first in [false, true] {
            for victim in [
                Victim::Furthest,
                Victim::FurthestClean,
                Victim::FurthestBytes,
            ] {
                for &lookahead in &las {
                    if prefetch_room != PrefetchRoom::Never && lookahead > 64 {
                        continue;
                    }
                    v.push(BeladyOptions {
                        lookahead,
                        victim,
                        drop_first,
                        prefetch_room,
                    });
                }
            }
        }
    }
    v
}

/// Per variable, the functions using it, in order; per function, its footprint.
struct Positions(Vec<Vec<usize>>, Vec<u64>);

impl Positions {
    fn of(u: &Uses) -> Positions {
        let mut p = vec![Vec::new(); u.bytes.len()];
        for (f, fu) in u.uses.iter().enumerate() {
            for &(v, _) in fu {
                p[v].push(f);
            }
        }
        Positions(p, (0..u.n()).map(|f| u.footprint(f)).collect())
    }
    /// The next use of `v` after function `f`; a persistent variable's wraps
    /// to the next iteration (+n); `None`: dead.
    fn next_after(&self, u: &Uses, v: usize, f: usize) -> Option<usize> {
        let p = &self.0[v];
        let k = p.partition_point(|&g| g <= f);
        match p.get(k) {
            Some(&g) => Some(g),
            None if u.persistent[v] => p.first().map(|&g| g + u.n()),
            None => None,
        }
    }
    fn last(&self, v: usize) -> Option<usize> {
        self.0[v].last().copied()
    }
}

/// What one round starts from and ends with.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Ends {
    gpu: Vec<bool>,
    cpu: Vec<bool>,
}

/// The plan for `o` at memory `cap`, or the function that finds no room.
pub fn plan(u: &Uses, cap: u64, o: &BeladyOptions) -> Result<ActionPlan, NoRoom> {
    let pos = Positions::of(u);
    let used = u.used_persistent();
    let nv = u.bytes.len();
    let mut start = Ends {
        gpu: used.clone(),
        cpu: u.persistent.clone(),
    };
    for _ in 0..2 * nv + 2 {
        let (p, s0, end) = Round::new(u, &pos, cap, o, &start).run()?;
        let steady = (0..nv).all(|v| {
            !u.persistent[v] || (s0.gpu[v] == end.gpu[v] && (!s0.gpu[v] || s0.cpu[v] == end.cpu[v]))
        });
        if steady {
            return Ok(p);
        }
        for v in (0..nv).filter(|&v| u.persistent[v]) {
            start.gpu[v] = s0.gpu[v] && end.gpu[v];
            start.cpu[v] = if start.gpu[v] { end.cpu[v] } else { true };
        }
    }
    // Not reached in practice: S₀ empty of GPU variables is always steady.
    start.gpu = vec![false; nv];
    start.cpu = u.persistent.clone();
    Round::new(u, &pos, cap, o, &start).run().map(|r| r.0)
}

/// One walk over the functions from a start state.
struct Round<'a> {
    u: &'a Uses,
    pos: &'a Positions,
    cap: u64,
    o: &'a BeladyOptions,
    p: ActionPlan,
    /// S₀ as it ends up (variables of S₀ evicted before their first use leave it).
    s0: Ends,
    res: Vec<bool>,
    cpu: Vec<bool>,
    /// The function after which a resident variable may be evicted (its last
    /// use so far); `None` for one prefetched and not yet used, or one of S₀
    /// not used yet (`s0.gpu`).
    after: Vec<Option<usize>>,
    pending: VecDeque<usize>,
    held: u64,
    /// Bytes prefetched for functions not yet run.
    ahead: u64,
}

impl<'a> Round<'a> {
    fn new(
        u: &'a Uses,
        pos: &'a Positions,
        cap: u64,
        o: &'a BeladyOptions,
        start: &Ends,
    ) -> Round<'a> {
        let held = (0..u.bytes.len())
            .filter(|&v| start.gpu[v])
            .map(|v| u.bytes[v])
            .sum();
        Round {
            u,
            pos,
            cap,
            o,
            p: ActionPlan::new(u.n()),
            s0: start.clone(),
            res: start.gpu.clone(),
            cpu: start.cpu.clone(),
            after: vec![None; u.bytes.len()],
            pending: VecDeque::new(),
            held,
            ahead: 0,
        }
    }

    fn run(mut self) -> Result<(ActionPlan, Ends, Ends), NoRoom> {
        let (u, n) = (self.u, self.u.n());
        for f in 0..n {
            self.make_room(f)?;
            self.bring_in(f);
            self.release_after(f);
            if f + 1 < n {
                self.prefetch_ahead(f);
            }
        }
        // Persistent variables resident at the end but not in S₀ leave after
        // their last use.
        for v in 0..u.bytes.len() {
            if u.persistent[v] && self.res[v] && !self.s0.gpu[v] {
                self.evict(v);
            }
        }
        let nv = u.bytes.len();
        self.p.gpu0 = (0..nv).filter(|&v| self.s0.gpu[v]).collect();
        self.p.cpu0 = (0..nv).filter(|&v| self.cpu[v]).collect();
        let end = Ends {
            gpu: self.res.clone(),
            cpu: self.cpu.clone(),
        };
        Ok((self.p, self.s0, end))
    }

    fn need(&self, f: usize) -> u64 {
        self.u.uses[f]
            .iter()
            .filter(|(v, _)| !self.res[*v])
            .map(|(v, _)| self.u.bytes[*v])
            .sum()
    }

    /// Step 1: WAIT swap-outs, then evict, until f's variables fit.
    fn make_room(&mut self, f: usize) -> Result<(), NoRoom> {
        let need = self.need(f);
        while self.held + need > self.cap {
            if self.o.drop_first {
                if let Some(v) = self.victim(f, true, None) {
                    self.evict(v);
                    continue;
                }
            }
            if let Some(v) = self.pending.pop_front() {
                self.p.begin[f].push(Action::Wait(v));
                self.held -= self.u.bytes[v];
                continue;
            }
            let Some(v) = self.victim(f, false, None) else {
                return Err(NoRoom {
                    function: f,
                    need: self.u.footprint(f) + self.ahead,
                    budget: self.cap,
                });
            };
            self.evict(v);
        }
        Ok(())
    }

    /// The evictable variable to evict before f, by the option's rule (only
    /// clean ones, whose eviction frees memory at once, when `clean_only`;
    /// only those next used after function `beyond`, when given).
    fn victim(&self, f: usize, clean_only: bool, beyond: Option<usize>) -> Option<usize> {
        let u = self.u;
        let mine = |v: usize| u.uses[f].iter().any(|&(x, _)| x == v);
        let mut best: Option<(u128, u64, usize)> = None;
        for v in 0..u.bytes.len() {
            if !self.res[v] || mine(v) || (self.after[v].is_none() && !self.s0.gpu[v]) {
                continue;
            }
            if self.after[v].is_none() && self.pos.0[v].first().is_some_and(|&g| g < f) {
                continue;
            }
            let clean = self.cpu[v] || self.after[v].is_none();
            if clean_only && !clean {
                continue;
            }
            let next = self.pos.next_after(u, v, f).unwrap_or(2 * u.n());
            if beyond.is_some_and(|g| next <= g) {
                continue;
            }
            let next = next - f;
            let key = match self.o.victim {
                Victim::Furthest => next as u128,
                Victim::FurthestClean => next as u128 * if clean { 2 } else { 1 },
                Victim::FurthestBytes => next as u128 * u.bytes[v] as u128,
            };
            let k = (key, u.bytes[v], usize::MAX - v);
            if best.is_none_or(|b| k > b) {
                best = Some(k);
            }
        }
        best.map(|(_, _, v)| usize::MAX - v)
    }

    /// Evict `v` after its last use so far (or take it out of S₀).
    fn evict(&mut self, v: usize) {
        let b = self.u.bytes[v];
        self.res[v] = false;
        match self.after[v].take() {
            None => {
                // In S₀ and not used yet: it starts on the host instead.
                self.s0.gpu[v] = false;
                self.s0.cpu[v] = true;
                self.cpu[v] = true;
                self.held -= b;
            }
            Some(g) if self.cpu[v] => {
                self.p.end[g].push(Some(Action::Drop(v)));
                self.held -= b;
            }
            Some(g) => {
                self.p.end[g].push(Some(Action::SwapOut(v)));
                self.cpu[v] = true;
                self.pending.push_back(v);
            }
        }
    }

    /// Take `v` onto the GPU (a swap-in in `begin[at]` when `data`).
    fn take(&mut self, v: usize, at: usize, data: bool) {
        if data {
            self.p.begin[at].push(Action::SwapIn(v));
        }
        self.res[v] = true;
        // A swap-out of v still counted: the realiser starts the swap-in only
        // after it ends, so one copy is held at a time.
        if let Some(k) = self.pending.iter().position(|&x| x == v) {
            self.pending.remove(k);
        } else {
            self.held += self.u.bytes[v];
        }
    }

    /// Step 2: swap in f's inputs that are away; reserve its first writes.
    fn bring_in(&mut self, f: usize) {
        for k in 0..self.u.uses[f].len() {
            let (v, acc) = self.u.uses[f][k];
            if !self.res[v] {
                self.take(v, f, acc.needs_data());
            } else if self.after[v].is_none() && !(self.s0.gpu[v] && self.unused_yet(v, f)) {
                // Prefetched for f earlier.
                self.ahead -= self.u.bytes[v];
            }
        }
    }

    fn unused_yet(&self, v: usize, f: usize) -> bool {
        self.pos.0[v].first().is_none_or(|&g| g >= f)
    }

    /// Step 3: host currency after f, and the drops of dead variables.
    fn release_after(&mut self, f: usize) {
        let u = self.u;
        for &(v, acc) in &u.uses[f] {
            if acc != Access::Read {
                self.cpu[v] = false;
            }
            self.after[v] = Some(f);
            if !u.persistent[v] && self.pos.last(v) == Some(f) {
                self.p.end[f].push(Some(Action::Drop(v)));
                self.res[v] = false;
                self.after[v] = None;
                self.held -= u.bytes[v];
            }
        }
    }

    /// Room for a prefetch of `b` bytes issued after f for function g: free
    /// memory, or (as the option allows) evictions of variables next used
    /// after g, a dirty one WAITed before the prefetch. False: no room.
    fn room_for_prefetch(&mut self, f: usize, g: usize, b: u64) -> bool {
        while self.held + b > self.cap {
            let clean_only = match self.o.prefetch_room {
                PrefetchRoom::Never => return false,
                PrefetchRoom::Clean => true,
                PrefetchRoom::Any => false,
            };
            let Some(w) = self.victim(f + 1, clean_only, Some(g)) else {
                return false;
            };
            self.evict(w);
            if let Some(k) = self.pending.iter().position(|&x| x == w) {
                self.pending.remove(k);
                self.p.begin[f + 1].push(Action::Wait(w));
                self.held -= self.u.bytes[w];
            }
        }
        true
    }

    /// Step 4: prefetch for the next functions, issued after f.
    fn prefetch_ahead(&mut self, f: usize) {
        let (u, n) = (self.u, self.u.n());
        let last = (f + self.o.lookahead).min(n - 1);
        let mut foot = 0u64;
        for g in f + 1..=last {
            foot = foot.max(self.pos.1[g]);
            let stuck = self.o.prefetch_room == PrefetchRoom::Never && self.held >= self.cap;
            if self.ahead + foot >= self.cap || stuck {
                break;
            }
            for k in 0..u.uses[g].len() {
                let (v, acc) = u.uses[g][k];
                let b = u.bytes[v];
                // Only a value that exists now: a persistent variable, or one
                // written already in this iteration (a copy of S₀'s host
                // copy would be overwritten by the first write, R1).
                let exists = u.persistent[v] || self.pos.0[v].first().is_some_and(|&w| w <= f);
                if self.res[v] || !acc.needs_data() || !exists {
                    continue;
                }
                if self.ahead + b + foot > self.cap {
                    continue;
                }
                if !self.room_for_prefetch(f, g, b) {
                    if self.o.prefetch_room == PrefetchRoom::Never {
                        continue;
                    }
                    // No victim is used after g, nor after any later use.
                    return;
                }
                self.take(v, f + 1, true);
                self.after[v] = None;
                self.ahead += b;
            }
        }
    }
}
