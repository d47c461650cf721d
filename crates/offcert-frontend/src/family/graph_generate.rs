//! Random layered computation graphs after *Neural Topological Ordering for
//! Computation Graphs* (Gagrani et al., NeurIPS 2022, App. A), written in the
//! random-layered `node_link_data` schema that MOCCASIN's benchmark uses, so
//! that `offcert import graph` reads them as it reads MOCCASIN's files.
//! Deterministic from a seed (a SplitMix64 stream, no platform randomness).
//!
//! The generator, with the parameters MOCCASIN's file names carry (`n`, `w`,
//! `nlv`, `ed`, `scd`). The appendix's exact distributions are not restated
//! here; these are ours, chosen to match the published files' shape (a source
//! and a sink, layers of about 2w√n nodes, mostly layer-to-layer edges, a few
//! long skip connections):
//!
//! - node 0 is the source (layer 0), node 1 the sink (last layer), both of
//!   duration 0 as in MOCCASIN's files; nodes 2.. are numbered layer by layer;
//! - each inner layer's width is uniform in [max(1, ⌊μ(1−nlv)⌋), ⌈μ(1+nlv)⌉]
//!   with μ = max(1, round(2w√n)), the last layer cut to fit n;
//! - every node of layer ℓ ≥ 2 reads one random node of layer ℓ−1 and each
//!   other node of it with probability `ed`; layer 1 reads the source; a node
//!   that no one reads gets a random reader in the next layer (the last inner
//!   layer all feed the sink);
//! - every node of layer ℓ ≥ 3 has two chances of `scd` each to read a random
//!   node of layers 1..ℓ−2 (a skip connection);
//! - `out_cost` = 10·U{8..615} bytes, `duration` = U{1..1000} ticks,
//!   `param_cost` 0 (MOCCASIN ignores it);
//! - `graph.order`: a random topological order (Kahn's, a uniform ready node
//!   at each step), as the files' `order` is one.
//!
//! Owns: [`RandomLayered`], [`random_layered`]. Must not import: schedules,
//! semantics, the checker, solvers.

use serde_json::{json, Value};

/// The generator's parameters (MOCCASIN's file name fields).
#[derive(Clone, Debug, PartialEq)]
pub struct RandomLayered {
    /// Nodes, the source and the sink included (at least 3).
    pub n: usize,
    /// Width: layers of about 2w√n nodes.
    pub width: f64,
    /// Node level variance: relative spread of a layer's width.
    pub level_variance: f64,
    /// Edge density between consecutive layers.
    pub edge_density: f64,
    /// Skip connection density.
    pub skip_density: f64,
    pub seed: u64,
}

/// SplitMix64: a small, fully specified generator (Steele et al., 2014).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in lo..=hi.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    /// True with probability p (53-bit resolution).
    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64) < p * (1u64 << 53) as f64
    }
}

impl RandomLayered {
    /// MOCCASIN's file name for these parameters.
    pub fn name(&self) -> String {
        format!(
            "random_layered_n{}_w{}_nlv{}_ed{}_scd{}_seed{}",
            self.n,
            self.width,
            self.level_variance,
            self.edge_density,
            self.skip_density,
            self.seed
        )
    }

    fn layers(&self, rng: &mut Rng) -> Vec<Vec<usize>> {
        let mu = (2.0 * self.width * (self.n as f64).sqrt()).round().max(1.0);
        let lo = ((mu * (1.0 - self.level_variance)).floor() as u64).max(1);
        let hi = ((mu * (1.0 + self.level_variance)).ceil() as u64).max(lo);
        let mut layers = vec![vec![0usize]];
        let mut next = 2;
        while next < self.n {
            let w = (rng.range(lo, hi) as usize).min(self.n - next);
            layers.push((next..next + w).collect());
            next += w;
        }
        layers.push(vec![1]);
        layers
    }
}

/// The graph as networkx `node_link_data` JSON (random-layered schema).
pub fn random_layered(p: &RandomLayered) -> Result<Value, String> {
    if p.n < 3 || p.n > 1 << 20 {
        return Err(format!("--nodes {}: between 3 and 2^20", p.n));
    }
    for (name, v) in [
        ("--width", p.width),
        ("--level-variance", p.level_variance),
        ("--edge-density", p.edge_density),
        ("--skip-density", p.skip_density),
    ] {
        if !(0.0..=1.0).contains(&v) || (name == "--width" && v == 0.0) {
            return Err(format!(
                "{name} {v}: in (0, 1] for the width, [0, 1] otherwise"
            ));
        }
    }
    let mut rng = Rng(p.seed);
    let layers = p.layers(&mut rng);
    let mut inputs: Vec<Vec<usize>> = vec![Vec::new(); p.n];
    for l in 1..layers.len() {
        let (prev, cur) = (&layers[l - 1], &layers[l]);
        for &v in cur {
            if l == 1 || l == layers.len() - 1 {
                inputs[v].extend(prev.iter().copied());
                continue;
            }
            let first = prev[rng.range(0, prev.len() as u64 - 1) as usize];
            inputs[v].push(first);
            for &u in prev {
                if u != first && rng.chance(p.edge_density) {
                    inputs[v].push(u);
                }
            }
            if l >= 3 {
                for _ in 0..2 {
                    if rng.chance(p.skip_density) {
                        let sl = rng.range(1, l as u64 - 2) as usize;
                        let u = layers[sl][rng.range(0, layers[sl].len() as u64 - 1) as usize];
                        if !inputs[v].contains(&u) {
                            inputs[v].push(u);
                        }
                    }
                }
            }
        }
        // A node of the previous layer that no one reads gets a reader here.
        for &u in prev {
            if !cur.iter().any(|&v| inputs[v].contains(&u)) {
                let v = cur[rng.range(0, cur.len() as u64 - 1) as usize];
                inputs[v].push(u);
            }
        }
    }
    Ok(to_json(p, &layers, &inputs, &mut rng))
}

fn to_json(
    p: &RandomLayered,
    layers: &[Vec<usize>],
    inputs: &[Vec<usize>],
    rng: &mut Rng,
) -> Value {
    let nodes: Vec<Value> = (0..p.n)
        .map(|v| {
            let duration = if v <= 1 { 0 } else { rng.range(1, 1000) };
            json!({"out_cost": 10 * rng.range(8, 615), "param_cost": 0, "duration": duration, "name": v})
        })
        .collect();
    let mut links = Vec::new();
    for (v, ins) in inputs.iter().enumerate() {
        for &u in ins {
            links.push(json!({"0": u, "1": v}));
        }
    }
    // A random topological order.
    let mut indeg: Vec<usize> = inputs.iter().map(Vec::len).collect();
    let mut readers = vec![Vec::new(); p.n];
    for (v, ins) in inputs.iter().enumerate() {
        for &u in ins {
            readers[u].push(v);
        }
    }
    let mut ready = vec![0usize];
    let mut order = Vec::with_capacity(p.n);
    while !ready.is_empty() {
        let i = rng.range(0, ready.len() as u64 - 1) as usize;
        let v = ready.swap_remove(i);
        order.push(v);
        for &w in &readers[v] {
            indeg[w] -= 1;
            if indeg[w] == 0 {
                ready.push(w);
            }
        }
    }
    let pos: serde_json::Map<String, Value> = layers
        .iter()
        .enumerate()
        .flat_map(|(l, vs)| {
            vs.iter()
                .enumerate()
                .map(move |(x, v)| (v.to_string(), json!([x, -(l as i64)])))
        })
        .collect();
    json!({
        "directed": true,
        "multigraph": false,
        "graph": {"name": p.name(), "source_node": 0, "target_node": 1, "order": order, "pos": pos,
                  "generator": "offcert generate graph (after Gagrani et al. 2022, App. A)"},
        "nodes": nodes,
        "links": links,
    })
}
