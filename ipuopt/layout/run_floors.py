"""Floors of moves between activation layouts that count the runs the producer's pieces cut.

The floor of a move that holds whatever the producer (`pricing.move_floor`) sees volume only,
and on the real chip a redistribution's price is mostly runs: every row of every (need, piece)
overlap is a transfer of its own, with its receive lead and its payload rounded up
(siglip-mlp: moves priced at 2-3x that floor). When the producer's pieces are the cells of a
grid, one per tile, what a tile receives of a box is a sum over the cells the box crosses that
needs only the grid's boundaries, so one producer layout is floored against every need label in
a few numpy calls (the layout build rules out most (layout, need) pairs so before probing and
pricing the rest, `Moves.rows`).

A box's floor counts each row of its overlap with a cell as one run (one run for the whole box
where rows may merge: its columns are one cell's), at ordinary width but for the rows that may
start aligned in both buffers (one in the larger of the two periods at most, per cell of the
rows' dimension) and the runs in the first and last cells (as if aligned), and leaves out what
the receiving tile holds itself (its own cell's part of the box when the tile is named; at most
the tallest cell's rows at the widest cell's cost when not). So it is never above the receive
lane `pricing.move_lanes` counts, and a move's load bound is at least the most any tile
receives plus the terms `Lanes.bounds` adds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ipuopt.layout.pricing import Held, fastest_of, regions_aligned, unpaired_of
from ipuopt.spec import Spec
from ipuopt.workloads.fragments import BOX, Grain, cuts_keep_alignment
from ipuopt.workloads.records import Need


@dataclass(frozen=True)
class Grid:
    """A producer layout whose pieces are the cells of a grid, one cell per tile at most."""

    bounds: tuple[np.ndarray, ...]  # per dimension, the sorted cell boundaries
    cell_of_tile: np.ndarray  # tile -> flat cell index (-1: holds none)
    # prefix sums over dimension 2's cells of a whole cell row's run cost at ordinary width, and
    # per period p of the rows whose runs may start aligned, what pairing saves a run of a cell
    # of that period (a row at cell offset i starts at i * the cell's row bytes)
    ordinary: np.ndarray
    saved: dict[int, np.ndarray]
    lead: int  # a run's cycles besides its payload (`grid_of`)


@dataclass(frozen=True)
class Probes:
    """The boxes many need labels need, each distinct box once (box j is [lo[j], hi[j])), and
    entries: (label, box) pairs, each label's boxes priced for whichever tile needs them, and
    (label, tile, box) triples of its probe tiles (each tile's own cell known, its boxes on
    one lane). Both sorted by label, `starts` and `named_starts` say where each label's begin."""

    lo: np.ndarray
    hi: np.ndarray
    box: np.ndarray  # of each (label, box) entry
    lane: np.ndarray  # of each (label, tile, box) entry: its (label, tile) lane, its box, its tile
    lane_box: np.ndarray
    lane_tile: np.ndarray
    lane_label: np.ndarray  # of each lane: its label
    labels: int
    starts: np.ndarray
    named_starts: np.ndarray

    @classmethod
    def of(cls, needs: list[list[Need]], probes: list[list[Need]]) -> Probes:
        """Every box of each label's `needs`, and each tile of its `probes` (a few receiving
        tiles: `Moves.probe_needs`) with its boxes."""
        index: dict[tuple, int] = {}
        pairs = sorted({(k, index.setdefault(n.box, len(index))) for k, ns in enumerate(needs) for n in ns})
        named = sorted({(k, t, index.setdefault(n.box, len(index))) for k, ns in enumerate(probes)
                        for n in ns for t in n.tiles})
        lanes = sorted({(k, t) for k, t, _ in named})
        at = {kt: i for i, kt in enumerate(lanes)}
        lo = np.array([[d[0] for d in b] for b in index], dtype=np.int64).reshape(-1, 3)
        hi = np.array([[d[1] for d in b] for b in index], dtype=np.int64).reshape(-1, 3)
        a = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        n = np.array(named, dtype=np.int64).reshape(-1, 3)
        every = np.arange(len(needs) + 1)
        return cls(lo, hi, a[:, 1], np.array([at[(k, t)] for k, t, _ in named], dtype=np.int64),
                   n[:, 2], n[:, 1], np.array([k for k, _ in lanes], dtype=np.int64), len(needs),
                   np.searchsorted(a[:, 0], every), np.searchsorted(n[:, 0], every))

    def subset(self, labels: np.ndarray) -> Probes:
        """The same for need labels `labels` alone (in their order, with their boxes alone)."""
        keep, new = _ranges(self.starts, labels)
        named, new_named = _ranges(self.named_starts, labels)
        lanes, lane = np.unique(self.lane[named], return_inverse=True)
        used, box = np.unique(np.concatenate([self.box[keep], self.lane_box[named]]), return_inverse=True)
        pick = np.zeros(self.labels, dtype=np.int64)
        pick[labels] = np.arange(len(labels))
        every = np.arange(len(labels) + 1)
        return Probes(self.lo[used], self.hi[used], box[:len(keep)], lane, box[len(keep):],
                      self.lane_tile[named], pick[self.lane_label[lanes]], len(labels),
                      np.searchsorted(new, every), np.searchsorted(new_named, every))


def _ranges(starts: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The entries of `labels` (each label's [starts[k], starts[k + 1])) and the position of
    each one's label in `labels`."""
    first, size = starts[labels], starts[labels + 1] - starts[labels]
    owner = np.repeat(np.arange(len(labels)), size)
    offset = np.arange(int(size.sum())) - np.repeat(np.cumsum(size) - size, size)
    return first[owner] + offset, owner


def _run_cost(elems: np.ndarray, elem: int, spec: Spec, lead: int, paired: bool = True) -> np.ndarray:
    """Receive cycles of one run of `elems` elements at the fastest width, or at ordinary
    width (0 for none)."""
    words = -(-elems * elem // spec.exchange.word_bytes)
    payload = (fastest_of if paired else unpaired_of)(words, spec)
    return np.where(elems > 0, lead + payload, 0)


def grid_of(held: Held, spec: Spec, elem: int, lead: int | None = None) -> Grid | None:
    """`held` as a grid (None when its pieces are not the cells of one, or a tile holds two).
    `lead`: what a run costs besides its payload (the receive lead unless given)."""
    bounds = tuple(np.unique(np.concatenate([held.lo[:, d], held.hi[:, d]])) for d in range(3))
    shape = tuple(len(b) - 1 for b in bounds)
    if not len(held.tiles) or int(np.prod(shape)) != len(held.tiles):
        return None
    first = [np.searchsorted(b, held.lo[:, d]) for d, b in enumerate(bounds)]
    last = [np.searchsorted(b, held.hi[:, d]) for d, b in enumerate(bounds)]
    if any((hi - lo != 1).any() for lo, hi in zip(first, last, strict=True)):
        return None  # a piece spans cells: its rows' runs are not the cells'
    flat = np.ravel_multi_index(first, shape)
    if len(np.unique(flat)) != len(flat) or len(np.unique(held.tiles)) != len(held.tiles):
        return None
    cell_of_tile = np.full(spec.tiles, -1, dtype=np.int64)
    cell_of_tile[held.tiles] = flat
    width = np.diff(bounds[2])
    lead = spec.exchange.rx_lead if lead is None else lead
    fast, slow = _run_cost(width, elem, spec, lead), _run_cost(width, elem, spec, lead, paired=False)
    align = spec.exchange.paired_alignment
    if (held.addr % align).any() or not regions_aligned(spec):
        period = np.ones_like(width)  # offsets say nothing: every run may be paired
    else:
        period = align // np.gcd(width * elem, align)
    saved = {int(p): np.concatenate([[0], np.cumsum(np.where(period == p, slow - fast, 0))])
             for p in np.unique(period)}
    return Grid(bounds, cell_of_tile, np.concatenate([[0], np.cumsum(slow)]), saved, lead)


def receive_floors(grid: Grid, probes: Probes, spec: Spec, elem: int, grain: Grain) -> np.ndarray:
    """Per need label of `probes`: a floor of the load bound of the move from `grid` into
    those needs (0 where nothing is received, or at `grain` BOX, where a whole overlap is one
    transfer and rows are not runs): the most a named tile receives of its boxes, or any tile
    of one box."""
    out = np.zeros(probes.labels, dtype=np.int64)
    if grain == BOX or not len(probes.box):
        return out
    boxes = _Boxes.of(grid, probes, spec, elem, grain)
    lo, hi = probes.lo, probes.hi
    # whichever tile needs a box holds one cell at most: at most the tallest cell's rows of it
    # at the widest cell's run cost are not received
    tall = [int(np.diff(b).max()) for b in grid.bounds[:2]]
    some = np.minimum(hi[:, 0] - lo[:, 0], tall[0]) * np.minimum(hi[:, 1] - lo[:, 1], tall[1])
    widest = int(np.diff(grid.bounds[2]).max())
    less = some * int(_run_cost(np.array([widest]), elem, spec, grid.lead, paired=False)[0])
    anywhere = boxes.value(boxes.work - less, boxes.volume - some * np.minimum(hi[:, 2] - lo[:, 2], widest))
    has = np.diff(probes.starts) > 0  # each label's entries begin at its start
    out[has] = np.maximum.reduceat(anywhere[probes.box], probes.starts[:-1][has])
    if len(probes.lane_box):
        np.maximum.at(out, probes.lane_label, boxes.lanes()[0])
    ex = spec.exchange
    return np.where(out > 0, out + ex.tx_overhead + spec.latency(0, 1) - ex.rx_lead, 0)


def lane_floors(grid: Grid, probes: Probes, spec: Spec, elem: int, grain: Grain
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per (label, tile) lane of `probes`: a floor of that tile's receive work of its boxes
    (each run at the grid's lead plus its payload, 0 at `grain` BOX), and how many of their
    elements the tile holds itself."""
    if grain == BOX or not len(probes.lane_box):
        empty = np.zeros(len(probes.lane_label), dtype=np.int64)
        return empty, empty.copy()
    return _Boxes.of(grid, probes, spec, elem, grain).lanes()


@dataclass(frozen=True)
class _Boxes:
    """The receive work of each distinct box of `probes` from `grid`, whoever receives it."""

    grid: Grid
    probes: Probes
    spec: Spec
    elem: int
    work: np.ndarray  # every row of every overlap a run
    merged: np.ndarray  # rows may merge: one run, best case
    volume: np.ndarray
    inside: np.ndarray

    @classmethod
    def of(cls, grid: Grid, probes: Probes, spec: Spec, elem: int, grain: Grain) -> _Boxes:
        _, b1, b2 = grid.bounds
        lo, hi = probes.lo, probes.hi
        s = np.searchsorted(b2, lo[:, 2], "right") - 1  # the cells holding the box's first and last column
        e = np.searchsorted(b2, hi[:, 2], "left") - 1
        single = s == e
        after = b2[np.minimum(s + 1, len(b2) - 1)]
        rows = (hi[:, 0] - lo[:, 0]) * (hi[:, 1] - lo[:, 1])
        # the first and last cells' runs start inside them: counted as if all aligned
        edge = _run_cost(np.where(single, hi[:, 2] - lo[:, 2], after - lo[:, 2]), elem, spec, grid.lead)
        edge = edge + np.where(single, 0, _run_cost(hi[:, 2] - b2[e], elem, spec, grid.lead))
        work = rows * edge
        # whole cells between: each row a run at ordinary width, less what pairing saves on the
        # rows that may start aligned: within one cell of dimension 1, one row in `period` at most
        inner = np.minimum(s + 1, e)
        work = work + rows * (grid.ordinary[e] - grid.ordinary[inner])
        cells1 = np.searchsorted(b1, hi[:, 1], "left") - np.searchsorted(b1, lo[:, 1], "right") + 1
        align = spec.exchange.paired_alignment
        if grain is None or cuts_keep_alignment(grain, align):
            # a run must start aligned in the receiver's buffer too (its rows are the box's width
            # apart): with both periods powers of two, at most one row in the larger period does
            dst = align // np.gcd((hi[:, 2] - lo[:, 2]) * elem, align) if regions_aligned(spec) else 1
            for p, saved in grid.saved.items():
                period = np.maximum(p, dst)
                aligned = np.minimum(rows, (hi[:, 0] - lo[:, 0]) * ((hi[:, 1] - lo[:, 1]) // period + cells1))
                work = work - aligned * (saved[e] - saved[inner])
        else:  # cut at a grain that is not a multiple of the alignment: any fragment may be paired
            work = work - rows * sum(saved[e] - saved[inner] for saved in grid.saved.values())
        merged = single & (lo[:, 2] == b2[s]) & (hi[:, 2] == after)
        inside = np.all([(lo[:, d] >= b[0]) & (hi[:, d] <= b[-1]) for d, b in enumerate(grid.bounds)], axis=0)
        inside &= s >= 0
        return cls(grid, probes, spec, elem, work, merged, rows * (hi[:, 2] - lo[:, 2]), inside)

    def value(self, work: np.ndarray, left: np.ndarray, j: slice | np.ndarray = slice(None)) -> np.ndarray:
        """Boxes `j`'s receive floor: `work`, or one run of the `left` elements where rows
        merge; nothing outside the grid."""
        run = _run_cost(np.maximum(left, 0), self.elem, self.spec, self.grid.lead)
        return np.where(self.inside[j], np.maximum(np.where(self.merged[j], run, work), 0), 0)

    def lanes(self) -> tuple[np.ndarray, np.ndarray]:
        """`lane_floors`: each named tile's own cell known, all its boxes on its one lane."""
        grid, probes = self.grid, self.probes
        j, tile, hi, lo = probes.lane_box, probes.lane_tile, probes.hi, probes.lo
        own = np.zeros((len(j), 3), dtype=np.int64)
        cell = grid.cell_of_tile[tile]
        idx = np.unravel_index(np.maximum(cell, 0), tuple(len(b) - 1 for b in grid.bounds))
        for d, b in enumerate(grid.bounds):
            top, bottom = np.minimum(b[idx[d] + 1], hi[j, d]), np.maximum(b[idx[d]], lo[j, d])
            own[:, d] = np.clip(top - bottom, 0, None)
        own[cell < 0] = 0
        own_rows = own[:, 0] * own[:, 1]
        held = own_rows * own[:, 2]
        mine = self.value(self.work[j] - own_rows * _run_cost(own[:, 2], self.elem, self.spec, grid.lead,
                                                               paired=False), self.volume[j] - held, j)
        n = len(probes.lane_label)
        return (np.bincount(probes.lane, weights=mine, minlength=n).astype(np.int64),
                np.bincount(probes.lane, weights=held, minlength=n).astype(np.int64))
