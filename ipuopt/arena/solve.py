"""The front door of arena placement: pick a solver, place, validate, report."""

from __future__ import annotations

import time
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


def place(arena: Arena, objective: str = "fit", solver: str = "auto",
          params: dict[str, Any] | None = None) -> Placement:
    """Place `arena`; every placement returned passes the validator."""
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
    greedy, order = best_greedy(arena)
    candidates: list[tuple[str, dict[str, int]]] = []
    g_value, g_peak, g_ok = _value(arena, objective, greedy)
    if g_ok:
        candidates.append((f"greedy/{order}", greedy))
    info: dict[str, Any] = {"greedy_peak": g_peak}
    status = FEASIBLE
    if g_ok and (solver == "baseline" or (solver == "greedy" and objective == "conflicts")):
        shifted, _ = shift_baseline(arena, greedy)
        candidates.append(("baseline", shifted))
    if solver in ("auto", "search") and objective in ("fit", "peak"):
        target = arena.capacity if objective == "fit" else live
        res = search_fit(arena, target, time_limit=limit if solver == "search" else limit / 2)
        info["search_nodes"] = res.nodes
        if res.offsets is not None and validate_placement(arena, res.offsets).ok:
            candidates.append(("search", res.offsets))
            if objective == "peak":
                status = OPTIMAL  # reached the live-bytes lower bound
        elif res.complete and objective == "fit" and not arena.conflicts and all(
                b.offset is None and not b.distinct_elements_from for b in arena.buffers):
            return Placement(arena, objective, "search", INFEASIBLE, None, lower_bound=bound,
                             runtime=time.perf_counter() - t0,
                             reason="exhaustive search: no placement within capacity")
    need_model = solver in ("cpsat", "milp") or (
        solver == "auto" and (objective == "conflicts" or not candidates
                              or (objective == "peak" and status != OPTIMAL)))
    if need_model and solver != "milp":
        model = ArenaModel(arena, objective)
        if candidates:
            model.hint(min(candidates, key=lambda c: _value(arena, objective, c[1])[0])[1])
        cp = cp_model.CpSolver()
        remaining = max(0.1, limit - (time.perf_counter() - t0))
        apply_params(cp, {**{k: v for k, v in params.items() if k != "solver"},
                          "time_limit": remaining})
        code = cp.solve(model.model)
        if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            candidates.append(("cpsat", model.read(cp)))
            if code == cp_model.OPTIMAL:
                status = OPTIMAL
            elif objective == "conflicts":
                bound = max(bound, int(cp.best_objective_bound) // (arena.capacity + 1))
        elif code == cp_model.INFEASIBLE:
            return Placement(arena, objective, "cpsat", INFEASIBLE, None, lower_bound=bound,
                             runtime=time.perf_counter() - t0, reason="proved infeasible by CP-SAT")
    if solver == "milp":
        st, offs, _ = solve_arena_milp(arena, objective, limit, str(params.get("solver", "highs")))
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
        why = (f"greedy peak {g_peak} exceeds capacity {arena.capacity}" if solver == "greedy"
               else "no placement found in the time limit")
        return Placement(arena, objective, solver, UNKNOWN, None, lower_bound=bound,
                         runtime=time.perf_counter() - t0, reason=why, info=info)
    name, offsets, value, peak, _ = min(valid, key=lambda v: (v[2], v[3]))
    if objective == "fit" or (objective == "peak" and value <= bound):
        status = OPTIMAL
    return Placement(arena, objective, name, status, offsets, value, peak,
                     value if status == OPTIMAL else bound, time.perf_counter() - t0, info=info)
