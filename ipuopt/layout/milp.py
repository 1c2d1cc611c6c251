"""The layout choice as a MILP (PuLP; HiGHS or CBC): one-hot choice per operator, one edge
variable per allowed (output layout, input layout) pair (`Edge.pairs_of` says how they are
tied to the choice), one memory row per step and region."""

from __future__ import annotations

import math
import time

import pulp

from ipuopt.backends import milp
from ipuopt.budget import Budget
from ipuopt.layout.model import Instance, Structure
from ipuopt.layout.problem import LayoutProblem
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import MILP_OPTIONS, declare
from ipuopt.result import Result, Status


@declare("layout", "milp", "exact", "the layout MILP (HiGHS)", options=MILP_OPTIONS)
def solve_layout_milp(inst: Instance, hint: dict[str, int] | None, params: SolveParams, budget: Budget,
                      progress: Progress | None = None) -> Result:
    """Choice as operator -> candidate index (no warm start: HiGHS through PuLP takes none)."""
    t0 = time.perf_counter()
    prob, x = build_layout_milp(inst.problem, inst.structure, inst.exclude)
    status, bound = milp.solve(prob, params, budget)
    runtime = time.perf_counter() - t0
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return Result(status, runtime=runtime, solver="milp")
    choice = {op: max(range(len(xs)), key=lambda i: xs[i].varValue or 0) for op, xs in x.items()}
    value = int(round(pulp.value(prob.objective)))
    bound = value if status == Status.OPTIMAL else None if bound is None else math.ceil(bound - 1e-6)
    return Result(status, choice, value, bound, runtime, "milp")


def build_layout_milp(problem: LayoutProblem, st: Structure, exclude: tuple[dict[str, int], ...] = (),
                      ) -> tuple[pulp.LpProblem, dict[str, list]]:
    """The model and each operator's choice binaries."""
    prob = pulp.LpProblem("layout", pulp.LpMinimize)
    x = {op: [prob.add_variable(f"x{k}_{i}", cat="Binary") for i in range(len(st.cost[op]))]
         for k, op in enumerate(problem.order)}
    objective = []
    for op, xs in x.items():
        prob += pulp.lpSum(xs) == 1
        for i, v in enumerate(xs):
            if not st.allowed[op][i]:
                prob += v == 0
            objective.append(st.cost[op][i] * v)
    for n, e in enumerate(st.edges):
        z = {a: pulp.lpSum(x[e.src][i] for i in idx) for a, idx in e.outputs.items()}
        w = {b: pulp.lpSum(x[e.dst][j] for j in idx) for b, idx in e.needs.items()}
        y = {pair: prob.add_variable(f"y{n}_{m}", 0, 1) for m, pair in enumerate(e.cost)}
        by_out, by_need = e.pairs_of()
        for a, za in z.items():
            prob += pulp.lpSum(y[p] for p in by_out[a]) == za
        for b, wb in w.items():
            prob += pulp.lpSum(y[p] for p in by_need[b]) == wb
        objective.extend(cycles * y[pair] for pair, cycles in e.cost.items() if cycles)
    for k, terms in enumerate(st.memory):
        for r, items in terms.items():
            if items:
                prob += pulp.lpSum(b * x[op][i] for op, i, b in items) <= problem.capacity[r], f"mem{k}_{r}"
    for plan in exclude:
        prob += pulp.lpSum(x[op][i] for op, i in plan.items()) <= len(plan) - 1
    prob += pulp.lpSum(objective)
    return prob, x
