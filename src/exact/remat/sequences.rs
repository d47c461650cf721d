//! The op sequences an exact method tries on a `remat_chain` instance, and
//! each sequence renamed into a fixed-order instance (one op per run, one
//! tensor per value) that the fixed-order methods accept as it is.
//!
//! Owns: [`Layout`] (recognising the compiled layout of
//! `family::remat_chain`), [`enumerate`] (the sequences within the structural
//! limits of `proofs/REMAT-EXACT.md`) and [`rename`]. Must not import: the
//! methods themselves, heuristics, bounds.

use crate::exact::{ExactError, Method};
use crate::model::{ComputeOrder, Instance, Op, OpId, Tensor, TensorId};

/// Stop enumerating beyond this many sequences (the method then reports
/// `Unknown`).
pub const MAX_SEQUENCES: usize = 200_000;

/// Op ids of a compiled `remat_chain` (`RematChain::{f_id, fall_id, b_id,
/// option_ids}`): a block with several options has one `Fall{ℓ}.{k}`,
/// `B{ℓ}.{k}` and `s{ℓ}.{k}` per option k, its backwards in the variant group
/// `bwd{ℓ}` (exactly once, R11).
#[derive(Clone, Debug)]
pub struct Layout {
    /// The paper's L (layers before the loss).
    pub l: usize,
    /// Per layer ℓ = 1..=L+1 (entry ℓ−1), per option k: (`Fall{ℓ}.{k}`,
    /// `B{ℓ}.{k}`, `s{ℓ}.{k}`); option 0 has the one-option ids.
    opts: Vec<Vec<(OpId, OpId, TensorId)>>,
    /// Per op: a forward (`F{ℓ}` or some `Fall{ℓ}.{k}`, the loss's included).
    forward: Vec<bool>,
}

impl Layout {
    pub fn f(&self, k: usize) -> OpId {
        OpId((k - 1) as u32)
    }
    /// Option 0's `Fall{k}`.
    pub fn fall(&self, k: usize) -> OpId {
        OpId((self.l + k - 1) as u32)
    }
    /// Option 0's `B{k}`.
    pub fn b(&self, k: usize) -> OpId {
        OpId((2 * self.l + k) as u32)
    }
    /// Layer k's options (1..=L+1): (`Fall`, `B`, saved tensor) each.
    pub fn options(&self, k: usize) -> &[(OpId, OpId, TensorId)] {
        &self.opts[k - 1]
    }
    /// Whether `op` is a forward (`F{ℓ}` or an `Fall`).
    pub fn is_forward(&self, op: OpId) -> bool {
        self.forward[op.ix()]
    }
    fn a(&self, k: usize) -> TensorId {
        TensorId(k as u32)
    }
    fn s(&self, k: usize) -> TensorId {
        TensorId((self.l + k) as u32)
    }
    fn d(&self, k: usize) -> TensorId {
        TensorId((2 * self.l + 2 + k) as u32)
    }

    /// The layout of `inst` if it is exactly what `RematChain::compile` makes
    /// (ids, tensor lists, optional forwards, required backwards, the groups
    /// `bwd{ℓ}` of the blocks with several options).
    pub fn recognise(inst: &Instance, method: Method) -> Result<Layout, ExactError> {
        let no = |why: String| ExactError::Unsupported {
            method,
            reason: format!("free compute order outside the remat_chain layout: {why}"),
        };
        let n = inst.ops.len();
        let extra: usize = inst
            .groups
            .iter()
            .map(|g| g.members.len().saturating_sub(1))
            .sum();
        if inst.family != "remat_chain" || n < 5 + 2 * extra || (n - 2 - 2 * extra) % 3 != 0 {
            return Err(no(format!("family `{}`, {n} ops", inst.family)));
        }
        let l = (n - 2 - 2 * extra) / 3;
        if inst.tensors.len() != 3 * l + 3 + extra {
            return Err(no(format!("{} tensors", inst.tensors.len())));
        }
        let opts = option_ids(inst, l).map_err(no)?;
        let mut forward = vec![false; n];
        forward[..=2 * l].iter_mut().for_each(|f| *f = true);
        for v in &opts {
            for (fall, _, _) in v {
                forward[fall.ix()] = true;
            }
        }
        let lay = Layout { l, opts, forward };
        for (id, reads, produces, frees, required) in lay.expected_ops() {
            let op = inst.op(id);
            if op.reads != reads
                || op.produces != produces
                || op.frees != frees
                || op.required != required
                || !op.consumes.is_empty()
                || !op.modifies.is_empty()
                || !op.after.is_empty()
            {
                return Err(no(format!("op {} differs", op.name)));
            }
        }
        let init_ok = inst
            .tensors
            .iter()
            .enumerate()
            .all(|(i, t)| t.initial.on_gpu() == (i == 0) && !t.initial.on_cpu());
        if !init_ok {
            return Err(no("initial placements differ".into()));
        }
        Ok(lay)
    }

    /// Every op as `RematChain::compile` makes it: (id, reads, produces,
    /// frees, required). A block's backward is required only when it has one
    /// option (else its group decides, R11).
    #[allow(clippy::type_complexity)]
    fn expected_ops(&self) -> Vec<(OpId, Vec<TensorId>, Vec<TensorId>, Vec<TensorId>, bool)> {
        let l = self.l;
        let mut want = vec![];
        for k in 1..=l {
            want.push((
                self.f(k),
                vec![self.a(k - 1)],
                vec![self.a(k)],
                vec![],
                false,
            ));
            let one = self.options(k).len() == 1;
            for &(fall, b, s) in self.options(k) {
                want.push((fall, vec![self.a(k - 1)], vec![self.a(k), s], vec![], false));
                let (r, f) = (
                    vec![self.d(k), self.a(k), s, self.a(k - 1)],
                    vec![self.d(k), self.a(k), s],
                );
                want.push((b, r, vec![self.d(k - 1)], f, one));
            }
        }
        let last = l + 1;
        want.push((
            self.fall(last),
            vec![self.a(l)],
            vec![self.s(last)],
            vec![],
            false,
        ));
        want.push((
            self.b(last),
            vec![self.a(l), self.s(last)],
            vec![self.d(l)],
            vec![self.s(last)],
            true,
        ));
        want
    }
}

/// Per layer 1..=L+1, the options' ids, read off the groups: the group of a
/// block with several options lists its option-0 backward first, then the
/// further options' backwards in the ids `RematChain::option_ids` gives them
/// (after every one-option op and tensor, layer by layer); each group
/// `exactly_once`, the blocks in increasing order.
fn option_ids(inst: &Instance, l: usize) -> Result<Vec<Vec<(OpId, OpId, TensorId)>>, String> {
    let mut opts: Vec<Vec<(OpId, OpId, TensorId)>> = (1..=l + 1)
        .map(|k| {
            vec![(
                OpId((l + k - 1) as u32),
                OpId((2 * l + k) as u32),
                TensorId((l + k) as u32),
            )]
        })
        .collect();
    let (mut o, mut t) = (3 * l as u32 + 2, 3 * l as u32 + 3);
    let mut prev = 0;
    for g in &inst.groups {
        let first = g.members.first().map_or(0, |m| m.ix());
        let k = first.wrapping_sub(2 * l);
        if !(1..=l).contains(&k) || k <= prev || g.members.len() < 2 {
            return Err(format!("group {} is not a block's backwards", g.name));
        }
        if g.runs != crate::model::Multiplicity::ExactlyOnce {
            return Err(format!("group {} is not exactly_once", g.name));
        }
        prev = k;
        for m in &g.members[1..] {
            if m.0 != o + 1 {
                return Err(format!("group {}: member {} out of place", g.name, m.0));
            }
            opts[k - 1].push((OpId(o), OpId(o + 1), TensorId(t)));
            o += 2;
            t += 1;
        }
    }
    Ok(opts)
}

/// Which structural limits of `proofs/REMAT-EXACT.md` §3 the enumerator keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SequenceLimits {
    /// Limit 4: between two consecutive backwards, forwards run in increasing
    /// layer order (so each layer at most once per stretch). `false` also
    /// enumerates forwards in any order, each layer's forwards at most
    /// [`RELAXED_RUNS_PER_STRETCH`] times per stretch (the relaxation used to
    /// test limit 4; exponentially more sequences).
    pub forwards_in_order: bool,
}

impl Default for SequenceLimits {
    fn default() -> SequenceLimits {
        SequenceLimits {
            forwards_in_order: true,
        }
    }
}

impl SequenceLimits {
    /// The front door's choice (`exact::solve`): limit 4 relaxed on chains of
    /// at most [`RELAXED_BY_DEFAULT_LAYERS`] layers, whose relaxed enumeration
    /// stays small, and kept on longer ones. Limit 4 loses optima (issue 23,
    /// `instances/regressions/remat/limit4.json`: 11 in order, 10 relaxed).
    pub fn default_for(inst: &Instance) -> SequenceLimits {
        // A block's further options add two ops each (its group's members
        // beyond the first): they are not layers.
        let extra: usize = inst
            .groups
            .iter()
            .map(|g| g.members.len().saturating_sub(1))
            .sum();
        let n = inst.ops.len();
        let layers = if inst.family == "remat_chain" && n >= 5 + 2 * extra {
            (n - 2 - 2 * extra) / 3
        } else {
            usize::MAX
        };
        SequenceLimits {
            forwards_in_order: layers > RELAXED_BY_DEFAULT_LAYERS,
        }
    }
}

/// The longest chain on which [`SequenceLimits::default_for`] relaxes limit 4.
pub const RELAXED_BY_DEFAULT_LAYERS: usize = 2;

/// With `forwards_in_order: false`: the most forwards (F or F_all) of one
/// layer in one stretch between two backwards.
pub const RELAXED_RUNS_PER_STRETCH: u8 = 2;

/// One candidate op sequence and its total compute (a lower bound on the
/// makespan of every schedule that runs it: one GPU stream, R2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sequence {
    pub ops: Vec<OpId>,
    pub compute: i64,
}

/// Every sequence within the limits (proofs/REMAT-EXACT.md §2) whose compute
/// is below `cap`, sorted by compute (stable); `None` beyond
/// [`MAX_SEQUENCES`].
pub fn enumerate(inst: &Instance, lay: &Layout, cap: i64) -> Option<Vec<Sequence>> {
    enumerate_with(inst, lay, cap, SequenceLimits::default())
}

/// [`enumerate`] under the given limits (limit 4 kept or relaxed).
pub fn enumerate_with(
    inst: &Instance,
    lay: &Layout,
    cap: i64,
    limits: SequenceLimits,
) -> Option<Vec<Sequence>> {
    let nt = inst.tensors.len();
    let mut d = Dfs {
        inst,
        lay,
        live: vec![false; nt],
        read: vec![false; nt],
        chosen: vec![None; lay.l + 2],
        stretch_runs: vec![0; lay.l + 2],
        limits,
        seq: vec![],
        compute: 0,
        cap,
        out: vec![],
        overflow: false,
    };
    d.live[0] = true;
    d.go(lay.l + 1, 0);
    if d.overflow {
        return None;
    }
    d.out.sort_by_key(|s| s.compute);
    Some(d.out)
}

struct Dfs<'a> {
    inst: &'a Instance,
    lay: &'a Layout,
    /// Per tensor: a value exists (on the GPU or the CPU) and may be read.
    live: Vec<bool>,
    /// Per tensor: its live value has been read.
    read: Vec<bool>,
    /// Per layer: the option whose F_all has run (its backward is the one
    /// that can read the saved value: R1, R11), if any.
    chosen: Vec<Option<usize>>,
    /// Per layer: its forwards since the previous backward (relaxed limit 4).
    stretch_runs: Vec<u8>,
    limits: SequenceLimits,
    seq: Vec<OpId>,
    compute: i64,
    cap: i64,
    out: Vec<Sequence>,
    overflow: bool,
}

impl Dfs<'_> {
    /// The least compute still to come with `m` the next backward: every
    /// B_k (k ≤ m) and a forward of each layer whose F_all has not run (the
    /// chosen option's B, or the least F_all + B over the options).
    fn rest(&self, m: usize) -> i64 {
        let d = |o: OpId| self.inst.op(o).duration.0;
        (1..=m)
            .map(|k| {
                let opts = self.lay.options(k);
                match self.chosen[k] {
                    Some(j) => d(opts[j].1),
                    None => opts.iter().map(|&(f, b, _)| d(f) + d(b)).min().unwrap_or(0),
                }
            })
            .sum()
    }

    /// Run `op` if its reads are live and no unread value is dropped; recurse
    /// with the next backward `m_after` and the segment's last layer `last`
    /// (0 after a backward, which also starts a new stretch).
    fn try_op(&mut self, op: OpId, m_after: usize, last: usize) {
        let o = self.inst.op(op);
        if o.reads.iter().any(|t| !self.live[t.ix()]) {
            return;
        }
        // Before B_m, δ_m exists and cannot move (nor go: B_m reads it), so a
        // forward whose footprint and δ_m exceed the memory cannot run (limit 6).
        if m_after > 0 && m_after <= self.lay.l && self.lay.is_forward(op) {
            let d = self.inst.tensor(self.lay.d(m_after)).size.0 as u128;
            if crate::semantics::op_footprint(self.inst, op).0 as u128 + d
                > self.inst.machine.gpu_capacity.0 as u128
            {
                return;
            }
        }
        // Re-producing a value nobody read is outside the limits (limit 3).
        if o.produces
            .iter()
            .any(|t| self.live[t.ix()] && !self.read[t.ix()])
        {
            return;
        }
        let saved = (
            self.live.clone(),
            self.read.clone(),
            self.chosen.clone(),
            self.stretch_runs.clone(),
        );
        if last == 0 {
            self.stretch_runs.iter_mut().for_each(|r| *r = 0);
        } else {
            self.stretch_runs[last] += 1;
        }
        for t in &o.reads {
            self.read[t.ix()] = true;
        }
        for t in &o.frees {
            self.live[t.ix()] = false;
        }
        for t in &o.produces {
            self.live[t.ix()] = true;
            self.read[t.ix()] = false;
        }
        self.seq.push(op);
        self.compute += o.duration.0;
        self.go(m_after, last);
        self.compute -= o.duration.0;
        self.seq.pop();
        (self.live, self.read, self.chosen, self.stretch_runs) = saved;
    }

    /// Extend the sequence; `m` is the next backward (0: all done), `last` the
    /// layer of the latest forward since the previous backward (0: none):
    /// forwards between two backwards run in increasing layer order (limit 4),
    /// or, relaxed, in any order with at most [`RELAXED_RUNS_PER_STRETCH`]
    /// forwards per layer per stretch.
    fn go(&mut self, m: usize, last: usize) {
        if self.overflow || self.compute + self.rest(m) >= self.cap {
            return;
        }
        let l = self.lay.l;
        if m == 0 {
            // Every value read, but δ_0 (B_1's, read by nobody).
            let unread = (0..self.live.len())
                .any(|i| self.live[i] && !self.read[i] && TensorId(i as u32) != self.lay.d(0));
            if !unread {
                if self.out.len() >= MAX_SEQUENCES {
                    self.overflow = true;
                    return;
                }
                self.out.push(Sequence {
                    ops: self.seq.clone(),
                    compute: self.compute,
                });
            }
            return;
        }
        // The backward of the option whose F_all ran (no other can read its
        // saved value; none before an F_all).
        if let Some(j) = self.chosen[m] {
            self.try_op(self.lay.options(m)[j].1, m - 1, 0);
        }
        let from = if self.limits.forwards_in_order {
            last + 1
        } else {
            1
        };
        for k in from..=m {
            if !self.limits.forwards_in_order && self.stretch_runs[k] >= RELAXED_RUNS_PER_STRETCH {
                continue;
            }
            if self.chosen[k].is_none() {
                for j in 0..self.lay.options(k).len() {
                    self.chosen[k] = Some(j);
                    self.try_op(self.lay.options(k)[j].0, m, k);
                    self.chosen[k] = None;
                }
            }
            if k <= l {
                self.try_op(self.lay.f(k), m, k);
            }
        }
    }
}

/// A sequence as a fixed-order instance: op `p` is the sequence's `p`-th run,
/// each value of a tensor its own tensor, and the last reader of a value frees
/// it (an explicit delete at that op's end in the original, unless the op
/// frees it itself).
#[derive(Clone, Debug)]
pub struct Renamed {
    pub inst: Instance,
    /// The original op of each position.
    pub op_of: Vec<OpId>,
    /// The original tensor of each value.
    pub tensor_of: Vec<TensorId>,
    /// Per position: original tensors to delete at the op's end.
    pub deletes_after: Vec<Vec<TensorId>>,
}

pub fn rename(inst: &Instance, seq: &[OpId]) -> Renamed {
    let mut tensor_of: Vec<TensorId> = vec![];
    let mut count = vec![0usize; inst.tensors.len()];
    let mut cur: Vec<Option<usize>> = vec![None; inst.tensors.len()];
    let mut tensors: Vec<Tensor> = vec![];
    let mut new_value = |t: TensorId, tensors: &mut Vec<Tensor>, initial| {
        let src = inst.tensor(t);
        count[t.ix()] += 1;
        tensors.push(Tensor {
            name: format!("{}#{}", src.name, count[t.ix()]),
            initial,
            ..src.clone()
        });
        tensor_of.push(t);
        tensors.len() - 1
    };
    for (i, t) in inst.tensors.iter().enumerate() {
        if t.initial.on_gpu() {
            cur[i] = Some(new_value(TensorId(i as u32), &mut tensors, t.initial));
        }
    }
    // Per position: (reads, produces, native frees) as values.
    let mut lists = vec![];
    let mut last_read: Vec<Option<usize>> = vec![];
    for (p, o) in seq.iter().enumerate() {
        let op = inst.op(*o);
        let value = |t: &TensorId| cur[t.ix()].expect("enumerated sequences read live values");
        let reads: Vec<usize> = op.reads.iter().map(value).collect();
        let frees: Vec<usize> = op.frees.iter().map(value).collect();
        for t in &op.frees {
            cur[t.ix()] = None;
        }
        let mut produces = vec![];
        for t in &op.produces {
            let v = new_value(*t, &mut tensors, crate::model::Placement::Nowhere);
            cur[t.ix()] = Some(v);
            produces.push(v);
        }
        last_read.resize(tensors.len(), None);
        for &v in &reads {
            last_read[v] = Some(p);
        }
        lists.push((reads, produces, frees));
    }
    last_read.resize(tensors.len(), None);
    let id = |v: &usize| TensorId(*v as u32);
    let mut ops = vec![];
    let mut deletes_after = vec![];
    for (p, (reads, produces, frees)) in lists.into_iter().enumerate() {
        let src = inst.op(seq[p]);
        let extra: Vec<usize> = reads
            .iter()
            .copied()
            .filter(|v| last_read[*v] == Some(p) && !frees.contains(v))
            .collect();
        deletes_after.push(extra.iter().map(|v| tensor_of[*v]).collect());
        ops.push(Op {
            name: format!("{}@{p}", src.name),
            reads: reads.iter().map(id).collect(),
            produces: produces.iter().map(id).collect(),
            frees: frees.iter().chain(&extra).map(id).collect(),
            required: true,
            ..src.clone()
        });
    }
    let n = ops.len();
    Renamed {
        inst: Instance {
            name: format!("{} (one op sequence)", inst.name),
            family: "remat_chain/sequence".into(),
            tensors,
            ops,
            order: ComputeOrder::Fixed((0..n).map(|p| OpId(p as u32)).collect()),
            // The sequence runs one backward per block, of the option whose
            // F_all it ran: the groups (R11) hold by construction, and a
            // fixed order runs exactly its ops (R8).
            groups: vec![],
            ..inst.clone()
        },
        op_of: seq.to_vec(),
        tensor_of,
        deletes_after,
    }
}
