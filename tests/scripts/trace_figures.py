#!/usr/bin/env python3
"""Independent figures for the bundled real traces (tests/data/traces/) (stdlib only: gzip, json, sqlite3).

The numbers this prints are pasted into tests/trace_shared.rs; the Rust importers
and audit must reproduce them. Run from the repository root:

    python3 tests/scripts/trace_figures.py tests/data/traces

Times are in integer nanoseconds (Kineto microseconds x 1000; every bundled Kineto
trace has integer microseconds, checked below).
"""
import gzip
import json
import sqlite3
import sys
from collections import Counter, defaultdict

KINETO = [
    "kineto2021_v100-dgxs-32gb_resnet50_train_tbplugin.pt.trace.json.gz",
    "hta_v100-sxm2-32gb_ddp_train_rank1_memory.json.gz",
    "param_rtx2080ti_resnet_train.json.gz",
]
NSYS = "nsys_h200_nvfuser_report1.sqlite"

KERNEL = {"Kernel", "kernel"}
MEMCPY = {"Memcpy", "gpu_memcpy"}
MEMSET = {"Memset", "gpu_memset"}
RUNTIME = {"Runtime", "cuda_runtime", "cuda_driver"}


def union_length(intervals):
    total = 0
    cur_s = cur_e = None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def direction(name):
    for d in ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP"):
        if d in name:
            return d
    return "other"


def kineto(path):
    d = json.loads(gzip.open(path).read())
    ev = d["traceEvents"]
    for e in ev:
        for k in ("ts", "dur"):
            assert not isinstance(e.get(k), float), "fractional times: adapt the script"
    cats = Counter(e.get("cat") for e in ev)
    out = {"events": len(ev)}
    out["kernels"] = sum(cats[c] for c in KERNEL)
    out["memcpy"] = sum(cats[c] for c in MEMCPY)
    out["memset"] = sum(cats[c] for c in MEMSET)
    out["runtime"] = sum(cats[c] for c in RUNTIME)
    out["user_annotation"] = cats["user_annotation"]
    out["gpu_user_annotation"] = cats["gpu_user_annotation"]
    gpu = [e for e in ev if e.get("cat") in KERNEL | MEMCPY | MEMSET]
    out["zero_duration_gpu_events"] = sum(1 for e in gpu if e["dur"] == 0)
    per_dir = defaultdict(lambda: [0, 0, 0])  # count, bytes, zero-duration
    for e in ev:
        if e.get("cat") in MEMCPY:
            r = per_dir[direction(e["name"])]
            r[0] += 1
            r[1] += e["args"]["bytes"]
            r[2] += e["dur"] == 0
    out["copies"] = {k: v for k, v in sorted(per_dir.items())}
    kern = [(e["ts"] * 1000, (e["ts"] + e["dur"]) * 1000) for e in ev if e.get("cat") in KERNEL]
    out["kernel_busy_ns"] = union_length(kern)
    # Device memory: [memory] events on CUDA devices (Device Type 1), stable-sorted by ts.
    mem = [e for e in ev if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1]
    out["memory_events_all"] = sum(1 for e in ev if e.get("name") == "[memory]")
    out["memory_events_cuda"] = len(mem)
    # Out of time order in the file: a [memory] event earlier than the one before it.
    allmem = [e["ts"] for e in ev if e.get("name") == "[memory]"]
    out["memory_out_of_order"] = sum(1 for a, b in zip(allmem, allmem[1:]) if b < a)
    if mem:
        ms = sorted(mem, key=lambda e: e["ts"])
        run = 0
        lo = 0
        hi_run = 0
        hi_at = None
        for e in ms:
            run += e["args"]["Bytes"]
            lo = min(lo, run)
            if run > hi_run:
                hi_run, hi_at = run, e["ts"]
        out["memory_delta_min"] = lo
        out["memory_delta_max"] = hi_run
        out["memory_delta_max_at_ns"] = hi_at * 1000 if hi_at is not None else None
        if "Total Allocated" in ms[0]["args"]:
            base = ms[0]["args"]["Total Allocated"] - ms[0]["args"]["Bytes"]
            run = base
            bad = 0
            for e in ms:
                run += e["args"]["Bytes"]
                bad += run != e["args"]["Total Allocated"]
            pk = max(ms, key=lambda e: e["args"]["Total Allocated"])  # first maximum
            out["memory_baseline"] = base
            out["peak_total_allocated"] = pk["args"]["Total Allocated"]
            out["peak_total_allocated_at_ns"] = pk["ts"] * 1000
            out["total_allocated_mismatches"] = bad
        if any("Total Reserved" in e["args"] for e in ms):
            out.update(reserved_figures(ms))
    return out


def reserved_figures(ms):
    """Total Reserved beside Total Allocated, after the last event of each instant
    (the events stable-sorted by ts); the mean is time-weighted, floored."""
    last = {}
    for e in ms:  # a later event of one instant overwrites an earlier one
        last[e["ts"]] = (e["args"]["Total Reserved"], e["args"]["Total Allocated"])
    inst = sorted(last.items())
    r_peak = max(r for _, (r, _) in inst)
    r_peak_ts = next(ts for ts, (r, _) in inst if r == r_peak)
    d_peak = max(r - a for _, (r, a) in inst)
    d_peak_ts = next(ts for ts, (r, a) in inst if r - a == d_peak)
    weighted = sum((r - a) * (inst[i + 1][0] - ts) * 1000 for i, (ts, (r, a)) in enumerate(inst[:-1]))
    span = (inst[-1][0] - inst[0][0]) * 1000
    return {
        "reserved_events": sum(1 for e in ms if "Total Reserved" in e["args"]),
        "peak_reserved": r_peak,
        "peak_reserved_at_ns": r_peak_ts * 1000,
        "allocated_at_peak_reserved": last[r_peak_ts][1],
        "peak_reserved_minus_peak_allocated": r_peak - max(a for _, (_, a) in inst),
        "peak_reserved_minus_allocated": d_peak,
        "peak_reserved_minus_allocated_at_ns": d_peak_ts * 1000,
        "mean_reserved_minus_allocated_floor": weighted // span,
        "reserved_span_ns": span,
    }


def nsys(path):
    c = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    q = lambda s: c.execute(s).fetchall()
    out = {}
    out["kernels"] = q("select count(*) from CUPTI_ACTIVITY_KIND_KERNEL")[0][0]
    out["memcpy"] = q("select count(*) from CUPTI_ACTIVITY_KIND_MEMCPY")[0][0]
    out["runtime"] = q("select count(*) from CUPTI_ACTIVITY_KIND_RUNTIME")[0][0]
    out["nvtx"] = q("select count(*) from NVTX_EVENTS")[0][0]
    out["copies"] = {
        name: [n, b, z]
        for name, n, b, z in q(
            "select e.name, count(*), sum(m.bytes), sum(m.end = m.start) from CUPTI_ACTIVITY_KIND_MEMCPY m "
            "join ENUM_CUDA_MEMCPY_OPER e on e.id = m.copyKind group by e.name"
        )
    }
    kern = q("select start, end from CUPTI_ACTIVITY_KIND_KERNEL")
    out["kernel_busy_ns"] = union_length(kern)
    out["kernel_first_start_ns"] = min(s for s, _ in kern)
    out["kernel_last_end_ns"] = max(e for _, e in kern)
    out["zero_duration_gpu_events"] = q(
        "select (select count(*) from CUPTI_ACTIVITY_KIND_KERNEL where end = start)"
        " + (select count(*) from CUPTI_ACTIVITY_KIND_MEMCPY where end = start)"
    )[0][0]
    out["runtime_linked_to_kernels"] = q(
        "select count(*) from CUPTI_ACTIVITY_KIND_KERNEL k join CUPTI_ACTIVITY_KIND_RUNTIME r "
        "on r.correlationId = k.correlationId"
    )[0][0]
    out["nvtx_most_common"] = q("select text, count(*) from NVTX_EVENTS group by text order by 2 desc limit 1")[0]
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "tests/data/traces"
    for f in KINETO:
        print(f)
        for k, v in kineto("%s/%s" % (root, f)).items():
            print("   ", k, v)
    print(NSYS)
    for k, v in nsys("%s/%s" % (root, NSYS)).items():
        print("   ", k, v)


if __name__ == "__main__":
    main()
