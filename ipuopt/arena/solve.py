"""The front door of arena placement: pick a solver, place, validate, report."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from ipuopt.arena.cpsat import ArenaModel
from ipuopt.arena.greedy import best_greedy, shift_baseline
from ipuopt.arena.milp import solve_arena_milp
from ipuopt.arena.problem import OBJECTIVES, Arena
from ipuopt.arena.search import search_fit
from ipuopt.arena.validate import validate_placement
from ipuopt.errors import InputError
from ipuopt.exchange.cpsat import apply_params
from ipuopt.result import FEASIBLE, INFEASIBLE, OPTIMAL, UNKNOWN

SOLVERS = ("auto", "greedy", "baseline", "search", "cpsat", "milp")


@dataclass
class Placement:
    arena: Arena
    objective: str
    solver: str
    status: str
    offsets: dict[str, int] | None
    value: int | None = None
    peak: int | None = None
    lower_bound: int | None = None
    runtime: float = 0.0
    reason: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        a = self.arena
        return {"spec": a.spec_name, "region": a.region, "solver": self.solver,
                "status": self.status, "objective": self.objective, "value": self.value,
                "peak": self.peak, "lower_bound": self.lower_bound,
                "runtime_s": round(self.runtime, 3), **({"reason": self.reason} if self.reason else {}),
                "offsets": self.offsets or {}}


def _value(arena: Arena, objective: str, offsets: dict[str, int]) -> tuple[int, int, bool]:
    rep = validate_placement(arena, offsets)
    value = {"fit": 0, "peak": rep.peak, "conflicts": rep.conflicts}[objective]
    return value, rep.peak, rep.ok


def _best(arena: Arena, objective: str, candidates: list[tuple[str, dict[str, int]]]) -> dict[str, int]:
    """The best candidate so far (the CP-SAT hint), or none."""
    if not candidates:
        return {}
    return min(candidates, key=lambda c: _value(arena, objective, c[1])[0])[1]


class _CpsatRun:
    """One CP-SAT solve of the arena model, in this thread (`run`) or another (`start`)."""

    def __init__(self, arena: Arena, objective: str, hint: dict[str, int],
                 params: dict[str, Any], limit: float) -> None:
        self.model = ArenaModel(arena, objective)
        self.model.hint(hint)
        self.solver = cp_model.CpSolver()
        apply_params(self.solver, {**{k: v for k, v in params.items() if k != "solver"},
                                   "time_limit": limit})
        self.code: Any = cp_model.UNKNOWN
        self.offsets: dict[str, int] | None = None
        self.decisive = threading.Event()  # set on a proof: optimal (or found, for fit) or infeasible
        self.cancelled = threading.Event()
        self.thread: threading.Thread | None = None

    def run(self) -> None:
        if not self.cancelled.is_set():
            self.code = self.solver.solve(self.model.model)
        if self.code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            self.offsets = self.model.read(self.solver)
        if self.code in (cp_model.OPTIMAL, cp_model.INFEASIBLE):
            self.decisive.set()

    def start(self) -> None:
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def finish(self, stop: bool) -> None:
        """Wait for the thread; with `stop`, end its search first. CP-SAT ignores a stop
        that arrives before its solve has begun, hence the repeated request."""
        if stop:
            self.cancelled.set()
        while self.thread is not None and self.thread.is_alive():
            if stop:
                self.solver.stop_search()
            self.thread.join(0.05)


def place(arena: Arena, objective: str = "fit", solver: str = "auto",
          params: dict[str, Any] | None = None,
          progress: Callable[[dict[str, Any]], None] | None = None) -> Placement:
    """Place `arena`; every placement returned passes the validator.

    `progress` hears what the placer is doing (`stage`) and the best peak found so far."""
    tell = progress or (lambda info: None)
    if objective not in OBJECTIVES:
        raise InputError.one("", "--objective", f"one of {', '.join(OBJECTIVES)}")
    if solver not in SOLVERS:
        raise InputError.one("", "--solver", f"one of {', '.join(SOLVERS)}")
    params = dict(params or {})
    limit = float(params.get("time_limit", 60.0))
    t0 = time.perf_counter()
    live, step = arena.peak_live()
    bound = {"fit": 0, "peak": live, "conflicts": 0}[objective]
    if live > arena.capacity:
        return Placement(arena, objective, solver, INFEASIBLE, None, lower_bound=bound,
                         runtime=time.perf_counter() - t0,
                         reason=f"at step {step} live bytes {live} exceed capacity {arena.capacity}")
    tell({"stage": "greedy"})
    greedy, order = best_greedy(arena)
    candidates: list[tuple[str, dict[str, int]]] = []
    g_value, g_peak, g_ok = _value(arena, objective, greedy)
    tell({"stage": "greedy done", "greedy peak": g_peak})
    if g_ok:
        candidates.append((f"greedy/{order}", greedy))
    info: dict[str, Any] = {"greedy_peak": g_peak}
    status = FEASIBLE
    if solver == "baseline" or (g_ok and solver == "greedy" and objective == "conflicts"):
        shifted, _ = shift_baseline(arena, greedy)
        candidates.append(("baseline", shifted))
        info["baseline_peak"] = _value(arena, objective, shifted)[1]
    cp_run: _CpsatRun | None = None
    settled = solver == "auto" and g_ok and objective in ("fit", "peak") and (
        objective == "fit" or g_peak <= live)  # greedy already meets the bound
    if settled:
        status = OPTIMAL
    if solver in ("auto", "search") and objective in ("fit", "peak") and not settled:
        target = arena.capacity if objective == "fit" else live
        # The search leaves the space under a fixed buffer unused and reserves an alias
        # owner over its aliases' whole hull, so only without either is an exhausted search
        # a proof that nothing fits.
        exhaustive = all(b.offset is None and b.alias_of is None for b in arena.buffers)
        # Search and CP-SAT succeed on different instances (the search on tangled live
        # ranges, CP-SAT where one shape dominates), so `auto` races them on the two cores
        # unless asked for one worker, which keeps the run reproducible: search, then CP-SAT.
        workers = int(params.get("workers", 2))
        race = solver == "auto" and workers != 1
        tell({"stage": "search and CP-SAT racing" if race else "exact search"})
        if race:
            remaining = max(0.1, limit - (time.perf_counter() - t0))
            cp_run = _CpsatRun(arena, objective, _best(arena, objective, candidates),
                               {**params, "workers": max(1, workers - 1)},
                               remaining)
            # a race is not reproducible anyway: hold CP-SAT to the wall clock even when a
            # seed and one worker would make its limit deterministic time
            cp_run.solver.parameters.max_time_in_seconds = remaining
            cp_run.start()
        res = search_fit(arena, target, time_limit=limit if solver == "search" or race else limit / 2,
                         stop=cp_run.decisive if cp_run else None, seed=int(params.get("seed", 0)))
        info["search_nodes"] = res.nodes
        # (the search ignores distinct_elements_from, so its placement may not stand)
        found = res.offsets is not None and validate_placement(arena, res.offsets).ok
        if cp_run is not None:
            # an exhausted search settles `fit`; for `peak` it only shows that peak > live
            cp_run.finish(stop=found or (res.complete and objective == "fit" and exhaustive))
        if found:
            candidates.append(("search", res.offsets))
            if objective == "peak":
                status = OPTIMAL  # reached the live-bytes lower bound
        elif res.complete and objective == "fit" and exhaustive:
            return Placement(arena, objective, "search", INFEASIBLE, None, lower_bound=bound,
                             runtime=time.perf_counter() - t0,
                             reason="exhaustive search: no placement within capacity")
    need_model = solver == "cpsat" or (
        solver == "auto" and cp_run is None and (objective == "conflicts" or not candidates
                                                 or (objective == "peak" and status != OPTIMAL)))
    if need_model:
        tell({"stage": "CP-SAT"})
        cp_run = _CpsatRun(arena, objective, _best(arena, objective, candidates), params,
                           max(0.1, limit - (time.perf_counter() - t0)))
        cp_run.run()
    if cp_run is not None:
        cp, code = cp_run.solver, cp_run.code
        if cp_run.offsets is not None:
            candidates.append(("cpsat", cp_run.offsets))
            if code == cp_model.OPTIMAL:
                status = OPTIMAL
            elif objective == "conflicts":
                bound = max(bound, int(cp.best_objective_bound) // (arena.capacity + 1))
        elif code == cp_model.INFEASIBLE:
            return Placement(arena, objective, "cpsat", INFEASIBLE, None, lower_bound=bound,
                             runtime=time.perf_counter() - t0, reason="proved infeasible by CP-SAT")
    if solver == "milp":
        tell({"stage": "MILP"})
        st, offs, _ = solve_arena_milp(arena, objective, limit, str(params.get("solver", "highs")),
                                       bool(params.get("verbose", False)))
        if st == "infeasible":
            return Placement(arena, objective, "milp", INFEASIBLE, None, lower_bound=bound,
                             runtime=time.perf_counter() - t0, reason="proved infeasible by MILP")
        if offs is not None:
            candidates.append(("milp", offs))
            if st == "optimal":
                status = OPTIMAL
    valid = [(name, offs, *_value(arena, objective, offs)) for name, offs in candidates]
    valid = [v for v in valid if v[4]]
    if not valid:
        why = {"greedy": f"greedy peak {g_peak} exceeds capacity {arena.capacity}",
               "baseline": f"the baseline (4 KiB shift of the best-fit placement) needs "
                           f"{info.get('baseline_peak')} bytes, more than capacity {arena.capacity}",
               }.get(solver, "no placement found in the time limit and none proved impossible")
        return Placement(arena, objective, solver, UNKNOWN, None, lower_bound=bound,
                         runtime=time.perf_counter() - t0, reason=why, info=info)
    # a solver asked for by name keeps its own placement unless another is better in the
    # objective itself; the result always names the solver whose placement it is
    name, offsets, value, peak, _ = min(valid, key=lambda v: (v[2], not v[0].startswith(solver), v[3]))
    if objective == "fit" or (objective == "peak" and value <= bound):
        status = OPTIMAL
    return Placement(arena, objective, name, status, offsets, value, peak,
                     value if status == OPTIMAL else bound, time.perf_counter() - t0, info=info)
