//! Random small weight chains shared by the `weight_*` tests.
#![allow(dead_code)]

use offcert::family::weight_chain::{WeightChain, WeightLayer};
use offcert::family::{BandwidthFile, InstanceFile};
use quickcheck::{Arbitrary, Gen};

/// A feasible weight chain: every op fits on its own (M_o ≤ M_GPU).
#[derive(Clone, Debug)]
pub struct SmallChain(pub WeightChain);

fn pick(g: &mut Gen, n: u64) -> u64 {
    u64::arbitrary(g) % n
}

impl Arbitrary for SmallChain {
    fn arbitrary(g: &mut Gen) -> SmallChain {
        let l = 1 + pick(g, 5) as usize;
        let zeros = bool::arbitrary(g);
        let layers: Vec<WeightLayer> = (0..l)
            .map(|_| WeightLayer {
                u_f: if zeros {
                    pick(g, 4) as i64
                } else {
                    1 + pick(g, 6) as i64
                },
                u_b: if zeros {
                    pick(g, 6) as i64
                } else {
                    1 + pick(g, 9) as i64
                },
                w: if zeros { pick(g, 8) } else { 1 + pick(g, 10) },
                a: pick(g, 4),
            })
            .collect();
        let mut c = WeightChain {
            name: "random".into(),
            note: None,
            layers,
            a0: pick(g, 3),
            gpu_memory: 0,
            bandwidth: BandwidthFile::Ratio {
                bytes: 1 + pick(g, 4),
                ticks: 1 + pick(g, 3),
            },
            release: Default::default(),
        };
        let peak = (1..=l)
            .map(|i| c.mb(i).unwrap().max(c.mf(i).unwrap()))
            .max()
            .unwrap();
        let total: u64 = c.layers.iter().map(|x| x.w).sum();
        c.gpu_memory = peak + pick(g, total + 1);
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
    pub fn file(&self) -> InstanceFile {
        InstanceFile::WeightChain(self.0.clone())
    }
}
