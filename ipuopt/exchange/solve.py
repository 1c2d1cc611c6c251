"""The front door of exchange scheduling: the solve kernel (`kernel.solve`) over the
greedy, the phase's bounds and the validator."""

from __future__ import annotations

import time
from typing import Any

from ipuopt import kernel
from ipuopt.budget import Budget, Interrupted
from ipuopt.exchange.bounds import all_bounds, best_bound
from ipuopt.exchange.greedy import solve_greedy
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.phase import Phase
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.validate import validate
from ipuopt.kernel import Door
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import method
from ipuopt.result import Result, Status
from ipuopt.spec import Spec

# Of a time limit, at most: the greedy's rules after the first (which always completes: it
# is the answer of last resort), then the clique bound's search.
GREEDY_SHARE, BOUND_SHARE = 0.3, 0.15
# Seconds kept back from a time limit for validating and writing, per transfer and per
# receive (measured: validation ~25 us a transfer and ~7 us a receive of a multicast,
# writing the JSON ~10 us a transfer).
RESERVE_PER_TRANSFER, RESERVE_PER_RECEIVE = 5e-5, 1e-5


class _Door(Door):
    """The exchange side of the kernel: the greedy, then the bounds, each with its share."""

    after = "the greedy and the bounds"

    def __init__(self, phase: Phase, spec: Spec, solver: str, params: SolveParams, budget: Budget) -> None:
        self.phase, self.spec, self.solver, self.params, self.budget = phase, spec, solver, params, budget
        self.t0 = time.perf_counter()
        self.instance: Instance | None = None
        self.bounds: list | None = None
        self.limit = self.m0 = 0.0
        self._inner: Budget | None = None

    def inner(self, budget: Budget) -> Budget:
        self._inner = budget.reserve(0.05 + RESERVE_PER_TRANSFER * len(self.phase.transfers)
                                     + RESERVE_PER_RECEIVE * sum(len(t.dst) for t in self.phase.transfers))
        return self._inner

    def baseline(self, budget: Budget, progress: Progress) -> Result:
        self.limit, self.m0 = budget.left(), time.monotonic()
        progress({"stage": "greedy"})
        self.instance = inst = Instance(self.phase, self.spec)
        until = None if self.limit is None else self.m0 + GREEDY_SHARE * self.limit
        return solve_greedy(inst, None, self.params, budget, until=until)

    def bound(self, greedy: Result, budget: Budget, progress: Progress) -> None:
        began = time.monotonic()  # the bounds' share counts from here too: a greedy that outran
        # its own share (its first rule always completes) leaves them theirs (a phase's bound
        # in a loaded cell of `optimize` was 10,718 instead of the group bound's 13,181)
        limit, m0 = self.limit, self.m0

        def enough() -> bool:
            if budget.is_set() or (limit is not None and time.monotonic() > max(
                    m0 + (GREEDY_SHARE + BOUND_SHARE) * limit, began + BOUND_SHARE * limit)):
                budget.cut()
                return True
            return False

        progress({"stage": "bounds", "incumbent": greedy.value})
        self.bounds = all_bounds(self.instance, enough)
        greedy.bound = self.instance.bound = best_bound(self.bounds).value

    def answer(self, greedy: Result | None, found: Result | None, interrupted: bool) -> Result:
        if greedy is None:
            raise Interrupted("nothing found before the interrupt")
        inst, phase, solver = self.instance, self.phase, self.solver
        held = inst.incumbent
        if found is None and held is not None and held[1] < greedy.value:
            # cut short in a stage that did not return in time: the best an earlier stage handed back
            found = Result(Status.FEASIBLE, held[0], held[1], None, solver=held[2])
        if self.bounds is None:  # interrupted in the bounds, which did not end within the grace
            self.bounds = all_bounds(inst, lambda: True)
            greedy.bound = best_bound(self.bounds).value
        extra: dict[str, Any] = {"greedy_horizon": greedy.value,
                                 "greedy_rule": greedy.solver.split("/", 1)[1], **greedy.extras}
        if self.budget.seconds is not None:
            extra["time_limit_s"] = self.budget.seconds
        result = found if found is not None else greedy
        reason = ""
        if solver != "greedy":
            if found is None or found is greedy:
                result = Result(Status.FALLBACK, greedy.solution, greedy.value, None, solver=solver)
            reason = result.extras.pop("reason", "")
            extra.update(result.extras)
        if self.params.reproducible and self._inner.wall_cut:
            extra["not_reproducible"] = ("the wall-clock limit ended a search (greedy rules, clique bound or "
                                         "CP-SAT) before its deterministic end")
        status = result.status
        # the schedule's author: the greedy's when the exact solver fell back to its hint
        by = greedy.solver if status == Status.FALLBACK else result.solver
        starts, widths = result.solution
        starts = {t.id: starts[t.id] for t in phase.transfers}  # in the phase's order
        horizon = inst.horizon((starts, widths))
        bound = max(inst.bound, greedy.bound or 0, result.bound or 0)
        if horizon <= bound:
            status = Status.OPTIMAL
        if status == Status.OPTIMAL:
            bound = horizon
        schedule = Schedule(starts, widths, horizon, phase.name, self.spec.name)
        report = validate(phase, self.spec, schedule)
        if not report.ok:  # a solver bug: never hand out a schedule that breaks the rules
            raise RuntimeError(f"{solver} produced an invalid schedule: {report.violations[:3]}")
        return Result(status, schedule, horizon, bound, time.perf_counter() - self.t0, solver, extra, by,
                      interrupted, self.bounds, reason)


def solve(phase: Phase, spec: Spec, solver: str = "greedy",
          params: SolveParams | dict[str, Any] | None = None,
          progress: Progress | None = None, budget: Budget | None = None) -> Result[Schedule]:
    """Schedule `phase` on `spec` with `solver` (the kernel's steps); every returned schedule
    passes the validator.

    Every method but the plain greedy has a wall-clock time limit (`budget`, or one started
    from `params`' time limit, `DEFAULT_TIME_LIMIT` when none is given) for all of it:
    bounds, greedy, search, validation. Ctrl-C at any stage
    stops it and returns the best schedule so far (status `feasible`, or `fallback` with the
    greedy's), marked `interrupted`; before the greedy's first schedule there is none, and
    `Interrupted` is raised."""
    chosen = method("exchange", solver, "solver")
    params = SolveParams.of(params)
    budget = Budget.of(params.limit(chosen.default_limit), budget)
    return kernel.solve(_Door(phase, spec, solver, params, budget), chosen, params, budget, progress)
