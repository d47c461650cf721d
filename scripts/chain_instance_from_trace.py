#!/usr/bin/env python3
"""Re-time a recorded chain instance from its own Kineto trace, in 1 ns ticks.

    python3 scripts/chain_instance_from_trace.py TRACE.json[.gz] RECORDED.instance.json OUT.instance.json

`scripts/record_offload_step.py` writes the chain runtime's instance with durations timed in
warm-up steps; a profiled step runs at other speeds, so rule *duration* would fire on every op
(models/TRACES.md: "build the instance from the measured durations to audit the other rules
alone"). This keeps the recorded sizes and temporaries and takes from the trace, exactly
(decimal µs with ns digits, no floats):

* u_f, u_b: the span of the kernels inside each `fwd:F{i}` / `bwd:B{i}` GPU annotation, in ns;
* the bandwidth: the fastest host<->device copy, as bytes per ns (the exact fraction
  bytes / duration), so that no real copy is faster than the model allows (R5).

Audit with `instances/traces/pytorch-chain-ns.mapping.json` (tick_ns = 1). Standard library only.
"""

import decimal
import gzip
import json
import re
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f, parse_float=decimal.Decimal)


def ns(us):
    value = decimal.Decimal(us) * 1000
    if value != value.to_integral_value():
        raise SystemExit(f"{us} µs is not a whole number of ns")
    return int(value)


def kernel_span(annotation, kernels):
    """A compute range is timed by the kernels inside it on its stream, first start to last end
    (as `offcert audit` times it: src/trace/mapping.rs), not by the range's own bounds."""
    start = ns(annotation["ts"])
    end = start + ns(annotation["dur"])
    inside = [(s, e) for tid, s, e in kernels if tid == annotation.get("tid") and start <= s and e <= end]
    if not inside:
        raise SystemExit(f"no kernel inside {annotation['name']}")
    return max(e for _, e in inside) - min(s for s, _ in inside)


def main():
    trace_path, recorded_path, out_path = sys.argv[1:4]
    events = load(trace_path)["traceEvents"]
    with open(recorded_path) as f:
        inst = json.load(f)
    durations = {}
    fastest = None
    kernels = [
        (e.get("tid"), ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        for e in events
        if e.get("cat") == "kernel"
    ]
    for e in events:
        cat, name = e.get("cat"), e.get("name", "")
        if cat == "gpu_user_annotation":
            m = re.fullmatch(r"(fwd|bwd):([FB])(\d+)", name)
            if m:
                durations[(m.group(2), int(m.group(3)))] = kernel_span(e, kernels)
        elif cat == "gpu_memcpy" and ("HtoD" in name or "DtoH" in name):
            size, dur = int(e["args"]["bytes"]), ns(e["dur"])
            if fastest is None or size * fastest[1] > fastest[0] * dur:
                fastest = (size, dur)
    for i, row in enumerate(inst["layers"]):
        row["u_f"] = durations[("F", i)]
        row["u_b"] = durations[("B", i)]
    inst["bandwidth"] = {"bytes": fastest[0], "ticks": fastest[1]}
    inst["note"] = (
        inst.get("note", "")
        + " Re-timed from its own trace by scripts/chain_instance_from_trace.py: 1 tick = 1 ns; "
        "u_f/u_b are the GPU annotation ranges' lengths, the bandwidth the fastest copy's bytes "
        "per ns (an exact fraction)."
    )
    with open(out_path, "w") as f:
        json.dump(inst, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
