#!/usr/bin/env python3
"""Search a `graph` instance (offcert's JSON, e.g. from `offcert import graph`)
for an order that computes every node exactly once within `gpu_memory`, and
write it as a schedule for `offcert check` to judge.

The search is depth-first over the down-sets D of the DAG (the nodes computed
so far), each visited once. With no recomputation, an output is needed exactly
while some reader is not yet computed, and releasing it after its last reader
is best, so the memory while v runs is the size of v's output and scratch plus
the outputs in D that a node outside D reads: v may follow D when that fits.
Children are tried in a greedy order (most bytes freed first, then smallest
output). It either finds an order, proves there is none (every reachable
down-set visited: every schedule recomputes something), or stops at a limit.

The schedule runs the order back to back (makespan = Σd) and deletes each
output at the end of its last reader (a node without readers at its own end).
Nothing here is a claim: `offcert check INSTANCE SCHEDULE` is.

Usage: graph_order_search.py INSTANCE.json SCHEDULE.json [MAX_DOWNSETS]
"""
import json
import sys


def main():
    inst_path, out_path = sys.argv[1], sys.argv[2]
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else 2_000_000
    g = json.load(open(inst_path))
    nodes = g["nodes"]
    n = len(nodes)
    cap = g["gpu_memory"]
    preds = [sorted(set(x.get("inputs", []))) for x in nodes]
    size = [x["memory"] for x in nodes]
    temp = [x.get("temp", 0) for x in nodes]
    succ = [[] for _ in range(n)]
    for v in range(n):
        for u in preds[v]:
            succ[u].append(v)
    pmask = [sum(1 << u for u in preds[v]) for v in range(n)]
    smask = [sum(1 << s for s in succ[v]) for v in range(n)]
    full = (1 << n) - 1
    parent = {0: None}
    stack = [(0, 0)]  # (down-set, bytes of its outputs still read outside it)
    found = False
    while stack:
        done, live = stack.pop()
        if done == full:
            found = True
            break
        kids = []
        for v in range(n):
            bit = 1 << v
            if done & bit or pmask[v] & ~done or live + size[v] + temp[v] > cap:
                continue
            nxt = done | bit
            if nxt in parent:
                continue
            freed = sum(size[u] for u in preds[v] if smask[u] & ~nxt == 0)
            kept = size[v] if smask[v] else 0
            kids.append((kept - freed, size[v], v, nxt))
        kids.sort(reverse=True)
        for delta, _, v, nxt in kids:
            parent[nxt] = (done, v)
            stack.append((nxt, live + delta))
        if len(parent) > limit:
            break
    if not found:
        why = "stopped at the limit" if stack else "none exists (every down-set visited)"
        print(f"{inst_path}: no order within {cap} B: {why}; {len(parent)} down-sets")
        return 1
    order, d = [], full
    while parent[d]:
        d, v = parent[d]
        order.append(v)
    order.reverse()
    name = [x["name"] for x in nodes]
    start, t = {}, 0
    for v in order:
        start[v] = t
        t += nodes[v]["duration"]
    events = []
    for v in order:
        events.append({"type": "compute", "op": name[v], "start": start[v]})
    for u in range(n):
        last = max(succ[u], key=lambda s: start[s]) if succ[u] else u
        events.append({"type": "delete", "tensor": name[u], "at": start[last] + nodes[last]["duration"]})
    events.sort(key=lambda e: e.get("start", e.get("at")))
    json.dump({"note": f"every node once, order by graph_order_search.py; makespan {t}", "events": events}, open(out_path, "w"), indent=1)
    print(f"{inst_path}: an order of {n} nodes within {cap} B ({len(parent)} down-sets); schedule {out_path}, makespan {t}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
