"""Type stubs of the `offcert` package (docs/PYTHON.md)."""

import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from . import distributed as distributed

Source = Union[str, os.PathLike[str], Dict[str, Any]]
PathLike = Union[str, os.PathLike[str]]
Memory = Union[None, int, str]

class Violation:
    rule: str
    rule_name: str
    event: Optional[int]
    time: Optional[int]
    sentence: str
    detail: Dict[str, Any]

class Verdict:
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
    text: str
    svg: Optional[str]
    @property
    def rules(self) -> List[str]: ...

class Bound:
    source: str
    strength: str
    value: str
    ceil: int
    @property
    def certified(self) -> bool: ...

class BoundFailure:
    source: str
    error: str
    infeasible: bool

class BoundReport:
    instance: str
    family: str
    release: str
    memory: int
    bounds: List[Bound]
    failures: List[BoundFailure]
    @property
    def best_certified(self) -> Optional[Bound]: ...
    @property
    def infeasible(self) -> bool: ...

class HeuristicResult:
    heuristic: str
    verdict: str
    makespan: Optional[int]
    peak: Optional[int]
    seconds: float
    error: Optional[str]
    schedule: Optional[Dict[str, Any]]
    @property
    def valid(self) -> bool: ...

class SolveResult:
    status: str
    makespan: Optional[int]
    bound: Optional[int]
    release: str
    schedule: Optional[Dict[str, Any]]
    methods: List[Dict[str, Any]]
    evidence: List[str]
    disagreements: List[str]
    label: Any

class GapRow:
    def to_dict(self) -> Dict[str, Any]: ...
    def __getitem__(self, key: str) -> Any: ...
    @property
    def instance(self) -> str: ...
    @property
    def budget(self) -> int: ...
    @property
    def best_makespan(self) -> Optional[int]: ...
    @property
    def best_certified_bound(self) -> Optional[int]: ...
    @property
    def certified_gap(self) -> Optional[str]: ...
    @property
    def optimum(self) -> Optional[Dict[str, Any]]: ...

class GapReport:
    rows: List[GapRow]
    text: str
    summary: Optional[str]
    csv: Optional[str]
    def to_dicts(self) -> List[Dict[str, Any]]: ...
    def to_pandas(self) -> Any: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[GapRow]: ...
    def __getitem__(self, i: int) -> GapRow: ...

class CommandResult:
    command: List[str]
    returncode: int
    text: str
    data: Any
    written: Optional[str]
    output: Any
    @property
    def ok(self) -> bool: ...

def check(instance: Source, schedule: Source, *, release: Optional[str] = ...) -> Verdict: ...
def plot(instance: Source, schedule: Source, out: Optional[PathLike] = ..., *, release: Optional[str] = ...) -> Verdict: ...
def bound(instance: Source, *, memory: Memory = ..., release: Optional[str] = ...) -> BoundReport: ...
def heuristic(instance: Source, names: Sequence[str] = ..., *, memory: Memory = ...,
              release: Optional[str] = ...) -> List[HeuristicResult]: ...
def solve(instance: Source, *, method: str = ..., time_limit: float = ..., memory: Memory = ...,
          release: Optional[str] = ...) -> SolveResult: ...
def gap(instances: Union[Source, Sequence[Source]] = ..., *, memory: Memory = ..., exact: bool = ...,
        exact_max_ops: int = ..., time_limit: Optional[int] = ..., heuristics: Sequence[str] = ...,
        jobs: Optional[int] = ..., release: Optional[str] = ..., allocator: Optional[str] = ...) -> GapReport: ...
def run(*args: PathLike) -> CommandResult: ...
def audit(trace: PathLike, *, instance: Optional[Source] = ..., mapping: Optional[Source] = ...,
          plan: Optional[Source] = ..., budget: Memory = ..., link_gbps: Union[None, str, float] = ...,
          duplex: Optional[str] = ..., device: Optional[int] = ..., write_schedule: Optional[PathLike] = ...,
          plot: Optional[PathLike] = ...) -> CommandResult: ...
def offmate(instance: Source, *, ilp: Sequence[str] = ..., time_limit: float = ..., repairs: int = ...,
            no_cpu_optim: bool = ..., baselines: Sequence[str] = ..., out: Optional[PathLike] = ...,
            release: Optional[str] = ...) -> CommandResult: ...
def import_et(trace: PathLike, *, kineto: Optional[PathLike] = ..., gpu_memory: Memory = ..., bandwidth: int = ...,
              name: Optional[str] = ..., out: Optional[PathLike] = ...) -> CommandResult: ...
def import_rotor(file: Source, *, out: Optional[PathLike] = ..., mem_unit: Union[int, str] = ...,
                 tick_us: Union[int, str] = ..., gpu_memory: Memory = ..., bandwidth: Optional[int] = ...,
                 name: Optional[str] = ..., fastest_only: bool = ..., rockmate_tmp: str = ...) -> CommandResult: ...
def import_rockmate(file: Source, *, out: Optional[PathLike] = ..., mem_unit: Union[int, str] = ...,
                    tick_us: Union[int, str] = ..., gpu_memory: Memory = ..., bandwidth: Optional[int] = ...,
                    name: Optional[str] = ..., fastest_only: bool = ..., rockmate_tmp: str = ...) -> CommandResult: ...
def import_rotor_sequence(sequence: Source, chain: Source, *, out: Optional[PathLike] = ...,
                          gpu_memory: Memory = ...) -> CommandResult: ...
def import_rockmate_sequence(sequence: Source, chain: Source, *, out: Optional[PathLike] = ...,
                             gpu_memory: Memory = ...) -> CommandResult: ...
def import_offmate_solution(instance: Source, solution: Source, *, out: Optional[PathLike] = ...,
                            no_compare: bool = ..., time_limit: Optional[float] = ..., show: int = ...) -> CommandResult: ...
