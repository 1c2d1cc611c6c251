"""GEMM layouts on a tile grid: parse, price (compute, memory) and enumerate candidates.

A layout `RxCxP/AxB/CLASS` splits [M x K] x [K x N] into R row blocks, C column
blocks and P reduction partials (tile (g, r, c, p) computes A[r, p] x B[p, c]);
each partial result block is cut into A x B pieces (A*B <= P), piece (i, j)
being reduced on partial p = i*B + j (with A*B < P the other partials reduce
nothing and send their whole block: `/1x1` gathers every partial onto one tile
a block, as the reference compiler reduces nine partials onto 162 tiles); CLASS
is the memory region of the weights. A batched GEMM runs its batches on
G = min(batch, tiles // (R*C*P)) groups of R*C*P tiles, ceil(batch / G) batches each.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ipuopt.errors import InputError
from ipuopt.spec import Spec
from ipuopt.workloads.workload import Operator, Workload

PARTIAL_BYTES = 4  # partial sums are accumulated in f32


@dataclass(frozen=True)
class GemmLayout:
    rows: int
    cols: int
    parts: int
    sub_a: int
    sub_b: int
    weight_region: str

    @property
    def label(self) -> str:
        return (f"{self.rows}x{self.cols}x{self.parts}/{self.sub_a}x{self.sub_b}/"
                f"{self.weight_region}")

    @classmethod
    def parse(cls, text: str, spec: Spec, where: str = "--layout") -> GemmLayout:
        m = re.fullmatch(r"(\d+)x(\d+)x(\d+)(?:/(\d+)x(\d+))?(?:/([\w-]+))?", text.strip())
        if not m:
            raise InputError.one("", where, f"{text!r} is not RxCxP[/AxB][/REGION]")
        r, c, p = (int(m.group(i)) for i in (1, 2, 3))
        a = int(m.group(4)) if m.group(4) else p
        b = int(m.group(5)) if m.group(5) else 1
        region = m.group(6) or activation_region(spec)
        if a * b > p:
            raise InputError.one("", where, f"sub-division {a}x{b} has more pieces than the {p} partials")
        if region not in [x.name for x in spec.regions]:
            raise InputError.one("", where, f"no memory region {region!r} in {spec.name}")
        if min(r, c, p) < 1:
            raise InputError.one("", where, "grid sizes must be >= 1")
        return cls(r, c, p, a, b, region)


@dataclass(frozen=True)
class Candidate:
    op: str
    layout: GemmLayout
    groups: int
    batches_per_group: int
    tiles_used: int
    compute_cycles: int
    memory: dict[str, int]  # bytes per tile by region
    output: str             # label of the output layout

    def to_dict(self) -> dict:
        return {"op": self.op, "layout": self.layout.label, "groups": self.groups,
                "tiles": self.tiles_used, "compute": self.compute_cycles, "memory": self.memory,
                "output": self.output}


def activation_region(spec: Spec) -> str:
    """Activations, partials and receive buffers live in the largest region."""
    return max(spec.regions, key=lambda r: r.size).name


def price(wl: Workload, op: Operator, layout: GemmLayout, spec: Spec) -> Candidate | None:
    """Compute estimate (slowest tile) and per-tile memory; None when the grid is impossible."""
    regions = [x.name for x in spec.regions]
    if layout.weight_region not in regions:
        return None
    grid = [np.array([v]) for v in (layout.rows, layout.cols, layout.parts, layout.sub_a, layout.sub_b)]
    found = _priced(wl, op, spec, *grid, np.array([regions.index(layout.weight_region)]))
    return found[0] if found else None


def _priced(wl: Workload, op: Operator, spec: Spec, r: np.ndarray, c: np.ndarray, p: np.ndarray,
            sub_a: np.ndarray, sub_b: np.ndarray, region: np.ndarray) -> list[Candidate]:
    """The candidates of the layouts (r, c, p, sub_a, sub_b, weight region index) given as
    arrays, in their order, the impossible ones left out: one formula for one layout and for
    the hundreds of thousands an enumeration prices."""
    batch, m, k, n = wl.gemm_dims(op)
    ok = (r <= m) & (c <= n) & (p <= k) & (r * c * p <= spec.tiles)
    r, c, p, sub_a, sub_b, region = (x[ok] for x in (r, c, p, sub_a, sub_b, region))
    groups = np.minimum(batch, spec.tiles // (r * c * p))
    bb = -(-batch // groups)
    groups = -(-batch // bb)
    mb, kb, nb = -(-m // r), -(-k // p), -(-n // c)
    pa, pb = -(-mb // sub_a), -(-nb // sub_b)
    e = wl.elem_bytes
    rate = spec.compute[f"{wl.dtype}_macs_per_cycle"]
    add = spec.compute["partial_add_bytes_per_cycle"]
    piece = bb * pa * pb
    cycles = np.ceil(bb * mb * nb * kb / rate).astype(np.int64)
    cycles += np.where(p > 1, np.ceil((p - 1) * piece * PARTIAL_BYTES / add).astype(np.int64), 0)
    names = [x.name for x in spec.regions]
    act = names.index(activation_region(spec))
    out_bytes = np.where(p > 1, _aligned(bb * mb * nb * PARTIAL_BYTES, spec)
                         + (p - 1) * _aligned(piece * PARTIAL_BYTES, spec) + _aligned(piece * e, spec),
                         _aligned(bb * mb * nb * e, spec))
    mem = np.zeros((len(spec.regions), len(r)), dtype=np.int64)
    mem[act] += _aligned(bb * mb * kb * e, spec) + out_bytes
    np.add.at(mem, (region, np.arange(len(r))), _aligned(bb * kb * nb * e, spec))
    size = np.array([x.size for x in spec.regions], dtype=np.int64)[:, None]
    ok = (sub_a <= mb) & (sub_b <= nb) & (mem <= size).all(axis=0)
    keep = np.flatnonzero(ok)
    mems = [dict(zip(names, col, strict=True)) for col in mem[:, keep].T.tolist()]
    out = []
    for (ri, ci, pi, ai, bi, gi, b, ti, cy), mi, x in zip(
            np.stack([r, c, p, sub_a, sub_b, groups, bb, groups * r * c * p, cycles])[:, keep].T.tolist(),
            mems, region[keep].tolist(), strict=True):
        label = f"{op.name}:{ri}x{ci}x{pi}/{ai}x{bi}" + (f"/g{gi}" if gi > 1 else "")
        out.append(Candidate(op.name, GemmLayout(ri, ci, pi, ai, bi, names[x]), gi, b, ti, cy,
                             {k_: v for k_, v in mi.items() if v}, label))
    return out


def _aligned(nbytes: np.ndarray, spec: Spec) -> np.ndarray:
    """`Spec.aligned` of each element."""
    a = spec.exchange.paired_alignment
    return -(-nbytes // a) * a


def enumerate_candidates(wl: Workload, op: Operator, spec: Spec,
                         min_utilisation: float = 0.5) -> list[Candidate]:
    """Every valid layout of a GEMM using at least `min_utilisation` of the tiles.

    Valid: R <= M, C <= N, P <= K, G*R*C*P <= tiles, A*B == P with pieces
    non-empty, and the per-tile memory fits every region. (A*B < P, fewer tiles reducing
    more partials each, is taken by `--layout` but not enumerated: it would add a candidate
    per divisor pair to problems whose build time is the limit.) Ordered by R, C, P, A and
    region, priced in one pass (`_priced`).
    """
    batch, m, k, n = wl.gemm_dims(op)
    tiles = spec.tiles
    grids = [(r, c, p) for r in range(1, min(m, tiles) + 1) for c in range(1, min(n, tiles // r) + 1)
             for p in range(1, min(k, tiles // (r * c)) + 1)
             if min(batch, tiles // (r * c * p)) * r * c * p >= min_utilisation * tiles]
    layouts = np.array([(r, c, p, a, p // a, g) for r, c, p in grids for a in range(1, p + 1) if p % a == 0
                        for g in range(len(spec.regions))], dtype=np.int64).reshape(-1, 6)
    return _priced(wl, op, spec, *layouts.T)


def default_layout(wl: Workload, op: Operator, spec: Spec) -> Candidate:
    """The candidate with the lowest local score: compute plus the words a tile must
    receive (its A and B blocks and its reduction pieces), at one word per cycle.
    This is the greedy, per-operator choice a compiler makes today."""
    best = None
    for cand in enumerate_candidates(wl, op, spec):
        score = cand.compute_cycles + _received_words(wl, op, cand, spec)
        key = (score, cand.layout.parts, cand.layout.label)
        if best is None or key < best[0]:
            best = (key, cand)
    if best is None:
        raise InputError.one(wl.source, f"operator {op.name}",
                             f"no layout fits {spec.name} ({spec.tiles} tiles)")
    return best[1]


def compiler_layouts(wl: Workload, spec: Spec) -> dict[str, Candidate]:
    """`default_layout` of every GEMM, each shape chosen once (an attention block's four
    projections share theirs)."""
    chosen: dict[tuple, GemmLayout] = {}
    out = {}
    for op in wl.operators:
        if op.kind != "gemm":
            continue
        shape = wl.gemm_dims(op)
        if shape not in chosen:
            chosen[shape] = default_layout(wl, op, spec).layout
        cand = price(wl, op, chosen[shape], spec)
        assert cand is not None  # priced alike for every operator of this shape
        out[op.name] = cand
    return out


def _received_words(wl: Workload, op: Operator, cand: Candidate, spec: Spec) -> int:
    batch, m, k, n = wl.gemm_dims(op)
    lay = cand.layout
    mb, kb, nb = math.ceil(m / lay.rows), math.ceil(k / lay.parts), math.ceil(n / lay.cols)
    piece = cand.batches_per_group * math.ceil(mb / lay.sub_a) * math.ceil(nb / lay.sub_b)
    wb = spec.exchange.word_bytes
    words = cand.batches_per_group * (mb * kb + kb * nb) * wl.elem_bytes / wb
    words += (lay.parts - 1) * piece * PARTIAL_BYTES / wb
    return math.ceil(words)
