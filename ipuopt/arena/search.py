"""Exact placement search in the manner of MiniMalloc (Moffitt, ASPLOS 2023), in numpy.

What makes the problem easy:
- canonical placements: every buffer sits at its minimum offset (the highest top
  of the placed buffers it is live with), and buffers are placed in
  non-decreasing (offset, rank) order, so each canonical placement is reached
  by exactly one order;
- dominance: a buffer whose minimum offset is at or above the lowest top any
  other unplaced buffer could reach would leave a needless gap: skip it;
- section-wise bounds: time is cut into sections at every live-range endpoint;
  later buffers sit at or above the last offset, so in every section
  max(last offset, skyline) plus the unplaced bytes live there must fit;
- unallocated floors: a section's skyline is at least the lowest minimum offset of
  the unplaced buffers live in it (space below that is lost);
- hatless pruning: when the buffer just placed is live with no unplaced buffer,
  the rest of the search does not depend on it, so if that fails no sibling can
  succeed;
- dynamic decomposition: once the unplaced buffers fall into groups that share
  no time, each group is solved on its own (a failure in one is final);
- several static rank orders (by section total, width in sections, area),
  tried round robin under a doubling node limit, since one order may be lucky
  where another thrashes.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

from ipuopt.arena.problem import Arena


class _Stop(Exception):
    pass


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
               orders: tuple[str, ...] = RANKS) -> SearchResult:
    """Offsets within `capacity` (default: the arena's) honouring sizes, live ranges,
    alignment, aliases and fixed offsets. `distinct_elements_from` is not searched on:
    callers validate and fall back to CP-SAT."""
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
    nodes = 0
    limit_nodes = max(2 * n, 64)
    sys_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(sys_limit, 4 * n + 1000))
    try:
        while True:
            for order in orders:
                rank = _rank(order, size, width, max_total, area)
                res = _run(n, size, lo, hi, align, rank, overlaps, sections, total.copy(), nsec, cap,
                           {ids.index(r): off for r, off in fixed_of.items() if r in ids},
                           limit_nodes, deadline)
                nodes += res[1]
                if res[0] is not None:
                    out = {ids[i]: int(res[0][i]) for i in range(n)}
                    for b in arena.buffers:
                        out[b.id] = out[roots[b.id]]
                    return SearchResult(out, True, nodes)
                if res[2]:  # exhausted without hitting a limit: it does not fit
                    return SearchResult(None, True, nodes)
                if time.perf_counter() > deadline:
                    return SearchResult(None, False, nodes)
            limit_nodes *= 2
    finally:
        sys.setrecursionlimit(sys_limit)


def _run(n: int, size: np.ndarray, lo: np.ndarray, hi: np.ndarray, align: np.ndarray,
         rank: np.ndarray, overlaps: list[np.ndarray], sections: tuple, total: np.ndarray,
         nsec: int, cap: int,
         fixed: dict[int, int], node_limit: int, deadline: float,
         ) -> tuple[np.ndarray | None, int, bool]:
    """One depth-first search; returns (offsets or None, nodes, exhausted)."""
    offset = np.full(n, -1, dtype=np.int64)
    min_off = np.zeros(n, dtype=np.int64)
    floor = np.zeros(nsec, dtype=np.int64)
    unplaced = np.ones(n, dtype=bool)
    state = {"nodes": 0}
    pair_buf, seg_starts, seg_secs = sections
    big = np.int64(1) << 62

    failed: dict[tuple, tuple[int, int]] = {}
    placed: list[tuple] = []  # placement log, so a failed part can be rolled back

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
        placed.append((i, ov, old_min, old_floor))

    def rollback(mark: int) -> None:
        while len(placed) > mark:
            i, ov, old_min, old_floor = placed.pop()
            unplaced[i] = True
            offset[i] = -1
            total[lo[i]:hi[i]] += size[i]
            floor[lo[i]:hi[i]] = old_floor
            min_off[ov] = old_min

    for i, off in fixed.items():  # reserved memory first; they take no part in the order
        if off < min_off[i]:
            return None, 0, True
        place(i, off)

    def feasible(off: int, s_lo: int, s_hi: int) -> bool:
        """Every section of the part: max(last offset, skyline, lowest unplaced minimum
        offset) plus the unplaced bytes live there fits the capacity."""
        vals = np.where(unplaced[pair_buf], min_off[pair_buf], big)
        low = np.full(nsec, big)
        if len(seg_starts):
            low[seg_secs] = np.minimum.reduceat(vals, seg_starts)
        t = total[s_lo:s_hi]
        eff = np.where(t > 0, np.maximum(floor[s_lo:s_hi], low[s_lo:s_hi]), floor[s_lo:s_hi])
        return bool((np.maximum(eff, off) + t <= cap).all())

    def parts(cand: np.ndarray) -> list[np.ndarray]:
        """Unplaced buffers split into groups that share no time: solved independently."""
        by_start = cand[np.argsort(lo[cand], kind="stable")]
        ends = np.maximum.accumulate(hi[by_start])
        cut = np.nonzero(lo[by_start][1:] >= ends[:-1])[0] + 1
        return np.split(by_start, cut)

    def dfs(last_off: int, last_rank: int, members: np.ndarray) -> bool:
        state["nodes"] += 1
        if state["nodes"] > node_limit or (state["nodes"] & 127 == 0
                                           and time.perf_counter() > deadline):
            raise _Stop
        cand = members[unplaced[members]]
        if len(cand) == 0:
            return True
        # Dominance: the same skyline and unplaced set already failed under an order
        # constraint no stricter than this one.
        key = (unplaced.tobytes(), floor.tobytes(), members.tobytes())
        seen = failed.get(key)
        if seen is not None and (last_off, last_rank) >= seen:
            return False
        groups = parts(cand)
        if len(groups) > 1:
            mark = len(placed)
            for g in groups:  # independent: each restarts the canonical order from 0
                if not dfs(0, -1, g):
                    rollback(mark)
                    failed[key] = (last_off, last_rank)
                    return False
            return True
        s_lo, s_hi = int(lo[cand].min()), int(hi[cand].max())
        offs = min_off[cand]
        order = cand[np.lexsort((rank[cand], offs))]
        min_height = int((offs + size[cand]).min())
        # Sections a candidate does not cover keep their unplaced bytes, which must fit
        # above its offset: prefix/suffix minima of the room give a cheap first test.
        room = np.full(nsec, big)
        t = total[s_lo:s_hi]
        room[s_lo:s_hi] = np.where(t > 0, cap - t, big)
        before = np.concatenate(([big], np.minimum.accumulate(room)))
        after = np.concatenate((np.minimum.accumulate(room[::-1])[::-1], [big]))
        for i in order.tolist():
            off = int(min_off[i])
            if off >= min_height:
                break  # dominance: the buffer reaching min_height could go below first
            if off < last_off or (off == last_off and rank[i] < last_rank):
                continue  # canonical order
            if off + size[i] > cap or off > before[lo[i]] or off > after[hi[i]]:
                continue
            mark = len(placed)
            place(i, off)
            if feasible(off, s_lo, s_hi) and dfs(off, int(rank[i]), cand):
                return True
            rollback(mark)
            if not unplaced[overlaps[i]].any():
                break  # hatless: nothing else depends on i, so no sibling helps
        failed[key] = min(failed.get(key, (last_off, last_rank)), (last_off, last_rank))
        return False

    try:
        found = dfs(0, -1, np.nonzero(unplaced)[0])
    except _Stop:
        return None, state["nodes"], False
    return (offset.copy() if found else None), state["nodes"], not found
