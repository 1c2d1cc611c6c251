"""Exchange phases implied by a workload, its GEMM layouts and a spec.

Walks the operators in order, keeping for every tensor its layout (which tile
holds which box, at which address). A GEMM needs its A blocks multicast along
the grid's columns and its B blocks along the rows (weights are stored once, on
row 0 of the grid, and broadcast); these needs are routed from the current
layouts (phase `<op>-input` when reading a graph input, `<op>-redistribution`
otherwise). An operand marked `prepare` is first moved into its homes (one tile
a block, as weights are homed) in a phase of its own, `<op>-<tensor>-preparation`,
and multicast from there. With P > 1 partials, phase `<op>-reduction` sends every
partial piece to its owner. Elementwise operators run in place on their input layout.

Addresses come from an SPMD first-fit allocator (one offset per buffer on all
tiles, 8-byte aligned): every operator allocates its A, B, partial, receive
and output buffers; operator temporaries are freed when it ends, a tensor's
buffer when its last consumer ends. Each intersection box moves as the fragments
`grain` asks for (`workloads.fragments`): contiguous runs with their true addresses by
default, cut at a grain, or (`"box"`) whole, addressed at its first element.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np

from ipuopt.errors import InputError
from ipuopt.exchange.bounds import endpoint_bound
from ipuopt.exchange.timing import payload_cycles, phase_timings
from ipuopt.spec import Spec
from ipuopt.workloads.allocation import SpmdAllocator
from ipuopt.workloads.boxes import volume
from ipuopt.workloads.fragments import Grain
from ipuopt.workloads.gemm import (
    PARTIAL_BYTES,
    Candidate,
    GemmLayout,
    activation_region,
    default_layout,
    price,
)
from ipuopt.workloads.geometry import (
    default_input_layout,
    grid_tile,
    home_needs,
    layout_bytes,
    operand_home,
    operand_needs,
    output_pieces,
    reduction_routes,
    splits,
)
from ipuopt.workloads.records import Compute, GeneratedPhase, Generation, Piece
from ipuopt.workloads.routing import Router
from ipuopt.workloads.workload import Operator, Workload


def generate(wl: Workload, spec: Spec, chosen: dict[str, GemmLayout] | None = None,
             grain: Grain = None, only: frozenset[str] | None = None,
             check: Callable[[], None] | None = None) -> Generation:
    """Every exchange phase of the workload with the chosen (or default) GEMM layouts, its
    boxes moved as `grain` says (`workloads.fragments`). `only`: the phases to route (the
    others are left without transfers), for a caller that needs a few phases of a plan;
    `check`: called as each need is routed, raises to stop (a phase can take seconds)."""
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
    gen = Generation(wl, spec, layouts, grain, only=only, check=check)
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


def _router(gen: Generation, name: str) -> Router:
    return Router(gen.workload, gen.spec, name, gen.grain, skip=gen.only is not None and name not in gen.only,
                  check=gen.check)


def gemm_phases(gen: Generation, op: Operator, cand: Candidate, held: dict[str, list[Piece]],
          alloc: SpmdAllocator, step: int) -> None:
    wl, spec = gen.workload, gen.spec
    lay = cand.layout
    e = wl.elem_bytes
    act = activation_region(spec)
    bsplit, msplit, ksplit, nsplit = splits(wl, op, cand)
    mb, kb, nb = (max(hi - lo for lo, hi in s) for s in (msplit, ksplit, nsplit))
    bb = cand.batches_per_group
    tag = op.name
    a_addr = alloc.alloc(act, bb * mb * kb * e, f"{tag}.a", step)
    b_addr = alloc.alloc(lay.weight_region, bb * kb * nb * e, f"{tag}.b", step)
    a_view, b_view = op.inputs
    reading_input = any(wl.tensors[v.tensor].input for v in op.inputs)
    kind = "input" if reading_input else "redistribution"
    router = _router(gen, f"{op.name}-{kind}")
    own = (operand_needs(wl, op, cand, 0, a_addr), operand_needs(wl, op, cand, 1, b_addr))
    needs = {a_view.tensor: list(own[0])}
    needs.setdefault(b_view.tensor, []).extend(own[1])
    if wl.tensors[b_view.tensor].weight:
        held[b_view.tensor] = operand_home(own[1])
    # the host writes a replicated input's blocks where they are read: nothing to move
    hosted = {v.tensor for v in op.inputs if wl.tensors[v.tensor].replicated}
    if a_view.tensor not in held and a_view.tensor not in hosted:
        held[a_view.tensor] = default_input_layout(wl, spec, a_view.tensor, alloc, step)
    sources: dict[str, list[Piece]] = {}
    for v, wanted in zip(op.inputs, own, strict=True):
        if v.prepare:  # first into its homes, a phase of its own; multicast from there below
            home = home_needs(wanted)
            prep = _router(gen, f"{op.name}-{v.tensor}-preparation")
            prep.route(v.tensor, held[v.tensor], home, e)
            gen.phases.append(prep.phase({v.tensor: home}, {v.tensor: held[v.tensor]}, step))
            sources[v.tensor] = operand_home(wanted)
    for v in (a_view, b_view):
        if v.tensor not in sources and v.tensor not in hosted:
            sources[v.tensor] = held[v.tensor]
    for t, pieces in sources.items():
        router.route(t, pieces, needs[t], e)
    gen.phases.append(router.phase({t: n for t, n in needs.items() if t not in hosted}, sources, step))
    macs = Compute(f"{op.name} (multiply)", len(gen.phases), {})
    rate = spec.compute[f"{wl.dtype}_macs_per_cycle"]
    for g, bl in enumerate(bsplit):
        for r, rr in enumerate(msplit):
            for p, kk in enumerate(ksplit):
                for c, cc in enumerate(nsplit):
                    work = (bl[1] - bl[0]) * (rr[1] - rr[0]) * (kk[1] - kk[0]) * (cc[1] - cc[0])
                    macs.cycles[grid_tile(lay, g, r, c, p)] = math.ceil(work / rate)
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
        red = _router(gen, f"{op.name}-reduction")
        red.route(partial_name, partial_pieces, red_needs, PARTIAL_BYTES)
        gen.phases.append(red.phase({partial_name: red_needs}, {partial_name: partial_pieces}, step))
        # each partial received is added into its owner's piece
        gen.compute.append(Compute.of_bytes(
            f"{op.name} (reduce)", len(gen.phases),
            [(need.tiles[0], volume(need.box) * PARTIAL_BYTES) for need in red_needs],
            spec.compute["partial_add_bytes_per_cycle"]))
        alloc.free(f"{tag}.recv", step + 1)
        alloc.free(part_tag, step + 1)
        held[op.out.tensor] = output_pieces(wl, op, cand, out_addr)
    for t in (f"{tag}.a", f"{tag}.b"):
        alloc.free(t, step + 1)


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
