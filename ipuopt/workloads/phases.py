"""Exchange phases implied by a workload, its GEMM layouts and a spec.

Walks the operators in order, keeping for every tensor its layout (which tile
holds which box, at which address). A GEMM needs its A blocks multicast along
the grid's columns and its B blocks along the rows (weights are stored once, on
row 0 of the grid, and broadcast); these needs are routed from the current
layouts (phase `<op>-input` when reading a graph input, `<op>-redistribution`
otherwise). With P > 1 partials, phase `<op>-reduction` sends every partial
piece to its owner. Elementwise operators run in place on their input layout.

Addresses come from an SPMD first-fit allocator (one offset per buffer on all
tiles, 8-byte aligned): every operator allocates its A, B, partial, receive
and output buffers; operator temporaries are freed when it ends, a tensor's
buffer when its last consumer ends. Each intersection box moves as the fragments
`grain` asks for (`workloads.fragments`): contiguous runs with their true addresses by
default, cut at a grain, or (`"box"`) whole, addressed at its first element.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ipuopt.errors import InputError
from ipuopt.exchange.bounds import endpoint_bound
from ipuopt.exchange.phase import Phase, Transfer
from ipuopt.exchange.timing import payload_cycles, phase_timings
from ipuopt.spec import Spec
from ipuopt.workloads.boxes import Box, View, split, volume
from ipuopt.workloads.fragments import Grain, fragments
from ipuopt.workloads.gemm import (
    PARTIAL_BYTES,
    Candidate,
    GemmLayout,
    activation_region,
    default_layout,
    price,
)
from ipuopt.workloads.workload import Operator, Workload


@dataclass(frozen=True)
class Piece:
    tile: int
    box: Box   # stored coordinates of the tensor
    addr: int  # byte address of the buffer that holds `box` row-major


@dataclass(frozen=True)
class Need:
    tiles: tuple[int, ...]
    box: Box
    addr: int


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


class SpmdAllocator:
    """First-fit SPMD allocation per region: one offset serves every tile."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.regions = {r.name: r for r in spec.regions}
        self.live: dict[str, list[tuple[int, int, str]]] = {r: [] for r in self.regions}
        self.log: list[dict] = []

    def alloc(self, region: str, size: int, tag: str, step: int) -> int:
        # rounded up, plus one alignment unit of slack for word rounding
        size = self.spec.aligned(max(size, 1)) + self.spec.exchange.paired_alignment
        reg = self.regions[region]
        at = 0
        for off, sz, _ in sorted(self.live[region]):
            if at + size <= off:
                break
            at = max(at, off + sz)
        if at + size > reg.size:
            used = sum(sz for _, sz, _ in self.live[region])
            raise InputError.one("", "layout", f"buffer {tag} ({size} B) does not fit region "
                                               f"{region} ({reg.size} B, {used} B live)")
        self.live[region].append((at, size, tag))
        self.log.append({"id": tag, "region": region, "offset": at, "size": size,
                         "first": step, "end": None})
        return reg.start + at

    def free(self, tag: str, step: int) -> None:
        for region, items in self.live.items():
            self.live[region] = [x for x in items if x[2] != tag]
        for entry in self.log:
            if entry["id"] == tag and entry["end"] is None:
                entry["end"] = step


class _Router:
    """Routes needs from a layout's pieces: one multicast per (piece, need) overlap and
    fragment of it (every destination of a need receives the same bytes at one address)."""

    def __init__(self, wl: Workload, spec: Spec, name: str, grain: Grain = None) -> None:
        self.wl, self.spec, self.grain = wl, spec, grain
        self.transfers: list[Transfer] = []
        self.deliveries: list[Delivery] = []
        self.name = name

    def route(self, tensor: str, pieces: list[Piece], needs: list[Need], elem: int) -> None:
        if not pieces or not needs:
            return
        lo = np.array([[b[0] for b in p.box] for p in pieces])
        hi = np.array([[b[1] for b in p.box] for p in pieces])
        near = _PieceIndex(lo, hi)
        wb = self.spec.exchange.word_bytes
        fan = self.spec.exchange.max_fanout
        for need in needs:
            nlo = np.array([b[0] for b in need.box])
            nhi = np.array([b[1] for b in need.box])
            some = near(nlo, nhi)
            ilo, ihi = np.maximum(lo[some], nlo), np.minimum(hi[some], nhi)
            hit = np.all(ilo < ihi, axis=1)
            for i, box_lo, box_hi in zip(some[hit], ilo[hit], ihi[hit], strict=True):
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
                    self.deliveries.append(Delivery(tuple(ids), tensor, box, piece.tile, chunk, sizes))  # type: ignore[arg-type]


class _PieceIndex:
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


def _grid_tile(lay: GemmLayout, g: int, r: int, c: int, p: int) -> int:
    return ((g * lay.parts + p) * lay.rows + r) * lay.cols + c


def _stored(view: View, wl: Workload, box: Box) -> list[Box]:
    return view.to_stored(box, wl.tensors[view.tensor].shape)


def default_input_layout(wl: Workload, spec: Spec, tensor: str, alloc: SpmdAllocator,
                          step: int) -> list[Piece]:
    """Graph inputs arrive split by rows over the first tiles (batch and columns whole)."""
    b, rows, cols = wl.tensors[tensor].shape
    parts = split(rows, min(rows, spec.tiles))
    biggest = max(hi - lo for lo, hi in parts) * b * cols * wl.elem_bytes
    addr = alloc.alloc(activation_region(spec), biggest, tensor, step)
    return [Piece(t, ((0, b), rr, (0, cols)), addr) for t, rr in enumerate(parts)]


def generate(wl: Workload, spec: Spec, chosen: dict[str, GemmLayout] | None = None,
             grain: Grain = None) -> Generation:
    """Every exchange phase of the workload with the chosen (or default) GEMM layouts, its
    boxes moved as `grain` says (`workloads.fragments`)."""
    chosen = dict(chosen or {})
    unknown = set(chosen) - {o.name for o in wl.operators if o.kind == "gemm"}
    if unknown:
        raise InputError.one("", "--layout", f"no GEMM named {sorted(unknown)[0]!r} in {wl.name}")
    layouts: dict[str, Candidate] = {}
    for op in wl.operators:
        if op.kind != "gemm":
            continue
        if op.name in chosen:
            cand = price(wl, op, chosen[op.name], spec)
            if cand is None:
                raise InputError.one("", "--layout", f"{op.name}={chosen[op.name].label} is not "
                                                     f"valid on {spec.name} (grid or memory)")
        else:
            cand = default_layout(wl, op, spec)
        layouts[op.name] = cand
    gen = Generation(wl, spec, layouts, grain)
    alloc = SpmdAllocator(spec)
    held: dict[str, list[Piece]] = {}
    remaining = {t: len(ops) for t, ops in wl.consumers.items()}
    for step, op in enumerate(wl.operators):
        if op.kind == "elementwise":
            src = op.inputs[0].tensor
            old = held[src]
            gen.compute.append(Compute.of_bytes(
                op.name, len(gen.phases), [(p.tile, volume(p.box) * wl.elem_bytes) for p in old],
                spec.compute["elementwise_bytes_per_cycle"]))
            new_base = alloc.alloc(activation_region(spec),
                                   layout_bytes(old, wl.elem_bytes), op.out.tensor, step)
            base = min(p.addr for p in old)
            held[op.out.tensor] = [Piece(p.tile, p.box, new_base + p.addr - base) for p in old]
        else:
            gemm_phases(gen, op, layouts[op.name], held, alloc, step)
        for v in op.inputs:
            remaining[v.tensor] -= 1
            if remaining[v.tensor] == 0:
                alloc.free(v.tensor, step + 1)
    for entry in alloc.log:  # still live at the end: live to the last step
        if entry["end"] is None:
            entry["end"] = len(wl.operators)
    gen.buffers = alloc.log
    return gen


def layout_bytes(pieces: list[Piece], elem: int) -> int:
    base = min(p.addr for p in pieces)
    return max(p.addr - base + volume(p.box) * elem for p in pieces)


def _splits(wl: Workload, op: Operator, cand: Candidate):
    """The batch, M, K and N ranges of the candidate's groups, grid rows, partials, columns."""
    batch, m, k, n = wl.gemm_dims(op)
    lay = cand.layout
    bsplit = [(g * cand.batches_per_group, min(batch, (g + 1) * cand.batches_per_group))
              for g in range(cand.groups)]
    return bsplit, split(m, lay.rows), split(k, lay.parts), split(n, lay.cols)


def operand_needs(wl: Workload, op: Operator, cand: Candidate, which: int, addr: int) -> list[Need]:
    """What the grid needs of operand `which` (0: A, each block multicast along a row of the
    grid's columns; 1: B, along a column's rows), received at `addr`."""
    bsplit, msplit, ksplit, nsplit = _splits(wl, op, cand)
    lay, view = cand.layout, op.inputs[which]
    out: list[Need] = []
    for g, bl in enumerate(bsplit):
        if which == 0:
            for r, rr in enumerate(msplit):
                for p, kk in enumerate(ksplit):
                    tiles = tuple(_grid_tile(lay, g, r, c, p) for c in range(lay.cols))
                    _add_needs(out, wl, view, (bl, rr, kk), tiles, addr, wl.elem_bytes)
        else:
            for p, kk in enumerate(ksplit):
                for c, cc in enumerate(nsplit):
                    tiles = tuple(_grid_tile(lay, g, r, c, p) for r in range(lay.rows))
                    _add_needs(out, wl, view, (bl, kk, cc), tiles, addr, wl.elem_bytes)
    return out


def weight_home(wl: Workload, op: Operator, cand: Candidate, addr: int) -> list[Piece]:
    """A weight B is stored once, on row 0 of the grid, and broadcast to the other rows."""
    bsplit, _, ksplit, nsplit = _splits(wl, op, cand)
    home: list[Piece] = []
    for g, bl in enumerate(bsplit):
        for p, kk in enumerate(ksplit):
            for c, cc in enumerate(nsplit):
                off = addr
                for sb in _stored(op.inputs[1], wl, (bl, kk, cc)):
                    home.append(Piece(_grid_tile(cand.layout, g, 0, c, p), sb, off))
                    off += volume(sb) * wl.elem_bytes
    return home


def _owned(lay: GemmLayout, block: Box):
    """(owner partial, piece box) of a block's pieces: P partials reduce piece (i, j) of the
    block on partial i * sub_b + j (with one partial, the block itself on partial 0)."""
    bl, rr, cc = block
    if lay.parts == 1:
        yield 0, block
        return
    for i, ra in enumerate(split(rr[1] - rr[0], lay.sub_a)):
        for j, cb in enumerate(split(cc[1] - cc[0], lay.sub_b)):
            yield i * lay.sub_b + j, (bl, (rr[0] + ra[0], rr[0] + ra[1]), (cc[0] + cb[0], cc[0] + cb[1]))


def output_pieces(wl: Workload, op: Operator, cand: Candidate, addr: int) -> list[Piece]:
    """Where the GEMM leaves its output (each piece's boxes from `addr` on its owner)."""
    bsplit, msplit, _, nsplit = _splits(wl, op, cand)
    lay = cand.layout
    out: list[Piece] = []
    for g, bl in enumerate(bsplit):
        for r, rr in enumerate(msplit):
            for c, cc in enumerate(nsplit):
                for owner, pbox in _owned(lay, (bl, rr, cc)):
                    off = addr
                    for sb in _stored(op.out, wl, pbox):
                        out.append(Piece(_grid_tile(lay, g, r, c, owner), sb, off))
                        off += volume(sb) * wl.elem_bytes
    return out


def reduction_routes(wl: Workload, op: Operator, cand: Candidate, part_addr: int, recv_addr: int,
                     slot: int) -> tuple[list[Piece], list[Need]]:
    """The partial blocks (one per partial, stored owner piece by owner piece so that each
    piece a partial sends is contiguous) and what each owner receives of the others'."""
    bsplit, msplit, _, nsplit = _splits(wl, op, cand)
    lay = cand.layout
    pieces: list[Piece] = []
    needs: list[Need] = []
    for g, bl in enumerate(bsplit):
        for r, rr in enumerate(msplit):
            for c, cc in enumerate(nsplit):
                owned = list(_owned(lay, (bl, rr, cc)))
                for p in range(lay.parts):
                    off = part_addr
                    for _, pbox in owned:
                        pieces.append(Piece(_grid_tile(lay, g, r, c, p), _tagged(pbox, p), off))
                        off += volume(pbox) * PARTIAL_BYTES
                for owner, pbox in owned:
                    owner_tile = _grid_tile(lay, g, r, c, owner)
                    for q, p in enumerate(x for x in range(lay.parts) if x != owner):
                        needs.append(Need((owner_tile,), _tagged(pbox, p), recv_addr + q * slot))
    return pieces, needs


def gemm_phases(gen: Generation, op: Operator, cand: Candidate, held: dict[str, list[Piece]],
          alloc: SpmdAllocator, step: int) -> None:
    wl, spec = gen.workload, gen.spec
    lay = cand.layout
    e = wl.elem_bytes
    act = activation_region(spec)
    bsplit, msplit, ksplit, nsplit = _splits(wl, op, cand)
    mb, kb, nb = (max(hi - lo for lo, hi in s) for s in (msplit, ksplit, nsplit))
    bb = cand.batches_per_group
    tag = op.name
    a_addr = alloc.alloc(act, bb * mb * kb * e, f"{tag}.a", step)
    b_addr = alloc.alloc(lay.weight_region, bb * kb * nb * e, f"{tag}.b", step)
    a_view, b_view = op.inputs
    reading_input = any(wl.tensors[v.tensor].input for v in op.inputs)
    kind = "input" if reading_input else "redistribution"
    router = _Router(wl, spec, f"{op.name}-{kind}", gen.grain)
    needs = {a_view.tensor: operand_needs(wl, op, cand, 0, a_addr)}
    needs.setdefault(b_view.tensor, []).extend(operand_needs(wl, op, cand, 1, b_addr))
    if wl.tensors[b_view.tensor].weight:
        held[b_view.tensor] = weight_home(wl, op, cand, b_addr)
    if a_view.tensor not in held:
        held[a_view.tensor] = default_input_layout(wl, spec, a_view.tensor, alloc, step)
    sources: dict[str, list[Piece]] = {}
    for v in (a_view, b_view):
        if v.tensor not in sources:
            sources[v.tensor] = held[v.tensor]
            router.route(v.tensor, held[v.tensor], needs[v.tensor], e)
    gen.phases.append(_finish(router, spec, needs, sources, step))
    macs = Compute(f"{op.name} (multiply)", len(gen.phases), {})
    rate = spec.compute[f"{wl.dtype}_macs_per_cycle"]
    for g, bl in enumerate(bsplit):
        for r, rr in enumerate(msplit):
            for p, kk in enumerate(ksplit):
                for c, cc in enumerate(nsplit):
                    work = (bl[1] - bl[0]) * (rr[1] - rr[0]) * (kk[1] - kk[0]) * (cc[1] - cc[0])
                    macs.cycles[_grid_tile(lay, g, r, c, p)] = math.ceil(work / rate)
    gen.compute.append(macs)
    # Partials, reduction and the output layout.
    p_bytes = PARTIAL_BYTES if lay.parts > 1 else e
    # with one partial the partial block is the result: its buffer is the output tensor's
    part_tag = f"{tag}.partial" if lay.parts > 1 else op.out.tensor
    part_addr = alloc.alloc(act, bb * mb * nb * p_bytes, part_tag, step)
    if lay.parts == 1:
        held[op.out.tensor] = output_pieces(wl, op, cand, part_addr)
    else:
        pa, pb = math.ceil(mb / lay.sub_a), math.ceil(nb / lay.sub_b)
        slot = spec.aligned(bb * pa * pb * PARTIAL_BYTES)
        recv_addr = alloc.alloc(act, (lay.parts - 1) * slot, f"{tag}.recv", step)
        out_addr = alloc.alloc(act, bb * pa * pb * e, op.out.tensor, step)
        partial_name = f"{op.name}.partial"
        partial_pieces, red_needs = reduction_routes(wl, op, cand, part_addr, recv_addr, slot)
        red = _Router(wl, spec, f"{op.name}-reduction", gen.grain)
        red.route(partial_name, partial_pieces, red_needs, PARTIAL_BYTES)
        gen.phases.append(_finish(red, spec, {partial_name: red_needs},
                                  {partial_name: partial_pieces}, step))
        # each partial received is added into its owner's piece
        gen.compute.append(Compute.of_bytes(
            f"{op.name} (reduce)", len(gen.phases),
            [(need.tiles[0], volume(need.box) * PARTIAL_BYTES) for need in red_needs],
            spec.compute["elementwise_bytes_per_cycle"]))
        alloc.free(f"{tag}.recv", step + 1)
        alloc.free(part_tag, step + 1)
        held[op.out.tensor] = output_pieces(wl, op, cand, out_addr)
    for t in (f"{tag}.a", f"{tag}.b"):
        alloc.free(t, step + 1)


def _tagged(box: Box, partial: int) -> Box:
    """Partial p's copy of a box: its batch range shifted by p * 10**6, so boxes of different
    partials never intersect while boxes stay three-dimensional."""
    (b0, b1), rr, cc = box
    return ((partial * 1_000_000 + b0, partial * 1_000_000 + b1), rr, cc)


def _add_needs(out: list[Need], wl: Workload, view: View, vbox: Box, tiles: tuple[int, ...],
               base: int, elem: int) -> None:
    off = base
    for sb in _stored(view, wl, vbox):
        out.append(Need(tiles, sb, off))
        off += volume(sb) * elem


def _finish(router: _Router, spec: Spec, needs: dict, sources: dict, step: int) -> GeneratedPhase:
    phase = Phase(spec_ref=spec.name, transfers=router.transfers, name=router.name)
    return GeneratedPhase(phase, router.deliveries, needs, sources, step)


def phase_stats(gp: GeneratedPhase, spec: Spec) -> dict:
    """Counts of a generated phase (a transfer is one send, received at each destination),
    its endpoint bound, and the same counts had every box moved whole (`box`)."""
    ts = gp.phase.transfers
    ex = spec.exchange
    fan = Counter(len(t.dst) for t in ts)
    bound = endpoint_bound(phase_timings(gp.phase, spec), spec).value if ts else 0
    receives = np.repeat([payload_cycles(t.words, ex.ordinary_words_per_cycle) for t in ts],
                         [len(t.dst) for t in ts])
    whole = [-(-sum(d.nbytes) // ex.word_bytes) for d in gp.deliveries]
    return {"phase": gp.phase.name, "transfers": len(ts), "receives": len(receives),
            "median_payload_cycles": float(np.median(receives)) if len(receives) else 0.0,
            "source_words": sum(t.words for t in ts),
            "delivered_words": sum(t.words * len(t.dst) for t in ts),
            "fanout": dict(sorted(fan.items())), "endpoint_bound": bound,
            "box": {"transfers": len(gp.deliveries),
                    "receives": sum(len(d.dst) for d in gp.deliveries),
                    "source_words": sum(whole),
                    "delivered_words": sum(w * len(d.dst)
                                           for w, d in zip(whole, gp.deliveries, strict=True))}}
