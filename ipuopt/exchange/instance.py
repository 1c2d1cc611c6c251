"""An exchange instance: a phase on a spec with what every method derives from it, once.

The greedy, the bounds and every method take an `Instance` rather than re-deriving the
timings, the index by id or the horizon formula each on its own. The validator and the
simulator do not: they recompute the rules from the phase, so a bug here cannot hide there.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from ipuopt.budget import Budget
from ipuopt.exchange.conflicts import parts
from ipuopt.exchange.phase import Phase
from ipuopt.exchange.timing import Timing, phase_timings
from ipuopt.params import Progress, SolveParams
from ipuopt.result import Result
from ipuopt.spec import Spec

Solution = tuple[dict[str, int], dict[str, str]]  # (start, width) per transfer id


@dataclass
class Instance:
    phase: Phase
    spec: Spec
    timings: list[Timing] = field(default_factory=list)
    bound: int = 0  # the best lower bound known on the horizon (0 until the bounds ran)
    # the best schedule a method has handed back so far and its method, copied: what Ctrl-C
    # keeps when the method running then does not return within its grace (`solve`)
    incumbent: tuple[Solution, int, str] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.timings:
            self.timings = phase_timings(self.phase, self.spec)

    @classmethod
    def of(cls, spec: Spec, timings: list[Timing], bound: int = 0) -> Instance:
        """An instance of some transfers' timings (a sub-phase, a neighbourhood)."""
        return cls(Phase(spec_ref=spec.name, transfers=[tm.transfer for tm in timings]), spec, timings, bound)

    @cached_property
    def parts(self) -> list[list[int]]:
        """The transfers of each part of the phase that shares no lane, element or dependency
        with the others (`conflicts.parts`)."""
        return parts(self.timings)

    def keep(self, solution: Solution, value: int, method: str) -> None:
        """Keep `solution` as the incumbent when it is the best so far."""
        if self.incumbent is None or value < self.incumbent[1]:
            self.incumbent = ((dict(solution[0]), dict(solution[1])), value, method)

    def horizon(self, solution: Solution) -> int:
        """The cycle at which the last transfer's last receive completes."""
        return horizon_of(self.timings, *solution)


# How every exchange method is called: from a schedule (the greedy's, or the best so far) to
# a result never worse than it.
ExchangeMethod = Callable[[Instance, Solution, SolveParams, Budget, Progress | None], Result]


def horizon_of(timings: list[Timing], starts: dict[str, int], widths: dict[str, str]) -> int:
    return max((starts[tm.transfer.id] + tm.end_offset(widths[tm.transfer.id]) for tm in timings), default=0)


def successors(timings: list[Timing]) -> tuple[list[list[int]], list[int]]:
    """Per transfer index: the indices that wait for it, and how many it waits for."""
    index = {tm.transfer.id: i for i, tm in enumerate(timings)}
    succs: list[list[int]] = [[] for _ in timings]
    for i, tm in enumerate(timings):
        for a in tm.transfer.after:
            succs[index[a]].append(i)
    return succs, [len(tm.transfer.after) for tm in timings]


def topological_by(timings: list[Timing], keys: list) -> list[int]:
    """Transfer indices in an order that respects `after`; among ready ones the least key."""
    succs, indeg = successors(timings)
    ready = [(keys[i], i) for i in range(len(timings)) if indeg[i] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(i)
        for s in succs[i]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(ready, (keys[s], s))
    return order
