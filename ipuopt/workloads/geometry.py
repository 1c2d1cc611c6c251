"""Grid geometry, one public home for `gen` and layout pricing alike: which tile of a GEMM's
grid holds which block, what each operand's grid needs and where its output and partial sums
are, and where graph inputs arrive."""

from __future__ import annotations

import itertools

import numpy as np

from ipuopt.spec import Spec
from ipuopt.workloads.allocation import SpmdAllocator
from ipuopt.workloads.boxes import Box, View, split, volume
from ipuopt.workloads.gemm import PARTIAL_BYTES, Candidate, GemmLayout, activation_region
from ipuopt.workloads.records import Need, Piece
from ipuopt.workloads.workload import Operator, Workload


def grid_tile(lay: GemmLayout, g: int, r: int, c: int, p: int) -> int:
    return ((g * lay.parts + p) * lay.rows + r) * lay.cols + c


def stored(view: View, wl: Workload, box: Box) -> list[Box]:
    return view.to_stored(box, wl.tensors[view.tensor].shape)


def default_input_layout(wl: Workload, spec: Spec, tensor: str, alloc: SpmdAllocator,
                          step: int) -> list[Piece]:
    """Graph inputs arrive split by rows over the first tiles (batch and columns whole)."""
    b, rows, cols = wl.tensors[tensor].shape
    parts = split(rows, min(rows, spec.tiles))
    biggest = max(hi - lo for lo, hi in parts) * b * cols * wl.elem_bytes
    addr = alloc.alloc(activation_region(spec), biggest, tensor, step)
    return [Piece(t, ((0, b), rr, (0, cols)), addr) for t, rr in enumerate(parts)]


def layout_bytes(pieces: list[Piece], elem: int) -> int:
    base = min(p.addr for p in pieces)
    return max(p.addr - base + volume(p.box) * elem for p in pieces)


def splits(wl: Workload, op: Operator, cand: Candidate):
    """The batch, M, K and N ranges of the candidate's groups, grid rows, partials, columns."""
    batch, m, k, n = wl.gemm_dims(op)
    lay = cand.layout
    bsplit = [(g * cand.batches_per_group, min(batch, (g + 1) * cand.batches_per_group))
              for g in range(cand.groups)]
    return bsplit, split(m, lay.rows), split(k, lay.parts), split(n, lay.cols)


def operand_needs(wl: Workload, op: Operator, cand: Candidate, which: int, addr: int) -> list[Need]:
    """What the grid needs of operand `which` (0: A, each block multicast along a row of the
    grid's columns; 1: B, along a column's rows), received at `addr`."""
    bsplit, msplit, ksplit, nsplit = splits(wl, op, cand)
    lay, view = cand.layout, op.inputs[which]
    out: list[Need] = []
    for g, bl in enumerate(bsplit):
        if which == 0:
            for r, rr in enumerate(msplit):
                for p, kk in enumerate(ksplit):
                    tiles = tuple(grid_tile(lay, g, r, c, p) for c in range(lay.cols))
                    add_needs(out, wl, view, (bl, rr, kk), tiles, addr, wl.elem_bytes)
        else:
            for p, kk in enumerate(ksplit):
                for c, cc in enumerate(nsplit):
                    tiles = tuple(grid_tile(lay, g, r, c, p) for r in range(lay.rows))
                    add_needs(out, wl, view, (bl, kk, cc), tiles, addr, wl.elem_bytes)
    return out


def operand_shapes(wl: Workload, op: Operator, cand: Candidate, which: int) -> set[tuple[int, int]]:
    """The shapes (rows, the product of the first two dimensions; width) of the stored boxes
    `operand_needs` gives, without listing them: a block's stored boxes turn on its extents
    alone (a view box is cut per head unless it spans the head), and each dimension's near
    equal ranges have at most two."""
    bsplit, msplit, ksplit, nsplit = splits(wl, op, cand)
    view = op.inputs[which]
    shape = wl.tensors[view.tensor].shape
    out = set()
    for e0, e1, e2 in itertools.product(*({hi - lo for lo, hi in d} for d in (
            (bsplit, msplit, ksplit) if which == 0 else (bsplit, ksplit, nsplit)))):
        for (b0, b1), (r0, r1), (c0, c1) in view.to_stored(((0, e0), (0, e1), (0, e2)), shape):
            out.add(((b1 - b0) * (r1 - r0), c1 - c0))
    return out


def operand_home(needs: list[Need]) -> list[Piece]:
    """An operand (its `operand_needs`) stored once, each block on the first tile that needs
    it (B: row 0 of the grid, A: column 0), to be multicast to the others: where weights
    live, and where a prepared operand is moved first."""
    return [Piece(n.tiles[0], n.box, n.addr) for n in needs]


def home_needs(needs: list[Need]) -> list[Need]:
    """What a prepared operand's preparation phase delivers (of its `operand_needs`): each
    block to its home alone."""
    return [Need(n.tiles[:1], n.box, n.addr) for n in needs]


def homed(wl: Workload, op: Operator, which: int) -> bool:
    """Is operand `which` multicast from its homes (`operand_home`): a weight B (`gen` reads a
    weight A as it reads a graph input), or an operand the workload prepares."""
    view = op.inputs[which]
    return view.prepare or (which == 1 and wl.tensors[view.tensor].weight)


def owned_pieces(lay: GemmLayout, block: Box):
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
    bsplit, msplit, _, nsplit = splits(wl, op, cand)
    lay = cand.layout
    out: list[Piece] = []
    for g, bl in enumerate(bsplit):
        for r, rr in enumerate(msplit):
            for c, cc in enumerate(nsplit):
                for owner, pbox in owned_pieces(lay, (bl, rr, cc)):
                    off = addr
                    for sb in stored(op.out, wl, pbox):
                        out.append(Piece(grid_tile(lay, g, r, c, owner), sb, off))
                        off += volume(sb) * wl.elem_bytes
    return out


def reduction_routes(wl: Workload, op: Operator, cand: Candidate, part_addr: int, recv_addr: int,
                     slot: int) -> tuple[list[Piece], list[Need]]:
    """The partial blocks (one per partial, stored owner piece by owner piece so that each
    piece a partial sends is contiguous) and what each owner receives of the others'."""
    bsplit, msplit, _, nsplit = splits(wl, op, cand)
    lay = cand.layout
    pieces: list[Piece] = []
    needs: list[Need] = []
    for g, bl in enumerate(bsplit):
        for r, rr in enumerate(msplit):
            for c, cc in enumerate(nsplit):
                owned = list(owned_pieces(lay, (bl, rr, cc)))
                for p in range(lay.parts):
                    off = part_addr
                    for _, pbox in owned:
                        pieces.append(Piece(grid_tile(lay, g, r, c, p), pbox, off, partial=p))
                        off += volume(pbox) * PARTIAL_BYTES
                for owner, pbox in owned:
                    owner_tile = grid_tile(lay, g, r, c, owner)
                    for q, p in enumerate(x for x in range(lay.parts) if x != owner):
                        needs.append(Need((owner_tile,), pbox, recv_addr + q * slot, partial=p))
    return pieces, needs


def reduction_sends(wl: Workload, op: Operator, cand: Candidate
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(partial's tile, owner's tile, elements, element offset in the partial's block) of every
    piece a reduction sends, as `reduction_routes` routes them (empty pieces left out), in
    numpy: for pricing, which needs no boxes."""
    bsplit, msplit, _, nsplit = splits(wl, op, cand)
    lay = cand.layout
    parts, rows, cols = lay.parts, len(msplit), len(nsplit)

    def sizes(ranges: list[tuple[int, int]], sub: int) -> np.ndarray:  # (ranges, sub)
        n = np.array([max(0, hi - lo) for lo, hi in ranges], dtype=np.int64)[:, None]
        return n // sub + (np.arange(sub) < n % sub)

    batches = np.array([max(0, hi - lo) for lo, hi in bsplit], dtype=np.int64)
    # elements of piece (i, j) of block (g, r, c), owned by partial i * sub_b + j
    vol = (batches[:, None, None, None, None] * sizes(msplit, lay.sub_a)[None, :, None, :, None]
           * sizes(nsplit, lay.sub_b)[None, None, :, None, :]).reshape(len(bsplit), rows, cols, -1)
    g, r, c, owner, p = np.meshgrid(np.arange(len(bsplit)), np.arange(rows), np.arange(cols),
                                    np.arange(vol.shape[3]), np.arange(parts), indexing="ij")
    at = np.cumsum(vol, axis=3) - vol  # pieces stored owner by owner in each partial's block
    keep = (p != owner) & (vol[g, r, c, owner] > 0)
    g, r, c, owner, p = g[keep], r[keep], c[keep], owner[keep], p[keep]
    return grid_tile(lay, g, r, c, p), grid_tile(lay, g, r, c, owner), vol[g, r, c, owner], at[g, r, c, owner]


def add_needs(out: list[Need], wl: Workload, view: View, vbox: Box, tiles: tuple[int, ...],
               base: int, elem: int) -> None:
    off = base
    for sb in stored(view, wl, vbox):
        out.append(Need(tiles, sb, off))
        off += volume(sb) * elem


