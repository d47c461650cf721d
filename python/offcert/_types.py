"""Typed results of offcert's functions.

Every figure in these objects was read, in Rust, from a schedule that
offcert's checker accepted (``Checked``) or rejected (``Rejected``), or from a
lower bound with its claim strength; nothing here is computed in Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional

CERTIFIED = "lower bound (certified)"


@dataclass(frozen=True)
class Violation:
    """A broken rule of models/MODEL.md.

    ``rule`` is the violation's tag (``released_while_in_use``, ``memory_exceeded``,
    ...), ``rule_name`` the rule's name in MODEL.md (``released-while-in-use``),
    ``event`` the index of the event it names in the schedule's ``events`` (or
    ``None``), ``time`` when it happens in ticks (``None`` for rules that judge
    the schedule as a whole), ``sentence`` the explanation for people.
    """

    rule: str
    rule_name: str
    event: Optional[int]
    time: Optional[int]
    sentence: str
    detail: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "Violation":
        return cls(d["rule"], d["rule_name"], d["event"], d["time"], d["sentence"], d["detail"])


@dataclass(frozen=True)
class Verdict:
    """The checker's verdict on a schedule (``offcert check``).

    ``valid`` means a real GPU could run the schedule. ``makespan`` (the period,
    when ``cyclic``) is in ticks, ``peak`` in bytes; both are the checker's
    figures whether the schedule is valid or not. ``str(verdict)`` is the
    CLI's text verdict.
    """

    valid: bool
    makespan: int
    peak: int
    violations: List[Violation]
    release: str
    cyclic: bool
    peak_at: int
    peak_cpu: int
    compute_idle: int
    warnings: List[str]
    instance: str
    schedule: str
    instance_sha256: str
    schedule_sha256: str
    text: str = field(repr=False)
    svg: Optional[str] = field(default=None, repr=False)

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "Verdict":
        return cls(
            valid=d["valid"],
            makespan=d["makespan"],
            peak=d["peak"],
            violations=[Violation._from(v) for v in d["violations"]],
            release=d["release"],
            cyclic=d["cyclic"],
            peak_at=d["peak_at"],
            peak_cpu=d["peak_cpu"],
            compute_idle=d["compute_idle"],
            warnings=list(d["warnings"]),
            instance=d["instance"],
            schedule=d["schedule"],
            instance_sha256=d["instance_sha256"],
            schedule_sha256=d["schedule_sha256"],
            text=d["text"],
            svg=d.get("svg"),
        )

    @property
    def rules(self) -> List[str]:
        """The rule of every violation, in order."""
        return [v.rule for v in self.violations]

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Bound:
    """A lower bound on the makespan: ``value`` exact (a rational, as text),
    ``ceil`` its ceiling in ticks, ``strength`` its claim words
    (``lower bound (certified)`` or ``solver-reported``)."""

    source: str
    strength: str
    value: str
    ceil: int

    @property
    def certified(self) -> bool:
        return self.strength == CERTIFIED


@dataclass(frozen=True)
class BoundFailure:
    """A bound that does not apply, or that proves the budget infeasible."""

    source: str
    error: str
    infeasible: bool


@dataclass(frozen=True)
class BoundReport:
    """The papers' lower bounds for one instance at one budget (``offcert bound``)."""

    instance: str
    family: str
    release: str
    memory: int
    bounds: List[Bound]
    failures: List[BoundFailure]

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "BoundReport":
        ok = [Bound(b["source"], b["strength"], b["value"], b["ceil"]) for b in d["bounds"] if "error" not in b]
        bad = [BoundFailure(b["source"], b["error"], b["infeasible"]) for b in d["bounds"] if "error" in b]
        return cls(d["instance"], d["family"], d["release"], d["memory"], ok, bad)

    @property
    def best_certified(self) -> Optional[Bound]:
        """The largest certified bound, or ``None``."""
        c = [b for b in self.bounds if b.certified]
        return max(c, key=lambda b: b.ceil) if c else None

    @property
    def infeasible(self) -> bool:
        """A bound proved that no schedule fits this budget."""
        return any(f.infeasible for f in self.failures)


@dataclass(frozen=True)
class HeuristicResult:
    """One heuristic's run: ``verdict`` is ``valid`` (its schedule passed the
    checker; ``makespan``, ``peak`` and ``schedule`` are then set), ``invalid``
    or ``no schedule`` (``error`` says why)."""

    heuristic: str
    verdict: str
    makespan: Optional[int]
    peak: Optional[int]
    seconds: float
    error: Optional[str] = None
    schedule: Optional[Dict[str, Any]] = field(default=None, repr=False)

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "HeuristicResult":
        return cls(d["heuristic"], d["verdict"], d.get("makespan"), d.get("peak"), d["seconds"],
                   d.get("error"), d.get("schedule"))

    @property
    def valid(self) -> bool:
        return self.verdict == "valid"


@dataclass(frozen=True)
class SolveResult:
    """The exact methods' cross-checked answer (``offcert solve``): ``status``
    in the claim words (``optimal (certified)``, ``optimal (cross-checked)``,
    ``infeasible (cross-checked)``, ...), the checker's ``makespan`` of the best
    ``schedule`` and the best proven ``bound``."""

    status: str
    makespan: Optional[int]
    bound: Optional[int]
    release: str
    schedule: Optional[Dict[str, Any]] = field(repr=False)
    methods: List[Dict[str, Any]] = field(repr=False)
    evidence: List[str] = field(repr=False)
    disagreements: List[str] = field(repr=False)
    label: Any = field(repr=False)

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "SolveResult":
        return cls(d["status"], d["makespan"], d["bound"], d["release"], d["schedule"], d["methods"],
                   d["evidence"], d["disagreements"], d["label"])


class GapRow:
    """One row (instance x budget) of a gap report. ``to_dict()`` is the row as
    ``offcert gap --json`` prints it; the properties read the main figures."""

    __slots__ = ("_d",)

    def __init__(self, d: Dict[str, Any]):
        self._d = d

    def to_dict(self) -> Dict[str, Any]:
        return {k: v for k, v in self._d.items() if k not in ("best_schedule_file", "instance_file_at_budget")}

    def __getitem__(self, key: str) -> Any:
        return self._d[key]

    @property
    def instance(self) -> str:
        return self._d["instance"]

    @property
    def budget(self) -> int:
        return self._d["budget"]

    @property
    def best_makespan(self) -> Optional[int]:
        b = self._d.get("best_schedule")
        return b["makespan"] if b else None

    @property
    def best_certified_bound(self) -> Optional[int]:
        b = self._d.get("best_certified_bound")
        return b["ceil"] if b else None

    @property
    def certified_gap(self) -> Optional[str]:
        """The certified gap in percent (rounded up), as text, or ``None``."""
        g = self._d.get("certified_gap")
        return g["percent"] if g else None

    @property
    def optimum(self) -> Optional[Dict[str, Any]]:
        return self._d.get("optimum")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GapRow) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return (f"GapRow(instance={self.instance!r}, budget={self.budget}, best_makespan={self.best_makespan}, "
                f"best_certified_bound={self.best_certified_bound}, certified_gap={self.certified_gap!r})")


class GapReport:
    """A gap report's rows, in the CLI's order. ``to_dicts()`` gives them as
    ``offcert gap --json`` does; ``to_pandas()`` as a DataFrame (flattened
    columns), when pandas is installed; ``str(report)`` is the CLI's text."""

    def __init__(self, rows: List[GapRow], text: str, summary: Optional[str], csv: Optional[str]):
        self.rows = rows
        self.text = text
        self.summary = summary
        self.csv = csv

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "GapReport":
        return cls([GapRow(r) for r in d["rows"]], d["text"], d["summary"], d["csv"])

    def to_dicts(self) -> List[Dict[str, Any]]:
        return [r.to_dict() for r in self.rows]

    def to_pandas(self):  # -> pandas.DataFrame
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("GapReport.to_pandas needs pandas: pip install pandas") from e
        return pd.json_normalize(self.to_dicts())

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[GapRow]:
        return iter(self.rows)

    def __getitem__(self, i: int) -> GapRow:
        return self.rows[i]

    def __str__(self) -> str:
        return self.text + (self.summary + "\n" if self.summary else "")

    def __repr__(self) -> str:
        return f"GapReport({len(self.rows)} rows; {self.summary or 'merged'})"


@dataclass(frozen=True)
class CommandResult:
    """A subcommand run in this process (``audit``, ``offmate``, the importers):
    its exit code (0 ok / valid, 1 invalid or a problem found), its output
    (parsed from ``--json`` as ``data`` where the command has it, else
    ``None``), its text, and the file it wrote (``written``, loaded as
    ``output`` when it is JSON)."""

    command: List[str]
    returncode: int
    text: str = field(repr=False)
    data: Any = field(default=None, repr=False)
    written: Optional[str] = None
    output: Any = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.returncode == 0
