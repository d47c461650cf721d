//! Random weight chains ([`weight_chain`], from raw quickcheck values) and the
//! earliest-start cyclic schedule of a weight chain ([`weight_schedule`]), one
//! [`Keep`] policy per weight: the valid-by-construction cyclic schedules of the
//! property tests.

use offcert_core::model::{Direction, Instance, TensorId};
use offcert_core::schedule::{CyclicState, Event, Schedule};
use offcert_core::units::Ticks;
use offcert_frontend::family::weight_chain::{WeightChain, WeightLayer};
use offcert_frontend::family::BandwidthFile;

/// A weight chain with 1..=6 layers (the first 6 of `spec`), each drawn from
/// `(uf, ub, w, a)`: u_F 0..=4, u_B 0..=6, |w| 0..=8, |a| 0..=5; |a_0| 0..=3,
/// β = (1..=4) bytes per (1..=3) ticks from `bw`. Its memory is the sum of
/// every tensor plus the largest scratch: no schedule can exceed it, so the
/// cyclic builder needs no memory check; the `lower_capacity` mutations of the
/// property tests make it tight.
pub fn weight_chain(spec: &[(u8, u8, u8, u8)], bw: u8) -> WeightChain {
    let layers: Vec<WeightLayer> = spec
        .iter()
        .take(6)
        .map(|&(uf, ub, w, a)| WeightLayer {
            u_f: (uf % 5) as i64,
            u_b: (ub % 7) as i64,
            w: (w % 9) as u64,
            a: (a % 6) as u64,
        })
        .collect();
    let mut c = WeightChain {
        name: "random-weight".into(),
        note: None,
        layers,
        a0: (bw / 16 % 4) as u64,
        gpu_memory: 0,
        bandwidth: BandwidthFile::Ratio {
            bytes: 1 + (bw % 4) as u64,
            ticks: 1 + (bw / 4 % 3) as u64,
        },
        release: Default::default(),
        allocator: Default::default(),
    };
    let inst = c.compile().unwrap();
    let all: u64 = inst.tensors.iter().map(|t| t.size.0).sum();
    let temp = inst.ops.iter().map(|o| o.temp.0).max().unwrap_or(0);
    c.gpu_memory = all + temp;
    c
}

/// What the cyclic builder does with one weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Always on the GPU; never moves.
    Resident,
    /// Prefetched before F_i, kept until B_i ends, offloaded (and deleted) after B_i.
    OffloadAfterB,
    /// As `OffloadAfterB`, but deleted after F_i and prefetched again before B_i:
    /// the discount rule (one offload serves two prefetches).
    Discount,
}

impl Keep {
    pub fn from_bits(b: u8) -> Keep {
        match b % 3 {
            0 => Keep::Resident,
            1 => Keep::OffloadAfterB,
            _ => Keep::Discount,
        }
    }
}

/// An earliest-start cyclic schedule of a weight chain: ops back to back in
/// order as soon as their prefetches are done, each prefetch as soon as the h2d
/// channel is free (and, for the second prefetch of the discount rule, after the
/// delete), each offload as soon as B_i ends and the d2h channel is free. Every
/// transfer ends within the period, which is the last end (or one tick past the
/// last start).
pub fn weight_schedule(c: &WeightChain, keep: &[Keep]) -> (Instance, Schedule) {
    let inst = c.compile().unwrap();
    let l = c.l();
    // A weight of size 0 would move in zero ticks, in the allocation phase after
    // the op starts of its instant (MODEL.md §2.4): too late; it stays resident.
    let policy = |i: usize| match keep.get(i - 1) {
        Some(k) if c.layers[i - 1].w > 0 => *k,
        _ => Keep::Resident,
    };
    let bw = inst.machine.bandwidth;
    let ticks = |t: TensorId| bw.min_ticks(inst.tensor(t).size).unwrap();
    let mut events = Vec::new();
    let (mut tc, mut h2d, mut d2h) = (Ticks(0), Ticks(0), Ticks(0));
    let prefetch = |t: TensorId, not_before: Ticks, h2d: &mut Ticks, ev: &mut Vec<Event>| {
        let start = (*h2d).max(not_before);
        let end = start + ticks(t);
        ev.push(Event::Transfer {
            dir: Direction::Prefetch,
            tensor: t,
            start,
            end,
            delete: false,
        });
        *h2d = end;
        end
    };
    for i in 1..=l {
        let w = c.w_id(i);
        let mut ready = tc;
        if policy(i) != Keep::Resident {
            ready = ready.max(prefetch(w, Ticks(0), &mut h2d, &mut events));
        }
        let end = ready + inst.op(c.f_id(i)).duration;
        events.push(Event::Compute {
            op: c.f_id(i),
            start: ready,
            end,
        });
        tc = end;
        if policy(i) == Keep::Discount {
            // A delete is a release: at F_i's own instant it would come before a
            // zero-length F_i starts, so it waits one tick then.
            let at = if end > ready { end } else { end + Ticks(1) };
            events.push(Event::Delete { tensor: w, at });
            tc = at;
        }
    }
    let mut deleted_at: Vec<Ticks> = vec![Ticks(0); l + 1];
    for e in &events {
        if let Event::Delete { tensor, at } = e {
            let i = (1..=l).find(|i| c.w_id(*i) == *tensor).unwrap();
            deleted_at[i] = *at;
        }
    }
    for i in (1..=l).rev() {
        let w = c.w_id(i);
        let mut ready = tc;
        if policy(i) == Keep::Discount {
            ready = ready.max(prefetch(w, deleted_at[i], &mut h2d, &mut events));
        }
        let end = ready + inst.op(c.b_id(i)).duration;
        events.push(Event::Compute {
            op: c.b_id(i),
            start: ready,
            end,
        });
        tc = end;
        if policy(i) != Keep::Resident {
            let start = d2h.max(end);
            let stop = start + ticks(w);
            events.push(Event::Transfer {
                dir: Direction::Offload,
                tensor: w,
                start,
                end: stop,
                delete: true,
            });
            d2h = stop;
        }
    }
    let last_end = events.iter().map(|e| e.end()).max().unwrap_or(Ticks(0));
    let last_start = events.iter().map(|e| e.start()).max().unwrap_or(Ticks(0));
    let period = last_end.max(last_start + Ticks(1));
    let mut initial = CyclicState {
        gpu: vec![c.a_id(0)],
        cpu: vec![],
    };
    for i in 1..=l {
        match policy(i) {
            Keep::Resident => initial.gpu.push(c.w_id(i)),
            _ => initial.cpu.push(c.w_id(i)),
        }
    }
    (inst, Schedule::cyclic(period, initial, events))
}
