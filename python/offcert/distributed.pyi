from typing import Any, Dict, Optional, Sequence, Union

from . import GapReport, Memory, Source

class UncheckedRow(RuntimeError): ...

def recheck_row(row: Dict[str, Any]) -> None: ...
def gap(instances: Union[Source, Sequence[Source]] = ..., *, memory: Memory = ..., exact: bool = ...,
        exact_max_ops: int = ..., time_limit: Optional[int] = ..., heuristics: Sequence[str] = ...,
        release: Optional[str] = ..., num_cpus_per_task: float = ...) -> GapReport: ...
