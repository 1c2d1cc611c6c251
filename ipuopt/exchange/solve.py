"""The front door of exchange scheduling: pick a solver, solve, bound, validate."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ipuopt.errors import InputError
from ipuopt.exchange.bounds import Bound, all_bounds, best_bound
from ipuopt.exchange.greedy import best_greedy, horizon_of
from ipuopt.exchange.phase import Phase
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.timing import phase_timings
from ipuopt.exchange.validate import validate
from ipuopt.params import Progress, SolveParams, run_interruptible
from ipuopt.result import Result, Status, gap
from ipuopt.spec import Spec

# Exact solvers by name: (module, function), imported when first asked for, so that the
# greedy path never loads OR-Tools or PuLP. Each takes (spec, timings, hint, lower bound,
# params, progress) and returns a Result whose solution is (starts, widths).
EXACT = {"cpsat": ("ipuopt.exchange.cpsat", "solve_cpsat"),
         "milp": ("ipuopt.exchange.milp", "solve_milp"),
         "lns": ("ipuopt.exchange.lns", "solve_lns"),
         "iterated": ("ipuopt.exchange.iterated", "solve_iterated"),
         "colour": ("ipuopt.exchange.colour", "solve_colour"),
         "auto": ("ipuopt.exchange.auto", "solve_auto")}
BACKENDS = ("greedy", *EXACT)


def exact_solver(name: str) -> Callable[..., Result]:
    module, function = EXACT[name]
    return getattr(importlib.import_module(module), function)


@dataclass
class ExchangeResult:
    schedule: Schedule
    bounds: list[Bound]
    runtime: float

    @property
    def lower_bound(self) -> int:
        return self.schedule.lower_bound or 0

    @property
    def gap(self) -> float | None:
        return gap(self.schedule.horizon, self.schedule.lower_bound)

    @property
    def interrupted(self) -> bool:
        return bool(self.schedule.extra.get("interrupted"))

    def summary(self) -> dict[str, Any]:
        s = self.schedule
        return {"phase": s.phase, "spec": s.spec, "solver": s.solver, "status": s.status,
                "transfers": len(s.starts), "horizon": s.horizon, "lower_bound": s.lower_bound,
                "gap": self.gap, "bounds": [b.to_dict() for b in self.bounds],
                "runtime_s": round(self.runtime, 3), **s.extra}


def solve(phase: Phase, spec: Spec, backend: str = "greedy",
          params: SolveParams | dict[str, Any] | None = None,
          progress: Progress | None = None) -> ExchangeResult:
    """Schedule `phase` on `spec` with `backend`; every returned schedule passes the validator.

    Ctrl-C during an exact solve stops it and returns its best schedule so far (status
    `feasible`, or `fallback` with the greedy's), marked `interrupted`."""
    if backend not in BACKENDS:
        raise InputError.one("", "solver", f"unknown solver {backend!r} (one of {', '.join(BACKENDS)})")
    params = SolveParams.of(params)
    t0 = time.perf_counter()
    timings = phase_timings(phase, spec)
    bounds = all_bounds(phase, spec, timings)
    ours = best_bound(bounds).value
    starts, widths, rule = best_greedy(phase, spec)
    greedy_h = horizon_of(timings, starts, widths)
    greedy = Result(Status.FEASIBLE, (starts, widths), greedy_h, ours, solver=f"greedy/{rule}")
    extra: dict[str, Any] = {"greedy_horizon": greedy_h, "greedy_rule": rule}
    result = greedy
    if backend != "greedy":
        run = exact_solver(backend)
        found, interrupted = run_interruptible(
            lambda: run(spec, timings, (starts, widths), ours, params, progress), params.stop)
        result = found or Result(Status.FALLBACK, greedy.solution, greedy_h, None, solver=backend)
        extra.update(result.extras)
        if interrupted:
            extra["interrupted"] = True
    status = result.status
    # the schedule's author: the greedy's when the exact solver fell back to its hint
    extra["produced_by"] = greedy.solver if status == Status.FALLBACK else result.solver
    starts, widths = result.solution
    horizon = horizon_of(timings, starts, widths)
    bound = max(ours, result.bound or 0)
    if horizon <= bound:
        status = Status.OPTIMAL
    if status == Status.OPTIMAL:
        bound = horizon
    schedule = Schedule(starts=starts, widths=widths, horizon=horizon, phase=phase.name,
                        spec=spec.name, solver=backend, status=status, lower_bound=bound,
                        extra=extra)
    report = validate(phase, spec, schedule)
    if not report.ok:  # a solver bug: never hand out a schedule that breaks the rules
        raise RuntimeError(f"{backend} produced an invalid schedule: {report.violations[:3]}")
    return ExchangeResult(schedule, bounds, time.perf_counter() - t0)
