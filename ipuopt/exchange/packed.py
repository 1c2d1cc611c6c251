"""The list greedy's checks as flat arrays, for its compiled engine (`_lists.c`).

The rules stay in `lanes.uses`; packing turns them into integer arrays once per phase,
so that a pass of the greedy over a fragment-level phase takes a fraction of a second in C
instead of seconds in Python (random-60000: about 0.3 s against 8 s), and many passes fit
in a time limit (`justify`). The same arrays mirrored in time (`Packed.mirrored`) schedule
the phase backwards: a schedule of the mirror, read from its end, is a schedule of the
phase with the same horizon.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ipuopt.exchange.instance import successors
from ipuopt.exchange.lanes import IntervalSet, earliest, uses
from ipuopt.exchange.timing import ORDINARY, PAIRED, Timing
from ipuopt.spec import Spec

if TYPE_CHECKING:
    from collections.abc import Callable

try:
    from ipuopt.exchange import _lists as _compiled
except ImportError:  # built without a C compiler: the Python greedy runs instead
    _compiled = None

# in _lists.c's order
FIELDS = ("nw", "ck_ptr", "ck_set", "ck_off", "ck_len", "ck_margin", "cm_ptr", "cm_set", "cm_off",
          "cm_len", "end", "paired", "saving", "borrow", "src", "partner", "pred_ptr", "pred",
          "succ_ptr", "succ")
_CACHE: dict[tuple[int, frozenset[str]], tuple[list[Timing], Packed]] = {}
CACHED = 2  # phases whose packing is kept: a pass after the first costs no packing


def compiled() -> bool:
    """Whether the compiled greedy was built with the package."""
    return _compiled is not None


@dataclass(frozen=True)
class Packed:
    """One phase's checks and holds per transfer and width option (at most two: 2 i + k),
    each option's completion offset, and the dependencies both ways, as int64 arrays."""

    arrays: dict[str, np.ndarray]
    nsets: int
    ntiles: int
    widths: tuple[tuple[str, ...], ...]  # per transfer, its width options in order

    def place(self, keys: np.ndarray, borrow_aware: bool = False, paired_credit: float = 0.0,
              check: Callable[[], None] | None = None, compiled: bool = True,
              ) -> tuple[np.ndarray, np.ndarray]:
        """Starts and chosen option per transfer: the greedy in a topological order of `keys`
        (least first, ties by index); `compiled` False runs the Python engine."""
        n = len(self.widths)
        starts = np.zeros(n, dtype=np.int64)
        slots = np.zeros(n, dtype=np.int64)
        keys = np.ascontiguousarray(keys, dtype=np.float64)
        engine = _place_python if _compiled is None or not compiled else _compiled.place
        engine(tuple(self.arrays[f] for f in FIELDS), self.nsets, self.ntiles, keys, borrow_aware,
               float(paired_credit), check, starts, slots)
        return starts, slots

    def solution(self, starts: np.ndarray, slots: np.ndarray, timings: list[Timing],
                 ) -> tuple[dict[str, int], dict[str, str]]:
        """(start, width) per transfer id, as the greedy returns them."""
        ids = [tm.transfer.id for tm in timings]
        return (dict(zip(ids, starts.tolist(), strict=True)),
                {t: ws[k] for t, ws, k in zip(ids, self.widths, slots.tolist(), strict=True)})

    def arrays_of(self, solution: tuple[dict[str, int], dict[str, str]], timings: list[Timing],
                  ) -> tuple[np.ndarray, np.ndarray]:
        """`solution` as (starts, options) arrays: `solution`'s inverse."""
        starts, widths = solution
        ids = [tm.transfer.id for tm in timings]
        slots = [ws.index(widths[t]) for t, ws in zip(ids, self.widths, strict=True)]
        return np.array([starts[t] for t in ids], dtype=np.int64), np.array(slots, dtype=np.int64)

    def end(self, slots: np.ndarray) -> np.ndarray:
        """Each transfer's completion offset at its chosen option."""
        return self.arrays["end"][2 * np.arange(len(slots)) + slots]

    def mirrored(self) -> Packed:
        """The phase backwards in time: each interval at end - offset - length, and each
        transfer waiting for the ones that waited for it."""
        a = dict(self.arrays)
        for kind in ("ck", "cm"):
            option = np.repeat(np.arange(len(a["end"])), np.diff(a[f"{kind}_ptr"]))
            a[f"{kind}_off"] = a["end"][option] - a[f"{kind}_off"] - a[f"{kind}_len"]
        for one, other in (("pred_ptr", "succ_ptr"), ("pred", "succ")):
            a[one], a[other] = a[other], a[one]
        return replace(self, arrays=a)


def packed(timings: list[Timing], spec: Spec, habits: frozenset[str] = frozenset(),
           check: Callable[[], None] | None = None) -> Packed:
    """The phase packed (kept for the last `CACHED` phases: passes repeat on one phase).
    `check` is called every few hundred transfers and may raise to stop: packing the largest
    fragment-level phase (2.2 million receives) takes about 20 s."""
    key = (id(timings), habits)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is timings:
        return hit[1]
    pk = _pack(timings, spec, habits, check)
    _CACHE[key] = (timings, pk)
    while len(_CACHE) > CACHED:
        del _CACHE[next(iter(_CACHE))]
    return pk


def _pack(timings: list[Timing], spec: Spec, habits: frozenset[str], check: Callable[[], None] | None,
          ) -> Packed:
    partner_rx = "paired_reserves_partner" in habits
    always_pair = "pair_whenever_possible" in habits
    ex = spec.exchange
    sets: dict[tuple, int] = {}
    col: dict[str, list[int]] = {f: [] for f in FIELDS}
    col["ck_ptr"].append(0)
    col["cm_ptr"].append(0)
    widths = []
    index = {tm.transfer.id: i for i, tm in enumerate(timings)}
    succs, _ = successors(timings)
    col["pred_ptr"].append(0)
    col["succ_ptr"].append(0)
    for i, tm in enumerate(timings):
        if check is not None and i % 256 == 0:
            check()
        ws = (PAIRED,) if always_pair and PAIRED in tm.widths else tm.widths
        widths.append(ws)
        col["nw"].append(len(ws))
        col["src"].append(tm.transfer.src)
        col["partner"].append(-1 if tm.partner is None else tm.partner)
        for k in range(2):
            if k < len(ws):
                w = ws[k]
                checks, holds = uses(tm, w, spec, partner_rx)
                for key, o, n, m in checks:
                    col["ck_set"].append(sets.setdefault(key, len(sets)))
                    col["ck_off"].append(o)
                    col["ck_len"].append(n)
                    col["ck_margin"].append(m)
                for key, o, n in holds:
                    col["cm_set"].append(sets.setdefault(key, len(sets)))
                    col["cm_off"].append(o)
                    col["cm_len"].append(n)
                col["end"].append(tm.end_offset(w))
                col["paired"].append(w == PAIRED)
                both = w == PAIRED and ORDINARY in tm.duration
                col["saving"].append(tm.duration[ORDINARY] - tm.duration[PAIRED] if both else 0)
                col["borrow"].append(ex.tx_overhead + tm.duration[w])
            else:
                for f in ("end", "paired", "saving", "borrow"):
                    col[f].append(0)
            col["ck_ptr"].append(len(col["ck_set"]))
            col["cm_ptr"].append(len(col["cm_set"]))
        col["pred"] += [index[a] for a in tm.transfer.after]
        col["pred_ptr"].append(len(col["pred"]))
        col["succ"] += succs[i]
        col["succ_ptr"].append(len(col["succ"]))
    arrays = {f: np.asarray(v, dtype=np.int64) for f, v in col.items()}
    return Packed(arrays, len(sets), spec.tiles, tuple(widths))


def _place_python(arrays: tuple[np.ndarray, ...], nsets: int, ntiles: int, keys: np.ndarray,
                  borrow_aware: bool, credit: float, check: Callable[[], None] | None,
                  starts: np.ndarray, slots: np.ndarray) -> None:
    """`_lists.place` in Python, where the package was built without a C compiler (and the
    reference the compiled one is tested against, mirrored arrays included)."""
    import heapq

    a = {f: v.tolist() for f, v in zip(FIELDS, arrays, strict=True)}
    sets = [IntervalSet() for _ in range(nsets)]
    n = len(a["nw"])
    pending = [0] * (ntiles + 1)
    for x in a["src"]:
        pending[x] += 1
    indeg = [a["pred_ptr"][i + 1] - a["pred_ptr"][i] for i in range(n)]
    ready = [(float(keys[i]), i) for i in range(n) if indeg[i] == 0]
    heapq.heapify(ready)
    finish = [0] * n
    placed = 0
    while ready:
        _, i = heapq.heappop(ready)
        lower = max((finish[p] for p in a["pred"][a["pred_ptr"][i]:a["pred_ptr"][i + 1]]), default=0)
        best = None
        for k in range(a["nw"][i]):
            o = 2 * i + k
            span = range(a["ck_ptr"][o], a["ck_ptr"][o + 1])
            s = earliest([(sets[a["ck_set"][c]], a["ck_off"][c], a["ck_len"][c], a["ck_margin"][c])
                           for c in span], lower)
            cost = float(s + a["end"][o])
            if borrow_aware and a["paired"][o] and a["partner"][i] >= 0 and pending[a["partner"][i]]:
                cost += a["borrow"][o]
            if credit and a["paired"][o] and a["saving"][o]:
                cost -= credit * a["saving"][o]
            if best is None or cost < best[0]:
                best = (cost, s, k)
        _, s, k = best  # type: ignore[misc]
        o = 2 * i + k
        for c in range(a["cm_ptr"][o], a["cm_ptr"][o + 1]):
            sets[a["cm_set"][c]].add(s + a["cm_off"][c], s + a["cm_off"][c] + a["cm_len"][c])
        pending[a["src"][i]] -= 1
        starts[i], slots[i], finish[i] = s, k, s + a["end"][o]
        for j in a["succ"][a["succ_ptr"][i]:a["succ_ptr"][i + 1]]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(ready, (float(keys[j]), j))
        placed += 1
        if check is not None and placed % 256 == 0:
            check()
    if placed != n:
        raise ValueError("the dependencies have a cycle")
