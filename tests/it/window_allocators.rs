//! The window paper's "Schedule" against "Schedule + VA" (issue 26, item 2):
//! the least budget at which the window schedule on the synthetic ResNet-50 is
//! valid under `exact`, `va:m_c` and `caching`, on a small batch.

use offcert::check::{check, Report};
use offcert::family::{resnet50::resnet50, InstanceFile};
use offcert::heuristic::op_sequence::{window::Variant, Window};
use offcert::model::Allocator;
use offcert::report::window_allocators::{
    internal_fragmentation_within_bound, largest_planning_budget, least_budget, valid_at, Setup,
};
use offcert::units::Bytes;
use std::process::Command;

const BATCH: u64 = 2;

fn setup() -> Setup {
    Setup {
        batch: BATCH,
        bandwidth: 50,
        window: Window {
            variant: Variant::Nnabla,
            num: 1,
            den: 1,
        },
    }
}

fn va(chunk: u64) -> Allocator {
    Allocator::Va {
        chunk: offcert::units::Bytes(chunk),
    }
}

/// Under each allocator: the schedule at the least budget B is valid, the one
/// at B − 1 is not; a schedule valid under `va` or `caching` is valid under
/// `exact` on the same instance; the allocators' peaks stay within B.
#[test]
fn least_budgets_are_thresholds_and_carry_over_to_exact() {
    let s = setup();
    let mut nothing = |_: &Report| {};
    let exact = least_budget(&s, Allocator::Exact, &mut nothing);
    let (b_exact, _) = exact.least.clone().expect("exact: a least budget");
    assert!(valid_at(&s, b_exact.0 - 1, Allocator::Exact, &mut nothing).is_none());
    for al in [va(40_000_000), va(2 << 20), Allocator::Caching] {
        let t = least_budget(&s, al, &mut nothing);
        let (b, checked) = t.least.clone().unwrap_or_else(|| panic!("{al}: none"));
        assert!(
            valid_at(&s, b.0 - 1, al, &mut nothing).is_none(),
            "{al} at {b:?} - 1"
        );
        let r = checked.report();
        assert_eq!(r.allocator, al);
        // Carry-over: the same schedule on the same instance under `exact`.
        let inst = InstanceFile::OpSequence(resnet50(BATCH, b.0, 50))
            .compile()
            .unwrap();
        assert!(
            check(&inst, checked.schedule()).report().valid,
            "{al} at {b:?}"
        );
        let p = r.allocator_peaks.clone().expect("peaks");
        match al {
            Allocator::Caching => {
                let (res, alloc) = (p.peak_reserved.unwrap(), p.peak_allocated.unwrap());
                assert!(r.peak_memory <= alloc && alloc <= res && res <= b, "{p:?}");
            }
            _ => {
                assert!(r.peak_memory <= p.peak_occupied.unwrap() && p.peak_occupied.unwrap() <= b)
            }
        }
    }
}

/// Eq. (2): on every schedule the checker judges under `va:m_c` on the way
/// (valid or not), the internal fragmentation at the peak is < N_max · m_c.
#[test]
fn internal_fragmentation_stays_below_n_max_chunks_on_every_schedule() {
    for chunk in [40_000_000u64, 2 << 20, 512] {
        let mut seen = 0u32;
        let mut bad = Vec::new();
        let mut visit = |r: &Report| {
            let (ok, f, b) = internal_fragmentation_within_bound(r).expect("a va report");
            seen += 1;
            if !ok {
                bad.push((f, b));
            }
        };
        least_budget(&setup(), va(chunk), &mut visit);
        assert!(seen >= 10, "only {seen} schedules judged");
        assert!(bad.is_empty(), "chunk {chunk}: {bad:?}");
    }
}

#[test]
fn window_table1_prints_the_allocator_table() {
    let o = Command::new(env!("CARGO_BIN_EXE_offcert"))
        .args(["window-table1", "--allocators", "--batches", "2,64"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let row = out
        .lines()
        .find(|l| l.trim_start().starts_with("64 "))
        .unwrap_or_else(|| panic!("{out}"));
    // Batch 64 fits 16 GiB under both allocators, as in the paper.
    assert_eq!(row.matches("ok / ok").count(), 2, "{row}");
    assert!(
        out.contains("checked < N_max·m_c on every schedule judged under va:40MB: holds"),
        "{out}"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_offcert"))
        .args(["window-table1", "--batches", "2"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "--batches needs --allocators");
}

/// Figure 3: below the exact threshold nothing runs; on a GPU of the caching
/// threshold the plan at that budget runs; on a larger GPU the largest
/// planning budget lies between the exact threshold and the GPU, and the run
/// reserves at most the GPU.
#[test]
fn figure3_largest_planning_budget() {
    let s = setup();
    let mut nothing = |_: &Report| {};
    let (b_exact, _) = least_budget(&s, Allocator::Exact, &mut nothing)
        .least
        .unwrap();
    let (b_caching, _) = least_budget(&s, Allocator::Caching, &mut nothing)
        .least
        .unwrap();
    let below = Bytes(b_exact.0 - 1);
    assert!(largest_planning_budget(&s, Allocator::Caching, below, &mut nothing).is_none());
    let (b, _) = largest_planning_budget(&s, Allocator::Caching, b_caching, &mut nothing).unwrap();
    assert_eq!(b, b_caching);
    let cap = Bytes(2 * b_caching.0);
    let (b, c) = largest_planning_budget(&s, Allocator::Caching, cap, &mut nothing).unwrap();
    assert!(b_exact <= b && b <= cap, "{b:?}");
    let r = c.report();
    assert_eq!(r.allocator, Allocator::Caching);
    assert!(r.allocator_peaks.as_ref().unwrap().peak_reserved.unwrap() <= cap);
}
