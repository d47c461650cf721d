//! The SMT encoding as pure-integer SMT-LIB2 text (QF_LIA): the [`Encoding`]
//! (its constants, their names and the assertions), the constraints over the
//! whole schedule (compute and channel order, memory at every allocation,
//! the period), and the text itself. No z3 here: the same text is what the
//! in-process solver reads and what `write_refutation` puts in a certificate.
//!
//! The mathematics, with the rule each constraint encodes, is in `models/SMT.md`;
//! the structural limits and why they lose no optimum are in `proofs/SMT.md`.
//! Names below follow those documents: `S_k` op starts, `e_g/D_g/A_g` the
//! eviction (delete at D, prefetch at A) in gap g, `f_v/O_v` the offload of
//! version v, `K_t/T_t` the early delete after a tensor's last read, `C` the
//! makespan (one-shot) or period (cyclic).
//!
//! Owns: [`Encoding`] and its data ([`Gap`], [`Offload`], [`Tail`],
//! [`TensorPlan`], [`Alloc`], [`Release`]), the SMT-LIB2 helpers and the
//! global constraints. `plan.rs` owns each tensor's plan (its life, gaps,
//! offloads and early delete, with their own constraints), `decode.rs` the
//! decoding of a model; both import this file, never the reverse.
//! Must not import: bounds, heuristics, traces, reports, the CLI, the z3 crate
//! (the solver lives in `smt/mod.rs`), the other exact methods.

use crate::exact::{ExactError, Method};
use crate::model::{Direction, Instance, OpId, TensorId};
use std::fmt::Write;

pub(super) fn unsupported(reason: impl Into<String>) -> ExactError {
    ExactError::Unsupported {
        method: Method::Smt,
        reason: reason.into(),
    }
}

/// How a tensor's GPU life begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Alloc {
    /// On the GPU before the schedule (one-shot initial placement).
    Init,
    /// Allocated at the start of the op at this position.
    Op(usize),
    /// Persistent across periods (cyclic): never allocated, never released.
    Persistent,
}

/// How it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Release {
    /// Released at the start of the op at this position (after being read).
    Consume(usize),
    /// Released at the end of the op at this position.
    Free(usize),
    Never,
}

pub(super) struct TensorPlan {
    pub(super) size: u128,
    pub(super) alloc: Option<Alloc>,
    pub(super) release: Release,
    pub(super) gaps: Vec<usize>,
    pub(super) tail: Option<usize>,
    /// Index into `offloads` of the version alive at the period boundary (cyclic),
    /// or of the only version (one-shot).
    pub(super) last_version: Option<usize>,
    /// CPU copy current without any offload (initial `both`, or unmodified persistent).
    pub(super) cpu_free: bool,
}

/// One possible eviction of a tensor between two consecutive uses: delete at
/// `D`, prefetch at `A`, ready at `A + tau` before the next read.
#[derive(Clone, Debug)]
pub(crate) struct Gap {
    pub(super) tensor: TensorId,
    pub(super) tau: i64,
    /// Names of the SMT constants.
    pub(super) e: String,
    pub(super) d: String,
    pub(super) a: String,
    /// Positions of the use before (None: the initial placement) and the read after.
    pub(super) before: Option<usize>,
    pub(super) after: usize,
    /// Does the gap wrap into the next period (cyclic only)?
    pub(super) wraps: bool,
    /// The offload (version) whose CPU copy this eviction relies on.
    pub(super) version: Option<usize>,
}

/// The offload of one version of a tensor (one per version: proofs/SMT.md §2).
#[derive(Clone, Debug)]
pub(crate) struct Offload {
    pub(super) tensor: TensorId,
    pub(super) tau: i64,
    pub(super) f: String,
    pub(super) o: String,
}

/// An early delete after the last read (the tensor is dead but not yet freed).
#[derive(Clone, Debug)]
pub(crate) struct Tail {
    pub(super) tensor: TensorId,
    pub(super) k: String,
    pub(super) t: String,
}

/// The encoding of one instance: SMT-LIB2 declarations and assertions, and the
/// structure needed to decode a model.
pub(crate) struct Encoding {
    pub(super) cyclic: bool,
    /// The default release rule R10 (an op holds what it reads until it ends);
    /// false under the relaxation `after_start`.
    pub(super) after_end: bool,
    pub(super) order: Vec<OpId>,
    pub(super) dur: Vec<i64>,
    pub(super) gaps: Vec<Gap>,
    pub(super) offloads: Vec<Offload>,
    pub(super) tails: Vec<Tail>,
    pub(super) plans: Vec<TensorPlan>,
    pub(super) decls: Vec<String>,
    pub(super) asserts: Vec<String>,
    /// Memory unit (gcd of all sizes); sizes in the text are divided by it.
    pub unit: u128,
}

pub(super) fn s(k: usize) -> String {
    format!("S_{k}")
}

/// `(+ a b)` with small simplifications so that the text stays readable.
pub(super) fn plus(a: &str, b: i64) -> String {
    if b == 0 {
        a.to_string()
    } else if b > 0 {
        format!("(+ {a} {b})")
    } else {
        format!("(- {a} {})", -b)
    }
}

pub(super) fn and(v: &[String]) -> String {
    match v.len() {
        0 => "true".into(),
        1 => v[0].clone(),
        _ => format!("(and {})", v.join(" ")),
    }
}

pub(super) fn or(v: &[String]) -> String {
    match v.len() {
        0 => "false".into(),
        1 => v[0].clone(),
        _ => format!("(or {})", v.join(" ")),
    }
}

/// A memory measurement point (rule R7 is checked after every allocation);
/// a transfer's point exists only when the transfer does.
#[derive(Clone)]
enum Point {
    /// The start of the op at this position (op-start phase).
    OpStart(usize),
    /// A transfer start at this (normalised) time, existing when `guard` holds.
    Transfer { time: String },
}

impl Encoding {
    /// Normalised (into one period) start of an unrolled time.
    pub(super) fn norm(&self, x: &str) -> String {
        if self.cyclic {
            format!("(ite (>= {x} C) (- {x} C) {x})")
        } else {
            x.to_string()
        }
    }

    pub(super) fn constraints(&mut self, inst: &Instance) {
        let n = self.order.len();
        let mut a = vec![];
        // R4 + R8: ops in the fixed order, each lasting its duration; one stream (R2).
        a.push(format!("(<= 0 {})", s(0)));
        for k in 1..n {
            a.push(format!(
                "(<= {} {})",
                plus(&s(k - 1), self.dur[k - 1]),
                s(k)
            ));
        }
        // R8, cyclic: compute lies in [0, P]; a positive-duration op starts
        // before P (implied), a zero-duration one may start at P (it belongs to
        // the period that ends).
        let last = plus(&s(n - 1), self.dur[n - 1]);
        a.push(format!("(<= {last} C)"));
        if self.cyclic {
            // A period is positive (R8).
            a.push("(< 0 C)".into());
        } else {
            // Makespan: the last event end.
            for g in &self.gaps {
                a.push(format!("(=> {} (<= {} C))", g.e, plus(&g.a, g.tau)));
            }
            for o in &self.offloads {
                a.push(format!("(=> {} (<= {} C))", o.f, plus(&o.o, o.tau)));
            }
        }
        self.asserts.extend(a);

        // R2: transfers on one channel are disjoint (on the circle if cyclic).
        let mut transfers: Vec<(Direction, String, String, i64)> = vec![];
        for g in &self.gaps {
            transfers.push((Direction::Prefetch, g.e.clone(), g.a.clone(), g.tau));
        }
        for o in &self.offloads {
            transfers.push((Direction::Offload, o.f.clone(), o.o.clone(), o.tau));
        }
        let mut dis = vec![];
        for i in 0..transfers.len() {
            for j in i + 1..transfers.len() {
                let (di, ei, xi, ti) = &transfers[i];
                let (dj, ej, xj, tj) = &transfers[j];
                if inst.machine.channel(*di) != inst.machine.channel(*dj) {
                    continue;
                }
                let body = if self.cyclic {
                    let (yi, yj) = (self.norm(xi), self.norm(xj));
                    format!(
                        "(or (and (<= {} {yj}) (<= {} (+ {yi} C))) (and (<= {} {yi}) (<= {} (+ {yj} C))))",
                        plus(&yi, *ti),
                        plus(&yj, *tj),
                        plus(&yj, *tj),
                        plus(&yi, *ti)
                    )
                } else {
                    format!(
                        "(or (<= {} {xj}) (<= {} {xi}))",
                        plus(xi, *ti),
                        plus(xj, *tj)
                    )
                };
                dis.push(format!("(=> (and {ei} {ej}) {body})"));
            }
        }
        self.asserts.extend(dis);

        // R7: memory after every allocation: at each op start and transfer start.
        let cap = inst.machine.gpu_capacity.0 as u128 / self.unit;
        let mut points: Vec<(Point, String)> =
            (0..n).map(|k| (Point::OpStart(k), "true".into())).collect();
        for g in &self.gaps {
            points.push((
                Point::Transfer {
                    time: self.norm(&g.a),
                },
                g.e.clone(),
            ));
        }
        for o in &self.offloads {
            points.push((
                Point::Transfer {
                    time: self.norm(&o.o),
                },
                o.f.clone(),
            ));
        }
        let mut mem = vec![];
        for (p, guard) in &points {
            let sum = self.memory_at(inst, p);
            let c = format!("(<= {sum} {cap})");
            mem.push(if guard == "true" {
                c
            } else {
                format!("(=> {guard} {c})")
            });
        }
        self.asserts.extend(mem);
    }

    /// Σ size·[resident] + scratch of the running op, at a measurement point.
    fn memory_at(&self, inst: &Instance, p: &Point) -> String {
        let mut terms: Vec<String> = vec![];
        let mut constant: u128 = 0;
        for (i, plan) in self.plans.iter().enumerate() {
            if plan.size == 0 {
                continue;
            }
            let Some(alloc) = plan.alloc else { continue };
            let Some(mut cond) = self.within_life(p, alloc, plan.release) else {
                continue;
            };
            // Not evicted: outside every [D, A) (with the tie rules of the point).
            for &g in &plan.gaps {
                if let Some(x) = self.gap_absent(g, p) {
                    cond.push(format!("(not (and {} {x}))", self.gaps[g].e));
                }
            }
            if let Some(c) = self.not_deleted(inst, i, plan, alloc, p) {
                cond.push(c);
            }
            if cond.is_empty() {
                constant += plan.size;
            } else {
                terms.push(format!("(ite {} {} 0)", and(&cond), plan.size));
            }
        }
        match p {
            Point::OpStart(k) => constant += inst.op(self.order[*k]).temp.0 as u128 / self.unit,
            Point::Transfer { time, .. } => {
                for (k, o) in self.order.iter().enumerate() {
                    let tmp = inst.op(*o).temp.0 as u128 / self.unit;
                    if tmp > 0 && self.dur[k] > 0 {
                        terms.push(format!(
                            "(ite (and (<= {} {time}) (< {time} {})) {tmp} 0)",
                            s(k),
                            plus(&s(k), self.dur[k])
                        ));
                    }
                }
            }
        }
        if constant > 0 || terms.is_empty() {
            terms.push(constant.to_string());
        }
        if terms.len() == 1 {
            terms.pop().unwrap()
        } else {
            format!("(+ {})", terms.join(" "))
        }
    }

    /// The conditions for point `p` to lie within the life [allocation,
    /// release) (same-instant order of MODEL.md §2.4); `None` when it
    /// statically does not.
    fn within_life(&self, p: &Point, alloc: Alloc, release: Release) -> Option<Vec<String>> {
        let mut cond: Vec<String> = vec![];
        match (p, alloc) {
            (_, Alloc::Init) | (_, Alloc::Persistent) => {}
            (Point::OpStart(k), Alloc::Op(q)) => {
                if q > *k {
                    return None;
                }
            }
            (Point::Transfer { time, .. }, Alloc::Op(q)) => {
                cond.push(format!("(<= {} {time})", s(q)))
            }
        }
        match (p, release) {
            (_, Release::Never) => {}
            (Point::OpStart(k), Release::Consume(c)) => {
                if *k >= c {
                    return None;
                }
            }
            (Point::OpStart(k), Release::Free(f)) => {
                if *k > f {
                    return None;
                }
            }
            (Point::Transfer { time, .. }, Release::Consume(c)) => {
                cond.push(format!("(< {time} {})", s(c)))
            }
            (Point::Transfer { time, .. }, Release::Free(f)) => {
                cond.push(format!("(< {time} {})", plus(&s(f), self.dur[f])))
            }
        }
        Some(cond)
    }

    /// When gap `g`'s tensor is away at point `p` (given the gap is taken);
    /// `None`: never.
    fn gap_absent(&self, g: usize, p: &Point) -> Option<String> {
        let gp = &self.gaps[g];
        let within = |y: &str, op_point: bool| {
            if op_point {
                format!("(and (<= {} {y}) (<= {y} {}))", gp.d, gp.a)
            } else {
                format!("(and (<= {} {y}) (< {y} {}))", gp.d, gp.a)
            }
        };
        match p {
            Point::OpStart(k) => {
                let k = *k;
                let lo = gp.before.map(|b| b as i64).unwrap_or(-1);
                if gp.wraps {
                    if k as i64 > lo && self.dur[k] == 0 {
                        // Op k may sit at C (R8): a release at C counts
                        // before it only as an offload's delete flag.
                        Some(format!(
                            "(and {} (or (< {} C) {}))",
                            within(&s(k), true),
                            gp.d,
                            self.flagged_at_boundary(g)
                        ))
                    } else if k as i64 > lo {
                        Some(within(&s(k), true))
                    } else if k < gp.after {
                        Some(within(&format!("(+ {} C)", s(k)), true))
                    } else {
                        None
                    }
                } else if (k as i64) > lo && k < gp.after {
                    Some(within(&s(k), true))
                } else {
                    None
                }
            }
            Point::Transfer { time, .. } => {
                if gp.wraps {
                    Some(or(&[
                        within(time, false),
                        within(&format!("(+ {time} C)"), false),
                    ]))
                } else {
                    Some(within(time, false))
                }
            }
        }
    }

    /// Is the release of wrap gap `g` at the boundary C the `delete` flag of
    /// its version's offload ending at C (a transfer completion, before the
    /// zero-duration ops at C), rather than the next period's time-0 delete
    /// (after them)? Only when the offload ends at C and the gap's reader is
    /// not itself at C (models/SMT.md §4).
    fn flagged_at_boundary(&self, g: usize) -> String {
        let gp = &self.gaps[g];
        match (gp.version, gp.before) {
            (Some(v), Some(b)) if self.cyclic && gp.wraps => {
                let of = &self.offloads[v];
                format!(
                    "(and {} (= {} C) (< {} C))",
                    of.f,
                    plus(&of.o, of.tau),
                    s(b)
                )
            }
            _ => "false".into(),
        }
    }

    /// Not removed by tensor `i`'s early delete by point `p`, if that delete
    /// can precede `p`.
    fn not_deleted(
        &self,
        inst: &Instance,
        i: usize,
        plan: &TensorPlan,
        alloc: Alloc,
        p: &Point,
    ) -> Option<String> {
        let tl = &self.tails[plan.tail?];
        let relevant = match (p, plan.alloc) {
            (Point::OpStart(k), _) => {
                // The tail starts after the last read (or the production).
                let r_last = self.last_read(inst, TensorId(i as u32));
                match (r_last, alloc) {
                    (Some(l), _) => *k > l,
                    (None, Alloc::Op(q)) => *k > q,
                    _ => true,
                }
            }
            _ => true,
        };
        if !relevant {
            return None;
        }
        let y = match p {
            Point::OpStart(k) => s(*k),
            Point::Transfer { time, .. } => time.clone(),
        };
        Some(format!("(not (and {} (<= {} {y})))", tl.k, tl.t))
    }

    fn last_read(&self, inst: &Instance, t: TensorId) -> Option<usize> {
        self.order
            .iter()
            .enumerate()
            .filter(|(_, o)| inst.op(**o).reads.contains(&t))
            .map(|(k, _)| k)
            .last()
    }

    /// The declarations and assertions (no `check-sat`).
    pub fn body(&self) -> String {
        let mut out = String::new();
        for d in &self.decls {
            out.push_str(d);
            out.push('\n');
        }
        for a in &self.asserts {
            let _ = writeln!(out, "(assert {a})");
        }
        out
    }

    /// Names of every declared constant, with whether it is Boolean.
    pub fn constants(&self) -> Vec<(String, bool)> {
        self.decls
            .iter()
            .filter_map(|d| {
                let name = d
                    .strip_prefix("(declare-fun ")?
                    .split(' ')
                    .next()?
                    .to_string();
                Some((name, d.ends_with("Bool)")))
            })
            .collect()
    }

    /// A short description of the model size, for `Outcome::notes`.
    pub fn summary(&self) -> String {
        format!(
            "smt: {} ops, {} eviction gaps, {} offload slots, {} early deletes, {} constants, {} assertions",
            self.order.len(),
            self.gaps.len(),
            self.offloads.len(),
            self.tails.len(),
            self.decls.len(),
            self.asserts.len()
        )
    }
}
