"""An exchange instance: a phase on a spec with what every method derives from it, once.

The greedy, the bounds and every method take an `Instance` rather than re-deriving the
timings, the index by id or the horizon formula each on its own. The validator and the
simulator do not: they recompute the rules from the phase, so a bug here cannot hide there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ipuopt.exchange.phase import Phase
from ipuopt.exchange.timing import Timing, phase_timings
from ipuopt.spec import Spec

Solution = tuple[dict[str, int], dict[str, str]]  # (start, width) per transfer id


@dataclass
class Instance:
    phase: Phase
    spec: Spec
    timings: list[Timing] = field(default_factory=list)
    bound: int = 0  # the best lower bound known on the horizon (0 until the bounds ran)

    def __post_init__(self) -> None:
        if not self.timings:
            self.timings = phase_timings(self.phase, self.spec)

    @classmethod
    def of(cls, spec: Spec, timings: list[Timing], bound: int = 0) -> Instance:
        """An instance of some transfers' timings (a sub-phase, a neighbourhood)."""
        return cls(Phase(spec_ref=spec.name, transfers=[tm.transfer for tm in timings]), spec, timings, bound)

    @cached_property
    def by_id(self) -> dict[str, Timing]:
        return {tm.transfer.id: tm for tm in self.timings}

    def horizon(self, solution: Solution) -> int:
        """The cycle at which the last transfer's last receive completes."""
        return horizon_of(self.timings, *solution)


def horizon_of(timings: list[Timing], starts: dict[str, int], widths: dict[str, str]) -> int:
    return max((starts[tm.transfer.id] + tm.end_offset(widths[tm.transfer.id]) for tm in timings), default=0)
