"""`--solver colour`: the phase in rounds, as a round-robin all-to-all is run by hand.

A round is a set of transfers that can all run at once: no two share a transmit or a
receive lane, none reads a memory element another writes on the same tile, and a
transfer comes in a later round than those it waits for. When every tile sends and
receives about as much as every other, the best schedules look like this: each lane busy
back to back, round after round. CP-SAT colours the transfers with as few rounds as the
busiest lane or memory element needs (or one or two more), and the list greedy then
places them round by round, which keeps every lane's rounds in step and packs what the
route latencies and widths leave uneven. Phases that fall apart into independent groups
of tiles (no transfer or dependency between them) are coloured group by group, and a
group shaped like one already coloured reuses its colours. Colouring is tried twice:
ordinary sends each on their own lane, and sends that may be paired holding their
partner's lane too (so a pair's tiles take turns, each send at double rate; a send that
cannot go paired then takes as many rounds as its length needs); the shorter schedule is
kept.

Where rounds do not fit (payloads of very different lengths), a group is too large to
colour (transfers x rounds above MAX_CELLS), no colouring is found in time (multicasts
that overlap unevenly, ...), or the rounds come out longer than the greedy schedule, that
is returned (`fallback`).
"""

from __future__ import annotations

import time
from collections import defaultdict

from ortools.sat.python import cp_model

from ipuopt.backends import cpsat
from ipuopt.backends.cpsat import new_solver
from ipuopt.budget import Budget, Stopped
from ipuopt.exchange.conflicts import Conflicts, held_resources, root
from ipuopt.exchange.greedy import greedy_schedule
from ipuopt.exchange.instance import Instance, Solution, horizon_of, topological_by
from ipuopt.exchange.timing import PAIRED, Timing
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import declare
from ipuopt.result import Result, Status

EXTRA_ROUNDS = (0, 1, 2)  # rounds beyond the fewest possible, tried in turn
MAX_CELLS = 500_000  # transfers x rounds of one group's model: beyond, building it alone is slow


@declare("exchange", "colour", "heuristic", "rounds of equal payloads, by colouring", runs_cpsat=True)
def solve_colour(inst: Instance, hint: Solution, params: SolveParams, budget: Budget,
                 progress: Progress | None = None) -> Result:
    spec, timings, lower = inst.spec, inst.timings, inst.bound
    limit = budget.limit()
    t0 = time.perf_counter()
    if progress is not None:
        progress({"stage": "colour"})
    hinted = horizon_of(timings, *hint)
    phase = inst.phase
    n = len(timings)
    best = None  # (horizon, schedule, rounds, paired)
    for paired in (False, True):
        colours = round_colours(timings, params, budget, limit - (time.perf_counter() - t0), paired)
        if colours is None:
            continue
        order = topological_by(timings, [colours[i] * n + i for i in range(n)])
        for aware in (False, True):
            try:
                found = greedy_schedule(phase, spec, timings=timings, order=order, borrow_aware=aware,
                                        check=budget.check)
            except Stopped:
                break
            h = horizon_of(timings, *found)
            if best is None or h < best[0]:
                best = (h, found, max(colours, default=-1) + 1, paired)
    if best is None:
        return Result(Status.FALLBACK, hint, hinted, lower, solver="colour",
                      extras={"colouring": "none (payload lengths differ, or none found in time)"})
    h, solution, rounds, paired = best
    extras = {"colours": rounds, "colour_horizon": h, "colour_paired": paired}
    if h >= hinted:  # never worse than the greedy it was handed
        return Result(Status.FALLBACK, hint, hinted, lower, solver="colour", extras=extras)
    if progress is not None:
        progress({"incumbent": h, "bound": lower})
    return Result(Status.OPTIMAL if h <= lower else Status.FEASIBLE, solution, h, lower,
                  solver="colour", extras=extras)


def round_colours(timings: list[Timing], params: SolveParams, budget: Budget, limit: float,
                  paired: bool = False) -> list[int] | None:
    """A round per transfer (see the module), or None when some group of tiles has no
    colouring found within its share of `limit`. With `paired`, a send that may be paired
    also holds its partner's transmit lane in its round (tiles of a pair are then grouped)."""
    t0 = time.perf_counter()
    lengths = sorted(min(tm.duration.values()) for tm in timings)
    if not lengths or lengths[len(lengths) * 19 // 20] > 2 * lengths[len(lengths) // 20]:
        return None  # rounds fit transfers of about one length (95% within a factor 2)
    groups = tile_groups(timings, paired)
    shapes = []
    for group in groups:  # Ctrl-C heard between groups: seconds on a reduction's 70 groups
        if budget.is_set():
            return None
        shapes.append(group_shape(timings, group, paired))
    colours = [0] * len(timings)
    done: dict[tuple, list[int]] = {}
    for group, shape in zip(groups, shapes, strict=True):
        if shape not in done:
            if budget.is_set():
                return None
            left = limit - (time.perf_counter() - t0)
            found = _colour_group(timings, group, params, budget, left / (len(set(shapes)) - len(done)),
                                  paired)
            if found is None or budget.is_set():
                return None
            done[shape] = found
        for i, c in zip(group, done[shape], strict=True):
            colours[i] = c
    return colours


def tile_groups(timings: list[Timing], paired: bool = False) -> list[list[int]]:
    """Transfer indices grouped by the tiles they link (a transfer links its source and
    destinations; a dependency links the two transfers' sources): no lane, element or
    dependency is shared between groups, unless a paired send borrows a partner's lane."""
    parent: dict[int, int] = {}
    src = {tm.transfer.id: tm.transfer.src for tm in timings}
    for tm in timings:
        t = tm.transfer
        borrowed = (tm.partner,) if paired and PAIRED in tm.widths else ()
        for other in (*t.dst, *(src[a] for a in t.after), *borrowed):
            parent[root(parent, other)] = root(parent, t.src)
    groups: dict[int, list[int]] = defaultdict(list)
    for i, tm in enumerate(timings):
        groups[root(parent, tm.transfer.src)].append(i)
    return list(groups.values())


def group_shape(timings: list[Timing], group: list[int], paired: bool) -> tuple:
    """What the colouring of a group depends on, tiles renamed by rank (with `paired`, also
    widths, payload lengths and partners): groups with the same shape take the same colours."""
    tiles = sorted({x for i in group for tm in (timings[i],) for x in
                    (tm.transfer.src, *tm.transfer.dst, *((tm.partner,) if paired else ())) if x is not None})
    rank = {x: r for r, x in enumerate(tiles)}
    local = {timings[i].transfer.id: k for k, i in enumerate(group)}
    return tuple((rank[t.src], tuple(rank[x] for x in t.dst), tm.read_elements,
                  tm.write_elements, tuple(local[a] for a in t.after),
                  paired and (tuple(sorted(tm.duration.items())), rank.get(tm.partner)))
                 for tm, t in ((timings[i], timings[i].transfer) for i in group))


def _colour_group(timings: list[Timing], group: list[int], params: SolveParams, budget: Budget,
                  limit: float, paired: bool = False) -> list[int] | None:
    """Colours of one group with the fewest rounds among EXTRA_ROUNDS that CP-SAT finds."""
    users: dict[tuple, list[int]] = defaultdict(list)
    for k, i in enumerate(group):
        for key in held_resources(timings[i], 0):
            users[key].append(k)
        if paired and PAIRED in timings[i].widths:
            users["tx", timings[i].partner].append(k)
    clashes = []  # no two of one share a round: a lane's users, an element's readers and writers
    for key, ks in users.items():
        other = Conflicts.against(key)
        if other == key:  # a lane
            clashes.append(ks)
        elif key[0] == "rd" and other in users:
            clashes.append(ks + users[other])
    slots = _slots(timings, group, paired)
    busiest = max(sum(slots[k] for k in ks) for ks in clashes)
    local = {timings[i].transfer.id: k for k, i in enumerate(group)}
    t0 = time.perf_counter()
    for extra in EXTRA_ROUNDS:
        left = limit - (time.perf_counter() - t0)
        if left <= 0:
            return None
        rounds = busiest + extra
        if len(group) * rounds > MAX_CELLS:
            return None
        m = cp_model.CpModel()
        # x[k][c]: transfer k takes rounds c .. c + slots[k] - 1
        x = [[m.new_bool_var(f"x{k}_{c}") for c in range(rounds - slots[k] + 1)] for k in range(len(group))]
        colour = []
        for k in range(len(group)):
            m.add_exactly_one(x[k])
            colour.append(sum(c * v for c, v in enumerate(x[k])))
        for clash in clashes:
            if budget.is_set():  # building a group's model takes a second or more
                return None
            if len(clash) > 1:
                for c in range(rounds):
                    m.add_at_most_one(x[k][b] for k in clash
                                      for b in range(max(0, c - slots[k] + 1), min(c + 1, len(x[k]))))
        for k, i in enumerate(group):
            for a in timings[i].transfer.after:
                m.add(colour[local[a]] + slots[local[a]] <= colour[k])
        solver = new_solver(params.with_(options={}), budget, left)
        if cpsat.solve(m, solver) in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return [next(c for c, v in enumerate(x[k]) if solver.value(v)) for k in range(len(group))]
    return None


def _slots(timings: list[Timing], group: list[int], paired: bool) -> list[int]:
    """Rounds each transfer takes: one; with `paired`, a send that cannot go paired takes as
    many rounds as its payload needs at the group's usual (mostly paired) length."""
    if not paired:
        return [1] * len(group)
    lengths = [timings[i].duration[PAIRED] if PAIRED in timings[i].widths
               else max(timings[i].duration.values()) for i in group]
    usual = sorted(lengths)[len(lengths) // 2]
    return [max(1, round(d / usual)) for d in lengths]
