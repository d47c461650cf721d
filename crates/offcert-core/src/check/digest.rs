//! Canonical digests of an instance and a schedule: SHA-256 over a compact,
//! documented byte encoding (models/MODEL.md §6), so that the same compiled
//! instance and schedule always give the same digest whatever file they came
//! from. Hashing JSON cost more than the replay itself on large schedules.
//!
//! Owns: [`instance_digest`], [`schedule_digest`] and their byte encoding.
//! Must not import: anything outside offcert-core (no solver, heuristic or
//! `offcert` module; Cargo enforces it).

use crate::model::{
    Allocator, ComputeOrder, Device, Direction, Duplex, Instance, Mode, Multiplicity, Placement,
    ReleaseRule, TensorKind,
};
use crate::schedule::{Event, Schedule};
use sha2::{Digest, Sha256};

/// Buffers small writes into large hasher updates.
struct Enc {
    h: Sha256,
    buf: Vec<u8>,
}

impl Enc {
    fn new(tag: &[u8]) -> Enc {
        let mut e = Enc {
            h: Sha256::new(),
            buf: Vec::with_capacity(1 << 16),
        };
        e.bytes(tag);
        e
    }
    fn flush(&mut self) {
        self.h.update(&self.buf);
        self.buf.clear();
    }
    fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= 1 << 16 {
            self.flush();
        }
    }
    fn u8(&mut self, x: u8) {
        self.bytes(&[x]);
    }
    fn u64(&mut self, x: u64) {
        self.bytes(&x.to_le_bytes());
    }
    fn i64(&mut self, x: i64) {
        self.bytes(&x.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.bytes(s.as_bytes());
    }
    fn ids(&mut self, v: impl ExactSizeIterator<Item = u32>) {
        self.u64(v.len() as u64);
        for x in v {
            self.bytes(&x.to_le_bytes());
        }
    }
    fn finish(mut self) -> String {
        self.flush();
        super::hex(&self.h.finalize())
    }
}

/// Does the instance use a v3 feature (groups, slots or `after`)? Only those
/// instances get the v3 tag, so every other instance keeps its v2 digest.
fn uses_v3(inst: &Instance) -> bool {
    !inst.extensions().is_empty()
}

pub fn instance_digest(inst: &Instance) -> String {
    let v3 = uses_v3(inst);
    let mut e = Enc::new(if v3 {
        b"offcert-instance-v3\0"
    } else {
        b"offcert-instance-v2\0"
    });
    e.str(&inst.family);
    e.str(&inst.name);
    e.u8(match inst.mode {
        Mode::OneShot => 0,
        Mode::Cyclic => 1,
    });
    let m = &inst.machine;
    e.u64(m.gpu_capacity.0);
    match m.cpu_capacity {
        None => e.u8(0),
        Some(c) => {
            e.u8(1);
            e.u64(c.0)
        }
    }
    e.u8(match m.duplex {
        Duplex::HalfDuplex => 0,
        Duplex::FullDuplex => 1,
    });
    e.u64(m.bandwidth.bytes);
    e.u64(m.bandwidth.ticks);
    // v2: the release rule decides validity, so it is part of what is certified.
    e.u8(match inst.release {
        ReleaseRule::AfterEnd => 0,
        ReleaseRule::AfterStart => 1,
    });
    e.u64(inst.tensors.len() as u64);
    for t in &inst.tensors {
        e.str(&t.name);
        e.u64(t.size.0);
        e.u8(match t.kind {
            TensorKind::Activation => 0,
            TensorKind::Gradient => 1,
            TensorKind::Weight => 2,
            TensorKind::WeightGradient => 3,
            TensorKind::OptimizerState => 4,
            TensorKind::Input => 5,
            TensorKind::Other => 6,
        });
        e.u8(t.transferable as u8);
        e.u8(match t.initial {
            Placement::Nowhere => 0,
            Placement::Gpu => 1,
            Placement::Cpu => 2,
            Placement::Both => 3,
        });
    }
    e.u64(inst.ops.len() as u64);
    for o in &inst.ops {
        e.str(&o.name);
        e.i64(o.duration.0);
        for list in [&o.reads, &o.produces, &o.consumes, &o.frees, &o.modifies] {
            e.ids(list.iter().map(|t| t.0));
        }
        e.u64(o.temp.0);
        e.u8(match o.device {
            Device::Gpu => 0,
            Device::Cpu => 1,
        });
        e.u8(o.required as u8);
        // v3: each op's predecessors (G6).
        if v3 {
            e.ids(o.after.iter().map(|q| q.0));
        }
    }
    match &inst.order {
        ComputeOrder::Free => e.u8(0),
        ComputeOrder::Fixed(v) => {
            e.u8(1);
            e.ids(v.iter().map(|o| o.0));
        }
        ComputeOrder::Slots(v) => {
            e.u8(2);
            e.ids(v.iter().map(|g| g.0));
        }
    }
    // v3: the variant groups (G1), after the order.
    if v3 {
        e.u64(inst.groups.len() as u64);
        for g in &inst.groups {
            e.str(&g.name);
            e.ids(g.members.iter().map(|o| o.0));
            e.u8(match g.runs {
                Multiplicity::ExactlyOnce => 0,
                Multiplicity::AtLeastOnce => 1,
            });
        }
    }
    allocator_suffix(&mut e, inst.allocator);
    e.finish()
}

/// Allocators (MODEL.md §6): only a non-default one appends to the stream, so
/// every `exact` instance keeps its digest.
fn allocator_suffix(e: &mut Enc, a: Allocator) {
    match a {
        Allocator::Exact => {}
        Allocator::Va { chunk } => {
            e.str("allocator");
            e.u8(1);
            e.u64(chunk.0);
        }
        Allocator::Caching => {
            e.str("allocator");
            e.u8(2);
        }
    }
}

pub fn schedule_digest(s: &Schedule) -> String {
    let mut e = Enc::new(b"offcert-schedule-v1\0");
    match s.period {
        None => e.u8(0),
        Some(p) => {
            e.u8(1);
            e.i64(p.0)
        }
    }
    match &s.initial {
        None => e.u8(0),
        Some(st) => {
            e.u8(1);
            e.ids(st.gpu.iter().map(|t| t.0));
            e.ids(st.cpu.iter().map(|t| t.0));
        }
    }
    e.u64(s.events.len() as u64);
    for ev in &s.events {
        match *ev {
            Event::Compute { op, start, end } => {
                e.u8(0);
                e.bytes(&op.0.to_le_bytes());
                e.i64(start.0);
                e.i64(end.0);
            }
            Event::Transfer {
                dir,
                tensor,
                start,
                end,
                delete,
            } => {
                e.u8(match dir {
                    Direction::Offload => 1,
                    Direction::Prefetch => 2,
                });
                e.bytes(&tensor.0.to_le_bytes());
                e.i64(start.0);
                e.i64(end.0);
                e.u8(delete as u8);
            }
            Event::Delete { tensor, at } => {
                e.u8(3);
                e.bytes(&tensor.0.to_le_bytes());
                e.i64(at.0);
            }
        }
    }
    e.finish()
}
