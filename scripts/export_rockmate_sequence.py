#!/usr/bin/env python3
"""Write the op sequence rockmate (or rotor) computed for a chain as the JSON
that `offcert import rockmate-sequence` reads.

Run it where rockmate is installed (offcert itself never unpickles anything):

    from export_rockmate_sequence import ops_of, dump
    # rockmate's rotor stage: seq = seq_builder(chain, mmax, opt_table)
    dump(ops_of(seq, chain), "model.rockmate-sequence.json")
    # then: offcert import rockmate CHAIN_DUMP.json -o chain.json
    #       offcert import rockmate-sequence model.rockmate-sequence.json --chain chain.json -o s.json

What it reads (rockmate `def_sequence.py` / `rk_rotor/def_sequence.py`, and
`rotor/algorithms/sequence.py`):
  - an `RK_Sequence` (its `.seq` list) or any list of ops;
  - rockmate's block ops `SeqBlockFn`, `SeqBlockFc`, `SeqBlockFe`, `SeqBlockBwd`
    (`.name` one of Fn, Fc, Fe, Bwd; `.index` the block) and `SeqLoss`;
  - rotor's ops `ForwardEnable` (Fe), `ForwardCheck` (CF), `ForwardNograd` (Fn),
    `Backward` (B), `Loss` (L), by their `repr` (`Fe_3`, `L`).
The option k of an `Fe` or `Bwd` block op: its `.option` where the op has one
(rockmate's C solver), else the k whose `chain.body[index].sols[k]` holds the
op's schedule (`fwd_sched` for Fe, `bwd_sched` for Bwd; compared by identity,
as the DP built the op from it). Without a chain, or when no k matches, the
script stops with an error naming the op, rather than guess option 0.

`--selftest` checks the conversion on stand-in classes (no rockmate needed)
and prints the JSON it writes.
"""
import argparse, json, sys

FORMAT = "rockmate-sequence/1"
KINDS = {"Fn": "Fn", "Fc": "Fc", "Fe": "Fe", "Bwd": "Bwd", "CF": "Fc", "B": "Bwd", "Loss": "Loss", "L": "Loss"}


def _sched_of(op):
    for attr in ("op_sched", "body"):
        if hasattr(op, attr):
            return getattr(op, attr)
    return None


def _option(op, kind, chain, n):
    k = getattr(op, "option", None)
    if k is not None:
        return int(k)
    if chain is None:
        raise ValueError(f"ops[{n}]: {kind} block {op.index}: no `option` on the op and no chain given")
    field = "fwd_sched" if kind == "Fe" else "bwd_sched"
    sched = _sched_of(op)
    for k, sol in enumerate(chain.body[op.index].sols):
        if getattr(sol, field, None) is sched:
            return k
    raise ValueError(f"ops[{n}]: {kind} block {op.index}: its schedule is none of the block's solutions")


def op_of(op, chain=None, n=0):
    """One op as a JSON-ready dict."""
    name = getattr(op, "name", None)
    if name is None or type(op).__name__ in ("SeqLoss", "Loss"):
        name = "Loss" if type(op).__name__ in ("SeqLoss", "Loss") else None
    if name is None:
        # rotor's ops: the repr is `Fe_3`, `CF_0`, `Fn_1`, `B_2` or `L`.
        text = repr(op)
        name, _, idx = text.partition("_")
        if name not in KINDS:
            raise ValueError(f"ops[{n}]: {text!r} is no op of a persistent sequence")
        if KINDS[name] == "Loss":
            return {"op": "Loss"}
        return {"op": KINDS[name], "index": int(idx)}
    if name not in KINDS:
        raise ValueError(f"ops[{n}]: unknown op {name!r}")
    kind = KINDS[name]
    if kind == "Loss":
        return {"op": "Loss"}
    out = {"op": kind, "index": int(op.index)}
    if kind in ("Fe", "Bwd"):
        out["option"] = _option(op, kind, chain, n)
    return out


def ops_of(sequence, chain=None):
    """The ops of an `RK_Sequence` (or a rotor `Sequence`, or a list)."""
    if hasattr(sequence, "list_operations"):
        items = sequence.list_operations()
    else:
        items = getattr(sequence, "seq", sequence)
    return [op_of(op, chain, n) for n, op in enumerate(items)]


def dump(ops, path, note=None):
    doc = {"format": FORMAT, "ops": ops}
    if note:
        doc["note"] = note
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def _selftest():
    class Sched:  # a block solution's schedules
        pass

    class Sol:
        def __init__(self):
            self.fwd_sched, self.bwd_sched = Sched(), Sched()

    class Body:
        def __init__(self, n):
            self.sols = [Sol() for _ in range(n)]

    class Chain:
        body = [Body(2), Body(2)]

    class Block:
        def __init__(self, name, index, sched):
            self.name, self.index, self.op_sched = name, index, sched

    class SeqLoss:
        pass

    c = Chain()
    seq = [Block("Fc", 0, None), Block("Fn", 1, None), SeqLoss(),
           Block("Fe", 0, c.body[0].sols[1].fwd_sched), Block("Fe", 1, c.body[1].sols[0].fwd_sched),
           Block("Bwd", 1, c.body[1].sols[0].bwd_sched), Block("Bwd", 0, c.body[0].sols[1].bwd_sched)]
    got = ops_of(seq, c)
    want = [{"op": "Fc", "index": 0}, {"op": "Fn", "index": 1}, {"op": "Loss"},
            {"op": "Fe", "index": 0, "option": 1}, {"op": "Fe", "index": 1, "option": 0},
            {"op": "Bwd", "index": 1, "option": 0}, {"op": "Bwd", "index": 0, "option": 1}]
    assert got == want, got

    class Rotor:  # rotor's ops print as `Fe_3`
        def __init__(self, text):
            self.text = text

        def __repr__(self):
            return self.text

    assert ops_of([Rotor("CF_0"), Rotor("Fn_1"), Rotor("L"), Rotor("B_0")]) == [
        {"op": "Fc", "index": 0}, {"op": "Fn", "index": 1}, {"op": "Loss"}, {"op": "Bwd", "index": 0}]
    try:
        ops_of([Block("Fe", 0, Sched())], c)
        raise AssertionError("an unknown schedule must be refused")
    except ValueError as e:
        assert "ops[0]" in str(e), e
    print(json.dumps({"format": FORMAT, "ops": got}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--selftest", action="store_true", help="check the conversion on stand-in classes")
    a = p.parse_args()
    if a.selftest:
        _selftest()
        return 0
    p.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
