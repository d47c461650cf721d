"""``audit``, ``offmate`` and every importer of the CLI, run in this process
through the same code as the subcommands (``offcert.run``), with their
``--json`` output parsed and the files they write loaded back.

A new importer of the CLI (``offcert import graph``, when it lands) gets a
function here the same way: build its arguments and call ``_import``.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, List, Optional, Sequence, Union

from ._api import Source, _files, run
from ._types import CommandResult

PathOrNone = Union[None, str, "os.PathLike[str]"]


def _flag(argv: List[str], name: str, value: Any) -> None:
    """Append ``--name value`` (``--name`` alone for ``True``; nothing for ``None``/``False``)."""
    if value is None or value is False:
        return
    argv.append(name)
    if value is not True:
        argv.append(os.fspath(value) if isinstance(value, os.PathLike) else str(value))


def _with_output(argv: List[str], out: PathOrNone, flag: str, name: str) -> CommandResult:
    """Run ``argv`` writing to ``out`` (a temporary file when ``None``), and
    load what was written (JSON)."""
    with tempfile.TemporaryDirectory(prefix="offcert-") as d:
        target = os.fspath(out) if out is not None else os.path.join(d, name)
        r = run(*argv, flag, target)
        loaded = None
        if os.path.exists(target):
            with open(target, encoding="utf-8") as f:
                loaded = json.load(f)
        return CommandResult(r.command, r.returncode, r.text, r.data,
                             os.fspath(out) if out is not None else None, loaded)


def audit(trace: Union[str, "os.PathLike[str]"], *, instance: Optional[Source] = None,
          mapping: Optional[Source] = None, plan: Optional[Source] = None, budget: Union[None, int, str] = None,
          link_gbps: Union[None, str, float] = None, duplex: Optional[str] = None, device: Optional[int] = None,
          write_schedule: PathOrNone = None, plot: PathOrNone = None) -> CommandResult:
    """Audit a runtime trace (Kineto JSON or Nsight Systems SQLite), as
    ``offcert audit --json``: ``data`` is its JSON result; ``returncode`` 1 when
    the run broke a rule."""
    with _files([(instance, "instance"), (mapping, "mapping"), (plan, "plan")]) as (i, m, p):
        argv = ["audit", os.fspath(trace), "--json"]
        for name, v in (("--instance", i), ("--mapping", m), ("--plan", p), ("--budget", budget),
                        ("--link-gbps", link_gbps), ("--duplex", duplex), ("--device", device),
                        ("--write-schedule", write_schedule), ("--plot", plot)):
            _flag(argv, name, v)
        return run(*argv)


def offmate(instance: Source, *, ilp: Sequence[str] = (), time_limit: float = 60.0, repairs: int = 3,
            no_cpu_optim: bool = False, baselines: Sequence[str] = (), out: PathOrNone = None,
            release: Optional[str] = None) -> CommandResult:
    """OFFMATE end to end (``offcert offmate --json``): the ILP in the chosen
    mode(s) (``printed``, ``corrected``, ``none``), the post-processing, the
    realiser and the checker, plus baselines. ``data["rows"]`` are the plans,
    each with the checker's figures or its reason; ``output`` is the first
    row's realised schedule (written to ``out`` when given)."""
    with _files([(instance, "instance")]) as (i,):
        argv = ["offmate", i or "", "--json", "--time-limit", str(time_limit), "--repairs", str(repairs)]
        for m in ilp:
            argv += ["--ilp", m]
        for b in baselines:
            argv += ["--baseline", b]
        _flag(argv, "--no-cpu-optim", no_cpu_optim)
        _flag(argv, "--release", release)
        return _with_output(argv, out, "--out", "schedule.json")


def import_et(trace: Union[str, "os.PathLike[str]"], *, kineto: PathOrNone = None,
              gpu_memory: Union[None, int, str] = None, bandwidth: int = 12, name: Optional[str] = None,
              out: PathOrNone = None) -> CommandResult:
    """A PyTorch execution trace as an ``op_sequence`` instance (``offcert import
    et``); ``output`` is the instance (a dict; written to ``out`` when given)."""
    argv = ["import", "et", os.fspath(trace), "--bandwidth", str(bandwidth)]
    _flag(argv, "--kineto", kineto)
    _flag(argv, "--gpu-memory", gpu_memory)
    _flag(argv, "--name", name)
    return _with_output(argv, out, "--out", "instance.json")


def _chain(kind: str, file: Source, out: PathOrNone, mem_unit: Union[int, str], tick_us: Union[int, str],
           gpu_memory: Union[None, int, str], bandwidth: Optional[int], name: Optional[str],
           fastest_only: bool, rockmate_tmp: str) -> CommandResult:
    with _files([(file, kind)]) as (f,):
        argv = ["import", kind, f or "", "--mem-unit", str(mem_unit), "--tick-us", str(tick_us),
                "--rockmate-tmp", rockmate_tmp]
        _flag(argv, "--gpu-memory", gpu_memory)
        _flag(argv, "--bandwidth", bandwidth)
        _flag(argv, "--name", name)
        _flag(argv, "--fastest-only", fastest_only)
        return _with_output(argv, out, "--output", "instance.json")


def import_rotor(file: Source, *, out: PathOrNone = None, mem_unit: Union[int, str] = 1,
                 tick_us: Union[int, str] = 1, gpu_memory: Union[None, int, str] = None,
                 bandwidth: Optional[int] = None, name: Optional[str] = None, fastest_only: bool = False,
                 rockmate_tmp: str = "as-is") -> CommandResult:
    """A rotor chain literal as a ``remat_chain`` instance (``offcert import rotor``)."""
    return _chain("rotor", file, out, mem_unit, tick_us, gpu_memory, bandwidth, name, fastest_only, rockmate_tmp)


def import_rockmate(file: Source, *, out: PathOrNone = None, mem_unit: Union[int, str] = 1,
                    tick_us: Union[int, str] = 1, gpu_memory: Union[None, int, str] = None,
                    bandwidth: Optional[int] = None, name: Optional[str] = None, fastest_only: bool = False,
                    rockmate_tmp: str = "as-is") -> CommandResult:
    """A rockmate ``RK_Chain`` JSON dump as a ``remat_chain`` instance (``offcert import rockmate``)."""
    return _chain("rockmate", file, out, mem_unit, tick_us, gpu_memory, bandwidth, name, fastest_only,
                  rockmate_tmp)


def import_rotor_sequence(sequence: Source, chain: Source, *, out: PathOrNone = None,
                          gpu_memory: Union[None, int, str] = None) -> CommandResult:
    """A rotor or rockmate op sequence as a schedule of the ``remat_chain``
    instance ``chain``, checked (``offcert import rotor-sequence``);
    ``output`` is the schedule, ``returncode`` 1 when the checker rejects it."""
    with _files([(sequence, "sequence"), (chain, "chain")]) as (s, c):
        argv = ["import", "rotor-sequence", s or "", "--chain", c or ""]
        _flag(argv, "--gpu-memory", gpu_memory)
        return _with_output(argv, out, "--output", "schedule.json")


import_rockmate_sequence = import_rotor_sequence


def import_offmate_solution(instance: Source, solution: Source, *, out: PathOrNone = None,
                            no_compare: bool = False, time_limit: Optional[float] = None,
                            show: int = 40) -> CommandResult:
    """OFFMATE's own plan, realised, checked and compared with Algorithm 1
    (``offcert import offmate-solution``); ``output`` is the realised schedule."""
    with _files([(instance, "instance"), (solution, "solution")]) as (i, s):
        argv = ["import", "offmate-solution", i or "", s or "", "--show", str(show)]
        _flag(argv, "--no-compare", no_compare)
        _flag(argv, "--time-limit", time_limit)
        return _with_output(argv, out, "--out", "schedule.json")


# `offcert import graph` (issue in progress in another branch): when it lands,
# add `import_graph(...)` here like `import_rotor` above, export it from
# __init__.py and __init__.pyi, and add its test to python/tests/test_import.py.
# Until then `offcert.run("import", "graph", ...)` reaches it once the CLI has it.
