//! Every random instance generator of the integration tests, each with its
//! ranges in its doc comment. Two kinds:
//!
//! - functions of raw quickcheck values (`u8` tuples and the like), so that
//!   quickcheck's own shrinking of vectors and integers shrinks the instance:
//!   [`activation_chain`], [`activation_schedule`], [`weight_chain`],
//!   [`either_schedule`],
//!   [`activation_chain_4`], [`activation_chain_5`], [`remat_options_chain`];
//! - `Arbitrary` types, drawn with [`pick`]: [`TinyActivation`], [`TinyWeight`],
//!   [`Small`], [`SmallChain`], [`RoomyWeight`], [`TightWeight`],
//!   [`RandomWeights`].
//!
//! "Tight" memory (where transfers and the release rule matter most) is hit on
//! purpose by every generator that draws a memory: see each one's doc.

use offcert::bound::activation::ChainProfile;
use offcert::family::activation_chain::{ActivationChain, ActivationLayer};
use offcert::family::remat_chain::{RematChain, RematLayer, RematLoss, RematOption};
use offcert::family::weight_chain::{WeightChain, WeightLayer};
use offcert::family::{BandwidthFile, InstanceFile};
use offcert::model::{Duplex, Instance, ReleaseRule, TensorId};
use offcert::schedule::Schedule;
use offcert::simulate::{asap, Plan};
use quickcheck::{Arbitrary, Gen};

use super::{weight_chain, weight_schedule, Keep};

/// A value in `lo..=hi`: `lo + x % (hi - lo + 1)` for a fresh random `u64` x.
pub fn pick(g: &mut Gen, lo: u64, hi: u64) -> u64 {
    lo + u64::arbitrary(g) % (hi - lo + 1)
}

/// Either release rule, with equal odds.
fn rule(g: &mut Gen) -> ReleaseRule {
    *g.choose(&[ReleaseRule::AfterEnd, ReleaseRule::AfterStart])
        .unwrap()
}

// ---------------------------------------------------------------------------
// From raw quickcheck values.

/// An activation chain with 1..=7 layers (the first 7 of `spec`), each drawn
/// from `(uf, ub, x, ex)`: u_F 0..=4, u_B 0..=6, |x| 0..=8, |y| 0..=2, ex_F
/// 0..=2, ex_B 0..=3. |x_L| 1..=4, |y_L| 0..=1; β = (1..=4) bytes per (1..=3)
/// ticks from `bw`. Memory: M_peak minus 0..=9 bytes (`slack % 10`), saturating
/// at 0: from everything resident down to tight.
pub fn activation_chain(spec: &[(u8, u8, u8, u8)], bw: u8, slack: u8) -> ActivationChain {
    let layers: Vec<ActivationLayer> = spec
        .iter()
        .take(7)
        .map(|&(uf, ub, x, ex)| ActivationLayer {
            u_f: (uf % 5) as i64,
            u_b: (ub % 7) as i64,
            x: (x % 9) as u64,
            y: (x / 9 % 3) as u64,
            ex_f: (ex % 3) as u64,
            ex_b: (ex / 3 % 4) as u64,
        })
        .collect();
    let mut c = ActivationChain {
        name: "random-activation".into(),
        note: None,
        layers,
        x_last: 1 + (bw / 16 % 4) as u64,
        y_last: (bw / 64 % 2) as u64,
        gpu_memory: 0,
        bandwidth: BandwidthFile::Ratio {
            bytes: 1 + (bw % 4) as u64,
            ticks: 1 + (bw / 4 % 3) as u64,
        },
        release: Default::default(),
        allocator: Default::default(),
    };
    c.gpu_memory = c.m_peak().unwrap().saturating_sub((slack % 10) as u64);
    c
}

/// An ASAP schedule of a random plan on `c` (None if the plan gets stuck): the
/// activations x_i with bit i of `mask` set are offloaded; `la % 4` is the
/// prefetch lookahead (0: none).
pub fn activation_schedule(c: &ActivationChain, mask: u16, la: u8) -> Option<(Instance, Schedule)> {
    let inst = c.compile().unwrap();
    asap(&inst, &activation_plan(c, mask.into(), la))
        .ok()
        .map(|s| (inst, s))
}

/// The plan of [`activation_schedule`]: offload x_i where bit i of `mask` is
/// set (i ≤ L + 1 < 32), prefetch look-ahead `la % 4` (0: none).
pub fn activation_plan(c: &ActivationChain, mask: u32, la: u8) -> Plan {
    let offload: Vec<TensorId> = (0..=c.layers.len())
        .filter(|&i| i < 32 && mask >> i & 1 == 1)
        .map(|i| c.x_id(i))
        .collect();
    Plan {
        offload,
        lookahead: (la % 4 != 0).then_some((la % 4) as usize),
    }
}

/// A valid-by-construction schedule of either family from the same raw values
/// (None: `spec` is empty, or the simulator's plan did not fit in memory).
/// `family` true: [`activation_chain`]`(spec, bw, slack)` scheduled by
/// [`activation_schedule`] with offload mask `mask` and lookahead `slack / 16`;
/// false: [`weight_chain`]`(spec, bw)` scheduled by the cyclic builder, weight i
/// kept by bits 2i..2i+1 of `mask` ([`Keep::from_bits`]).
pub fn either_schedule(
    family: bool,
    spec: &[(u8, u8, u8, u8)],
    bw: u8,
    slack: u8,
    mask: u16,
) -> Option<(Instance, Schedule)> {
    if spec.is_empty() {
        return None;
    }
    if family {
        let c = activation_chain(spec, bw, slack);
        activation_schedule(&c, mask, slack / 16)
    } else {
        let c = weight_chain(spec, bw);
        let keep: Vec<Keep> = (0..spec.len())
            .map(|i| Keep::from_bits((mask.checked_shr(2 * i as u32).unwrap_or(0) & 3) as u8))
            .collect();
        Some(weight_schedule(&c, &keep))
    }
}

/// Memory `mem`/255 of the way from the least feasible memory of `c`
/// (`ChainProfile::min_memory`; `mem` = 0, where the release rule matters
/// most) to its peak (`mem` = 255).
fn between_least_and_peak(c: &mut ActivationChain, mem: u8) {
    let p = ChainProfile::new(c);
    let (lo, hi) = (p.min_memory() as u64, p.m_peak() as u64);
    c.gpu_memory = lo + (hi - lo) * mem as u64 / 255;
}

/// An activation chain with one layer per entry of `spec` (non-empty), each
/// drawn from `(uf, ub, x, ex)`: u_F 0..=3, u_B 0..=4, |x| 0..=6, |y| 0..=1,
/// ex_F 0..=1, ex_B 0..=2. |x_L| 0..=3 (from the first layer's x), |y_L| 0;
/// β = (1..=4) bytes per (1..=2) ticks from `bw`. Memory: `mem`/255 of the way
/// from the least feasible memory to the peak.
pub fn activation_chain_4(spec: &[(u8, u8, u8, u8)], mem: u8, bw: u8) -> ActivationChain {
    let layers: Vec<ActivationLayer> = spec
        .iter()
        .map(|&(uf, ub, x, ex)| ActivationLayer {
            u_f: (uf % 4) as i64,
            u_b: (ub % 5) as i64,
            x: (x % 7) as u64,
            y: (x / 7 % 2) as u64,
            ex_f: (ex % 2) as u64,
            ex_b: (ex / 2 % 3) as u64,
        })
        .collect();
    let mut c = ActivationChain {
        name: "q".into(),
        note: None,
        layers,
        x_last: (spec[0].2 % 4) as u64,
        y_last: 0,
        gpu_memory: 0,
        bandwidth: BandwidthFile::Ratio {
            bytes: 1 + (bw % 4) as u64,
            ticks: 1 + (bw / 4 % 2) as u64,
        },
        release: Default::default(),
        allocator: Default::default(),
    };
    between_least_and_peak(&mut c, mem);
    c
}

/// An activation chain with one layer per entry of `spec` (non-empty), each
/// drawn from `(uf, ub, x, y, ex)`: u_F 0..=5, u_B 0..=7, |x| 0..=9, |y| 0..=2,
/// ex_F 0..=2, ex_B 0..=3. |x_L| 0..=4 and |y_L| 0..=1 (from the first layer);
/// β = (1..=5) bytes per (1..=3) ticks from `bw`. Memory: `mem`/255 of the way
/// from the least feasible memory to the peak.
pub fn activation_chain_5(spec: &[(u8, u8, u8, u8, u8)], mem: u8, bw: u8) -> ActivationChain {
    let layers: Vec<ActivationLayer> = spec
        .iter()
        .map(|&(uf, ub, x, y, ex)| ActivationLayer {
            u_f: (uf % 6) as i64,
            u_b: (ub % 8) as i64,
            x: (x % 10) as u64,
            y: (y % 3) as u64,
            ex_f: (ex % 3) as u64,
            ex_b: (ex / 3 % 4) as u64,
        })
        .collect();
    let mut c = ActivationChain {
        name: "q".into(),
        note: None,
        layers,
        x_last: (spec[0].2 % 5) as u64,
        y_last: (spec[0].3 % 2) as u64,
        gpu_memory: 0,
        bandwidth: BandwidthFile::Ratio {
            bytes: 1 + (bw % 5) as u64,
            ticks: 1 + (bw / 5 % 3) as u64,
        },
        release: Default::default(),
        allocator: Default::default(),
    };
    between_least_and_peak(&mut c, mem);
    c
}

/// The ranges of a random `remat_chain`'s loss, input and link, all drawn from
/// one byte `bw`: loss u_F = `bw / 8 % 2`, loss ā = `bw / 16 % loss_abar`,
/// |a_0| = 1 + `bw / (16·loss_abar) % a0`, β = (1 + `bw % bytes`) bytes per
/// (1 + `bw / bytes % ticks`) ticks. Shared by the remat generators here and in
/// tests/remat.rs and tests/remat_exact.rs, which differ only in these ranges.
#[derive(Clone, Copy)]
pub struct RematTail {
    pub loss_abar: u8,
    pub a0: u8,
    pub bytes: u8,
    pub ticks: u8,
}

impl RematTail {
    /// tests/remat.rs and the options generator: ā 0..=2, |a_0| 1..=3, 1..=3 B per 1..=2 ticks.
    pub const WIDE: RematTail = RematTail {
        loss_abar: 3,
        a0: 3,
        bytes: 3,
        ticks: 2,
    };
    /// The exact methods' small chains: ā 0..=1, |a_0| 1..=2, 1..=2 B per 1..=2 ticks.
    pub const SMALL: RematTail = RematTail {
        loss_abar: 2,
        a0: 2,
        bytes: 2,
        ticks: 2,
    };
}

/// The exact methods' small remat layers: the first `max` specs, every op at
/// least one tick (u_F 1..=2, u_B 1..=3), |a| 1..=4, |ā| = |a| + 0..=2, o_F
/// and o_B 0..=1.
pub fn small_remat_layers(spec: &[(u8, u8, u8, u8, u8)], max: usize) -> Vec<RematLayer> {
    spec.iter()
        .take(max)
        .map(|&(uf, ub, a, s, o)| RematLayer {
            u_f: 1 + (uf % 2) as i64,
            u_b: 1 + (ub % 3) as i64,
            a: 1 + (a % 4) as u64,
            abar: 1 + (a % 4) as u64 + (s % 3) as u64,
            o_f: (o % 2) as u64,
            o_b: (o / 2 % 2) as u64,
            delta: None,
            ..Default::default()
        })
        .collect()
}

/// A `remat_chain` of the given layers with the loss, input and link drawn from
/// `bw` within `tail`'s ranges; `gpu_memory` 0 (each caller places it).
pub fn remat_chain_of(name: &str, layers: Vec<RematLayer>, bw: u8, tail: RematTail) -> RematChain {
    let (bw, t) = (bw as u64, tail);
    RematChain {
        name: name.into(),
        note: None,
        layers,
        loss: RematLoss {
            u_f: (bw / 8 % 2) as i64,
            u_b: 1,
            abar: bw / 16 % t.loss_abar as u64,
            o_f: 0,
            o_b: 0,
        },
        a0: 1 + bw / (16 * t.loss_abar as u64) % t.a0 as u64,
        delta0: None,
        gpu_memory: 0,
        bandwidth: BandwidthFile::Ratio {
            bytes: 1 + bw % t.bytes as u64,
            ticks: 1 + bw / t.bytes as u64 % t.ticks as u64,
        },
        release: Default::default(),
        allocator: Default::default(),
    }
}

/// A random chain of 1..=`max` layers (`small_remat_layers`, every op at
/// least one tick), memory from the least feasible up: by 0..=3 bytes (tight,
/// where recomputation and transfers pay), or anywhere up to the
/// keep-everything peak one time in four.
pub fn tight_remat_chain(
    spec: &[(u8, u8, u8, u8, u8)],
    max: usize,
    bw: u8,
    slack: u8,
) -> RematChain {
    let layers = small_remat_layers(spec, max);
    let mut c = remat_chain_of("random-remat", layers, bw, RematTail::SMALL);
    let lo = c.min_memory().unwrap();
    let hi = c.store_all_peak().unwrap();
    c.gpu_memory = if slack % 4 == 0 {
        lo + (slack as u64 / 4) % (hi - lo + 1)
    } else {
        lo + (slack as u64 % 4).min(hi - lo)
    };
    c
}

/// A `remat_chain` with several options per block (rockmate's `RK_Chain`):
/// 1..=4 layers (the first 4 of `spec`), each `(uf, ub, a, s, o, x)`: u_F
/// 1..=4 (a forward lasts ≥ 1 tick, as in tests/remat.rs), u_B 0..=5, |a|
/// 1..=6, |ā| − |a| 0..=3, o_f 0..=1, o_b 0..=2; `x % 3` further options, each
/// the next entry of `extra` in turn `(uf, ub, s, o)` with the same ranges
/// (none when `extra` is empty); when `x / 3 % 2 == 1` a fast forward of
/// 1..=3 ticks (`x / 6 % 3`) and scratch 0..=1. The loss: u_F 0..=1, u_B 1,
/// ā 0..=2; |a_0| 1..=3; β = (1..=3) bytes per (1..=2) ticks, all from `bw`.
/// Memory from the least feasible (`RematChain::min_memory`) to the
/// keep-everything peak with every field at its largest option, skewed
/// towards tight: `slack² mod span² / span` of the way.
pub fn remat_options_chain(
    spec: &[(u8, u8, u8, u8, u8, u8)],
    extra: &[(u8, u8, u8, u8)],
    bw: u8,
    slack: u8,
) -> RematChain {
    let mut next = extra.iter().cycle();
    let layers: Vec<RematLayer> = spec
        .iter()
        .take(4)
        .map(|&(uf, ub, a, s, o, x)| {
            let a = 1 + (a % 6) as u64;
            let n = if extra.is_empty() { 0 } else { x % 3 };
            let options = (0..n)
                .map(|_| {
                    let &(uf, ub, s, o) = next.next().unwrap();
                    RematOption {
                        u_f: 1 + (uf % 4) as i64,
                        u_b: (ub % 6) as i64,
                        abar: a + (s % 4) as u64,
                        o_f: (o % 2) as u64,
                        o_b: (o / 2 % 3) as u64,
                    }
                })
                .collect();
            let fast = x / 3 % 2 == 1;
            RematLayer {
                u_f: 1 + (uf % 4) as i64,
                u_b: (ub % 6) as i64,
                a,
                abar: a + (s % 4) as u64,
                o_f: (o % 2) as u64,
                o_b: (o / 2 % 3) as u64,
                delta: None,
                options,
                ff_u_f: fast.then_some(1 + (x / 6 % 3) as i64),
                ff_o_f: fast.then_some((x / 18 % 2) as u64),
            }
        })
        .collect();
    let mut c = remat_chain_of("random-remat-options", layers, bw, RematTail::WIDE);
    let lo = c.min_memory().unwrap();
    // Every field at its largest option: a peak no option choice exceeds.
    let mut big = c.clone();
    for x in &mut big.layers {
        for o in std::mem::take(&mut x.options) {
            x.abar = x.abar.max(o.abar);
            x.o_f = x.o_f.max(o.o_f);
            x.o_b = x.o_b.max(o.o_b);
        }
    }
    let hi = big.store_all_peak().unwrap().max(lo);
    let span = hi - lo + 1;
    c.gpu_memory = lo + (slack as u64 * slack as u64 % (span * span)) / span;
    c
}

// ---------------------------------------------------------------------------
// Arbitrary types.

/// A random tiny activation chain, compiled: 2..=3 layers with u_F 0..=3, u_B
/// 0..=4, |x| 0..=4, |y| 0..=2, ex_F 0..=1, ex_B 0..=1; |x_L| 0..=4, |y_L|
/// 0..=1; β one of 1, 2, 3 B/tick or 3 B per 2 ticks (zero durations,
/// gradients and scratch memory included: the search's earlier misses all
/// involved zero-duration ops). Memory: half the cases at the least feasible
/// memory or a byte or two above it (where transfers and the release rule
/// matter most), the rest anywhere from half the peak to one above it. The
/// release rule drawn with equal odds.
#[derive(Clone, Debug)]
pub struct TinyActivation(pub Instance);

impl Arbitrary for TinyActivation {
    fn arbitrary(g: &mut Gen) -> TinyActivation {
        let n = 2 + usize::arbitrary(g) % 2;
        let layers: Vec<ActivationLayer> = (0..n)
            .map(|_| ActivationLayer {
                u_f: pick(g, 0, 3) as i64,
                u_b: pick(g, 0, 4) as i64,
                x: pick(g, 0, 4),
                y: pick(g, 0, 2),
                ex_f: pick(g, 0, 1),
                ex_b: pick(g, 0, 1),
            })
            .collect();
        let mut a = ActivationChain {
            name: "tiny".into(),
            note: None,
            layers,
            x_last: pick(g, 0, 4),
            y_last: pick(g, 0, 1),
            gpu_memory: 0,
            bandwidth: *g
                .choose(&[
                    BandwidthFile::PerTick(1),
                    BandwidthFile::PerTick(2),
                    BandwidthFile::PerTick(3),
                    BandwidthFile::Ratio { bytes: 3, ticks: 2 },
                ])
                .unwrap(),
            release: Default::default(),
            allocator: Default::default(),
        };
        let peak = a.m_peak().unwrap_or(0);
        let least = ChainProfile::new(&a).min_memory() as u64;
        a.gpu_memory = if bool::arbitrary(g) {
            pick(g, least, (least + 2).min(peak.max(least)))
        } else {
            pick(g, peak / 2, peak + 1)
        };
        a.release = rule(g);
        TinyActivation(a.compile().unwrap())
    }
}

/// A random tiny weight chain: 1..=3 layers with u_F 0..=2, u_B 0..=3 (zero
/// durations forward and backward), |w| 0..=3, |a| 0..=2; |a_0| 0..=1; β one of
/// 1, 2 B/tick, 1 or 3 B per 2 ticks (transfers of up to 6 ticks). Memory,
/// from the largest eq. (1) need to room for everything at once (pure
/// compute): one case in six a byte short of that need (infeasible), two in six
/// within two bytes of it (transfers on the critical path), the rest anywhere.
/// The release rule drawn with equal odds; one case in four is made half
/// duplex after compiling (the `bool`: a `core`-style cyclic instance whose
/// offloads and prefetches share one link). Shrinks layer by layer, value by
/// value and byte by byte within these ranges.
#[derive(Clone, Debug)]
pub struct TinyWeight(pub WeightChain, pub bool);

/// The link speeds of the tiny weight chains: 1 or 2 B/tick, 1 B per 2 ticks,
/// 3 B per 2 ticks.
const BANDWIDTHS: [BandwidthFile; 4] = [
    BandwidthFile::PerTick(1),
    BandwidthFile::PerTick(2),
    BandwidthFile::Ratio { bytes: 1, ticks: 2 },
    BandwidthFile::Ratio { bytes: 3, ticks: 2 },
];

/// A weight chain of 1..=3 layers with u_F 0..=2, u_B 0..=3, |w| `w_min`..=3,
/// |a| 0..=2; |a_0| 0..=1; β one of `bandwidths`; memory 0 and the default
/// release rule (the callers set both).
fn tiny_weight_chain(
    g: &mut Gen,
    name: &str,
    w_min: u64,
    bandwidths: &[BandwidthFile],
) -> WeightChain {
    let n = pick(g, 1, 3) as usize;
    let layers: Vec<WeightLayer> = (0..n)
        .map(|_| WeightLayer {
            u_f: pick(g, 0, 2) as i64,
            u_b: pick(g, 0, 3) as i64,
            w: pick(g, w_min, 3),
            a: pick(g, 0, 2),
        })
        .collect();
    WeightChain {
        name: name.into(),
        note: None,
        layers,
        a0: pick(g, 0, 1),
        gpu_memory: 0,
        bandwidth: *g.choose(bandwidths).unwrap(),
        release: Default::default(),
        allocator: Default::default(),
    }
}

impl TinyWeight {
    /// The compiled instance, half duplex if drawn so (None if it does not compile).
    pub fn instance(&self) -> Option<Instance> {
        let mut inst = self.0.compile().ok()?;
        if self.1 {
            inst.machine.duplex = Duplex::HalfDuplex;
        }
        Some(inst)
    }
}

impl Arbitrary for TinyWeight {
    fn arbitrary(g: &mut Gen) -> TinyWeight {
        let mut w = tiny_weight_chain(g, "random-weight", 0, &BANDWIDTHS);
        let n = w.layers.len();
        let all: u64 = w.layers.iter().map(|l| l.w + l.a).sum::<u64>() + w.a0;
        let top = all + w.layers.iter().map(|l| l.w).max().unwrap();
        let need = (1..=n).map(|i| w.mb(i).unwrap()).max().unwrap();
        w.gpu_memory = match pick(g, 0, 5) {
            0 => need.saturating_sub(1),
            1 | 2 => pick(g, need, (need + 2).min(top.max(need))),
            _ => pick(g, need, top.max(need)),
        };
        w.release = rule(g);
        TinyWeight(w, pick(g, 0, 3) == 0)
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = TinyWeight>> {
        let w = self.0.clone();
        let mut out = vec![];
        if self.1 {
            out.push(TinyWeight(w.clone(), false));
        }
        if w.layers.len() > 1 {
            for i in 0..w.layers.len() {
                let mut v = w.clone();
                v.layers.remove(i);
                out.push(TinyWeight(v, self.1));
            }
        }
        for i in 0..w.layers.len() {
            let l = &w.layers[i];
            for (f, b, ww, a) in [
                (l.u_f - 1, l.u_b, l.w, l.a),
                (l.u_f, l.u_b - 1, l.w, l.a),
                (l.u_f, l.u_b, l.w.wrapping_sub(1), l.a),
                (l.u_f, l.u_b, l.w, l.a.wrapping_sub(1)),
            ] {
                if f >= 0 && b >= 0 && ww <= 3 && a <= 2 {
                    let mut v = w.clone();
                    v.layers[i] = WeightLayer {
                        u_f: f,
                        u_b: b,
                        w: ww,
                        a,
                    };
                    out.push(TinyWeight(v, self.1));
                }
            }
        }
        if w.gpu_memory > 0 {
            let mut v = w.clone();
            v.gpu_memory -= 1;
            out.push(TinyWeight(v, self.1));
        }
        Box::new(out.into_iter())
    }
}

/// A random small instance of either family (equal odds), under either release
/// rule (equal odds); 1..=5 layers, mostly fewer (1, 2, 2, 3, 3, 4, 5).
///
/// - activation chain: u_F 0..=2, u_B 1..=3, |x| and |x_L| a size (below),
///   |y| 0..=1, ex_F 0, ex_B 0..=1, |y_L| 0. Memory anywhere from one byte
///   below the largest single-op footprint (under which nothing fits) to the
///   peak with everything resident.
/// - weight chain: u_F 0..=2, u_B 0..=2 (a zero-duration B_1 may sit at P,
///   R8), |w| a size, |a| 0..=1, |a_0| 0..=1. Memory from one byte below the
///   activations plus the largest B_i footprint 2|w_i| up to everything
///   resident plus the largest gradient.
///
/// A size is 0..=4, or 0..=16 one draw in four. β: one of 2, 4, 8 B/tick or 5
/// B per 2 ticks when some tensor is larger than 6 B (transfer times and the
/// MILP's horizon stay small), else one of 1, 2 B/tick, 1 or 3 B per 2 ticks.
#[derive(Clone, Debug)]
pub struct Small(pub InstanceFile);

/// A tensor size up to 16, mostly small (every fourth draw over the full range).
fn size(g: &mut Gen, lo: u64) -> u64 {
    if u64::arbitrary(g) % 4 == 0 {
        pick(g, lo, 16)
    } else {
        pick(g, lo, 4)
    }
}

/// β; faster links when some tensor is large, so that transfer times (and the
/// MILP's horizon) stay small.
fn bandwidth(g: &mut Gen, largest: u64) -> BandwidthFile {
    if largest > 6 {
        *g.choose(&[
            BandwidthFile::PerTick(2),
            BandwidthFile::PerTick(4),
            BandwidthFile::PerTick(8),
            BandwidthFile::Ratio { bytes: 5, ticks: 2 },
        ])
        .unwrap()
    } else {
        *g.choose(&[
            BandwidthFile::PerTick(1),
            BandwidthFile::PerTick(2),
            BandwidthFile::Ratio { bytes: 1, ticks: 2 },
            BandwidthFile::Ratio { bytes: 3, ticks: 2 },
        ])
        .unwrap()
    }
}

/// Up to 5 layers, mostly fewer.
fn layers(g: &mut Gen) -> usize {
    *g.choose(&[1, 2, 2, 3, 3, 4, 5]).unwrap()
}

impl Small {
    /// The same instance under rule `r`.
    pub fn with_release(mut self, r: ReleaseRule) -> Small {
        self.0.set_release(r);
        self
    }
    /// The instance file as JSON (for failure messages).
    pub fn json(&self) -> String {
        serde_json::to_string(&self.0).unwrap()
    }
}

impl Arbitrary for Small {
    fn arbitrary(g: &mut Gen) -> Small {
        let rule = if bool::arbitrary(g) {
            ReleaseRule::AfterEnd
        } else {
            ReleaseRule::AfterStart
        };
        let file = if bool::arbitrary(g) {
            let n = layers(g);
            let layers: Vec<ActivationLayer> = (0..n)
                .map(|_| ActivationLayer {
                    u_f: pick(g, 0, 2) as i64,
                    u_b: pick(g, 1, 3) as i64,
                    x: size(g, 0),
                    y: pick(g, 0, 1),
                    ex_f: 0,
                    ex_b: pick(g, 0, 1),
                })
                .collect();
            let x_last = size(g, 0);
            let largest = layers.iter().map(|l| l.x).max().unwrap().max(x_last);
            let mut a = ActivationChain {
                name: "random-act".into(),
                note: None,
                layers,
                x_last,
                y_last: 0,
                gpu_memory: 0,
                bandwidth: bandwidth(g, largest),
                release: rule,
                allocator: Default::default(),
            };
            // Tight or loose: between (one below) the largest single-op
            // footprint, under which nothing fits, and the peak with everything
            // resident.
            let peak = a.m_peak().unwrap();
            let x = |i: usize| {
                if i < n {
                    a.layers[i].x
                } else {
                    a.x_last
                }
            };
            let y = |i: usize| if i < n { a.layers[i].y } else { a.y_last };
            let least = (0..n)
                .map(|i| {
                    x(i) + x(i + 1) + (a.layers[i].ex_b + y(i) + y(i + 1)).max(a.layers[i].ex_f)
                })
                .max()
                .unwrap();
            a.gpu_memory = pick(g, least.saturating_sub(1).min(peak), peak);
            InstanceFile::ActivationChain(a)
        } else {
            let n = layers(g);
            let layers: Vec<WeightLayer> = (0..n)
                .map(|_| WeightLayer {
                    u_f: pick(g, 0, 2) as i64,
                    // u_b = 0 now and then: a zero-duration B_1 may sit at P (R8).
                    u_b: pick(g, 0, 2) as i64,
                    w: size(g, 0),
                    a: pick(g, 0, 1),
                })
                .collect();
            let largest = layers.iter().map(|l| l.w).max().unwrap();
            let mut w = WeightChain {
                name: "random-weight".into(),
                note: None,
                layers,
                a0: pick(g, 0, 1),
                gpu_memory: 0,
                bandwidth: bandwidth(g, largest),
                release: rule,
                allocator: Default::default(),
            };
            // Tight or loose: from (one below) the activations plus the largest
            // B_i footprint 2|w_i| (weight and its gradient) up to everything
            // resident plus the largest gradient.
            let acts: u64 = w.layers.iter().map(|l| l.a).sum::<u64>() + w.a0;
            let all: u64 = w.layers.iter().map(|l| l.w + l.a).sum::<u64>() + w.a0;
            let top = all + largest;
            let least = acts + 2 * largest;
            w.gpu_memory = pick(g, least.saturating_sub(1).min(top), top);
            InstanceFile::WeightChain(w)
        };
        Small(file)
    }
}

/// A feasible weight chain: every op fits on its own (M_o ≤ M_GPU). 1..=5
/// layers; with equal odds all durations and sizes positive (u_F 1..=6, u_B
/// 1..=9, |w| 1..=10) or zeros allowed (u_F 0..=3, u_B 0..=5, |w| 0..=7); |a|
/// 0..=3, |a_0| 0..=2; β = (1..=4) bytes per (1..=3) ticks. Memory: the largest
/// op footprint max(M_F, M_B) plus 0..=Σ|w| (tight to everything resident).
/// Shrinks by dropping a layer or a byte of memory, keeping every M_B ≤ M_GPU.
#[derive(Clone, Debug)]
pub struct SmallChain(pub WeightChain);

impl Arbitrary for SmallChain {
    fn arbitrary(g: &mut Gen) -> SmallChain {
        let l = 1 + pick(g, 0, 4) as usize;
        let zeros = bool::arbitrary(g);
        let layers: Vec<WeightLayer> = (0..l)
            .map(|_| WeightLayer {
                u_f: if zeros {
                    pick(g, 0, 3) as i64
                } else {
                    1 + pick(g, 0, 5) as i64
                },
                u_b: if zeros {
                    pick(g, 0, 5) as i64
                } else {
                    1 + pick(g, 0, 8) as i64
                },
                w: if zeros {
                    pick(g, 0, 7)
                } else {
                    1 + pick(g, 0, 9)
                },
                a: pick(g, 0, 3),
            })
            .collect();
        let mut c = WeightChain {
            name: "random".into(),
            note: None,
            layers,
            a0: pick(g, 0, 2),
            gpu_memory: 0,
            bandwidth: BandwidthFile::Ratio {
                bytes: 1 + pick(g, 0, 3),
                ticks: 1 + pick(g, 0, 2),
            },
            release: Default::default(),
            allocator: Default::default(),
        };
        let peak = (1..=l)
            .map(|i| c.mb(i).unwrap().max(c.mf(i).unwrap()))
            .max()
            .unwrap();
        let total: u64 = c.layers.iter().map(|x| x.w).sum();
        c.gpu_memory = peak + pick(g, 0, total);
        SmallChain(c)
    }
    fn shrink(&self) -> Box<dyn Iterator<Item = SmallChain>> {
        let c = self.0.clone();
        let mut out = Vec::new();
        if c.l() > 1 {
            for drop in 0..c.l() {
                let mut d = c.clone();
                d.layers.remove(drop);
                out.push(d);
            }
        }
        if c.gpu_memory > 0 {
            let mut d = c.clone();
            d.gpu_memory -= 1;
            out.push(d);
        }
        let out: Vec<SmallChain> = out
            .into_iter()
            .filter(|d| (1..=d.l()).all(|i| d.mb(i).unwrap() <= d.gpu_memory))
            .map(SmallChain)
            .collect();
        Box::new(out.into_iter())
    }
}

impl SmallChain {
    /// The chain as an instance file.
    pub fn file(&self) -> InstanceFile {
        InstanceFile::WeightChain(self.0.clone())
    }
}

/// A tiny weight chain with room to spare: 1..=3 layers with u_F 1..=3, u_B
/// 1..=3, |w| 1..=3, |a| 0..=1; |a_0| 0; β 1 B/tick. Memory: the largest M_B
/// plus 0..Σ|w| (from tight to one byte short of everything resident).
#[derive(Clone, Debug)]
pub struct RoomyWeight(pub WeightChain);

impl Arbitrary for RoomyWeight {
    fn arbitrary(g: &mut Gen) -> RoomyWeight {
        let l = 1 + pick(g, 0, 2) as usize;
        let layers: Vec<WeightLayer> = (0..l)
            .map(|_| WeightLayer {
                u_f: 1 + pick(g, 0, 2) as i64,
                u_b: 1 + pick(g, 0, 2) as i64,
                w: 1 + pick(g, 0, 2),
                a: pick(g, 0, 1),
            })
            .collect();
        let mut c = WeightChain {
            name: "tiny".into(),
            note: None,
            layers,
            a0: 0,
            gpu_memory: 0,
            bandwidth: BandwidthFile::PerTick(1),
            release: Default::default(),
            allocator: Default::default(),
        };
        let peak = (1..=l).map(|i| c.mb(i).unwrap()).max().unwrap();
        let total: u64 = c.layers.iter().map(|x| x.w).sum();
        c.gpu_memory = peak + pick(g, 0, total - 1);
        RoomyWeight(c)
    }
}

/// A weight chain with tight memory: 1..=3 layers with u_F 0..=2, u_B 0..=3
/// (zero durations included), |w| 1..=3, |a| 0..=2; |a_0| 0..=1; β one of 1, 2
/// B/tick or 1 B per 2 ticks; either release rule (equal odds). Memory: from
/// the largest eq. (1) need max(M_F, M_B) to two bytes above it.
#[derive(Clone, Debug)]
pub struct TightWeight(pub WeightChain);

impl Arbitrary for TightWeight {
    fn arbitrary(g: &mut Gen) -> TightWeight {
        let mut c = tiny_weight_chain(g, "tight", 1, &BANDWIDTHS[..3]);
        c.release = rule(g);
        let l = c.layers.len();
        let need = (1..=l)
            .map(|i| c.mb(i).unwrap().max(c.mf(i).unwrap()))
            .max()
            .unwrap();
        c.gpu_memory = pick(g, need, need + 2);
        TightWeight(c)
    }
}

/// The raw figures of a random weight chain for [`super::build::weights`]:
/// 1..=3 layers `(u_F, u_B, |w|, |a|)` with u_F 1..=3, u_B 1..=3, |w| 1..=4,
/// |a| 1..=2; |a_0| 1..=2; β 1..=2 B/tick. Memory from half of T to T + 2,
/// where T = Σ(|w| + |a|) + |a_0| + 4 (infeasible through roomy).
#[derive(Clone, Debug)]
pub struct RandomWeights {
    pub layers: Vec<(i64, i64, u64, u64)>,
    pub a0: u64,
    pub mem: u64,
    pub beta: u64,
}

impl Arbitrary for RandomWeights {
    fn arbitrary(g: &mut Gen) -> RandomWeights {
        let n = pick(g, 1, 3) as usize;
        let layers: Vec<(i64, i64, u64, u64)> = (0..n)
            .map(|_| {
                (
                    pick(g, 1, 3) as i64,
                    pick(g, 1, 3) as i64,
                    pick(g, 1, 4),
                    pick(g, 1, 2),
                )
            })
            .collect();
        let a0 = pick(g, 1, 2);
        let total: u64 = layers.iter().map(|l| l.2 + l.3).sum::<u64>() + a0 + 4;
        let mem = pick(g, total / 2, total + 2);
        RandomWeights {
            layers,
            a0,
            mem,
            beta: pick(g, 1, 2),
        }
    }
}

/// A random instance with variant groups (R11), an optional slotted order
/// (R12) and precedences (R13), and a valid schedule of it: every chosen run
/// back to back on one timeline, so nothing overlaps.
///
/// Ranges: 1–8 ops from `ops` = (a, b, c): duration `a % 3` ticks (zero
/// included: the tie rules of R12/R13), on the CPU when `b % 4 == 0`; `c % 4`
/// = 0 is an ungrouped op (required when `c & 4`), 1–3 a member of group
/// `c % 4 − 1`; op i > 0 runs after op `(a >> 3) % i` when `a & 4` and that
/// op runs before it. `bits`: 1 = slotted order (the groups in the order of
/// their chosen GPU member, then the CPU-filled ones), 2 = cyclic (period =
/// the timeline's length, at least 1), 4 = at-least-once groups; `bits >> 3`
/// picks each group's member. Memory is never tight here (one 4 B tensor that
/// no op reads; 8 B of GPU): the memory rules are tested elsewhere.
pub fn grouped_schedule(ops: &[(u8, u8, u8)], bits: u8) -> Option<(Instance, Schedule)> {
    use offcert::model::*;
    use offcert::schedule::{CyclicState, Event};
    use offcert::units::{Bandwidth, Bytes, Ticks};
    let ops = &ops[..ops.len().min(8)];
    if ops.is_empty() {
        return None;
    }
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); 3];
    for (i, &(_, _, c)) in ops.iter().enumerate() {
        if c % 4 != 0 {
            members[(c % 4 - 1) as usize].push(i as u32);
        }
    }
    let gids: Vec<usize> = (0..3).filter(|g| !members[*g].is_empty()).collect();
    // The chosen member of each (kept) group.
    let chosen: Vec<u32> = gids
        .iter()
        .map(|g| members[*g][(bits >> 3) as usize % members[*g].len()])
        .collect();
    let runs = |i: usize| {
        let c = ops[i].2;
        if c % 4 == 0 {
            c & 4 != 0
        } else {
            chosen.contains(&(i as u32))
        }
    };
    let mut inst_ops = Vec::new();
    for (i, &(a, b, c)) in ops.iter().enumerate() {
        let q = if i > 0 { (a >> 3) as usize % i } else { 0 };
        let after = if i > 0 && a & 4 != 0 && runs(q) && runs(i) {
            vec![OpId(q as u32)]
        } else {
            vec![]
        };
        inst_ops.push(Op {
            name: format!("o{i}"),
            duration: Ticks((a % 3) as i64),
            reads: vec![],
            produces: vec![],
            consumes: vec![],
            frees: vec![],
            modifies: vec![],
            temp: Bytes(0),
            device: if b % 4 == 0 { Device::Cpu } else { Device::Gpu },
            required: c % 4 == 0 && c & 4 != 0,
            after,
        });
    }
    let groups: Vec<Group> = gids
        .iter()
        .map(|g| Group {
            name: format!("g{g}"),
            members: members[*g].iter().map(|o| OpId(*o)).collect(),
            runs: if bits & 4 != 0 {
                Multiplicity::AtLeastOnce
            } else {
                Multiplicity::ExactlyOnce
            },
        })
        .collect();
    // The timeline: the running ops in index order, back to back.
    let mut t = 0;
    let mut events = Vec::new();
    for (i, op) in inst_ops.iter().enumerate() {
        if runs(i) {
            events.push(Event::Compute {
                op: OpId(i as u32),
                start: Ticks(t),
                end: Ticks(t + op.duration.0),
            });
            t += op.duration.0;
        }
    }
    let order = if bits & 1 != 0 {
        let gpu = |k: usize| inst_ops[chosen[k] as usize].device == Device::Gpu;
        let mut slots: Vec<(bool, u32, GroupId)> = (0..gids.len())
            .map(|k| (!gpu(k), chosen[k], GroupId(k as u32)))
            .collect();
        slots.sort();
        ComputeOrder::Slots(slots.into_iter().map(|s| s.2).collect())
    } else {
        ComputeOrder::Free
    };
    let cyclic = bits & 2 != 0;
    let inst = Instance {
        name: "grouped".into(),
        family: "core".into(),
        tensors: vec![Tensor {
            name: "w".into(),
            size: Bytes(4),
            kind: TensorKind::Weight,
            transferable: true,
            initial: Placement::Gpu,
        }],
        ops: inst_ops,
        order,
        machine: Machine {
            gpu_capacity: Bytes(8),
            cpu_capacity: Some(Bytes(8)),
            duplex: Duplex::FullDuplex,
            bandwidth: Bandwidth::new(4, 1),
        },
        mode: if cyclic { Mode::Cyclic } else { Mode::OneShot },
        release: ReleaseRule::AfterEnd,
        allocator: Default::default(),
        groups,
    };
    inst.validate().ok()?;
    let s = Schedule {
        period: cyclic.then_some(Ticks(t.max(1))),
        initial: cyclic.then(|| CyclicState {
            gpu: vec![TensorId(0)],
            cpu: vec![],
        }),
        events,
    };
    Some((inst, s))
}

/// A random `graph` instance (MODEL.md §4.7) from raw quickcheck values: one
/// node per entry, at most `max_nodes`; entry `(d, m, mask)` gives duration
/// 1 + d % 4, memory 1 + m % 6 bytes, and inputs the nodes `i − 1 − k` for
/// each set bit k < 4 of `mask`, in increasing order (so every edge goes
/// forward and the graph has skip connections up to four back). Memory is tight on purpose: from the
/// largest node footprint (`least_memory`, the least with which a schedule
/// exists) up to the baseline order's peak, `slack` picking where.
pub fn random_graph(
    spec: &[(u8, u8, u8)],
    max_nodes: usize,
    slack: u8,
) -> offcert::family::graph::Graph {
    use offcert::family::graph::{Graph, Node};
    let nodes: Vec<Node> = spec
        .iter()
        .take(max_nodes)
        .enumerate()
        .map(|(i, &(d, m, mask))| Node {
            name: format!("v{i}"),
            duration: 1 + (d % 4) as i64,
            memory: 1 + (m % 6) as u64,
            inputs: (0..4usize)
                .rev()
                .filter(|k| mask >> k & 1 == 1 && *k < i)
                .map(|k| i - 1 - k)
                .collect(),
            backward: false,
            transferable: true,
        })
        .collect();
    let mut g = Graph {
        name: "random".into(),
        note: None,
        nodes,
        gpu_memory: 0,
        offload: None,
        baseline: None,
        release: ReleaseRule::AfterEnd,
        allocator: Default::default(),
    };
    if g.nodes.is_empty() {
        return g;
    }
    let least = g.least_memory();
    let peak = g.sequence_peak(&g.topological_order().expect("forward edges"));
    g.gpu_memory = least + slack as u64 % (peak - least + 1);
    g
}
