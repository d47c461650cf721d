//! The paper-scale weight chains of the weight paper's §7 and its Table 1, shared
//! by `tests/weight_paper.rs` and the `weight_table1` bench. The derivation is
//! written out here once; the files in `instances/paper/weight/` must equal it.
#![allow(dead_code)]

use offcert::family::weight_chain::{WeightChain, WeightLayer};
use offcert::family::BandwidthFile;

/// Hidden size and heads (§7, from Megatron-LM).
pub const HIDDEN: u64 = 3072;
pub const HEADS: u64 = 24;
/// Tokens per sample, chosen so that |a_i| ≈ 20 MB at batch 16 (§7: "about 20MB
/// of activations are saved in GPU memory per layer" for batch 16).
pub const SEQ: u64 = 200;
/// β = 12 GB/s = 12 000 bytes per µs (tick = 1 µs).
pub const BETA_BYTES_PER_US: u64 = 12_000;
pub const GIB: u64 = 1 << 30;

/// One row of Table 1 (durations in ms).
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub model: &'static str,
    pub depth: usize,
    pub batch: u64,
    pub sum_u: u64,
    pub ilp: u64,
    pub greedy: u64,
    pub l2l: u64,
    pub greedy_star: u64,
}

const fn row(model: &'static str, depth: usize, batch: u64, v: [u64; 5]) -> Row {
    Row {
        model,
        depth,
        batch,
        sum_u: v[0],
        ilp: v[1],
        greedy: v[2],
        l2l: v[3],
        greedy_star: v[4],
    }
}

/// Table 1 of the weight paper, verbatim.
pub const TABLE1: [Row; 15] = [
    row("gpt2", 74, 64, [47421, 47421, 47493, 52707, 47493]),
    row("gpt2", 56, 64, [35553, 35553, 35625, 39542, 35625]),
    row("gpt2", 38, 64, [23694, 23694, 23838, 26387, 23838]),
    row("gpt2", 74, 32, [23697, 23697, 23769, 28983, 23769]),
    row("gpt2", 56, 32, [17762, 17762, 17834, 21751, 17834]),
    row("gpt2", 38, 32, [11840, 11840, 11948, 14533, 11948]),
    row("gpt2", 74, 16, [11612, 11612, 11684, 16898, 11715]),
    row("gpt2", 56, 16, [8697, 8697, 8769, 12686, 8800]),
    row("gpt2", 38, 16, [5794, 5794, 5902, 8487, 5934]),
    row("bert", 144, 64, [34486, 34486, 34499, 38379, 34499]),
    row("bert", 96, 64, [22965, 22965, 22978, 25577, 22978]),
    row("bert", 144, 32, [17443, 17443, 17483, 21336, 17483]),
    row("bert", 96, 32, [11617, 11617, 11657, 14230, 11657]),
    row("bert", 144, 16, [9090, 9090, 9183, 12983, 9215]),
    row("bert", 96, 16, [6058, 6058, 6085, 8670, 6085]),
];

impl Row {
    pub fn name(&self) -> String {
        format!("{}-L{}-b{}", self.model, self.depth, self.batch)
    }
    pub fn path(&self) -> String {
        format!(
            "{}/instances/paper/weight/{}.json",
            env!("CARGO_MANIFEST_DIR"),
            self.name()
        )
    }
}

/// Parameters of one transformer layer: QKV (3h² + 3h), projection (h² + h),
/// MLP (4h² + 4h and 4h² + h), two layer norms (4h): 12h² + 13h.
pub fn layer_params() -> u64 {
    12 * HIDDEN * HIDDEN + 13 * HIDDEN
}

/// |w_i|: fp32 weights (the master copy the update modifies).
pub fn weight_bytes() -> u64 {
    4 * layer_params()
}

/// |a_i|: the layer's output for the batch, fp16: batch · SEQ · h · 2.
pub fn activation_bytes(batch: u64) -> u64 {
    batch * SEQ * HIDDEN * 2
}

/// M_GPU: 16 GiB (V100) less the buffer for the intermediate activations that
/// are recomputed during the backward, 1 GiB per 16 samples (the low end of §7's
/// "1GB to 2GB" at batch 16; 2 GiB would leave BERT-144 at batch 64 without a
/// feasible schedule).
pub fn gpu_memory(batch: u64) -> u64 {
    16 * GIB - batch / 16 * GIB
}

/// Per-layer times in µs: Σ(u_F + u_B) = Σu_j of Table 1 exactly; u_B = 3·u_F
/// (the backward recomputes the forward, then twice its work), up to rounding.
pub fn times(row: &Row) -> Vec<(i64, i64)> {
    let total = row.sum_u as i64 * 1000;
    let l = row.depth as i64;
    let (q, r) = (total / l, total % l);
    (0..l)
        .map(|i| {
            let t = q + if i < r { 1 } else { 0 };
            let f = t / 4;
            (f, t - f)
        })
        .collect()
}

pub fn derive(row: &Row) -> WeightChain {
    let a = activation_bytes(row.batch);
    let note = format!(
        "Weight paper §7 / Table 1 ({} rows): {} layers, batch {}. Derived in tests/weight_table1/mod.rs: \
         hidden {HIDDEN}, {HEADS} heads; |w_i| = 4 B × (12h² + 13h) = {} B (fp32 master weights; heads do not change it); \
         |a_i| = |a_0| = batch × {SEQ} tokens × h × 2 B (fp16) = {a} B, the sequence length chosen so that |a_i| ≈ 20 MB \
         at batch 16 as §7 states; M_GPU = 16 GiB − batch/16 GiB (recomputation buffer) = {} B; β = 12 GB/s = \
         {BETA_BYTES_PER_US} B/µs; tick = 1 µs; u_F + u_B per layer = Σu_j / L with Σu_j = {} ms from Table 1 \
         (remainder spread over the first layers), u_B = 3 u_F up to rounding (backward with recomputation). \
         Table 1 for this row: ILP {} ms, Greedy {} ms, L2L {} ms, Greedy* {} ms.",
        row.model,
        row.depth,
        row.batch,
        weight_bytes(),
        gpu_memory(row.batch),
        row.sum_u,
        row.ilp,
        row.greedy,
        row.l2l,
        row.greedy_star
    );
    WeightChain {
        name: row.name(),
        note: Some(note),
        layers: times(row)
            .into_iter()
            .map(|(u_f, u_b)| WeightLayer {
                u_f,
                u_b,
                w: weight_bytes(),
                a,
            })
            .collect(),
        a0: a,
        gpu_memory: gpu_memory(row.batch),
        bandwidth: BandwidthFile::PerTick(BETA_BYTES_PER_US),
        release: Default::default(),
        allocator: Default::default(),
    }
}
