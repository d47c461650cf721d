"""offcert's functions: thin calls into the ``offcert`` Rust crate.

Inputs are file paths (``str`` or ``os.PathLike``) or Python dicts (the file's
JSON content). Bad input raises ``ValueError`` naming the file and the field
(what the CLI reports with exit code 2); a dict is named ``<instance dict>``,
``<schedule dict>``, ... in those messages.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import _offcert
from ._types import BoundReport, CommandResult, GapReport, HeuristicResult, SolveResult, Verdict

Source = Union[str, "os.PathLike[str]", Dict[str, Any]]


def _source(x: Source, what: str) -> Tuple[str, Optional[str]]:
    """(name, text): the file's name and ``None`` (Rust reads it), or a name
    for the dict and its JSON text."""
    if isinstance(x, dict):
        return f"<{what} dict>", json.dumps(x)
    if isinstance(x, (str, os.PathLike)):
        return os.fspath(x), None
    raise TypeError(f"{what}: expected a file path or a dict, not {type(x).__name__}")


def _bytes(memory: Union[None, int, str]) -> Optional[str]:
    return None if memory is None else str(memory)


def check(instance: Source, schedule: Source, *, release: Optional[str] = None) -> Verdict:
    """Replay ``schedule`` against ``instance`` with the certified checker.

    ``release`` (``"after_end"`` or ``"after_start"``) overrides the instance's
    release rule (R10). Returns the :class:`Verdict` (valid or not, the figures
    are the checker's either way)."""
    i, it = _source(instance, "instance")
    s, st = _source(schedule, "schedule")
    return Verdict._from(json.loads(_offcert.check(i, it, s, st, release)))


def plot(instance: Source, schedule: Source, out: Union[None, str, "os.PathLike[str]"] = None, *,
         release: Optional[str] = None) -> Verdict:
    """Check ``schedule`` and draw it as SVG (lanes, memory curve, violations
    marked), as ``offcert plot``. The picture is in ``verdict.svg`` and, when
    ``out`` is given, written there."""
    i, it = _source(instance, "instance")
    s, st = _source(schedule, "schedule")
    v = Verdict._from(json.loads(_offcert.plot(i, it, s, st, release)))
    if out is not None:
        with open(out, "w", encoding="utf-8") as f:
            f.write(v.svg or "")
    return v


def bound(instance: Source, *, memory: Union[None, int, str] = None, release: Optional[str] = None) -> BoundReport:
    """The papers' lower bounds for ``instance`` (``offcert bound``). ``memory``:
    the GPU budget instead of the file's (bytes, ``"2G"``, ``"min"``, ``"peak"``, ``"50%"``)."""
    i, it = _source(instance, "instance")
    return BoundReport._from(json.loads(_offcert.bound(i, it, _bytes(memory), release)))


def heuristic(instance: Source, names: Sequence[str] = (), *, memory: Union[None, int, str] = None,
              release: Optional[str] = None) -> List[HeuristicResult]:
    """Run the papers' heuristics (all that apply, or ``names``) and check each
    schedule (``offcert heuristic``)."""
    i, it = _source(instance, "instance")
    if isinstance(names, str):
        names = [names]
    raw = _offcert.heuristic(i, it, list(names), _bytes(memory), release)
    return [HeuristicResult._from(d) for d in json.loads(raw)]


def solve(instance: Source, *, method: str = "all", time_limit: float = 60.0,
          memory: Union[None, int, str] = None, release: Optional[str] = None) -> SolveResult:
    """The exact optimum of a small instance (``offcert solve``): ``method`` is
    ``milp``, ``smt``, ``search`` or ``all`` (cross-checked); every schedule is
    checked. ``time_limit`` in seconds per method."""
    i, it = _source(instance, "instance")
    raw = _offcert.solve(i, it, method, float(time_limit), _bytes(memory), release)
    return SolveResult._from(json.loads(raw))


@contextlib.contextmanager
def _files(items: Sequence[Tuple[Source, str]]) -> Iterator[List[Optional[str]]]:
    """Paths for ``items`` (a dict is written to a temporary file)."""
    with tempfile.TemporaryDirectory(prefix="offcert-") as d:
        out: List[Optional[str]] = []
        for n, (x, what) in enumerate(items):
            if x is None:
                out.append(None)
            elif isinstance(x, dict):
                p = os.path.join(d, f"{what}-{n}.json")
                with open(p, "w", encoding="utf-8") as f:
                    json.dump(x, f)
                out.append(p)
            else:
                out.append(_source(x, what)[0])
        yield out


def _instances(instances: Union[Source, Sequence[Source]]) -> List[Source]:
    if isinstance(instances, (str, os.PathLike, dict)):
        return [instances]
    return list(instances)


def gap(instances: Union[Source, Sequence[Source]] = (), *, memory: Union[None, int, str] = None,
        exact: bool = False, exact_max_ops: int = 8, time_limit: Optional[int] = None,
        heuristics: Sequence[str] = (), jobs: Optional[int] = None, release: Optional[str] = None,
        allocator: Optional[str] = None) -> GapReport:
    """The optimality-gap report (``offcert gap``): heuristics against certified
    bounds and optima, over instance files, folders of them, or dicts, and the
    budgets ``memory`` (``"FROM:TO:STEPS"`` or one value; default each file's
    own). ``time_limit`` (whole seconds) turns on the anytime search for open
    rows. Without it, the rows do not depend on the machine or on ``jobs``.
    ``allocator`` (``"exact"``, ``"va:40MB"``, ``"caching"``) judges every
    schedule again under that allocator (``offcert gap --allocator``)."""
    items = [(x, "instance") for x in _instances(instances)]
    with _files(items) as paths:
        raw = _offcert.gap([p for p in paths if p], _bytes(memory), exact, exact_max_ops, time_limit,
                           list(heuristics), jobs, release, False, allocator)
    return GapReport._from(json.loads(raw))


@contextlib.contextmanager
def _captured_stdout() -> Iterator[List[str]]:
    """Capture what this process writes to file descriptor 1 (the Rust side's
    stdout) while the block runs."""
    sys.stdout.flush()
    saved = os.dup(1)
    box: List[str] = []
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            yield box
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            tmp.seek(0)
            box.append(tmp.read().decode("utf-8", "replace"))


def run(*args: Union[str, "os.PathLike[str]"]) -> CommandResult:
    """Run any ``offcert`` subcommand in this process, as the CLI would
    (``offcert.run("import", "rotor", "chain.txt", "-o", "out.json")``): its exit
    code and its output. Bad input raises ``ValueError``. Every other function
    of this package is preferred where one exists."""
    argv = [os.fspath(a) for a in args]
    with _captured_stdout() as box:
        code = _offcert.run_cli(argv)
    text = box[0]
    data = None
    if "--json" in argv:
        try:
            data = json.loads(text)
        except ValueError:
            data = None
    return CommandResult(command=argv, returncode=code, text=text, data=data)
