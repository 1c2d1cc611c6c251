"""The front door of exchange scheduling: pick a solver, solve, bound, validate."""

from __future__ import annotations

import time
from typing import Any

from ipuopt.budget import Budget, Interrupted, run_interruptible
from ipuopt.exchange.bounds import all_bounds, best_bound
from ipuopt.exchange.greedy import best_greedy
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.phase import Phase
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.validate import validate
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import HABITS, check_options, method
from ipuopt.result import Result, Status
from ipuopt.spec import Spec

# Of a time limit, at most: the greedy's rules after the first (which always completes: it
# is the answer of last resort), then the clique bound's search.
GREEDY_SHARE, BOUND_SHARE = 0.3, 0.15
# Seconds kept back from a time limit for validating and writing, per transfer and per
# receive (measured: validation ~25 us a transfer and ~7 us a receive of a multicast,
# writing the JSON ~10 us a transfer).
RESERVE_PER_TRANSFER, RESERVE_PER_RECEIVE = 5e-5, 1e-5
METHOD_LEAST = 0.05  # seconds: with less left after the greedy and the bounds, the method is not run


def solve(phase: Phase, spec: Spec, backend: str = "greedy",
          params: SolveParams | dict[str, Any] | None = None,
          progress: Progress | None = None, budget: Budget | None = None) -> Result[Schedule]:
    """Schedule `phase` on `spec` with `backend`; every returned schedule passes the validator.

    Every method but the plain greedy has a wall-clock time limit (`budget`, or one started
    from `params`' time limit, `DEFAULT_TIME_LIMIT` when none is given) for all of it:
    bounds, greedy, search, validation. Ctrl-C at any stage
    stops it and returns the best schedule so far (status `feasible`, or `fallback` with the
    greedy's), marked `interrupted`; before the greedy's first schedule there is none, and
    `Interrupted` is raised."""
    chosen = method("exchange", backend, "solver")
    params = SolveParams.of(params)
    check_options(chosen, params.options, "params")
    t0 = time.perf_counter()
    budget = Budget.of(params.limit(chosen.default_limit), budget)
    inner = budget.reserve(0.05 + RESERVE_PER_TRANSFER * len(phase.transfers)
                           + RESERVE_PER_RECEIVE * sum(len(t.dst) for t in phase.transfers))
    kept: dict[str, Any] = {}  # what is known so far, kept when the rest is cut short

    def work() -> Result:
        # the method is loaded first, when there is time for it: its import (OR-Tools: 2.3 s on
        # a loaded machine) then counts before the greedy and the bounds take their shares,
        # instead of running past the limit at the method's turn
        run = None if backend == "greedy" or inner.limit() < METHOD_LEAST else chosen.load()
        limit, m0 = inner.left(), time.monotonic()
        tell = progress or (lambda info: None)
        tell({"stage": "greedy"})
        kept["inst"] = inst = Instance(phase, spec)
        until = None if limit is None else m0 + GREEDY_SHARE * limit
        kept["habits"] = habits = frozenset(k for k in HABITS if backend == "greedy"
                                            and params.options.get(k) is True)
        starts, widths, rule = best_greedy(inst, stop=inner, until=until, habits=habits,
                                           quick=params.options.get("quick") is True)
        kept["greedy"] = greedy = Result(Status.FEASIBLE, (starts, widths), inst.horizon((starts, widths)),
                                         solver=f"greedy/{rule}")

        began = time.monotonic()  # the bounds' share counts from here too: a greedy that outran
        # its own share (its first rule always completes) leaves them theirs (a phase's bound
        # in a loaded cell of `optimize` was 10,718 instead of the group bound's 13,181)

        def enough() -> bool:
            if inner.is_set() or (limit is not None and time.monotonic() > max(
                    m0 + (GREEDY_SHARE + BOUND_SHARE) * limit, began + BOUND_SHARE * limit)):
                inner.cut()
                return True
            return False

        tell({"stage": "bounds", "incumbent": greedy.value})
        kept["bounds"] = all_bounds(inst, enough)
        greedy.bound = inst.bound = best_bound(kept["bounds"]).value
        if backend == "greedy" or budget.interrupted:
            return greedy
        if run is None or inner.limit() < METHOD_LEAST:
            return Result(Status.FALLBACK, greedy.solution, greedy.value, solver=backend,
                          extras={"reason": f"no time left for {backend} beside the greedy and the bounds"})
        tell({"stage": backend, "bound": inst.bound})
        return run(inst, (starts, widths), params, inner, progress)

    found, interrupted = run_interruptible(work, budget)
    if "greedy" not in kept:
        raise Interrupted("nothing found before the interrupt")
    held = kept["inst"].incumbent
    if found is None and held is not None and held[1] < kept["greedy"].value:
        # cut short in a stage that did not return in time: the best an earlier stage handed back
        found = Result(Status.FEASIBLE, held[0], held[1], None, solver=held[2])
    if "bounds" not in kept:  # interrupted in the bounds, which did not end within the grace
        kept["bounds"] = all_bounds(kept["inst"], lambda: True)
        kept["greedy"].bound = best_bound(kept["bounds"]).value
    greedy, inst, bounds = kept["greedy"], kept["inst"], kept["bounds"]
    extra: dict[str, Any] = {"greedy_horizon": greedy.value, "greedy_rule": greedy.solver.split("/", 1)[1]}
    if kept.get("habits"):
        extra["habits"] = sorted(kept["habits"])  # a baseline, not ipuopt's own greedy
    if budget.seconds is not None:
        extra["time_limit_s"] = budget.seconds
    result = found if found is not None else greedy
    reason = ""
    if backend != "greedy":
        if found is None or found is greedy:
            result = Result(Status.FALLBACK, greedy.solution, greedy.value, None, solver=backend)
        reason = result.extras.pop("reason", "")
        extra.update(result.extras)
    if params.reproducible and inner.wall_cut:
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
    schedule = Schedule(starts, widths, horizon, phase.name, spec.name)
    report = validate(phase, spec, schedule)
    if not report.ok:  # a solver bug: never hand out a schedule that breaks the rules
        raise RuntimeError(f"{backend} produced an invalid schedule: {report.violations[:3]}")
    return Result(status, schedule, horizon, bound, time.perf_counter() - t0, backend, extra, by, interrupted,
                  bounds, reason)
