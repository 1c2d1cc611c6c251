"""Exact placement search for the arena's `fit` problem, in numpy.

Ideas from MiniMalloc (Moffitt, ASPLOS 2023) and from perfect-packing search:
- pushed-down placements: any placement can be pushed down until every buffer
  rests on a top (or 0), so offsets come from a small set of levels;
- skyline branching: every later buffer goes at or above f, the lowest skyline
  of the sections still to fill. Of the sections at f, branch on the one with
  the fewest ways to fill its lowest free byte (fail first): a buffer live
  there that fits exactly at f, or leaving that byte empty, which raises the
  section to the next level a buffer could rest on;
- section bounds: time is cut into sections at every live-range endpoint; in
  every section the skyline, raised to the lowest spot any unplaced buffer
  live there can take, plus the unplaced bytes live there must fit;
- dynamic decomposition: once the unplaced buffers fall into groups that share
  no time, each group is solved on its own (a failure in one is final);
- dominance: equal buffers are interchangeable (one branch per shape) and a
  state (placed set, skyline, minimum offsets) that failed is not expanded again;
- value order: a buffer that exactly spans the run of sections at f first;
- several rank orders and perturbations of them, round robin under a doubling
  node limit, since search times are heavy-tailed.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ipuopt.arena.problem import Arena


class _Stop(Exception):
    """A node or time limit ended this run of the search."""


@dataclass
class SearchResult:
    offsets: dict[str, int] | None
    complete: bool  # True when the search finished: None offsets then means "does not fit"
    nodes: int


def _items(arena: Arena) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
    """Storage items: each root with its aliases' hull of live ranges and largest size."""
    roots = arena.roots()
    agg: dict[str, list[int]] = {}
    for b in arena.buffers:
        r = roots[b.id]
        old = agg.get(r)
        agg[r] = [b.size, b.first, b.end] if old is None else [
            max(old[0], b.size), min(old[1], b.first), max(old[2], b.end)]
    ids = list(agg)
    by_id = {b.id: b for b in arena.buffers}
    arr = np.array([agg[i] for i in ids], dtype=np.int64).reshape(-1, 3)
    align = np.array([by_id[i].align for i in ids], dtype=np.int64)
    return ids, arr[:, 0], arr[:, 1], arr[:, 2], align, roots


RANKS = ("WAT", "TAW", "TWA")


def _rank(order: str, size: np.ndarray, width: np.ndarray, total: np.ndarray,
          area: np.ndarray) -> np.ndarray:
    """Position of each buffer in the static order (larger key first, letters in priority)."""
    keys = {"T": total, "W": width, "A": area, "S": size}
    cols = [-keys[c] for c in reversed(order)]
    perm = np.lexsort(cols)
    rank = np.empty(len(size), dtype=np.int64)
    rank[perm] = np.arange(len(size))
    return rank


def search_fit(arena: Arena, capacity: int | None = None, time_limit: float = 60.0,
               orders: tuple[str, ...] = RANKS, stop: threading.Event | None = None) -> SearchResult:
    """Offsets within `capacity` (default: the arena's) honouring sizes, live ranges,
    alignment, aliases and fixed offsets. `distinct_elements_from` is not searched on:
    callers validate and fall back to CP-SAT. Setting `stop` ends the search early."""
    cap = arena.capacity if capacity is None else capacity
    ids, size, first, end, align, roots = _items(arena)
    n = len(ids)
    fixed_of = {b.id: b.offset for b in arena.buffers if b.offset is not None}
    cuts = np.unique(np.concatenate([first, end]))
    lo = np.searchsorted(cuts, first)
    hi = np.searchsorted(cuts, end)
    nsec = max(1, len(cuts) - 1)
    total = np.zeros(nsec, dtype=np.int64)
    for i in range(n):
        total[lo[i]:hi[i]] += size[i]
    width = hi - lo
    area = size * (end - first)
    max_total = np.array([total[lo[i]:hi[i]].max() for i in range(n)], dtype=np.int64)
    overlaps = [np.nonzero((first < end[i]) & (first[i] < end))[0] for i in range(n)]
    overlaps = [ov[ov != i] for i, ov in enumerate(overlaps)]
    # (section, buffer) pairs grouped by section, for per-section minima in one reduceat
    pair_sec = np.concatenate([np.arange(lo[i], hi[i]) for i in range(n)]) if n else np.zeros(0, int)
    pair_buf = np.concatenate([np.full(hi[i] - lo[i], i) for i in range(n)]) if n else np.zeros(0, int)
    by_sec = np.argsort(pair_sec, kind="stable")
    pair_sec, pair_buf = pair_sec[by_sec], pair_buf[by_sec]
    starts = np.searchsorted(pair_sec, np.arange(nsec))
    covered = starts < np.append(starts[1:], len(pair_sec))
    sections = (pair_buf, starts[covered], np.nonzero(covered)[0])
    deadline = time.perf_counter() + time_limit

    def expired() -> bool:
        return time.perf_counter() > deadline or (stop is not None and stop.is_set())

    nodes = 0
    limit_nodes = max(2 * n, 64)
    sys_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(sys_limit, 4 * n + 1000))
    rng = np.random.default_rng(0)
    try:
        while True:
            # Each rank order with and without preferring the longest buffer among equally
            # good fits, then as many randomly perturbed orders: search times are heavy-tailed
            # and instances differ in which strategy suits them, so all run round robin
            # under a doubling node limit.
            plans = [(o, v) for o in orders for v in (False, True)]
            plans += [(f"~{k}", bool(k % 2)) for k in range(len(plans))]
            for order, longest in plans:
                if order.startswith("~"):
                    jitter = np.exp(rng.normal(0.0, 0.5, n))
                    rank = _rank("A", size, width, max_total, (area * jitter).astype(np.int64))
                else:
                    rank = _rank(order, size, width, max_total, area)
                res = _run(n, size, lo, hi, align, rank, overlaps, sections, total.copy(), nsec, cap,
                           {ids.index(r): off for r, off in fixed_of.items() if r in ids},
                           limit_nodes, expired, longest)
                nodes += res[1]
                if res[0] is not None:
                    out = {ids[i]: int(res[0][i]) for i in range(n)}
                    for b in arena.buffers:
                        out[b.id] = out[roots[b.id]]
                    return SearchResult(out, True, nodes)
                if res[2]:  # exhausted without hitting a limit: it does not fit
                    return SearchResult(None, True, nodes)
                if expired():
                    return SearchResult(None, False, nodes)
            limit_nodes *= 2
    finally:
        sys.setrecursionlimit(sys_limit)


def _run(n: int, size: np.ndarray, lo: np.ndarray, hi: np.ndarray, align: np.ndarray,
         rank: np.ndarray, overlaps: list[np.ndarray], sections: tuple, total: np.ndarray,
         nsec: int, cap: int, fixed: dict[int, int], node_limit: int, expired: Callable[[], bool],
         longest: bool = False) -> tuple[np.ndarray | None, int, bool]:
    """One depth-first search; returns (offsets or None, nodes, exhausted)."""
    offset = np.full(n, -1, dtype=np.int64)
    min_off = np.zeros(n, dtype=np.int64)
    floor = np.zeros(nsec, dtype=np.int64)
    unplaced = np.ones(n, dtype=bool)
    state = {"nodes": 0}
    pair_buf, seg_starts, seg_secs = sections
    big = np.int64(1) << 62
    failed: set = set()
    log: list[tuple] = []  # placements and raised skylines, so a failed part can be rolled back

    def place(i: int, off: int) -> None:
        top = off + size[i]
        ov = overlaps[i]
        old_min = min_off[ov].copy()
        bumped = np.maximum(old_min, top)
        rem = bumped % align[ov]
        min_off[ov] = bumped + np.where(rem > 0, align[ov] - rem, 0)
        old_floor = floor[lo[i]:hi[i]].copy()
        floor[lo[i]:hi[i]] = np.maximum(old_floor, top)
        total[lo[i]:hi[i]] -= size[i]
        offset[i] = off
        unplaced[i] = False
        log.append((i, ov, old_min, old_floor))

    raised: list[int] = []  # sections raised by a waste decision (there floors beat min_off)

    def raise_floor(s: int, level: int) -> None:
        log.append((-1, s, int(floor[s]), None))
        floor[s] = level
        raised.append(s)

    def rollback(mark: int) -> None:
        while len(log) > mark:
            i, ov, old_min, old_floor = log.pop()
            if i < 0:
                floor[ov] = old_min
                raised.pop()
                continue
            unplaced[i] = True
            offset[i] = -1
            total[lo[i]:hi[i]] += size[i]
            floor[lo[i]:hi[i]] = old_floor
            min_off[ov] = old_min

    for i, off in fixed.items():  # reserved memory first
        if off < min_off[i]:
            return None, 0, True
        place(i, off)

    def lowest(s_lo: int, s_hi: int) -> np.ndarray:
        """Per section: the skyline, raised to the lowest minimum offset of the unplaced
        buffers live there (the space below that can no longer be used)."""
        vals = np.where(unplaced[pair_buf], min_off[pair_buf], big)
        low = np.full(nsec, big)
        if len(seg_starts):
            low[seg_secs] = np.minimum.reduceat(vals, seg_starts)
        return np.maximum(floor[s_lo:s_hi], low[s_lo:s_hi])

    def parts(cand: np.ndarray) -> list[np.ndarray]:
        """Unplaced buffers split into groups that share no time: solved independently."""
        by_start = cand[np.argsort(lo[cand], kind="stable")]
        ends = np.maximum.accumulate(hi[by_start])
        cut = np.nonzero(lo[by_start][1:] >= ends[:-1])[0] + 1
        return np.split(by_start, cut)

    def dfs(members: np.ndarray) -> bool:
        state["nodes"] += 1
        if state["nodes"] > node_limit or (state["nodes"] & 127 == 0 and expired()):
            raise _Stop
        cand = members[unplaced[members]]
        if len(cand) == 0:
            return True
        groups = parts(cand)
        if len(groups) > 1:
            mark = len(log)
            for g in groups:
                if not dfs(g):
                    rollback(mark)
                    return False
            return True
        key = (unplaced.tobytes(), floor.tobytes(), min_off.tobytes())
        if key in failed:
            return False
        s_lo, s_hi = int(lo[cand].min()), int(hi[cand].max())
        eff = lowest(s_lo, s_hi)
        t = total[s_lo:s_hi]
        busy = t > 0
        # Section bound: what is still to be placed in a section stacks above its skyline.
        if (eff[busy] + t[busy] > cap).any():
            failed.add(key)
            return False
        f = int(eff[busy].min())
        smallest = int(size[cand].min())
        best = None
        # Every later buffer goes at or above f, the lowest skyline. Of the sections at f,
        # branch on the one with the fewest ways to fill its lowest free byte: a buffer
        # live there that fits exactly at f, or leaving that byte empty.
        for s in (np.nonzero(busy & (eff == f))[0] + s_lo)[:64].tolist():
            options, above = [], []
            for i in cover[s]:
                if not unplaced[i]:
                    continue
                # the lowest spot i can take: above every placed buffer and raised skyline
                pos = max(int(min_off[i]), f)
                if raised:  # only raised sections can lie above min_off
                    pos = max(pos, int(floor[lo[i]:hi[i]].max()))
                pos += -pos % int(align[i])
                (options if pos - f < align[i] else above).append((i, pos))
            # Or byte f of s stays empty. In a pushed-down placement a buffer rests on a top:
            # one of the skyline values above f in its sections, or an unplaced buffer's top
            # (at least f plus the smallest unplaced size). Jump to the lowest such level.
            # (An option's sections all have skyline <= f, so for options only the unplaced
            # tops count.)
            level = min((p for _, p in above), default=cap)
            if options:
                level = min(level, f + smallest)
            level += -level % grain
            can_waste = level + int(total[s]) <= cap
            ways = len(options) + can_waste
            if ways == 0:
                failed.add(key)
                return False
            if best is None or ways < best[0]:
                best = (ways, s, options, level, can_waste)
                if ways == 1:
                    break
        _, s, options, level, can_waste = best  # type: ignore[misc]
        # Value order: a buffer that exactly spans the run of sections at f around s first,
        # then one that starts where the run starts, then one that ends where it ends, then
        # the longest, then by rank.
        at_f = eff == f
        run_lo = s - s_lo
        while run_lo > 0 and at_f[run_lo - 1] and busy[run_lo - 1]:
            run_lo -= 1
        run_hi = s - s_lo + 1
        while run_hi < len(at_f) and at_f[run_hi] and busy[run_hi]:
            run_hi += 1
        run_lo, run_hi = run_lo + s_lo, run_hi + s_lo
        options.sort(key=lambda o: (not (lo[o[0]] == run_lo and hi[o[0]] == run_hi),
                                    lo[o[0]] != run_lo, hi[o[0]] != run_hi,
                                    -(hi[o[0]] - lo[o[0]]) if longest else 0))
        shapes = set()
        for i, off in options:  # stable sort: rank order within each class
            shape = (lo[i], hi[i], size[i], align[i])
            if shape in shapes:
                continue  # equal buffers are interchangeable
            shapes.add(shape)
            if off + size[i] > cap:
                continue
            mark = len(log)
            place(i, off)
            if dfs(cand):
                return True
            rollback(mark)
        if can_waste:
            mark = len(log)
            raise_floor(s, level)
            if dfs(cand):
                return True
            rollback(mark)
        failed.add(key)
        return False

    grain = int(np.gcd.reduce(np.concatenate([size, align, np.array(list(fixed.values()) or [0],
                                                                       dtype=np.int64)])))
    cover: list[list[int]] = [[] for _ in range(nsec)]
    for i in np.argsort(rank).tolist():
        for sec in range(lo[i], hi[i]):
            cover[sec].append(i)
    try:
        found = dfs(np.nonzero(unplaced)[0])
    except _Stop:
        return None, state["nodes"], False
    return (offset.copy() if found else None), state["nodes"], not found
