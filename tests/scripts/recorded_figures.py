#!/usr/bin/env python3
"""Independent figures for the traces this project recorded (tests/data/traces/h100_*, h200_*;
PROVENANCE.md, "Recorded by this project"), standard library only (gzip, json, decimal).

The numbers this prints are pinned in tests/it/trace_recorded.rs; offcert's importers, audit and
caching-allocator model must reproduce them. Run from the repository root:

    python3 tests/scripts/recorded_figures.py tests/data/traces

Times are integer nanoseconds: Kineto `ts` (fractional µs, relative) x 1000 + baseTimeNanoseconds,
as exact decimals.
"""
import gzip
import json
import sys
from decimal import Decimal

MLP = ["h100_mlp_saveoncpu", "h100_mlp_plain"]
CHAIN = ["h200_chain_gated", "h200_chain_eager"]


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f, parse_float=Decimal)


def ns(d, ts):
    v = Decimal(ts) * 1000
    assert v == v.to_integral_value(), ts
    return int(v) + int(d.get("baseTimeNanoseconds", 0))


def kineto(path):
    d = load(path)
    ev = d["traceEvents"]
    out = {}
    for kind in ("HtoD", "DtoH", "DtoD"):
        cs = [e for e in ev if e.get("cat") == "gpu_memcpy" and kind in e["name"]]
        out[kind] = (len(cs), sum(int(e["args"]["bytes"]) for e in cs))
        out[kind + "_ns"] = sum(int(Decimal(e["dur"]) * 1000) for e in cs)
    mem = sorted(
        (e for e in ev if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1),
        key=lambda e: Decimal(e["ts"]),
    )
    out["memory_events"] = len(mem)
    base = int(mem[0]["args"]["Total Allocated"]) - int(mem[0]["args"]["Bytes"])
    out["baseline"] = base
    pk = max(mem, key=lambda e: int(e["args"]["Total Allocated"]))  # first maximum
    out["peak_allocated"] = int(pk["args"]["Total Allocated"])
    out["peak_allocated_at_ns"] = ns(d, pk["ts"])
    out["peak_above_baseline"] = out["peak_allocated"] - base
    out["peak_reserved"] = max(int(e["args"]["Total Reserved"]) for e in mem)
    # the first GPU event (kernel, copy or memset): the audit's origin for offsets
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    out["first_gpu_event_ns"] = min(ns(d, e["ts"]) for e in gpu)
    return out


def above(path, model_peak):
    """Instants (after the last event of each) where allocated - baseline > model_peak: the
    first one and the total time above it up to the last memory event."""
    d = load(path)
    mem = sorted(
        (e for e in d["traceEvents"] if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1),
        key=lambda e: Decimal(e["ts"]),
    )
    base = int(mem[0]["args"]["Total Allocated"]) - int(mem[0]["args"]["Bytes"])
    last = {}
    for e in mem:
        last[ns(d, e["ts"])] = int(e["args"]["Total Allocated"])
    inst = sorted(last.items())
    first, total = None, 0
    for k, (t, a) in enumerate(inst):
        if a - base > model_peak:
            first = t if first is None else first
            if k + 1 < len(inst):
                total += inst[k + 1][0] - t
    return first, total


def memsnap(path):
    d = load(path)
    ev = d["device_traces"][0]
    out = {"events": len(ev)}
    for a in ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free"):
        out[a] = sum(1 for e in ev if e["action"] == a)
    out["streams"] = sorted({e["stream"] for e in ev})
    segs, allocs, res, peak = [], 0, 0, 0
    for e in ev:
        if e["action"] == "alloc":
            allocs += 1
        elif e["action"] == "segment_alloc":
            segs.append((allocs, e["size"]))  # made for the next allocation
            res += e["size"]
        elif e["action"] == "segment_free":
            res -= e["size"]
        peak = max(peak, res)
    out["segments"] = segs
    out["reserved_final"] = res
    out["reserved_peak"] = peak
    out["final_segments"] = len(d["segments"])
    out["final_total_size"] = sum(s["total_size"] for s in d["segments"])
    out["final_allocated_size"] = sum(s["allocated_size"] for s in d["segments"])
    live = set()
    unknown = 0
    for e in ev:
        if e["action"] == "alloc":
            live.add(e["addr"])
        elif e["action"] == "free_completed":
            if e["addr"] in live:
                live.remove(e["addr"])
            else:
                unknown += 1
    out["frees_of_earlier_blocks"] = unknown
    out["settings"] = {k: d["allocator_settings"][k] for k in ("expandable_segments", "max_split_size")}
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "tests/data/traces"
    meta = json.load(open(f"{root}/h100_mlp.meta.json"))["parts"]
    for name in MLP:
        f = kineto(f"{root}/{name}.kineto.json.gz")
        part = meta[name.split("_")[-1]]
        f["torch_max_memory_allocated"] = part["max_memory_allocated"]
        f["torch_max_memory_reserved"] = part["max_memory_reserved"]
        print(name, f)
    for name in CHAIN:
        f = kineto(f"{root}/{name}.kineto.json.gz")
        print(name, f)
        inst = json.load(open(f"{root}/{name}.instance.json"))
        print("   ", name, "instance gpu_memory", inst["gpu_memory"])
    # the model's peak of the gated chain (printed by `offcert audit`, pinned in the test)
    print("h200_chain_gated above 117440512:", above(f"{root}/h200_chain_gated.kineto.json.gz", 117440512))
    for name in ("h100_alloc_from_start", "h100_mlp_saveoncpu"):
        print(name, memsnap(f"{root}/{name}.memsnap.json.gz"))
    am = json.load(open(f"{root}/h100_alloc_from_start.meta.json"))["parts"]["allocator"]
    print("h100_alloc_from_start meta", am["max_memory_allocated"], am["max_memory_reserved"])


if __name__ == "__main__":
    main()
