"""Lower bounds on the optimal horizon of a phase, each valid under every rule of the model.

Each bound relaxes the problem to one resource (or one chain) and takes every
transfer at its cheapest width, so it never exceeds the optimum.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ipuopt.exchange.phase import Phase
from ipuopt.exchange.timing import Timing, phase_timings
from ipuopt.spec import Spec


@dataclass(frozen=True)
class Bound:
    name: str
    value: int
    where: str  # the tile, pair, element or chain that attains it

    def to_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "where": self.where}


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def endpoint_bound(timings: list[Timing], spec: Spec) -> Bound:
    """Per tile: receive-lane work after the earliest possible arrival, and transmit-lane
    work followed by the shortest latency; the receive lanes are disjoint intervals, as are
    the transmit lanes."""
    ex = spec.exchange
    rx_work: dict[int, int] = defaultdict(int)
    rx_first: dict[int, int] = {}
    tx_work: dict[int, int] = defaultdict(int)
    tx_tail: dict[int, int] = {}
    for tm in timings:
        t = tm.transfer
        d = min(tm.duration.values())
        tx_work[t.src] += ex.tx_overhead + d
        lat = min(tm.arrival.values()) - ex.tx_overhead
        tx_tail[t.src] = min(tx_tail.get(t.src, lat), lat)
        for x, a in tm.arrival.items():
            rx_work[x] += ex.rx_lead + d
            rx_first[x] = min(rx_first.get(x, a - ex.rx_lead), a - ex.rx_lead)
    best = Bound("endpoint", 0, "")
    for x, work in rx_work.items():
        v = rx_first[x] + work
        if v > best.value:
            best = Bound("endpoint", v, f"receive lane of tile {x}")
    for s, work in tx_work.items():
        v = work + tx_tail[s]
        if v > best.value:
            best = Bound("endpoint", v, f"transmit lane of tile {s}")
    return best


def pair_bound(timings: list[Timing], spec: Spec) -> Bound:
    """A pair of tiles has two transmit lanes; each send costs them o+d (ordinary) or
    2(o+d) (paired, borrowing the partner's lane), so their total over 2 bounds the horizon."""
    ex = spec.exchange
    work: dict[tuple[int, int], int] = defaultdict(int)
    tail: dict[tuple[int, int], int] = {}
    for tm in timings:
        t = tm.transfer
        partner = spec.partner(t.src)
        if partner is None:
            continue
        key = (min(t.src, partner), max(t.src, partner))
        work[key] += min((2 if w == "paired" else 1) * (ex.tx_overhead + d)
                         for w, d in tm.duration.items())
        lat = min(tm.arrival.values()) - ex.tx_overhead
        tail[key] = min(tail.get(key, lat), lat)
    best = Bound("pair", 0, "")
    for key, w in work.items():
        v = _ceil_div(w, 2) + tail[key]
        if v > best.value:
            best = Bound("pair", v, f"transmit lanes of tiles {key[0]} and {key[1]}")
    return best


def element_bound(timings: list[Timing], spec: Spec) -> Bound:
    """On one tile and memory element, the reads (serial on the transmit lane), the writes'
    payload windows (serial on the receive lane) and reads against writes (the hazard) are
    pairwise disjoint; reads cannot start before tx_overhead."""
    ex = spec.exchange
    work: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    first: dict[tuple, int] = {}
    for tm in timings:
        t = tm.transfer
        d = min(tm.duration.values())
        for el in tm.read_elements:
            key = (t.src, *el)
            work[key][0] += d
            first[key] = min(first.get(key, ex.tx_overhead), ex.tx_overhead)
        for x, a in tm.arrival.items():
            for el in tm.write_elements:
                key = (x, *el)
                work[key][1] += d
                first[key] = min(first.get(key, a), a)
    best = Bound("element", 0, "")
    for key, (r, w) in work.items():
        if not (r and w):
            continue  # reads alone or writes alone are covered by the endpoint bound
        v = first[key] + r + w
        if v > best.value:
            region = spec.regions[key[1]].name
            best = Bound("element", v, f"tile {key[0]} element {key[2]} of {region}")
    return best


def dependency_bound(timings: list[Timing], phase: Phase) -> Bound:
    """Longest chain through `after`, each transfer at its cheapest width and latency."""
    done: dict[str, int] = {}
    best = Bound("dependency", 0, "")
    pending = {tm.transfer.id: tm for tm in timings}
    order: list[Timing] = []
    # Kahn's order; phases are validated acyclic before bounds are computed.
    indeg = {i: len(tm.transfer.after) for i, tm in pending.items()}
    succ: dict[str, list[str]] = defaultdict(list)
    for tm in timings:
        for a in tm.transfer.after:
            succ[a].append(tm.transfer.id)
    queue = [i for i, k in indeg.items() if k == 0]
    while queue:
        i = queue.pop()
        order.append(pending[i])
        for s in succ[i]:
            indeg[s] -= 1
            if indeg[s] == 0:
                queue.append(s)
    for tm in order:
        t = tm.transfer
        start = max((done[a] for a in t.after), default=0)
        done[t.id] = start + min(tm.end_offset(w) for w in tm.widths)
        if done[t.id] > best.value:
            best = Bound("dependency", done[t.id], f"chain ending at transfer {t.id}")
    return best


def all_bounds(phase: Phase, spec: Spec, timings: list[Timing] | None = None) -> list[Bound]:
    timings = timings if timings is not None else phase_timings(phase, spec)
    return [endpoint_bound(timings, spec), pair_bound(timings, spec),
            element_bound(timings, spec), dependency_bound(timings, phase)]


def best_bound(bounds: list[Bound]) -> Bound:
    return max(bounds, key=lambda b: b.value, default=Bound("none", 0, ""))
