"""The status vocabulary and the one result type every method of every problem returns.

A `Result[T]` is the verdict (status, objective value, best bound, who produced the answer,
time, whether Ctrl-C cut it short, the named bounds) around a solution of the problem's own
type T: a `Schedule`, a `Placement` or a `Plan`. Its `to_dict` is what `--json` prints and
what `--out` writes, one shape for all three problems: the common keys, then the solution's
own (a schedule's transfers, a placement's offsets, a plan's choice)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar

from ipuopt.display import html


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


@dataclass(frozen=True)
class Bound:
    """A named lower bound on the objective and where it is attained (a tile, a pair, an
    element, a chain, a region at a step)."""

    name: str
    value: int
    where: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "where": self.where}


T = TypeVar("T")


@dataclass
class Result(Generic[T]):
    """What any method of any problem returns.

    `solver` is the method asked for, `method` the one whose answer `solution` is (the
    greedy's rule when an exact solver fell back to it); `value` is the objective (horizon,
    peak or conflicts, program cycles) and `bound` the best lower bound on it; `extras`
    carries the method's own figures (greedy horizon, node counts, ...)."""

    status: Status
    solution: T | None = None
    value: int | None = None
    bound: int | None = None
    runtime: float = 0.0
    solver: str = ""
    extras: dict[str, Any] = field(default_factory=dict)
    method: str = ""
    interrupted: bool = False
    bounds: list[Bound] = field(default_factory=list)
    reason: str = ""

    @property
    def gap(self) -> float | None:
        return gap(self.value, self.bound)

    @property
    def lower_bound(self) -> int | None:
        return self.bound

    def __repr__(self) -> str:  # short: the generated one would print every transfer
        gap = f", gap {self.gap:.1%}" if self.gap is not None else ""
        sol = self.solution
        shown = f"; {sol!r}" if sol is not None and type(sol).__repr__ is not object.__repr__ else ""
        return f"Result({self.solver} {self.status}: value {self.value}, bound {self.bound}{gap}, " \
               f"{self.runtime:.2f} s{shown})"

    def _repr_html_(self) -> str | None:
        return html("result", self)

    def to_dict(self) -> dict[str, Any]:
        own = self.solution.to_dict() if self.solution is not None else {}  # type: ignore[attr-defined]
        head = {k: v for k, v in own.items() if not isinstance(v, list | dict)}  # names, then figures
        doc: dict[str, Any] = {**head, "solver": self.solver, "method": self.method or self.solver,
                               "status": str(self.status), "value": self.value, "lower_bound": self.bound,
                               "gap": self.gap, "runtime_s": round(self.runtime, 3)}
        if self.interrupted:
            doc["interrupted"] = True
        if self.reason:
            doc["reason"] = self.reason
        doc["bounds"] = [b.to_dict() for b in self.bounds]
        doc["extras"] = dict(self.extras)
        doc.update({k: v for k, v in own.items() if k not in head})  # the solution's items last
        return doc
