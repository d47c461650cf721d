//! Instances written out by hand in a test: an activation or weight chain from
//! a list of layer figures (every size in bytes, every duration in ticks, β in
//! bytes per tick), and the same instance under the other release rule.

use offcert::family::activation_chain::{ActivationChain, ActivationLayer};
use offcert::family::weight_chain::{WeightChain, WeightLayer};
use offcert::family::BandwidthFile;
use offcert::model::{Instance, ReleaseRule, TensorId};

/// An activation chain, compiled: one layer `(u_F, u_B, |x_i|)` per entry (no
/// gradients y, no scratch ex), |x_L| = `x_last`, |y_L| = 0, `mem` bytes of GPU
/// memory, β = `beta` B/tick, the default release rule.
pub fn act(layers: &[(i64, i64, u64)], x_last: u64, mem: u64, beta: u64) -> Instance {
    ActivationChain {
        name: "t".into(),
        note: None,
        layers: layers
            .iter()
            .map(|&(u_f, u_b, x)| ActivationLayer {
                u_f,
                u_b,
                x,
                y: 0,
                ex_f: 0,
                ex_b: 0,
            })
            .collect(),
        x_last,
        y_last: 0,
        gpu_memory: mem,
        bandwidth: BandwidthFile::PerTick(beta),
        release: Default::default(),
        allocator: Default::default(),
    }
    .compile()
    .unwrap()
}

/// A weight chain named `name`: one layer `(u_F, u_B, |w_i|, |a_i|)` per entry,
/// |a_0| = `a0`, `mem` bytes of GPU memory, β = `beta` B/tick, the default
/// release rule.
pub fn weight_chain_of(
    name: &str,
    layers: &[(i64, i64, u64, u64)],
    a0: u64,
    mem: u64,
    beta: u64,
) -> WeightChain {
    WeightChain {
        name: name.into(),
        note: None,
        layers: layers
            .iter()
            .map(|&(u_f, u_b, w, a)| WeightLayer { u_f, u_b, w, a })
            .collect(),
        a0,
        gpu_memory: mem,
        bandwidth: BandwidthFile::PerTick(beta),
        release: Default::default(),
        allocator: Default::default(),
    }
}

/// [`weight_chain_of`] named "w", compiled.
pub fn weights(layers: &[(i64, i64, u64, u64)], a0: u64, mem: u64, beta: u64) -> Instance {
    weight_chain_of("w", layers, a0, mem, beta)
        .compile()
        .unwrap()
}

/// The same instance under release rule `rule`.
pub fn under(inst: &Instance, rule: ReleaseRule) -> Instance {
    let mut i = inst.clone();
    i.release = rule;
    i
}

/// The same instance under the relaxation `after_start` (R10).
pub fn relaxed(inst: Instance) -> Instance {
    under(&inst, ReleaseRule::AfterStart)
}

/// The tensor named `name` (panics if there is none).
pub fn tensor(inst: &Instance, name: &str) -> TensorId {
    TensorId(inst.tensors.iter().position(|t| t.name == name).unwrap() as u32)
}

/// Import options of the remat importer tests: 1 B per memory unit, 1 ms
/// ticks, 4 B per tick, the default memory (the checked peak), every option.
pub fn import_options() -> offcert::family::remat_import::ImportOptions {
    offcert::family::remat_import::ImportOptions {
        name: "t".into(),
        mem_unit: 1,
        tick_us: 1000,
        gpu_memory: None,
        bandwidth: Some(4),
        source: "test".into(),
        fastest_only: false,
        rockmate_tmp: Default::default(),
    }
}
