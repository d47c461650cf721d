//! The SMT encoding as pure-integer SMT-LIB2 text (QF_LIA), and the decoding of
//! a model back into a [`Schedule`]. No z3 here: the same text is what the
//! in-process solver reads and what `write_refutation` puts in a certificate.
//!
//! The mathematics, with the rule each constraint encodes, is in `models/SMT.md`;
//! the structural limits and why they lose no optimum are in `proofs/SMT.md`.
//! Names below follow those documents: `S_k` op starts, `e_g/D_g/A_g` the
//! eviction (delete at D, prefetch at A) in gap g, `f_v/O_v` the offload of
//! version v, `K_t/T_t` the early delete after a tensor's last read, `C` the
//! makespan (one-shot) or period (cyclic).
//!
//! Owns: the SMT-LIB2 encoding and its decoding (no z3 calls).
//! Must not import: bounds, heuristics, traces, reports, the CLI, the z3 crate
//! (the solver lives in `smt/mod.rs`).

use crate::exact::{ExactError, Method};
use crate::model::{
    ComputeOrder, Device, Direction, Instance, Mode, OpId, Placement, ReleaseRule, TensorId,
};
use crate::schedule::{CyclicState, Event, Schedule};
use crate::semantics::transfer_ticks;
use crate::units::Ticks;
use num_integer::gcd;
use std::fmt::Write;

fn unsupported(reason: impl Into<String>) -> ExactError {
    ExactError::Unsupported {
        method: Method::Smt,
        reason: reason.into(),
    }
}

/// How a tensor's GPU life begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Alloc {
    /// On the GPU before the schedule (one-shot initial placement).
    Init,
    /// Allocated at the start of the op at this position.
    Op(usize),
    /// Persistent across periods (cyclic): never allocated, never released.
    Persistent,
}

/// How it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Release {
    /// Released at the start of the op at this position (after being read).
    Consume(usize),
    /// Released at the end of the op at this position.
    Free(usize),
    Never,
}

/// One possible eviction of a tensor between two consecutive uses: delete at
/// `D`, prefetch at `A`, ready at `A + tau` before the next read.
#[derive(Clone, Debug)]
pub(crate) struct Gap {
    tensor: TensorId,
    tau: i64,
    /// Names of the SMT constants.
    e: String,
    d: String,
    a: String,
    /// Positions of the use before (None: the initial placement) and the read after.
    before: Option<usize>,
    after: usize,
    /// Does the gap wrap into the next period (cyclic only)?
    wraps: bool,
    /// The offload (version) whose CPU copy this eviction relies on.
    version: Option<usize>,
}

/// The offload of one version of a tensor (one per version: proofs/SMT.md §2).
#[derive(Clone, Debug)]
pub(crate) struct Offload {
    tensor: TensorId,
    tau: i64,
    f: String,
    o: String,
}

/// An early delete after the last read (the tensor is dead but not yet freed).
#[derive(Clone, Debug)]
pub(crate) struct Tail {
    tensor: TensorId,
    k: String,
    t: String,
}

struct TensorPlan {
    size: u128,
    alloc: Option<Alloc>,
    release: Release,
    gaps: Vec<usize>,
    tail: Option<usize>,
    /// Index into `offloads` of the version alive at the period boundary (cyclic),
    /// or of the only version (one-shot).
    last_version: Option<usize>,
    /// CPU copy current without any offload (initial `both`, or unmodified persistent).
    cpu_free: bool,
}

/// The encoding of one instance: SMT-LIB2 declarations and assertions, and the
/// structure needed to decode a model.
pub(crate) struct Encoding {
    cyclic: bool,
    /// The default release rule R10 (an op holds what it reads until it ends);
    /// false under the relaxation `after_start`.
    after_end: bool,
    order: Vec<OpId>,
    dur: Vec<i64>,
    gaps: Vec<Gap>,
    offloads: Vec<Offload>,
    tails: Vec<Tail>,
    plans: Vec<TensorPlan>,
    decls: Vec<String>,
    asserts: Vec<String>,
    /// Memory unit (gcd of all sizes); sizes in the text are divided by it.
    pub unit: u128,
}

/// Values of the SMT constants in a model.
pub(crate) trait Values {
    fn int(&self, name: &str) -> Option<i64>;
    fn bool(&self, name: &str) -> Option<bool>;
}

impl<F: Fn(&str) -> Option<i64>, G: Fn(&str) -> Option<bool>> Values for (F, G) {
    fn int(&self, name: &str) -> Option<i64> {
        (self.0)(name)
    }
    fn bool(&self, name: &str) -> Option<bool> {
        (self.1)(name)
    }
}

fn s(k: usize) -> String {
    format!("S_{k}")
}

/// `(+ a b)` with small simplifications so that the text stays readable.
fn plus(a: &str, b: i64) -> String {
    if b == 0 {
        a.to_string()
    } else if b > 0 {
        format!("(+ {a} {b})")
    } else {
        format!("(- {a} {})", -b)
    }
}

fn and(v: &[String]) -> String {
    match v.len() {
        0 => "true".into(),
        1 => v[0].clone(),
        _ => format!("(and {})", v.join(" ")),
    }
}

fn or(v: &[String]) -> String {
    match v.len() {
        0 => "false".into(),
        1 => v[0].clone(),
        _ => format!("(or {})", v.join(" ")),
    }
}

/// The fixed GPU order, each op once, or why the instance is out of scope.
fn fixed_order(inst: &Instance) -> Result<Vec<OpId>, ExactError> {
    crate::exact::refuse_extensions(inst, Method::Smt)?;
    let order = match &inst.order {
        ComputeOrder::Fixed(v) => v.clone(),
        ComputeOrder::Free => return Err(unsupported("free compute order")),
        ComputeOrder::Slots(_) => return Err(unsupported("slotted compute order")),
    };
    if order.is_empty() {
        return Err(unsupported("no ops to schedule"));
    }
    let mut seen = vec![false; inst.ops.len()];
    for o in &order {
        if std::mem::replace(&mut seen[o.ix()], true) {
            return Err(unsupported(format!(
                "op `{}` appears twice in the order (rematerialisation)",
                inst.op(*o).name
            )));
        }
        if inst.op(*o).device != Device::Gpu {
            return Err(unsupported(format!(
                "op `{}` runs on the CPU",
                inst.op(*o).name
            )));
        }
    }
    if inst.machine.cpu_capacity.is_some() {
        return Err(unsupported("a CPU memory capacity"));
    }
    Ok(order)
}

/// Uses per tensor, by position in the order (a read once per op).
struct Uses {
    prod: Vec<Vec<usize>>,
    reads: Vec<Vec<usize>>,
    cons: Vec<Vec<usize>>,
    frees: Vec<Vec<usize>>,
    mods: Vec<Vec<usize>>,
}

impl Uses {
    fn of(inst: &Instance, order: &[OpId]) -> Uses {
        let nt = inst.tensors.len();
        let mut u = Uses {
            prod: vec![vec![]; nt],
            reads: vec![vec![]; nt],
            cons: vec![vec![]; nt],
            frees: vec![vec![]; nt],
            mods: vec![vec![]; nt],
        };
        for (k, o) in order.iter().enumerate() {
            let op = inst.op(*o);
            for t in &op.produces {
                u.prod[t.ix()].push(k);
            }
            for t in &op.reads {
                if u.reads[t.ix()].last() != Some(&k) {
                    u.reads[t.ix()].push(k);
                }
            }
            for t in &op.consumes {
                u.cons[t.ix()].push(k);
            }
            for t in &op.frees {
                u.frees[t.ix()].push(k);
            }
            for t in &op.modifies {
                u.mods[t.ix()].push(k);
            }
        }
        u
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
    pub fn new(inst: &Instance) -> Result<Encoding, ExactError> {
        let order = fixed_order(inst)?;
        let cyclic = inst.mode == Mode::Cyclic;
        let n = order.len();
        let dur: Vec<i64> = order.iter().map(|o| inst.op(*o).duration.0).collect();
        let uses = Uses::of(inst, &order);
        let persistent = inst.persistent();
        // Memory unit: every amount is a multiple of the gcd, so dividing by it
        // (and flooring the capacity) decides `used <= cap` exactly.
        let mut unit: u128 = 0;
        for t in &inst.tensors {
            unit = gcd(unit, t.size.0 as u128);
        }
        for o in &order {
            unit = gcd(unit, inst.op(*o).temp.0 as u128);
        }
        if unit == 0 {
            unit = 1;
        }
        let mut enc = Encoding {
            cyclic,
            after_end: inst.release == ReleaseRule::AfterEnd,
            order: order.clone(),
            dur: dur.clone(),
            gaps: vec![],
            offloads: vec![],
            tails: vec![],
            plans: vec![],
            decls: vec![],
            asserts: vec![],
            unit,
        };
        for k in 0..n {
            enc.decls.push(format!("(declare-fun {} () Int)", s(k)));
        }
        enc.decls.push("(declare-fun C () Int)".into());
        for (i, &persistent) in persistent.iter().enumerate() {
            enc.tensor(inst, &uses, i, persistent)?;
        }
        enc.constraints(inst);
        Ok(enc)
    }

    /// Tensor `i`'s plan: its life (checked against the scope), its gaps and
    /// offloads when it moves, and its early delete.
    fn tensor(
        &mut self,
        inst: &Instance,
        uses: &Uses,
        i: usize,
        persistent: bool,
    ) -> Result<(), ExactError> {
        let t = TensorId(i as u32);
        let ten = inst.tensor(t);
        let name = &ten.name;
        let size = ten.size.0 as u128 / self.unit;
        let movable = ten.transferable && ten.size.0 > 0;
        if uses.prod[i].len() > 1 {
            return Err(unsupported(format!("tensor `{name}` is produced twice")));
        }
        let r = &uses.reads[i];
        let release = match (uses.cons[i].first(), uses.frees[i].first()) {
            (Some(&c), Some(&f)) => {
                if c <= f {
                    Release::Consume(c)
                } else {
                    Release::Free(f)
                }
            }
            (Some(&c), None) => Release::Consume(c),
            (None, Some(&f)) => Release::Free(f),
            (None, None) => Release::Never,
        };
        let alloc = self.alloc(inst, uses, i, persistent, release)?;
        if !self.cyclic && movable && !uses.mods[i].is_empty() {
            return Err(unsupported(format!(
                "one-shot transferable tensor `{name}` is modified"
            )));
        }
        self.check_life(name, alloc, release, r)?;
        let mut plan = TensorPlan {
            size,
            alloc,
            release,
            gaps: vec![],
            tail: None,
            last_version: None,
            cpu_free: false,
        };
        if alloc.is_none() || size == 0 {
            self.plans.push(plan);
            return Ok(());
        }
        let tau = if movable {
            transfer_ticks(inst, t).0
        } else {
            0
        };
        if movable && alloc == Some(Alloc::Persistent) {
            self.persistent_gaps(t, tau, r, &uses.mods[i], &mut plan);
        } else if movable {
            self.one_shot_gaps(t, tau, r, ten.initial == Placement::Both, &mut plan);
        }
        self.early_delete(t, alloc, release, r, &mut plan);
        self.plans.push(plan);
        Ok(())
    }

    /// When tensor `i` is allocated, or why that is out of scope.
    fn alloc(
        &self,
        inst: &Instance,
        uses: &Uses,
        i: usize,
        persistent: bool,
        release: Release,
    ) -> Result<Option<Alloc>, ExactError> {
        let ten = inst.tensor(TensorId(i as u32));
        let name = &ten.name;
        let movable = ten.transferable && ten.size.0 > 0;
        let (r, prod) = (&uses.reads[i], &uses.prod[i]);
        Ok(if self.cyclic && persistent {
            if release != Release::Never {
                return Err(unsupported(format!(
                    "persistent tensor `{name}` is released by an op"
                )));
            }
            if movable {
                if r.is_empty() {
                    return Err(unsupported(format!(
                        "persistent transferable tensor `{name}` is never read"
                    )));
                }
                if uses.mods[i].iter().any(|m| !r.contains(m)) {
                    return Err(unsupported(format!(
                        "tensor `{name}` is modified by an op that does not read it"
                    )));
                }
            }
            Some(Alloc::Persistent)
        } else if self.cyclic {
            if movable {
                return Err(unsupported(format!(
                    "per-iteration tensor `{name}` is transferable (only persistent tensors may move in the cyclic encoding)"
                )));
            }
            Some(Alloc::Op(prod[0]))
        } else if ten.initial.on_gpu() {
            if !prod.is_empty() {
                return Err(unsupported(format!(
                    "tensor `{name}` starts on the GPU and is produced again"
                )));
            }
            Some(Alloc::Init)
        } else if let Some(&p) = prod.first() {
            Some(Alloc::Op(p))
        } else {
            if !r.is_empty() {
                return Err(unsupported(format!(
                    "tensor `{name}` is read but neither produced nor initially on the GPU"
                )));
            }
            None
        })
    }

    /// Produced before it is read, released after its last read.
    fn check_life(
        &self,
        name: &str,
        alloc: Option<Alloc>,
        release: Release,
        r: &[usize],
    ) -> Result<(), ExactError> {
        if let Some(Alloc::Op(p)) = alloc {
            if r.first().is_some_and(|&f| f <= p) {
                return Err(unsupported(format!(
                    "tensor `{name}` is read before it is produced"
                )));
            }
            match release {
                Release::Consume(c) if c <= p => {
                    return Err(unsupported(format!(
                        "tensor `{name}` is released before it is produced"
                    )))
                }
                Release::Free(f) if f < p => {
                    return Err(unsupported(format!(
                        "tensor `{name}` is released before it is produced"
                    )))
                }
                Release::Never if self.cyclic => {
                    return Err(unsupported(format!(
                        "per-iteration tensor `{name}` is never released (it would be produced while resident)"
                    )))
                }
                _ => {}
            }
        }
        match release {
            Release::Consume(c) | Release::Free(c) => {
                if r.last().is_some_and(|&l| l > c) {
                    return Err(unsupported(format!(
                        "tensor `{name}` is read after it is released"
                    )));
                }
            }
            Release::Never => {}
        }
        Ok(())
    }

    /// Early delete after the last read (rule R6 allows it: not needed
    /// later). Under the default rule R10 the last reader holds the tensor
    /// until it ends, so none exists when that reader is the op freeing it.
    fn early_delete(
        &mut self,
        t: TensorId,
        alloc: Option<Alloc>,
        release: Release,
        r: &[usize],
        plan: &mut TensorPlan,
    ) {
        let held_to_free =
            self.after_end && matches!(release, Release::Free(f) if r.last() == Some(&f));
        if alloc == Some(Alloc::Persistent)
            || matches!(release, Release::Consume(_))
            || held_to_free
        {
            return;
        }
        let i = t.ix();
        let idx = self.tails.len();
        let (k, tv) = (format!("K_{i}"), format!("T_{i}"));
        self.decls.push(format!("(declare-fun {k} () Bool)"));
        self.decls.push(format!("(declare-fun {tv} () Int)"));
        let lo = match (r.last(), alloc) {
            (Some(&l), _) => plus(&s(l), self.read_lag(l)),
            (None, Some(Alloc::Op(p))) => plus(&s(p), self.dur[p]),
            _ => "0".into(),
        };
        let mut c = vec![format!("(<= {lo} {tv})")];
        match release {
            Release::Free(f) => c.push(format!("(< {tv} {})", plus(&s(f), self.dur[f]))),
            _ => c.push(format!("(<= {tv} C)")),
        }
        if self.cyclic {
            c.push(format!("(< {tv} C)"));
        }
        self.asserts.push(format!("(=> {k} {})", and(&c)));
        self.tails.push(Tail {
            tensor: t,
            k,
            t: tv,
        });
        plan.tail = Some(idx);
    }

    /// The earliest release after a read by the op at position `k`, relative to
    /// its start: its duration under the default rule R10 (the reader holds the
    /// tensor until it ends), one tick under the relaxation (R1 only: a release
    /// at the reader's own instant precedes its start, §2.4). At least one tick
    /// either way, for the same reason.
    fn read_lag(&self, k: usize) -> i64 {
        if self.after_end {
            self.dur[k].max(1)
        } else {
            1
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

    fn new_gap(
        &mut self,
        t: TensorId,
        tau: i64,
        before: Option<usize>,
        after: usize,
        wraps: bool,
    ) -> usize {
        let g = self.gaps.len();
        let (e, d, a) = (format!("e_{g}"), format!("D_{g}"), format!("A_{g}"));
        self.decls.push(format!("(declare-fun {e} () Bool)"));
        self.decls.push(format!("(declare-fun {d} () Int)"));
        self.decls.push(format!("(declare-fun {a} () Int)"));
        self.gaps.push(Gap {
            tensor: t,
            tau,
            e,
            d,
            a,
            before,
            after,
            wraps,
            version: None,
        });
        g
    }

    fn new_offload(&mut self, t: TensorId, tau: i64) -> usize {
        let v = self.offloads.len();
        let (f, o) = (format!("f_{v}"), format!("O_{v}"));
        self.decls.push(format!("(declare-fun {f} () Bool)"));
        self.decls.push(format!("(declare-fun {o} () Int)"));
        self.offloads.push(Offload {
            tensor: t,
            tau,
            f,
            o,
        });
        v
    }

    /// One-shot (single version): a gap before each read; one offload serves all.
    fn one_shot_gaps(
        &mut self,
        t: TensorId,
        tau: i64,
        r: &[usize],
        cpu_free: bool,
        plan: &mut TensorPlan,
    ) {
        if r.is_empty() {
            return;
        }
        let dur = self.dur.clone();
        let ready = match plan.alloc {
            Some(Alloc::Op(p)) => plus(&s(p), dur[p]),
            _ => "0".into(),
        };
        let before0 = match plan.alloc {
            Some(Alloc::Op(p)) => Some(p),
            _ => None,
        };
        let v = if cpu_free {
            None
        } else {
            Some(self.new_offload(t, tau))
        };
        plan.cpu_free = cpu_free;
        plan.last_version = v;
        let mut es = vec![];
        for j in 0..r.len() {
            let (before, lo) = if j == 0 {
                (before0, ready.clone())
            } else {
                (Some(r[j - 1]), plus(&s(r[j - 1]), self.read_lag(r[j - 1])))
            };
            let g = self.new_gap(t, tau, before, r[j], false);
            let gp = self.gaps[g].clone();
            let mut c = vec![
                format!("(<= {lo} {})", gp.d),
                format!("(<= {} {})", gp.d, gp.a),
                format!("(<= {} {})", plus(&gp.a, tau), s(r[j])),
            ];
            self.gaps[g].version = v;
            if let Some(v) = v {
                // R6: the CPU copy must be current when the GPU copy is released.
                c.push(format!("(<= {} {})", plus(&self.offloads[v].o, tau), gp.d));
            }
            self.asserts.push(format!("(=> {} {})", gp.e, and(&c)));
            es.push(gp.e.clone());
            plan.gaps.push(g);
        }
        if let Some(v) = v {
            let of = self.offloads[v].clone();
            // An offload exactly when some gap evicts; it reads the GPU copy once ready (R3).
            self.asserts.push(format!("(= {} {})", of.f, or(&es)));
            self.asserts
                .push(format!("(=> {} (<= {ready} {}))", of.f, of.o));
        }
    }

    /// Cyclic persistent tensor: a gap after each read (the last one wraps into
    /// the next period); one offload per version (per modifying op).
    fn persistent_gaps(
        &mut self,
        t: TensorId,
        tau: i64,
        r: &[usize],
        mods: &[usize],
        plan: &mut TensorPlan,
    ) {
        let m = r.len();
        let dur = self.dur.clone();
        let vers: Vec<usize> = mods.iter().map(|_| self.new_offload(t, tau)).collect();
        plan.cpu_free = mods.is_empty();
        // The version alive at the period boundary: the last modifier's.
        plan.last_version = vers.last().copied();
        let mut per_version: Vec<Vec<String>> = vec![vec![]; vers.len()];
        for j in 0..m {
            let wraps = j + 1 == m;
            let after = if wraps { r[0] } else { r[j + 1] };
            let g = self.new_gap(t, tau, Some(r[j]), after, wraps);
            let gp = self.gaps[g].clone();
            let lo = if mods.contains(&r[j]) {
                // Released only after the modifying op ends (its end updates the GPU copy).
                plus(&s(r[j]), dur[r[j]])
            } else {
                // R1 (present at the reader's start) and R10 (held until its end).
                plus(&s(r[j]), self.read_lag(r[j]))
            };
            let hi = if wraps {
                format!("(+ {} C)", s(after))
            } else {
                s(after)
            };
            let lo_c = if wraps && dur[r[j]] == 0 && !mods.contains(&r[j]) {
                // A zero-duration last reader may sit at C (R8): the next
                // period's time-0 delete (unrolled C) comes after it.
                format!(
                    "(or (<= {lo} {d}) (and (= {} C) (= {d} C)))",
                    s(r[j]),
                    d = gp.d
                )
            } else {
                format!("(<= {lo} {})", gp.d)
            };
            let mut c = vec![
                lo_c,
                format!("(<= {} {})", gp.d, gp.a),
                format!("(<= {} {hi})", plus(&gp.a, tau)),
                format!("(<= {tau} C)"),
            ];
            if !mods.is_empty() {
                // The version alive in this gap: the last modifier at or before r[j],
                // cyclically (from the previous period if none in this one).
                let (vi, shift) = match mods.iter().rposition(|&q| q <= r[j]) {
                    Some(x) => (x, false),
                    None => (mods.len() - 1, true),
                };
                let ov = &self.offloads[vers[vi]];
                let d = if shift {
                    format!("(+ {} C)", gp.d)
                } else {
                    gp.d.clone()
                };
                c.push(format!("(<= {} {d})", plus(&ov.o, tau)));
                per_version[vi].push(gp.e.clone());
                self.gaps[g].version = Some(vers[vi]);
            }
            self.asserts.push(format!("(=> {} {})", gp.e, and(&c)));
            plan.gaps.push(g);
        }
        for (vi, v) in vers.iter().enumerate() {
            let of = self.offloads[*v].clone();
            let q = mods[vi];
            self.asserts
                .push(format!("(= {} {})", of.f, or(&per_version[vi])));
            self.asserts.push(format!(
                "(=> {} (and (<= {} {}) (<= {tau} C)))",
                of.f,
                plus(&s(q), dur[q]),
                of.o
            ));
        }
        // R10: an offload pins its source, so no release of t falls strictly
        // inside one. The gaps relying on a version release after its offload
        // ends (above); an offload of another version is excluded here (only
        // tensors modified by several ops have one).
        if self.after_end && vers.len() > 1 {
            for &g in &plan.gaps {
                let gp = self.gaps[g].clone();
                for &v in &vers {
                    if Some(v) == gp.version {
                        continue;
                    }
                    let of = self.offloads[v].clone();
                    let (x, y) = (self.norm(&gp.d), self.norm(&of.o));
                    self.asserts.push(format!(
                        "(=> (and {} {}) (not (or (and (< {y} {x}) (< {x} {})) (and (< {y} (+ {x} C)) (< (+ {x} C) {}))))))",
                        gp.e,
                        of.f,
                        plus(&y, tau),
                        plus(&y, tau)
                    ));
                }
            }
        }
    }

    /// Normalised (into one period) start of an unrolled time.
    fn norm(&self, x: &str) -> String {
        if self.cyclic {
            format!("(ite (>= {x} C) (- {x} C) {x})")
        } else {
            x.to_string()
        }
    }

    fn constraints(&mut self, inst: &Instance) {
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

    /// Build the schedule a model describes.
    pub fn decode(&self, v: &dyn Values) -> Option<Schedule> {
        let get = |x: &str| v.int(x);
        let on = |x: &str| v.bool(x).unwrap_or(false);
        let p = if self.cyclic { Some(get("C")?) } else { None };
        let norm = |x: i64| match p {
            Some(p) if x >= p => x - p,
            _ => x,
        };
        let mut events = vec![];
        for (k, o) in self.order.iter().enumerate() {
            let st = get(&s(k))?;
            events.push(Event::Compute {
                op: *o,
                start: Ticks(st),
                end: Ticks(st + self.dur[k]),
            });
        }
        // A release exactly at the period boundary is the offload's own delete
        // flag when the offload ends there and the gap's reader is not at P;
        // otherwise it is the next period's time-0 delete (models/SMT.md §4).
        let mut flagged = vec![false; self.offloads.len()];
        let mut skip = vec![false; self.gaps.len()];
        if let Some(p) = p {
            for (gi, g) in self.gaps.iter().enumerate() {
                if let (true, Some(v), Some(b)) = (g.wraps && on(&g.e), g.version, g.before) {
                    let of = &self.offloads[v];
                    if get(&g.d)? == p && on(&of.f) && get(&of.o)? + of.tau == p && get(&s(b))? < p
                    {
                        flagged[v] = true;
                        skip[gi] = true;
                    }
                }
            }
        }
        for (v, of) in self.offloads.iter().enumerate() {
            if on(&of.f) {
                let o = norm(get(&of.o)?);
                events.push(Event::Transfer {
                    dir: Direction::Offload,
                    tensor: of.tensor,
                    start: Ticks(o),
                    end: Ticks(o + of.tau),
                    delete: flagged[v],
                });
            }
        }
        for (gi, g) in self.gaps.iter().enumerate() {
            if on(&g.e) {
                let (d, a) = (norm(get(&g.d)?), norm(get(&g.a)?));
                if !skip[gi] {
                    events.push(Event::Delete {
                        tensor: g.tensor,
                        at: Ticks(d),
                    });
                }
                events.push(Event::Transfer {
                    dir: Direction::Prefetch,
                    tensor: g.tensor,
                    start: Ticks(a),
                    end: Ticks(a + g.tau),
                    delete: false,
                });
            }
        }
        for tl in &self.tails {
            if on(&tl.k) {
                events.push(Event::Delete {
                    tensor: tl.tensor,
                    at: Ticks(get(&tl.t)?),
                });
            }
        }
        let Some(p) = p else {
            return Some(Schedule::one_shot(events));
        };
        // The state at time 0 (= at P, after its releases): models/SMT.md §4.
        let mut st = CyclicState::default();
        for (i, plan) in self.plans.iter().enumerate() {
            let t = TensorId(i as u32);
            if plan.alloc != Some(Alloc::Persistent) {
                continue;
            }
            // Read after the completions at P, before the time-0 deletes: a
            // release at P counts only when it is a delete flag.
            let away = plan.gaps.iter().any(|&g| {
                let gp = &self.gaps[g];
                on(&gp.e)
                    && get(&gp.d).is_some_and(|d| d < p || d == p && skip[g])
                    && get(&gp.a).is_some_and(|a| p < a + gp.tau)
            });
            if !away {
                st.gpu.push(t);
            }
            let cpu = plan.cpu_free && !plan.gaps.is_empty()
                || plan.last_version.is_some_and(|v| {
                    let of = &self.offloads[v];
                    on(&of.f) && get(&of.o).is_some_and(|o| o + of.tau <= p)
                });
            if cpu {
                st.cpu.push(t);
            }
        }
        Some(Schedule::cyclic(Ticks(p), st, events))
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
