#!/usr/bin/env python3
"""Compare an `offcert import et` instance with the Kineto memory events of the same step.

    python3 scripts/et_vs_kineto.py INSTANCE.json KINETO.json[.gz]

INSTANCE.json is what `offcert import et TRACE --kineto KINETO -o INSTANCE.json` wrote (function
names `f{i} NAME (rf_id R)`, variables with their bytes). The script (Python, standard library)
matches the instance's functions to Kineto's top-level CPU operators the way the importer does
(names as a subsequence, at most 64 operators skipped, the start that links most), then reports:

- per function, the instance's no-offload memory (persistent variables, and every other variable
  from the function that writes it to the end of its last use) against the allocator's
  `Total Allocated` (its largest value while the operator runs, the value before it included);
- the memory the allocator held before the step that no variable names (its `Total Allocated`
  before the first function, less the persistent variables);
- per written variable, the allocation it got (the block of its size, rounded to 512 B, allocated
  while the function that writes it runs; the longest-lived of equal ones), and where the
  allocator freed that block: in the function of the variable's last use, before it (the instance
  holds the variable longer than the program did), or after it (or never, within the step);
- the allocations no variable accounts for (workspaces, temporaries, blocks larger than asked).

It decides nothing; docs/RESULTS.md and models/TRACES.md quote its output.
"""

import bisect
import gzip
import json
import re
import sys
from collections import Counter

LOOKAHEAD = 64


def load_json(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def kineto(path, op_names):
    ev = load_json(path)
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    mem = [e for e in ev if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1]
    mem.sort(key=lambda e: e["ts"])
    cpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "operator")
           and e["name"] in op_names]
    cpu.sort(key=lambda e: ((e["pid"], e["tid"]), e["ts"], -e["dur"]))
    tops, i = [], 0
    while i < len(cpu):
        e, j = cpu[i], i + 1
        while j < len(cpu) and (cpu[j]["pid"], cpu[j]["tid"]) == (e["pid"], e["tid"]) \
                and cpu[j]["ts"] < e["ts"] + e["dur"]:
            j += 1
        tops.append(e)
        i = j
    tops.sort(key=lambda e: e["ts"])
    return mem, tops


def order_match(names, ops):
    best = (0, [None] * len(names))
    for s in (s for s in range(len(ops)) if ops[s]["name"] == names[0]):
        m, pos, linked = [None] * len(names), s, 0
        for i, n in enumerate(names):
            for d, o in enumerate(ops[pos:pos + LOOKAHEAD]):
                if o["name"] == n:
                    m[i], pos, linked = pos + d, pos + d + 1, linked + 1
                    break
        if linked > best[0]:
            best = (linked, m)
    return best[1]


def main(inst_path, kin_path):
    inst = load_json(inst_path)
    funcs = inst["functions"]
    size = {v["name"]: v["bytes"] for v in inst["variables"]}
    pers = set(inst.get("persistent", []))
    names = [re.match(r"f\d+ (.*) \(rf_id -?\d+\)$", f["name"]).group(1) for f in funcs]
    span, wrote = {}, {}
    for i, f in enumerate(funcs):
        for k in ("reads", "writes", "modifies"):
            for v in f.get(k, []):
                a, b = span.get(v, (i, i))
                span[v] = (min(a, i), max(b, i))
        for v in f.get("writes", []):
            wrote[v] = i
    base = sum(size[v] for v in pers if v in span)
    model = [base] * len(funcs)
    for v, (a, b) in span.items():
        if v not in pers:
            for i in range(a, b + 1):
                model[i] += size[v]
    mem, tops = kineto(kin_path, set(names))
    match = order_match(names, tops)
    if any(m is None for m in match):
        sys.exit(f"{sum(m is None for m in match)} functions not linked to Kineto operators")
    starts = [tops[m]["ts"] for m in match]
    ts = [e["ts"] for e in mem]
    real = []
    for m in match:
        e = tops[m]
        a = bisect.bisect_left(ts, e["ts"])
        b = bisect.bisect_right(ts, e["ts"] + e["dur"])
        vals = [x["args"]["Total Allocated"] for x in mem[max(a - 1, 0):b]]
        real.append(max(vals))
    first = bisect.bisect_left(ts, starts[0])
    before = mem[first - 1]["args"]["Total Allocated"] if first > 0 else \
        mem[0]["args"]["Total Allocated"] - mem[0]["args"]["Bytes"]
    pk = max(range(len(funcs)), key=lambda i: model[i])
    rk = max(range(len(funcs)), key=lambda i: real[i])
    diff = [real[i] - model[i] for i in range(len(funcs))]
    print(f"functions {len(funcs)}, variables {len(size)} ({len(pers)} persistent, {base} B)")
    print(f"instance peak {model[pk]} B at {funcs[pk]['name']} (allocator there: {real[pk]} B)")
    print(f"allocator peak {real[rk]} B at {funcs[rk]['name']} (instance there: {model[rk]} B)")
    print(f"allocated before the first function {before} B; named by no variable {before - base} B")
    print(f"allocator - instance per function: least {min(diff)} B, largest {max(diff)} B")
    # blocks: (alloc ts, free ts or None, bytes)
    live, blocks = {}, []
    for e in mem:
        a = e["args"]
        if a["Bytes"] > 0:
            live[a["Addr"]] = (e["ts"], a["Bytes"])
        elif a["Addr"] in live:
            t0, b = live.pop(a["Addr"])
            blocks.append((t0, e["ts"], b))
    blocks += [(t0, None, b) for t0, b in live.values()]

    def func_at(t):
        return bisect.bisect_right(starts, t) - 1

    by_func = {}
    for b in blocks:
        by_func.setdefault(func_at(b[0]), []).append(b)
    same, early, late, never, unmatched_vars = 0, [], Counter(), 0, 0
    for v, i in wrote.items():
        want = (size[v] + 511) // 512 * 512
        cand = by_func.get(i, [])
        ks = [k for k, b in enumerate(cand) if b[2] == want]
        if not ks:
            unmatched_vars += 1
            continue
        k = max(ks, key=lambda k: (cand[k][1] is None, cand[k][1] or 0))
        b = cand.pop(k)
        last = span[v][1]
        if b[1] is None:
            never += 1
            continue
        fr = func_at(b[1])
        if fr < last:
            early.append((v, size[v], funcs[i]["name"], funcs[fr]["name"], funcs[last]["name"]))
        elif fr > last:
            late[names[fr]] += 1
        else:
            same += 1
    print(f"written variables {len(wrote)}: {len(wrote) - unmatched_vars} matched to an allocation "
          f"of their size in their function ({unmatched_vars} not: the block is larger)")
    print(f"  freed by the allocator in the function of their last use: {same}")
    print(f"  freed before their last use (the instance holds them longer): {len(early)}")
    for x in early[:20]:
        print("    ", x)
    print(f"  freed after their last use: {sum(late.values())} (at {late.most_common(6)})")
    print(f"  not freed within the step: {never}")
    rest = Counter()
    for i, bs in by_func.items():
        for b in bs:
            rest[(names[i] if 0 <= i < len(names) else "(before)", b[2])] += 1
    print("allocations no variable accounts for, largest first (operator, bytes, count):")
    for (n, b), c in sorted(rest.items(), key=lambda x: -x[0][1])[:8]:
        print(f"  {n} {b} x{c}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
