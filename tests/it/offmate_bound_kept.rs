//! `offmate-kept` (`proofs/OFFMATE-BOUNDS.md` §7): the turnaround's lines
//! minimised over the option vectors whose kept activations fit at the start
//! of the last backward. At most the exact optimum on random tiny instances
//! built so that the restriction bites (a fast link, room for one kept block
//! of two), equal to a hand-derived value where it does, at least
//! `offmate-turnaround` everywhere, its fallback beyond the enumeration limit,
//! and the Llama2-7B rows without activation offload above the figure the
//! restriction alone proves for their compute.
//! (At most every checked period: `offmate_bounds.rs`; every registered
//! bound against the tiny fixtures' optima: `offmate_exact.rs`.)

use crate::common;

use common::offmate_gen::Draw;
use common::*;
use num_rational::BigRational;
use offcert::bound::offmate::kept::{restricted_min, restriction, LIMIT};
use offcert::bound::offmate::{forced_bound, kept_bound, Lines};
use offcert::check::check;
use offcert::exact::{self, Limits, Method, Status};
use offcert::family::offmate::*;
use offcert::family::{BandwidthFile, InstanceFile};
use offcert::heuristic;
use offcert::model::Duplex;
use offcert::units::{Bytes, Ticks};
use quickcheck::TestResult;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn option(t_bwd: u64, saved: u64, over: u64) -> BlockOption {
    BlockOption {
        name: None,
        t_fwd: Ticks(1),
        t_bwd: Ticks(t_bwd as i64),
        saved: Bytes(saved),
        offloaded: Bytes(0),
        fwd_overhead: Bytes(0),
        bwd_overhead: Bytes(over),
    }
}

/// Two blocks, each with a "keep" option (σ 2–4 B, t_bwd 1) and a "remat"
/// option (σ 0, t_bwd 2–3, bwd_overhead 0–1 B); one parameter per block
/// (1–2 B, trainable with probability 1/2); k 0–1; α_G, α_C 1–2 B/tick; β 4–8
/// B/tick (a fast link, so that the turnaround line alone does not already
/// forbid keeping both); H = 0; full or half duplex; M_GPU = what the
/// turnaround holds besides the kept activations, plus room for the larger
/// kept block and 0..(smaller − 1) B more: never both.
fn kept_instance(d: &mut Draw) -> Offmate {
    let mut params = Vec::new();
    let mut blocks = Vec::new();
    for b in 0..2 {
        let name = format!("w{}", b + 1);
        params.push(Param {
            name: name.clone(),
            bytes: Bytes(d.n(1, 2)),
            trainable: d.n(0, 1) == 1,
        });
        blocks.push(Block {
            name: format!("b{}", b + 1),
            out: Bytes(1),
            grad_out: None,
            params: vec![name],
            options: vec![option(1, d.n(2, 4), 0), option(d.n(2, 3), 0, d.n(0, 1))],
        });
    }
    let mut off = Offmate {
        name: "kept".into(),
        note: None,
        input: Bytes(1),
        blocks,
        params,
        optimizer: Optimizer {
            states: d.n(0, 1) as u32,
            gpu_speed: BandwidthFile::PerTick(d.n(1, 2)),
            cpu_speed: BandwidthFile::PerTick(d.n(1, 2)),
            gpu_temp_factor: 0,
        },
        cpu_management: Ticks(0),
        gpu_memory: Bytes(0),
        cpu_memory: Bytes(1000),
        bandwidth: BandwidthFile::PerTick(d.n(4, 8)),
        duplex: if d.n(0, 2) == 0 {
            Duplex::HalfDuplex
        } else {
            Duplex::FullDuplex
        },
        release: Default::default(),
        allocator: Default::default(),
    };
    // K = M − room at M = 0.
    let k = -restriction(&off).room.to_integer();
    let (s1, s2) = (
        off.blocks[0].options[0].saved.0,
        off.blocks[1].options[0].saved.0,
    );
    let k: u64 = k.try_into().unwrap();
    off.gpu_memory = Bytes(k + s1.max(s2) + d.n(0, s1.min(s2) - 1));
    off
}

fn int(n: i64) -> BigRational {
    BigRational::from_integer(n.into())
}

static SOLVED: AtomicUsize = AtomicUsize::new(0);
static BIT: AtomicUsize = AtomicUsize::new(0);

fn below_the_optimum(bytes: Vec<u8>) -> TestResult {
    let mut d = Draw::new(&bytes);
    let off = kept_instance(&mut d);
    let inst = InstanceFile::Offmate(off.clone()).compile().unwrap();
    let kept = kept_bound(&off);
    let turn = forced_bound(&off, Lines::Turnaround);
    assert!(kept >= turn, "{off:?}");
    let limits = Limits {
        time_limit: Duration::from_secs(5),
        ..Limits::default()
    };
    let o = exact::solve(Method::Search, &inst, &limits).expect("in the search's scope");
    if o.status != Status::Optimal {
        return TestResult::discard();
    }
    let opt = o.bound.unwrap().0;
    assert!(check(&inst, o.schedule.as_ref().unwrap()).valid, "{off:?}");
    assert!(
        kept.ceil().to_integer() <= opt.into(),
        "offmate-kept = {kept} above the optimum {opt} on {off:?}"
    );
    SOLVED.fetch_add(1, Ordering::Relaxed);
    if kept > turn {
        BIT.fetch_add(1, Ordering::Relaxed);
    }
    TestResult::passed()
}

/// Random two-block instances where at most one block can keep its
/// activations: `offmate-kept` ≥ `offmate-turnaround`, ≤ the search's exact
/// optimum, and strictly above the turnaround bound on several of them.
#[test]
fn kept_is_at_most_the_exact_optimum() {
    qc(12, 6).quickcheck(below_the_optimum as fn(Vec<u8>) -> TestResult);
    let (s, b) = (SOLVED.load(Ordering::Relaxed), BIT.load(Ordering::Relaxed));
    eprintln!("optima {s}, restriction raised the bound on {b}");
    assert!(b >= 2, "the restriction raised the bound on {b} of {s}");
}

/// Two blocks (t_fwd 1; keep: σ 5 B, t_bwd 1; remat: σ 0, t_bwd 3), frozen
/// 1 B parameters, k = 0, β = 10 B/tick, M = 10 B. At the turnaround the GPU
/// holds x0, x1, x2, g1, w2 (5 B), so only one block's 5 B fit: the compute
/// is at least 1 + 1 + 1 + 3 = 6, while over every option vector (both
/// kept: 4 ticks of compute, 2 + 6/10 for the turnaround) the bound is 4.
/// The search's optimum and every checked heuristic period are ≥ 6.
#[test]
fn kept_by_hand() {
    let block = |i: usize| Block {
        name: format!("b{i}"),
        out: Bytes(1),
        grad_out: None,
        params: vec![format!("w{i}")],
        options: vec![option(1, 5, 0), option(3, 0, 0)],
    };
    let param = |i: usize| Param {
        name: format!("w{i}"),
        bytes: Bytes(1),
        trainable: false,
    };
    let off = Offmate {
        name: "kept-by-hand".into(),
        note: None,
        input: Bytes(1),
        blocks: vec![block(1), block(2)],
        params: vec![param(1), param(2)],
        optimizer: Optimizer {
            states: 0,
            gpu_speed: BandwidthFile::PerTick(1),
            cpu_speed: BandwidthFile::PerTick(1),
            gpu_temp_factor: 0,
        },
        cpu_management: Ticks(0),
        gpu_memory: Bytes(10),
        cpu_memory: Bytes(1000),
        bandwidth: BandwidthFile::PerTick(10),
        duplex: Duplex::FullDuplex,
        release: Default::default(),
        allocator: Default::default(),
    };
    assert_eq!(restriction(&off).room, int(5));
    assert_eq!(forced_bound(&off, Lines::Turnaround), int(4));
    assert_eq!(restricted_min(&off), Some(int(6)));
    assert_eq!(kept_bound(&off), int(6));
    let file = InstanceFile::Offmate(off.clone());
    let inst = file.compile().unwrap();
    let limits = Limits {
        time_limit: Duration::from_secs(20),
        ..Limits::default()
    };
    let o = exact::solve(Method::Search, &inst, &limits).unwrap();
    assert_eq!(o.status, Status::Optimal);
    assert!(o.bound.unwrap().0 >= 6, "{:?}", o.bound);
    for h in heuristic::offmate::heuristics() {
        if let Ok(run) = heuristic::run(h.as_ref(), &file, &inst) {
            assert!(run.checked.report().makespan.0 >= 6, "{}", h.name());
        }
    }
}

/// Beyond the enumeration limit (20 blocks with two distinct options each:
/// 2^20 vectors) no restricted minimum is computed and the bound is
/// `offmate-turnaround`'s.
#[test]
fn kept_falls_back_beyond_the_limit() {
    let blocks: Vec<Block> = (0..20)
        .map(|i| Block {
            name: format!("b{i}"),
            out: Bytes(1),
            grad_out: None,
            params: vec![],
            options: vec![option(1, 2 + i, 0), option(2 + i, 0, 0)],
        })
        .collect();
    assert!(1u128 << 20 > LIMIT);
    let off = Offmate {
        name: "wide".into(),
        note: None,
        input: Bytes(1),
        blocks,
        params: vec![],
        optimizer: Optimizer {
            states: 0,
            gpu_speed: BandwidthFile::PerTick(1),
            cpu_speed: BandwidthFile::PerTick(1),
            gpu_temp_factor: 0,
        },
        cpu_management: Ticks(0),
        gpu_memory: Bytes(40),
        cpu_memory: Bytes(1000),
        bandwidth: BandwidthFile::PerTick(1),
        duplex: Duplex::FullDuplex,
        release: Default::default(),
        allocator: Default::default(),
    };
    assert_eq!(restricted_min(&off), None);
    assert_eq!(kept_bound(&off), forced_bound(&off, Lines::Turnaround));
}

/// On the Llama2-7B rows without activation offload at most 7 (RTX 3090) and
/// 6 (RTX 3060) of the 32 layers keep their activations at the turnaround, so
/// the compute alone is ≥ 9595131 and ≥ 12957736 µs (7 × 234138 + 25 × 312184
/// + 3000 + 148565, and 6 × 313665 + 26 × 418220 + 3000 + 199026: the head
/// keeps too); the bound (with the GPU and CPU Adam trade) is above that, and
/// above `offmate-turnaround`. On the row with offload it is at least
/// `offmate-turnaround`.
#[test]
fn kept_on_llama2() {
    for (file, floor) in [
        ("llama2-7b-rtx3090-no-act-offload", 9_595_131),
        ("llama2-7b-rtx3060-no-act-offload", 12_957_736),
        ("llama2-7b-rtx3090", 0),
    ] {
        let path = repo().join(format!("instances/paper/offmate/{file}.json"));
        let (f, _) = offcert::io::load_instance(&path).unwrap();
        let off = f.offmate().unwrap();
        let kept = kept_bound(off);
        let turn = forced_bound(off, Lines::Turnaround);
        assert!(kept >= turn, "{file}");
        assert!(kept >= int(floor), "{file}: {kept}");
        if floor > 0 {
            assert!(kept > turn, "{file}");
        }
    }
}
