"""The front door of arena placement: the solve kernel (`kernel.solve`) over the live bytes,
the best-fit greedy and the validator.

Every method starts from the greedy's placement (warm start and fallback) and adds candidate
placements to the instance; the best valid candidate is returned, credited to its method."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ipuopt import kernel
from ipuopt.arena.greedy import best_greedy
from ipuopt.arena.instance import Instance, score
from ipuopt.arena.problem import OBJECTIVES, Arena
from ipuopt.budget import Budget
from ipuopt.display import count, html
from ipuopt.errors import InputError
from ipuopt.kernel import Door
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import method
from ipuopt.result import Bound, Result, Status


@dataclass
class Placement:
    """The solution of an arena: an offset per buffer (none when nothing was found) and the
    peak address it reaches, for the objective it was placed for."""

    arena: Arena
    objective: str
    offsets: dict[str, int] | None
    peak: int | None = None

    def __repr__(self) -> str:
        placed = count(len(self.offsets or {}), "buffer")
        return f"Placement(arena {self.arena.name!r}: {placed} placed, objective {self.objective}, " \
               f"peak {self.peak})"

    def _repr_html_(self) -> str | None:
        return html("placement", self)

    def to_dict(self) -> dict[str, Any]:
        a = self.arena
        return {"arena": a.name, "spec": a.spec_name, "region": a.region, "objective": self.objective,
                "peak": self.peak, "offsets": self.offsets or {}}


class _Door(Door):
    """The arena side of the kernel: the live bytes (a bound, and a proof when they exceed
    the capacity), the best-fit greedy, then the best valid placement any method added."""

    after = "the greedy"

    def __init__(self, arena: Arena, objective: str, solver: str) -> None:
        self.solver, self.t0 = solver, time.perf_counter()
        self.instance = Instance(arena, objective, *arena.peak_live())
        self.least = {"fit": 0, "peak": self.instance.live, "conflicts": 0}[objective]  # the bound
        self.g_peak: int | None = None
        self.info: dict[str, Any] = {}
        self.interrupted = False

    def baseline(self, budget: Budget, progress: Progress) -> Result:
        inst = self.instance
        if inst.live > inst.arena.capacity:
            return Result(Status.INFEASIBLE, reason=f"at step {inst.live_step} live bytes {inst.live} "
                                                    f"exceed capacity {inst.arena.capacity}")
        progress({"stage": "greedy"})
        inst.greedy, order = best_greedy(inst.arena)
        value, self.g_peak, ok = score(inst.arena, inst.objective, inst.greedy)
        progress({"stage": "greedy done", "greedy peak": self.g_peak})
        extras = {"greedy_peak": self.g_peak}
        if not ok:
            return Result(Status.UNKNOWN, bound=self.least, solver="greedy", extras=extras)
        inst.add(f"greedy/{order}", inst.greedy)
        status = Status.OPTIMAL if value <= self.least else Status.FEASIBLE
        return Result(status, inst.greedy, value, self.least, solver="greedy", extras=extras)

    def answer(self, greedy: Result | None, found: Result | None, interrupted: bool) -> Result:
        self.interrupted = interrupted
        if greedy is None:
            return self._answer(Status.UNKNOWN, reason="interrupted before the greedy's placement")
        if greedy.status == Status.INFEASIBLE:  # the live bytes' proof, made before the greedy
            return self._answer(Status.INFEASIBLE, reason=greedy.reason)
        extras = {**greedy.extras, **(found.extras if found else {})}
        self.info = {k: v for k, v in extras.items() if k != "reason"}
        if found is not None and found.status == Status.INFEASIBLE:
            return self._answer(Status.INFEASIBLE, found.solver, reason=found.reason)
        if found is not None and found.bound is not None:
            self.least = max(self.least, found.bound)
        proved = greedy.status == Status.OPTIMAL or (found is not None and found.status == Status.OPTIMAL)
        return self._choose(Status.OPTIMAL if proved else Status.FEASIBLE)

    def _answer(self, status: Status, name: str = "", offsets: dict[str, int] | None = None,
                value: int | None = None, peak: int | None = None, reason: str = "") -> Result[Placement]:
        inst = self.instance
        bound = value if status == Status.OPTIMAL else self.least
        named = [Bound("live bytes", inst.live, f"step {inst.live_step}")] if inst.objective == "peak" else []
        return Result(status, Placement(inst.arena, inst.objective, offsets, peak), value, bound,
                      time.perf_counter() - self.t0, self.solver, self.info, name or self.solver,
                      self.interrupted, named, reason)

    def _choose(self, status: Status) -> Result[Placement]:
        """The best valid candidate, or why none was found."""
        inst = self.instance
        scored = [(name, offs, *score(inst.arena, inst.objective, offs)) for name, offs in inst.candidates]
        valid = [s for s in scored if s[4]]
        if not valid:
            cap = inst.arena.capacity
            why = {"greedy": f"greedy peak {self.g_peak} exceeds capacity {cap}",
                   "baseline": f"the baseline (4 KiB shift of the best-fit placement) needs "
                               f"{self.info.get('baseline_peak')} bytes, more than capacity {cap}",
                   }.get(self.solver, "no placement found in the time limit and none proved impossible")
            return self._answer(Status.UNKNOWN, reason=why)
        # a solver asked for by name keeps its own placement unless another is better in the
        # objective itself; the result always names the solver whose placement it is
        name, offsets, value, peak, _ = min(valid, key=lambda v: (v[2], not v[0].startswith(self.solver),
                                                                  v[3]))
        if value <= self.least:
            status = Status.OPTIMAL
        return self._answer(status, name, offsets, value, peak)


def place(arena: Arena, objective: str = "fit", solver: str = "auto",
          params: SolveParams | dict[str, Any] | None = None,
          progress: Progress | None = None, budget: Budget | None = None) -> Result[Placement]:
    """Place `arena` within `budget` (or `params`' time limit), through the solve kernel; every
    placement returned passes the validator.

    `progress` hears what the placer is doing (`stage`) and the greedy's peak. Ctrl-C stops
    the solvers and returns the best placement found so far, marked `interrupted`."""
    if objective not in OBJECTIVES:
        raise InputError.one("", "--objective", f"one of {', '.join(OBJECTIVES)}")
    chosen = method("arena", solver)
    params = SolveParams.of(params)
    return kernel.solve(_Door(arena, objective, solver), chosen, params, budget, progress)
