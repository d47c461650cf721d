//! The plan of an SMT encoding: the fixed order it is built on, the uses of
//! each tensor by position, and each tensor's plan: how its GPU life begins
//! and ends (checked against the encoding's structural limits), the gaps
//! between two uses in which it may be evicted, the offloads of its versions,
//! and its early delete after the last read, each with the constraints that
//! tie its own constants (`models/SMT.md` §2–3, `proofs/SMT.md`).
//!
//! Owns: `Encoding::new` and the per-tensor planning (the plan types,
//! [`Alloc`], [`Release`], [`TensorPlan`], are the encoding's data). Out of scope is refused here with
//! [`ExactError::Unsupported`] (the method's coarse scope, `smt::SCOPE`, is the
//! door's and the entry points' check).
//! Must not import: bounds, heuristics, traces, reports, the CLI, the z3 crate,
//! the other exact methods.

use super::encode::{
    and, or, plus, s, unsupported, Alloc, Encoding, Gap, Offload, Release, Tail, TensorPlan,
};
use crate::exact::ExactError;
use crate::model::{ComputeOrder, Device, Instance, Mode, OpId, Placement, ReleaseRule, TensorId};
use crate::semantics::transfer_ticks;
use num_integer::gcd;

/// The fixed GPU order, each op once, or why the instance is out of scope.
fn fixed_order(inst: &Instance) -> Result<Vec<OpId>, ExactError> {
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
}
