"""The layout choice in CP-SAT: the same one-hot choice, grouped edges and memory rows."""

from __future__ import annotations

import time

from ortools.sat.python import cp_model

from ipuopt.backends import cpsat
from ipuopt.budget import Budget
from ipuopt.layout.model import Instance, Structure
from ipuopt.layout.problem import LayoutProblem
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import declare
from ipuopt.result import Result, Status


@declare("layout", "cpsat", "exact", "the layout model in CP-SAT", runs_cpsat=True)
def solve_layout_cpsat(inst: Instance, hint: dict[str, int] | None, params: SolveParams, budget: Budget,
                       progress: Progress | None = None) -> Result:
    """Choice as operator -> candidate index; the beam's plan (`hint`) warm-starts it."""
    t0 = time.perf_counter()
    m, x = build_layout_cpsat(inst.problem, inst.structure, inst.exclude, hint)
    solver = cpsat.new_solver(params, budget)
    code = cpsat.solve(m, solver)
    runtime = time.perf_counter() - t0
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        status = Status.INFEASIBLE if code == cp_model.INFEASIBLE else Status.UNKNOWN
        return Result(status, runtime=runtime, solver="cpsat")
    choice = {op: next(i for i, v in enumerate(xs) if solver.boolean_value(v)) for op, xs in x.items()}
    return Result(cpsat.STATUS[code], choice, int(solver.objective_value), int(solver.best_objective_bound),
                  runtime, "cpsat")


def build_layout_cpsat(problem: LayoutProblem, st: Structure, exclude: tuple[dict[str, int], ...] = (),
                       hint: dict[str, int] | None = None) -> tuple[cp_model.CpModel, dict[str, list]]:
    """The model and each operator's choice literals."""
    m = cp_model.CpModel()
    x = {op: [m.new_bool_var(f"x{k}_{i}") for i in range(len(st.cost[op]))]
         for k, op in enumerate(problem.order)}
    objective = []
    for op, xs in x.items():
        m.add_exactly_one(xs)
        for i, v in enumerate(xs):
            if not st.allowed[op][i]:
                m.add(v == 0)
            objective.append(st.cost[op][i] * v)
            if hint is not None:
                m.add_hint(v, hint[op] == i)
    for e in st.edges:
        z = {a: sum(x[e.src][i] for i in idx) for a, idx in e.outputs.items()}
        w = {b: sum(x[e.dst][j] for j in idx) for b, idx in e.needs.items()}
        y = {pair: m.new_bool_var("") for pair in e.cost}
        by_out, by_need = e.pairs_of()
        for a, za in z.items():
            m.add(sum(y[p] for p in by_out[a]) == za)
        for b, wb in w.items():
            m.add(sum(y[p] for p in by_need[b]) == wb)
        objective.extend(cycles * y[pair] for pair, cycles in e.cost.items() if cycles)
    for terms in st.memory:
        for r, items in terms.items():
            if items:
                m.add(sum(b * x[op][i] for op, i, b in items) <= problem.capacity[r])
    for plan in exclude:
        m.add(sum(x[op][i] for op, i in plan.items()) <= len(plan) - 1)
    m.minimize(sum(objective))
    return m, x
