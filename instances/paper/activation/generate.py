#!/usr/bin/env python3
"""Generate the ResNet/DenseNet-like activation chains of this folder.

Run from this folder: python3 generate.py  (standard library only; deterministic).

Derivation (activation paper §6.1: torchvision networks made linear by grouping
every non-linear part -- a residual block, a dense layer -- into one virtual layer;
V100-PCIE, beta = 12.2 GB/s). The paper's own measurements are not published, so
every figure here is *derived* from the architecture, not measured:

- |x_i| = batch * C * H * W * 4 bytes (fp32) of the virtual layer's input; the
  chain input x_0 is the image batch; |y_i| = |x_i| (a gradient has the shape of
  its activation); x_{L+1} is the logits, y_{L+1} = 0.
- ex^F_i = the internal feature maps of the virtual layer (conv/bn outputs inside
  the block), which live only while the block runs; ex^B_i = 2 ex^F_i (the
  internal maps are recomputed during the backward step, plus their gradients).
- u_F = conv FLOPs / 8 TFLOP/s + bytes of element-wise work (bn, relu, pooling,
  concatenation: read + write) / 600 GB/s. These are assumed V100 fp32 effective
  rates (peak 14 TFLOP/s and 900 GB/s). u_B = 2 u_F (backward computes the gradient
  w.r.t. both inputs and weights).
- One tick is one microsecond, so beta = 12200 bytes per tick (12.2 GB/s).
- gpu_memory is set halfway between the least memory with which any schedule
  exists and M_peak, so that the file alone exercises offloading; the gap report
  sweeps the whole range (0 % = least memory, 100 % = M_peak, as §6.3).
"""
import json

FLOPS = 8e12  # effective fp32 conv FLOP/s (assumed)
MEMBW = 600e9  # effective bytes/s for element-wise work (assumed)
BETA_B_PER_TICK = 12200  # 12.2 GB/s in bytes per microsecond
B = 4  # bytes per fp32 value


def conv_flops(cin, cout, k, hout, wout, batch):
    return 2.0 * k * k * cin * cout * hout * wout * batch


class Chain:
    def __init__(self, name, batch, image):
        self.name, self.batch, self.image = name, batch, image
        self.layers = []  # dicts with u_f, u_b, x, y, ex_f, ex_b
        self.cur = 3 * image * image * batch * B  # x_0: the image batch

    def add(self, out_elems, flops, ew_bytes, internal_elems):
        u_f = flops / FLOPS + ew_bytes / MEMBW
        u_f_us = max(1, round(u_f * 1e6))
        ex_f = internal_elems * B
        self.layers.append(
            dict(u_f=u_f_us, u_b=2 * u_f_us, x=self.cur, y=self.cur, ex_f=ex_f, ex_b=2 * ex_f)
        )
        self.cur = out_elems * B

    def finish(self, note):
        # M_peak and the least feasible memory, as ChainProfile computes them.
        n = len(self.layers)
        xs = [l["x"] for l in self.layers] + [self.cur]
        ys = [l["y"] for l in self.layers] + [0]
        pre = [0]
        for v in xs:
            pre.append(pre[-1] + v)
        need, off = [], []
        for i, l in enumerate(self.layers):
            need.append(l["ex_f"] + pre[i + 2]); off.append(pre[i])
            need.append(l["ex_b"] + ys[i] + ys[i + 1] + pre[i + 2]); off.append(pre[i])
        peak = max(need)
        least = max(a - b for a, b in zip(need, off))
        mem = (least + peak) // 2
        return dict(
            family="activation_chain",
            name=self.name,
            note=note
            + f" L+1 = {n} virtual layers; M_peak = {peak} B, least feasible memory = {least} B;"
            " gpu_memory is their midpoint. Derivation and assumptions: generate.py and"
            " README.md in this folder.",
            layers=self.layers,
            x_last=self.cur,
            y_last=0,
            gpu_memory=mem,
            bandwidth=BETA_B_PER_TICK,
        )


def resnet(depth, batch, image):
    blocks = {50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}[depth]
    c = Chain(f"resnet{depth}-{image}px-b{batch}", batch, image)
    h = (image + 1) // 2
    # conv1 7x7/2 + bn + relu
    c.add(64 * h * h * batch, conv_flops(3, 64, 7, h, h, batch), 4 * 64 * h * h * batch * B, 2 * 64 * h * h * batch)
    # maxpool 3x3/2
    h2 = (h + 1) // 2
    c.add(64 * h2 * h2 * batch, 0, (64 * h * h + 64 * h2 * h2) * batch * B, 0)
    h = h2
    cin = 64
    for stage, n in enumerate(blocks):
        w = 64 * 2 ** stage
        for b in range(n):
            s = 2 if (b == 0 and stage > 0) else 1
            ho = (h + s - 1) // s
            fl = conv_flops(cin, w, 1, h, h, batch) + conv_flops(w, w, 3, ho, ho, batch) + conv_flops(w, 4 * w, 1, ho, ho, batch)
            internal = w * h * h + w * ho * ho + 4 * w * ho * ho
            ew = 2 * (2 * w * h * h + 2 * w * ho * ho + 3 * 4 * w * ho * ho)
            if b == 0:
                fl += conv_flops(cin, 4 * w, 1, ho, ho, batch)
                internal += 4 * w * ho * ho
                ew += 2 * 4 * w * ho * ho
            c.add(4 * w * ho * ho * batch, fl, ew * batch * B, internal * batch)
            cin, h = 4 * w, ho
    # avgpool + fc
    c.add(1000 * batch, 2.0 * cin * 1000 * batch, cin * h * h * batch * B, cin * batch)
    return c.finish(
        f"ResNet-{depth}-like chain (torchvision v1.5 bottlenecks, one virtual layer per residual block),"
        f" {image}x{image} images, batch {batch}, fp32, V100 figures (beta = 12.2 GB/s, activation paper 6.1)."
    )


def densenet(depth, batch, image):
    cfg = {121: (32, (6, 12, 24, 16), 64), 169: (32, (6, 12, 32, 32), 64), 201: (32, (6, 12, 48, 32), 64), 161: (48, (6, 12, 36, 24), 96)}
    k, blocks, c0 = cfg[depth]
    c = Chain(f"densenet{depth}-{image}px-b{batch}", batch, image)
    h = (image + 1) // 2
    c.add(c0 * h * h * batch, conv_flops(3, c0, 7, h, h, batch), 4 * c0 * h * h * batch * B, 2 * c0 * h * h * batch)
    h2 = (h + 1) // 2
    c.add(c0 * h2 * h2 * batch, 0, (c0 * h * h + c0 * h2 * h2) * batch * B, 0)
    h = h2
    ch = c0
    for bi, n in enumerate(blocks):
        for _ in range(n):
            hw = h * h
            fl = conv_flops(ch, 4 * k, 1, h, h, batch) + conv_flops(4 * k, k, 3, h, h, batch)
            internal = 2 * ch * hw + 3 * 4 * k * hw + k * hw
            ew = 2 * (2 * ch * hw + 2 * 4 * k * hw) + (ch + k) * hw * 2  # bn/relu + concat copy
            c.add((ch + k) * hw * batch, fl, ew * batch * B, internal * batch)
            ch += k
        if bi < len(blocks) - 1:
            ho = h // 2
            fl = conv_flops(ch, ch // 2, 1, h, h, batch)
            internal = 2 * ch * h * h + (ch // 2) * h * h
            ew = 2 * (2 * ch * h * h) + (ch // 2) * (h * h + ho * ho)
            c.add((ch // 2) * ho * ho * batch, fl, ew * batch * B, internal * batch)
            ch, h = ch // 2, ho
    c.add(1000 * batch, 2.0 * ch * 1000 * batch, 3 * ch * h * h * batch * B, 2 * ch * h * h * batch)
    return c.finish(
        f"DenseNet-{depth}-like chain (growth {k}, bottleneck 4k, one virtual layer per dense layer or transition),"
        f" {image}x{image} images, batch {batch}, fp32, V100 figures (beta = 12.2 GB/s, activation paper 6.1)."
    )


if __name__ == "__main__":
    nets = [
        resnet(50, 32, 224), resnet(101, 32, 224), resnet(152, 32, 224),
        densenet(121, 32, 224), densenet(169, 32, 224), densenet(201, 32, 224),
        resnet(152, 8, 500), densenet(201, 4, 1000),
    ]
    for d in nets:
        with open(d["name"] + ".json", "w") as f:
            json.dump(d, f, indent=1)
            f.write("\n")
        print(d["name"], len(d["layers"]), "layers, gpu_memory", d["gpu_memory"] / 1e9, "GB")
