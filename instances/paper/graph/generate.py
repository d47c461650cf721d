#!/usr/bin/env python3
"""Build the ResNet-50 and VGG-16 training graphs of this folder as networkx
`node_link_data` JSON in the Checkmate-derived schema (nodes {id, name, backward,
cost_cpu, cost_ram}, links {source, target}), which `offcert import graph` reads.

Run from this folder: python3 generate.py  (standard library only; deterministic).
Then import each at MOCCASIN's multipliers (the commands are in README.md).

Derivation (as ../activation/generate.py; every figure is derived from the
architecture, none measured):

- one forward node per layer operation (conv, batch norm, ReLU, pooling, add,
  fully connected), as Checkmate's Keras extraction makes one node per Keras
  layer; `cost_ram` = its output, batch * C * H * W * 4 bytes (fp32);
- a loss node reading the logits; one backward node per forward node except the
  graph input, reading the backward nodes of the forward node's consumers (the
  loss for the logits), the forward node's inputs and its own output (what a
  gradient of conv/bn/relu needs); its `cost_ram` is the gradient of the forward
  node's inputs (their total size), its `cost_cpu` twice the forward's;
- `cost_cpu` in microseconds: conv/fc FLOPs / 8 TFLOP/s + element-wise bytes
  (read + write) / 600 GB/s, at least 1 (assumed V100 fp32 effective rates);
- node ids are topological (forward, loss, backward in reverse), as in
  Checkmate's graphs.
"""
import json

FLOPS = 8e12
MEMBW = 600e9
B = 4


class Net:
    def __init__(self, name, batch):
        self.name, self.batch = name, batch
        self.fwd = []  # dicts: name, inputs (fwd indices), elems, flops, ew

    def add(self, name, inputs, shape, flops=0.0, ew_elems=None):
        c, h, w = shape
        elems = self.batch * c * h * w
        ins = sum(self.fwd[i]["elems"] for i in inputs)
        ew = (ins + elems) if ew_elems is None else ew_elems
        self.fwd.append(dict(name=name, inputs=list(inputs), elems=elems, shape=shape, flops=flops, ew=ew))
        return len(self.fwd) - 1

    def conv(self, name, x, cout, k, stride=1):
        cin, h, w = self.fwd[x]["shape"]
        ho, wo = (h + stride - 1) // stride, (w + stride - 1) // stride
        fl = 2.0 * k * k * cin * cout * ho * wo * self.batch
        return self.add(name, [x], (cout, ho, wo), fl, 0)

    def ew(self, name, xs):
        return self.add(name, xs, self.fwd[xs[0]]["shape"])

    def pool(self, name, x, stride):
        c, h, w = self.fwd[x]["shape"]
        return self.add(name, [x], (c, (h + stride - 1) // stride, (w + stride - 1) // stride))

    def fc(self, name, x, out):
        c, h, w = self.fwd[x]["shape"]
        return self.add(name, [x], (out, 1, 1), 2.0 * c * h * w * out * self.batch, 0)

    def graph(self):
        def us(f):
            return max(1, round((f["flops"] / FLOPS + f["ew"] * B / MEMBW) * 1e6))

        n = len(self.fwd)
        nodes, links = [], []
        for i, f in enumerate(self.fwd):
            nodes.append(dict(name=f["name"], backward=False, cost_cpu=us(f), cost_ram=f["elems"] * B, id=i))
            links += [dict(source=u, target=i) for u in f["inputs"]]
        loss = n
        nodes.append(dict(name="loss", backward=False, cost_cpu=1, cost_ram=4, id=loss))
        links.append(dict(source=n - 1, target=loss))
        consumers = [[] for _ in range(n)]
        for i, f in enumerate(self.fwd):
            for u in f["inputs"]:
                consumers[u].append(i)
        bid = {}
        for i in reversed(range(1, n)):  # node 0 is the input batch: no gradient
            bid[i] = len(nodes)
            f = self.fwd[i]
            grads = [bid[c] for c in consumers[i]] or [loss]
            ins = sorted(set(grads + f["inputs"] + [i]))
            nodes.append(dict(name="grad_" + f["name"], backward=True, cost_cpu=2 * us(f),
                              cost_ram=sum(self.fwd[u]["elems"] for u in f["inputs"]) * B, id=bid[i]))
            links += [dict(source=u, target=bid[i]) for u in ins]
        return dict(directed=True, multigraph=False, graph=dict(name=self.name), nodes=nodes, links=links)


def vgg16(batch, image):
    net = Net(f"vgg16_b{batch}_{image}px", batch)
    x = net.add("input", [], (3, image, image), 0, 0)
    k = 0
    for stage, (cout, reps) in enumerate([(64, 2), (128, 2), (256, 3), (512, 3), (512, 3)]):
        for r in range(reps):
            k += 1
            x = net.conv(f"block{stage + 1}_conv{r + 1}", x, cout, 3)
            x = net.ew(f"block{stage + 1}_relu{r + 1}", [x])
        x = net.pool(f"block{stage + 1}_pool", x, 2)
    x = net.fc("fc1", x, 4096)
    x = net.ew("fc1_relu", [x])
    x = net.fc("fc2", x, 4096)
    x = net.ew("fc2_relu", [x])
    net.fc("predictions", x, 1000)
    return net


def resnet50(batch, image):
    net = Net(f"resnet50_b{batch}_{image}px", batch)
    x = net.add("input", [], (3, image, image), 0, 0)
    x = net.conv("conv1_conv", x, 64, 7, 2)
    x = net.ew("conv1_bn", [x])
    x = net.ew("conv1_relu", [x])
    x = net.pool("pool1_pool", x, 2)
    for s, (width, blocks) in enumerate([(64, 3), (128, 4), (256, 6), (512, 3)]):
        for b in range(blocks):
            p = f"conv{s + 2}_block{b + 1}"
            stride = 2 if b == 0 and s > 0 else 1
            y = net.conv(p + "_1_conv", x, width, 1, stride)
            y = net.ew(p + "_1_bn", [y])
            y = net.ew(p + "_1_relu", [y])
            y = net.conv(p + "_2_conv", y, width, 3)
            y = net.ew(p + "_2_bn", [y])
            y = net.ew(p + "_2_relu", [y])
            y = net.conv(p + "_3_conv", y, 4 * width, 1)
            y = net.ew(p + "_3_bn", [y])
            if b == 0:
                sc = net.conv(p + "_0_conv", x, 4 * width, 1, stride)
                sc = net.ew(p + "_0_bn", [sc])
            else:
                sc = x
            y = net.ew(p + "_add", [sc, y])
            x = net.ew(p + "_out", [y])
    x = net.pool("avg_pool", x, 7)
    net.fc("predictions", x, 1000)
    return net


if __name__ == "__main__":
    for net in [vgg16(8, 224), resnet50(8, 224)]:
        g = net.graph()
        path = f"{net.name}.nx.json"
        with open(path, "w") as f:
            json.dump(g, f)
            f.write("\n")
        print(f"wrote {path}: {len(g['nodes'])} nodes, {len(g['links'])} links")
