"""Greedy list scheduler: warm start and fallback for every exact exchange solver.

Transfers are taken in priority order (dependencies first, then the busiest
lanes and the longest payloads) and each is put at the earliest start where
every occupancy fits, filling gaps in lanes rather than only appending.
"""

from __future__ import annotations

import heapq
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial

import numpy as np

from ipuopt.budget import Budget, Stopped
from ipuopt.exchange import packed
from ipuopt.exchange.instance import Instance, horizon_of, successors, topological_by
from ipuopt.exchange.lanes import Lanes, earliest
from ipuopt.exchange.phase import Phase
from ipuopt.exchange.timing import ORDINARY, PAIRED, Timing, phase_timings
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import FLAG, FLAGS, HABITS, declare
from ipuopt.result import Result, Status
from ipuopt.spec import Spec

RULES = ("load", "longest", "input", "reverse", "rotate", "time")
QUICK_RULES = RULES[:5]  # "time" re-places transfers as lanes fill: slower on wide multicasts
# Above this many transfers each rule takes seconds: one rule without a time limit, and with
# one the rules in this order, the borrow-aware policy left out (it lost on every measured
# fragment-level phase). "longest" first: best or within 1.4% of the best on each of them;
# "rotate" (sends in waves, as a round-robin all-to-all) best on some reductions (-10%).
QUICK_UP_TO = 5000
LARGE_RULES = ("longest", "load", "input", "reverse", "rotate")


def priority_order(timings: list[Timing], spec: Spec, rule: str) -> list[int]:
    """A topological order of transfers; among ready ones the rule's priority decides."""
    ex = spec.exchange
    n = len(timings)
    succs, indeg = successors(timings)
    dmin = [min(tm.duration.values()) for tm in timings]
    topo = [i for i in range(n) if indeg[i] == 0]
    for i in topo:
        for s in succs[i]:
            indeg[s] -= 1
            if indeg[s] == 0:
                topo.append(s)
    tail = [0] * n  # longest dependency chain after a transfer completes
    for i in reversed(topo):
        tm = timings[i]
        own = tm.end_offset(tm.widths[0]) - tm.duration[tm.widths[0]] + dmin[i]
        tail[i] = own + max((tail[s] for s in succs[i]), default=0)
    load: dict[tuple[str, int], int] = defaultdict(int)
    for i, tm in enumerate(timings):
        load["tx", tm.transfer.src] += ex.tx_overhead + dmin[i]
        for x in tm.transfer.dst:
            load["rx", x] += ex.rx_lead + dmin[i]

    wave = _waves(timings, spec.tiles) if rule == "rotate" else []

    def key(i: int) -> tuple:
        t = timings[i].transfer
        if rule == "rotate":
            return (wave[i], t.src, i)
        if rule == "input":
            return (-tail[i] + dmin[i], i)
        if rule == "reverse":
            return (-tail[i] + dmin[i], -i)
        if rule == "longest":
            return (-tail[i], -len(t.dst), i)
        busiest = max(load["tx", t.src], max(load["rx", x] for x in t.dst))
        return (-(busiest + tail[i]), -dmin[i], i)

    return topological_by(timings, [key(i) for i in range(n)])


def _waves(timings: list[Timing], tiles: int) -> list[int]:
    """Per transfer: its rank among its source's sends, ordered by how far (tile numbers
    modulo `tiles`) its first destination lies from the source. Taken wave by wave, every
    tile sends its k-th and, when the phase is regular, every tile receives one."""
    by_src: dict[int, list[int]] = defaultdict(list)
    for i, tm in enumerate(timings):
        by_src[tm.transfer.src].append(i)
    wave = [0] * len(timings)
    for s, idx in by_src.items():
        idx.sort(key=lambda i: ((timings[i].transfer.dst[0] - s) % tiles, i))
        for k, i in enumerate(idx):
            wave[i] = k
    return wave



def greedy_schedule(phase: Phase, spec: Spec, rule: str = "load",
                    timings: list[Timing] | None = None, borrow_aware: bool = False,
                    order: list[int] | None = None, bias: list[float] | None = None,
                    paired_credit: float = 0.0, window: int = 1,
                    check: Callable[[], None] | None = None, habits: frozenset[str] = frozenset(),
                    compiled: bool = True) -> tuple[dict[str, int], dict[str, str]]:
    """Starts and widths of a feasible schedule built by one priority rule (or placing the
    transfers in `order`, a topological order of indices into `timings`). The `time` rule
    takes `bias` (added to its priorities, lower first), `window` (starts within one window
    of cycles count as the same moment, so priority decides among them).
    `paired_credit` counts a paired send as finishing earlier by that share of the time it
    saves on its receivers' lanes: a slightly later paired send often beats an ordinary one
    on tiles whose lanes or memory elements are the bottleneck.

    A width is chosen by earliest completion; with `borrow_aware`, a paired send
    is charged the lane time it takes from a partner that still has sends of its
    own to place, so a short paired send does not delay the partner's work.
    `check` is called every few hundred placements and may raise to stop (Ctrl-C, deadline).
    `habits` (names in `HABITS`) make it schedule as the reference compiler did.
    The list rules run compiled where the package was built with it (`packed`; the same
    decisions), but for the habit `release_after_receives`; `compiled` False runs Python.
    """
    timings = timings if timings is not None else phase_timings(phase, spec)
    if (compiled and packed.compiled() and (rule != "time" or order is not None)
            and "release_after_receives" not in habits):
        pk = packed.packed(timings, spec, habits, check)
        order = order if order is not None else priority_order(timings, spec, rule)
        keys = np.empty(len(timings))
        keys[order] = np.arange(len(order))
        return pk.solution(*pk.place(keys, borrow_aware, paired_credit, check), timings)
    pending: dict[int, int] = defaultdict(int)
    for tm in timings:
        pending[tm.transfer.src] += 1
    lanes = Lanes(spec, "paired_reserves_partner" in habits)
    received: dict[int, int] | None = {} if "release_after_receives" in habits else None
    always_pair = "pair_whenever_possible" in habits
    finish: dict[str, int] = {}
    starts: dict[str, int] = {}
    widths: dict[str, str] = {}

    def place(i: int) -> tuple[int, str]:
        """The start and width of transfer i placed now, at its earliest completion."""
        tm = timings[i]
        lower = max((finish[a] for a in tm.transfer.after), default=0)
        if received is not None:
            lower = max(lower, max(received.get(d, 0) for d in tm.transfer.dst))
        best: tuple[int, int, str] | None = None
        for w in (PAIRED,) if always_pair and PAIRED in tm.widths else tm.widths:
            s = earliest(lanes.checks(tm, w), lower)
            cost = s + tm.end_offset(w)
            if borrow_aware and w == PAIRED and pending[tm.partner]:
                cost += spec.exchange.tx_overhead + tm.duration[w]
            if paired_credit and w == PAIRED and ORDINARY in tm.duration:
                cost -= paired_credit * (tm.duration[ORDINARY] - tm.duration[PAIRED])
            if best is None or cost < best[0]:
                best = (cost, s, w)
        return best[1], best[2]  # type: ignore[index]

    def commit(i: int, s: int, w: str) -> None:
        tm = timings[i]
        pending[tm.transfer.src] -= 1
        lanes.commit(tm, w, s)
        if received is not None:
            for x, a in tm.arrival.items():
                received[x] = max(received.get(x, 0), s + a + tm.duration[w])
        starts[tm.transfer.id], widths[tm.transfer.id] = s, w
        finish[tm.transfer.id] = s + tm.end_offset(w)
        if check is not None and len(finish) % 256 == 0:
            check()

    if rule == "time" and order is None:
        _by_start(timings, spec, place, commit, bias, window, check)
    else:
        for i in order if order is not None else priority_order(timings, spec, rule):
            commit(i, *place(i))
    return starts, widths


def _by_start(timings: list[Timing], spec: Spec, place, commit, bias: list[float] | None,
              window: int, check: Callable[[], None] | None = None) -> None:
    """Non-delay placement: the transfer that can start earliest goes next (starts
    recomputed lazily as the lanes fill), ties to the one whose busiest tile, counting its
    sends and receives not yet placed, has the most work left. Transfers that can share a
    moment are put side by side, so half-duplex tiles (send and receive buffers on one
    memory element) take turns instead of queueing every send of one tile first."""
    ex = spec.exchange
    succs, indeg = successors(timings)
    work: dict[int, int] = defaultdict(int)  # per tile: sends and receives not yet placed
    cost = [[(tm.transfer.src, ex.tx_overhead + min(tm.duration.values()))]
            + [(x, ex.rx_lead + min(tm.duration.values())) for x in tm.transfer.dst] for tm in timings]
    for items in cost:
        for x, c in items:
            work[x] += c

    def prio(i: int) -> float:
        return -max(work[x] for x, _ in cost[i]) + (bias[i] if bias else 0)

    q = max(1, window)
    heap = [(place(i)[0] // q, prio(i), i) for i in range(len(timings)) if indeg[i] == 0]
    heapq.heapify(heap)
    pops = 0
    while heap:
        pops += 1
        if check is not None and pops % 64 == 0:  # a start recomputed on wide multicasts is slow
            check()
        b0, p, i = heapq.heappop(heap)
        s, w = place(i)
        if s // q > b0 or p != prio(i):  # a later start, or its tiles' remaining work changed
            heapq.heappush(heap, (s // q, prio(i), i))
            continue
        commit(i, s, w)
        for x, c in cost[i]:
            work[x] -= c
        for j in succs[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(heap, (place(j)[0] // q, prio(j), j))


def timed_cost(timings: list[Timing]) -> float:
    """Seconds the non-delay greedy (rule `time`) takes on these transfers, about: it re-places
    transfers as lanes fill, so it is the slow engine on wide multicasts (measured: ~0.4 ms a
    transfer and receive on 2-core machines). Callers skip it when it would not fit."""
    return 4e-4 * sum(1 + len(tm.arrival) for tm in timings)


def best_greedy(inst: Instance, rules: tuple[str, ...] | None = None, stop: Budget | None = None,
                until: float | None = None, habits: frozenset[str] = frozenset(), quick: bool = False,
                ) -> tuple[dict[str, int], dict[str, str], str]:
    """Run the priority rules, each with both width policies on phases up to `QUICK_UP_TO`
    transfers (on larger ones `LARGE_RULES`, plain width policy, with `until`; the first
    alone without, or when `quick`), and keep the best schedule. With `stop`, Ctrl-C ends
    any run (`Stopped` when no schedule is complete yet) and the deadline, or `until`
    (time.monotonic()), ends the search after the first schedule: there is always one to
    fall back on; no rule starts that the slowest so far shows cannot end by `until`.
    `habits`: as `greedy_schedule`'s, for every rule."""
    phase, spec, timings = inst.phase, inst.spec, inst.timings
    if rules is not None or len(timings) <= QUICK_UP_TO:
        runs = [(r, a) for r in rules or QUICK_RULES for a in (False, True)]
    else:
        runs = [(r, False) for r in (LARGE_RULES if until is not None and not quick else LARGE_RULES[:1])]
    best, slowest = None, 0.0
    for rule, aware in runs:
        t0 = time.monotonic()
        if best is not None and stop is not None and (
                stop.is_set() or (until is not None and t0 + slowest >= until)):
            stop.cut()  # the clock, not the rules, ended it
            break
        check = None if stop is None else partial(stop.check, deadline=best is not None)
        try:
            starts, widths = greedy_schedule(phase, spec, rule, timings, aware, check=check,
                                             habits=habits)
        except Stopped:
            if best is None:
                raise
            stop.cut()  # type: ignore[union-attr]
            break
        slowest = max(slowest, time.monotonic() - t0)
        h = horizon_of(timings, starts, widths)
        if best is None or h < best[0]:
            best = (h, starts, widths, rule + ("+borrow-aware" if aware else ""))
    _, starts, widths, rule = best  # type: ignore[misc]
    return starts, widths, rule


@declare("exchange", "greedy", "heuristic",
         "list scheduler: the best of its priority rules and width policies",
         options=dict.fromkeys(FLAGS, FLAG), baseline=True)
def solve_greedy(inst: Instance, hint: None, params: SolveParams, budget: Budget,
                 progress: Progress | None = None, until: float | None = None) -> Result:
    """The baseline of every exchange method: `best_greedy` with the habits `params` asks for
    (only when the greedy itself is asked for: they make a baseline to compare against)."""
    habits = frozenset(k for k in HABITS if params.options.get(k) is True)
    starts, widths, rule = best_greedy(inst, stop=budget, until=until, habits=habits,
                                       quick=params.options.get("quick") is True)
    return Result(Status.FEASIBLE, (starts, widths), inst.horizon((starts, widths)), solver=f"greedy/{rule}",
                  extras={"habits": sorted(habits)} if habits else {})
