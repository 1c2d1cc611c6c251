"""`--solver justify`: forward-backward improvement of a schedule, pass after pass.

A backward pass places the transfers latest first (in the order of their completions, the
last one first) on the phase mirrored in time, each as late as it can go; read from its
end, that is a schedule of the phase in which every transfer is pushed right against what
follows it. The forward pass then places them again in the order of those starts, each as
early as it can go. Slack that a list schedule leaves between a transfer and what follows
closes from both sides, so the horizon shrinks pass by pass until it settles (Li and
Willis's "justification" for resource-constrained project scheduling). Every pass is a
whole list schedule, hence valid; it is deterministic, and cheap where the greedy runs
compiled (`packed`): a pass over 60,000 transfers in about half a second.

It stops at the bound, at its time share, after `passes` (a backend parameter) passes, or
when it has gone as many passes without a better schedule as it took to find its best (and
at least `STALE`): improvements come in bursts, some after dozens of passes, over hundreds.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ipuopt.budget import Budget, Stopped
from ipuopt.exchange.instance import Instance, Solution
from ipuopt.exchange.packed import Packed, packed
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import COUNT, declare
from ipuopt.result import Result, Status

STALE = 8  # passes in a row without a better horizon: settled, at the least


@declare("exchange", "justify", "heuristic", "forward-backward passes of the list greedy from a schedule",
         options={"passes": COUNT})
def solve_justify(inst: Instance, hint: Solution, params: SolveParams, budget: Budget,
                  progress: Progress | None = None) -> Result:
    most = params.options.get("passes")
    if progress is not None:
        progress({"stage": "justify"})

    try:
        forward = packed(inst.timings, inst.spec, check=budget.check)
    except Stopped:  # before a single pass: the schedule it was given
        return Result(Status.FALLBACK, hint, inst.horizon(hint), inst.bound, solver="justify",
                      extras={"passes": 0})
    backward = forward.mirrored()
    starts, slots = forward.arrays_of(hint, inst.timings)
    end = starts + forward.end(slots)
    best = (int(end.max(initial=0)), starts, slots)
    passes = stale = 0
    while best[0] > inst.bound and stale < max(STALE, passes - stale) and (most is None or passes < most):
        try:
            mirror, ahead, end = one_pass(forward, backward, end, budget.check)
        except Stopped:
            break
        passes += 1
        stale += 1
        for found in (mirror, ahead):
            if found[0] < best[0]:
                best, stale = found, 0
                if progress is not None:
                    progress({"incumbent": found[0], "bound": inst.bound, "pass": passes})
    solution = forward.solution(best[1], best[2], inst.timings)
    status = Status.OPTIMAL if best[0] <= inst.bound else Status.FEASIBLE
    return Result(status, solution, best[0], inst.bound, solver="justify", extras={"passes": passes})


Scheduled = tuple[int, np.ndarray, np.ndarray]  # horizon, starts, width options


def one_pass(forward: Packed, backward: Packed, end: np.ndarray, check: Callable[[], None] | None = None,
             ) -> tuple[Scheduled, Scheduled, np.ndarray]:
    """One backward and one forward pass from a schedule whose completions are `end`: the
    backward schedule read from its end, the forward schedule (both of the phase), and the
    forward schedule's completions, where the next pass starts."""
    rs, rslots = backward.place(-end.astype(np.float64), check=check)
    rend = rs + backward.end(rslots)
    horizon = int(rend.max(initial=0))
    starts, slots = forward.place((horizon - rend).astype(np.float64), check=check)
    ahead = starts + forward.end(slots)
    return (horizon, horizon - rend, rslots), (int(ahead.max(initial=0)), starts, slots), ahead
