//! `offmate` → core model (`FAMILIES.md` §3.4, `models/MODEL.md` §4.6).
//!
//! Tensors: `x0` (persistent input buffer), `x{i}` (block i's output), `g{i}`
//! (its gradient, i < L; the loss gradient is folded into `x{L}` as in the
//! weight family), `s{i}.{o}` (stored internals, not transferable), `h{i}.{o}`
//! (offloaded internals, transferable, only when O_i^o > 0), each parameter `p`
//! (persistent, transferable), and per trainable used `p`: `grad.p` (|p|) and
//! `m.p` (k|p|, persistent). Blocks are 1-based in names, options 0-based.
//! Ops: `F{i}.{o}`, `B{i}.{o}` (GPU), `optG.p` (GPU), `optC.p` (CPU), and, when
//! H > 0, per step t = 0..2L−1 a zero-duration GPU marker `step{t}` and
//! `mgmt{t}` (CPU, H ticks). Groups (exactly once per period): `fwd{i}`,
//! `bwd{i}`, `upd.p` (and `step{t}`). Order: slots fwd1…fwdL, then per block
//! i = L…1 `bwd{i}` followed by the `upd.p` of the parameters whose last
//! gradient it produces; with H, `step{t}` right before each step's block slot.
//! H: `mgmt{t}` starts after `step{t}`, and `step{t+1}` after `mgmt{t}`, so the
//! CPU spends H in every step and a step lasts at least H (eq. (23)).
//!
//! Owns: [`Offmate::compile`] and the naming. Must not import: schedules,
//! semantics, the checker, solvers.

use super::offmate::Offmate;
use crate::model::*;
use crate::units::{Bandwidth, Bytes, Ticks};
use std::collections::HashMap;

/// Names of the compiled tensors and ops (shared with the realiser).
pub mod names {
    pub fn x(i: usize) -> String {
        format!("x{i}")
    }
    pub fn g(i: usize) -> String {
        format!("g{i}")
    }
    pub fn s(i: usize, o: usize) -> String {
        format!("s{i}.{o}")
    }
    pub fn h(i: usize, o: usize) -> String {
        format!("h{i}.{o}")
    }
    pub fn grad(p: &str) -> String {
        format!("grad.{p}")
    }
    pub fn m(p: &str) -> String {
        format!("m.{p}")
    }
    pub fn f(i: usize, o: usize) -> String {
        format!("F{i}.{o}")
    }
    pub fn b(i: usize, o: usize) -> String {
        format!("B{i}.{o}")
    }
    pub fn opt_g(p: &str) -> String {
        format!("optG.{p}")
    }
    pub fn opt_c(p: &str) -> String {
        format!("optC.{p}")
    }
    pub fn mgmt(t: usize) -> String {
        format!("mgmt{t}")
    }
    pub fn step(t: usize) -> String {
        format!("step{t}")
    }
}

/// Ticks to move or update `b` bytes at `bw`, rounded up (`FAMILIES.md` G7).
pub fn ticks_for(bw: Bandwidth, b: Bytes) -> Ticks {
    bw.min_ticks(b).unwrap_or(Ticks(i64::MAX / 4))
}

struct Builder {
    tensors: Vec<Tensor>,
    ops: Vec<Op>,
    t_ix: HashMap<String, TensorId>,
}

impl Builder {
    fn tensor(&mut self, name: String, size: u64, kind: TensorKind, transferable: bool) {
        self.t_ix
            .insert(name.clone(), TensorId(self.tensors.len() as u32));
        self.tensors.push(Tensor {
            name,
            size: Bytes(size),
            kind,
            transferable,
            initial: Placement::Nowhere,
        });
    }
    fn id(&self, name: &str) -> TensorId {
        self.t_ix[name]
    }
    fn ids(&self, names: &[String]) -> Vec<TensorId> {
        names.iter().map(|n| self.id(n)).collect()
    }
    fn op(&mut self, name: String, duration: Ticks, device: Device) -> &mut Op {
        self.ops.push(Op {
            name,
            duration,
            reads: vec![],
            produces: vec![],
            consumes: vec![],
            frees: vec![],
            modifies: vec![],
            temp: Bytes(0),
            device,
            required: false,
            after: vec![],
        });
        self.ops.last_mut().expect("just pushed")
    }
}

impl Offmate {
    /// The trainable parameters some block uses, with the (1-based) block
    /// producing their last gradient: the first block using them.
    pub fn updated_params(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for g in self.param_groups() {
            for &p in &g.params {
                if self.params[p].trainable {
                    out.push((p, g.blocks[0] + 1));
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// Compile to the core model (cyclic). Validates the file first.
    pub fn compile(&self) -> Result<Instance, ModelError> {
        self.validate()?;
        let mut b = Builder {
            tensors: vec![],
            ops: vec![],
            t_ix: HashMap::new(),
        };
        self.add_tensors(&mut b);
        let mut groups = Vec::new();
        self.add_block_ops(&mut b, &mut groups);
        let upd = self.add_optimiser_ops(&mut b, &mut groups);
        let ticks = self.add_management(&mut b, &mut groups);
        let l = self.l();
        let mut slots: Vec<GroupId> = Vec::new();
        let mut step = 0;
        let mut slot = |slots: &mut Vec<GroupId>, g: GroupId| {
            if let Some(tk) = ticks.get(step) {
                slots.push(*tk);
            }
            slots.push(g);
            step += 1;
        };
        for i in 0..l {
            slot(&mut slots, GroupId(i as u32));
        }
        for i in (1..=l).rev() {
            slot(&mut slots, GroupId((l + i - 1) as u32));
            slots.extend(upd.iter().filter(|(blk, _)| *blk == i).map(|(_, g)| *g));
        }
        Ok(Instance {
            name: self.name.clone(),
            family: "offmate".into(),
            tensors: b.tensors,
            ops: b.ops,
            order: ComputeOrder::Slots(slots),
            machine: Machine {
                gpu_capacity: self.gpu_memory,
                cpu_capacity: Some(self.cpu_memory),
                duplex: self.duplex,
                bandwidth: self.bandwidth.to_bandwidth(),
            },
            mode: Mode::Cyclic,
            release: self.release,
            allocator: self.allocator,
            groups,
        })
    }

    fn add_tensors(&self, b: &mut Builder) {
        let l = self.l();
        b.tensor(names::x(0), self.input.0, TensorKind::Input, false);
        for (k, blk) in self.blocks.iter().enumerate() {
            let i = k + 1;
            b.tensor(names::x(i), blk.out.0, TensorKind::Activation, false);
            if i < l {
                let gs = blk.grad_out.unwrap_or(blk.out).0;
                b.tensor(names::g(i), gs, TensorKind::Gradient, false);
            }
            for (o, opt) in blk.options.iter().enumerate() {
                b.tensor(names::s(i, o), opt.saved.0, TensorKind::Activation, false);
                if opt.offloaded.0 > 0 {
                    b.tensor(
                        names::h(i, o),
                        opt.offloaded.0,
                        TensorKind::Activation,
                        true,
                    );
                }
            }
        }
        for p in &self.params {
            b.tensor(p.name.clone(), p.bytes.0, TensorKind::Weight, true);
        }
        let k = self.optimizer.states as u64;
        for (p, _) in self.updated_params() {
            let p = &self.params[p];
            b.tensor(
                names::grad(&p.name),
                p.bytes.0,
                TensorKind::WeightGradient,
                true,
            );
            if k > 0 {
                b.tensor(
                    names::m(&p.name),
                    k * p.bytes.0,
                    TensorKind::OptimizerState,
                    true,
                );
            }
        }
    }

    /// `F{i}.{o}` then `B{i}.{o}`; groups fwd1..fwdL are 0..L, bwd1..bwdL are L..2L.
    fn add_block_ops(&self, b: &mut Builder, groups: &mut Vec<Group>) {
        let l = self.l();
        let grads: Vec<(usize, usize)> = self.updated_params();
        let mut fwd = Vec::new();
        for (k, blk) in self.blocks.iter().enumerate() {
            let i = k + 1;
            let params: Vec<String> = blk.params.clone();
            let mut members = Vec::new();
            for (o, opt) in blk.options.iter().enumerate() {
                let reads = b.ids(&[&[names::x(i - 1)], params.as_slice()].concat());
                let mut produces = vec![b.id(&names::x(i)), b.id(&names::s(i, o))];
                if opt.offloaded.0 > 0 {
                    produces.push(b.id(&names::h(i, o)));
                }
                members.push(OpId(b.ops.len() as u32));
                let op = b.op(names::f(i, o), opt.t_fwd, Device::Gpu);
                op.reads = reads;
                op.produces = produces;
                op.temp = opt.fwd_overhead;
            }
            fwd.push(Group {
                name: format!("fwd{i}"),
                members,
                runs: Multiplicity::ExactlyOnce,
            });
        }
        let mut bwd = Vec::new();
        for (k, blk) in self.blocks.iter().enumerate() {
            let i = k + 1;
            let upstream = if i < l { names::g(i) } else { names::x(l) };
            let mut members = Vec::new();
            for (o, opt) in blk.options.iter().enumerate() {
                let mut held = vec![upstream.clone(), names::s(i, o)];
                if opt.offloaded.0 > 0 {
                    held.push(names::h(i, o));
                }
                let mut reads = b.ids(&[names::x(i - 1)]);
                reads.extend(b.ids(&held));
                reads.extend(b.ids(&blk.params));
                let mut produces = if i >= 2 {
                    vec![b.id(&names::g(i - 1))]
                } else {
                    vec![]
                };
                for &(p, blk_of) in &grads {
                    if blk_of == i {
                        produces.push(b.id(&names::grad(&self.params[p].name)));
                    }
                }
                let mut frees = b.ids(&held);
                if i >= 2 {
                    frees.push(b.id(&names::x(i - 1)));
                }
                members.push(OpId(b.ops.len() as u32));
                let op = b.op(names::b(i, o), opt.t_bwd, Device::Gpu);
                op.reads = reads;
                op.produces = produces;
                op.frees = frees;
                op.temp = opt.bwd_overhead;
            }
            bwd.push(Group {
                name: format!("bwd{i}"),
                members,
                runs: Multiplicity::ExactlyOnce,
            });
        }
        groups.extend(fwd);
        groups.extend(bwd);
    }

    /// `optG.p` and `optC.p` per trainable used parameter; returns (block, group).
    fn add_optimiser_ops(&self, b: &mut Builder, groups: &mut Vec<Group>) -> Vec<(usize, GroupId)> {
        let gpu = self.optimizer.gpu_speed.to_bandwidth();
        let cpu = self.optimizer.cpu_speed.to_bandwidth();
        let mut out = Vec::new();
        for (p, blk) in self.updated_params() {
            let par = &self.params[p];
            let mut state = vec![par.name.clone()];
            if self.optimizer.states > 0 {
                state.push(names::m(&par.name));
            }
            let mut reads = b.ids(&state);
            reads.push(b.id(&names::grad(&par.name)));
            let modifies = b.ids(&state);
            let grad = b.id(&names::grad(&par.name));
            let g_op = OpId(b.ops.len() as u32);
            let op = b.op(
                names::opt_g(&par.name),
                ticks_for(gpu, par.bytes),
                Device::Gpu,
            );
            op.reads = reads.clone();
            op.modifies = modifies.clone();
            op.frees = vec![grad];
            op.temp = Bytes(
                par.bytes
                    .0
                    .saturating_mul(self.optimizer.gpu_temp_factor as u64),
            );
            let c_op = OpId(b.ops.len() as u32);
            let op = b.op(
                names::opt_c(&par.name),
                ticks_for(cpu, par.bytes),
                Device::Cpu,
            );
            op.reads = reads;
            op.modifies = modifies;
            out.push((blk, GroupId(groups.len() as u32)));
            groups.push(Group {
                name: format!("upd.{}", par.name),
                members: vec![g_op, c_op],
                runs: Multiplicity::ExactlyOnce,
            });
        }
        out
    }

    /// H (G6): per step t a zero-duration GPU marker `step{t}` (its own group,
    /// slotted right before the step's block op) and a CPU op `mgmt{t}` (H)
    /// after it; the next step's marker comes after `mgmt{t}`. So `mgmt{t}`
    /// runs within step t and a step lasts at least H (eq. (23)). Precedences
    /// name only ops that run every period (R13). Returns the markers' groups.
    fn add_management(&self, b: &mut Builder, groups: &mut Vec<Group>) -> Vec<GroupId> {
        if self.cpu_management.0 == 0 {
            return Vec::new();
        }
        let n = 2 * self.l();
        let mut ticks = Vec::new();
        let mut marks = Vec::new();
        for t in 0..n {
            marks.push(OpId(b.ops.len() as u32));
            b.op(names::step(t), Ticks::ZERO, Device::Gpu);
            ticks.push(GroupId(groups.len() as u32));
            groups.push(Group {
                name: names::step(t),
                members: vec![*marks.last().expect("pushed")],
                runs: Multiplicity::ExactlyOnce,
            });
        }
        for t in 0..n {
            let id = OpId(b.ops.len() as u32);
            let op = b.op(names::mgmt(t), self.cpu_management, Device::Cpu);
            op.required = true;
            op.after = vec![marks[t]];
            b.ops[marks[(t + 1) % n].ix()].after.push(id);
        }
        ticks
    }
}
