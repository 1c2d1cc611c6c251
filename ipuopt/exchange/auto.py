"""`--solver auto`: the method chosen by the phase's size, the best of all it ran kept.

Small phases go to CP-SAT, which proves most of them. Larger ones get the iterated greedy
for the first half of the time (many full greedy schedules, each valid) and then LNS from
its best schedule (CP-SAT re-placing a few hundred transfers at a time). The best schedule
and the best bound of every method are kept, so auto never returns worse than the greedy.
"""

from __future__ import annotations

from ipuopt.exchange.timing import Timing
from ipuopt.params import Progress, SolveParams
from ipuopt.result import Result, Status
from ipuopt.spec import Spec

CPSAT_UP_TO = 300  # transfers: CP-SAT's whole model still proves or nearly proves these


def solve_auto(spec: Spec, timings: list[Timing], hint: tuple[dict[str, int], dict[str, str]],
               lower: int, params: SolveParams, progress: Progress | None = None) -> Result:
    from ipuopt.exchange.cpsat import solve_cpsat
    from ipuopt.exchange.iterated import solve_iterated
    from ipuopt.exchange.lns import solve_lns

    limit = 60.0 if params.time_limit is None else params.time_limit
    if len(timings) <= CPSAT_UP_TO:
        found = solve_cpsat(spec, timings, hint, lower, params, progress)
        return Result(found.status, found.solution, found.value, found.bound, solver="auto/cpsat",
                      extras={**found.extras, "methods": ["cpsat"]})
    first = solve_iterated(spec, timings, hint, lower, params.with_(time_limit=limit / 2), progress)
    if first.status == Status.OPTIMAL or params.stop.is_set():
        return Result(first.status, first.solution, first.value, first.bound, solver="auto/iterated",
                      extras={**first.extras, "methods": ["iterated"]})
    second = solve_lns(spec, timings, first.solution, lower, params.with_(time_limit=limit / 2), progress)
    best = second if second.solution is not None and second.value <= first.value else first
    bound = max(lower, first.bound or 0, second.bound or 0)
    status = Status.OPTIMAL if best.value <= bound else Status.FEASIBLE
    return Result(status, best.solution, best.value, bound,
                  solver=f"auto/{'lns' if best is second else 'iterated'}",
                  extras={"rounds": first.extras.get("rounds"), "methods": ["iterated", "lns"],
                          "iterated_horizon": first.value, "lns_horizon": second.value})
