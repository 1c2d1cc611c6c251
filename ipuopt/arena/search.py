"""Exact placement search for the arena's `fit` problem, in numpy.

Ideas from MiniMalloc (Moffitt, ASPLOS 2023) and from perfect-packing search:
- pushed-down placements: any placement can be pushed down until every buffer
  rests on a top (or 0), so offsets come from a small set of levels;
- skyline branching: every later buffer goes at or above f, the lowest skyline
  of the sections still to fill. Of the sections at f, branch on one with few
  ways to fill its lowest free byte: a buffer live there that fits exactly at f,
  or leaving that byte empty, which raises the section to the next level a
  buffer could rest on. Two rules pick the section: the first in time with at
  most one way (a sweep), or the fewest ways anywhere (fail first);
- section bounds: time is cut into sections at every live-range endpoint; in
  every section the skyline, raised to the lowest spot any unplaced buffer
  live there can take, plus the unplaced bytes live there must fit;
- dynamic decomposition: once the unplaced buffers fall into groups that share
  no time, each group is solved on its own (a failure in one is final);
- dominance: equal buffers are interchangeable (one branch per shape) and a
  state (placed set, skyline, minimum offsets) that failed is not expanded again;
- value order: a buffer that exactly spans the run of sections at f first;
- buffer branching, MiniMalloc's own search, as a second kind of dive: the next
  buffer at the lowest offset it can take, in canonical order (MiniMalloc's K
  falls to it and not to the skyline; other instances the other way round);
- restarts, since search times are heavy-tailed: rounds of rank orders and
  perturbations of them under a doubling node limit, short random restarts and
  rounds of buffer branching take turns, node for node.

A dive runs compiled (`_dive.c`, the same decisions node for node) where the package was
built with a C compiler, else in numpy, where the branching choice is made with reductions
over (section, buffer) pairs and a node costs about 0.1 to 0.3 ms (compiled: 5 to 30 us).
CP-SAT, counting addresses in the size gcd, succeeds on arenas where one shape dominates and
fails on tangled live ranges (A, I), so `solve.place` races the two.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ipuopt.arena.problem import Arena
from ipuopt.params import DEFAULT_TIME_LIMIT
from ipuopt.result import Result, Status

try:
    from ipuopt.arena import _dive as _compiled
except ImportError:  # built without a C compiler: the numpy dive, the same search but slower
    _compiled = None

_BIG = np.int64(1) << 62


class _Stop(Exception):
    """A node or time limit ended this run of the search."""


def _items(arena: Arena) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
    """Storage items: each root with its aliases' hull of live ranges and largest size."""
    storage = arena.storage()
    ids = list(storage)
    by_id = {b.id: b for b in arena.buffers}
    arr = np.array([storage[i] for i in ids], dtype=np.int64).reshape(-1, 3)
    align = np.array([by_id[i].align for i in ids], dtype=np.int64)
    return ids, arr[:, 0], arr[:, 1], arr[:, 2], align, arena.roots()


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


@dataclass
class _Shape:
    """What every dive of one search shares: storage items, time sections, pair indexes."""

    ids: list[str]
    roots: dict[str, str]
    size: np.ndarray
    lo: np.ndarray  # first section of each item
    hi: np.ndarray  # one past its last section
    align: np.ndarray
    total: np.ndarray  # bytes live per section
    overlaps: list[np.ndarray]  # items live at the same time as each item
    ov_csr: tuple[np.ndarray, np.ndarray]  # the same, as (starts, items) for the compiled dive
    sections: tuple  # (section, item) pairs by section and by item, for numpy reductions
    fixed: dict[int, int]
    cap: int
    width: np.ndarray  # sections
    span: np.ndarray  # time
    area: np.ndarray
    max_total: np.ndarray

    @property
    def n(self) -> int:
        return len(self.ids)

    @functools.cached_property
    def flat(self) -> list[np.ndarray]:
        """The arrays the compiled dive reads, made once per search."""
        pair_sec, pair_buf = self.sections[:2]  # by section, by item within
        cover = np.searchsorted(pair_sec, np.arange(self.nsec + 1))
        fixed = np.array(list(self.fixed.items()), dtype=np.int64).reshape(-1, 2)
        return [np.ascontiguousarray(a, dtype=np.int64) for a in (
            self.size, self.lo, self.hi, self.align, self.total, *self.ov_csr, cover, pair_buf,
            fixed[:, 0], fixed[:, 1])]

    @property
    def nsec(self) -> int:
        return len(self.total)


def _shape(arena: Arena, cap: int) -> _Shape:
    ids, size, first, end, align, roots = _items(arena)
    n = len(ids)
    cuts = np.unique(np.concatenate([first, end]))
    lo = np.searchsorted(cuts, first)
    hi = np.searchsorted(cuts, end)
    nsec = max(1, len(cuts) - 1)
    total = np.zeros(nsec, dtype=np.int64)
    for i in range(n):
        total[lo[i]:hi[i]] += size[i]
    width = hi - lo
    max_total = np.array([total[lo[i]:hi[i]].max() for i in range(n)], dtype=np.int64)
    overlaps = [np.nonzero((first < end[i]) & (first[i] < end))[0] for i in range(n)]
    overlaps = [ov[ov != i] for i, ov in enumerate(overlaps)]
    pair_sec = np.concatenate([np.arange(lo[i], hi[i]) for i in range(n)]) if n else np.zeros(0, int)
    pair_buf = np.concatenate([np.full(hi[i] - lo[i], i) for i in range(n)]) if n else np.zeros(0, int)
    by_sec = np.argsort(pair_sec, kind="stable")
    starts = np.searchsorted(pair_sec[by_sec], np.arange(nsec))
    covered = starts < np.append(starts[1:], len(pair_sec))
    # the pairs by section (for per-section reductions), and by buffer (for per-buffer ones)
    sections = (pair_sec[by_sec], pair_buf[by_sec], starts[covered], np.nonzero(covered)[0],
                pair_sec, np.concatenate([[0], np.cumsum(width)[:-1]]).astype(np.int64))
    fixed = {ids.index(b.id): b.offset for b in arena.buffers if b.offset is not None and b.id in ids}
    ov_csr = (np.concatenate([[0], np.cumsum([len(o) for o in overlaps])]).astype(np.int64),
              np.concatenate([*overlaps, np.zeros(0, np.int64)]).astype(np.int64))
    return _Shape(ids, roots, size, lo, hi, align, total, overlaps, ov_csr, sections, fixed, cap, width,
                  end - first, size * (end - first), max_total)


class _Plan(NamedTuple):
    """One dive: its rank order, value rule, section rule and node limit; `buffers`: branch on
    the next buffer instead of the skyline (`_Dive.dfs_buffers`)."""

    rank: np.ndarray
    longest: bool
    sweep: bool
    limit: int
    buffers: bool = False


def _plans(sh: _Shape, orders: tuple[str, ...], seed: int) -> Iterator[_Plan]:
    """The dives, forever.

    Search times are heavy-tailed and instances differ in which strategy suits them, so three
    take turns with equal node budgets: rounds under a doubling node limit (each rank order
    with and without preferring the longest fit, then as many random perturbations, all
    sweeping in time), short runs of random perturbations with a random value preference
    and section rule, and rounds of buffer branching (MiniMalloc's own search: its three
    orders, by time width, under a doubling limit; it places MiniMalloc's K, which the
    skyline does not). Placements are found by nearly backtrack-free dives (a few n nodes),
    hence the short runs; the rounds' limits grow without bound, so a dive eventually
    exhausts the tree when nothing fits."""
    base = max(2 * sh.n, 64)

    def perturbed(rng: np.random.Generator) -> np.ndarray:
        jitter = np.exp(rng.normal(0.0, 0.5, sh.n))
        return _rank("A", sh.size, sh.width, sh.max_total, (sh.area * jitter).astype(np.int64))

    def rounds() -> Iterator[_Plan]:
        rng = np.random.default_rng(seed)
        given = [(_rank(o, sh.size, sh.width, sh.max_total, sh.area), v) for o in orders
                 for v in (False, True)]
        limit = base
        while True:
            plans = given + [(perturbed(rng), bool(k % 2)) for k in range(len(given) or 6)]
            for rank, longest in plans:
                yield _Plan(rank, longest, True, limit)
            limit *= 2

    def restarts() -> Iterator[_Plan]:
        rng = np.random.default_rng(seed + 1)
        while True:
            yield _Plan(perturbed(rng), bool(rng.integers(2)), bool(rng.integers(2)), 2 * base)

    def buffers() -> Iterator[_Plan]:
        ranks = [_rank(o, sh.size, sh.span, sh.max_total, sh.area) for o in orders]
        # a buffer a node: a dive that places all n with a few backtracks each needs several
        # n nodes (K: 2,016 = 4.4 n), so the first round's limit is 8 n, not 2 n (K: 28k
        # nodes over all streams -> 4.7k; A, C, E, G, I: as many nodes or fewer)
        limit = 4 * base
        while True:
            for rank in ranks:
                yield _Plan(rank, False, False, limit, buffers=True)
            limit *= 2

    streams = [rounds(), restarts(), buffers()]
    spent = [0] * len(streams)
    while True:  # the stream that has had the fewest nodes goes next
        k = spent.index(min(spent))
        plan = next(streams[k])
        spent[k] += plan.limit
        yield plan


def search_fit(arena: Arena, capacity: int | None = None, time_limit: float = DEFAULT_TIME_LIMIT,
               orders: tuple[str, ...] = RANKS, stop: Callable[[], bool] | None = None,
               seed: int = 0, compiled: bool = True, threads: int = 1) -> Result:
    """Offsets within `capacity` (default: the arena's) honouring sizes, live ranges,
    alignment, aliases and fixed offsets. `distinct_elements_from` is not searched on:
    callers validate and fall back to CP-SAT. `stop` returning True ends the search early.

    Status `feasible` with the offsets, `infeasible` when the tree was exhausted (nothing
    fits, for the reserved hulls the search places), `unknown` when a limit ended it;
    `extras["nodes"]` counts the nodes. `compiled` False runs the numpy dive even where the
    compiled one was built (they decide alike; tests compare them). `threads` above 1 runs
    that many compiled dives at once, each taking the next plan (the first answer ends the
    others): faster on several cores, but which answer comes first is up to the clock."""
    t0 = time.perf_counter()
    sh = _shape(arena, arena.capacity if capacity is None else capacity)
    deadline = t0 + time_limit
    answer: list[tuple[Status, np.ndarray | None]] = []  # the first decisive dive's

    def expired() -> bool:
        return bool(answer) or time.perf_counter() > deadline or (stop is not None and stop())

    nodes = 0
    lock = threading.Lock()
    plans = _plans(sh, orders, seed)
    kind = _Dive if _compiled is None or not compiled else _CompiledDive

    def dives() -> None:
        nonlocal nodes
        while not expired():
            with lock:
                plan = next(plans)
            dive = kind(sh, plan, expired)
            found, exhausted = dive.run()
            with lock:
                nodes += dive.nodes
                if found is not None and not answer:
                    answer.append((Status.FEASIBLE, found))
                elif exhausted and not answer:  # without hitting a limit: nothing fits
                    answer.append((Status.INFEASIBLE, None))

    sys_limit = sys.getrecursionlimit()
    # one frame per placement, per raised skyline and per split into parts
    sys.setrecursionlimit(max(sys_limit, 20 * (sh.n + sh.nsec) + 1000))
    others = [threading.Thread(target=dives, daemon=True)
              for _ in range(threads - 1 if kind is _CompiledDive else 0)]
    try:
        for t in others:
            t.start()
        dives()
        for t in others:
            t.join()
    finally:
        sys.setrecursionlimit(sys_limit)
    status, found = answer[0] if answer else (Status.UNKNOWN, None)
    out = None
    if found is not None:
        out = {sh.ids[i]: int(found[i]) for i in range(sh.n)}
        for b in arena.buffers:
            out[b.id] = out[sh.roots[b.id]]
    return Result(status, out, runtime=time.perf_counter() - t0, solver="search", extras={"nodes": nodes})


class _CompiledDive:
    """`_Dive` in C (`_dive.c`): the same decisions, node for node."""

    def __init__(self, sh: _Shape, plan: _Plan, expired: Callable[[], bool]) -> None:
        self.sh, self.plan, self.expired = sh, plan, expired
        self.nodes = 0

    def run(self) -> tuple[np.ndarray | None, bool]:
        """(offsets or None, exhausted without hitting a limit)."""
        sh, plan = self.sh, self.plan
        out = np.full(sh.n, -1, dtype=np.int64)
        rank = np.ascontiguousarray(plan.rank, dtype=np.int64)
        status, self.nodes = _compiled.dive(*sh.flat, int(sh.cap), int(plan.limit), plan.longest,
                                            plan.sweep, self.expired, out, rank, plan.buffers)
        return (out if status == 0 else None), status == 1


class _Dive:
    """One depth-first search under a node limit, with its own skyline state.

    Placements and raised skylines are logged so that a failed part can be rolled back."""

    def __init__(self, sh: _Shape, plan: _Plan, expired: Callable[[], bool]) -> None:
        self.sh, self.plan, self.node_limit, self.expired = sh, plan, plan.limit, expired
        self.longest, self.sweep, self.rank = plan.longest, plan.sweep, plan.rank
        n, nsec = sh.n, sh.nsec
        self.total = sh.total.copy()
        self.offset = np.full(n, -1, dtype=np.int64)
        self.min_off = np.zeros(n, dtype=np.int64)
        self.floor = np.zeros(nsec, dtype=np.int64)
        self.unplaced = np.ones(n, dtype=bool)
        self.nodes = 0
        self.failed: set = set()
        self.log: list[tuple] = []
        self.raised: list[int] = []  # sections raised by a waste decision (there floors beat min_off)
        self.cover: list[list[int]] = [[] for _ in range(nsec)]  # live items per section, by rank
        for i in np.argsort(plan.rank).tolist():
            for sec in range(sh.lo[i], sh.hi[i]):
                self.cover[sec].append(i)

    def run(self) -> tuple[np.ndarray | None, bool]:
        """(offsets or None, exhausted without hitting a limit)."""
        for i, off in self.sh.fixed.items():  # reserved memory first
            if off < self.min_off[i]:
                return None, True
            self.place(i, off)
        try:
            found = (self.dfs_buffers if self.plan.buffers else self.dfs)(np.nonzero(self.unplaced)[0])
        except (_Stop, RecursionError):  # a run too deep to finish counts as cut short
            return None, False
        return (self.offset.copy() if found else None), not found

    def place(self, i: int, off: int) -> None:
        sh = self.sh
        top = off + sh.size[i]
        ov = sh.overlaps[i]
        old_min = self.min_off[ov].copy()
        bumped = np.maximum(old_min, top)
        rem = bumped % sh.align[ov]
        self.min_off[ov] = bumped + np.where(rem > 0, sh.align[ov] - rem, 0)
        old_floor = self.floor[sh.lo[i]:sh.hi[i]].copy()
        self.floor[sh.lo[i]:sh.hi[i]] = np.maximum(old_floor, top)
        self.total[sh.lo[i]:sh.hi[i]] -= sh.size[i]
        self.offset[i] = off
        self.unplaced[i] = False
        self.log.append((i, ov, old_min, old_floor))

    def raise_floor(self, s: int, level: int) -> None:
        self.log.append((-1, s, int(self.floor[s]), None))
        self.floor[s] = level
        self.raised.append(s)

    def rollback(self, mark: int) -> None:
        sh = self.sh
        while len(self.log) > mark:
            i, ov, old_min, old_floor = self.log.pop()
            if i < 0:
                self.floor[ov] = old_min
                self.raised.pop()
                continue
            self.unplaced[i] = True
            self.offset[i] = -1
            self.total[sh.lo[i]:sh.hi[i]] += sh.size[i]
            self.floor[sh.lo[i]:sh.hi[i]] = old_floor
            self.min_off[ov] = old_min

    def lowest(self, s_lo: int, s_hi: int) -> np.ndarray:
        """Per section: the skyline, raised to the lowest minimum offset of the unplaced
        buffers live there (the space below that can no longer be used)."""
        _, pair_buf, seg_starts, seg_secs, _, _ = self.sh.sections
        vals = np.where(self.unplaced[pair_buf], self.min_off[pair_buf], _BIG)
        low = np.full(self.sh.nsec, _BIG)
        if len(seg_starts):
            low[seg_secs] = np.minimum.reduceat(vals, seg_starts)
        return np.maximum(self.floor[s_lo:s_hi], low[s_lo:s_hi])

    def parts(self, cand: np.ndarray) -> list[np.ndarray]:
        """Unplaced buffers split into groups that share no time: solved independently."""
        lo, hi = self.sh.lo, self.sh.hi
        by_start = cand[np.argsort(lo[cand], kind="stable")]
        ends = np.maximum.accumulate(hi[by_start])
        cut = np.nonzero(lo[by_start][1:] >= ends[:-1])[0] + 1
        return np.split(by_start, cut)

    def count(self) -> None:
        self.nodes += 1
        if self.nodes > self.node_limit or (self.nodes & 127 == 0 and self.expired()):
            raise _Stop

    def by_parts(self, cand: np.ndarray, dfs: Callable[[np.ndarray], bool]) -> bool | None:
        """Candidates in parts that share no time, each solved by `dfs` (a failure in one is
        final): whether all were placed; None when they form one part."""
        groups = self.parts(cand)
        if len(groups) == 1:
            return None
        mark = len(self.log)
        for g in groups:
            if not dfs(g):
                self.rollback(mark)
                return False
        return True

    def dfs_buffers(self, members: np.ndarray, min_offset: int = 0, min_rank: int = -1) -> bool:
        """Branch on the next buffer, at the lowest offset it can take, in a canonical order
        (offsets never fall, at equal offsets ranks rise) and never at or above another's
        lowest top (that one would go first); a placement is kept only if every section's
        unplaced bytes still fit above its skyline, this offset and the lowest spot of the
        buffers left there (MiniMalloc's search)."""
        self.count()
        cand = members[self.unplaced[members]]
        if len(cand) == 0:
            return True
        split = self.by_parts(cand, self.dfs_buffers)
        if split is not None:
            return split
        sh, rank = self.sh, self.rank
        offs = self.min_off[cand]
        height = int((offs + sh.size[cand]).min())
        s_lo, s_hi = int(sh.lo[cand].min()), int(sh.hi[cand].max())
        for k in np.lexsort((rank[cand], offs)).tolist():
            i, off = int(cand[k]), int(offs[k])
            if off < min_offset or (off == min_offset and rank[i] < min_rank):
                continue
            if off >= height:
                break  # and so are all after it
            if off + sh.size[i] > sh.cap:
                continue
            mark = len(self.log)
            self.place(i, off)
            t = self.total[s_lo:s_hi]
            busy = t > 0
            if not (np.maximum(self.lowest(s_lo, s_hi), off)[busy] + t[busy] > sh.cap).any() \
                    and self.dfs_buffers(cand, off, int(rank[i])):
                return True
            self.rollback(mark)
        return False

    def dfs(self, members: np.ndarray) -> bool:
        self.count()
        cand = members[self.unplaced[members]]
        if len(cand) == 0:
            return True
        split = self.by_parts(cand, self.dfs)
        if split is not None:
            return split
        key = (self.unplaced.tobytes(), self.floor.tobytes(), self.min_off.tobytes())
        if key in self.failed:
            return False
        choice = self.branch_point(cand)
        if choice is not None:
            s, level, can_waste, options = choice
            shapes = set()
            sh = self.sh
            for i, off in options:  # stable sort: rank order within each class
                shape = (sh.lo[i], sh.hi[i], sh.size[i], sh.align[i])
                if shape in shapes:
                    continue  # equal buffers are interchangeable
                shapes.add(shape)
                if off + sh.size[i] > sh.cap:
                    continue
                mark = len(self.log)
                self.place(i, off)
                if self.dfs(cand):
                    return True
                self.rollback(mark)
            if can_waste:
                mark = len(self.log)
                self.raise_floor(s, level)
                if self.dfs(cand):
                    return True
                self.rollback(mark)
        self.failed.add(key)
        return False

    def branch_point(self, cand: np.ndarray) -> tuple[int, int, bool, list[tuple[int, int]]] | None:
        """(section, waste level, may waste, placements to try in order), or None when a
        section bound shows that `cand` cannot fit.

        Every later buffer goes at or above f, the lowest skyline. Of the sections at f,
        branch on the one with the fewest ways to fill its lowest free byte: a buffer live
        there that fits exactly at f, or leaving that byte empty."""
        sh = self.sh
        lo, hi, size, align, cap = sh.lo, sh.hi, sh.size, sh.align, sh.cap
        pair_sec, pair_buf, _, _, buf_sec, buf_start = sh.sections
        s_lo, s_hi = int(lo[cand].min()), int(hi[cand].max())
        eff = self.lowest(s_lo, s_hi)
        t = self.total[s_lo:s_hi]
        busy = t > 0
        # Section bound: what is still to be placed in a section stacks above its skyline.
        if (eff[busy] + t[busy] > cap).any():
            return None
        f = int(eff[busy].min())
        smallest = int(size[cand].min())
        # The lowest spot each buffer can take: above every placed buffer and raised skyline
        # (only raised sections can lie above min_off).
        pos = np.maximum(self.min_off, f)
        if self.raised:
            pos = np.maximum(pos, np.maximum.reduceat(self.floor[buf_sec], buf_start))
        pos += -pos % align
        at_f = np.zeros(sh.nsec, dtype=bool)
        at_f[s_lo:s_hi] = busy & (eff == f)
        live = at_f[pair_sec] & self.unplaced[pair_buf]  # (section at f, unplaced buffer) pairs
        ps, pp = pair_sec[live], pos[pair_buf[live]]
        fits = pp - f < align[pair_buf[live]]
        heads = np.flatnonzero(np.r_[True, ps[1:] != ps[:-1]])
        n_fit = np.add.reduceat(fits.astype(np.int64), heads)
        # Or byte f of s stays empty. In a pushed-down placement a buffer rests on a top:
        # one of the skyline values above f in its sections, or an unplaced buffer's top
        # (at least f plus the smallest unplaced size). Jump to the lowest such level.
        # (A fitting buffer's sections all have skyline <= f, so for those only the
        # unplaced tops count.)
        levels = np.minimum.reduceat(np.where(fits, cap, pp), heads)
        levels = np.where(n_fit > 0, np.minimum(levels, f + smallest), levels)
        wastes = levels + self.total[ps[heads]] <= cap
        ways = n_fit + wastes
        if self.sweep:  # the first section in time with at most one way, else the fewest early on
            ways = ways[:64]
            low = np.flatnonzero(ways <= 1)
            k = int(low[0]) if len(low) else int(np.argmin(ways))
        else:  # the fewest ways anywhere
            k = int(np.argmin(ways))
        if ways[k] == 0:
            return None
        s, level, can_waste = int(ps[heads[k]]), int(levels[k]), bool(wastes[k])
        options = [(i, int(pos[i])) for i in self.cover[s] if self.unplaced[i] and pos[i] - f < align[i]]
        # Value order: a buffer that exactly spans the run of sections at f around s first,
        # then one that starts where the run starts, then one that ends where it ends, then
        # the longest, then by rank.
        run_lo, run_hi = s, s + 1
        while run_lo > s_lo and at_f[run_lo - 1]:
            run_lo -= 1
        while run_hi < s_hi and at_f[run_hi]:
            run_hi += 1
        longest = self.longest
        options.sort(key=lambda o: (not (lo[o[0]] == run_lo and hi[o[0]] == run_hi),
                                    lo[o[0]] != run_lo, hi[o[0]] != run_hi,
                                    -(hi[o[0]] - lo[o[0]]) if longest else 0))
        return s, level, can_waste, options

