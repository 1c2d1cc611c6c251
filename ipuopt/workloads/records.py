"""The records a workload's generation produces: where a tensor's boxes are (`Piece`), what
a consumer needs (`Need`), which transfers carry a box (`Delivery`), the phases and the
compute steps between them (`Generation`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ipuopt.exchange.phase import Phase
from ipuopt.spec import Spec
from ipuopt.workloads.boxes import Box
from ipuopt.workloads.fragments import Grain
from ipuopt.workloads.gemm import Candidate
from ipuopt.workloads.workload import Workload


@dataclass(frozen=True)
class Piece:
    tile: int
    box: Box   # stored coordinates of the tensor
    addr: int  # byte address of the buffer that holds `box` row-major
    partial: int | None = None  # for partial sums: which partial's copy of the box


@dataclass(frozen=True)
class Need:
    tiles: tuple[int, ...]
    box: Box
    addr: int
    partial: int | None = None  # for partial sums: the partial it needs the box of


@dataclass(frozen=True)
class Delivery:
    """A box of a tensor (or of partial sums) moved from one tile to others, and the
    transfers (fragments, `nbytes` each) that carry it: for coverage checks and counts."""

    transfers: tuple[str, ...]
    tensor: str
    box: Box
    src: int
    dst: tuple[int, ...]
    nbytes: tuple[int, ...]
    partial: int | None = None


@dataclass
class GeneratedPhase:
    phase: Phase
    deliveries: list[Delivery]
    needs: dict[str, list[Need]]  # tensor -> what the consumer needs (for coverage checks)
    sources: dict[str, list[Piece]]  # tensor -> where it was before the phase
    step: int = 0  # the operator (program step) whose phase this is


@dataclass
class Generation:
    workload: Workload
    spec: Spec
    layouts: dict[str, Candidate]
    grain: Grain = None
    phases: list[GeneratedPhase] = field(default_factory=list)
    buffers: list[dict] = field(default_factory=list)  # SPMD buffers with live op ranges
    compute: list[Compute] = field(default_factory=list)  # in program order
    only: frozenset[str] | None = None  # the phases routed (None: every one; `generate`)
    check: Callable[[], None] | None = field(default=None, repr=False, compare=False)  # raises to stop


@dataclass
class Compute:
    """A compute step between exchange phases: cycles per tile (tiles not named are idle)."""

    label: str
    before_phase: int  # index of the exchange phase that follows it (len(phases): none)
    cycles: dict[int, int]

    @classmethod
    def of_bytes(cls, label: str, before_phase: int, work: list[tuple[int, int]], rate: int) -> Compute:
        """From (tile, bytes) items at `rate` bytes per cycle, rounded up once per tile."""
        per_tile: dict[int, int] = {}
        for tile, nbytes in work:
            per_tile[tile] = per_tile.get(tile, 0) + nbytes
        return cls(label, before_phase, {t: math.ceil(b / rate) for t, b in per_tile.items()})


