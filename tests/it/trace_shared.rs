//! The four real traces bundled in `tests/data/traces/` (provenance and licences in
//! `PROVENANCE.md` there) import and audit, and reproduce figures computed
//! independently by `tests/scripts/trace_figures.py` (Python stdlib only; its output
//! is pasted here).

use offcert::trace::audit::{audit_trace, LinkRate, Note, Options};
use offcert::trace::{self, CopyKind, Format, Nanos, RangeKind, Trace};
use offcert::units::Bytes;
use std::path::PathBuf;

fn shared(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces/")).join(name)
}

fn load(name: &str) -> Trace {
    trace::load(&shared(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// (count, bytes, zero-duration) of one copy direction.
fn copies(t: &Trace, k: CopyKind) -> (u64, u128, u64) {
    let v: Vec<_> = t
        .copies()
        .filter(|c| c.kind == trace::GpuKind::Memcpy(k))
        .collect();
    (
        v.len() as u64,
        v.iter().map(|c| c.bytes.unwrap() as u128).sum(),
        v.iter().filter(|c| c.start == c.end).count() as u64,
    )
}

fn kernels(t: &Trace) -> u64 {
    t.kernels().count() as u64
}

#[test]
fn kineto_2021_legacy_v100() {
    let t = load("kineto2021_v100-dgxs-32gb_resnet50_train_tbplugin.pt.trace.json.gz");
    assert_eq!(t.format, Format::Kineto);
    assert_eq!(t.total_events, 75718);
    assert_eq!(kernels(&t), 8772);
    assert_eq!(t.count("Memcpy"), 12);
    assert_eq!(t.count("Memset"), 312);
    assert_eq!(t.count("Runtime"), 11923);
    assert_eq!(t.runtime.len(), 11923);
    assert_eq!(t.memory.len(), 12838);
    assert_eq!(t.memory.iter().filter(|m| m.device_type == 1).count(), 8220);
    assert_eq!(t.memory_out_of_order, 0);
    assert_eq!(copies(&t, CopyKind::HtoD), (12, 115_607_040, 0));
    assert_eq!(t.gpu.iter().filter(|g| g.start == g.end).count(), 636);
    assert_eq!(t.resolution, Nanos(1000));
    assert_eq!(
        t.device_names.get(&0).map(String::as_str),
        Some("Tesla V100-DGXS-32GB")
    );
    let a = audit_trace(&t, &Options::default());
    assert_eq!(a.devices.len(), 1);
    let d = &a.devices[0];
    assert_eq!(d.compute_busy, Nanos(591_532_000));
    let m = d.memory.as_ref().unwrap();
    // No `Total Allocated` in this file: the running sum never dips below 0, so the
    // inferred baseline is 0 and the peak is the largest running sum.
    assert!(!m.baseline_known);
    assert_eq!(m.baseline, Bytes(0));
    assert_eq!(m.peak, Bytes(2_791_636_480));
    assert_eq!(m.peak_at, Nanos(1_623_142_623_582_083_000));
    assert!(a.notes.contains(&Note::ZeroDuration {
        what: "kernel",
        count: 636
    }));
    assert_eq!(a.violations(), 0);
}

#[test]
fn hta_ddp_rank1_memory() {
    let t = load("hta_v100-sxm2-32gb_ddp_train_rank1_memory.json.gz");
    assert_eq!(t.total_events, 216092);
    assert_eq!(kernels(&t), 19370);
    assert_eq!(t.count("gpu_memcpy"), 2040);
    assert_eq!(t.count("gpu_memset"), 880);
    assert_eq!(t.count("cuda_runtime"), 42373);
    assert_eq!(
        t.ranges
            .iter()
            .filter(|r| r.kind == RangeKind::UserAnnotation)
            .count(),
        2035
    );
    assert_eq!(t.memory.len(), 28010);
    assert_eq!(
        t.memory.iter().filter(|m| m.device_type == 1).count(),
        26770
    );
    assert_eq!(t.memory_out_of_order, 1);
    assert_eq!(copies(&t, CopyKind::DtoD), (2040, 5_892_787_600, 0));
    assert_eq!(copies(&t, CopyKind::HtoD), (0, 0, 0));
    // A memory budget just under the peak is exceeded exactly at the peak's instant.
    let opts = Options {
        budget: Some(Bytes(6_629_508_095)),
        ..Options::default()
    };
    let a = audit_trace(&t, &opts);
    let d = &a.devices[0];
    assert_eq!(d.device, 1);
    assert_eq!(d.compute_busy, Nanos(977_859_000));
    assert_eq!(d.streams_with_kernels, vec![7, 14]);
    let m = d.memory.as_ref().unwrap();
    assert!(m.baseline_known);
    assert_eq!(m.baseline, Bytes(4_096_614_400));
    assert_eq!(m.peak, Bytes(6_629_508_096));
    assert_eq!(m.peak_at, Nanos(1_669_783_687_579_130_000));
    // After sorting by ts, the running sum equals `Total Allocated` everywhere.
    assert!(!a
        .notes
        .iter()
        .any(|n| matches!(n, Note::TotalAllocatedMismatch { .. })));
    assert_eq!(a.finding_counts, vec![("memory-budget".to_string(), 1)]);
    match &a.findings[0] {
        offcert::trace::audit::Finding::MemoryOverBudget { peak, peak_at, .. } => {
            assert_eq!(*peak, Bytes(6_629_508_096));
            assert_eq!(*peak_at, Nanos(1_669_783_687_579_130_000));
        }
        f => panic!("{f:?}"),
    }
    // At the peak budget itself, nothing is exceeded.
    let a = audit_trace(
        &t,
        &Options {
            budget: Some(Bytes(6_629_508_096)),
            ..Options::default()
        },
    );
    assert_eq!(a.violations(), 0);
}

#[test]
fn param_rtx2080ti_copies() {
    let t = load("param_rtx2080ti_resnet_train.json.gz");
    assert_eq!(t.total_events, 111631);
    assert_eq!(kernels(&t), 9628);
    assert_eq!(t.count("gpu_memcpy"), 123);
    assert_eq!(t.count("gpu_memset"), 362);
    assert_eq!(t.count("cuda_runtime"), 25928);
    assert_eq!(t.count("user_annotation"), 90);
    assert!(t.memory.is_empty());
    assert_eq!(copies(&t, CopyKind::HtoD), (61, 2_312_140_804, 22));
    assert_eq!(copies(&t, CopyKind::DtoD), (62, 46_758_048, 0));
    assert_eq!(t.gpu.iter().filter(|g| g.start == g.end).count(), 111);
    // At 12 GB/s (PCIe 3 x16), no timed HtoD copy beats the link; the 22 zero-length
    // copies are notes, not errors.
    let opts = Options {
        link: Some(LinkRate::from_gbps("12").unwrap()),
        ..Options::default()
    };
    let a = audit_trace(&t, &opts);
    assert_eq!(a.devices[0].compute_busy, Nanos(4_103_141_000));
    assert_eq!(a.violations(), 0);
    assert!(a.notes.contains(&Note::ZeroDuration {
        what: "memcpy",
        count: 22
    }));
    assert!(a
        .notes
        .contains(&Note::ZeroDurationCopiesSkipped { count: 22 }));
    // At 1 GB/s the declaration is wrong: copies beat it and are flagged.
    let a = audit_trace(
        &t,
        &Options {
            link: Some(LinkRate::from_gbps("1").unwrap()),
            ..Options::default()
        },
    );
    assert!(a
        .finding_counts
        .iter()
        .any(|(r, n)| r == "link-bandwidth" && *n > 0));
    let htod = a.devices[0]
        .directions
        .iter()
        .find(|d| d.kind == CopyKind::HtoD)
        .unwrap();
    assert_eq!(htod.bytes, 2_312_140_804);
    assert_eq!(htod.zero_duration, 22);
}

#[test]
fn nsys_h200_sqlite() {
    let t = load("nsys_h200_nvfuser_report1.sqlite");
    assert_eq!(t.format, Format::Nsys);
    assert_eq!(kernels(&t), 19);
    assert_eq!(t.count("CUPTI_ACTIVITY_KIND_KERNEL"), 19);
    assert_eq!(t.count("CUPTI_ACTIVITY_KIND_MEMCPY"), 1);
    assert_eq!(t.count("CUPTI_ACTIVITY_KIND_RUNTIME"), 968);
    assert_eq!(t.count("NVTX_EVENTS"), 652);
    assert_eq!(t.runtime.len(), 968);
    assert_eq!(t.ranges.len(), 652);
    let evaluate = t
        .ranges
        .iter()
        .filter(|r| t.name(r.name) == "ExpressionEvaluator::evaluate")
        .count();
    assert_eq!(evaluate, 430);
    // copyKind decoded through ENUM_CUDA_MEMCPY_OPER: CUDA_MEMCPY_KIND_DTOH.
    assert_eq!(copies(&t, CopyKind::DtoH), (1, 1, 0));
    assert_eq!(
        t.gpu
            .iter()
            .filter(|g| g.start == g.end && g.kind != trace::GpuKind::Memset)
            .count(),
        0
    );
    let first = t.kernels().map(|k| k.start).min().unwrap();
    let last = t.kernels().map(|k| k.end).max().unwrap();
    assert_eq!((first, last), (Nanos(770_742_793), Nanos(1_278_405_974)));
    // Every kernel has its launching runtime call (correlation ids).
    let linked = t
        .kernels()
        .filter(|k| {
            t.runtime
                .iter()
                .any(|r| r.correlation.is_some() && r.correlation == k.correlation)
        })
        .count();
    assert_eq!(linked, 19);
    let a = audit_trace(&t, &Options::default());
    assert_eq!(a.devices[0].compute_busy, Nanos(393_539));
    assert_eq!(a.violations(), 0);
}
