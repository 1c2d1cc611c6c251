"""The front door of layout selection: the beam, an exact model, k best plans, the plan."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ipuopt.budget import Budget
from ipuopt.errors import InputError
from ipuopt.layout.beam import beam_search, trace
from ipuopt.layout.model import structure
from ipuopt.layout.problem import LayoutProblem
from ipuopt.params import SolveParams
from ipuopt.registry import check_options, method
from ipuopt.result import Result, Status


def _ids(problem: LayoutProblem, choice: dict[str, int]) -> dict[str, str]:
    return {op: problem.operators[op].candidates[i].id for op, i in choice.items()}


def _cycles(problem: LayoutProblem, choice: dict[str, int]) -> int:
    chosen = {op: problem.operators[op].candidates[i] for op, i in choice.items()}
    total = problem.cycles(chosen)
    if total is None or problem.overflow(chosen):  # a model bug: never hand out a plan that breaks rules
        raise RuntimeError(f"layout plan {chosen} breaks the problem's rules")
    return total


@dataclass
class Plan:
    """The solution of a layout problem: a candidate id per operator and the program's
    cycles with them; `beam` is the beam's plan and where it lost this one, `plans` the k
    best distinct plans when asked for."""

    workload: str
    spec: str | None
    choice: dict[str, str]
    cycles: int | None = None
    beam: dict[str, Any] | None = None
    plans: list[dict[str, Any]] | None = None
    kept: dict[str, Any] | None = None  # a built problem's report: what was priced and kept
    rerank: list[dict[str, Any]] | None = None  # the plans ranked by their scheduled programs

    def __repr__(self) -> str:  # short: the generated one prints the beam, the k plans, the rerank
        picks = ", ".join(f"{op} {c}" for op, c in (self.choice or {}).items())
        return f"Plan(workload {self.workload!r}: {self.cycles} cycles; {picks})"

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"workload": self.workload, **({"spec": self.spec} if self.spec else {}),
                               "cycles": self.cycles, "choice": self.choice}
        for key in ("beam", "plans", "kept", "rerank"):
            if getattr(self, key) is not None:
                doc[key] = getattr(self, key)
        return doc


def plan(problem: LayoutProblem, solver: str = "milp", params: SolveParams | dict | None = None,
         k: int = 1, width: int = 64, beam: int = 64, budget: Budget | None = None) -> Result[Plan]:
    """The plan: status, cycles, lower bound, choice (operator -> candidate id), the beam's
    plan and where it lost the exact one, and with k > 1 the k best distinct plans."""
    chosen = method("layout", solver)
    for name, value in (("--k", k), ("--width", width), ("--beam", beam)):
        if value < 1:
            raise InputError.one("", name, f"must be >= 1, got {value}")
    if solver == "beam" and k > 1:
        raise InputError.one("", "--k", "the beam makes one plan: the k best need --solver milp or cpsat")
    params = SolveParams.of(params)
    check_options(chosen, params.options, "params")
    budget = Budget.of(params.limit(), budget)
    t0 = time.perf_counter()
    sol = Plan(problem.extra.get("workload", problem.name), problem.extra.get("spec"), {})

    def done(status: Status, value: int | None = None, bound: int | None = None,
             reason: str = "") -> Result[Plan]:
        sol.cycles = value
        return Result(status, sol, value, bound, time.perf_counter() - t0, solver, reason=reason)

    if proof := problem.least_memory_overflow():
        step, region, need = proof
        return done(Status.INFEASIBLE, reason=f"step {step} ({problem.order[step]}): region {region} needs "
                                              f"at least {need} bytes with the smallest candidates, "
                                              f"capacity {problem.capacity[region]}")
    st = structure(problem)
    greedy = beam_search(problem, st, width, beam)
    sol.beam = {"cycles": greedy.cycles, "width": width, "beam": beam,
                "choice": _ids(problem, greedy.choice) if greedy.choice else None}
    if solver == "beam":
        if greedy.choice is None:
            return done(Status.UNKNOWN, reason="no plan survived the beam")
        sol.choice = sol.beam["choice"]
        return done(Status.FEASIBLE, _cycles(problem, greedy.choice))
    run = chosen.load()
    best = run(problem, st, params, budget, hint=greedy.choice)
    if best.solution is None and greedy.choice is not None and best.status != Status.INFEASIBLE:
        sol.choice = sol.beam["choice"]  # the best answer there is: the beam's
        return done(Status.FALLBACK, _cycles(problem, greedy.choice),
                    reason=f"{solver} found no plan before it was stopped: the beam's plan")
    if best.solution is None:
        return done(best.status, reason="no choice satisfies memory and the redistribution table"
                    if best.status == Status.INFEASIBLE else "no plan found in the time limit")
    beaten = greedy.choice is not None and _cycles(problem, greedy.choice) < _cycles(problem, best.solution)
    if beaten:  # stopped above the beam's plan: never worse than the baseline
        best = Result(Status.FEASIBLE, greedy.choice, bound=best.bound, solver=solver)
    cycles = _cycles(problem, best.solution)
    followed = beam_search(problem, st, width, beam, best.solution)
    sol.beam["discarded"] = trace(problem, followed, best.solution, width)
    sol.choice = _ids(problem, best.solution)
    status, bound = best.status, best.bound
    reason = f"{solver}'s best plan in its time cost more than the beam's: the beam's plan" if beaten else ""
    kept = problem.extra.get("kept")
    above = kept.get("excluded_above") if isinstance(kept, dict) else None
    if isinstance(kept, dict) and kept.get("partial"):  # plans left out are not priced at all
        status, bound = Status.FEASIBLE, kept.get("least_plan")
        reason = (f"the problem holds only the {kept['partial']} most promising candidates per operator "
                  "(its build was stopped): this plan is the best of those" + (
                      f"; no plan of the whole problem costs less than {bound}" if bound else ""))
    elif isinstance(above, int) and cycles > above:  # a plan left out of the file may be cheaper
        status = Status.FEASIBLE
        bound = min(bound or cycles, above + 1)
        ref = kept.get("reference_cycles")
        reason = (f"plans left out of the problem cost more than {above} cycles, not more than "
                  f"{cycles}" + (f": rebuild it with --within {cycles / ref - 1:.3f} to prove "
                                 "this plan optimal" if isinstance(ref, int) and ref else ""))
    if k > 1:
        plans, seen = [best.solution], [best.solution]
        while len(plans) < k:
            nxt = run(problem, st, params, budget, exclude=seen)
            if nxt.solution is None:
                break
            plans.append(nxt.solution)
            seen.append(nxt.solution)
        sol.plans = [{"rank": n + 1, "cycles": _cycles(problem, p), "choice": _ids(problem, p)}
                     for n, p in enumerate(plans)]
    return done(status, cycles, bound, reason)
