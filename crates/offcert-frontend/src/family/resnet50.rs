//! A synthetic ResNet-50 (224×224, fp32, SGD with momentum) `op_sequence` at a
//! given batch size, for the out-of-core paper's Table 1 (FAMILIES.md §4.6).
//!
//! Owns: [`resnet50`] and its cost model. Must not import: schedules, the
//! checker, heuristics.
//!
//! Sizes from the architecture (4 bytes per value): every convolution keeps its
//! output (after BN and an in-place ReLU) and a saved pre-BN copy for the
//! backward pass (two tensors of the output's size); weights include the BN
//! parameters; each weight has a momentum buffer of its size; both persistent.
//! Functions: per convolution a forward and a backward (which writes the input
//! gradient and modifies its weight and momentum: the update is folded into
//! it); per bottleneck an add (forward) and its backward; stem max-pool,
//! global average pool, fc, loss. Durations: 2·MACs FLOPs per convolution/fc
//! forward, twice that backward, one FLOP per element for the rest, times one
//! constant chosen so that the sum at batch 190 is 190/581 s (the paper's
//! 581 images/s baseline on a V100); hence linear in the batch. 1 tick = 1 ns.

use super::op_sequence::{Function, OpSequence, Variable};
use super::BandwidthFile;
use crate::model::{Duplex, ReleaseRule, TensorKind};

/// A function before its gradients are resolved: name, work (FLOPs), reads,
/// writes, modifies. `g:{t}` names the gradient of `t`.
type Proto = (String, u128, Vec<String>, Vec<String>, Vec<String>);

/// The builder: variables, forward functions in order, persistent names, and
/// backward functions in forward order (reversed in [`backward_order`]).
struct B {
    batch: u64,
    vars: Vec<Variable>,
    funcs: Vec<Proto>,
    pers: Vec<String>,
    back: Vec<Proto>,
}

impl B {
    fn var(&mut self, name: String, bytes: u64, kind: TensorKind) -> String {
        self.vars.push(Variable {
            name: name.clone(),
            bytes,
            kind,
        });
        name
    }
    fn act(&mut self, name: String, c: u64, hw: u64) -> String {
        let b = 4 * self.batch * c * hw * hw;
        self.var(name, b, TensorKind::Activation)
    }
    /// A convolution k×k, cin → cout, output hw×hw; returns its output.
    fn conv(&mut self, name: &str, x: &str, cin: u64, cout: u64, k: u64, hw: u64) -> String {
        let w = self.var(
            format!("{name}.W"),
            4 * (cin * cout * k * k + 4 * cout),
            TensorKind::Weight,
        );
        let m = self.var(
            format!("{name}.M"),
            4 * (cin * cout * k * k + 4 * cout),
            TensorKind::OptimizerState,
        );
        self.pers.push(w.clone());
        self.pers.push(m.clone());
        let y = self.act(format!("{name}.y"), cout, hw);
        let s = self.act(format!("{name}.s"), cout, hw);
        let flops = 2 * self.batch as u128 * (cout * hw * hw * cin * k * k) as u128;
        self.funcs.push((
            format!("{name}.F"),
            flops,
            vec![x.into(), w.clone()],
            vec![y.clone(), s.clone()],
            vec![],
        ));
        // Backward: reads g_y, x, s, W; writes g_x (filled in by the caller's chain); modifies W, M.
        self.back.push((
            format!("{name}.B"),
            2 * flops,
            vec![format!("g:{y}"), x.into(), s, w.clone()],
            vec![format!("g:{x}")],
            vec![w, m],
        ));
        y
    }

    /// The stem: conv1 (7×7, stride 2) and the 3×3 max-pool; returns the
    /// pool's output (64 channels, 56×56).
    fn stem(&mut self, x0: &str) -> String {
        let batch = self.batch;
        let c1 = self.conv("conv1", x0, 3, 64, 7, 112);
        let p = self.act("pool.y".into(), 64, 56);
        self.funcs.push((
            "pool.F".into(),
            (batch * 64 * 56 * 56 * 9) as u128,
            vec![c1.clone()],
            vec![p.clone()],
            vec![],
        ));
        self.back.push((
            "pool.B".into(),
            (batch * 64 * 112 * 112) as u128,
            vec![format!("g:{p}"), c1.clone()],
            vec![format!("g:{c1}")],
            vec![],
        ));
        p
    }

    /// The four stages of bottlenecks (3, 4, 6, 3 blocks; widths 64 to 512);
    /// returns the last block's output (2048 channels, 7×7).
    fn stages(&mut self, mut x: String) -> String {
        let mut cin = 64;
        let mut hw = 56;
        for (stage, (blocks, width)) in [(3u64, 64u64), (4, 128), (6, 256), (3, 512)]
            .into_iter()
            .enumerate()
        {
            for blk in 0..blocks {
                let name = format!("l{}.{}", stage + 1, blk);
                let stride2 = blk == 0 && stage > 0;
                let ohw = if stride2 { hw / 2 } else { hw };
                x = self.bottleneck(&name, &x, blk == 0, cin, width, hw, ohw);
                cin = 4 * width;
                hw = ohw;
            }
        }
        x
    }

    /// One bottleneck (1×1, 3×3, 1×1 convolutions and the residual add); the
    /// first block of a stage has a downsample convolution on its skip path,
    /// the others an identity skip. Returns the block's output.
    #[allow(clippy::too_many_arguments)]
    fn bottleneck(
        &mut self,
        name: &str,
        x: &str,
        first: bool,
        cin: u64,
        width: u64,
        hw: u64,
        ohw: u64,
    ) -> String {
        let a1 = self.conv(&format!("{name}.c1"), x, cin, width, 1, hw);
        let a2 = self.conv(&format!("{name}.c2"), &a1, width, width, 3, ohw);
        let a3 = self.conv(&format!("{name}.c3"), &a2, width, 4 * width, 1, ohw);
        let skip = if first {
            let d = self.conv(&format!("{name}.down"), x, cin, 4 * width, 1, ohw);
            // The downsample's output gradient is the add's: g_a3.
            self.back.last_mut().expect("just pushed").2[0] = format!("g:{a3}");
            d
        } else {
            x.to_string()
        };
        let y = self.act(format!("{name}.out"), 4 * width, ohw);
        let el = (self.batch * 4 * width * ohw * ohw) as u128;
        self.funcs.push((
            format!("{name}.add.F"),
            el,
            vec![a3.clone(), skip],
            vec![y.clone()],
            vec![],
        ));
        // add backward: g_a3 from g_y (ReLU mask from y); the skip's gradient
        // is accumulated into g_skip by its consumer below.
        self.back.push((
            format!("{name}.add.B"),
            el,
            vec![format!("g:{y}"), y.clone()],
            vec![format!("g:{a3}")],
            vec![],
        ));
        if !first {
            // Identity skip: g_x += g_a3 after c1's backward wrote g_x.
            self.back.push((
                format!("{name}.skip.B"),
                el,
                vec![format!("g:{a3}")],
                vec![],
                vec![format!("g:{x}")],
            ));
        }
        y
    }

    /// The head: global average pool, fc (with its weight and momentum), the
    /// loss (which writes the logits' gradient) and their backwards.
    fn head(&mut self, x: &str, label: String) {
        let batch = self.batch;
        let v = self.act("avgpool.y".into(), 2048, 1);
        self.funcs.push((
            "avgpool.F".into(),
            (batch * 2048 * 49) as u128,
            vec![x.into()],
            vec![v.clone()],
            vec![],
        ));
        self.back.push((
            "avgpool.B".into(),
            (batch * 2048 * 49) as u128,
            vec![format!("g:{v}")],
            vec![format!("g:{x}")],
            vec![],
        ));
        let fcw = self.var("fc.W".into(), 4 * (2048 * 1000 + 1000), TensorKind::Weight);
        let fcm = self.var(
            "fc.M".into(),
            4 * (2048 * 1000 + 1000),
            TensorKind::OptimizerState,
        );
        self.pers.push(fcw.clone());
        self.pers.push(fcm.clone());
        let logits = self.act("fc.y".into(), 1000, 1);
        let fl = 2 * (batch * 2048 * 1000) as u128;
        self.funcs.push((
            "fc.F".into(),
            fl,
            vec![v.clone(), fcw.clone()],
            vec![logits.clone()],
            vec![],
        ));
        self.funcs.push((
            "loss".into(),
            (batch * 1000) as u128,
            vec![logits.clone(), label],
            vec![format!("g:{logits}")],
            vec![],
        ));
        self.back.push((
            "fc.B".into(),
            2 * fl,
            vec![format!("g:{logits}"), v, fcw.clone()],
            vec![format!("g:{}", "avgpool.y")],
            vec![fcw, fcm],
        ));
    }
}

/// The ResNet-50 sequence at `batch`, with the given memory and β (bytes/ns):
/// build the forward pass, order the backward pass, resolve the gradients'
/// writes and modifications, then calibrate the durations.
pub fn resnet50(batch: u64, gpu_memory: u64, bandwidth: u64) -> OpSequence {
    let mut b = B {
        batch,
        vars: vec![],
        funcs: vec![],
        pers: vec![],
        back: vec![],
    };
    let x0 = b.act("input".into(), 3, 224);
    let label = b.var("label".into(), 8 * batch, TensorKind::Input);
    b.pers.push(x0.clone());
    b.pers.push(label.clone());
    let p = b.stem(&x0);
    let x = b.stages(p);
    b.head(&x, label);
    let mut order: Vec<Proto> = b.funcs.clone();
    order.extend(backward_order(std::mem::take(&mut b.back)));
    let (functions, total) = resolve_gradients(&order, &mut b.vars);
    b.vars.sort_by(|a, c| a.name.cmp(&c.name));
    OpSequence {
        name: format!("resnet50-b{batch}"),
        note: Some(format!(
            "synthetic ResNet-50 (224x224, fp32, SGD momentum folded into each backward) at batch {batch}: sizes from the architecture, \
             durations from a FLOP model calibrated to 581 images/s at batch 190 (paper Table 1 baseline, V100); 1 tick = 1 ns; \
             link {bandwidth} GB/s per direction, full duplex (assumption: two NVLink 2.0 links); generated by offcert window-table1"
        )),
        variables: b.vars,
        functions: calibrate(functions, total, batch),
        persistent: b.pers,
        gpu_memory,
        bandwidth: BandwidthFile::PerTick(bandwidth),
        duplex: Duplex::FullDuplex,
        release: ReleaseRule::AfterEnd,
        allocator: Default::default(),
        tick: Some(crate::units::TickUnit { ns: 1 }),
    }
}

/// The backward pass: the backwards in reverse forward order, except that an
/// identity skip's accumulation (`skip.B`, which modifies g_x) must follow
/// the c1 backward that writes g_x. Within a block the reversed list is
/// skip.B?, add.B, down.B?, c3.B, c2.B, c1.B; this puts add.B first, then
/// down/c3/c2/c1, then skip.B.
fn backward_order(mut back: Vec<Proto>) -> Vec<Proto> {
    back.reverse();
    let mut fixed = Vec::new();
    let mut i = 0;
    while i < back.len() {
        let name = back[i].0.clone();
        if name.ends_with(".skip.B") {
            let skip = back[i].clone();
            let mut j = i + 1;
            let mut group = Vec::new();
            while j < back.len() && !back[j].0.ends_with(".c1.B") {
                group.push(back[j].clone());
                j += 1;
            }
            group.push(back[j].clone());
            fixed.extend(group);
            fixed.push(skip);
            i = j + 1;
        } else {
            fixed.push(back[i].clone());
            i += 1;
        }
    }
    fixed
}

/// Gradient variables: g:{t} has t's size; the first writer writes it, a
/// later writer (a downsample's backward, which runs after c1's) modifies it;
/// the input images get no gradient. Appends the gradients to `vars` and
/// returns every function with its work (durations still 0), and the total work.
fn resolve_gradients(order: &[Proto], vars: &mut Vec<Variable>) -> (Vec<(Function, u128)>, u128) {
    let size: std::collections::HashMap<String, u64> =
        vars.iter().map(|v| (v.name.clone(), v.bytes)).collect();
    let mut written = std::collections::HashSet::new();
    let mut functions = Vec::new();
    let mut total: u128 = 0;
    for (name, work, reads, writes, modifies) in order {
        total += work;
        let mut f = Function {
            name: name.clone(),
            duration: 0,
            reads: reads.clone(),
            writes: vec![],
            modifies: modifies.clone(),
            clears: vec![],
        };
        for w in writes {
            if w == "g:input" {
                continue; // no gradient for the input images
            }
            if written.insert(w.clone()) {
                f.writes.push(w.clone());
            } else {
                f.modifies.push(w.clone());
            }
        }
        let m = f.modifies.clone();
        f.reads.retain(|r| !m.contains(r));
        functions.push((f, *work));
    }
    let mut grads: Vec<&String> = written.iter().filter(|g| g.starts_with("g:")).collect();
    grads.sort();
    for g in grads {
        let t = g.trim_start_matches("g:");
        vars.push(Variable {
            name: g.clone(),
            bytes: size[t],
            kind: TensorKind::Gradient,
        });
    }
    (functions, total)
}

/// Durations: the total work at batch 190 is 190/581 s and work is linear in
/// the batch, so each function's duration is its share of that, rounded up,
/// at least 1 ns.
fn calibrate(functions: Vec<(Function, u128)>, total: u128, batch: u64) -> Vec<Function> {
    let per_image: u128 = total / batch as u128;
    let ns_190: u128 = 190 * 1_000_000_000 / 581; // 327 022 375 ns
    functions
        .into_iter()
        .map(|(mut f, w)| {
            f.duration = ((w * ns_190).div_ceil(per_image * 190)).max(1) as i64;
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_and_calibrates() {
        let s = resnet50(190, 16 << 30, 50);
        let inst = s.compile().unwrap();
        // 53 convolutions (incl. 4 downsamples) with forward and backward.
        assert_eq!(
            s.functions
                .iter()
                .filter(|f| f.name.ends_with(".F"))
                .count(),
            53 + 16 + 3
        );
        let total = inst.total_compute().0;
        // 190/581 s = 327 022 375.2 ns, each duration rounded up.
        assert!(
            (327_022_375..327_022_375 + s.functions.len() as i64).contains(&total),
            "{total}"
        );
    }
}
