"""offcert from Python: a certified checker for GPU-memory offloading
schedules, with exact solvers, lower bounds, heuristics and trace audits.

Every function calls the ``offcert`` Rust crate in this process (not the CLI
binary). Every schedule and figure it returns went through offcert's checker;
bounds carry their claim strength. See docs/PYTHON.md.
"""

from ._api import bound, check, gap, heuristic, plot, run, solve
from ._commands import (
    audit,
    import_et,
    import_offmate_solution,
    import_rockmate,
    import_rockmate_sequence,
    import_rotor,
    import_rotor_sequence,
    offmate,
)
from ._types import (
    Bound,
    BoundFailure,
    BoundReport,
    CommandResult,
    GapReport,
    GapRow,
    HeuristicResult,
    SolveResult,
    Verdict,
    Violation,
)

__all__ = [
    "audit", "bound", "check", "gap", "heuristic", "offmate", "plot", "run", "solve",
    "import_et", "import_offmate_solution", "import_rockmate", "import_rockmate_sequence",
    "import_rotor", "import_rotor_sequence",
    "Bound", "BoundFailure", "BoundReport", "CommandResult", "GapReport", "GapRow", "HeuristicResult",
    "SolveResult", "Verdict", "Violation", "distributed",
]

from . import distributed  # noqa: E402  (imports Ray only when a sweep runs)
