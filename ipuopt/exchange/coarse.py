"""Coarsen, solve, refine: a fragment-level phase solved as its boxes.

A compiler cuts each box into runs (fragments) with the same source and destinations.
Sent back to back, a box's fragments are one long transfer: each starts max(o, lead)
cycles after the previous one's payload (its transmit lane free again, the receivers'
pointers written), so the box holds its lanes for the fragments' payloads plus those gaps,
and its memory elements for as long. Scheduled as such blocks, a phase of hundreds of
thousands of fragments becomes one of a few thousand boxes, where the methods that need
many rounds (the non-delay greedy, colouring, LNS) have time to run; the blocks' schedule,
unrolled, is a valid schedule of the fragments with the same horizon (every fragment's
occupancies lie inside its block's). Transfers in a dependency stay alone.
"""

from __future__ import annotations

import time
from collections import defaultdict

from ipuopt.budget import Budget, Stopped
from ipuopt.exchange.greedy import best_greedy
from ipuopt.exchange.instance import ExchangeMethod, Instance, Solution
from ipuopt.exchange.phase import Transfer
from ipuopt.exchange.timing import Timing
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import PIPELINE, declare, method
from ipuopt.result import Result, Status
from ipuopt.spec import Spec

WORTH_FROM = 3  # fragments per block on average below which coarsening is not tried
BLOCKS_PER_LANE = 8  # a block's payloads at most this share of the phase's bound


def _boxes(timings: list[Timing]) -> list[list[int]]:
    """Indices of the transfers with the same source, destinations and widths, in no
    dependency; in their order in the phase."""
    waited = {a for tm in timings for a in tm.transfer.after}
    by_key: dict[tuple, list[int]] = defaultdict(list)
    for i, tm in enumerate(timings):
        t = tm.transfer
        alone = bool(t.after) or t.id in waited
        by_key[(i,) if alone else (t.src, tuple(tm.arrival), tm.widths)].append(i)
    return list(by_key.values())


def blocks(timings: list[Timing], longest: int = 0, boxes: list[list[int]] | None = None
           ) -> list[list[int]]:
    """Indices of the transfers that go as one block (`_boxes`, or `boxes` found already).
    With `longest`, a block whose payloads add up to more is cut into as few equal runs as
    bring each within it (a few blocks per lane leave a schedule of blocks too little room)."""
    out = []
    for members in boxes if boxes is not None else _boxes(timings):
        total = sum(min(timings[i].duration.values()) for i in members)
        cuts = max(1, -(-total // longest)) if longest else 1
        size = -(-len(members) // cuts)
        out += [members[k:k + size] for k in range(0, len(members), size)]
    return out


def fragmented(timings: list[Timing], boxes: list[list[int]] | None = None) -> bool:
    """Whether the phase has enough fragments per box for `solve_coarse` to try."""
    return len(timings) >= WORTH_FROM * len(boxes if boxes is not None else _boxes(timings))


def _gap(spec: Spec) -> int:
    """Cycles between one fragment's payload and the next one's start in a block."""
    return max(spec.exchange.tx_overhead, spec.exchange.rx_lead)


def block_timing(timings: list[Timing], members: list[int], spec: Spec) -> Timing:
    """One timing that holds every lane and element of its members, sent back to back."""
    gap = _gap(spec)
    first = timings[members[0]]
    if len(members) == 1:
        return first
    tms = [timings[i] for i in members]
    duration = {w: sum(tm.duration[w] for tm in tms) + gap * (len(tms) - 1) for w in first.widths}
    t = first.transfer
    block = Transfer(f"{t.id}+{len(tms) - 1}", t.src, t.dst, sum(tm.transfer.words for tm in tms),
                     paired=t.paired)
    return Timing(block, first.widths, duration, dict(first.arrival), first.partner,
                  tuple(sorted({el for tm in tms for el in tm.read_elements})),
                  tuple(sorted({el for tm in tms for el in tm.write_elements})))


def unrolled(timings: list[Timing], groups: list[list[int]], coarse: list[Timing],
             solution: Solution, spec: Spec) -> Solution:
    """The fragments' starts and widths from their blocks' schedule."""
    gap = _gap(spec)
    starts, widths = solution
    out_s: dict[str, int] = {}
    out_w: dict[str, str] = {}
    for members, block in zip(groups, coarse, strict=True):
        s, w = starts[block.transfer.id], widths[block.transfer.id]
        for i in members:
            tm = timings[i]
            out_s[tm.transfer.id], out_w[tm.transfer.id] = s, w
            s += tm.duration[w] + gap
    return out_s, out_w


@declare("exchange", "coarse", "portfolio",
         "a fragment-level phase as blocks of its boxes, auto on the blocks, unrolled",
         options=PIPELINE, runs_cpsat=True)
def solve_coarse(inst: Instance, hint: Solution, params: SolveParams, budget: Budget,
                 progress: Progress | None = None, *, inner: ExchangeMethod | None = None) -> Result:
    """`inner` (by default auto, as auto calls it) on the blocks within the time limit,
    unrolled; the hint when it is no better or the phase has too few fragments per block.
    The bound stays the phase's own: a bound of the blocks holds for schedules of blocks only."""
    spec, timings = inst.spec, inst.timings
    hinted = inst.horizon(hint)
    boxes = _boxes(timings)
    if not fragmented(timings, boxes):
        return Result(Status.FALLBACK, hint, hinted, inst.bound, solver="coarse",
                      extras={"reason": "too few fragments per block"})
    limit = budget.limit()
    groups = blocks(timings, inst.bound // BLOCKS_PER_LANE, boxes)
    coarse = [block_timing(timings, g, spec) for g in groups]
    cinst = Instance.of(spec, coarse)
    if progress is not None:
        progress({"stage": f"coarse: {len(coarse)} blocks of {len(timings)} transfers"})
    try:
        start = best_greedy(cinst, stop=budget, until=time.monotonic() + 0.3 * limit)[:2]
    except Stopped:  # Ctrl-C or the deadline before the blocks had a schedule
        return Result(Status.FALLBACK, hint, hinted, inst.bound, solver="coarse",
                      extras={"reason": "stopped"})

    def told(event: dict) -> None:  # the inner stages' bound is the blocks' (0): say the phase's
        progress({**event, "bound": inst.bound} if "bound" in event else event)  # type: ignore[misc]

    inner = inner or method("exchange", "auto").load()
    found = inner(cinst, start, params, budget, told if progress is not None else None)
    solution = unrolled(timings, groups, coarse, found.solution or start, spec)
    value = inst.horizon(solution)
    extras = {"blocks": len(coarse), "block_horizon": found.value}
    if value >= hinted:
        return Result(Status.FALLBACK, hint, hinted, inst.bound, solver="coarse", extras=extras)
    return Result(Status.FEASIBLE, solution, value, inst.bound, solver=f"coarse/{found.solver}",
                  extras=extras)
