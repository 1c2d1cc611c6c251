"""The front door of exchange scheduling: pick a backend, solve, bound, validate."""

from __future__ import annotations

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
from ipuopt.result import FALLBACK, FEASIBLE, OPTIMAL, gap
from ipuopt.spec import Spec

BACKENDS = ("greedy", "cpsat", "milp", "lns")
Progress = Callable[[dict[str, Any]], None]


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

    def summary(self) -> dict[str, Any]:
        s = self.schedule
        return {"phase": s.phase, "spec": s.spec, "solver": s.solver, "status": s.status,
                "transfers": len(s.starts), "horizon": s.horizon, "lower_bound": s.lower_bound,
                "gap": self.gap, "bounds": [b.to_dict() for b in self.bounds],
                "runtime_s": round(self.runtime, 3), **s.extra}


def solve(phase: Phase, spec: Spec, backend: str = "greedy", params: dict | None = None,
          progress: Progress | None = None) -> ExchangeResult:
    """Schedule `phase` on `spec` with `backend`; every returned schedule passes the validator."""
    if backend not in BACKENDS:
        raise InputError.one("", "solver", f"unknown solver {backend!r} (one of {', '.join(BACKENDS)})")
    params = dict(params or {})
    t0 = time.perf_counter()
    timings = phase_timings(phase, spec)
    bounds = all_bounds(phase, spec, timings)
    ours = best_bound(bounds).value
    starts, widths, rule = best_greedy(phase, spec)
    greedy_h = horizon_of(timings, starts, widths)
    extra: dict[str, Any] = {"greedy_horizon": greedy_h, "greedy_rule": rule}
    if backend == "greedy":
        status, solver_bound = FEASIBLE, ours  # optimal below when it meets the bound
    else:
        if backend == "cpsat":
            from ipuopt.exchange.cpsat import solve_cpsat as run
        elif backend == "milp":
            from ipuopt.exchange.milp import solve_milp as run
        else:
            from ipuopt.exchange.lns import solve_lns as run
        out = run(phase, spec, timings, (starts, widths), ours, params, progress)
        starts, widths, status, solver_bound = out.starts, out.widths, out.status, out.bound
        extra.update(out.info)
    # the schedule's author: the greedy's when the exact solver fell back to its hint
    extra["produced_by"] = f"greedy/{rule}" if backend == "greedy" or status == FALLBACK else backend
    horizon = horizon_of(timings, starts, widths)
    bound = max(ours, solver_bound or 0)
    if horizon <= bound:
        status = OPTIMAL
    if status == OPTIMAL:
        bound = horizon
    schedule = Schedule(starts=starts, widths=widths, horizon=horizon, phase=phase.name,
                        spec=spec.name, solver=backend, status=status, lower_bound=bound,
                        extra=extra)
    report = validate(phase, spec, schedule)
    if not report.ok:  # a solver bug: never hand out a schedule that breaks the rules
        raise RuntimeError(f"{backend} produced an invalid schedule: {report.violations[:3]}")
    return ExchangeResult(schedule, bounds, time.perf_counter() - t0)
