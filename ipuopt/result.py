"""The status vocabulary and the result type shared by every solver of every problem."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    """What a solver achieved. A StrEnum, so it prints and serialises as its value."""

    OPTIMAL = "optimal"        # proved best
    FEASIBLE = "feasible"      # found, not proved best
    FALLBACK = "fallback"      # the exact solver found nothing in time: the greedy answer is returned
    INFEASIBLE = "infeasible"  # proved that nothing satisfies the rules
    UNKNOWN = "unknown"        # nothing found and nothing proved within the limits


def gap(value: float | None, bound: float | None) -> float | None:
    """Relative gap (value - bound) / value, the convention of CP-SAT and MIP solvers."""
    if value is None or bound is None:
        return None
    if value <= 0:
        return 0.0
    return max(0.0, (value - bound) / value)


@dataclass
class Result:
    """What any solver of any problem returns.

    `solution` is the problem's own answer (a schedule's starts and widths, a placement's
    offsets), None when there is none; `solver` names who produced it; `extras` carries the
    solver's own figures (build time, node counts, ...)."""

    status: Status
    solution: Any = None
    value: int | None = None
    bound: int | None = None
    runtime: float = 0.0
    solver: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        return gap(self.value, self.bound)
