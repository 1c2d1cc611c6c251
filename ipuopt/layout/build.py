"""A layout problem from a workload and a spec: every GEMM candidate priced, the ones that
cannot matter dropped with a reason, the redistributions that can matter priced.

Tens of thousands of candidates per GEMM give billions of (output, input) layout pairs, so
nothing is priced that a bound shows cannot be part of a plan within `within` of the best
plan: a candidate costs at least its own cycles plus, per input, the floor of moving that
input whatever the producer's layout (`pricing.move_floor`), and every other operator at
least its cheapest such figure. Against a reference plan (the exact optimum of a small
problem made of each operator's most promising candidates) this drops all but a few
hundred per operator; candidates alike on every edge are then thinned to those no other
is at least as good as in cycles, memory and held bytes. The kept problem has the same
optimum as the whole one (and every plan within `within` of it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ipuopt.errors import InputError
from ipuopt.layout.pricing import (
    Held,
    input_held,
    move_bound,
    move_floor,
    output_held,
    own_exchange,
)
from ipuopt.layout.problem import LayoutProblem, layout_problem_from_dict
from ipuopt.spec import Spec
from ipuopt.workloads.fragments import Grain, grain_name
from ipuopt.workloads.gemm import Candidate, activation_region, enumerate_candidates
from ipuopt.workloads.phases import operand_needs
from ipuopt.workloads.workload import Operator, Workload

INPUT_LAYOUT = "rows"
EXCHANGE_PRICES = ("bound", "greedy")


@dataclass
class _Cand:
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


@dataclass
class Report:
    enumerated: dict[str, int] = field(default_factory=dict)
    kept: dict[str, int] = field(default_factory=dict)
    pairs_priced: int = 0
    rows: int = 0
    reference: int | None = None
    within: float = 0.0
    limit: float = 0.0
    exchange: str = "bound"
    grain: Grain = None
    scheduled: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"enumerated": self.enumerated, "kept": self.kept, "redistribution_rows": self.rows,
                "pairs_priced": self.pairs_priced, "reference_cycles": self.reference,
                "within": self.within, "exchange": self.exchange,
                "grain": grain_name(self.grain),
                **({"phases_scheduled": self.scheduled} if self.exchange == "greedy" else {}),
                "excluded_above": math.floor(self.limit), "rule": (
                    "kept: candidates that can be part of a plan within `within` of the reference "
                    "plan's cycles (own cycles + input-move floors + every other operator's least), "
                    "then not dominated in cycles, memory and held bytes by a candidate alike on every "
                    "edge; every plan left out costs more than `excluded_above` (load bounds are "
                    "below greedy horizons, so this holds for either pricing)"),
                "seconds": round(self.seconds, 1)}


def _need_label(op: Operator, which: int, c: Candidate) -> str:
    lay = c.layout
    return f"{op.name}.{'ab'[which]}:{lay.rows}x{lay.cols}x{lay.parts}" + (
        f"/g{c.groups}" if c.groups > 1 else "")


class _Builder:
    def __init__(self, wl: Workload, spec: Spec, min_utilisation: float,
                 progress: Callable[[str], None] | None, check: Callable[[], None] | None = None,
                 grain: Grain = None) -> None:
        self.wl, self.spec, self.grain = wl, spec, grain
        self.say = progress or (lambda _m: None)
        self.check = check or (lambda: None)  # may raise to stop (Ctrl-C, the deadline)
        self.act = activation_region(spec)
        self.ops = wl.operators
        self.producer = {op.out.tensor: op for op in self.ops}
        self.origin: dict[str, tuple[Operator, Candidate]] = {}  # output label -> a GEMM making it
        self.held: dict[tuple[str, str], Held] = {}
        self.needs: dict[str, tuple[Operator, int, Candidate]] = {}  # need label -> a candidate
        self.need_boxes: dict[str, Any] = {}
        self.exact: dict[tuple[str, str], int] = {}  # (graph input, need label) -> cycles
        self.alike: dict[tuple, int] = {}
        self.cands: dict[str, list[_Cand]] = {}
        self.report = Report(grain=grain)
        for op in self.ops:
            if op.kind == "gemm":
                self.cands[op.name] = self._gemms(op, min_utilisation)
            else:
                self.cands[op.name] = self._elementwise(op)
            self.report.enumerated[op.name] = len(self.cands[op.name])

    # -- candidates ------------------------------------------------------------------
    def _inputs(self, op: Operator) -> list[tuple[int, str]]:
        """(operand index, tensor) of the operands that are moved, not weights."""
        return [(i, v.tensor) for i, v in enumerate(op.inputs) if not self.wl.tensors[v.tensor].weight]

    def refresh(self, cands: dict[str, list[_Cand]], exact: bool = True) -> None:
        """Each candidate's least input moves, given the layouts its producers can still
        leave: priced exactly from a graph input (its layout is fixed), else the floor of a
        tile that holds at most the largest piece any kept producer candidate leaves."""
        largest: dict[str, int] = {t: self._held_of(t, INPUT_LAYOUT).largest()
                                   for t in self.wl.tensors if self.wl.tensors[t].input}
        for op in self.ops:
            largest[op.out.tensor] = max((c.doc["why"]["piece"] for c in cands[op.name]), default=0)
        for op in self.ops:
            for which, t in self._inputs(op) if op.kind == "gemm" else ():
                for i, c in enumerate(cands[op.name]):
                    if i % 256 == 0:
                        self.check()
                    n = c.doc["needs"][t]
                    if t in self.producer or not exact:
                        c.moves[t] = move_floor(*c.blocks[t], largest[t], self.wl.elem_bytes, self.spec)
                    else:
                        if (t, n) not in self.exact:  # alike needs of one input cost alike
                            alike = (t, n.split(":", 1)[1], which, op.inputs[which], self.wl.gemm_dims(op))
                            if alike not in self.alike:
                                self.alike[alike] = self._price(t, INPUT_LAYOUT, n)
                            self.exact[(t, n)] = self.alike[alike]
                            if len(self.exact) % 200 == 0:
                                self.say(f"{len(self.exact)} moves of graph inputs priced")
                        c.moves[t] = self.exact[(t, n)]

    def _price(self, t: str, have: str, need: str) -> int:
        self.check()
        nop, which, nc = self.needs[need]
        if need not in self.need_boxes:
            self.need_boxes[need] = operand_needs(self.wl, nop, nc, which, 0)
        self.report.pairs_priced += 1
        return move_bound(self._held_of(t, have), self.need_boxes[need], self.wl.elem_bytes, self.spec,
                          self.grain)

    def _gemms(self, op: Operator, min_utilisation: float) -> list[_Cand]:
        wl, spec = self.wl, self.spec
        t0 = time.perf_counter()
        found = enumerate_candidates(wl, op, spec, min_utilisation)
        batch, m, k, n = wl.gemm_dims(op)
        out = []
        for c in found:
            if len(out) % 256 == 0:
                self.check()
            lay = c.layout
            mb, kb, nb = math.ceil(m / lay.rows), math.ceil(k / lay.parts), math.ceil(n / lay.cols)
            bb = c.batches_per_group
            piece = bb * math.ceil(mb / lay.sub_a) * math.ceil(nb / lay.sub_b) if lay.parts > 1 \
                else bb * mb * nb
            own = own_exchange(wl, op, c, spec, self.grain)
            needs, blocks = {}, {}
            for which, t in self._inputs(op):
                label = _need_label(op, which, c)
                needs[t] = label
                self.needs.setdefault(label, (op, which, c))
                blocks[t] = (bb * (mb * kb if which == 0 else kb * nb), lay.cols if which == 0 else lay.rows)
            self.origin.setdefault(c.output, (op, c))
            doc = {"id": lay.label, "compute": c.compute_cycles,
                   "exchange": own["weights"] + own["reduction"], "memory": dict(c.memory),
                   "needs": needs, "output": c.output,
                   "holds": {self.act: spec.aligned(piece * wl.elem_bytes)},
                   "why": {"tiles": c.tiles_used, "groups": c.groups, "block": [bb, mb, kb, nb],
                           "piece": piece, "weights": own["weights"], "reduction": own["reduction"]}}
            out.append(_Cand(doc, c.compute_cycles + own["weights"] + own["reduction"], c, blocks))
        self.say(f"{op.name}: {len(out)} candidates priced in {time.perf_counter() - t0:.1f} s")
        return out

    def _elementwise(self, op: Operator) -> list[_Cand]:
        """One candidate per layout its input can be in: it runs in place, output alike."""
        t = op.inputs[0].tensor
        spec, e = self.spec, self.wl.elem_bytes
        rate = spec.compute["elementwise_bytes_per_cycle"]
        if t in self.producer:
            sources = {c.doc["output"]: (c.doc["why"]["piece"], c.doc["holds"])
                       for c in self.cands[self.producer[t].name]}
        else:
            piece = self._held_of(t, INPUT_LAYOUT).largest()
            sources = {INPUT_LAYOUT: (piece, {self.act: spec.aligned(piece * e)})}
        out = []
        for label, (piece, holds) in sources.items():
            cycles = math.ceil(piece * e / rate)
            doc = {"id": label, "compute": cycles, "exchange": 0, "memory": dict(holds),
                   "needs": {t: label}, "output": label, "holds": dict(holds),
                   "why": {"piece": piece, "bytes_per_cycle": rate}}
            out.append(_Cand(doc, cycles))
        return out

    # -- groups: a GEMM with the elementwise operators that run in place on its output ----
    def _groups(self) -> dict[str, list[Operator]]:
        head: dict[str, str] = {}
        groups: dict[str, list[Operator]] = {}
        for op in self.ops:
            src = self.producer.get(op.inputs[0].tensor)
            h = head[src.name] if op.kind == "elementwise" and src is not None else op.name
            head[op.name] = h
            groups.setdefault(h, []).append(op)
        return groups

    def _group_floor(self, members: list[Operator], cands: dict[str, list[_Cand]]) -> dict[int, int]:
        """Per candidate index of the group's head: its floor plus its followers' cycles."""
        first, *rest = members
        follow = [{c.doc["id"]: c.doc["compute"] for c in cands[m.name]} for m in rest]
        out = {}
        for i, c in enumerate(cands[first.name]):
            extra = [f.get(c.doc["output"]) for f in follow]
            if None not in extra:
                out[i] = c.floor + sum(extra)  # type: ignore[arg-type]
        return out

    def _floors(self, cands: dict[str, list[_Cand]]):
        """Groups, each head candidate's group floor, each group's least and their sum."""
        groups = self._groups()
        floors = {h: self._group_floor(m, cands) for h, m in groups.items()}
        least = {h: min(f.values(), default=math.inf) for h, f in floors.items()}
        return groups, floors, least, sum(least.values())

    def prune(self, limit: float, cands: dict[str, list[_Cand]]) -> dict[str, list[_Cand]]:
        """Candidates that can be part of a plan of at most `limit` cycles."""
        groups, floors, least, total = self._floors(cands)
        out: dict[str, list[_Cand]] = {}
        for h, members in groups.items():
            rest = total - least[h]
            keep = [cands[h][i] for i, f in floors[h].items() if f + rest <= limit]
            out[h] = keep
            labels = {c.doc["output"] for c in keep}
            for m in members[1:]:
                out[m.name] = [c for c in cands[m.name] if c.doc["id"] in labels]
        return out

    def top(self, n: int) -> dict[str, list[_Cand]]:
        """The `n` most promising candidates of every group (by floor), for the reference."""
        out: dict[str, list[_Cand]] = {}
        for h, members in self._groups().items():
            floors = self._group_floor(members, self.cands)
            best = sorted(floors, key=lambda i: (floors[i], i))[:n]
            out[h] = [self.cands[h][i] for i in best]
            labels = {c.doc["output"] for c in out[h]}
            for m in members[1:]:
                out[m.name] = [c for c in self.cands[m.name] if c.doc["id"] in labels]
        return out

    # -- redistributions --------------------------------------------------------------
    def _held_of(self, tensor: str, label: str) -> Held:
        """Where `tensor` is when in layout `label` (graph inputs all share the label `rows`)."""
        key = (tensor, label)
        if key not in self.held:
            if tensor in self.producer:
                op, c = self.origin[label]
                self.held[key] = output_held(self.wl, op, c)
            else:
                self.held[key] = input_held(self.wl, tensor, self.spec)
        return self.held[key]

    def rows(self, cands: dict[str, list[_Cand]], limit: float) -> list[dict[str, Any]]:
        """Priced moves between kept layouts that a plan within `limit` could use."""
        groups, floors, least, total = self._floors(cands)
        head_of = {m.name: h for h, ms in groups.items() for m in ms}
        rows = []
        for op in self.ops:
            if op.kind != "gemm":
                continue
            best_c: dict[str, dict[str, int]] = {}
            move_lb: dict[tuple[str, str], int] = {}
            block: dict[tuple[str, str], tuple[int, int]] = {}
            for i, f in floors[op.name].items():
                for t, n in cands[op.name][i].doc["needs"].items():
                    move_lb[(t, n)] = cands[op.name][i].moves[t]
                    block[(t, n)] = cands[op.name][i].blocks[t]
                    best_c.setdefault(t, {})
                    best_c[t][n] = min(best_c[t].get(n, math.inf), f)  # type: ignore[arg-type]
            for _, t in self._inputs(op):
                if t in self.producer:
                    q = head_of[self.producer[t].name]
                    best_p: dict[str, int] = {}
                    piece: dict[str, int] = {}  # the most a layout leaves on one tile
                    for i, f in floors[q].items():
                        o = cands[q][i].doc["output"]
                        best_p[o] = min(best_p.get(o, math.inf), f)  # type: ignore[arg-type]
                        piece[o] = cands[q][i].doc["why"]["piece"]
                    rest = total - least[q] - least[op.name]
                else:
                    best_p, rest = {INPUT_LAYOUT: 0}, total - least[op.name]
                    piece = {INPUT_LAYOUT: self._held_of(t, INPUT_LAYOUT).largest()}
                for n, fc in best_c.get(t, {}).items():
                    for o, fp in best_p.items():
                        if fp + fc + rest > limit or o == n:
                            continue
                        cycles = self.exact.get((t, n)) if o == INPUT_LAYOUT else None
                        if cycles is None and fp + fc - move_lb[(t, n)] + rest + move_floor(
                                *block[(t, n)], piece[o], self.wl.elem_bytes, self.spec) > limit:
                            continue  # even this producer's own floor rules the pair out
                        if cycles is None:
                            cycles = self._price(t, o, n)
                        if fp + fc - move_lb[(t, n)] + cycles + rest <= limit:
                            rows.append({"tensor": t, "from": o, "to": n, "cycles": cycles})
        return rows

    # -- greedy prices (--exchange greedy) ----------------------------------------------
    def greedy_own(self, cands: dict[str, list[_Cand]]) -> None:
        """Each kept GEMM candidate's own exchange re-priced by greedy horizons. Pruning keeps
        working on load bounds (`_Cand.own`), so what is kept is what bound prices keep."""
        from ipuopt.layout.scheduled import GreedyPricer

        self.pricer = GreedyPricer(self.wl, self.spec, self.grain)
        for op in self.ops:
            for c in cands[op.name] if op.kind == "gemm" else ():
                own = self.pricer.own(op, c.source)  # type: ignore[arg-type]
                why = c.doc["why"]
                why["bound"] = {"weights": why["weights"], "reduction": why["reduction"]}
                why.update(own)
                c.doc["exchange"] = own["weights"] + own["reduction"]  # c.own keeps the bound
            self.say(f"{op.name}: own phases scheduled ({self.pricer.phases} so far)")

    def greedy_rows(self, rows: list[dict[str, Any]]) -> None:
        """Every kept redistribution re-priced by the greedy horizon of its phase."""
        for i, row in enumerate(rows):
            t, have, need = row["tensor"], row["from"], row["to"]
            source = self.origin[have] if t in self.producer else None
            op, _, c = self.needs[need]
            row["cycles"] = self.pricer.move(t, source, op, c)
            if (i + 1) % 50 == 0:
                self.say(f"{i + 1} of {len(rows)} redistributions scheduled")
        self.report.scheduled = self.pricer.phases

    def document(self, cands: dict[str, list[_Cand]], rows: list[dict[str, Any]]) -> dict[str, Any]:
        wl = self.wl
        tensors: dict[str, Any] = {}
        for op in self.ops:
            for _, t in self._inputs(op):
                if t not in self.producer:
                    tensors[t] = {"layout": INPUT_LAYOUT}
            tensors[op.out.tensor] = {"producer": op.name}
        capacity = {r.name: r.size for r in self.spec.regions}
        return {"name": f"{wl.name}-{self.spec.name}", "workload": wl.name, "spec": self.spec.name,
                "capacity": capacity, "order": [op.name for op in self.ops], "tensors": tensors,
                "operators": {op.name: {"inputs": [t for _, t in self._inputs(op)] if op.kind == "gemm"
                                        else [op.inputs[0].tensor],
                                        "output": op.out.tensor,
                                        "candidates": [c.doc for c in cands[op.name]]}
                              for op in self.ops},
                "redistribution": rows}


def _undominated(cands: list[_Cand]) -> list[_Cand]:
    """Drop a candidate when another alike on every edge is at least as good in cycles,
    memory and held bytes (of equals, the first stays)."""
    by_key: dict[tuple, list[int]] = {}
    for i, c in enumerate(cands):
        by_key.setdefault(c.key, []).append(i)
    out = []
    for i, c in enumerate(cands):
        if not any(_covers(cands[j].doc, c.doc) and (j < i or not _covers(c.doc, cands[j].doc))
                   for j in by_key[c.key] if j != i):
            out.append(c)
    return out


def _covers(a: dict, b: dict) -> bool:
    """a is at least as good as b in cycles and in every region's memory and held bytes."""
    return (a["compute"] + a["exchange"] <= b["compute"] + b["exchange"]
            and all(a[f].get(r, 0) <= b[f].get(r, 0) for f in ("memory", "holds")
                    for r in set(a[f]) | set(b[f])))


def build_problem(wl: Workload, spec: Spec, within: float = 0.0, min_utilisation: float = 0.5,
                  progress: Callable[[str], None] | None = None, reference_width: int = 6,
                  exchange: str = "bound", check: Callable[[], None] | None = None,
                  grain: Grain = None) -> tuple[LayoutProblem, dict[str, Any]]:
    """The layout problem of `wl` on `spec` and its document (the problem file's content).

    `exchange="greedy"` prices the kept candidates and redistributions by greedy horizons
    instead of load bounds; what is kept is still decided by load bounds, so a plan left
    out costs more than the limit under either pricing (`excluded_above`). `check` is called
    as moves are priced and may raise to stop the build. Phases are priced as `ipuopt gen`
    emits them at `grain` (`workloads.fragments`)."""
    if exchange not in EXCHANGE_PRICES:
        raise InputError.one("", "--exchange", f"unknown pricing {exchange!r} (one of "
                                               f"{', '.join(EXCHANGE_PRICES)})")
    from ipuopt.layout.solve import plan  # the reference plan is solved exactly

    t0 = time.perf_counter()
    b = _Builder(wl, spec, min_utilisation, progress, check, grain)
    b.report.within, b.report.exchange = within, exchange
    b.refresh(b.cands, exact=False)
    for width in (reference_width, 4 * reference_width, 16 * reference_width):
        small = b.top(width)
        doc = b.document(small, b.rows(small, math.inf))
        ref = plan(layout_problem_from_dict(doc, "reference"), "milp", {"workers": 1, "seed": 0})
        if ref.value is not None:
            break
    else:
        raise InputError.one(wl.source, "", f"no plan of the {width} most promising candidates per "
                                            f"operator fits {spec.name}'s memory ({ref.reason})")
    limit = b.report.limit = ref.value * (1 + within)
    b.report.reference = ref.value
    b.say(f"reference plan: {ref.value} cycles from the {width} most promising "
          f"candidates per operator")
    kept = b.prune(limit, b.cands)
    for _ in range(8):  # fewer producers: larger move floors, fewer candidates; to a fixed point
        b.refresh(kept)
        smaller = b.prune(limit, kept)
        b.say("kept " + ", ".join(f"{k} {len(v)}" for k, v in smaller.items()))
        if sum(map(len, smaller.values())) == sum(map(len, kept.values())):
            break
        kept = smaller
    if exchange == "greedy":  # dominance is judged on the prices the problem will carry
        b.greedy_own(kept)
    kept = b.prune(limit, {name: _undominated(cs) for name, cs in kept.items()})
    b.say("kept " + ", ".join(f"{k} {len(v)}" for k, v in kept.items()) + "; pricing moves")
    rows = b.rows(kept, limit)
    if exchange == "greedy":
        b.greedy_rows(rows)
    b.report.kept = {k: len(v) for k, v in kept.items()}
    b.report.rows = len(rows)
    b.report.seconds = time.perf_counter() - t0
    doc = b.document(kept, rows)
    doc["kept"] = b.report.to_dict()
    return layout_problem_from_dict(doc, f"{wl.name} on {spec.name}"), doc
