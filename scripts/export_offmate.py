#!/usr/bin/env python3
"""Write an offcert `offmate` instance (JSON) from a solved rockmate `Offmate`.

Run it where rockmate, rkgb and torch are installed (offcert itself never
unpickles anything):

    python3 scripts/export_offmate.py --pickle-dir DIR --id ID \
        --gpu-memory BYTES --cpu-memory BYTES -o model.offmate.json
    # or, from Python, after Offmate(model, sample, budget, ...) has solved:
    from export_offmate import from_rockmate, dump
    dump(from_rockmate(offmate_obj, gpu_memory=..., cpu_memory=...), "model.offmate.json")

What it reads (FAMILIES.md §5.1; rockmate HEAD aabc29b):
  - per block, per option: `md.list_list_sched[i][o]` (an `OpSchedule`):
    fwd_time, bwd_time, fwd_wait_time, bwd_wait_time (ms), mem, offload_mem,
    fwd_overhead, bwd_overhead (bytes);
  - parameter groups: `md.hgraph.parameter_groups` (or `hg.parameter_groups`):
    per group its tensors' names, `mem` and `info.requires_grad`, and the blocks
    using it;
  - interface sizes: each block's output data node `mem`;
  - `optimize_metrics`: cpu_optimize_speed, gpu_optimize_speed (bytes/ms),
    optimizer_states_factor (k); `bandwidth` (bytes/ms).
Conventions (each written into the file's `note`):
  - a tick is `--tick-ns` nanoseconds (default 1000 = 1 µs); times round UP;
  - speeds (β, α_G, α_C) round DOWN, as an exact ratio of bytes per ticks;
  - T_t^o = time + wait time (the paper: T includes waiting for the option's
    own transfers, §4.1);
  - S_i^o = mem − offload_mem (what stays on the GPU), O_i^o = offload_mem;
  - H = `--cpu-management-ms` (the paper's 50 ms; rockmate's ILP uses 100).
The JSON side is tested in offcert on tests/data/offmate_export_sample.json,
which `--sample` writes without rockmate.

`--solution FILE` also writes OFFMATE's own plan (format offmate-solution/1:
per block the chosen option, the parameters and states on the GPU at step 0,
per step the optimizer steps with their device and the offloads, deletes and
prefetches of parameters, gradients and states in rockmate's order), for
`offcert import offmate-solution INSTANCE FILE`; `--sample --solution FILE`
writes a plan for the sample instance.
"""
import argparse, json, math, sys
from fractions import Fraction

TICK_NS = 1000


def ticks(ms, tick_ns=TICK_NS):
    """Milliseconds to whole ticks, rounded up."""
    return int(math.ceil(Fraction(str(ms)) * 1_000_000 / tick_ns))


def speed(bytes_per_ms, tick_ns=TICK_NS):
    """Bytes per ms to an exact {bytes, ticks} ratio per tick, rounded down."""
    ticks_per_ms = Fraction(1_000_000, tick_ns)
    f = Fraction(str(bytes_per_ms)) / ticks_per_ms  # bytes per tick
    num = int(f * 1_000_000)  # round down to 1e-6 bytes per tick
    if num <= 0:
        raise ValueError(f"speed {bytes_per_ms} B/ms rounds to zero")
    g = math.gcd(num, 1_000_000)
    return {"bytes": num // g, "ticks": 1_000_000 // g}


def option(name, fwd_ms, bwd_ms, mem, offload_mem, fwd_overhead, bwd_overhead,
           fwd_wait_ms=0.0, bwd_wait_ms=0.0, tick_ns=TICK_NS):
    return {"name": name,
            "t_fwd": ticks(fwd_ms + fwd_wait_ms, tick_ns),
            "t_bwd": ticks(bwd_ms + bwd_wait_ms, tick_ns),
            "saved": max(int(mem) - int(offload_mem), 0),
            "offloaded": int(offload_mem),
            "fwd_overhead": max(int(fwd_overhead), 0),
            "bwd_overhead": max(int(bwd_overhead), 0)}


def build(name, blocks, params, k, gpu_speed_b_ms, cpu_speed_b_ms, bandwidth_b_ms,
          gpu_memory, cpu_memory, input_bytes, cpu_management_ms=50.0,
          tick_ns=TICK_NS, note=""):
    """The offmate JSON from plain data: blocks = [{name, out, params, options}]
    with options already built by `option`, params = [{name, bytes, trainable}]."""
    return {
        "family": "offmate", "name": name,
        "note": (note + " " if note else "") +
                f"Exported by scripts/export_offmate.py; tick = {tick_ns} ns, times rounded up, "
                "speeds rounded down; T = time + wait; S = mem - offload_mem; O = offload_mem.",
        "input": int(input_bytes), "blocks": blocks, "params": params,
        "optimizer": {"states": int(k), "gpu_speed": speed(gpu_speed_b_ms, tick_ns),
                      "cpu_speed": speed(cpu_speed_b_ms, tick_ns)},
        "cpu_management": ticks(cpu_management_ms, tick_ns),
        "gpu_memory": int(gpu_memory), "cpu_memory": int(cpu_memory),
        "bandwidth": speed(bandwidth_b_ms, tick_ns), "duplex": "full_duplex"}


def _need(obj, *path):
    """obj.a.b..., or a clear error naming what this rockmate version lacks."""
    cur = obj
    for p in path:
        if not hasattr(cur, p):
            raise SystemExit(f"export_offmate: rockmate object has no `{'.'.join(path)}` "
                             f"(missing `{p}`); see FAMILIES.md §5.1 for the expected layout")
        cur = getattr(cur, p)
    return cur


def from_rockmate(om, gpu_memory, cpu_memory, name="rockmate-offmate",
                  cpu_management_ms=50.0, tick_ns=TICK_NS):
    """Walk a solved rockmate `Offmate` (or `HILP` model holder) as FAMILIES.md §5.1 lists."""
    md = _need(om, "md") if hasattr(om, "md") else om
    hg = getattr(md, "hgraph", None) or _need(om, "hg")
    scheds = _need(md, "list_list_sched")
    blocks, params, seen = [], [], set()
    users = {}
    for gi, pg in enumerate(_need(hg, "parameter_groups")):
        for blk in getattr(pg, "blocks", getattr(pg, "users", [])):
            users.setdefault(int(blk), []).append(gi)
        for p in getattr(pg, "parameters", getattr(pg, "params", [])):
            pname = getattr(p, "param_name", getattr(p, "name", None))
            if pname in seen:
                continue
            seen.add(pname)
            params.append({"name": pname, "bytes": int(p.mem),
                           "trainable": bool(p.info.requires_grad)})
    names_of = {}
    for gi, pg in enumerate(hg.parameter_groups):
        names_of[gi] = [getattr(p, "param_name", getattr(p, "name", None))
                        for p in getattr(pg, "parameters", getattr(pg, "params", []))]
    interfaces = getattr(hg, "interfaces_mem", None)
    for i, opts in enumerate(scheds):
        options = [option(f"o{o}", s.fwd_time, s.bwd_time, s.mem, s.offload_mem,
                          s.fwd_overhead, s.bwd_overhead,
                          getattr(s, "fwd_wait_time", 0.0), getattr(s, "bwd_wait_time", 0.0),
                          tick_ns) for o, s in enumerate(opts)]
        pnames = [n for gi in users.get(i, []) for n in names_of[gi]]
        out = int(interfaces[i]) if interfaces is not None else 0
        blocks.append({"name": f"block{i}", "out": out, "params": pnames, "options": options})
    metrics = _need(om, "optimize_metrics") if hasattr(om, "optimize_metrics") else md.optimize_metrics
    bw = getattr(om, "bandwidth", None) or _need(md, "bandwidth")
    return build(name, blocks, params, metrics["optimizer_states_factor"],
                 metrics["gpu_optimize_speed"], metrics["cpu_optimize_speed"], bw,
                 gpu_memory, cpu_memory, getattr(hg, "input_mem", 0),
                 cpu_management_ms, tick_ns)


# ---------------------------------------------------------------------------
# OFFMATE's solution (offcert `import offmate-solution`, format offmate-solution/1).
#
# Read from a solved rockmate `ModelPULPOffload` `md` after
# `rockmate.solvers.ilp.ilp_schedule.schedule(md)` has run (rockmate HEAD
# aabc29b, solvers/ilp/ilp_schedule.py), which leaves on `md`:
#   - `md.active_steps`: the (t, k) steps, in the period's order; `k` indexes
#     `md.hgraph.list_HCNs` (`.is_fwd`), `md.hcn2sub_c[k]` is the block (the
#     index into `md.list_list_sched`, as in `from_rockmate`; None: the loss);
#   - `md.Comp[t, k, o]` (read with `md.sol`): the option of the block;
#   - `md.opt_ops`, `md.ofl_ops`, `md.del_ops`, `md.prf_ops`: per step the
#     `OptimizeOp` (`.is_cpu`, `.list_params`), `OffloadOp`, `DeleteOp`,
#     `PrefetchOp` whose `.target` is a `Parameter` (`.param_name`,
#     `.is_grad`, `.is_optim_states`); `AllocateOp`s and activation targets
#     are left out (offcert's realiser places activation transfers itself);
#   - `op_sched.init_alive_status`: names "P param" / "P param_optim_states"
#     alive at step 0.
# Within a step the ops keep `schedule_step`'s order: optimizer steps,
# offloads and deletes of other blocks' parameters, prefetches, then the
# offloads and deletes of the step's own block's parameters. A step without a
# block (the loss) is merged into the step before it.


def _param_target(op):
    """(param name, tensor) of an op on a Parameter, or None (activations, buffers)."""
    tgt = getattr(op, "target", None)
    if tgt is None or not hasattr(tgt, "pnode"):
        return None
    tensor = "grad" if getattr(tgt, "is_grad", False) else \
        "states" if getattr(tgt, "is_optim_states", False) else "param"
    return tgt.pnode.param_name, tensor


def _solution_op(op):
    kind = type(op).__name__
    if kind == "OptimizeOp":
        names = list(getattr(op, "list_params", []))
        dev = "cpu" if getattr(op, "is_cpu", False) else "gpu"
        return [{"op": "optimize", "param": n, "device": dev} for n in names]
    word = {"OffloadOp": "offload", "PrefetchOp": "prefetch", "DeleteOp": "delete"}.get(kind)
    pt = _param_target(op) if word else None
    if pt is None:
        return []
    return [{"op": word, "param": pt[0], "tensor": pt[1]}]


def solution_steps(L, active, options_of, ops_of):
    """The solution's steps in offcert's order from plain data: `active` =
    [(block or None, is_fwd)] in the period's order, `ops_of(i)` = the i-th
    active step's ops as dicts, `options_of` = {block: option}."""
    steps = [{"ops": []} for _ in range(2 * L)]
    last = None
    for i, (blk, fwd) in enumerate(active):
        t = last if blk is None else (blk if fwd else 2 * L - 1 - blk)
        if t is None:
            continue
        steps[t]["ops"].extend(ops_of(i))
        last = t
    return steps


def solution_from_rockmate(md, op_sched, name="rockmate-offmate"):
    """OFFMATE's plan as offcert's `offmate-solution/1` JSON (see above)."""
    L = len(_need(md, "list_list_sched"))
    hcns = _need(md, "hgraph", "list_HCNs")
    active, per_step, options = [], [], {}
    for (t, k) in _need(md, "active_steps"):
        blk, fwd = md.hcn2sub_c[k], bool(hcns[k].is_fwd)
        active.append((blk, fwd))
        if blk is not None and fwd:
            for o in range(md.nSched[k]):
                if md.sol(md.Comp[t, k, o]):
                    options[blk] = o
                    break
        own = set(p.param_name for w in md.hcn2param[k] for p in md.parameters[w])
        is_own = lambda op: (_param_target(op) or ("", ""))[0] in own and \
            type(op).__name__ in ("OffloadOp", "DeleteOp")
        ops = list(md.opt_ops[t, k])
        ops += [op for op in md.ofl_ops[t, k] if not is_own(op)]
        ops += [op for op in md.del_ops[t, k] if not is_own(op)]
        ops += list(md.prf_ops[t, k])
        ops += [op for op in md.ofl_ops[t, k] + md.del_ops[t, k] if is_own(op)]
        per_step.append([d for op in ops for d in _solution_op(op)])
    alive = getattr(op_sched, "init_alive_status", {}) or {}
    initial = {"params": sorted(n[:-len(" param")] for n, a in alive.items()
                                if a and n.endswith(" param")),
               "states": sorted(n[:-len(" param_optim_states")] for n, a in alive.items()
                                if a and n.endswith(" param_optim_states"))}
    return {"format": "offmate-solution/1", "instance": name,
            "note": "Exported by scripts/export_offmate.py from rockmate's solved ModelPULPOffload.",
            "options": [options.get(b, 0) for b in range(L)], "initial": initial,
            "steps": solution_steps(L, active, options, lambda i: per_step[i])}


def sample_solution():
    """A plan for `sample()` in the solution format (no rockmate needed): every
    parameter on the GPU, Adam on the GPU after its last backward, except
    layer 0's q weight, updated on the CPU during the step after its backward
    and prefetched before its forward."""
    L = 3
    q = "layers.0.attn.q.weight"
    active = [(0, True), (1, True), (2, True), (None, True), (2, False), (1, False), (0, False)]
    ops = {i: [] for i in range(len(active))}
    ops[4] = [{"op": "optimize", "param": "lm_head.weight"}]
    ops[5] = [{"op": "offload", "param": q, "tensor": "grad"}, {"op": "delete", "param": q}]
    ops[6] = [{"op": "optimize", "param": q, "device": "cpu"},
              {"op": "optimize", "param": "embed.weight"},
              {"op": "prefetch", "param": q}]
    names = ["embed.weight", q, "layers.0.norm.weight", "lm_head.weight"]
    return {"format": "offmate-solution/1", "instance": "export-sample",
            "note": "Hand-written sample plan for the sample instance.",
            "options": [0, 2, 0],
            "initial": {"params": names, "states": ["embed.weight", "lm_head.weight"]},
            "steps": solution_steps(L, active, {}, lambda i: ops[i])}


def sample():
    """Two Llama-like blocks with rockmate-shaped numbers (no rockmate needed)."""
    p = lambda n, b, t=True: {"name": n, "bytes": b, "trainable": t}
    params = [p("embed.weight", 524288000), p("layers.0.attn.q.weight", 67108864),
              p("layers.0.norm.weight", 16384, False), p("lm_head.weight", 524288000)]
    blocks = [
        {"name": "embed", "out": 33554432, "params": ["embed.weight"],
         "options": [option("none", 1.25, 2.5, 0, 0, 0, 0)]},
        {"name": "layer0", "out": 33554432,
         "params": ["layers.0.attn.q.weight", "layers.0.norm.weight"],
         "options": [option("no-remat", 95.0, 190.0, 1275068416, 0, 134217728, 268435456),
                     option("full-remat", 95.0, 285.0, 33554432, 0, 134217728, 268435456),
                     option("cheap", 95.0, 210.5, 1275068416, 1241513984, 134217728, 268435456,
                            fwd_wait_ms=3.2, bwd_wait_ms=0.4)]},
        {"name": "head", "out": 64000, "params": ["lm_head.weight"],
         "options": [option("none", 30.0, 60.0, 0, 0, 262144000, 262144000)]}]
    return build("export-sample", blocks, params, 2, 16600000.0, 1100000.0, 10400000.0,
                 10737418240, 137438953472, 16384, 50.0,
                 note="Hand-written sample in the exporter's output format (numbers are "
                      "placeholders shaped like rockmate's, not measurements).")


def dump(d, path):
    with open(path, "w") as f:
        json.dump(d, f, indent=1)
        f.write("\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sample", action="store_true", help="write the no-rockmate sample")
    ap.add_argument("--solution", metavar="FILE",
                    help="also write OFFMATE's plan (offmate-solution/1) to FILE")
    ap.add_argument("--pickle-dir"), ap.add_argument("--id")
    ap.add_argument("--gpu-memory", type=int), ap.add_argument("--cpu-memory", type=int)
    ap.add_argument("--cpu-management-ms", type=float, default=50.0)
    ap.add_argument("--tick-ns", type=int, default=TICK_NS)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args(argv)
    if a.sample:
        dump(sample(), a.output)
        if a.solution:
            dump(sample_solution(), a.solution)
        return 0
    if not (a.pickle_dir and a.id and a.gpu_memory and a.cpu_memory):
        ap.error("--pickle-dir, --id, --gpu-memory and --cpu-memory are needed")
    try:
        from rockmate import Rockmate  # noqa: F401  (rockmate must be importable)
        import pickle
    except ImportError as e:
        raise SystemExit(f"export_offmate: needs rockmate ({e})")
    with open(f"{a.pickle_dir}/{a.id}_offmate.pkl", "rb") as f:
        om = pickle.load(f)  # the user's own pickle, in the user's rockmate environment
    dump(from_rockmate(om, a.gpu_memory, a.cpu_memory, a.id, a.cpu_management_ms,
                       a.tick_ns), a.output)
    if a.solution:
        md = _need(om, "md") if hasattr(om, "md") else om
        op_sched = getattr(om, "op_sched", None)
        if op_sched is None:
            from rockmate.solvers.ilp.ilp_schedule import schedule
            op_sched = schedule(md)
        dump(solution_from_rockmate(md, op_sched, a.id), a.solution)
    return 0


if __name__ == "__main__":
    sys.exit(main())
