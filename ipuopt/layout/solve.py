"""The front door of layout selection: the beam, an exact model, k best plans, the plan."""

from __future__ import annotations

import time
from typing import Any

from ipuopt.errors import InputError
from ipuopt.layout.beam import beam_search, trace
from ipuopt.layout.cpsat import solve_layout_cpsat
from ipuopt.layout.milp import solve_layout_milp
from ipuopt.layout.model import structure
from ipuopt.layout.problem import LayoutProblem
from ipuopt.params import SolveParams
from ipuopt.result import Status

EXACT = {"milp": solve_layout_milp, "cpsat": solve_layout_cpsat}
SOLVERS = ("milp", "cpsat", "beam")


def _ids(problem: LayoutProblem, choice: dict[str, int]) -> dict[str, str]:
    return {op: problem.operators[op].candidates[i].id for op, i in choice.items()}


def _cycles(problem: LayoutProblem, choice: dict[str, int]) -> int:
    chosen = {op: problem.operators[op].candidates[i] for op, i in choice.items()}
    total = problem.cycles(chosen)
    if total is None or problem.overflow(chosen):  # a model bug: never hand out a plan that breaks rules
        raise RuntimeError(f"layout plan {chosen} breaks the problem's rules")
    return total


def plan(problem: LayoutProblem, solver: str = "milp", params: SolveParams | dict | None = None,
         k: int = 1, width: int = 64, beam: int = 64) -> dict[str, Any]:
    """The plan document: status, cycles, lower bound, choice (operator -> candidate id), the
    beam's plan and where it lost the exact one, and with k > 1 the k best distinct plans."""
    if solver not in SOLVERS:
        raise InputError.one("", "--solver", f"unknown solver {solver!r} (one of {', '.join(SOLVERS)})")
    for name, value in (("--k", k), ("--width", width), ("--beam", beam)):
        if value < 1:
            raise InputError.one("", name, f"must be >= 1, got {value}")
    params = SolveParams.of(params)
    t0 = time.perf_counter()
    doc: dict[str, Any] = {"workload": problem.extra.get("workload", problem.name),
                           **({"spec": problem.extra["spec"]} if "spec" in problem.extra else {}),
                           "solver": solver}
    if proof := problem.least_memory_overflow():
        step, region, need = proof
        return {**doc, "status": Status.INFEASIBLE, "cycles": None, "lower_bound": None, "choice": {},
                "reason": f"step {step} ({problem.order[step]}): region {region} needs at least {need} bytes "
                          f"with the smallest candidates, capacity {problem.capacity[region]}",
                "runtime_s": round(time.perf_counter() - t0, 3)}
    st = structure(problem)
    greedy = beam_search(problem, st, width, beam)
    beam_doc = {"cycles": greedy.cycles, "width": width, "beam": beam,
                "choice": _ids(problem, greedy.choice) if greedy.choice else None}
    if solver == "beam":
        found = greedy.choice is not None
        return {**doc, "status": Status.FEASIBLE if found else Status.UNKNOWN,
                "cycles": _cycles(problem, greedy.choice) if found else None, "lower_bound": None,
                "choice": beam_doc["choice"] or {}, "beam": beam_doc,
                **({} if found else {"reason": "no plan survived the beam"}),
                "runtime_s": round(time.perf_counter() - t0, 3)}
    run = EXACT[solver]
    best = run(problem, st, params, hint=greedy.choice)
    if best.solution is None:
        reason = ("no choice satisfies memory and the redistribution table"
                  if best.status == Status.INFEASIBLE else "no plan found in the time limit")
        return {**doc, "status": best.status, "cycles": None, "lower_bound": None, "choice": {},
                "reason": reason, "beam": beam_doc, "runtime_s": round(time.perf_counter() - t0, 3)}
    cycles = _cycles(problem, best.solution)
    followed = beam_search(problem, st, width, beam, best.solution)
    beam_doc["discarded"] = trace(problem, followed, best.solution, width)
    doc.update(status=best.status, cycles=cycles, lower_bound=best.bound if best.bound is not None else None,
               choice=_ids(problem, best.solution), beam=beam_doc)
    kept = problem.extra.get("kept")
    above = kept.get("excluded_above") if isinstance(kept, dict) else None
    if isinstance(above, int) and cycles > above:  # a plan left out of the file may be cheaper
        doc["status"] = Status.FEASIBLE
        doc["lower_bound"] = min(doc["lower_bound"] or cycles, above + 1)
        ref = kept.get("reference_cycles")
        doc["reason"] = (f"plans left out of the problem cost more than {above} cycles, not more than "
                         f"{cycles}" + (f": rebuild it with --within {cycles / ref - 1:.3f} to prove "
                                        "this plan optimal" if isinstance(ref, int) and ref else ""))
    if k > 1:
        plans, seen = [best.solution], [best.solution]
        while len(plans) < k:
            nxt = run(problem, st, params, exclude=seen)
            if nxt.solution is None:
                break
            plans.append(nxt.solution)
            seen.append(nxt.solution)
        doc["plans"] = [{"rank": n + 1, "cycles": _cycles(problem, p), "choice": _ids(problem, p)}
                        for n, p in enumerate(plans)]
    doc["runtime_s"] = round(time.perf_counter() - t0, 3)
    return doc
