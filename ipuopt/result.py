"""The status vocabulary and result type shared by every solver of every problem."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OPTIMAL = "optimal"
FEASIBLE = "feasible"
FALLBACK = "fallback"
INFEASIBLE = "infeasible"
STATUSES = (OPTIMAL, FEASIBLE, FALLBACK, INFEASIBLE)
UNKNOWN = "unknown"  # placement only: nothing found within the limits, nothing proved


def gap(value: float | None, bound: float | None) -> float | None:
    """Relative gap (value - bound) / value, the convention of CP-SAT and MIP solvers."""
    if value is None or bound is None:
        return None
    if value <= 0:
        return 0.0
    return max(0.0, (value - bound) / value)


@dataclass
class Result:
    """What any solver returns: status, objective, proven bound, time and the solution."""

    solver: str
    status: str
    objective: int | None
    lower_bound: int | None
    runtime: float
    solution: Any = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        return gap(self.objective, self.lower_bound)
