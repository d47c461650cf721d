#!/usr/bin/env python3
"""Lift the activation paper's chains (instances/paper/activation/*.json) to
`remat_chain` instances in instances/paper/remat/.

Activation layer i (0..L) becomes remat layer i+1, the last activation layer the
loss: u_F, u_B, ex^F -> o_f, ex^B -> o_b as they are; |a_l| = |x_l|, |delta_l| =
|y_l|, and the ASSUMPTION |abar_l| = |x_l| + |y_l| (the activation paper does not
give what a backward keeps beyond its input: we take one more activation-sized
slot). The loss's abar is |x_{L+1}|. M_GPU is the midpoint between the least
feasible memory and the keep-everything peak (RematChain::min_memory and
store_all_peak, mirrored below). Run: python3 scripts/lift_remat.py
"""
import json, os, sys

SRC = "instances/paper/activation"
DST = "instances/paper/remat"


def lift(d):
    L1 = len(d["layers"])
    layers = []
    for i in range(L1 - 1):
        x = d["layers"][i + 1]["x"] if i + 1 < L1 else d["x_last"]
        y = d["layers"][i + 1]["y"] if i + 1 < L1 else d["y_last"]
        s = d["layers"][i]
        layers.append({"u_f": s["u_f"], "u_b": s["u_b"], "a": x, "abar": x + y,
                       "o_f": s["ex_f"], "o_b": s["ex_b"], "delta": y})
    last = d["layers"][L1 - 1]
    loss = {"u_f": last["u_f"], "u_b": last["u_b"], "abar": d["x_last"],
            "o_f": last["ex_f"], "o_b": last["ex_b"]}
    a0 = d["layers"][0]["x"]
    c = {"family": "remat_chain", "name": d["name"] + "-remat", "layers": layers,
         "loss": loss, "a0": a0, "delta0": d["layers"][0]["y"],
         "gpu_memory": 0, "bandwidth": d["bandwidth"]}
    lo, hi = least(c), peak(c)
    c["gpu_memory"] = (lo + hi) // 2
    c["note"] = (f"Lifted from instances/paper/activation/{d['name']}.json by "
                 f"scripts/lift_remat.py. ASSUMPTION: |abar_l| = |x_l| + |y_l| (one more "
                 f"activation-sized slot kept for the backward; the activation paper "
                 f"does not say), |delta_l| = |y_l|, loss abar = |x_L+1|. Least feasible "
                 f"memory {lo} B, keep-everything peak {hi} B, gpu_memory their midpoint. "
                 f"Source note: {d.get('note', '')}")
    return c


def dims(c):
    L = len(c["layers"])
    a = [c["a0"]] + [l["a"] for l in c["layers"]] + [0]
    s = [0] + [l["abar"] - l["a"] for l in c["layers"]] + [c["loss"]["abar"]]
    dd = [c.get("delta0", c["a0"])] + [l.get("delta", l["a"]) for l in c["layers"]] + [0]
    of = [0] + [l["o_f"] for l in c["layers"]] + [c["loss"]["o_f"]]
    ob = [0] + [l["o_b"] for l in c["layers"]] + [c["loss"]["o_b"]]
    return L, a, s, dd, of, ob


def least(c):
    L, a, s, d, of, ob = dims(c)
    m = 0
    for k in range(1, L + 2):
        inp = a[k - 1] if k <= L else a[L]
        m = max(m, inp + a[k] + s[k] + of[k], inp + a[k] + s[k] + d[k] + d[k - 1] + ob[k])
    return m


def peak(c):
    L, a, s, d, of, ob = dims(c)
    held = a[0]
    p = held
    for k in range(1, L + 2):
        p = max(p, held + a[k] + s[k] + of[k])
        held += a[k] + s[k]
    for k in range(L + 1, 0, -1):
        p = max(p, held + d[k - 1] + ob[k])
        held = held + d[k - 1] - a[k] - s[k] - d[k]
    return p


def main():
    os.makedirs(DST, exist_ok=True)
    for f in sorted(os.listdir(SRC)):
        if not f.endswith(".json"):
            continue
        d = json.load(open(os.path.join(SRC, f)))
        c = lift(d)
        out = os.path.join(DST, f.replace(".json", "-remat.json"))
        json.dump(c, open(out, "w"), indent=1)
        open(out, "a").write("\n")
        print(out, len(c["layers"]), "layers", c["gpu_memory"], "B", file=sys.stderr)


if __name__ == "__main__":
    main()
