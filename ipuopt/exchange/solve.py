"""The front door of exchange scheduling: pick a solver, solve, bound, validate."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ipuopt.errors import InputError, Problem
from ipuopt.exchange.bounds import Bound, all_bounds, best_bound
from ipuopt.exchange.greedy import HABITS, best_greedy, horizon_of
from ipuopt.exchange.phase import Phase
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.timing import phase_timings
from ipuopt.exchange.validate import validate
from ipuopt.params import Interrupted, Progress, SolveParams, run_interruptible
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
# The options each method reads by name (`--param KEY=VALUE`), besides CP-SAT's own
# parameters for the methods that run CP-SAT.
OPTIONS = {"greedy": tuple(HABITS), "cpsat": ("prove_split",), "milp": ("milp_solver", "solver", "msg"),
           "lns": ("free", "sub_time_limit"), "iterated": ("rounds",), "colour": (),
           "auto": ("rounds", "free", "sub_time_limit", "prove_split")}
RUNS_CPSAT = ("cpsat", "lns", "colour", "auto")
# Of a time limit, at most: the greedy's rules after the first (which always completes: it
# is the answer of last resort), then the clique bound's search.
GREEDY_SHARE, BOUND_SHARE = 0.3, 0.15
# Seconds kept back from a time limit for validating and writing, per transfer and per
# receive (measured: validation ~25 us a transfer and ~7 us a receive of a multicast,
# writing the JSON ~10 us a transfer).
RESERVE_PER_TRANSFER, RESERVE_PER_RECEIVE = 5e-5, 1e-5


def check_options(backend: str, options: dict[str, Any], field: str = "--param") -> None:
    """Every option names something `backend` reads: refused before any work otherwise."""
    problems = []
    for key, value in options.items():
        if key in HABITS and backend == "greedy" and not isinstance(value, bool):
            problems.append(Problem("", f"{field} {key}", f"must be true or false, got {value!r}"))
        if key in OPTIONS[backend]:
            continue
        if backend in RUNS_CPSAT:
            from ipuopt.backends.cpsat import is_parameter

            if is_parameter(key):
                continue
        own = ", ".join(OPTIONS[backend]) or "none"
        why = (f"not a CP-SAT parameter, nor one of {backend}'s own ({own})" if backend in RUNS_CPSAT
               else f"not a parameter of {backend} (its own: {own})")
        problems.append(Problem("", f"{field} {key}", why))
    if problems:
        raise InputError(problems)


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

    Every method but the plain greedy has a wall-clock time limit (`DEFAULT_TIME_LIMIT` when
    none is given) for all of it: bounds, greedy, search, validation. Ctrl-C at any stage
    stops it and returns the best schedule so far (status `feasible`, or `fallback` with the
    greedy's), marked `interrupted`; before the greedy's first schedule there is none, and
    `Interrupted` is raised."""
    if backend not in BACKENDS:
        raise InputError.one("", "solver", f"unknown solver {backend!r} (one of {', '.join(BACKENDS)})")
    params = SolveParams.of(params)
    t0 = time.perf_counter()
    timed = backend != "greedy" or params.time_limit is not None
    if timed:
        params.start_clock()
    inner = params.sooner(0.05 + RESERVE_PER_TRANSFER * len(phase.transfers)
                          + RESERVE_PER_RECEIVE * sum(len(t.dst) for t in phase.transfers))
    limit, m0 = inner.budget() if timed else None, time.monotonic()
    kept: dict[str, Any] = {}  # what is known so far, kept when the rest is cut short

    def work() -> Result:
        tell = progress or (lambda info: None)
        tell({"stage": "greedy"})
        kept["timings"] = timings = phase_timings(phase, spec)
        until = None if limit is None else m0 + GREEDY_SHARE * limit
        kept["habits"] = habits = frozenset(k for k in HABITS if backend == "greedy"
                                            and params.options.get(k) is True)
        starts, widths, rule = best_greedy(phase, spec, timings=timings, stop=inner.stop, until=until,
                                           habits=habits)
        kept["greedy"] = greedy = Result(Status.FEASIBLE, (starts, widths),
                                         horizon_of(timings, starts, widths), solver=f"greedy/{rule}")

        def enough() -> bool:
            if inner.stop.is_set() or (limit is not None
                                       and time.monotonic() > m0 + (GREEDY_SHARE + BOUND_SHARE) * limit):
                inner.stop.wall_cut = True
                return True
            return False

        tell({"stage": "bounds", "incumbent": greedy.value})
        kept["bounds"] = all_bounds(phase, spec, timings, enough)
        greedy.bound = ours = best_bound(kept["bounds"]).value
        if backend == "greedy" or params.stop.interrupted:
            return greedy
        tell({"stage": backend, "bound": ours})
        return exact_solver(backend)(spec, timings, (starts, widths), ours, inner, progress)

    found, interrupted = run_interruptible(work, params.stop)
    if "greedy" not in kept:
        raise Interrupted("nothing found before the interrupt")
    if "bounds" not in kept:  # interrupted in the bounds, which did not end within the grace
        kept["bounds"] = all_bounds(phase, spec, kept["timings"], lambda: True)
        kept["greedy"].bound = best_bound(kept["bounds"]).value
    greedy = kept["greedy"]
    timings, bounds, ours = kept["timings"], kept["bounds"], greedy.bound
    extra: dict[str, Any] = {"greedy_horizon": greedy.value, "greedy_rule": greedy.solver.split("/", 1)[1]}
    if kept.get("habits"):
        extra["habits"] = sorted(kept["habits"])  # a baseline, not ipuopt's own greedy
    if limit is not None:
        extra["time_limit_s"] = params.limit()
    result = found if found is not None else greedy
    if backend != "greedy":
        if found is None or found is greedy:
            result = Result(Status.FALLBACK, greedy.solution, greedy.value, None, solver=backend)
        extra.update(result.extras)
    if interrupted:
        extra["interrupted"] = True
    if params.reproducible and inner.stop.wall_cut:
        extra["not_reproducible"] = ("the wall-clock limit ended a search (greedy rules, clique bound or "
                                     "CP-SAT) before its deterministic end")
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
