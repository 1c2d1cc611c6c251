"""Greedy-scheduled prices for layout problems (`--exchange greedy`).

Each price is the horizon the greedy scheduler (`ipuopt solve`'s default) reaches on the
phase `ipuopt gen` would emit, built by the generator's own code for an operator running
alone (its buffers first-fit from the start of each region): a candidate's own exchange is
its weight broadcast plus its reduction, a redistribution is the transfers that move one
tensor from the producer's layout into the layout the consumer needs. Every schedule is
checked by the validator, so no price is below the phase's load bound.
"""

from __future__ import annotations

from ipuopt.exchange.greedy import best_greedy
from ipuopt.exchange.instance import Instance, horizon_of
from ipuopt.exchange.phase import Phase
from ipuopt.exchange.timing import phase_timings
from ipuopt.spec import Spec
from ipuopt.workloads.allocation import SpmdAllocator
from ipuopt.workloads.fragments import Grain
from ipuopt.workloads.gemm import Candidate, activation_region
from ipuopt.workloads.geometry import default_input_layout, homed, layout_bytes, output_pieces
from ipuopt.workloads.phases import gemm_phases
from ipuopt.workloads.records import Generation, Piece
from ipuopt.workloads.workload import Operator, Workload


class GreedyPricer:
    def __init__(self, wl: Workload, spec: Spec, grain: Grain = None) -> None:
        self.wl, self.spec, self.grain = wl, spec, grain
        self.phases = 0

    def _horizon(self, phase: Phase) -> int:
        if not phase.transfers:
            return 0
        self.phases += 1  # the greedy alone (what `solve --solver greedy` returns), without its bounds
        timings = phase_timings(phase, self.spec)
        return horizon_of(timings, *best_greedy(Instance(phase, self.spec, timings))[:2])

    def _phase(self, op: Operator, c: Candidate, held: dict[str, list[Piece]], alloc: SpmdAllocator,
               tensors: set[str]) -> dict[str, int]:
        """Greedy horizons of the operator's phases as `gen` emits them from the pieces in
        `held`, counting the transfers of `tensors` only: input, preparation (of a prepared
        operand into its homes) and reduction -> cycles.
        A graph input A not in `held` arrives as `gen` allocates it (so the first operator's
        buffers are where `gen` puts them); other inputs not in `held` are not moved."""
        gen = Generation(self.wl, self.spec, {op.name: c}, self.grain)
        a, b = (v.tensor for v in op.inputs)
        if not self.wl.tensors[a].input:
            held.setdefault(a, [])
        held.setdefault(b, [])
        gemm_phases(gen, op, c, held, alloc, 1)
        out = {"input": 0, "preparation": 0, "reduction": 0}
        for gp in gen.phases:
            mine = {t for d in gp.deliveries if d.tensor in tensors for t in d.transfers}
            phase = Phase(spec_ref=self.spec.name, name=gp.phase.name,
                          transfers=[t for t in gp.phase.transfers if t.id in mine])
            kind = next((k for k in ("reduction", "preparation") if gp.phase.name.endswith(f"-{k}")), "input")
            out[kind] += self._horizon(phase)
        return out

    def own(self, op: Operator, c: Candidate) -> dict[str, int]:
        """Greedy horizons of the candidate's broadcasts from homes (weights, prepared
        operands) and reduction."""
        home = [v.tensor for k, v in enumerate(op.inputs) if homed(self.wl, op, k)]
        got = self._phase(op, c, {}, SpmdAllocator(self.spec), {*home, f"{op.name}.partial"})
        return {"weights": got["input"], "reduction": got["reduction"]}

    def move(self, tensor: str, source: tuple[Operator, Candidate] | None, op: Operator,
             c: Candidate) -> int:
        """Greedy horizon of moving `tensor` (a graph input when `source` is None, else the
        output of GEMM candidate `source`) into the layout candidate `c` of `op` needs (a
        prepared operand: into its homes, its preparation phase)."""
        alloc = SpmdAllocator(self.spec)
        held: dict[str, list[Piece]] = {}
        if source is not None:
            at_zero = output_pieces(self.wl, *source, 0)
            base = alloc.alloc(activation_region(self.spec), layout_bytes(at_zero, self.wl.elem_bytes),
                               tensor, 0)
            held[tensor] = [Piece(p.tile, p.box, base + p.addr) for p in at_zero]
        elif tensor == op.inputs[1].tensor:  # gen allocates a graph input only as A
            held[tensor] = default_input_layout(self.wl, self.spec, tensor, alloc, 0)
        prepared = any(v.tensor == tensor and v.prepare for v in op.inputs)
        return self._phase(op, c, held, alloc, {tensor})["preparation" if prepared else "input"]
