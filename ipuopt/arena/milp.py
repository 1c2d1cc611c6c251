"""MILP of arena placement (PuLP; HiGHS or CBC), for cross-checks on small instances.

Big-M disjunctions per pair of buffers live together; element indices as
integers with eb*e <= byte < eb*(e+1), for distinct elements and conflicts.
"""

from __future__ import annotations

import time
from typing import Any

import pulp

from ipuopt.arena.instance import Instance
from ipuopt.arena.problem import Arena
from ipuopt.backends import milp
from ipuopt.budget import Budget
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import MILP_OPTIONS, declare
from ipuopt.result import Result, Status


@declare("arena", "milp", "exact", "the arena as a MILP (CBC or HiGHS)", options=MILP_OPTIONS)
def solve_milp(inst: Instance, hint: dict[str, int] | None, params: SolveParams, budget: Budget,
               progress: Progress | None = None) -> Result:
    """Offsets as the solution; status optimal, feasible, unknown or infeasible."""
    if progress is not None:
        progress({"stage": "MILP"})
    t0 = time.perf_counter()
    prob, off = build_arena_milp(inst.arena, inst.objective)
    status, _ = milp.solve(prob, params, budget)
    vals = {b.id: pulp.value(off[b.id]) for b in inst.arena.buffers}
    if status not in (Status.OPTIMAL, Status.FEASIBLE) or any(v is None for v in vals.values()):
        infeasible = status == Status.INFEASIBLE
        return Result(Status.INFEASIBLE if infeasible else Status.UNKNOWN, runtime=time.perf_counter() - t0,
                      solver="milp", reason="proved infeasible by MILP" if infeasible else "")
    offsets = {k: int(round(v)) for k, v in vals.items()}
    inst.add("milp", offsets)
    return Result(status, offsets, runtime=time.perf_counter() - t0, solver="milp")


def build_arena_milp(arena: Arena, objective: str) -> tuple[pulp.LpProblem, dict[str, Any]]:
    """The model and each buffer's offset expression."""
    cap, eb = arena.capacity, arena.element_bytes
    roots = arena.roots()
    by_id = {b.id: b for b in arena.buffers}
    prob = pulp.LpProblem("arena", pulp.LpMinimize)
    x: dict[str, Any] = {}
    for b in arena.buffers:
        if roots[b.id] != b.id:
            continue
        if b.offset is not None:
            x[b.id] = b.offset
        elif b.align > 1:
            k = prob.add_variable(f"k{len(x)}", 0, cap // b.align, cat="Integer")
            x[b.id] = b.align * k
        else:
            x[b.id] = prob.add_variable(f"x{len(x)}", 0, cap, cat="Integer")
    off = {b.id: x[roots[b.id]] for b in arena.buffers}
    peak = prob.add_variable("peak", 0, cap)
    for b in arena.buffers:
        prob.addConstraint(off[b.id] + b.size <= peak)
    bs = arena.buffers
    n = 0
    for i, a in enumerate(bs):
        for b in bs[i + 1:]:
            if roots[a.id] != roots[b.id] and a.live_with(b):
                y = prob.add_variable(f"y{n}", cat="Binary")
                n += 1
                prob.addConstraint(off[a.id] + a.size <= off[b.id] + cap * (1 - y))
                prob.addConstraint(off[b.id] + b.size <= off[a.id] + cap * y)
    elems: dict[str, tuple[Any, Any]] = {}

    def elements(bid: str) -> tuple[Any, Any]:
        if bid not in elems:
            lo = prob.add_variable(f"e0_{len(elems)}", 0, cap // eb, cat="Integer")
            hi = prob.add_variable(f"e1_{len(elems)}", 0, cap // eb, cat="Integer")
            last = off[bid] + by_id[bid].size - 1
            prob.addConstraint(eb * lo <= off[bid])
            prob.addConstraint(off[bid] <= eb * lo + eb - 1)
            prob.addConstraint(eb * hi <= last)
            prob.addConstraint(last <= eb * hi + eb - 1)
            elems[bid] = (lo, hi)
        return elems[bid]

    big = cap // eb + 2

    def apart(a: str, b: str, share: Any = 0) -> None:
        """a's elements all below b's or all above, unless `share` (a binary) is 1."""
        (a0, a1), (b0, b1) = elements(a), elements(b)
        z = prob.add_variable(f"z{len(elems)}_{n}_{a}_{b}", cat="Binary")
        prob.addConstraint(a1 + 1 <= b0 + big * (1 - z) + big * share)
        prob.addConstraint(b1 + 1 <= a0 + big * z + big * share)

    for b in arena.buffers:
        for d in b.distinct_elements_from:
            apart(b.id, d)
    cost = 0
    if objective == "conflicts":
        for c in arena.conflicts:
            if c.weight and by_id[c.a].live_with(by_id[c.b]):
                if c.a == c.b:
                    cost += c.weight
                    continue
                s = prob.add_variable(f"s_{c.a}_{c.b}", cat="Binary")
                apart(c.a, c.b, s)
                cost += c.weight * s
    if objective == "peak":
        prob += peak
    elif objective == "conflicts":
        prob += cost * (cap + 1) + peak
    else:
        prob += 0 * peak
    return prob, off
