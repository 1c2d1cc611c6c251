"""The front door of layout selection: the solve kernel (`kernel.solve`) over the least
memory, the beam and the plan's own check; then the k best plans."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from ipuopt import kernel
from ipuopt.budget import Budget
from ipuopt.errors import InputError
from ipuopt.kernel import Door
from ipuopt.layout.beam import beam_search, solve_beam, trace
from ipuopt.layout.model import Instance, structure
from ipuopt.layout.problem import LayoutProblem
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import Method, method
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


class _Door(Door):
    """The layout side of the kernel: the least memory any plan needs (a proof when it
    exceeds a region), the beam, then the method's plan, never costlier than the beam's."""

    after = "the beam"

    def __init__(self, problem: LayoutProblem, chosen: Method, params: SolveParams, budget: Budget,
                 k: int, width: int, beam: int) -> None:
        self.problem, self.chosen, self.params, self.budget = problem, chosen, params, budget
        self.k, self.width, self.beam = k, width, beam
        self.t0 = time.perf_counter()
        self.sol = Plan(problem.extra.get("workload", problem.name), problem.extra.get("spec"), {})
        self.instance: Instance | None = None
        self.interrupted = False

    def baseline(self, budget: Budget, progress: Progress) -> Result:
        problem = self.problem
        if proof := problem.least_memory_overflow():
            step, region, need = proof
            return Result(Status.INFEASIBLE, reason=f"step {step} ({problem.order[step]}): region {region} "
                                                    f"needs at least {need} bytes with the smallest "
                                                    f"candidates, capacity {problem.capacity[region]}")
        self.instance = Instance(problem, structure(problem))
        greedy = solve_beam(self.instance, None, self.params, budget, width=self.width, beam=self.beam)
        self.sol.beam = {"cycles": greedy.value, "width": self.width, "beam": self.beam,
                         "choice": _ids(problem, greedy.solution) if greedy.solution else None}
        return greedy

    def _done(self, status: Status, value: int | None = None, bound: int | None = None,
              reason: str = "") -> Result[Plan]:
        self.sol.cycles = value
        return Result(status, self.sol, value, bound, time.perf_counter() - self.t0, self.chosen.name,
                      interrupted=self.interrupted, reason=reason)

    def answer(self, greedy: Result | None, found: Result | None, interrupted: bool) -> Result[Plan]:
        problem, solver, sol = self.problem, self.chosen.name, self.sol
        self.interrupted = interrupted
        if greedy is not None and greedy.status == Status.INFEASIBLE:
            return self._done(Status.INFEASIBLE, reason=greedy.reason)
        if greedy is None:
            return self._done(Status.UNKNOWN, reason="interrupted before the beam's plan")
        if self.chosen.baseline:
            if greedy.solution is None:
                return self._done(Status.UNKNOWN, reason="no plan survived the beam")
            sol.choice = sol.beam["choice"]
            return self._done(Status.FEASIBLE, _cycles(problem, greedy.solution))
        best = found if found is not None and found.status != Status.FALLBACK else Result(Status.UNKNOWN)
        if best.solution is None and greedy.solution is not None and best.status != Status.INFEASIBLE:
            sol.choice = sol.beam["choice"]  # the best answer there is: the beam's
            return self._done(Status.FALLBACK, _cycles(problem, greedy.solution),
                              reason=f"{solver} found no plan before it was stopped: the beam's plan")
        if best.solution is None:
            return self._done(best.status, reason="no choice satisfies memory and the redistribution table"
                              if best.status == Status.INFEASIBLE else "no plan found in the time limit")
        cycles = _cycles(problem, best.solution)
        beaten = greedy.solution is not None and (beam := _cycles(problem, greedy.solution)) < cycles
        if beaten:  # stopped above the beam's plan: never worse than the baseline
            best, cycles = Result(Status.FEASIBLE, greedy.solution, bound=best.bound, solver=solver), beam
        inst = self.instance
        followed = beam_search(problem, inst.structure, self.width, self.beam, best.solution)
        sol.beam["discarded"] = trace(problem, followed, best.solution, self.width)
        sol.choice = _ids(problem, best.solution)
        status, bound = best.status, best.bound
        reason = (f"{solver}'s best plan in its time cost more than the beam's: the beam's plan" if beaten
                  else "")
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
        if self.k > 1 and not interrupted:
            self._k_best(best.solution)
        return self._done(status, cycles, bound, reason)

    def _k_best(self, first: dict[str, int]) -> None:
        """The k best distinct plans: the method again, each plan found excluded from the next."""
        plans = [first]
        while len(plans) < self.k:
            inst = replace(self.instance, exclude=tuple(plans))
            nxt = self.chosen.load()(inst, None, self.params, self.budget)
            if nxt.solution is None:
                break
            plans.append(nxt.solution)
        self.sol.plans = [{"rank": n + 1, "cycles": _cycles(self.problem, p), "choice": _ids(self.problem, p)}
                          for n, p in enumerate(plans)]


def plan(problem: LayoutProblem, solver: str = "milp", params: SolveParams | dict | None = None,
         k: int = 1, width: int = 64, beam: int = 64, budget: Budget | None = None,
         progress: Progress | None = None) -> Result[Plan]:
    """The plan (the solve kernel's steps): status, cycles, lower bound, choice (operator ->
    candidate id), the beam's plan and where it lost the exact one, and with k > 1 the k best
    distinct plans."""
    chosen = method("layout", solver)
    for name, value in (("--k", k), ("--width", width), ("--beam", beam)):
        if value < 1:
            raise InputError.one("", name, f"must be >= 1, got {value}")
    if solver == "beam" and k > 1:
        raise InputError.one("", "--k", "the beam makes one plan: the k best need --solver milp or cpsat")
    params = SolveParams.of(params)
    budget = Budget.of(params.limit(), budget)
    door = _Door(problem, chosen, params, budget, k, width, beam)
    return kernel.solve(door, chosen, params, budget, progress)
