//! What the MILP needs to know about the ops on the CPU of a cyclic instance
//! (OFFMATE's CPU Adam step `optC.p`, `models/MODEL.md` §4.6) before any
//! period is chosen: their order on the CPU stream, and the role each tensor
//! they read plays (`proofs/EXACTNESS.md` §3.12).
//!
//! Owns: [`CpuRoles`], [`CpuInput`] and [`CpuRoles::of`], which decides the
//! scope; an instance outside it is refused with [`ExactError::Unsupported`],
//! never solved approximately.
//!
//! Roles of a tensor t that a CPU op reads:
//! - *host-only*: persistent, no GPU op of the sequence uses it (`m.p`): it
//!   lives on the CPU only, current from S₀ on;
//! - *host-updated*: persistent, transferable, read by GPU ops, written by no
//!   GPU op and by at most one CPU op (`p` when `optC.p` runs): its CPU copy is
//!   current throughout; the GPU copy goes stale at the CPU op's end and must be
//!   evicted and prefetched again, after that end, before the next GPU read;
//! - *host input*: per-iteration, transferable, produced by one GPU op, read by
//!   one CPU op and by no GPU op, released by no op (`grad.p`): offloaded
//!   after its production and before the CPU op's start (of this period or the
//!   next), then deleted before the next production.
//!
//! Must not import: bounds, heuristics, traces, reports, the CLI.

use crate::exact::{ExactError, Method};
use crate::model::{Device, Instance, Mode, OpId, TensorId};

/// A host input (role 3): a per-iteration tensor a GPU op produces and a CPU
/// op reads from its CPU copy.
#[derive(Clone, Debug)]
pub struct CpuInput {
    pub tensor: TensorId,
    /// The producer's position in the GPU sequence.
    pub producer: usize,
    /// The reader's position in the CPU sequence.
    pub reader: usize,
}

/// The CPU stream and the roles of the tensors it reads.
#[derive(Clone, Debug, Default)]
pub struct CpuRoles {
    /// The CPU ops in their order (R2: one at a time; R8: that order).
    pub seq: Vec<OpId>,
    pub dur: Vec<i64>,
    /// Per tensor: the CPU op (position in `seq`) that updates a host-updated
    /// tensor.
    pub updated_by: Vec<Option<usize>>,
    /// Per tensor: is it host-only?
    pub host_only: Vec<bool>,
    pub inputs: Vec<CpuInput>,
    /// Persistent tensors a CPU op reads: current on the CPU throughout.
    pub current: Vec<TensorId>,
}

fn unsupported(reason: impl Into<String>) -> ExactError {
    ExactError::Unsupported {
        method: Method::Milp,
        reason: reason.into(),
    }
}

/// How the GPU sequence uses one tensor.
#[derive(Default)]
struct GpuUse {
    reads: usize,
    prods: Vec<usize>,
    writes_or_releases: bool,
}

impl CpuRoles {
    /// The roles, or why the instance is outside the MILP's CPU scope.
    /// `gpu` is the GPU op sequence, `cpu` the CPU ops in their order.
    pub fn of(inst: &Instance, gpu: &[OpId], cpu: Vec<OpId>) -> Result<CpuRoles, ExactError> {
        let nt = inst.tensors.len();
        let mut roles = CpuRoles {
            dur: cpu.iter().map(|o| inst.op(*o).duration.0).collect(),
            seq: cpu,
            updated_by: vec![None; nt],
            host_only: vec![false; nt],
            ..CpuRoles::default()
        };
        if roles.seq.is_empty() {
            return Ok(roles);
        }
        if inst.mode != Mode::Cyclic {
            return Err(unsupported("an op runs on the CPU of a one-shot instance"));
        }
        if let Some(o) = gpu.iter().find(|o| inst.op(**o).duration.0 == 0) {
            return Err(unsupported(format!(
                "GPU op {} lasts 0 ticks beside ops on the CPU (not encoded)",
                inst.op(*o).name
            )));
        }
        let mut uses: Vec<GpuUse> = (0..nt).map(|_| GpuUse::default()).collect();
        for (k, o) in gpu.iter().enumerate() {
            let op = inst.op(*o);
            op.reads.iter().for_each(|t| uses[t.ix()].reads += 1);
            op.produces.iter().for_each(|t| uses[t.ix()].prods.push(k));
            for t in op.modifies.iter().chain(&op.consumes).chain(&op.frees) {
                uses[t.ix()].writes_or_releases = true;
            }
        }
        let persistent = inst.persistent();
        let mut readers: Vec<Vec<usize>> = vec![vec![]; nt];
        for (c, o) in roles.seq.iter().enumerate() {
            let op = inst.op(*o);
            if op.duration.0 == 0
                || !op.produces.is_empty()
                || !op.consumes.is_empty()
                || !op.frees.is_empty()
                || op.modifies.iter().any(|t| !op.reads.contains(t))
            {
                return Err(unsupported(format!(
                    "the CPU op {} lasts 0 ticks, produces, consumes or frees a tensor, or modifies one it does not read",
                    op.name
                )));
            }
            op.reads.iter().for_each(|t| readers[t.ix()].push(c));
        }
        for i in 0..nt {
            if readers[i].is_empty() {
                continue;
            }
            let t = TensorId(i as u32);
            let writers: Vec<usize> = readers[i]
                .iter()
                .copied()
                .filter(|&c| inst.op(roles.seq[c]).modifies.contains(&t))
                .collect();
            roles.classify(inst, t, &uses[i], &readers[i], &writers, persistent[i])?;
        }
        Ok(roles)
    }

    /// The role of tensor `t`, which the CPU ops `readers` read and `writers`
    /// (among them) modify.
    fn classify(
        &mut self,
        inst: &Instance,
        t: TensorId,
        u: &GpuUse,
        readers: &[usize],
        writers: &[usize],
        persistent: bool,
    ) -> Result<(), ExactError> {
        let ten = inst.tensor(t);
        let gpu_unused = u.reads == 0 && u.prods.is_empty() && !u.writes_or_releases;
        if persistent && gpu_unused {
            self.host_only[t.ix()] = true;
            self.current.push(t);
            return Ok(());
        }
        let movable = ten.transferable && ten.size.0 > 0;
        if persistent && movable && u.reads > 0 && !u.writes_or_releases && writers.len() <= 1 {
            self.updated_by[t.ix()] = writers.first().copied();
            self.current.push(t);
            return Ok(());
        }
        if !persistent
            && movable
            && u.reads == 0
            && u.prods.len() == 1
            && !u.writes_or_releases
            && readers.len() == 1
            && writers.is_empty()
        {
            self.inputs.push(CpuInput {
                tensor: t,
                producer: u.prods[0],
                reader: readers[0],
            });
            return Ok(());
        }
        Err(unsupported(format!(
            "tensor {} is read on the CPU in a role the MILP does not encode (host-only, host-updated weight, or gradient read once on the CPU: proofs/EXACTNESS.md §3.12)",
            ten.name
        )))
    }

    /// Is tensor `i` handled here rather than by the GPU structure?
    pub fn owns(&self, i: usize) -> bool {
        self.host_only.get(i).copied().unwrap_or(false)
            || self.inputs.iter().any(|c| c.tensor.ix() == i)
    }

    pub fn n(&self) -> usize {
        self.seq.len()
    }
}

/// The GPU ops and the CPU ops of a fixed order, each in its order (R8 orders
/// each device on its own).
pub fn split(inst: &Instance, seq: &[OpId]) -> (Vec<OpId>, Vec<OpId>) {
    let on_cpu = |o: &&OpId| inst.op(**o).device == Device::Cpu;
    (
        seq.iter().filter(|o| !on_cpu(o)).copied().collect(),
        seq.iter().filter(on_cpu).copied().collect(),
    )
}
