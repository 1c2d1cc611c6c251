"""The arena's methods, each `(Instance, hint, SolveParams, Budget, progress) -> Result` (the
hint is the greedy's placement when it is valid): the exact search, CP-SAT, the two racing
(`auto`), and the greedy's own answers. Each adds what it finds to the instance, which the
front door chooses from."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from ipuopt.arena.greedy import shift_baseline
from ipuopt.arena.instance import Instance, score
from ipuopt.arena.search import search_fit
from ipuopt.arena.validate import validate_placement
from ipuopt.budget import Budget
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import declare
from ipuopt.result import Result, Status

Offsets = dict[str, int]


class _CpsatRun:
    """One CP-SAT solve of the arena model, in this thread (`run`) or another (`start`).

    OR-Tools is imported and the model built by `run` itself: importing CP-SAT costs about
    0.3 s (it brings pandas), more than the exact search needs on many arenas, so a command
    that never asks CP-SAT never pays for it."""

    def __init__(self, inst: Instance, hint: Offsets | None, params: SolveParams, budget: Budget,
                 wall_clock: bool = False) -> None:
        self.inst, self.hint, self.params, self.budget = inst, hint, params, budget
        self.wall_clock = wall_clock
        self.solver: Any = None
        self.status = Status.UNKNOWN
        self.offsets: Offsets | None = None
        self.decisive = threading.Event()  # set on a proof: optimal (or found, for fit) or infeasible
        self.cancelled = False
        self.solving = False
        self.lock = threading.Lock()  # cancelled or solving: one or the other, never both
        self.thread: threading.Thread | None = None

    def run(self) -> None:
        from ipuopt.arena.cpsat import ArenaModel
        from ipuopt.backends import cpsat

        if self.cancelled:
            return
        model = ArenaModel(self.inst.arena, self.inst.objective)
        model.hint(self.hint or {})
        self.solver = cpsat.new_solver(self.params, self.budget, max(0.1, self.budget.limit()),
                                       self.wall_clock)
        with self.lock:
            if self.cancelled:
                return
            self.solving = True
        self.status = cpsat.STATUS.get(cpsat.solve(model.model, self.solver), Status.UNKNOWN)
        if self.status in (Status.OPTIMAL, Status.FEASIBLE):
            self.offsets = model.read(self.solver)
            self.inst.add("cpsat", self.offsets)
        if self.status in (Status.OPTIMAL, Status.INFEASIBLE):
            self.decisive.set()

    def start(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self.run, daemon=True)
            self.thread.start()

    def finish(self, stop: bool) -> None:
        """Wait for the thread; with `stop`, end its search first. A thread still importing
        OR-Tools or building the model is not waited for (it returns before solving: the
        search's answer need not wait the import's 0.3 s); CP-SAT ignores a stop that arrives
        before its solve has begun, hence the repeated request."""
        if stop:
            with self.lock:
                self.cancelled = True
                if not self.solving:
                    return
        while self.thread is not None and self.thread.is_alive():
            if stop and self.solver is not None:
                self.solver.stop_search()
            self.thread.join(0.05)

    def result(self) -> Result:
        """Its placement, or its proof that none exists."""
        if self.status == Status.INFEASIBLE:
            return Result(Status.INFEASIBLE, solver="cpsat", reason="proved infeasible by CP-SAT")
        bound = None
        if self.offsets is not None and self.status != Status.OPTIMAL and self.inst.objective == "conflicts":
            bound = int(self.solver.best_objective_bound) // (self.inst.arena.capacity + 1)
        status = self.status if self.offsets is not None else Status.UNKNOWN
        return Result(status, self.offsets, bound=bound, solver="cpsat")


def _exhaustive(inst: Instance) -> bool:
    """The search leaves the space under a fixed buffer unused and reserves an alias owner
    over its aliases' whole hull, so only without either is an exhausted search a proof."""
    return all(b.offset is None and b.alias_of is None for b in inst.arena.buffers)


# The search alone (a dive on each core) for this long before CP-SAT joins a race: it places
# most arenas that it places at all in a fraction of a second, and a CP-SAT started at once
# (its import and model) would slow it on the shared cores for nothing (MiniMalloc's K: 0.52 s
# in all with 0.3, 0.73-0.78 s with 0.1).
HEAD_START = 0.3


@declare("arena", "search", "exact", "MiniMalloc-style exact search (fit, peak)")
def solve_search(inst: Instance, hint: Offsets | None, params: SolveParams, budget: Budget,
                 progress: Progress | None = None, race: bool = False) -> Result:
    """The exact search (fit and peak), alone or racing CP-SAT on the other core. Search and
    CP-SAT succeed on different instances (the search on tangled live ranges, CP-SAT where
    one shape dominates), so `auto` races them unless asked for one worker. In a race CP-SAT
    starts after `HEAD_START` seconds of search, or when the search gives up sooner; the
    search runs a dive per worker throughout."""
    if inst.objective not in ("fit", "peak"):
        return Result(Status.UNKNOWN, solver="search")
    target = inst.arena.capacity if inst.objective == "fit" else inst.live
    # a race is not reproducible anyway: CP-SAT keeps to the wall clock
    cp_run = _CpsatRun(inst, hint, params.with_(workers=max(1, (params.workers or 2) - 1)), budget,
                       wall_clock=True) if race else None
    if progress is not None:
        progress({"stage": "search and CP-SAT racing" if race else "exact search"})
    t0 = time.perf_counter()

    def stop() -> bool:
        if cp_run is None:
            return budget.is_set()
        if cp_run.thread is None and time.perf_counter() - t0 >= HEAD_START:
            cp_run.start()
        return budget.is_set() or cp_run.decisive.is_set()

    # dives on every core the run may use: one worker keeps it reproducible
    res = search_fit(inst.arena, target, time_limit=budget.limit(), seed=params.seed or 0, stop=stop,
                     threads=params.workers or 2)
    extras = {"search_nodes": res.extras["nodes"]}
    # the search ignores distinct_elements_from, so its placement may not stand
    found = res.solution is not None and validate_placement(inst.arena, res.solution).ok
    proof = res.status == Status.INFEASIBLE and inst.objective == "fit" and _exhaustive(inst)
    if cp_run is not None:
        # an exhausted search settles `fit`; for `peak` it only shows that peak > live
        settled = found or proof or budget.is_set()
        if not settled:
            cp_run.start()
        cp_run.finish(stop=settled)
    if found:
        inst.add("search", res.solution)
        # for peak it reached the live-bytes lower bound
        return Result(Status.OPTIMAL if inst.objective == "peak" else Status.FEASIBLE, res.solution,
                      solver="search", extras=extras)
    if proof:
        return Result(Status.INFEASIBLE, solver="search", extras=extras,
                      reason="exhaustive search: no placement within capacity")
    if cp_run is None:
        return Result(Status.UNKNOWN, solver="search", extras=extras)
    return replace(cp_run.result(), extras=extras)


@declare("arena", "cpsat", "exact", "the arena in CP-SAT", runs_cpsat=True)
def solve_cpsat(inst: Instance, hint: Offsets | None, params: SolveParams, budget: Budget,
                progress: Progress | None = None) -> Result:
    if progress is not None:
        progress({"stage": "CP-SAT"})
    cp_run = _CpsatRun(inst, hint, params, budget)
    cp_run.run()
    return cp_run.result()


@declare("arena", "auto", "portfolio", "the exact search racing CP-SAT, then CP-SAT", runs_cpsat=True)
def solve_auto(inst: Instance, hint: Offsets | None, params: SolveParams, budget: Budget,
               progress: Progress | None = None) -> Result:
    """The search racing CP-SAT on two workers; on one (reproducible), the search for half the
    time, then CP-SAT unless the search placed the arena or proved it cannot be."""
    if (params.workers or 2) != 1 and inst.objective in ("fit", "peak"):
        return solve_search(inst, hint, params, budget, progress, race=True)
    searched = solve_search(inst, hint, params, budget.share(budget.limit() / 2), progress)
    if searched.solution is not None or searched.status == Status.INFEASIBLE:
        return searched
    found = solve_cpsat(inst, hint, params, budget, progress)
    return replace(found, extras={**searched.extras, **found.extras})


@declare("arena", "baseline", "heuristic", "the greedy's placement shifted 4 KiB where it clashes")
def solve_baseline(inst: Instance, hint: Offsets | None, params: SolveParams, budget: Budget,
                   progress: Progress | None = None) -> Result:
    shifted, _ = shift_baseline(inst.arena, inst.greedy)
    inst.add("baseline", shifted)
    return Result(Status.FEASIBLE, shifted, solver="baseline",
                  extras={"baseline_peak": score(inst.arena, inst.objective, shifted)[1]})


@declare("arena", "greedy", "heuristic", "best-fit, several orders")
def solve_greedy(inst: Instance, hint: Offsets | None, params: SolveParams, budget: Budget,
                 progress: Progress | None = None) -> Result:
    """The best-fit placement (the front door's baseline) as it is; against conflicts, its
    shift (the greedy's way to dodge them)."""
    if inst.objective == "conflicts" and hint is not None:
        return solve_baseline(inst, hint, params, budget, progress)
    return Result(Status.FALLBACK, hint, solver="greedy")
