"""Disjunctive MILP of one exchange phase (PuLP; HiGHS through highspy, or bundled CBC).

Disjunctive rather than time-indexed: horizons run to thousands of cycles, so a
time-indexed model would need a variable per transfer and cycle, while the
disjunctive one needs a binary per pair of transfers sharing a resource, which
is small for the phases a MILP is meant for (tens of transfers). Big-M is the
greedy horizon plus the largest offset, so every constraint is valid.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pulp

from ipuopt.backends import milp
from ipuopt.budget import Budget, Stopped
from ipuopt.exchange.instance import Instance, Solution
from ipuopt.exchange.timing import ORDINARY, PAIRED, Timing
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import MILP_OPTIONS, declare
from ipuopt.result import Result, Status
from ipuopt.spec import Spec


class TooLarge(Exception):  # noqa: N818 (a verdict on the input's size)
    """The phase needs more ordering binaries than the MILP holds."""


def _active(p: Any, width: str, fixed_width: bool) -> Any:
    """1 when this width's occupancy is present, as an affine expression of the literal."""
    if fixed_width:
        return 1
    return p if width == PAIRED else 1 - p


MAX_PAIRS = 200_000  # ordering binaries: beyond, building and handing the model over takes minutes
# Seconds per constraint to build the model in PuLP and hand it to the solver (measured:
# ~5 s each way for 96,000 constraints): a model that would take most of the time left is
# not built.
BUILD_S_PER_CONSTRAINT = 1e-4


def build_milp(spec: Spec, timings: list[Timing], upper: int, lower: int,
               check: Callable[[], None] | None = None, budget: float | None = None,
               ) -> tuple[pulp.LpProblem, dict, dict, pulp.LpVariable, dict]:
    """The model, its start, width and horizon variables and its ordering binaries (keyed
    (resource, first transfer, second transfer)); `check` is called as pairs are added and
    may raise to stop (Ctrl-C, the deadline). Raises `TooLarge` before adding any pair past
    `MAX_PAIRS` ordering binaries, or when building would take most (70%) of the `budget`
    seconds."""
    check = check or (lambda: None)
    ex = spec.exchange
    prob = pulp.LpProblem("exchange", pulp.LpMinimize)
    horizon = prob.add_variable("horizon", lowBound=lower, upBound=upper)
    starts: dict[str, pulp.LpVariable] = {}
    paired: dict[str, Any] = {}
    by_res: dict[tuple, list] = defaultdict(list)
    spread = 0
    for n, tm in enumerate(timings):
        t = tm.transfer
        latest = upper - min(tm.end_offset(w) for w in tm.widths)
        starts[t.id] = prob.add_variable(f"s{n}", lowBound=0, upBound=max(0, latest),
                                         cat="Integer")
        two = len(tm.widths) == 2
        paired[t.id] = prob.add_variable(f"p{n}", cat="Binary") if two else (
            1 if tm.widths[0] == PAIRED else 0)
        for w in tm.widths:
            act = _active(paired[t.id], w, not two)
            for occ in tm.occupancies(w, spec):
                by_res[occ.kind, occ.key].append((t.id, w, occ.offset, occ.length, act))
                spread = max(spread, abs(occ.offset) + occ.length)
    pairs = sum(len(v) * (len(v) - 1) // 2 for (kind, _), v in by_res.items() if kind in ("tx", "rx"))
    pairs += sum(len(v) * len(by_res.get(("wr", key), ()))
                 for (kind, key), v in by_res.items() if kind == "rd")
    if pairs > MAX_PAIRS:
        raise TooLarge(f"{pairs} ordering pairs, more than the MILP holds ({MAX_PAIRS}); use cpsat or auto")
    needs = BUILD_S_PER_CONSTRAINT * (2 * pairs + 2 * len(timings))
    if budget is not None and needs > 0.7 * budget:
        raise TooLarge(f"{pairs} ordering pairs need about {needs:.0f} s to build, most of the "
                       f"{budget:.0f} s left; give more time or use cpsat or auto")
    big_m = upper + 2 * spread + ex.format_switch + 1
    prob += horizon
    completion = {}
    for tm in timings:
        tid = tm.transfer.id
        lit = paired[tid]
        if isinstance(lit, int):
            completion[tid] = starts[tid] + tm.end_offset(PAIRED if lit else ORDINARY)
        else:
            gain = tm.end_offset(ORDINARY) - tm.end_offset(PAIRED)
            completion[tid] = starts[tid] + tm.end_offset(ORDINARY) - gain * lit
        prob += horizon >= completion[tid]
    for tm in timings:
        for a in tm.transfer.after:
            prob += starts[tm.transfer.id] >= completion[a]
    order: dict[tuple, pulp.LpVariable] = {}

    def separate(res: tuple, i: tuple, j: tuple, gap: int) -> None:
        """i before j (by `gap`) or j before i, when both occupancies are present."""
        ti, wi, oi, li, ai = i
        tj, wj, oj, lj, aj = j
        key = (res, ti, tj)
        if len(order) % 1024 == 0:
            check()
        if key not in order:
            order[key] = prob.add_variable(f"y{len(order)}", cat="Binary")
        y = order[key]
        slack = big_m * (2 - ai - aj)
        prob.addConstraint(starts[ti] + oi + li + gap <= starts[tj] + oj + big_m * (1 - y) + slack)
        prob.addConstraint(starts[tj] + oj + lj + gap <= starts[ti] + oi + big_m * y + slack)

    for (kind, key), items in by_res.items():
        if kind not in ("tx", "rx"):
            continue
        for a in range(len(items)):
            for b in range(a + 1, len(items)):
                if items[a][0] != items[b][0]:
                    gap = ex.format_switch if kind == "rx" and items[a][1] != items[b][1] else 0
                    separate((kind, key), items[a], items[b], gap)
    for (kind, key), reads in by_res.items():
        if kind != "rd":
            continue
        for r in reads:
            for w in by_res.get(("wr", key), ()):
                if r[0] != w[0]:
                    separate(("el", key), r, w, 0)
    by_id = {tm.transfer.id: tm for tm in timings}
    for (kind, key), items in by_res.items():
        if kind in ("tx", "rx"):
            check()
            _lane_chains(prob, (kind, key), items, by_id, starts, horizon, order)
    return prob, starts, paired, horizon, order


def warm_start(spec: Spec, timings: list[Timing], hint: Solution, starts: dict, paired: dict,
               horizon: pulp.LpVariable, order: dict) -> None:
    """Give every variable its value in the `hint` schedule, so the solver starts from an
    incumbent (it prunes against it at once, instead of searching for a first solution).
    An order binary takes the order of the two occupancies in the hint; where either is
    absent (its width not chosen) both rows are slack and any value holds."""
    hs, hw = hint
    at: dict[tuple, int] = {}  # (kind, key, transfer) -> start of that occupancy in the hint
    for tm in timings:
        tid = tm.transfer.id
        starts[tid].setInitialValue(hs[tid])
        if not isinstance(paired[tid], int):
            paired[tid].setInitialValue(1 if hw[tid] == PAIRED else 0)
        for occ in tm.occupancies(hw[tid], spec):
            at[occ.kind, occ.key, tid] = hs[tid] + occ.offset
    horizon.setInitialValue(max((hs[tm.transfer.id] + tm.end_offset(hw[tm.transfer.id]) for tm in timings),
                                default=0))
    for ((kind, key), ti, tj), y in order.items():
        a, b = ("rd", "wr") if kind == "el" else (kind, kind)
        pi, pj = at.get((a, key, ti)), at.get((b, key, tj))
        y.setInitialValue(1 if pi is not None and pj is not None and pi < pj else 0)


def _lane_chains(prob: pulp.LpProblem, res: tuple, items: list, by_id: dict[str, Timing],
                 starts: dict, horizon: pulp.LpVariable, order: dict) -> None:
    """Valid inequalities that make a lane's load visible to the LP relaxation.

    For every transfer i that holds the lane at either width: what is ordered before i fits
    between the lane's earliest start and i's start, and what is ordered after i fits
    between i's end and the horizon (less the smallest tail after a lane's busy time). With
    the order binaries y summing to one per pair, the two add up to the lane's load bound
    at any fractional y, and every fixed order tightens them; big-M rows alone give the LP
    a horizon of the longest transfer. Lengths and offsets are each transfer's smallest
    over its widths (largest offset where that is the valid side), gaps for format
    switches are left out: weaker, never invalid.
    """
    held: dict[str, list] = defaultdict(list)
    for tid, w, off, ln, _ in items:
        held[tid].append((w, off, ln))
    always = {tid: occ for tid, occ in held.items() if len(occ) == len(by_id[tid].widths)}
    if len(always) < 2:
        return
    lmin = {tid: min(ln for _, _, ln in occ) for tid, occ in always.items()}
    omin = {tid: min(off for _, off, _ in occ) for tid, occ in always.items()}
    omax = {tid: max(off for _, off, _ in occ) for tid, occ in always.items()}
    first = min(omin.values())
    tail = min(by_id[tid].end_offset(w) - off - ln for tid, occ in always.items() for w, off, ln in occ)

    def before(a: str, b: str) -> Any:
        y = order.get((res, a, b))
        return y if y is not None else 1 - order[(res, b, a)]

    for i in always:
        others = [j for j in always if j != i]
        n = prob.numConstraints()
        prob.addConstraint(starts[i] + omax[i] - first >= pulp.lpSum(lmin[j] * before(j, i) for j in others),
                           f"chain_before_{n}")
        prob.addConstraint(horizon >= starts[i] + omin[i] + lmin[i] + tail
                           + pulp.lpSum(lmin[j] * before(i, j) for j in others), f"chain_after_{n}")


@declare("exchange", "milp", "exact", "disjunctive MILP (CBC or HiGHS)", options=MILP_OPTIONS, profile="milp")
def solve_milp(inst: Instance, hint: Solution, params: SolveParams, budget: Budget,
               progress: Progress | None = None) -> Result:
    """Minimise the horizon below the greedy one; the greedy schedule is the fallback."""
    spec, timings, lower = inst.spec, inst.timings, inst.bound
    upper = inst.horizon(hint)
    t0 = time.perf_counter()
    if budget.limit() < 0.05:
        return Result(Status.FALLBACK, hint, upper, None, solver="milp", extras={"reason": "no time left"})
    try:
        prob, starts, paired, horizon, order = build_milp(spec, timings, upper, lower,
                                                          budget.check, budget.limit())
        warm_start(spec, timings, hint, starts, paired, horizon, order)
    except (Stopped, TooLarge) as exc:
        why = str(exc) or "stopped while building the model"
        return Result(Status.FALLBACK, hint, upper, None, time.perf_counter() - t0, "milp", {"reason": why})
    build = time.perf_counter() - t0
    status, dual = milp.solve(prob, params, budget, warm=True)
    extras = {"build_s": round(build, 3), "solve_s": round(time.perf_counter() - t0 - build, 3),
              "milp_solver": milp.milp_solver_name(params), "variables": len(prob.variables()),
              "constraints": prob.numConstraints()}
    values = {tid: v.varValue for tid, v in starts.items()}
    runtime = time.perf_counter() - t0
    if status not in (Status.OPTIMAL, Status.FEASIBLE) or any(v is None for v in values.values()):
        return Result(Status.FALLBACK, hint, upper, None, runtime, "milp", extras)
    out_starts = {tid: int(round(v)) for tid, v in values.items()}
    out_widths = {}
    for tid, lit in paired.items():
        val = lit if isinstance(lit, int) else round(lit.varValue or 0)
        out_widths[tid] = PAIRED if val else ORDINARY
    value = int(round(pulp.value(horizon)))
    bound = value if status == Status.OPTIMAL else None if dual is None else math.ceil(dual - 1e-6)
    return Result(status, (out_starts, out_widths), value, bound, runtime, "milp", extras)
