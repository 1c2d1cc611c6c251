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
    batch, m, k, n = wl.gemm_dims(op)
    r, c, p = layout.rows, layout.cols, layout.parts
    if r > m or c > n or p > k or r * c * p > spec.tiles:
        return None
    groups = min(batch, spec.tiles // (r * c * p))
    bb = math.ceil(batch / groups)
    groups = math.ceil(batch / bb)
    mb, kb, nb = math.ceil(m / r), math.ceil(k / p), math.ceil(n / c)
    pa, pb = math.ceil(mb / layout.sub_a), math.ceil(nb / layout.sub_b)
    if layout.sub_a > mb or layout.sub_b > nb:
        return None
    e = wl.elem_bytes
    rate = spec.compute[f"{wl.dtype}_macs_per_cycle"]
    add = spec.compute["partial_add_bytes_per_cycle"]
    piece = bb * pa * pb
    cycles = math.ceil(bb * mb * nb * kb / rate)
    act = activation_region(spec)
    mem = {x.name: 0 for x in spec.regions}
    mem[act] += spec.aligned(bb * mb * kb * e)
    mem[layout.weight_region] += spec.aligned(bb * kb * nb * e)
    if p > 1:
        cycles += math.ceil((p - 1) * piece * PARTIAL_BYTES / add)
        mem[act] += spec.aligned(bb * mb * nb * PARTIAL_BYTES) + (p - 1) * spec.aligned(piece * PARTIAL_BYTES)
        mem[act] += spec.aligned(piece * e)
    else:
        mem[act] += spec.aligned(bb * mb * nb * e)
    for region in spec.regions:
        if mem[region.name] > region.size:
            return None
    out = f"{op.name}:{r}x{c}x{p}/{layout.sub_a}x{layout.sub_b}" + (f"/g{groups}" if groups > 1 else "")
    return Candidate(op.name, layout, groups, bb, groups * r * c * p, cycles,
                     {k_: v for k_, v in mem.items() if v}, out)


def enumerate_candidates(wl: Workload, op: Operator, spec: Spec,
                         min_utilisation: float = 0.5) -> list[Candidate]:
    """Every valid layout of a GEMM using at least `min_utilisation` of the tiles.

    Valid: R <= M, C <= N, P <= K, G*R*C*P <= tiles, A*B == P with pieces
    non-empty, and the per-tile memory fits every region. (A*B < P, fewer tiles reducing
    more partials each, is taken by `--layout` but not enumerated: it would add a candidate
    per divisor pair to problems whose build time is the limit.)
    """
    batch, m, k, n = wl.gemm_dims(op)
    tiles = spec.tiles
    out: list[Candidate] = []
    regions = [x.name for x in spec.regions]
    for r in range(1, min(m, tiles) + 1):
        for c in range(1, min(n, tiles // r) + 1):
            for p in range(1, min(k, tiles // (r * c)) + 1):
                used = min(batch, tiles // (r * c * p)) * r * c * p
                if used < min_utilisation * tiles:
                    continue
                for a in range(1, p + 1):
                    if p % a:
                        continue
                    for region in regions:
                        cand = price(wl, op, GemmLayout(r, c, p, a, p // a, region), spec)
                        if cand is not None:
                            out.append(cand)
    return out


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
