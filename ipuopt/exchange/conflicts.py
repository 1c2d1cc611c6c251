"""Resources and conflicts between transfers, in one home: which resources a transfer holds
whatever its width (the clique bound, colouring), which transfers can never overlap, and
which resources a transfer touches at any width (LNS's neighbourhoods). Resources are named
as `Occupancy` kinds and keys (`timing.py`): ("tx", tile), ("rx", tile), ("rd"|"wr", tile,
region, element)."""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from typing import Any

from ipuopt.exchange.timing import PAIRED, Timing
from ipuopt.spec import Spec

CLASHES = {"tx": "tx", "rx": "rx", "rd": "wr", "wr": "rd"}  # which use of a resource conflicts with which


def held_resources(tm: Timing, o: int) -> dict[tuple, int]:
    """Resource -> offset of the transfer's payload window after S + tx_overhead, for every
    resource it holds whatever its width."""
    t = tm.transfer
    out: dict[tuple, int] = {("tx", t.src): 0}
    out.update({("rd", t.src, *el): 0 for el in tm.read_elements})
    for x, a in tm.arrival.items():
        out[("rx", x)] = a - o
        out.update({("wr", x, *el): a - o for el in tm.write_elements})
    return out


def resource(key: tuple) -> tuple:
    """A held resource as conflicts see it: a lane, or a memory element whether read or
    written ("el")."""
    return key if key[0] in ("tx", "rx") else ("el", *key[1:])


def touched(tm: Timing, spec: Spec) -> set[tuple]:
    """Every lane and memory element the transfer occupies at any width; an element read or
    written counts as one resource ("el"), since either use can clash with the other."""
    return {(o.kind if o.kind in ("tx", "rx") else "el", o.key)
            for w in tm.widths for o in tm.occupancies(w, spec)}


class Conflicts:
    """Which transfers can never overlap whatever the widths: a common transmit lane (same
    source), receive lane (a common destination), a memory element one reads on a tile
    where the other writes it, or a dependency. Built per transfer when asked, the last
    thousand kept (all at once would cost memory quadratic in a lane's load)."""

    def __init__(self, timings: list[Timing], held: list[dict[tuple, int]]) -> None:
        self.held = held
        self.users: dict[tuple, list[int]] = defaultdict(list)
        for i, h in enumerate(held):
            for key in h:
                self.users[key].append(i)
        ids = {tm.transfer.id: i for i, tm in enumerate(timings)}
        self.deps: dict[int, set[int]] = defaultdict(set)
        for i, tm in enumerate(timings):
            for a in tm.transfer.after:
                self.deps[i].add(ids[a])
                self.deps[ids[a]].add(i)
        self.of = lru_cache(maxsize=1024)(self._of)  # growing one clique asks again and again

    @staticmethod
    def against(key: tuple) -> tuple:
        """The resource whose holders conflict with a holder of this one."""
        return key if key[0] in ("tx", "rx") else (CLASHES[key[0]], *key[1:])

    def _of(self, i: int) -> frozenset[int]:
        out = set(self.deps.get(i, ()))
        for key in self.held[i]:
            out.update(self.users.get(self.against(key), ()))
        out.discard(i)
        return frozenset(out)


def root(parent: dict, x: Any) -> Any:
    """The set of `x` in a union-find held as `parent` (absent: a set of its own), halving
    the path on the way."""
    while parent.setdefault(x, x) != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def parts(timings: list[Timing]) -> list[list[int]]:
    """Indices of the transfers of each part (no lane, element or dependency shared with
    another part), each in phase order; the parts in order of their first transfer (a list
    for a union-find here, not `root`'s dict: this runs on every large phase)."""
    parent = list(range(len(timings)))

    def at(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: dict[tuple, int] = {}
    index = {tm.transfer.id: i for i, tm in enumerate(timings)}
    for i, tm in enumerate(timings):
        t = tm.transfer
        keys: list[tuple] = [("tx", t.src), *(("rx", x) for x in t.dst)]
        if PAIRED in tm.widths and tm.partner is not None:
            keys.append(("tx", tm.partner))
        keys += [("el", t.src, *e) for e in tm.read_elements]
        keys += [("el", x, *e) for x in t.dst for e in tm.write_elements]
        for other in [owner.setdefault(k, i) for k in keys] + [index[a] for a in t.after]:
            a, b = at(i), at(other)
            if a != b:
                parent[a] = b
    found: dict[int, list[int]] = {}
    for i in range(len(timings)):
        found.setdefault(at(i), []).append(i)
    return list(found.values())
