"""Iterated greedy ("squeaky wheel"): the greedy as an engine, rerun many times.

Each round builds a new schedule with one of two engines, at random: the list greedy
placing the transfers in the order of their starts in the last schedule, with the
transfers that finished late (the last part of the horizon) moved forward by a random
distance and a little noise; or the non-delay greedy (rule `time`) with the late ones'
priorities raised by a random amount, a random width policy and tie window, and no noise
(its good schedules come from every alike group making the same choice at the same
moment). The late ones are what set the horizon; placing them earlier lets the greedy fit
the rest around them. The best schedule is kept, and a round that wanders too far starts
again from it. Every round is a full greedy schedule, so every schedule kept is valid. The
rounds a time limit allows vary from run to run; `rounds` (a backend parameter) fixes
their number, and with a seed the result.
"""

from __future__ import annotations

import random
import time

from ipuopt.budget import Budget, Stopped
from ipuopt.exchange.greedy import greedy_schedule, timed_cost
from ipuopt.exchange.instance import Instance, Solution, horizon_of, topological_by
from ipuopt.exchange.timing import Timing
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import COUNT, declare
from ipuopt.result import Result, Status


@declare("exchange", "iterated", "heuristic", "many greedy schedules, late ones first",
         options={"rounds": COUNT})
def solve_iterated(inst: Instance, hint: Solution, params: SolveParams, budget: Budget,
                   progress: Progress | None = None) -> Result:
    spec, timings, lower = inst.spec, inst.timings, inst.bound
    limit = budget.limit()
    if progress is not None:
        progress({"stage": "iterated"})
    most = params.options.get("rounds")  # a fixed number of rounds: reproducible with a seed
    rng = random.Random(params.seed or 0)
    phase = inst.phase
    ids = [tm.transfer.id for tm in timings]
    best = current = (horizon_of(timings, *hint), dict(hint[0]), dict(hint[1]))
    t0 = time.perf_counter()
    rounds = stale = 0
    timed = timed_cost(timings)  # of a non-delay round: estimated, then measured

    work = max(1, max(_tile_work(timings).values(), default=1))
    while (best[0] > lower and not budget.is_set()
           and (most is None or rounds < most)):
        rounds += 1
        h, starts, widths = current
        late_at = h - max(1, (h - lower) * rng.choice((0.05, 0.1, 0.2, 0.4)))
        late = [starts[tid] + tm.end_offset(widths[tid]) >= late_at
                for tm, tid in zip(timings, ids, strict=True)]
        left = limit - (time.perf_counter() - t0) if most is None else float("inf")
        if rng.random() < 0.7 or timed > left:  # the list engine: the last order, late ones forward
            push = rng.choice((0.02, 0.05, 0.1, 0.3)) * len(ids)
            rank = {tid: r for r, tid in enumerate(sorted(ids, key=lambda x: starts[x]))}
            keys = [rank[tid] + 2 * rng.random() - (push * rng.random() if lt else 0)
                    for tid, lt in zip(ids, late, strict=True)]
            try:
                new = greedy_schedule(phase, spec, timings=timings, order=topological_by(timings, keys),
                                      borrow_aware=rng.random() < 0.5, check=budget.check)
            except Stopped:
                break
        else:  # the non-delay engine with the late ones first; no noise: its ties fall by
            # index, and the same choice in every alike group is what lets groups interleave
            push = rng.choice((0.01, 0.03, 0.1, 0.3)) * work
            began = time.perf_counter()
            try:
                new = greedy_schedule(phase, spec, "time", timings, bias=[-push if lt else 0 for lt in late],
                                      paired_credit=rng.choice((0.0, 0.25, 0.5, 1.0)),
                                      window=rng.choice((1, 16, 64)), check=budget.check)
            except Stopped:
                break
            timed = time.perf_counter() - began  # slower on wide multicasts: not past the limit
        found = (horizon_of(timings, *new), *new)
        stale += 1
        if found[0] < best[0]:
            best, stale = found, 0
            if progress is not None:
                progress({"incumbent": best[0], "bound": lower, "round": rounds})
        if found[0] <= current[0]:
            current = found
        elif stale > 20:  # wandered off: start again from the best
            current, stale = best, 0
    status = Status.OPTIMAL if best[0] <= lower else Status.FEASIBLE
    return Result(status, (best[1], best[2]), best[0], lower, solver="iterated",
                  extras={"rounds": rounds})


def _tile_work(timings: list[Timing]) -> dict[int, int]:
    """Per tile, the cheapest payload cycles of everything it sends or receives."""
    work: dict[int, int] = {}
    for tm in timings:
        d = min(tm.duration.values())
        for x in (tm.transfer.src, *tm.transfer.dst):
            work[x] = work.get(x, 0) + d
    return work
