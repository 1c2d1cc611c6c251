"""A phase that falls apart, solved part by part.

Transfers that share no lane (a paired send's partner lane included), no memory element and no
dependency can be scheduled apart: a reduction whose groups sit on disjoint tiles is hundreds
of such parts, and most of them alike (the same timings on other tiles). The phase's horizon is
the longest of its parts', so only the part that ends last matters: parts are solved longest
first (each kind once, its schedule copied to every part like it), until the longest is proven
or was tried already. A part is a sub-phase, so its proven bound bounds the phase: when the
longest part is proven, so is the phase.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ipuopt.budget import Budget
from ipuopt.exchange.bounds import all_bounds, best_bound
from ipuopt.exchange.cpsat import solve_cpsat
from ipuopt.exchange.greedy import best_greedy
from ipuopt.exchange.instance import ExchangeMethod, Instance, Solution, horizon_of
from ipuopt.exchange.timing import PAIRED, Timing
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import PIPELINE, declare, method
from ipuopt.result import Bound, Result, Status


def shape(timings: list[Timing], part: list[int]) -> tuple:
    """What a part's schedules depend on, with its tiles renamed by first appearance: two parts
    of one shape take each other's schedules, transfer for transfer in phase order."""
    tiles: dict[int, int] = {}

    def tile(x: int | None) -> int | None:
        return None if x is None else tiles.setdefault(x, len(tiles))

    position = {timings[i].transfer.id: k for k, i in enumerate(part)}
    return tuple((tile(tm.transfer.src), tuple(tile(x) for x in tm.transfer.dst), tm.widths,
                  tuple(tm.duration[w] for w in tm.widths), tuple(tm.arrival[x] for x in tm.transfer.dst),
                  tile(tm.partner) if PAIRED in tm.widths else None, tm.read_elements, tm.write_elements,
                  tuple(position[a] for a in tm.transfer.after))
                 for tm in (timings[i] for i in part))


def kinds_of(inst: Instance) -> list[list[list[int]]]:
    """The phase's parts (`Instance.parts`) by kind: parts of one `shape` together."""
    kinds: dict[tuple, list[list[int]]] = {}
    for part in inst.parts:
        kinds.setdefault(shape(inst.timings, part), []).append(part)
    return list(kinds.values())


@declare("exchange", "split", "portfolio",
         "a phase that falls apart, part by part: auto on one part of each kind, copied to the rest",
         options=PIPELINE, runs_cpsat=True)
def solve_split(inst: Instance, hint: Solution, params: SolveParams, budget: Budget,
                progress: Progress | None = None, *, inner: ExchangeMethod | None = None) -> Result:
    """`inner` (by default auto on a part, as auto calls it) on the phase's parts, longest first,
    each kind once (see the module's docstring); the hint when the phase is one part or nothing
    got shorter."""
    timings, hinted = inst.timings, inst.horizon(hint)
    found = inst.parts
    if len(found) < 2:
        return Result(Status.FALLBACK, hint, hinted, inst.bound, solver="split",
                      extras={"reason": "one part"})
    inner = inner or partial(method("exchange", "auto").load(), part=True)
    starts, widths = dict(hint[0]), dict(hint[1])
    groups = kinds_of(inst)

    def longest(group: list[list[int]]) -> int:
        return max(horizon_of([timings[i] for i in part], starts, widths) for part in group)

    ends = [longest(g) for g in groups]
    lower, tried = inst.bound, set()
    if progress is not None:
        progress({"stage": f"split: {len(found)} parts of {len(groups)} kinds"})
    while not budget.is_set():
        k = max(range(len(groups)), key=lambda j: (ends[j], -j))
        if ends[k] <= lower or k in tried:
            break  # the longest part is at a bound, or no better in its time
        tried.add(k)
        waiting = sum(e > lower for j, e in enumerate(ends) if j not in tried) + 1
        first = groups[k][0]
        sub = Instance.of(inst.spec, [timings[i] for i in first])
        sub.bound = best_bound(all_bounds(sub, budget.is_set)).value
        ids = [timings[i].transfer.id for i in first]
        mine = ({t: starts[t] for t in ids}, {t: widths[t] for t in ids})
        # a firm share: with one worker and a seed CP-SAT counts deterministic time, which
        # may run far slower, and one part would take every other part's time
        got = inner(sub, mine, params, budget.share(budget.limit() / waiting), None)
        lower = max(lower, got.bound or 0, sub.bound)
        if got.solution is None or got.value >= ends[k]:
            continue
        s, w = got.solution
        for part in groups[k]:  # the same timings: the same schedule, transfer for transfer
            for i, j in zip(part, first, strict=True):
                tid, rep = timings[i].transfer.id, timings[j].transfer.id
                starts[tid], widths[tid] = s[rep], w[rep]
        ends[k] = longest(groups[k])
    value = inst.horizon((starts, widths))
    extras: dict[str, Any] = {"parts": len(found), "kinds": len(groups), "kinds_solved": len(tried)}
    if value >= hinted:
        return Result(Status.FALLBACK, hint, hinted, lower, solver="split", extras=extras)
    status = Status.OPTIMAL if value <= lower else Status.FEASIBLE
    return Result(status, (starts, widths), value, lower, solver="split", extras=extras)


def part_bound(inst: Instance, params: SolveParams, budget: Budget,
               progress: Progress | None = None) -> Bound:
    """A part is a sub-phase, so CP-SAT's proven bound on one bounds the whole phase: the part
    of the kind that ends last in its greedy schedule, for the time `budget` gives
    (`ipuopt bounds --parts`). On a reduction's five-tile groups the named bounds see one
    element's reads and writes, and CP-SAT proves ~10% more in minutes."""
    if len(inst.parts) < 2:
        return Bound("part", 0, "the phase is one part")
    groups = kinds_of(inst)
    subs = [Instance.of(inst.spec, [inst.timings[i] for i in group[0]]) for group in groups]
    greedy = [best_greedy(sub, stop=budget) for sub in subs]
    k = max(range(len(subs)), key=lambda j: (subs[j].horizon(greedy[j][:2]), len(groups[j]), -j))
    sub, copies = subs[k], len(groups[k])
    sub.bound = best_bound(all_bounds(sub, budget.is_set)).value
    if progress is not None:
        progress({"stage": f"part: CP-SAT on one of {copies} alike ({len(sub.timings)} transfers)"})
    got = solve_cpsat(sub, greedy[k][:2], params, budget, progress)  # its figures: the part's
    value = max(got.bound or 0, sub.bound)
    proven = "its optimum" if got.status == Status.OPTIMAL else f"proven, its best schedule {got.value}"
    return Bound("part", value, f"one of {copies} alike parts ({len(sub.timings)} transfers, the "
                                f"last to end of {len(groups)} kinds): CP-SAT, {proven}")
