//! The locally adaptive window (out-of-core paper §3, Fig. 2) and nnabla's
//! variant (`swap_in_out_scheduler.cpp`, FAMILIES.md §4.3), selectable.
//!
//! Owns: [`WindowOptions`], [`plan`] (the actions) and the [`Window`] heuristic.
//! Must not import: the checker (the caller checks).
//!
//! Both variants slide a window over the variable sequence (each function's
//! variables, in order) and keep the bookkeeping `swap_in` (bytes counted on
//! the GPU) + `swap_out` (bytes of swap-outs not yet waited) ≤ B:
//! - (a) look ahead: admit records while the window's bytes stay ≤ W and
//!   `swap_in` ≤ B; a variable away on the host is swapped in at beginning(f)
//!   after WAITing the oldest swap-outs as needed; a first write only reserves;
//! - (b) reserve this function's outputs, WAITing the oldest swap-outs;
//! - (c)/(d) after f, a variable with no further use inside the window is
//!   dropped (dead, or its host copy is current) or swapped out (dirty).
//!
//! Differences (paper → nnabla): the paper counts every occurrence in the
//! window, nnabla unique variables; nnabla cancels a swap-out (or a pending
//! clean drop) of a variable that re-enters the window before its WAIT, where
//! the paper WAITs and swaps it in again; nnabla backtracks (cancels the
//! prefetches admitted beyond f and reschedules) when f's outputs do not fit;
//! the paper states no rule for that case, so its variant counts the current
//! function's outputs during the look-ahead and backtracks the same way
//! (without it, outputs of the next function admitted early could leave a
//! feasible budget with no schedule). offcert's own rule in both: the
//! current function's records are admitted even beyond W (the window always
//! holds the function being run), and a function whose own footprint does not
//! fit reports "not prefetched (out of GPU memory)", never a schedule.
//! End of iteration: every variable ends dropped or on the host, persistent
//! ones with a current host copy, so S₀ = (∅, host-current variables).

use super::plan::{Action, ActionPlan};
use crate::family::op_sequence::{Access, Uses};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Paper,
    Nnabla,
}

#[derive(Clone, Copy, Debug)]
pub struct WindowOptions {
    pub variant: Variant,
    /// Budget B in bytes.
    pub budget: u64,
    /// Window W in bytes (nnabla's default is 1.5·B).
    pub window: u64,
}

/// Why no plan exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotPrefetched {
    pub function: usize,
    pub need: u64,
    pub budget: u64,
}

impl std::fmt::Display for NotPrefetched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "some arrays were not prefetched (out of GPU memory): function {} needs {} B, budget {} B",
            self.function, self.need, self.budget
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Host,
    In,
    Reserved,
    /// A swap-out (or clean drop) emitted at end(f) entry k, not yet waited.
    Out(usize, usize),
}

struct Rec {
    f: usize,
    v: usize,
    acc: Access,
    /// Next function using the variable (any distance).
    next: Option<usize>,
}

fn records(u: &Uses) -> (Vec<Rec>, Vec<usize>) {
    let mut recs = Vec::new();
    let mut start = Vec::with_capacity(u.n() + 1);
    for (f, fu) in u.uses.iter().enumerate() {
        start.push(recs.len());
        for &(v, acc) in fu {
            recs.push(Rec {
                f,
                v,
                acc,
                next: None,
            });
        }
    }
    start.push(recs.len());
    let mut last = vec![None::<usize>; u.bytes.len()];
    for i in (0..recs.len()).rev() {
        recs[i].next = last[recs[i].v].map(|j| recs[j].f);
        last[recs[i].v] = Some(i);
    }
    (recs, start)
}

/// The window's action plan, or the function that cannot be prefetched.
pub fn plan(u: &Uses, o: &WindowOptions) -> Result<ActionPlan, NotPrefetched> {
    let (recs, start) = records(u);
    let mut stopper = vec![0usize; recs.len()];
    loop {
        match attempt(u, o, &recs, &start, &mut stopper) {
            Attempt::Done(p) => return Ok(p),
            Attempt::Fail(e) => return Err(e),
            Attempt::Restart => {}
        }
    }
}

enum Attempt {
    Done(ActionPlan),
    Fail(NotPrefetched),
    Restart,
}

struct Book {
    st: Vec<St>,
    count: Vec<u32>,
    cpu_current: Vec<bool>,
    swap_in: u64,
    swap_out: u64,
    window: u64,
    queue: VecDeque<(usize, usize, usize)>,
}

impl Book {
    /// WAIT the oldest live swap-out; false if none.
    fn wait_oldest(&mut self, u: &Uses, p: &mut ActionPlan, f: usize) -> bool {
        while let Some((v, g, k)) = self.queue.pop_front() {
            if self.st[v] == St::Out(g, k) {
                self.st[v] = St::Host;
                self.swap_out -= u.bytes[v];
                if matches!(p.end[g][k], Some(Action::SwapOut(_))) {
                    p.begin[f].push(Action::Wait(v));
                }
                return true;
            }
        }
        false
    }
}

/// One pass of the window over the records, until it finishes, fails, or
/// backtracks (`stopper` then holds the records it may no longer prefetch).
/// Each function takes the paper's four steps, one method each below.
fn attempt(
    u: &Uses,
    o: &WindowOptions,
    recs: &[Rec],
    start: &[usize],
    stopper: &mut [usize],
) -> Attempt {
    let nv = u.bytes.len();
    let mut pass = Pass {
        u,
        o,
        recs,
        start,
        p: ActionPlan::new(u.n()),
        b: Book {
            st: vec![St::Host; nv],
            count: vec![0; nv],
            cpu_current: u.persistent.clone(),
            swap_in: 0,
            swap_out: 0,
            window: 0,
            queue: VecDeque::new(),
        },
        head: 0,
    };
    for f in 0..u.n() {
        pass.look_ahead(f, stopper);
        if let Some(stop) = pass.make_room_for_outputs(f, stopper) {
            return stop;
        }
        pass.commit_outputs(f);
        pass.release_after(f);
    }
    let Pass { mut p, b, .. } = pass;
    p.cpu0 = (0..nv).filter(|&v| b.cpu_current[v]).collect();
    Attempt::Done(p)
}

/// The state of one [`attempt`]: the plan so far, the bookkeeping, and the
/// look-ahead's head (the first record not yet admitted to the window).
struct Pass<'a> {
    u: &'a Uses,
    o: &'a WindowOptions,
    recs: &'a [Rec],
    start: &'a [usize],
    p: ActionPlan,
    b: Book,
    head: usize,
}

impl Pass<'_> {
    /// (a) Admit records into the window while they fit (W, and B for what
    /// must be on the GPU), emitting the swap-ins at beginning(f).
    fn look_ahead(&mut self, f: usize, stopper: &[usize]) {
        // Paper variant: this function's outputs count against B during the
        // look-ahead (it has no backtracking); nnabla reserves them only in (b).
        let mut own_res = 0u64;
        while self.head < self.recs.len() {
            if stopper[self.head] > f || !self.admit(f, &mut own_res) {
                break;
            }
            self.head += 1;
        }
    }

    /// Admit the record at the head, or say false (the look-ahead stops there).
    fn admit(&mut self, f: usize, own_res: &mut u64) -> bool {
        let (u, o, recs) = (self.u, self.o, self.recs);
        let r = &recs[self.head];
        let b = &mut self.b;
        let own = r.f == f;
        let bytes = u.bytes[r.v];
        let first = b.count[r.v] == 0;
        let counts = first || o.variant == Variant::Paper;
        if counts && !own && b.window + bytes > o.window {
            return false;
        }
        if first {
            if b.swap_in + *own_res + bytes > o.budget && !own {
                return false;
            }
            if let St::Out(g, k) = b.st[r.v] {
                match o.variant {
                    Variant::Nnabla => {
                        // Swap-out cancel: the variable never left.
                        if matches!(self.p.end[g][k], Some(Action::SwapOut(_))) {
                            b.cpu_current[r.v] = false;
                        }
                        self.p.end[g][k] = None;
                        b.st[r.v] = St::In;
                        b.swap_out -= bytes;
                        b.swap_in += bytes;
                    }
                    Variant::Paper => {
                        while b.st[r.v] != St::Host && b.wait_oldest(u, &mut self.p, f) {}
                    }
                }
            }
            if b.st[r.v] == St::Host {
                if r.acc == Access::Write {
                    b.st[r.v] = St::Reserved;
                    if own && o.variant == Variant::Paper {
                        *own_res += bytes;
                    }
                } else {
                    let room = |b: &Book| b.swap_in + b.swap_out + *own_res + bytes <= o.budget;
                    while !room(b) && b.wait_oldest(u, &mut self.p, f) {}
                    if !room(b) {
                        return false;
                    }
                    self.p.begin[f].push(Action::SwapIn(r.v));
                    b.swap_in += bytes;
                    b.st[r.v] = St::In;
                }
            }
        }
        if counts {
            b.window += bytes;
        }
        b.count[r.v] += 1;
        true
    }

    /// (b) WAIT the oldest swap-outs until f's reserved outputs fit. When they
    /// cannot, or f's own records were not all admitted: backtrack if records
    /// beyond f were admitted (cancel those prefetches), else fail.
    fn make_room_for_outputs(&mut self, f: usize, stopper: &mut [usize]) -> Option<Attempt> {
        let (u, recs, start, head, big) = (self.u, self.recs, self.start, self.head, self.o.budget);
        let b = &mut self.b;
        let need: u64 = (start[f]..start[f + 1].min(head))
            .filter(|&i| b.st[recs[i].v] == St::Reserved)
            .map(|i| u.bytes[recs[i].v])
            .sum();
        let short = head < start[f + 1];
        while !short
            && big.saturating_sub(b.swap_in + b.swap_out) < need
            && b.wait_oldest(u, &mut self.p, f)
        {}
        if !short && big.saturating_sub(b.swap_in + b.swap_out) >= need {
            return None;
        }
        if head > start[f + 1] {
            // Backtracking: cancel the prefetches admitted beyond f.
            for s in stopper.iter_mut().take(head).skip(start[f + 1]) {
                *s = (*s).max(f + 1);
            }
            return Some(Attempt::Restart);
        }
        Some(Attempt::Fail(NotPrefetched {
            function: f,
            need: u.footprint(f),
            budget: big,
        }))
    }

    /// (b) continued: f's reserved outputs are now on the GPU, and whatever f
    /// writes or modifies has no current host copy.
    fn commit_outputs(&mut self, f: usize) {
        let b = &mut self.b;
        for r in &self.recs[self.start[f]..self.start[f + 1]] {
            if b.st[r.v] == St::Reserved {
                b.st[r.v] = St::In;
                b.swap_in += self.u.bytes[r.v];
            }
            if r.acc != Access::Read {
                b.cpu_current[r.v] = false;
            }
        }
    }

    /// (c)/(d) After f: a variable with no further use inside the window is
    /// dropped (dead, or its host copy is current) or swapped out (dirty).
    fn release_after(&mut self, f: usize) {
        let (u, o) = (self.u, self.o);
        let (b, p) = (&mut self.b, &mut self.p);
        for r in &self.recs[self.start[f]..self.start[f + 1]] {
            let bytes = u.bytes[r.v];
            b.count[r.v] -= 1;
            if o.variant == Variant::Paper {
                b.window -= bytes;
            }
            if b.count[r.v] > 0 {
                continue;
            }
            if o.variant == Variant::Nnabla {
                b.window -= bytes;
            }
            b.swap_in -= bytes;
            let k = p.end[f].len();
            let dirty = !b.cpu_current[r.v];
            match r.next {
                None if !(u.persistent[r.v] && dirty) => {
                    p.end[f].push(Some(Action::Drop(r.v)));
                    b.st[r.v] = St::Host;
                }
                _ => {
                    p.end[f].push(Some(if dirty {
                        Action::SwapOut(r.v)
                    } else {
                        Action::Drop(r.v)
                    }));
                    b.cpu_current[r.v] = true;
                    b.st[r.v] = St::Out(f, k);
                    b.swap_out += bytes;
                    b.queue.push_back((r.v, f, k));
                }
            }
        }
    }
}
