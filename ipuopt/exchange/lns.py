"""Large-neighbourhood search for phases too big for one CP-SAT model.

Start from the greedy schedule; repeatedly free a few hundred transfers, keep every
other transfer where it is, and let CP-SAT re-place the freed ones. Two neighbourhoods:
the transfers whose starts lie nearest to an anchor (the transfer that sets the horizon,
or a random one), re-placed within a time window; or the transfers reached from the tiles
of the transfer that sets the horizon, breadth first through the tiles they touch, at any
time up to the horizon (a reduction's group of partials is freed whole). Only the fixed transfers that share a
resource with a freed one and lie close enough in time to collide with it, or
that are linked to one by a dependency, enter the sub-model. The objective is
the horizon first and the freed transfers' completions second, so a window
that does not hold the horizon is still compacted. A sub-solution is kept when
it is no worse; the whole schedule is valid after every step.
"""

from __future__ import annotations

import random
import time
from bisect import bisect_left, bisect_right
from collections import defaultdict, deque

from ortools.sat.python import cp_model

from ipuopt.backends import cpsat
from ipuopt.backends.cpsat import new_solver
from ipuopt.budget import Budget, Stopped
from ipuopt.exchange.conflicts import touched
from ipuopt.exchange.cpsat import build_model, completion
from ipuopt.exchange.instance import Instance, Solution
from ipuopt.exchange.timing import ORDINARY, PAIRED, Timing
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import COUNT, PIPELINE, SECONDS, declare
from ipuopt.result import Result, Status

# A sub-model keeps at most this many transfers per free one (fixed around them); beyond it a
# neighbourhood of tiles is given up for one of time (a block of tiles that a wide multicast
# links to every other would otherwise bring the whole phase into the model: gigabytes).
KEEP_MOST = 20


def _tile_block(anchor: str, by_id: dict[str, Timing], by_tile: dict[int, list[str]],
                most: int) -> set[str]:
    """Up to `most` transfers reached from the anchor's tiles, breadth first through the
    tiles they touch: a group of tiles that exchange among themselves (a reduction's
    partials, a multicast group and its senders) is freed whole."""
    t = by_id[anchor].transfer
    queue = deque([t.src, *t.dst])
    seen = set(queue)
    free: set[str] = set()
    while queue and len(free) < most:
        for tid in by_tile[queue.popleft()]:
            if tid in free:
                continue
            free.add(tid)
            x = by_id[tid].transfer
            for y in (x.src, *x.dst):
                if y not in seen:
                    seen.add(y)
                    queue.append(y)
            if len(free) >= most:
                break
    return free


@declare("exchange", "lns", "heuristic", "CP-SAT re-placing a few hundred transfers at a time",
         options={"free": PIPELINE["free"], "sub_time_limit": SECONDS, "steps": COUNT}, runs_cpsat=True)
def solve_lns(inst: Instance, hint: Solution, params: SolveParams, budget: Budget,
              progress: Progress | None = None) -> Result:
    spec, timings, lower = inst.spec, inst.timings, inst.bound
    options = dict(params.options)
    limit = budget.limit()
    if progress is not None:
        progress({"stage": "lns"})
    free_n = int(options.pop("free", 200))
    sub_limit = float(options.pop("sub_time_limit", 2.0))
    most = options.pop("steps", None)  # a fixed number of neighbourhoods: reproducible with a seed
    params = params.with_(options=options)
    rng = random.Random(params.seed or 0)
    starts, widths = dict(hint[0]), dict(hint[1])
    by_id = {tm.transfer.id: tm for tm in timings}
    ids = list(by_id)
    resources: dict[str, set] = {}
    users: dict[tuple, list[str]] = defaultdict(list)
    succs: dict[str, list[str]] = defaultdict(list)
    by_tile: dict[int, list[str]] = defaultdict(list)
    span = 0
    try:  # seconds on a large multicast phase: Ctrl-C is heard here too (it waited 10-15 s)
        for k, tm in enumerate(timings):
            if k % 4096 == 0:
                budget.check()
            tid = tm.transfer.id
            resources[tid] = touched(tm, spec)
            for r in resources[tid]:
                users[r].append(tid)
            for a in tm.transfer.after:
                succs[a].append(tid)
            for x in (tm.transfer.src, *tm.transfer.dst):
                by_tile[x].append(tid)
            for w in tm.widths:
                span = max([span, *(abs(o.offset) + o.length for o in tm.occupancies(w, spec))])
    except Stopped:
        return Result(Status.FALLBACK, hint, inst.horizon(hint), lower, solver="lns",
                      extras={"reason": "stopped before its first step", "lns_steps": 0})

    def done(tid: str) -> int:
        return starts[tid] + by_id[tid].end_offset(widths[tid])

    def _kept(free: set[str], near: set[str]) -> set[str]:
        """The free transfers and those of `near` they share a resource or a dependency with."""
        keep = set(free)
        for t in free:
            for r in resources[t]:
                keep.update(u for u in users[r] if u in near)
            keep.update(by_id[t].transfer.after)
            keep.update(succs[t])
        return keep

    horizon = max((done(t) for t in ids), default=0)
    t0 = time.perf_counter()
    history = [(0.0, horizon)]
    steps = improved = 0
    while ((time.perf_counter() - t0 < limit - 0.05) if most is None else steps < most) and horizon > lower \
            and ids and not budget.is_set():
        steps += 1
        order = sorted(ids, key=lambda t: starts[t])
        order_starts = [starts[t] for t in order]
        pick = rng.random()
        anchor = max(ids, key=done) if pick < 0.7 else rng.choice(ids)
        keep: set[str] = set()
        if pick < 0.4:  # the tiles around the transfer that sets the horizon, at any time
            free = _tile_block(anchor, by_id, by_tile, free_n)
            lo, hi = 0, horizon
            keep = _kept(free, set(ids))
        if len(keep) > KEEP_MOST * free_n or pick >= 0.4:
            # the transfers that start nearest to the anchor (also when the tiles' block would
            # hold most of a wide multicast phase: a model of every transfer)
            i = bisect_left(order_starts, starts[anchor])
            lo_i, hi_i = max(0, i - free_n // 2), min(len(order), i + free_n // 2 + 1)
            free = set(order[lo_i:hi_i])
            lo = max(0, min(starts[t] for t in free) - span)
            hi = max(starts[t] for t in free)
            near_lo, near_hi = bisect_left(order_starts, lo - 2 * span), bisect_right(
                order_starts, hi + 2 * span)
            keep = _kept(free, set(order[near_lo:near_hi]))
        fixed = {t: (starts[t], widths[t]) for t in keep if t not in free}
        outside = max((done(t) for t in ids if t not in keep), default=0)
        sub = [by_id[t] for t in ids if t in keep]
        try:
            em = build_model(spec, sub, horizon, max(lower, outside), fixed, {t: (lo, hi) for t in free},
                             budget.check)
        except Stopped:
            break
        completions = [completion(by_id[t], em.starts, em.paired) for t in free]
        weight = len(free) * (horizon + span + 1)
        em.model.minimize(em.horizon * weight + sum(completions))
        hint_s, hint_w = em.hint_order((starts, widths))
        for t in free:
            em.model.add_hint(em.starts[t], hint_s[t])
            if not isinstance(em.paired[t], int):
                em.model.add_hint(em.paired[t], hint_w[t] == PAIRED)
        remaining = limit - (time.perf_counter() - t0)
        seconds = sub_limit if most is not None else max(0.05, min(sub_limit, remaining))
        solver = new_solver(params, budget, seconds)
        code = cpsat.solve(em.model, solver)
        if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            continue
        new_h = max(outside, int(solver.value(em.horizon)))
        if new_h > horizon:
            continue
        for t in free:
            starts[t] = int(solver.value(em.starts[t]))
            lit = em.paired[t]
            val = lit if isinstance(lit, int) else solver.boolean_value(lit)
            widths[t] = PAIRED if val else ORDINARY
        horizon = max((done(t) for t in ids), default=0)
        if horizon < history[-1][1]:
            improved += 1
            history.append((round(time.perf_counter() - t0, 2), horizon))
            if progress:
                progress({"incumbent": horizon, "bound": lower})
    extras = {"lns_steps": steps, "lns_improvements": improved, "lns_history": history}
    status = Status.OPTIMAL if horizon <= lower else Status.FEASIBLE  # as iterated reports it
    return Result(status, (starts, widths), horizon, lower, time.perf_counter() - t0, "lns", extras)
