"""CP-SAT model of arena placement: offsets as variables, no-overlap in (live steps x address)."""

from __future__ import annotations

import math
from typing import Any

from ortools.sat.python import cp_model

from ipuopt.arena.problem import Arena


def grain(arena: Arena, objective: str) -> int:
    """The address unit the model may count in without losing a solution.

    Any placement stays valid when every buffer, lowest first, is pushed down onto the top
    of a buffer below it (or 0), rounded up to its alignment; the result has every offset a
    multiple of the gcd of sizes, alignments (above 1) and fixed offsets. Counting in that unit
    (1 KiB in the MiniMalloc suite) shrinks the offset domains a thousandfold, which is what
    lets CP-SAT's no-overlap reasoning bite. Memory elements do not survive the push
    down, so models that price or separate elements count in bytes."""
    if objective == "conflicts" or any(b.distinct_elements_from for b in arena.buffers):
        return 1
    return math.gcd(*(b.size for b in arena.buffers), *(b.align for b in arena.buffers if b.align > 1),
                    *(b.offset for b in arena.buffers if b.offset is not None))


class ArenaModel:
    """Variables: an offset per storage root (aliases share it) in units of `grain`, element
    indices where elements matter, a `share` literal per conflict pair live together."""

    def __init__(self, arena: Arena, objective: str) -> None:
        m = self.model = cp_model.CpModel()
        self.arena = arena
        g = self.grain = grain(arena, objective)
        cap, eb = arena.capacity, arena.element_bytes
        roots = arena.roots()
        by_id = {b.id: b for b in arena.buffers}
        self.offset: dict[str, Any] = {}
        storage = arena.storage()
        for b in arena.buffers:
            if roots[b.id] != b.id:
                continue
            top = (cap - storage[b.id][0]) // g
            if b.offset is not None:
                self.offset[b.id] = m.new_constant(b.offset // g)
            elif b.align > g:
                k = m.new_int_var(0, max(0, top * g // b.align), f"k_{b.id}")
                self.offset[b.id] = m.new_int_var(0, max(0, top), f"x_{b.id}")
                m.add(self.offset[b.id] == b.align // g * k)
            else:
                self.offset[b.id] = m.new_int_var(0, max(0, top), f"x_{b.id}")
        off = {b.id: self.offset[roots[b.id]] for b in arena.buffers}
        self.offsets_of = off
        if any(b.alias_of is not None for b in arena.buffers):
            self._pairwise(arena, roots, off)
        else:
            xs = [m.new_fixed_size_interval_var(b.first, b.end - b.first, "") for b in arena.buffers]
            ys = [m.new_fixed_size_interval_var(off[b.id], b.size // g, "") for b in arena.buffers]
            m.add_no_overlap_2d(xs, ys)
        self.elems: dict[str, tuple[Any, Any]] = {}

        def elements(bid: str) -> tuple[Any, Any]:
            if bid not in self.elems:
                b = by_id[bid]
                lo = m.new_int_var(0, cap // eb, f"e0_{bid}")
                hi = m.new_int_var(0, cap // eb, f"e1_{bid}")
                m.add_division_equality(lo, off[bid], eb)
                m.add_division_equality(hi, off[bid] + b.size - 1, eb)
                self.elems[bid] = (lo, hi)
            return self.elems[bid]

        for b in arena.buffers:
            for d in b.distinct_elements_from:
                (a0, a1), (b0, b1) = elements(b.id), elements(d)
                left = m.new_bool_var("")
                m.add(a1 < b0).only_enforce_if(left)
                m.add(b1 < a0).only_enforce_if(~left)
        self.shares: list[tuple[int, Any]] = []
        if objective == "conflicts":
            for c in arena.conflicts:
                if not by_id[c.a].live_with(by_id[c.b]) or c.weight == 0:
                    continue
                (a0, a1), (b0, b1) = elements(c.a), elements(c.b)
                if c.a == c.b:
                    self.shares.append((c.weight, 1))
                    continue
                below, above = m.new_bool_var(""), m.new_bool_var("")
                m.add(a1 < b0).only_enforce_if(below)
                m.add(b1 < a0).only_enforce_if(above)
                share = m.new_bool_var(f"share_{c.a}_{c.b}")
                m.add_bool_or([below, above, share])
                self.shares.append((c.weight, share))
        self.peak = m.new_int_var(0, cap // g, "peak")
        for b in arena.buffers:
            m.add(self.peak >= off[b.id] + b.size // g)
        if objective == "peak":
            m.minimize(self.peak)
        elif objective == "conflicts":
            m.minimize(sum(w * s for w, s in self.shares) * (cap + 1) + self.peak)

    def _pairwise(self, arena: Arena, roots: dict, off: dict) -> None:
        """With aliases: separate each pair of buffers live together with different roots."""
        m = self.model
        bs = arena.buffers
        for i, a in enumerate(bs):
            for b in bs[i + 1:]:
                if roots[a.id] != roots[b.id] and a.live_with(b):
                    m.add_no_overlap([m.new_fixed_size_interval_var(off[a.id], a.size // self.grain, ""),
                                      m.new_fixed_size_interval_var(off[b.id], b.size // self.grain, "")])

    def hint(self, offsets: dict[str, int]) -> None:
        for bid, var in self.offset.items():
            if bid in offsets and offsets[bid] % self.grain == 0:
                self.model.add_hint(var, offsets[bid] // self.grain)

    def read(self, solver: cp_model.CpSolver) -> dict[str, int]:
        return {bid: int(solver.value(v)) * self.grain for bid, v in self.offsets_of.items()}
