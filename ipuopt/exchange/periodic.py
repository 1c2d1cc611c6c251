"""`--solver periodic`: a reduction's rounds in one repeating pattern, found exactly.

A reduce-scatter among a few tiles sends, between every two of them, a stream of fragments
of one size. Its best schedules repeat: one fragment of each stream per round, every round
the same starts shifted by a period. Per group of tiles that no transfer or borrowed lane
links to the rest (`tile_groups`), the streams are dealt into rounds (the r-th fragment of
each in round r), and CP-SAT finds the least period P for which the first round's starts
and widths, repeated every P cycles, keep every rule of the exact model over as many rounds
as can ever overlap; where a stream's fragments are alike in every respect (also their
memory elements) the pattern then holds over any number of rounds, since rounds further
apart never meet. The list greedy places every transfer in pattern order (round r at r * P),
which also packs what differs between rounds, the streams' short last fragments and
whatever is in no stream. Groups shaped alike share one pattern. A group with fewer than two
rounds, or whose pattern is not found in its share of the time, keeps the order of the
schedule it was handed.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict

from ortools.sat.python import cp_model

from ipuopt.backends import cpsat
from ipuopt.backends.cpsat import new_solver
from ipuopt.budget import Budget, Stopped
from ipuopt.exchange.colour import group_shape, tile_groups
from ipuopt.exchange.cpsat import build_model, identical_groups
from ipuopt.exchange.greedy import greedy_schedule
from ipuopt.exchange.instance import Instance, Solution, horizon_of, topological_by
from ipuopt.exchange.timing import ORDINARY, PAIRED, Timing
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import declare
from ipuopt.result import Result, Status
from ipuopt.spec import Spec

MAX_KINDS = 64  # fragments of one round: beyond, the rounds' model is no longer small
FOLDS = (1, 2)  # rounds one pattern spans, tried in turn


@declare("exchange", "periodic", "heuristic",
         "a reduction's rounds in one repeating pattern (CP-SAT), then the list greedy", runs_cpsat=True)
def solve_periodic(inst: Instance, hint: Solution, params: SolveParams, budget: Budget,
                   progress: Progress | None = None) -> Result:
    spec, timings = inst.spec, inst.timings
    limit, t0 = budget.limit(), time.perf_counter()
    hinted = horizon_of(timings, *hint)
    if progress is not None:
        progress({"stage": "periodic"})
    keys = [float(hint[0][tm.transfer.id]) for tm in timings]  # groups without a pattern keep the hint's
    groups = tile_groups(timings, paired=True)
    shapes = [group_shape(timings, g, True) for g in groups]
    found: dict[tuple, tuple[list[float], int] | None] = {}
    periods = []
    for group, shape in zip(groups, shapes, strict=True):
        if budget.is_set():
            break
        if shape not in found:
            left = limit - (time.perf_counter() - t0)
            share = 0.8 * left / max(1, len(set(shapes)) - len(found))
            found[shape] = _pattern(spec, [timings[i] for i in group], params, budget, share)
        if found[shape] is not None:
            local, period = found[shape]
            periods.append(period)
            for k, i in enumerate(group):
                keys[i] = local[k]
    extras = {"periods": sorted(set(periods))[:8], "patterned_groups": len(periods), "groups": len(groups)}
    if not periods:
        return Result(Status.FALLBACK, hint, hinted, inst.bound, solver="periodic",
                      extras={**extras, "reason": "no group has a repeating pattern found in time"})
    order = topological_by(timings, [(keys[i], i) for i in range(len(timings))])
    best, best_h = hint, hinted
    for aware in (False, True):
        try:
            placed = greedy_schedule(inst.phase, spec, timings=timings, order=order, borrow_aware=aware,
                                     check=budget.check)
        except Stopped:
            break
        if (h := horizon_of(timings, *placed)) < best_h:
            best, best_h = placed, h
    if best is hint:
        return Result(Status.FALLBACK, hint, hinted, inst.bound, solver="periodic",
                      extras={**extras, "reason": "the pattern's schedule is no shorter than the one handed"})
    status = Status.OPTIMAL if best_h <= inst.bound else Status.FEASIBLE
    return Result(status, best, best_h, inst.bound, time.perf_counter() - t0, "periodic", extras)


def _pattern(spec: Spec, group: list[Timing], params: SolveParams, budget: Budget,
             limit: float) -> tuple[list[float], int] | None:
    """Per transfer of the group, its start in the repeating pattern (round r at r * P), and
    P per round; None when the group has fewer than two rounds or no pattern is found in
    `limit`. A pattern may span FOLDS rounds (the r-th of a stream in sub-round r mod f): the
    least period per round is kept."""
    t0 = time.perf_counter()
    streams = _streams(group)
    best: tuple[float, list[list[Timing]], tuple[list[int], list[str]], int] | None = None
    for fold in FOLDS:
        kinds = [stream[j::fold] for stream in streams for j in range(fold)]
        rounds = min((len(kind) for kind in kinds), default=0)
        if rounds < 2 or len(kinds) > MAX_KINDS:
            break
        left = limit - (time.perf_counter() - t0)
        found = _least_pattern(spec, kinds, rounds, params, budget, left / 2 if fold == FOLDS[0] else left,
                               None if best is None else math.ceil(best[0] * fold))
        if found is not None and (best is None or found[1] / fold < best[0]):
            best = (found[1] / fold, kinds, *found)
    if best is None:
        return None
    _, kinds, (starts, _), period = best
    index = {tm.transfer.id: k for k, tm in enumerate(group)}
    keys = [float(len(group) * period)] * len(group)  # the rest goes last
    for c, kind in enumerate(kinds):
        for r, tm in enumerate(kind):
            keys[index[tm.transfer.id]] = starts[c] + r * period
    return keys, period


def _streams(group: list[Timing]) -> list[list[Timing]]:
    """The group's transfers alike but for their memory elements (one tile's fragments to
    another, `identical_groups`), the streams with at least half as many as the longest."""
    alike = identical_groups(group, elements=False)
    most = max((len(s) for s in alike), default=0)
    return [s for s in alike if 2 * len(s) >= most]


def _least_pattern(spec: Spec, kinds: list[list[Timing]], rounds: int, params: SolveParams, budget: Budget,
                   limit: float, below: int | None) -> tuple[tuple[list[int], list[str]], int] | None:
    """The least period found in `limit` (below `below`, when given) for which one round's
    pattern repeats (`_round_model`), and the pattern: up from the least period the lanes and
    elements allow, in growing steps, then back down by halves."""
    t0 = time.perf_counter()
    first = [kind[0] for kind in kinds]
    ex = spec.exchange
    early = min(0, min(min(tm.arrival.values()) for tm in first) - ex.rx_lead)
    tail = max(max(tm.end_offset(w) for w in tm.widths) for tm in first) + ex.write_hazard + ex.format_switch
    best: tuple[tuple[list[int], list[str]], int] | None = None
    least = _least_period(spec, first)
    step, period, last_no = 1, least, least - 1
    while period < (best[1] if best else below or math.inf):
        left = limit - (time.perf_counter() - t0)
        if left <= 0 or budget.is_set():
            break
        many = min(rounds, math.ceil((period + tail - early) / period) + 1)  # every two rounds that can meet
        got = _round_model(spec, kinds, many, period, params, budget, min(left, max(1.0, limit / 8)))
        if got is not None:
            best = (got, period)
            step, period = 1, last_no + max(1, (period - last_no) // 2)
        else:
            last_no, period, step = period, period + step, step * 2
    return best


def _least_period(spec: Spec, one: list[Timing]) -> int:
    """The most any lane or memory element carries in one round (cheapest widths): a period
    below it cannot hold a round."""
    load: dict[tuple, int] = defaultdict(int)
    for tm in one:
        w = min(tm.widths, key=lambda w: tm.duration[w])
        for occ in tm.occupancies(w, spec):
            lane = occ.kind in ("tx", "rx")
            load[occ.kind if lane else "element", *occ.key] += occ.length if lane else tm.duration[w]
    return max(load.values(), default=1)


def _round_model(spec: Spec, kinds: list[list[Timing]], rounds: int, period: int,
                 params: SolveParams, budget: Budget, limit: float) -> tuple[list[int], list[str]] | None:
    """Starts in [0, period) and widths of one transfer of each kind (the first at 0: only starts modulo
    the period matter) such that `rounds` rounds, each shifted by r * period with the same
    widths, keep every rule. None when CP-SAT finds none in `limit`."""
    k = len(kinds)
    sub = [kind[r] for r in range(rounds) for kind in kinds]
    upper = rounds * period + max(max(tm.end_offset(w) for w in tm.widths) for tm in sub)
    em = build_model(spec, sub, upper, break_mirror=False, break_identical=False)
    m = em.model
    m.add(em.starts[sub[0].transfer.id] == 0)
    for c in range(k):
        a = sub[c].transfer.id
        m.add(em.starts[a] < period)
        for r in range(1, rounds):
            b = sub[r * k + c].transfer.id
            m.add(em.starts[b] == em.starts[a] + r * period)
            if not isinstance(em.paired[a], int):
                m.add(em.paired[b] == em.paired[a])
    m.clear_objective()
    solver = new_solver(params.with_(options={}), budget, max(0.05, limit))
    if cpsat.solve(m, solver) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    lits = [em.paired[tm.transfer.id] for tm in sub[:k]]
    return [int(solver.value(em.starts[tm.transfer.id])) for tm in sub[:k]], [
        PAIRED if (lit if isinstance(lit, int) else solver.value(lit)) else ORDINARY for lit in lits]
