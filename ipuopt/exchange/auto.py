"""`--solver auto`: the method chosen by the phase's size, the best of all it ran kept.

Every phase first gets the non-delay greedy (rule `time`) with three width policies (on
large phases only when the limit is 30 s or more, as it is slower on wide multicasts, and
no new one after 40% of the limit). Small phases then go to CP-SAT,
warm-started with the better schedule; it proves most of them. Larger ones are coloured
into rounds (`colour`: a fifth of the time at most, at once given up where rounds do not
fit), then get the iterated greedy from the best schedule so far for half of the remaining
time (many full greedy schedules, each valid), then LNS from its best (CP-SAT re-placing a
few hundred transfers at a time).
The best schedule and the best bound of every method are kept, so auto never returns worse
than the greedy; the solver named is the method that made the schedule returned.
"""

from __future__ import annotations

import time

from ipuopt.exchange.greedy import greedy_schedule, horizon_of, timed_cost
from ipuopt.exchange.phase import Phase
from ipuopt.exchange.timing import Timing
from ipuopt.params import Progress, SolveParams, Stopped
from ipuopt.result import Result, Status
from ipuopt.spec import Spec

CPSAT_UP_TO = 300  # transfers: CP-SAT's whole model still proves or nearly proves these
TIMED_FROM = 30.0  # seconds of time limit from which the non-delay greedy is tried first
PAIRED_CREDITS = (0.25, 1.0, 0.0)  # its width policies, the most often best first
COLOUR_SHARE = 0.2  # of the time left, at most, for colouring a large phase into rounds


def solve_auto(spec: Spec, timings: list[Timing], hint: tuple[dict[str, int], dict[str, str]],
               lower: int, params: SolveParams, progress: Progress | None = None) -> Result:
    from ipuopt.exchange.colour import solve_colour
    from ipuopt.exchange.cpsat import solve_cpsat
    from ipuopt.exchange.iterated import solve_iterated
    from ipuopt.exchange.lns import solve_lns

    limit = params.budget()
    t0 = time.perf_counter()
    small = len(timings) <= CPSAT_UP_TO
    phase = Phase(spec_ref=spec.name, transfers=[tm.transfer for tm in timings])
    by, hint_h = "greedy", horizon_of(timings, *hint)  # who made the best schedule so far, its horizon

    def check() -> None:  # a timed greedy ends with the deadline, and on large phases at 40%
        params.stop.check()
        if not small and time.perf_counter() - t0 > 0.4 * limit:
            raise Stopped

    if progress is not None:
        progress({"stage": "auto: non-delay greedy"})
    for credit in PAIRED_CREDITS if small or (limit >= TIMED_FROM and
                                              timed_cost(timings) < 0.4 * limit) else ():
        try:
            timed = greedy_schedule(phase, spec, "time", timings, paired_credit=credit, check=check)
        except Stopped:
            break
        if (h := horizon_of(timings, *timed)) < hint_h:
            hint, by, hint_h = timed, "time", h
    rest = max(0.0, limit - (time.perf_counter() - t0))
    if small:
        found = solve_cpsat(spec, timings, hint, lower, params.with_(time_limit=rest), progress)
        return Result(found.status, found.solution, found.value, found.bound, solver="auto/cpsat",
                      extras={**found.extras, "methods": ["time", "cpsat"]})
    rounds = solve_colour(spec, timings, hint, lower, params.with_(time_limit=COLOUR_SHARE * rest),
                          progress)
    if rounds.status != Status.FALLBACK and rounds.value < hint_h:
        hint, by, hint_h = rounds.solution, "colour", rounds.value
        if rounds.status == Status.OPTIMAL:
            return Result(rounds.status, hint, rounds.value, rounds.bound, solver="auto/colour",
                          extras={**rounds.extras, "methods": ["colour"]})
    rest = max(0.0, limit - (time.perf_counter() - t0))
    first = solve_iterated(spec, timings, hint, lower, params.with_(time_limit=rest / 2), progress)
    if first.value < hint_h:
        by = "iterated"
    coloured = {k: v for k, v in rounds.extras.items() if k == "colour_horizon"}  # when it coloured
    if first.status == Status.OPTIMAL or params.stop.is_set():
        return Result(first.status, first.solution, first.value, first.bound, solver=f"auto/{by}",
                      extras={**first.extras, **coloured, "methods": ["colour", "iterated"]})
    second = solve_lns(spec, timings, first.solution, lower, params.with_(time_limit=rest / 2), progress)
    best = second if second.solution is not None and second.value < first.value else first
    bound = max(lower, first.bound or 0, second.bound or 0)
    status = Status.OPTIMAL if best.value <= bound else Status.FEASIBLE
    return Result(status, best.solution, best.value, bound, solver=f"auto/{'lns' if best is second else by}",
                  extras={"rounds": first.extras.get("rounds"), "methods": ["colour", "iterated", "lns"],
                          **coloured, "iterated_horizon": first.value, "lns_horizon": second.value})
