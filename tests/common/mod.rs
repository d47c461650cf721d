//! Shared helpers of the integration tests: loading fixture files, random
//! instances of both families, the cyclic weight-chain schedule builder, and the
//! schedule mutations of the property tests.
#![allow(dead_code)]

use offcert::check::{check, CheckOutcome, Report, Violation};
use offcert::family::activation_chain::{ActivationChain, ActivationLayer};
use offcert::family::weight_chain::{WeightChain, WeightLayer};
use offcert::family::BandwidthFile;
use offcert::model::{Direction, Instance, TensorId};
use offcert::recheck::recheck;
use offcert::schedule::{CyclicState, Event, EventId, Schedule};
use offcert::simulate::{asap, Plan};
use offcert::units::Ticks;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Number of quickcheck cases: `n`, times `OFFCERT_QC_SCALE` if set (for
/// occasional long runs; the default keeps the suite fast).
pub fn cases(n: u64) -> u64 {
    n * std::env::var("OFFCERT_QC_SCALE")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(1)
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Load an instance and a schedule from files (panics with the loader's error).
pub fn load(instance: &Path, schedule: &Path) -> (Instance, Schedule) {
    let (_, inst) = offcert::io::load_instance(instance)
        .unwrap_or_else(|e| panic!("{}: {e}", instance.display()));
    let s = offcert::io::load_schedule(schedule, &inst)
        .unwrap_or_else(|e| panic!("{}: {e}", schedule.display()));
    (inst, s)
}

/// Every `(instance, schedule)` file pair of a folder that follows the naming
/// convention `<instance>.json` + `<instance>.<what>.schedule.json`.
pub fn pairs(dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut files: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with(".schedule.json") {
            let stem = name.split('.').next().unwrap();
            out.push((dir.join(format!("{stem}.json")), f));
        }
    }
    out
}

/// The names of the rules a report finds broken.
pub fn rules(r: &Report) -> BTreeSet<&'static str> {
    r.violations.iter().map(|v| v.rule()).collect()
}

/// Order mismatches are one rule and three kinds in the checker; the re-check
/// classifies them the same way, so kinds can be compared directly.
pub fn kinds(r: &Report) -> BTreeSet<String> {
    r.violations.iter().map(|v| v.kind()).collect()
}

/// Run both implementations; panic with both outputs if they disagree on the
/// verdict, the broken rules, the kinds of violation, the peak memory or the
/// redundant offloads.
pub fn agree(inst: &Instance, s: &Schedule) -> CheckOutcome {
    let r = check(inst, s);
    let v = recheck(inst, s);
    let ck: BTreeSet<String> = v.kinds().into_iter().map(String::from).collect();
    let redundant: Vec<EventId> = r
        .warnings
        .iter()
        .map(|w| match w {
            offcert::check::Warning::RedundantOffload { event, .. } => *event,
            _ => unreachable!("only one warning kind exists"),
        })
        .collect();
    let mut rv = v.redundant_offloads.clone();
    rv.sort();
    let mut rc = redundant;
    rc.sort();
    if r.valid != v.valid
        || rules(&r) != v.broken_rules()
        || kinds(&r) != ck
        || r.peak_memory != v.peak_memory
        || rc != rv
    {
        panic!(
            "checker and re-check disagree\ninstance: {}\nschedule: {}\nchecker: valid={} peak={} {:?}\n  {:#?}\n  warnings {:?}\nre-check: valid={} peak={} {:?}\n  {:#?}\n  redundant {:?}",
            serde_json::to_string(&offcert::family::CoreFile::from_instance(inst)).unwrap(),
            serde_json::to_string(&offcert::schedule::ScheduleFile::from_schedule(s, inst))
                .unwrap(),
            r.valid,
            r.peak_memory.0,
            kinds(&r),
            r.violations.iter().map(|x| x.describe(inst)).collect::<Vec<_>>(),
            rc,
            v.valid,
            v.peak_memory.0,
            v.kinds(),
            v.findings,
            rv
        );
    }
    r
}

// ---------------------------------------------------------------------------
// Random instances (built from raw quickcheck values, so that quickcheck's own
// shrinking of vectors and integers shrinks the instance).

/// An activation chain with 1..=7 layers; sizes and durations small, some zero.
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
    };
    c.gpu_memory = c.m_peak().unwrap().saturating_sub((slack % 10) as u64);
    c
}

/// An ASAP schedule of a random plan on `c` (None if the plan gets stuck).
pub fn activation_schedule(c: &ActivationChain, mask: u16, la: u8) -> Option<(Instance, Schedule)> {
    let inst = c.compile().unwrap();
    let offload: Vec<TensorId> = (0..=c.layers.len())
        .filter(|i| mask >> i & 1 == 1)
        .map(|i| c.x_id(i))
        .collect();
    let plan = Plan {
        offload,
        lookahead: (la % 4 != 0).then_some((la % 4) as usize),
    };
    asap(&inst, &plan).ok().map(|s| (inst, s))
}

/// A weight chain with 1..=6 layers. Its memory is the sum of every tensor plus
/// the largest scratch: no schedule can exceed it, so the builder below needs no
/// memory check; `lower_capacity` mutations test memory.
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

// ---------------------------------------------------------------------------
// Mutations. Each returns None when the schedule offers nothing to mutate.

pub fn transfers(s: &Schedule) -> Vec<usize> {
    (0..s.events.len())
        .filter(|i| matches!(s.events[*i], Event::Transfer { .. }))
        .collect()
}

/// Shorten a transfer to one tick less than size/β allows.
pub fn shorten_transfer(inst: &Instance, s: &Schedule, pick: usize) -> Option<(Schedule, usize)> {
    let cands: Vec<usize> = transfers(s)
        .into_iter()
        .filter(|i| {
            let Event::Transfer { tensor, .. } = s.events[*i] else {
                unreachable!()
            };
            inst.machine
                .bandwidth
                .min_ticks(inst.tensor(tensor).size)
                .unwrap()
                >= Ticks(1)
        })
        .collect();
    let i = *cands.get(pick % cands.len().max(1))?;
    let mut m = s.clone();
    if let Event::Transfer {
        tensor, start, end, ..
    } = &mut m.events[i]
    {
        let least = inst
            .machine
            .bandwidth
            .min_ticks(inst.tensor(*tensor).size)
            .unwrap();
        *end = *start + least - Ticks(1);
    }
    Some((m, i))
}

/// Move the first reader after a prefetch (with a positive duration) to start one
/// tick before the prefetch ends. Returns the mutated schedule, the compute event
/// and the tensor.
pub fn start_before_prefetch_ends(
    inst: &Instance,
    s: &Schedule,
    pick: usize,
) -> Option<(Schedule, usize, TensorId)> {
    let mut cands = Vec::new();
    for i in transfers(s) {
        let Event::Transfer {
            dir: Direction::Prefetch,
            tensor,
            start,
            end,
            ..
        } = s.events[i]
        else {
            continue;
        };
        if end <= start {
            continue;
        }
        // The first op (by start) that reads it at or after the prefetch's end.
        let reader = (0..s.events.len())
            .filter(|j| match s.events[*j] {
                Event::Compute { op, start: os, .. } => {
                    os >= end && inst.op(op).reads.contains(&tensor)
                }
                _ => false,
            })
            .min_by_key(|j| (s.events[*j].start(), *j));
        if let Some(j) = reader {
            // Only if nothing re-lands the tensor between the prefetch and the reader.
            cands.push((j, tensor, end));
        }
    }
    let &(j, tensor, end) = cands.get(pick % cands.len().max(1))?;
    let mut m = s.clone();
    if let Event::Compute { start, end: oe, .. } = &mut m.events[j] {
        let d = *oe - *start;
        *start = end - Ticks(1);
        *oe = *start + d;
    }
    Some((m, j, tensor))
}

/// Insert a delete of a tensor at an instant when its GPU copy holds the only
/// current value and it is still needed: an activation right after the forward
/// op that produces it, or a weight right after the backward op that updates it.
pub fn delete_without_cpu_copy(
    inst: &Instance,
    s: &Schedule,
    pick: usize,
) -> Option<(Schedule, TensorId)> {
    let cyclic = s.period.is_some();
    let mut cands = Vec::new();
    for e in &s.events {
        let Event::Compute { op, start, end } = *e else {
            continue;
        };
        // A delete is a release: at the instant a zero-length op runs it comes
        // before the op, and would find nothing to delete.
        if end == start {
            continue;
        }
        let o = inst.op(op);
        let targets: Vec<TensorId> = if cyclic {
            // Only weights that move: a resident weight deleted in the first
            // (warm-up) period is simply absent in the reported one.
            o.modifies
                .iter()
                .copied()
                .filter(|t| {
                    s.events.iter().any(|f| {
                        matches!(f, Event::Transfer { dir: Direction::Prefetch, tensor, .. } if tensor == t)
                    })
                })
                .collect()
        } else {
            o.produces
                .iter()
                .copied()
                .filter(|t| {
                    inst.tensor(*t).transferable
                        && inst.tensor(*t).size.0 > 0
                        && s.events.iter().any(|f| matches!(f, Event::Compute { op: p, start, .. } if *start > end && inst.op(*p).reads.contains(t)))
                })
                .collect()
        };
        for t in targets {
            cands.push((t, end));
        }
    }
    let &(t, at) = cands.get(pick % cands.len().max(1))?;
    let mut m = s.clone();
    m.events.push(Event::Delete { tensor: t, at });
    Some((m, t))
}

/// Move a transfer onto the start of another one on the same channel.
pub fn overlap_transfers(inst: &Instance, s: &Schedule, pick: usize) -> Option<Schedule> {
    let ts: Vec<usize> = transfers(s)
        .into_iter()
        .filter(|i| s.events[*i].end() > s.events[*i].start())
        .collect();
    let mut cands = Vec::new();
    for &a in &ts {
        for &b in &ts {
            let (Event::Transfer { dir: da, .. }, Event::Transfer { dir: db, .. }) =
                (s.events[a], s.events[b])
            else {
                unreachable!()
            };
            if a != b && inst.machine.channel(da) == inst.machine.channel(db) {
                cands.push((a, b));
            }
        }
    }
    let &(a, b) = cands.get(pick % cands.len().max(1))?;
    let mut m = s.clone();
    let a_start = s.events[a].start();
    if let Event::Transfer { start, end, .. } = &mut m.events[b] {
        let d = *end - *start;
        *start = a_start;
        *end = a_start + d;
    }
    Some(m)
}

/// A random small change: move an event, stretch or shrink it, drop it, or
/// duplicate it. Used to compare the checker and the re-check on invalid input.
pub fn random_mutation(s: &Schedule, which: u8, idx: usize, delta: i8) -> Option<Schedule> {
    if s.events.is_empty() {
        return None;
    }
    let i = idx % s.events.len();
    let mut m = s.clone();
    let d = Ticks(delta as i64 % 6);
    let clamp = |t: Ticks| Ticks(t.0.max(0));
    match which % 6 {
        0 => {
            // shift
            let e = &mut m.events[i];
            let len = e.end() - e.start();
            let ns = clamp(e.start() + d);
            *e = set_times(*e, ns, ns + len);
        }
        1 => {
            // change the end
            let e = &mut m.events[i];
            let ne = (e.end() + d).max(e.start());
            *e = set_times(*e, e.start(), ne);
        }
        2 => {
            m.events.remove(i);
        }
        3 => {
            let e = m.events[i];
            m.events.push(e);
        }
        4 => {
            // flip an offload's delete flag, or turn a delete into a later one
            match &mut m.events[i] {
                Event::Transfer { delete, dir, .. } if *dir == Direction::Offload => {
                    *delete = !*delete
                }
                Event::Delete { at, .. } => *at = clamp(*at + d),
                _ => return None,
            }
        }
        _ => {
            // change the period or the initial state
            match (&mut m.period, &mut m.initial) {
                (Some(p), Some(st)) => {
                    if delta % 2 == 0 {
                        *p = Ticks((p.0 + d.0).max(1));
                    } else if !st.gpu.is_empty() && delta > 0 {
                        st.gpu.remove(idx % st.gpu.len());
                    } else if !st.cpu.is_empty() {
                        st.cpu.remove(idx % st.cpu.len());
                    } else {
                        return None;
                    }
                }
                _ => return None,
            }
        }
    }
    Some(m)
}

fn set_times(e: Event, start: Ticks, end: Ticks) -> Event {
    match e {
        Event::Compute { op, .. } => Event::Compute { op, start, end },
        Event::Transfer {
            dir,
            tensor,
            delete,
            ..
        } => Event::Transfer {
            dir,
            tensor,
            start,
            end,
            delete,
        },
        Event::Delete { tensor, .. } => Event::Delete { tensor, at: start },
    }
}

/// Does the report contain a violation satisfying `f`?
pub fn has(r: &Report, f: impl Fn(&Violation) -> bool) -> bool {
    r.violations.iter().any(f)
}
