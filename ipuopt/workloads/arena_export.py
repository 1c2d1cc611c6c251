"""The arena of a generated workload, with conflict weights from its phases, and phases
re-addressed to another placement of that arena.

Weights follow the arena model: for every phase and tile, the bytes a tile sends
from buffer a times the bytes it receives into buffer b (and the converse), summed;
divided by 2**20 (rounded up) so objectives stay far inside 64-bit integers.
"""

from __future__ import annotations

import math
from collections import defaultdict

from ipuopt.exchange.phase import Phase, Transfer
from ipuopt.workloads.gemm import activation_region
from ipuopt.workloads.records import GeneratedPhase, Generation

WEIGHT_SCALE = 1 << 20


def _region(gen: Generation, name: str | None):
    name = name or activation_region(gen.spec)
    return next(r for r in gen.spec.regions if r.name == name)


def _owner(gen: Generation, region, addr: int, step: int) -> dict | None:
    """The buffer of `region` live at `step` that holds byte address `addr`."""
    off = addr - region.start
    for entry in gen.buffers:
        if (entry["region"] == region.name and entry["first"] <= step < entry["end"]
                and entry["offset"] <= off < entry["offset"] + entry["size"]):
            return entry
    return None


def arena_document(gen: Generation, region_name: str | None = None) -> dict:
    region = _region(gen, region_name)
    wb = gen.spec.exchange.word_bytes
    weights: dict[tuple[str, str], int] = defaultdict(int)
    for gp in gen.phases:
        sent: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        got: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for t in gp.phase.transfers:
            nbytes = t.words * wb
            src = _owner(gen, region, t.src_addr, gp.step) if t.src_addr is not None else None
            dst = _owner(gen, region, t.dst_addr, gp.step) if t.dst_addr is not None else None
            if src:
                sent[t.src][src["id"]] += nbytes
            if dst:
                for x in t.dst:
                    got[x][dst["id"]] += nbytes
        for tile, out in sent.items():
            for a, sa in out.items():
                for b, rb in got.get(tile, {}).items():
                    if a != b:
                        weights[tuple(sorted((a, b)))] += sa * rb  # type: ignore[index]
    align = gen.spec.exchange.paired_alignment
    buffers = [{"id": e["id"], "size": e["size"], "live": [e["first"], e["end"]], "align": align}
               for e in gen.buffers if e["region"] == region.name]
    conflicts = [{"a": a, "b": b, "weight": math.ceil(w / WEIGHT_SCALE)}
                 for (a, b), w in sorted(weights.items()) if w]
    return {"spec": gen.spec.name, "region": region.name, "name": f"{gen.workload.name}-arena",
            "buffers": buffers, "conflicts": conflicts}


def default_offsets(gen: Generation, region_name: str | None = None) -> dict[str, int]:
    region = _region(gen, region_name)
    return {e["id"]: e["offset"] for e in gen.buffers if e["region"] == region.name}


def readdress(gen: Generation, gp: GeneratedPhase, offsets: dict[str, int],
              region_name: str | None = None) -> Phase:
    """The phase with every address inside a buffer of the region moved to `offsets`."""
    region = _region(gen, region_name)

    def move(addr: int | None) -> int | None:
        if addr is None:
            return None
        owner = _owner(gen, region, addr, gp.step)
        if owner is None:
            return addr
        return addr - owner["offset"] + offsets[owner["id"]]

    out = [Transfer(t.id, t.src, t.dst, t.words, move(t.src_addr), move(t.dst_addr), t.paired,
                    t.after) for t in gp.phase.transfers]
    return Phase(spec_ref=gp.phase.spec_ref, transfers=out, name=gp.phase.name)
