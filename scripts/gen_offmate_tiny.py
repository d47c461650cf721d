#!/usr/bin/env python3
"""Write random tiny `offmate` instances with CPU Adam steps (issue 24).

Ranges (as `tests/it/common/offmate_gen.rs::tiny_adam_instance`): 1-2 blocks,
1-2 options each (t_fwd 1-2, t_bwd 1-3, stored 0-3 B, nothing offloaded), one
parameter per block (1-4 B, trainable with probability 3/4), k 0-1, alpha_G
and alpha_C 1-2 B/tick, beta 1-4 B/tick, H = 0, full duplex (2/3) or half,
M_CPU out of reach, M_GPU everything (2/5) or 50-95 % of it (3/5).

Usage: scripts/gen_offmate_tiny.py OUT_DIR [COUNT] [SEED]
(docs/RESULTS.md, "Exact optima of tiny OFFMATE instances": COUNT 40, SEED 24).
"""
import json
import os
import random
import sys


def instance(i, rnd):
    blocks, params = [], []
    for b in range(rnd.randint(1, 2)):
        name = f"w{b + 1}"
        params.append({"name": name, "bytes": rnd.randint(1, 4),
                       "trainable": rnd.random() < 0.75})
        options = [{"t_fwd": rnd.randint(1, 2), "t_bwd": rnd.randint(1, 3),
                    "saved": rnd.randint(0, 3), "offloaded": 0}
                   for _ in range(rnd.randint(1, 2))]
        blocks.append({"name": f"b{b + 1}", "out": rnd.randint(1, 2),
                       "params": [name], "options": options})
    k = rnd.randint(0, 1)
    inp = rnd.randint(1, 2)
    everything = (inp + sum(p["bytes"] * (k + 2) for p in params)
                  + sum(2 * b["out"] + max(o["saved"] for o in b["options"])
                        for b in blocks))
    tight = rnd.random() < 0.6
    gpu = max(1, everything * rnd.randint(50, 95) // 100) if tight else everything
    return {"family": "offmate", "name": f"r{i}",
            "note": "random tiny instance (scripts/gen_offmate_tiny.py)",
            "input": inp, "blocks": blocks, "params": params,
            "optimizer": {"states": k, "gpu_speed": rnd.randint(1, 2),
                          "cpu_speed": rnd.randint(1, 2)},
            "cpu_management": 0, "gpu_memory": gpu,
            "cpu_memory": everything * 4 + 64,
            "bandwidth": rnd.randint(1, 4),
            "duplex": rnd.choice(["full_duplex", "full_duplex", "half_duplex"])}


def main():
    out = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    rnd = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 24)
    os.makedirs(out, exist_ok=True)
    for i in range(count):
        with open(os.path.join(out, f"r{i:02d}.json"), "w") as f:
            json.dump(instance(i, rnd), f)


if __name__ == "__main__":
    main()
