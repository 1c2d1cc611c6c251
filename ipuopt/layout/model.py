"""The structure both exact models are built from, grouped by the layouts that edges see.

Candidates of a producer that leave the same output layout, and candidates of a consumer
that need the same input layout, behave alike on an edge; so an edge costs one variable per
(output layout, input layout) pair, not per pair of candidates (Alpa's linearised edge
product, grouped). A graph input's layout is fixed: moving it is part of the consumer
candidate's own cost, and a candidate whose input cannot be moved is left out."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ipuopt.layout.problem import LayoutProblem


@dataclass
class Edge:
    """Producer `src` feeds `tensor` to `dst`: candidates grouped by output / needed layout."""

    tensor: str
    src: str
    dst: str
    outputs: dict[str, list[int]]  # layout -> producer candidate indices
    needs: dict[str, list[int]]  # layout -> consumer candidate indices
    cost: dict[tuple[str, str], int]  # (have, need) -> cycles; a pair not here is not allowed

    def pairs_of(self) -> tuple[dict[str, list[tuple[str, str]]], dict[str, list[tuple[str, str]]]]:
        """The allowed pairs of each output layout and of each needed layout: the sums both
        exact models equate with that layout's choice (a transportation linearisation, tighter
        than y >= z + w - 1; a layout without pairs cannot be chosen)."""
        by_out: dict[str, list[tuple[str, str]]] = {a: [] for a in self.outputs}
        by_need: dict[str, list[tuple[str, str]]] = {b: [] for b in self.needs}
        for a, b in self.cost:
            by_out[a].append((a, b))
            by_need[b].append((a, b))
        return by_out, by_need


@dataclass
class Structure:
    cost: dict[str, list[int]]  # operator -> each candidate's own cycles (with graph-input moves)
    allowed: dict[str, list[bool]]  # operator -> candidate usable at all
    edges: list[Edge] = field(default_factory=list)
    memory: list[dict[str, list[tuple[str, int, int]]]] = field(default_factory=list)
    # memory[k][region] = (operator, candidate index, bytes) terms at step k


def structure(problem: LayoutProblem) -> Structure:
    rows: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
    for (t, a, b), cycles in problem.redistribution.items():
        if a != b:
            rows[t].append((a, b, cycles))
    cost: dict[str, list[int]] = {}
    allowed: dict[str, list[bool]] = {}
    edges = []
    for name, op in problem.operators.items():
        own, ok = [], []
        for c in op.candidates:
            extra, fine = 0, True
            for t in op.inputs:
                if t in problem.inputs:
                    moved = problem.move(t, problem.inputs[t], c.needs[t])
                    fine = fine and moved is not None
                    extra += moved or 0
            own.append(c.cycles + extra)
            ok.append(fine)
        cost[name], allowed[name] = own, ok
        for t in op.inputs:
            if t in problem.inputs:
                continue
            src = problem.producer[t]
            outputs: dict[str, list[int]] = defaultdict(list)
            for i, c in enumerate(problem.operators[src].candidates):
                outputs[c.output].append(i)
            needs: dict[str, list[int]] = defaultdict(list)
            for i, c in enumerate(op.candidates):
                needs[c.needs[t]].append(i)
            pairs = {(a, a): 0 for a in outputs if a in needs}
            pairs.update({(a, b): c for a, b, c in rows[t] if a in outputs and b in needs})
            edges.append(Edge(t, src, name, dict(outputs), dict(needs), pairs))
    memory = []
    for k, running in enumerate(problem.order):
        terms: dict[str, list[tuple[str, int, int]]] = {r: [] for r in problem.capacity}
        for i, c in enumerate(problem.operators[running].candidates):
            for r, b in c.memory.items():
                if b:
                    terms[r].append((running, i, b))
        for held in problem.order[:k]:
            if k in problem.live_steps(held):
                for i, c in enumerate(problem.operators[held].candidates):
                    for r, b in c.holds.items():
                        if b:
                            terms[r].append((held, i, b))
        memory.append(terms)
    return Structure(cost, allowed, edges, memory)


@dataclass(frozen=True)
class Instance:
    """What every layout method works on: the problem, its structure, and the plans it must
    not return (the k best: each plan found is excluded from the next solve)."""

    problem: LayoutProblem
    structure: Structure
    exclude: tuple[dict[str, int], ...] = ()
