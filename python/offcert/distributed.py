"""Sweeps on a Ray cluster: ``offcert.distributed.gap(...)``.

Each instance file is one Ray task: its budgets form a chain (each budget is
offered the best schedule of the budget before it, as in ``offcert gap``), so
a task computes exactly the rows a local run computes for that file. A task
re-checks every row's best schedule with the checker before it returns, and
the driver checks each one again on arrival against the instance file at the
row's budget, so nothing unchecked crosses the wire. The rows are merged in the
local run's order; without ``time_limit`` they equal the local run's row for
row (``seconds`` aside, a wall-clock figure).

Needs Ray (``pip install offcert[ray]``); call ``ray.init(...)`` first, or let
this module start a local instance.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _offcert
from ._api import Source, _files, _instances, _bytes, check
from ._types import CERTIFIED, GapReport, GapRow


class UncheckedRow(RuntimeError):
    """A row whose schedule or bound did not survive the re-check."""


def recheck_row(row: Dict[str, Any]) -> None:
    """Check the row's best schedule again against the instance at its budget
    (raises :class:`UncheckedRow` unless the checker accepts it with the row's
    makespan), and that the row's certified bound is certified and at most
    that makespan."""
    best = row.get("best_schedule")
    if best is None:
        return
    schedule = row.get("best_schedule_file")
    instance = row.get("instance_file_at_budget")
    if schedule is None or instance is None:
        raise UncheckedRow(f"{row['instance']} @ {row['budget']} B: the row carries no schedule to check")
    v = check(instance, schedule)
    if not v.valid or v.makespan != best["makespan"]:
        raise UncheckedRow(f"{row['instance']} @ {row['budget']} B: the checker says {v!r}, the row {best}")
    b = row.get("best_certified_bound")
    if b is not None and (b["strength"] != CERTIFIED or b["ceil"] > v.makespan):
        raise UncheckedRow(f"{row['instance']} @ {row['budget']} B: bound {b} vs makespan {v.makespan}")


def _rows_of(path: str, options: Dict[str, Any]) -> Dict[str, Any]:
    """One task: the rows of one instance file, each re-checked."""
    raw = json.loads(_offcert.gap([path], with_schedules=True, jobs=1, **options))
    for row in raw["rows"]:
        recheck_row(row)
    return {"rows": raw["rows"], "text": raw["text"]}


def gap(instances: Union[Source, Sequence[Source]] = (), *, memory: Union[None, int, str] = None,
        exact: bool = False, exact_max_ops: int = 8, time_limit: Optional[int] = None,
        heuristics: Sequence[str] = (), release: Optional[str] = None,
        num_cpus_per_task: float = 1) -> GapReport:
    """``offcert.gap(...)`` with every instance file a Ray task. The report's
    rows are the local run's (``summary`` and ``csv`` are ``None``: merge
    shards with ``to_dicts()``). Each row also keeps its best checked schedule
    (``row["best_schedule_file"]``) and the instance at its budget."""
    try:
        import ray
    except ImportError as e:
        raise ImportError("offcert.distributed needs Ray: pip install 'offcert[ray]'") from e
    if not ray.is_initialized():
        ray.init()
    options = {"memory": _bytes(memory), "exact": exact, "exact_max_ops": exact_max_ops,
               "time_limit": time_limit, "heuristics": list(heuristics), "release": release}
    task = ray.remote(num_cpus=num_cpus_per_task)(_rows_of)
    with _files([(x, "instance") for x in _instances(instances)]) as paths:
        files = _offcert.expand_instances([p for p in paths if p])
        parts = ray.get([task.remote(f, options) for f in files])
    rows: List[GapRow] = []
    for part in parts:
        for row in part["rows"]:
            recheck_row(row)
            rows.append(GapRow(row))
    return GapReport(rows, "".join(p["text"] for p in parts), None, None)
