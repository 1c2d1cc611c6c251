"""The row-pair argument of a GEMM's input phase with the producer's cells known, for many
(producer layout, candidate) pairs at once.

`pricing.row_pair_bound` prices one pair exactly (the A runs into a tile counted from the
producer's pieces) and `pricing.row_pair_floor` holds whatever the producer leaves (volume
only); on siglip-mlp's redistribution the first is 1.4x the second, and the program bound,
which can price only the pairs its best plans use, stalls on the many pairs in between.
Here the A work into tile x is floored by the producer's grid (`run_floors.lane_floors`:
each row of each overlap with a cell a run), so one producer layout is bounded against every
candidate, or one candidate against every producer layout, in a few numpy calls each. Never
above `row_pair_bound` (same pairs of tiles, fewer of them: group 0, some rows and partials).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ipuopt.layout.pricing import Held, PairWork, core_lead, home_pairs, phase_head, row_pairs_apply
from ipuopt.layout.run_floors import Probes, grid_of, lane_floors
from ipuopt.spec import Spec
from ipuopt.workloads.fragments import BOX, Grain
from ipuopt.workloads.gemm import Candidate
from ipuopt.workloads.geometry import grid_tile
from ipuopt.workloads.records import Need
from ipuopt.workloads.workload import Operator, Workload

ROWS = 4  # grid rows off the home row looked at per need label (any subset gives a floor)
PARTS = 8  # partials looked at on the first such row (their K slices cross the producer's cells
# differently: on siglip-mlp a partial's A block can come in twice the runs of partial 0's)


class RowPairFloors:
    """The floors of GEMM `op`'s input phase for its candidates `cands` (A's need label of
    each in `labels`, its boxes from `needs_of`) against producer layouts."""

    def __init__(self, wl: Workload, op: Operator, cands: list[Candidate], labels: list[str],
                 needs_of: Callable[[str], list[Need]], spec: Spec, grain: Grain,
                 check: Callable[[], None] = lambda: None) -> None:
        """`check` is called between need labels (it raises to stop)."""
        self.spec, self.elem, self.grain = spec, wl.elem_bytes, grain
        self.lead = core_lead(spec)
        self.asked: dict[tuple[int, ...], tuple[Probes, np.ndarray, np.ndarray, np.ndarray]] = {}
        slots: dict[str, list[tuple[int, int, int, int]]] = {}  # need label -> (x, y, home column, partial)
        lists: list[list[Need]] = []
        slot_label: list[int] = []
        slot_col: list[tuple[int, int]] = []  # (home column, partial)
        first: dict[str, int] = {}
        for c, label in zip(cands, labels, strict=True):
            if label in slots or grain == BOX or not row_pairs_apply(wl, op, c):
                continue
            check()
            slots[label] = _slots(spec, c)
            first[label] = len(slot_label)
            by_tile: dict[int, list[Need]] = {}
            wanted = {t for x, y, _, _ in slots[label] for t in (x, y)}
            for n in needs_of(label):
                for t in wanted.intersection(n.tiles):
                    by_tile.setdefault(t, []).append(Need((t,), n.box, n.addr, n.partial))
            slots[label] = [s for s in slots[label] if s[0] in by_tile and s[1] in by_tile]
            for x, y, col, p in slots[label]:
                lists.append(by_tile[x] + by_tile[y])
                slot_label.append(len(first) - 1)
                slot_col.append((col, p))
        self.probes = Probes.of([[] for _ in lists], lists)
        self.slotted = bool(lists)  # some candidate has tile pairs to look at
        # each slot's two lanes, x's then y's (both receive the row's A block)
        assert len(self.probes.lane_label) == 2 * len(lists)
        # per candidate: its slots and what the weights add on each (`pricing.row_pair_bound`)
        self.slots: list[np.ndarray] = []
        self.terms: list[np.ndarray] = []
        self.alike: list[int] = []  # candidates of one class have the same floors, whatever the producer
        memo: dict[tuple, np.ndarray] = {}
        classes: dict[tuple, int] = {}
        for c, label in zip(cands, labels, strict=True):
            key = (label, c.layout.cols, c.layout.parts, c.batches_per_group)
            self.alike.append(classes.setdefault(key if label in first else (), len(classes)))
            if label not in first:
                self.slots.append(np.zeros(0, dtype=np.int64))
                self.terms.append(np.zeros(0, dtype=np.int64))
                continue
            at = np.arange(first[label], first[label] + len(slots[label]))
            if key not in memo:
                work = PairWork(wl, op, c, spec, grain)
                memo[key] = np.array([-(-(work(0, p, col) + work(0, p, col + 1)) // 2)
                                      for col, p in (slot_col[k] for k in at.tolist())], dtype=np.int64)
            self.slots.append(at)
            self.terms.append(memo[key])

    def against(self, held: Held, which: list[int] | None = None) -> np.ndarray:
        """Per candidate (of `which`, default all): the floor of its input phase when A is
        where a producer layout leaves it, `held` (0 where the argument does not apply or the
        layout is no grid)."""
        which = list(range(len(self.slots))) if which is None else which
        out = np.zeros(len(which), dtype=np.int64)
        grid = grid_of(held, self.spec, self.elem, self.lead) if self.slotted else None
        if grid is None:
            return out
        probes, pos, terms, starts = self._asked(tuple(which))
        if not len(pos):
            return out
        work, own = lane_floors(grid, probes, self.spec, self.elem, self.grain)
        free = (own[0::2] == 0) & (own[1::2] == 0)  # neither x nor y holds any of the row's A block
        core = np.where(free, work[0::2], -1)[pos]
        value = np.where(core >= 0, core + terms, 0)
        has = np.diff(starts) > 0
        out[has] = np.maximum.reduceat(value, starts[:-1][has])
        return np.where(out > 0, out + phase_head(self.spec), 0)

    def _asked(self, which: tuple[int, ...]) -> tuple[Probes, np.ndarray, np.ndarray, np.ndarray]:
        """For candidates `which`: the probes of their slots alone, each slot's place in them,
        its weight term, and where each candidate's slots start (made once per `which`: a
        table asks the same candidates of thousands of producer layouts)."""
        if which not in self.asked:
            mine = [self.slots[i] for i in which]
            every = np.concatenate(mine) if mine else np.zeros(0, dtype=np.int64)
            labels = np.unique(every)
            probes = self.probes.subset(labels) if len(labels) < self.probes.labels else self.probes
            starts = np.concatenate([[0], np.cumsum([len(m) for m in mine])])
            terms = np.concatenate([self.terms[i] for i in which]) if mine else every
            self.asked = {which: (probes, np.searchsorted(labels, every), terms, starts)}  # the last one only
        return self.asked[which]


def _slots(spec: Spec, c: Candidate) -> list[tuple[int, int, int, int]]:
    """(x, y, home column, partial) of the tile pairs the argument looks at, in group 0: up to
    `ROWS` rows off the home row spread over partial 0's grid, three pairs of partner homes in
    each (where one holds some of the row's A block, another may not), and the first pair of
    the first row in up to `PARTS` other partials spread over the rest."""
    lay = c.layout
    rows = sorted(set(np.linspace(1, lay.rows - 1, min(ROWS, lay.rows - 1)).round().astype(int).tolist()))
    parts = sorted(set(np.linspace(1, lay.parts - 1, min(PARTS, lay.parts - 1)).round().astype(int).tolist()))
    out = []
    for p, rs in [(0, rows), *((p, rows[:1]) for p in parts)]:
        cols = home_pairs(spec, lay, 0, p)
        for r in rs:
            # the widest blocks first (`nth`), one more and the last; other partials the first
            for col in sorted({*cols[:2], *cols[-1:]}) if p == 0 else cols[:1]:
                x = grid_tile(lay, 0, r, col, p)
                out.append((x, x + 1, col, p))
    return out
