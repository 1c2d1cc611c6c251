"""Every operator's layout candidates, enumerated and priced on their own: a GEMM's compute
and own exchange (weights in, partial sums reduced), an elementwise operator in place on each
layout its input can be in. Each candidate carries what the bounds and the problem file need."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ipuopt.heap import bulk
from ipuopt.layout.pricing import input_held, own_exchange
from ipuopt.spec import Spec
from ipuopt.workloads.fragments import Grain
from ipuopt.workloads.gemm import Candidate, activation_region, enumerate_candidates
from ipuopt.workloads.workload import Operator, Workload

INPUT_LAYOUT = "rows"  # the one layout of every graph input


@dataclass
class Cand:
    """One priced candidate, with the figures the bounds use."""

    doc: dict[str, Any]
    own: int  # its own cycles
    source: Candidate | None = None  # a GEMM's layout
    blocks: dict[str, tuple[int, int]] = field(default_factory=dict)
    # input -> (elements a tile needs of it, tiles that need the same block)
    moves: dict[str, int] = field(default_factory=dict)  # input -> least cycles to move it

    @property
    def floor(self) -> int:
        """Own cycles plus the least cycles of moving every input."""
        return self.own + sum(self.moves.values())

    @property
    def key(self) -> tuple:
        return (self.doc["output"], tuple(sorted(self.doc["needs"].items())))


def need_label(op: Operator, which: int, c: Candidate) -> str:
    lay = c.layout
    return f"{op.name}.{'ab'[which]}:{lay.rows}x{lay.cols}x{lay.parts}" + (
        f"/g{c.groups}" if c.groups > 1 else "")


class Catalogue:
    """The candidates of every operator (`cands`), the layouts each output can be left in
    (`origin`: label -> a GEMM candidate making it) and each need label's first candidate."""

    def __init__(self, wl: Workload, spec: Spec, min_utilisation: float, grain: Grain,
                 say: Callable[[str], None], check: Callable[[], None]) -> None:
        self.wl, self.spec, self.grain, self.say, self.check = wl, spec, grain, say, check
        self.act = activation_region(spec)
        self.ops = wl.operators
        self.producer = {op.out.tensor: op for op in self.ops}
        self.origin: dict[str, tuple[Operator, Candidate]] = {}
        self.needs: dict[str, tuple[Operator, int, Candidate]] = {}  # need label -> a candidate
        self.cands: dict[str, list[Cand]] = {}
        self.own_memo: dict[tuple, int] = {}  # `own_exchange`'s figures
        self.enumerated: dict[str, int] = {}
        with bulk():
            for op in self.ops:
                made = self._gemms(op, min_utilisation) if op.kind == "gemm" else self._elementwise(op)
                self.cands[op.name] = made
                self.enumerated[op.name] = len(self.cands[op.name])

    def inputs(self, op: Operator) -> list[tuple[int, str]]:
        """(operand index, tensor) of the operands that are moved: not weights, nor inputs the
        host writes where they are read."""
        return [(i, v.tensor) for i, v in enumerate(op.inputs)
                if not (self.wl.tensors[v.tensor].weight or self.wl.tensors[v.tensor].replicated)]

    def _gemms(self, op: Operator, min_utilisation: float) -> list[Cand]:
        wl, spec = self.wl, self.spec
        t0 = time.perf_counter()
        found = enumerate_candidates(wl, op, spec, min_utilisation)
        batch, m, k, n = wl.gemm_dims(op)
        out = []
        moved = self.inputs(op)
        for c in found:
            if len(out) % 256 == 0:
                self.check()
            lay = c.layout
            mb, kb, nb = math.ceil(m / lay.rows), math.ceil(k / lay.parts), math.ceil(n / lay.cols)
            bb = c.batches_per_group
            piece = bb * math.ceil(mb / lay.sub_a) * math.ceil(nb / lay.sub_b) if lay.parts > 1 \
                else bb * mb * nb
            own = own_exchange(wl, op, c, spec, self.grain, self.own_memo)
            needs, blocks = {}, {}
            for which, t in moved:
                label = need_label(op, which, c)
                needs[t] = label
                self.needs.setdefault(label, (op, which, c))
                # a prepared operand is moved to its homes alone (one tile a block)
                blocks[t] = (bb * (mb * kb if which == 0 else kb * nb),
                             1 if op.inputs[which].prepare else lay.cols if which == 0 else lay.rows)
            self.origin.setdefault(c.output, (op, c))
            exchange = own["weights"] + own["prepared"] + own["reduction"]
            doc = {"id": lay.label, "compute": c.compute_cycles, "exchange": exchange,
                   "memory": dict(c.memory), "needs": needs, "output": c.output,
                   "holds": {self.act: spec.aligned(piece * wl.elem_bytes)},
                   "why": {"tiles": c.tiles_used, "groups": c.groups, "block": [bb, mb, kb, nb],
                           "piece": piece, "weights": own["weights"], "reduction": own["reduction"],
                           **({"prepared": own["prepared"]} if own["prepared"] else {})}}
            out.append(Cand(doc, c.compute_cycles + exchange, c, blocks))
        self.say(f"{op.name}: {len(out)} candidates priced in {time.perf_counter() - t0:.1f} s")
        return out

    def _elementwise(self, op: Operator) -> list[Cand]:
        """One candidate per layout its input can be in: it runs in place, output alike."""
        t = op.inputs[0].tensor
        spec, e = self.spec, self.wl.elem_bytes
        rate = spec.compute["elementwise_bytes_per_cycle"]
        if t in self.producer:
            sources = {c.doc["output"]: (c.doc["why"]["piece"], c.doc["holds"])
                       for c in self.cands[self.producer[t].name]}
        else:
            piece = input_held(self.wl, t, spec).largest()
            sources = {INPUT_LAYOUT: (piece, {self.act: spec.aligned(piece * e)})}
        out = []
        for label, (piece, holds) in sources.items():
            cycles = math.ceil(piece * e / rate)
            doc = {"id": label, "compute": cycles, "exchange": 0, "memory": dict(holds),
                   "needs": {t: label}, "output": label, "holds": dict(holds),
                   "why": {"piece": piece, "bytes_per_cycle": rate}}
            out.append(Cand(doc, cycles))
        return out
