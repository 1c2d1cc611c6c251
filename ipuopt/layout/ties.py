"""Floors that tie each candidate to its best partner across a move, before any (layout,
need) pair is listed.

Pruning alone (`pruning.prune`) floors a candidate's input moves whatever the producer's
layout (`pricing.move_floor`: volume only), and on an attention block the moves cost 2.6-4x
that in the reference plan, so thousands of candidates per operator and millions of pairs
stayed. What a move costs turns on runs: every row of every (need box, held piece) overlap is
a transfer of its own. A row of w elements held in pieces at most W wide crosses at least
ceil(w / W) of them, so a producer layout is described by three numbers (its widest piece, the
most rows and elements one tile holds) and a need label by its boxes' shapes: a matrix of
floors per move (producer classes x need labels) in a few numpy calls. Each candidate is then
held to the cheapest partner on the other side of each of its moves (the partner's floor and
the move's floor together), which rules out the candidates no partner makes cheap enough.

The floor of a need box received by a tile that holds one piece: its rows times the pieces
each row crosses, less the rows that tile may hold, each a run at the receive lead, plus the
payload of the elements it does not hold at the fastest width (one run for the whole box when
the rows may merge: a row within one piece), plus what a transfer costs besides its receive
lane. It counts no more runs, leads or elements than the busiest receiving tile of the
priced move (`pricing.move_lanes`), so it is never above the move's price. At grain `box` a
whole overlap is one transfer (rows are not runs): no raise; nor where the producer stores its
output per head (a tile holds several pieces).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ipuopt.layout.candidates import Cand, Catalogue
from ipuopt.layout.pricing import fastest_of
from ipuopt.layout.pruning import floors_of, groups_of
from ipuopt.workloads.fragments import BOX
from ipuopt.workloads.gemm import Candidate
from ipuopt.workloads.geometry import operand_shapes
from ipuopt.workloads.workload import Operator, Workload

NONE = (0, 0, 0)  # class 0: layouts the floors say nothing of


@dataclass(frozen=True)
class Edge:
    """A move between two groups: `tensor` from the candidates of group `producer` into those
    of GEMM `consumer`. `floor[k, n]`: what moving it from a layout of class k into need
    label n costs at least (cycles; 0 for class 0, layouts it says nothing of); `class_of`
    and `label_of` give each output layout's class and each need label's column."""

    tensor: str
    producer: str
    consumer: str
    class_of: dict[str, int]
    label_of: dict[str, int]
    floor: np.ndarray


def output_class(wl: Workload, op: Operator, c: Candidate) -> tuple[int, int, int]:
    """The class of where GEMM `op` leaves its output in layout `c` (`pricing.output_held`): its
    widest piece, the most rows and elements one tile holds, from its splits alone (each tile
    holds one piece, and the largest of each dimension's near equal parts meet in one). NONE
    when the output is stored per head (a piece per head: a tile holds several)."""
    if op.out.heads:
        return NONE
    batch, m, _, n = wl.gemm_dims(op)
    lay = c.layout
    sub_a, sub_b = (lay.sub_a, lay.sub_b) if lay.parts > 1 else (1, 1)
    rows, cols = math.ceil(math.ceil(m / lay.rows) / sub_a), math.ceil(math.ceil(n / lay.cols) / sub_b)
    if op.out.transpose:
        rows, cols = cols, rows
    tall = min(batch, c.batches_per_group) * rows
    return cols, tall, tall * cols


def edges(cat: Catalogue, cands: dict[str, list[Cand]]) -> list[Edge]:
    """Every move between a producing group and a GEMM, with its floors for the layouts and
    need labels `cands` still hold."""
    head_of = {m.name: h for h, ms in groups_of(cat).items() for m in ms}
    out = []
    for op in cat.ops:
        for _, t in cat.inputs(op) if op.kind == "gemm" else ():
            if t not in cat.producer:
                continue
            q = head_of[cat.producer[t].name]
            classes = {NONE: 0}
            class_of: dict[str, int] = {}
            for c in cands[q]:
                o = c.doc["output"]
                if o not in class_of:  # at `box` a whole overlap is one transfer: no runs; a
                    # layout no GEMM leaves (a graph input's, passed on in place): not a grid
                    known = cat.grain != BOX and o in cat.origin
                    kind = output_class(cat.wl, *cat.origin[o]) if known else NONE
                    class_of[o] = classes.setdefault(kind, len(classes))
            label_of: dict[str, int] = {}
            for c in cands[op.name]:
                label_of.setdefault(c.doc["needs"][t], len(label_of))
            out.append(Edge(t, q, op.name, class_of, label_of, _floors(classes, label_of, cat)))
    return out


def _floors(classes: dict[tuple[int, int, int], int], labels: dict[str, int], cat: Catalogue) -> np.ndarray:
    """floor[k, n]: the least any tile needing a box of label n receives from class k."""
    spec, elem = cat.spec, cat.wl.elem_bytes
    ex = spec.exchange
    shapes: dict[tuple[int, int], int] = {}
    pairs = set()
    for n, j in labels.items():
        op, which, c = cat.needs[n]
        for s in operand_shapes(cat.wl, op, c, which):
            pairs.add((j, shapes.setdefault(s, len(shapes))))
    floor = np.zeros((len(classes), len(labels)), dtype=np.int64)
    if not pairs:
        return floor
    owner, shape = np.array(sorted(pairs), dtype=np.int64).T
    rows, width = np.array(list(shapes), dtype=np.int64).T
    starts = np.flatnonzero(np.diff(owner, prepend=-1))
    tail = ex.tx_overhead + spec.latency(0, 1) - ex.rx_lead
    for (wide, tall, most), k in classes.items():
        if k == 0:
            continue
        crossed = -(-width // wide)  # pieces a row crosses, at least
        held = np.minimum(rows, tall)  # rows the receiving tile may hold, one run each
        left = rows * width - np.minimum(most, held * np.minimum(width, wide))
        runs = np.where(crossed == 1, 1, rows * crossed - held)  # a row within one piece: rows may merge
        words = -(-np.maximum(left, 0) * elem // ex.word_bytes)
        work = np.where(left > 0, runs * ex.rx_lead + fastest_of(words, spec), 0)[shape]
        best = np.maximum.reduceat(work, starts)
        floor[k, owner[starts]] = np.where(best > 0, best + tail, 0)
    return floor


@dataclass(frozen=True)
class Ties:
    """Per move (tensor, consuming GEMM), what a plan costs at least besides the move when its
    producer leaves layout o and its consumer needs label n: `total` plus `producer[o]` plus
    `consumer[n]` (the consumer's floor counts the move's volume floor: take it off), and the
    move's own floor from class to label (`floor`)."""

    total: float
    least: float  # the least plan the ties see: a lower bound on the problem's optimum
    producer: dict[tuple[str, str], dict[str, float]]
    consumer: dict[tuple[str, str], dict[str, float]]
    edges: dict[tuple[str, str], Edge]

    def floor(self, tensor: str, consumer: str, o: str, n: str) -> int:
        e = self.edges[(tensor, consumer)]
        return int(e.floor[e.class_of[o], e.label_of[n]])


def tied(cat: Catalogue, limit: float, cands: dict[str, list[Cand]]) -> tuple[dict[str, list[Cand]], Ties]:
    """The candidates that can be part of a plan of at most `limit` cycles: each candidate's
    floor, every other group at its least, and what the moves of the cheapest plan through it
    cost above the floors already counted (`Cheapest`). With them, the `Ties` of every move for
    the pairs that can be priced."""
    groups, floors, least, total = floors_of(cat, cands)
    sides = [_Side.of(e, cands, floors) for e in edges(cat, cands)]
    best = Cheapest({h: {i: f - least[h] for i, f in floors[h].items()} for h in groups}, sides)
    out: dict[str, list[Cand]] = {}
    lowest = 0.0  # each group's cheapest plan through it: all alike on a tree
    for h, members in groups.items():
        extra = best.through(h)
        lowest = max(lowest, total + min(extra.values(), default=math.inf))
        keep = [cands[h][i] for i, x in extra.items() if total + x <= limit]
        out[h] = keep
        labels = {c.doc["output"] for c in keep}
        for m in members[1:]:
            out[m.name] = [c for c in cands[m.name] if c.doc["id"] in labels]
    ties = Ties(total, lowest, {}, {}, {})
    for side in sides:
        e = side.edge
        key = (e.tensor, e.consumer)
        ties.edges[key] = e
        q, r = e.producer, e.consumer
        ties.producer[key] = _least({i: cands[q][i].doc["output"] for i in floors[q]}, best.behind(q, side))
        ties.consumer[key] = _least({j: cands[r][j].doc["needs"][e.tensor] for j in floors[r]},
                                    best.behind(r, side))
    return out, ties


class Cheapest:
    """The cheapest plan through each candidate: every group's floor above its least (`base`:
    head -> candidate index -> cycles) plus what the moves (`sides`) raise. When the groups and
    their moves form a tree (MLPs, attention blocks) that plan is found exactly by passing,
    along each move, the cheapest completion of the side behind it; otherwise each candidate
    is held to its cheapest partner across each move alone (partners in one group: the most
    any one move raises)."""

    def __init__(self, base: dict[str, dict[int, float]], sides: list[_Side]) -> None:
        self.base = base
        self.tree = _is_forest(list(base), [(s.edge.producer, s.edge.consumer) for s in sides])
        self.at: dict[str, list[tuple[_Side, bool]]] = {h: [] for h in base}  # (move, the group produces)
        for side in sides:
            self.at[side.edge.producer].append((side, True))
            self.at[side.edge.consumer].append((side, False))
        self.memo: dict[tuple[int, bool], np.ndarray] = {}
        self.behind_memo: dict[tuple[str, int], dict[int, float]] = {}  # (group, id of the move skipped)

    def through(self, h: str) -> dict[int, float]:
        """Each candidate of group h: the cheapest plan through it, less every group's least."""
        if self.tree:
            return self.behind(h, None)
        extra = dict(self.base[h])
        for i in extra:  # the star: each partner group once, at the most any of its moves adds
            by_partner: dict[str, float] = {}
            for side, produces in self.at[h]:
                other = side.edge.consumer if produces else side.edge.producer
                value = self._into(side, produces)[(side.k_of if produces else side.key_of)[i]]
                by_partner[other] = max(by_partner.get(other, 0.0), value)
            extra[i] += sum(by_partner.values())
        return extra

    def behind(self, h: str, skip: _Side | None) -> dict[int, float]:
        """Each candidate of group h: its floor above the least plus what every move but
        `skip` adds through the rest of the tree (its floor alone off a tree). Made once per
        (group, move skipped): the messages and the moves' `Ties` ask for the same ones."""
        if not self.tree:
            return self.base[h]
        key = (h, id(skip))
        if key not in self.behind_memo:
            value = dict(self.base[h])
            for side, produces in self.at[h]:
                if side is not skip:
                    msg, keys = self._into(side, produces), side.k_of if produces else side.key_of
                    for i in value:
                        value[i] += msg[keys[i]]
            self.behind_memo[key] = value
        return self.behind_memo[key]

    def _into(self, side: _Side, to_producer: bool) -> np.ndarray:
        """The least the other side of `side` adds, per key of the receiving side."""
        key = (id(side), to_producer)
        if key not in self.memo:
            h = side.edge.consumer if to_producer else side.edge.producer
            self.memo[key] = side.message(self.behind(h, side), from_producer=not to_producer)
        return self.memo[key]


def _least(label_of: dict[int, str], value: dict[int, float]) -> dict[str, float]:
    """The least value per label."""
    out: dict[str, float] = {}
    for i, label in label_of.items():
        if value[i] < out.get(label, math.inf):
            out[label] = value[i]
    return out


@dataclass
class _Side:
    """One move as pruning sees it: the producer's head candidates by layout class (`k_of`),
    the consumer's by (need label, move floor they count already) (`key_of`), and what the
    move costs above that floor per (class, key) (`extra`)."""

    edge: Edge
    k_of: dict[int, int]
    key_of: dict[int, int]
    extra: np.ndarray

    @classmethod
    def of(cls, e: Edge, cands: dict[str, list[Cand]], floors: dict) -> _Side:
        q, r = e.producer, e.consumer
        k_of = {i: e.class_of[cands[q][i].doc["output"]] for i in floors[q]}
        keys: dict[tuple[int, int], int] = {}
        key_of = {j: keys.setdefault((e.label_of[cands[r][j].doc["needs"][e.tensor]],
                                      cands[r][j].moves[e.tensor]), len(keys)) for j in floors[r]}
        label, counted = np.array(list(keys), dtype=np.int64).reshape(-1, 2).T
        return cls(e, k_of, key_of, np.maximum(e.floor[:, label], counted) - counted)

    def message(self, value: dict[int, float], from_producer: bool) -> np.ndarray:
        """The least of `value` (per candidate of the sending side) plus the move, per key of
        the receiving side (inf where no candidate sends)."""
        keys, size = (self.k_of, self.extra.shape[0]) if from_producer else (self.key_of, self.extra.shape[1])
        best = np.full(size, math.inf)
        for i, v in value.items():
            if v < best[keys[i]]:
                best[keys[i]] = v
        if from_producer:
            return (best[:, None] + self.extra).min(axis=0, initial=math.inf)
        return (best[None, :] + self.extra).min(axis=1, initial=math.inf)


def _is_forest(nodes: list[str], links: list[tuple[str, str]]) -> bool:
    """No cycle: two moves between the same two groups make one (their partner would count twice)."""
    parent = {n: n for n in nodes}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for a, b in links:
        ra, rb = root(a), root(b)
        if ra == rb:
            return False
        parent[ra] = rb
    return True
