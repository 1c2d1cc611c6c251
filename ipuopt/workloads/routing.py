"""Routing: the transfers that serve a layout's needs from the pieces where a tensor is, one
multicast per (piece, need) overlap and fragment of it."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from ipuopt.exchange.phase import Phase, Transfer
from ipuopt.spec import Spec
from ipuopt.workloads.fragments import Grain, fragments
from ipuopt.workloads.records import Delivery, GeneratedPhase, Need, Piece
from ipuopt.workloads.workload import Workload

SCAN_UP_TO = 64  # pieces checked against every need without an index (building it costs more)


class Router:
    """Routes needs from a layout's pieces: one multicast per (piece, need) overlap and
    fragment of it (every destination of a need receives the same bytes at one address)."""

    def __init__(self, wl: Workload, spec: Spec, name: str, grain: Grain = None, skip: bool = False,
                 check: Callable[[], None] | None = None) -> None:
        self.wl, self.spec, self.grain = wl, spec, grain
        self.skip = skip  # route nothing: a phase the caller does not need
        self.check = check  # called as each need is routed: raises to stop
        self.transfers: list[Transfer] = []
        self.deliveries: list[Delivery] = []
        self.name = name

    def route(self, tensor: str, pieces: list[Piece], needs: list[Need], elem: int) -> None:
        """Serve `needs` from `pieces`; a need of partial sums only from that partial's pieces
        (the partial is matched as one more coordinate, [p, p + 1))."""
        if self.skip or not pieces or not needs:
            return
        lo = np.array([[_part(p.partial), *(b[0] for b in p.box)] for p in pieces])
        hi = np.array([[_part(p.partial) + 1, *(b[1] for b in p.box)] for p in pieces])
        near = PieceIndex(lo, hi) if len(pieces) > SCAN_UP_TO else None
        every = np.arange(len(pieces))
        wb = self.spec.exchange.word_bytes
        fan = self.spec.exchange.max_fanout
        for need in needs:
            if self.check is not None:
                self.check()
            part = _part(need.partial)
            nlo = np.array([part, *(b[0] for b in need.box)])
            nhi = np.array([part + 1, *(b[1] for b in need.box)])
            some = every if near is None else near(nlo, nhi)
            ilo, ihi = np.maximum(lo[some], nlo), np.minimum(hi[some], nhi)
            hit = np.all(ilo < ihi, axis=1)
            for i, box_lo, box_hi in zip(some[hit], ilo[hit, 1:], ihi[hit, 1:], strict=True):
                piece = pieces[i]
                box = tuple((int(a), int(b)) for a, b in zip(box_lo, box_hi, strict=True))
                dst = tuple(t for t in need.tiles if t != piece.tile)
                if not dst:
                    continue
                src_off, dst_off, nbytes = fragments(box, piece.box, need.box, elem, self.grain)  # type: ignore[arg-type]
                sizes = tuple(int(n) for n in nbytes)
                for k in range(0, len(dst), fan):
                    chunk = dst[k:k + fan]
                    ids = []
                    for s_off, d_off, n in zip(src_off.tolist(), dst_off.tolist(), sizes, strict=True):
                        ids.append(f"{self.name}.{len(self.transfers)}")
                        self.transfers.append(Transfer(ids[-1], piece.tile, chunk, -(-n // wb),
                                                       piece.addr + s_off, need.addr + d_off))
                    self.deliveries.append(Delivery(tuple(ids), tensor, box, piece.tile, chunk,  # type: ignore[arg-type]
                                                    sizes, piece.partial))

    def phase(self, needs: dict[str, list[Need]], sources: dict[str, list[Piece]],
              step: int) -> GeneratedPhase:
        """The phase of everything routed so far."""
        phase = Phase(spec_ref=self.spec.name, transfers=self.transfers, name=self.name)
        return GeneratedPhase(phase, self.deliveries, needs, sources, step)


def _part(partial: int | None) -> int:
    return -1 if partial is None else partial


class PieceIndex:
    """Pieces by the cells of a coarse grid (a typical piece per cell) that their boxes touch,
    so that finding the pieces a need overlaps does not scan them all: phases of a few hundred
    thousand fragments come from tens of thousands of pieces and needs."""

    SPREAD = 64  # a piece touching more cells than this is checked against every need

    def __init__(self, lo: np.ndarray, hi: np.ndarray) -> None:
        self.cell = np.maximum(1, np.median(hi - lo, axis=0).astype(np.int64))
        self.count = len(lo)
        self.cells: dict[tuple[int, ...], list[int]] = {}
        wide: list[int] = []
        for i, keys in enumerate(self._keys(a, b) for a, b in zip(lo, hi, strict=True)):
            if keys is None:
                wide.append(i)
                continue
            for key in keys:
                self.cells.setdefault(key, []).append(i)
        self.wide = np.array(wide, dtype=np.int64)

    def _keys(self, lo: np.ndarray, hi: np.ndarray):
        first, last = lo // self.cell, (hi - 1) // self.cell
        if np.prod(last - first + 1) > self.SPREAD:
            return None
        return itertools.product(*(range(int(a), int(b) + 1) for a, b in zip(first, last, strict=True)))

    def __call__(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Indices of the pieces that may overlap box [lo, hi) (a superset, sorted)."""
        keys = self._keys(lo, hi)
        if keys is None:
            return np.arange(self.count)
        found = [i for key in keys for i in self.cells.get(key, ())]
        return np.unique(np.concatenate([np.array(found, dtype=np.int64), self.wide]))


