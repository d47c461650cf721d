//! The independent re-check (`offcert_core::recheck`) and the certified checker give
//! the same verdict, the same broken rules, the same kinds of violation, the same
//! peak memory (GPU and CPU) and the same redundant offloads: on every bundled file, and on
//! random valid schedules of both families and random mutations of them.

use crate::common::*;
use offcert_core::check::Violation;
use offcert_core::model::Instance;
use offcert_core::schedule::Schedule;
use offcert_core::units::Bytes;
use quickcheck::TestResult;
use std::collections::BTreeSet;
use std::sync::OnceLock;

#[test]
fn agree_on_every_bundled_file() {
    let mut n = 0;
    for dir in [
        "instances/examples",
        "instances/fixtures",
        "instances/regressions",
    ] {
        for (i, s) in pairs(&repo().join(dir)) {
            assert_has_note(&i);
            assert_has_note(&s);
            let (inst, sched) = load(&i, &s);
            let r = agree(&inst, &sched);
            let name = s.file_name().unwrap().to_string_lossy().to_string();
            assert_eq!(r.valid, !name.contains(".invalid."), "{name}");
            n += 1;
        }
    }
    assert!(n >= 27, "only {n} bundled schedules");
}

#[test]
fn agree_on_random_weight_schedules_and_their_mutations() {
    fn prop(
        spec: Vec<(u8, u8, u8, u8)>,
        bw: u8,
        keep: Vec<u8>,
        muts: Vec<(u8, usize, i8)>,
    ) -> TestResult {
        if spec.is_empty() {
            return TestResult::discard();
        }
        let c = weight_chain(&spec, bw);
        let keep: Vec<Keep> = keep.iter().map(|b| Keep::from_bits(*b)).collect();
        let (inst, s) = weight_schedule(&c, &keep);
        let r = agree(&inst, &s);
        if !r.valid {
            return TestResult::failed();
        }
        agree_after_mutations(&inst, s, muts);
        TestResult::passed()
    }
    qc(300, 100).quickcheck(prop as fn(_, _, _, _) -> TestResult);
}

/// The case that property once shrank to (F2 [0,2), B2 [1,2), B1 [2,2), period
/// 3, a1's producer mutated away): B2 consumes a1, which has no GPU copy, while
/// F2 runs. Releasing nothing is no release inside a pin (MODEL.md §2.3.1): the
/// checker used to report `released_while_in_use` for a1, the re-check not.
#[test]
fn consuming_a_missing_input_releases_nothing() {
    let c = weight_chain(&[(0, 0, 0, 0), (1, 1, 0, 0)], 0);
    let (inst, s) = weight_schedule(&c, &[]);
    assert!(agree(&inst, &s).valid);
    let mut mutated = 0;
    mutate_up_to_three(s, vec![(8, 0, 0), (7, 0, 43)], |m| {
        mutated += 1;
        let r = agree(&inst, m);
        assert!(
            !r.violations
                .iter()
                .any(|v| matches!(v, Violation::ReleasedWhileInUse { .. })),
            "{:?}",
            r.violations
        );
    });
    assert!(mutated > 0, "no mutation applied");
}

/// The CPU peaks agree on every bundled file (through [`agree`]), and each
/// file's peak is exactly the CPU capacity it needs: with the capacity at the
/// peak both implementations accept the CPU side, one byte less and both report
/// `cpu_memory_exceeded` (the mutation that breaks CPU capacity). The OFFMATE
/// fixtures (`offmate2`, `grp1`, with CPU ops, CPU workspace and a CPU
/// capacity) are among the files whose CPU peak is not zero.
#[test]
fn agree_on_cpu_peaks_and_a_cpu_capacity_one_byte_short() {
    let mut with_cpu = BTreeSet::new();
    for dir in [
        "instances/examples",
        "instances/fixtures",
        "instances/regressions",
    ] {
        for (i, s) in pairs(&repo().join(dir)) {
            let (inst, sched) = load(&i, &s);
            let name = s.file_name().unwrap().to_string_lossy().to_string();
            let peak = agree(&inst, &sched).peak_cpu_memory.0;
            if peak == 0 {
                continue;
            }
            with_cpu.insert(name.split('.').next().unwrap().to_string());
            for (cap, over) in [(peak, false), (peak - 1, true)] {
                let mut tight = inst.clone();
                tight.machine.cpu_capacity = Some(Bytes(cap));
                let r = agree(&tight, &sched);
                assert_eq!(
                    kinds(&r).contains("cpu_memory_exceeded"),
                    over,
                    "{name} with a CPU capacity of {cap} B (peak {peak} B)"
                );
            }
        }
    }
    for family in ["offmate2", "grp1", "cpu8"] {
        assert!(with_cpu.contains(family), "{family}: no CPU peak");
    }
}

/// Random weight schedules under a random CPU capacity (0..=16 sixteenths of
/// every tensor's bytes): the checker and the re-check agree on the CPU peak and
/// on `cpu_memory_exceeded`, which is reported iff the peak exceeds the
/// capacity. (Mutations are left to the property above, which compares the CPU
/// peaks too.)
#[test]
fn agree_on_random_weight_schedules_under_a_random_cpu_capacity() {
    fn prop(spec: Vec<(u8, u8, u8, u8)>, bw: u8, keep: Vec<u8>, cap: u8) -> TestResult {
        if spec.is_empty() {
            return TestResult::discard();
        }
        let c = weight_chain(&spec, bw);
        let keep: Vec<Keep> = keep.iter().map(|b| Keep::from_bits(*b)).collect();
        let (mut inst, s) = weight_schedule(&c, &keep);
        let all: u64 = inst.tensors.iter().map(|t| t.size.0).sum();
        inst.machine.cpu_capacity = Some(Bytes(all * (cap % 17) as u64 / 16));
        let r = agree(&inst, &s);
        let over = kinds(&r).contains("cpu_memory_exceeded");
        if over != (r.peak_cpu_memory > inst.machine.cpu_capacity.unwrap()) {
            return TestResult::failed();
        }
        TestResult::passed()
    }
    qc(300, 100).quickcheck(prop as fn(_, _, _, _) -> TestResult);
}

/// Random mutations of the bundled schedules whose instance has a CPU capacity
/// (the OFFMATE fixtures `offmate2` and `grp1`, with CPU ops and CPU workspace,
/// and `cpu4`/`cpu8`): the checker and the re-check agree after each, the CPU
/// peaks included.
#[test]
fn agree_on_mutations_of_the_bundled_cpu_capacity_files() {
    static FILES: OnceLock<Vec<(Instance, Schedule)>> = OnceLock::new();
    fn files() -> &'static [(Instance, Schedule)] {
        FILES.get_or_init(|| {
            let mut out = Vec::new();
            for (i, s) in pairs(&repo().join("instances/fixtures")) {
                let (inst, sched) = load(&i, &s);
                if inst.machine.cpu_capacity.is_some() {
                    out.push((inst, sched));
                }
            }
            out
        })
    }
    assert!(files().len() >= 10, "only {} files", files().len());
    fn prop(which: usize, muts: Vec<(u8, usize, i8)>) -> TestResult {
        if muts.is_empty() {
            return TestResult::discard();
        }
        let (inst, s) = &files()[which % files().len()];
        agree_after_mutations(inst, s.clone(), muts);
        TestResult::passed()
    }
    qc(300, 100).quickcheck(prop as fn(_, _) -> TestResult);
}
