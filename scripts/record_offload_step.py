#!/usr/bin/env python3
"""Record real training steps that offload, for offcert's trace tests.

Run on a machine with a CUDA GPU and PyTorch (>= 2.1):

    python3 scripts/record_offload_step.py OUT_DIR [--small] [--chain-only [--eager-prefetch]]
    python3 scripts/record_offload_step.py OUT_DIR --allocator-only   # in a fresh process
    python3 scripts/record_offload_step.py OUT_DIR --models   # ResNet-18 and a small GPT-2

It writes, into OUT_DIR (every trace gzip'd JSON, our own data, MIT like the project):

* ``saveoncpu.kineto.json.gz`` and ``saveoncpu.et.json.gz``: one training step of an MLP chain
  under ``torch.autograd.graph.save_on_cpu(pin_memory=True)`` (every tensor autograd saves goes
  to pinned host memory in the forward and comes back in the backward), profiled with
  ``profile_memory=True, record_shapes=True`` and, in the same step of the same process, an
  execution trace (``ExecutionTraceObserver``).
* ``plain.kineto.json.gz`` and ``plain.et.json.gz``: the same step without offloading.
* ``saveoncpu.memsnap.json.gz``: the caching allocator's own record of the offloading step
  (``torch.cuda.memory._record_memory_history``, then ``_snapshot()``), stack frames dropped:
  ``device_traces`` (alloc, free_requested, free_completed, segment_alloc, segment_free, ...)
  and ``segments``.
* ``chain.kineto.json.gz`` and ``chain.instance.json``: a hand-written chain runtime (Linear +
  ReLU layers, forward and backward written out) that executes an ``activation_chain`` schedule
  on two CUDA streams, each step in a ``record_function`` range named as
  ``instances/traces/pytorch-offload.mapping.json`` expects (``fwd:F3``, ``bwd:B3``,
  ``offload:x3``, ``prefetch:x3``). The instance has the real byte sizes, the temporaries measured
  on the device (allocator peaks) and the durations measured in warm-up steps, in µs ticks.
* with ``--eager-prefetch`` the chain runtime issues each prefetch as soon as the copy stream is
  free instead of when B_i is next (with the CPU ahead of the GPU that is during the forward);
* ``--allocator-only`` (its own process): ``alloc.memsnap.json.gz``, the allocator's record from
  before the first CUDA allocation through three save_on_cpu steps.
* ``--models``: ``resnet18.{kineto,et}.json.gz`` and ``gpt2small.{kineto,et}.json.gz``, one
  save_on_cpu training step each of torchvision's ResNet-18 and a 4-layer GPT-2 (random weights).
* ``meta.json``: versions, device, the runs' settings and measured memory figures.

Each part runs on its own; a part that fails leaves its error in ``meta.json`` and the others
still run.
"""

import gzip
import json
import os
import shutil
import sys
import time
import traceback

import torch
from torch.profiler import ProfilerActivity, profile, record_function

META = {"parts": {}}


def gzip_file(path):
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)
    return path + ".gz"


def build_mlp(layers, width, device):
    torch.manual_seed(0)
    mods = []
    for _ in range(layers):
        mods += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*mods).to(device)


def train_step(model, opt, batch):
    opt.zero_grad(set_to_none=True)
    loss = model(batch).square().mean()
    loss.backward()
    opt.step()
    return loss


def profile_step(out, name, step):
    """Run `step` once under the profiler (CPU and CUDA activities, profile_memory, shapes) and the
    execution-trace observer, so that the Kineto trace and the ET are of the same step; write
    both gzip'd into `out` and return their names with PyTorch's peak counters for the step."""
    torch.cuda.reset_peak_memory_stats()
    et_path = os.path.join(out, f"{name}.et.json")
    et = torch.profiler.ExecutionTraceObserver()
    et.register_callback(et_path)
    kin_path = os.path.join(out, f"{name}.kineto.json")
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        profile_memory=True,
        record_shapes=True,
    ) as prof:
        et.start()
        with record_function("ProfilerStep#0"):
            step()
        torch.cuda.synchronize()
        et.stop()
    et.unregister_callback()
    prof.export_chrome_trace(kin_path)
    return {
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "kineto": os.path.basename(gzip_file(kin_path)),
        "et": os.path.basename(gzip_file(et_path)),
    }


def record_mlp(out, name, offload, cfg):
    """One profiled MLP step (Kineto + ET in the same step), with or without save_on_cpu."""
    dev = torch.device("cuda")
    model = build_mlp(cfg["layers"], cfg["width"], dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    batch = torch.randn(cfg["batch"], cfg["width"], device=dev)

    def step():
        if offload:
            with torch.autograd.graph.save_on_cpu(pin_memory=True):
                return train_step(model, opt, batch)
        return train_step(model, opt, batch)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    if offload:
        torch.cuda.memory._record_memory_history(max_entries=200000)
    info = profile_step(out, name, step)
    if offload:
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        snap_path = os.path.join(out, f"{name}.memsnap.json")
        with open(snap_path, "w") as f:
            json.dump(strip_frames(snap), f)
        info["memsnap"] = os.path.basename(gzip_file(snap_path))
    return info


def strip_frames(obj):
    if isinstance(obj, dict):
        return {k: strip_frames(v) for k, v in obj.items() if k != "frames"}
    if isinstance(obj, list):
        return [strip_frames(v) for v in obj]
    if isinstance(obj, (int, float, str, bool)) or obj is None:
        return obj
    return str(obj)


class Chain:
    """An activation chain F_0..F_L, B_L..B_0 on Linear+ReLU layers, written out by hand.

    F_i: x_{i+1} = relu(x_i @ W_i)             (reads x_i)
    B_i: g = y_{i+1} * (x_{i+1} > 0); y_i = g @ W_i^T; W_i -= lr * x_i^T g
         (reads x_i, x_{i+1}, y_{i+1}; frees x_{i+1}, y_{i+1} at its end)
    F_L also produces y_{L+1} = d loss / d x_{L+1} for loss = sum(x_{L+1}) (ones).
    """

    def __init__(self, layers, width, batch, gated=True):
        torch.manual_seed(1)
        self.gated = gated
        dev = torch.device("cuda")
        self.n = layers  # ops F_0..F_{n-1}; L = n - 1
        self.W = [torch.randn(width, width, device=dev) / width**0.5 for _ in range(layers)]
        self.x0 = torch.randn(batch, width, device=dev)
        self.host = [torch.empty(batch, width, pin_memory=True) for _ in range(layers)]
        self.copy = torch.cuda.Stream()
        self.comp = torch.cuda.current_stream()

    def fwd(self, i, xi, label):
        with record_function(f"fwd:F{i}") if label else nullcontext():
            out = torch.relu(xi @ self.W[i])
            y_last = torch.ones_like(out) if i == self.n - 1 else None
        return out, y_last

    def bwd(self, i, xi, xnext, ynext, label):
        with record_function(f"bwd:B{i}") if label else nullcontext():
            g = ynext * (xnext > 0)
            yi = g @ self.W[i].t()
            gw = xi.t() @ g
            self.W[i].sub_(gw, alpha=1e-6)
            del g, gw
        return yi

    def run(self, offload, label=True, timer=None):
        """One step. offload: the set of i whose x_i goes to the host after F_i starts."""
        n, comp, copy = self.n, self.comp, self.copy
        x = [None] * (n + 1)
        x[0] = self.x0.clone()
        y_last = None
        for i in range(n):
            ready = None
            if i in offload:
                ready = torch.cuda.Event()
                ready.record(comp)  # x_i is there once the work queued so far is done
            t = timer.start(f"F{i}") if timer else None
            x[i + 1], yl = self.fwd(i, x[i], label)
            if timer:
                timer.stop(t)
            if yl is not None:
                y_last = yl
            if i in offload:
                # issued after F_i, so that the copy runs beside F_i (both start when x_i is
                # ready) and the GPU copy is given back at the later of the two ends: the
                # model's offload with delete (R10), as the caching allocator does it after
                # record_stream
                with torch.cuda.stream(copy):
                    copy.wait_event(ready)
                    with record_function(f"offload:x{i}") if label else nullcontext():
                        self.host[i].copy_(x[i], non_blocking=True)
                x[i].record_stream(copy)
                x[i] = None
        y = y_last
        pending = {}
        for i in reversed(range(n)):
            # prefetch x_{i-1} while B_i runs (one layer ahead), and x_i if not yet there.
            # gated: the copy stream waits until B_i is the next op on the compute stream;
            # ungated ("eager"), it starts as soon as the copy stream is free, which, with the
            # CPU running ahead of the GPU, is during the forward.
            gate = None
            if self.gated:
                gate = torch.cuda.Event()
                gate.record(comp)
            for j in (i, i - 1):
                if j >= 0 and j in offload and j not in pending:
                    pending[j] = self.prefetch(j, label, gate)
            if i in offload:
                xi, done = pending.pop(i)
                comp.wait_event(done)
                xi.record_stream(comp)
                x[i] = xi
            t = timer.start(f"B{i}") if timer else None
            y_new = self.bwd(i, x[i], x[i + 1], y, label)
            if timer:
                timer.stop(t)
            x[i + 1] = None
            y = y_new
        x[0] = None
        return y

    def prefetch(self, j, label, gate=None):
        with torch.cuda.stream(self.copy):
            if gate is not None:
                self.copy.wait_event(gate)
            with record_function(f"prefetch:x{j}") if label else nullcontext():
                t = torch.empty(self.host[j].shape, device="cuda")
                t.copy_(self.host[j], non_blocking=True)
            done = torch.cuda.Event()
            done.record(self.copy)
        return t, done


class nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


class OpTimer:
    """Per-op GPU time (µs) with CUDA events, and per-op allocator peaks (bytes)."""

    def __init__(self):
        self.times = {}
        self.extra = {}

    def start(self, name):
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        return (name, a, b, before)

    def stop(self, token):
        name, a, b, before = token
        b.record()
        torch.cuda.synchronize()
        self.times.setdefault(name, []).append(a.elapsed_time(b) * 1000.0)
        self.extra.setdefault(name, []).append(torch.cuda.max_memory_allocated() - before)


def record_chain(out, cfg):
    layers, width, batch = cfg["chain_layers"], cfg["chain_width"], cfg["batch"]
    chain = Chain(layers, width, batch, gated=cfg.get("gated", True))
    offload = set(range(0, layers - 2))  # every activation but the last two goes to the host
    for _ in range(2):
        chain.run(offload, label=False)
    timer = OpTimer()
    for _ in range(3):
        chain.run(set(), label=False, timer=timer)
    torch.cuda.synchronize()
    xbytes = batch * width * 4
    rate = link_rate(chain)
    inst = chain_instance(layers, xbytes, timer, rate)
    with open(os.path.join(out, "chain.instance.json"), "w") as f:
        json.dump(inst, f, indent=1)
    torch.cuda.reset_peak_memory_stats()
    kin_path = os.path.join(out, "chain.kineto.json")
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        profile_memory=True,
        record_shapes=False,
    ) as prof:
        with record_function("ProfilerStep#0"):
            chain.run(offload, label=True)
        torch.cuda.synchronize()
    prof.export_chrome_trace(kin_path)
    return {
        "layers": layers,
        "gated_prefetch": chain.gated,
        "width": width,
        "batch": batch,
        "x_bytes": xbytes,
        "offloaded": sorted(offload),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "op_times_us": timer.times,
        "op_alloc_peaks": timer.extra,
        "link_bytes_per_us_max": rate,
        "kineto": os.path.basename(gzip_file(kin_path)),
        "instance": "chain.instance.json",
    }


def link_rate(chain):
    """The fastest pinned host<->device copy of one activation seen in 5 tries each way, in
    bytes per µs, rounded up: the instance's β must be no slower than any real copy (R5)."""
    import math

    x = torch.empty(chain.host[0].shape, device="cuda")
    best = 0.0
    for _ in range(5):
        for d2h in (True, False):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with torch.cuda.stream(chain.copy):
                a.record()
                if d2h:
                    chain.host[0].copy_(x, non_blocking=True)
                else:
                    x.copy_(chain.host[0], non_blocking=True)
                b.record()
            torch.cuda.synchronize()
            us = a.elapsed_time(b) * 1000.0
            best = max(best, x.numel() * 4 / us)
    return math.ceil(best)


def chain_instance(layers, xbytes, timer, rate):
    """activation_chain instance: x_i = batch x width fp32; the temporaries are each op's
    allocator peak above what was allocated before it, less its outputs (the most over the
    timed runs); durations are the longest measured, rounded up to whole µs."""
    import math

    def dur(name):
        return max(1, math.ceil(max(timer.times[name])))

    def extra(name, outputs):
        return max(0, max(timer.extra[name]) - outputs)

    rows = []
    for i in range(layers):
        f_out = xbytes + (xbytes if i == layers - 1 else 0)
        rows.append({
            "u_f": dur(f"F{i}"),
            "u_b": dur(f"B{i}"),
            "x": xbytes,
            "y": xbytes,
            "ex_f": extra(f"F{i}", f_out),
            "ex_b": extra(f"B{i}", xbytes),
        })
    return {
        "family": "activation_chain",
        "name": "h100-chain",
        "note": (
            "Recorded by scripts/record_offload_step.py on the device named in meta.json: a "
            "Linear+ReLU chain run by hand (see the script's Chain class). Sizes are the real "
            "tensors' bytes (fp32); ex_f/ex_b are the allocator's peak during the op above what was "
            "allocated before it, less the op's outputs; u_f/u_b the longest of three timed runs "
            "(CUDA events), rounded up to whole µs (1 tick = 1 µs); the bandwidth is the fastest "
            "pinned copy of one activation measured (bytes per µs, rounded up). gpu_memory is the no-offload "
            "peak: audit with --budget to judge a smaller one. The weights (and their update, "
            "inside B_i) are outside the model, as in the activation paper."
        ),
        "layers": rows,
        "x_last": xbytes,
        "y_last": xbytes,
        "gpu_memory": 0,
        "bandwidth": {"bytes": rate, "ticks": 1},
    }


def record_model(out, name, model, inputs, loss_of):
    """One profiled save_on_cpu training step (Kineto with profile_memory + the ET of the same
    step) of a real model, after two warm-up steps."""
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autograd.graph.save_on_cpu(pin_memory=True):
            loss = loss_of(model, inputs)
        loss.backward()
        opt.step()

    for _ in range(2):
        step()
    torch.cuda.synchronize()
    return profile_step(out, name, step)

def record_resnet18(out):
    import torchvision

    torch.manual_seed(2)
    model = torchvision.models.resnet18(num_classes=100).cuda()
    x = torch.randn(32, 3, 224, 224, device="cuda")
    labels = torch.randint(0, 100, (32,), device="cuda")
    info = record_model(out, "resnet18", model, (x, labels),
                        lambda m, i: torch.nn.functional.cross_entropy(m(i[0]), i[1]))
    info["model"] = "torchvision resnet18(num_classes=100), batch 32, 3x224x224, fp32, SGD"
    return info


def record_gpt2(out):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(3)
    conf = GPT2Config(n_layer=4, n_embd=512, n_head=8, n_positions=256, vocab_size=8192)
    model = GPT2LMHeadModel(conf).cuda()
    ids = torch.randint(0, 8192, (8, 256), device="cuda")
    info = record_model(out, "gpt2small", model, ids, lambda m, i: m(input_ids=i, labels=i).loss)
    info["model"] = "transformers GPT2LMHeadModel(n_layer=4, n_embd=512, n_head=8, n_positions=256, vocab 8192), random init, batch 8 x 256 tokens, fp32, SGD"
    return info


def record_allocator_from_start(out, cfg):
    """The caching allocator's record of a whole process: history on before the first CUDA
    allocation, then three save_on_cpu steps of the MLP (warm-up included), so that a model of
    the allocator can start from the same empty state."""
    torch.cuda.memory._record_memory_history(max_entries=500000)
    dev = torch.device("cuda")
    model = build_mlp(cfg["layers"], cfg["width"], dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    batch = torch.randn(cfg["batch"], cfg["width"], device=dev)
    for _ in range(3):
        with torch.autograd.graph.save_on_cpu(pin_memory=True):
            train_step(model, opt, batch)
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    path = os.path.join(out, "alloc.memsnap.json")
    with open(path, "w") as f:
        json.dump(strip_frames(snap), f)
    return {
        "steps": 3,
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "memsnap": os.path.basename(gzip_file(path)),
    }


def main():
    out = sys.argv[1]
    small = "--small" in sys.argv
    os.makedirs(out, exist_ok=True)
    cfg = {"layers": 6, "width": 2048, "batch": 2048, "chain_layers": 6, "chain_width": 2048}
    if small:
        cfg = {"layers": 3, "width": 256, "batch": 256, "chain_layers": 3, "chain_width": 256}
    META.update({
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0),
        "config": cfg,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    torch.backends.cuda.matmul.allow_tf32 = False
    parts = [
        ("saveoncpu", lambda: record_mlp(out, "saveoncpu", True, cfg)),
        ("plain", lambda: record_mlp(out, "plain", False, cfg)),
        ("chain", lambda: record_chain(out, cfg)),
    ]
    if "--models" in sys.argv:
        parts = [("resnet18", lambda: record_resnet18(out)), ("gpt2small", lambda: record_gpt2(out))]
    elif "--allocator-only" in sys.argv:
        parts = [("allocator", lambda: record_allocator_from_start(out, cfg))]
    elif "--chain-only" in sys.argv:
        parts = [("chain", lambda: record_chain(out, cfg))]
    if "--eager-prefetch" in sys.argv:
        cfg["gated"] = False
    for name, part in parts:
        t0 = time.time()
        try:
            META["parts"][name] = part()
        except Exception:  # keep the other parts
            META["parts"][name] = {"error": traceback.format_exc()}
        META["parts"][name]["seconds"] = round(time.time() - t0, 2)
        torch.cuda.empty_cache()
    # fill the chain instance's budget with its no-offload peak from the formula of MODEL.md §4.1
    inst_path = os.path.join(out, "chain.instance.json")
    if os.path.exists(inst_path):
        with open(inst_path) as f:
            inst = json.load(f)
        inst["gpu_memory"] = no_offload_peak(inst)
        with open(inst_path, "w") as f:
            json.dump(inst, f, indent=1)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(META, f, indent=1)
    print(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "op_times_us"} for k, v in META["parts"].items()}, indent=1)[:6000])


def no_offload_peak(inst):
    """m_peak of models/MODEL.md §4.1: max over F_i and B_i with everything resident."""
    xs = [row["x"] for row in inst["layers"]] + [inst["x_last"]]
    ys = [row["y"] for row in inst["layers"]] + [inst["y_last"]]
    n = len(inst["layers"])
    peak = 0
    for i, row in enumerate(inst["layers"]):
        mf = row["ex_f"] + sum(xs[: i + 2]) + (ys[n] if i == n - 1 else 0)
        mb = row["ex_b"] + ys[i] + ys[i + 1] + sum(xs[: i + 2])
        peak = max(peak, mf, mb)
    return peak


if __name__ == "__main__":
    main()
