"""A lower bound on a program's cycles over every plan its layout problem admits.

The replayed program (`workloads.program`) is, boundary by boundary, the slowest tile's
compute, `sync_cycles`, then the exchange phase's horizon, and the compute after the last
phase. Every plan's terms have bounds that hold under any placement:

- compute: a GEMM's multiply, its reduce-add (P > 1) and an elementwise operator's pass are
  functions of the candidates (`gemm.price`); a boundary's slowest tile computes at least the
  largest step before it (the steps run on the same tiles one after the other);
- a GEMM's input phase carries its moved operands and its weight broadcast at once: its
  horizon is at least the largest of their load bounds (`layout.pricing`: cheapest width,
  shortest route, no memory element; a phase takes at least as long as any subset of its
  transfers), not their sum as the layout model counts them, and at least its floors that
  hold whatever the producers leave (`pricing.inflow_floor`: one tile's receive lane;
  `pricing.row_pair_floor`: the group bound's argument on two tiles of a grid row);
- its reduction phase (P > 1): its load bound;
- once a plan is the model's best, each of its multicast phases generated
  (`workloads.phases.generate`, those phases only) and priced by the group bound, which holds
  under any placement on the phase without its memory elements (widths kept), where higher;
- a head's compute steps in one boundary (a GEMM's last step, then elementwise passes over
  its output) run on the same tiles one after the other, largest on the same tile: their sum.

Minimising that over plans is a small CP-SAT model (one-hot choice, the layout problem's
memory rows, one variable per boundary and per moved operand). A move between two
activation layouts is priced lazily: at first every move counts its floor
(`pricing.move_floor`, valid whatever the producer), then the moves of the model's best plan
are priced exactly and the model solved again, until that plan's moves are all priced. Each
round also prices the next candidates' own phases ahead, for about as long as the model
took to solve, so that the bound climbs faster than one plan a round.

Pairs of layouts: an input phase whose A another GEMM leaves and whose B is broadcast from its homes
is floored for every (producer layout, candidate) pair held before the first round
(`_PairCuts`), and each candidate of either side is held to the whole program's least with
its best partner (two rows, remade each round with the prices found since); and when the
model's best plan values such a phase below its pair's floor, the consumer's class gets its
column of floors as one row valid for every plan (`_BoundModel.table_rows`).

Candidates: a plan's terms split into one floor per GEMM (`_floor`), so a candidate whose
floor plus every other GEMM's least exceeds `upper` (a program already found) cannot be in a
plan below it and is left out of the model; the least such sum over what was left out
(`outside`) still bounds those plans, and the bound is the smaller of it and the model's.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from ipuopt.backends import cpsat
from ipuopt.budget import Budget, Stopped
from ipuopt.errors import InputError
from ipuopt.exchange.bounds import group_bound
from ipuopt.exchange.timing import phase_timings
from ipuopt.layout.candidates import INPUT_LAYOUT, Cand, Catalogue
from ipuopt.layout.moves import PROBES, Moves
from ipuopt.layout.pricing import (
    Held,
    Lanes,
    home_pair_floor,
    inflow_floor,
    move_lanes,
    pair_cost,
    regions_aligned,
    row_pair_bound,
    row_pair_floor,
    unicast_lanes,
)
from ipuopt.layout.row_pairs import RowPairFloors
from ipuopt.layout.run_floors import Probes, grid_of, receive_floors
from ipuopt.params import SolveParams
from ipuopt.spec import Spec
from ipuopt.workloads.fragments import BOX, Grain, grain_name, lane_work
from ipuopt.workloads.gemm import PARTIAL_BYTES, Candidate
from ipuopt.workloads.geometry import homed, operand_home, operand_needs, reduction_sends
from ipuopt.workloads.phases import generate
from ipuopt.workloads.workload import Operator, Workload

MAX_CANDIDATES = 8000  # per GEMM in the model, on average; the rest are bounded by `outside`
_TOP = 10**12  # cycles: above any term
BULK = 8  # candidates priced ahead per GEMM phase at a time (`_BoundModel.ahead`)
AHEAD_S = 1.0  # seconds a round prices ahead at least
CUT_SHARE = 0.3  # of the time left, what the pair cuts may take before the model is first solved
FILL_SLICE = 0.5  # seconds each pair table is filled in turn (`_PairCuts.add`)
ROUND_SHARE = 0.4  # of the time left, what one round's model may take: its bound and best plan so far
# then (the tables' rows can make one model take minutes, and the rounds after it climb faster)
ROW_CLASSES = 64  # consumer classes with a term of their own in a row of a pair table (`table_row`):
# the rest share one (a row with every class slowed each round's model 2-3x)
CUT_CHUNK = 1 << 21  # (producer, consumer) pairs evaluated at once (`_BoundModel.cut`)


@dataclass
class ProgramBound:
    value: int  # no plan's program (any placement, any schedules) takes fewer cycles
    model: int  # the model's bound over the candidates it holds
    outside: int | None  # the least floor of a plan with a candidate left out (None: none)
    proven: bool  # the model was solved to optimality
    plan: dict[str, str]  # the plan at the model's best
    terms: list[dict[str, Any]]  # that plan's boundaries: compute, sync, exchange bound
    candidates: dict[str, int]  # per GEMM: held in the model / enumerated
    enumerated: dict[str, int]
    moves_priced: int = 0
    rounds: int = 0
    grain: Grain = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "model": self.model, "outside": self.outside,
                "proven": self.proven, "plan": self.plan, "terms": self.terms,
                "candidates": self.candidates, "enumerated": self.enumerated,
                "moves_priced": self.moves_priced, "rounds": self.rounds,
                "grain": grain_name(self.grain), "seconds": round(self.seconds, 1),
                "rule": ("every plan of candidates using at least the layout problem's share of "
                         "the tiles, any placement, any schedules: per boundary the largest "
                         "compute of one layout's steps, sync_cycles, and the largest of the "
                         "load bounds of the phase's parts, an input phase's row-pair bounds "
                         "and its generated transfers' group bound"),
                **({"notes": self.notes} if self.notes else {})}


@dataclass(frozen=True)
class _Terms:
    """A candidate's own figures: compute steps and load bounds of its own phases."""

    multiply: int
    reduce: int  # reduce-add of the partials (0 with P = 1)
    weights: int  # load bound of the broadcasts from homes (weights, prepared operands; input phase)
    inflow: int  # the input phase's floor (`pricing.inflow_floor`, `pricing.row_pair_floor`)
    reduction: int  # load bound of the reduction phase (0 with P = 1)
    parts: int
    elementwise: int  # one elementwise pass over the output where the candidate leaves it

    @property
    def last(self) -> int:
        """The compute step that opens the boundary after the candidate's phases."""
        return self.reduce if self.parts > 1 else self.multiply


def _terms(cat: Catalogue, op: Operator, c: Cand, largest: dict[str, int], memo: dict[tuple, int]) -> _Terms:
    """`memo`: input-phase floors by what they depend on (candidates differing only in their
    memory class or in how their partials split the output share them)."""
    why = c.doc["why"]
    rate = cat.spec.compute["elementwise_bytes_per_cycle"]
    passes = math.ceil(why["piece"] * cat.wl.elem_bytes / rate)  # as an elementwise candidate's
    if op.kind != "gemm":
        return _Terms(0, 0, 0, 0, 0, 1, passes)
    parts = c.source.layout.parts  # type: ignore[union-attr]
    add = cat.spec.compute["partial_add_bytes_per_cycle"]
    reduce = math.ceil((parts - 1) * why["piece"] * PARTIAL_BYTES / add) if parts > 1 else 0
    reduction = max(why["reduction"], _pair_reduction(cat, op, c)) if parts > 1 else 0
    lay = c.source.layout  # type: ignore[union-attr]
    key = (op.name, lay.rows, lay.cols, parts, c.source.batches_per_group)  # type: ignore[union-attr]
    if key not in memo:
        memo[key] = max(f(cat.wl, op, c.source, cat.spec, cat.grain, largest)  # type: ignore[arg-type]
                        for f in (inflow_floor, row_pair_floor, home_pair_floor))
    inflow = memo[key]
    # the broadcasts from homes (weights, prepared operands) share the input phase: the most
    homed = max(why["weights"], why.get("prepared", 0))
    return _Terms(c.doc["compute"] - reduce, reduce, homed, inflow, reduction, parts, passes)


def _pair_reduction(cat: Catalogue, op: Operator, c: Cand) -> int:
    """The pair bound of a reduction in closed form: tiles 0 and 1 (a pair on the specs that
    pair them) are grid tiles of group 0 and each sends every piece of its block but its own,
    A*B - 1 pieces at least (P - 1 when every partial owns one), each of at least the smallest
    piece's size."""
    spec, src = cat.spec, c.source
    assert src is not None
    lay = src.layout
    if src.tiles_used < 2 or spec.partner(0) != 1:
        return 0
    batch, m, k, n = cat.wl.gemm_dims(op)
    piece = src.batches_per_group * (m // lay.rows // lay.sub_a) * (n // lay.cols // lay.sub_b)
    if piece <= 0:
        return 0
    one = lane_work(np.ones(1, dtype=np.int64), np.array([piece * PARTIAL_BYTES]), cat.grain,
                    lambda w: pair_cost(w, spec), spec.exchange.word_bytes)
    return (lay.sub_a * lay.sub_b - 1) * int(one[0]) + spec.latency(0, 1)


class _Program:
    """The workload's heads (a GEMM, or an elementwise operator reading a graph input: the
    operators whose candidates are chosen; an elementwise operator keeps its input's layout)
    and when each output is last read."""

    def __init__(self, cat: Catalogue) -> None:
        self.cat = cat
        self.head: dict[str, str] = {}  # operator -> the head whose layout it keeps
        for op in cat.ops:
            src = cat.producer.get(op.inputs[0].tensor)
            follows = op.kind == "elementwise" and src is not None
            self.head[op.name] = self.head[src.name] if follows else op.name
        self.heads = [op for op in cat.ops if self.head[op.name] == op.name]
        self.gemms = [op for op in self.heads if op.kind == "gemm"]
        step = {op.name: k for k, op in enumerate(cat.ops)}
        # the last step at which each operator's output is read (its own when nobody reads it)
        self.last_read = {op.name: max((step[c] for c in cat.wl.consumers.get(op.out.tensor, [])),
                                       default=step[op.name]) for op in cat.ops}

    def layout_of(self, tensor: str) -> str | None:
        """The head whose candidate's output label is `tensor`'s layout (None: a graph input)."""
        src = self.cat.producer.get(tensor)
        return None if src is None else self.head[src.name]


def program_bound(wl: Workload, spec: Spec, grain: Grain = None, upper: int | None = None,
                  min_utilisation: float = 0.5, params: SolveParams | None = None,
                  fixed: dict[str, str] | None = None, say: Any = None,
                  catalogue: Catalogue | None = None, budget: Budget | None = None) -> ProgramBound:
    """The bound (see the module's docstring), within `budget` (or `params`' time limit).
    `fixed` (operator -> candidate id) bounds one plan instead: what the tests compare with
    that plan's program. `catalogue`: the workload's candidates from an earlier call (same
    spec, grain and share of tiles)."""
    t0 = time.perf_counter()
    params = params or SolveParams()
    budget = Budget.of(params.limit(), budget)
    say = say or (lambda _m: None)
    cat = catalogue or Catalogue(wl, spec, min_utilisation, grain, say, budget.check)
    cat.say, cat.check = say, budget.check  # a catalogue built earlier answered to its own clock
    prog, moves, terms, floors = _start(cat)
    least = {g: min(f) for g, f in floors.items()}
    cap, before, old = MAX_CANDIDATES, 0, None
    while True:
        building = time.perf_counter()
        chosen, out, truncated = _hold(cat, prog, floors, least, upper, fixed, min_utilisation, cap)
        try:
            taken, model = _model(cat, prog, moves, terms, chosen)
        except Stopped:  # asked to stop while holding more: the bound made before holds
            if old is None:
                raise
            break
        held, outside = taken, out
        if old is not None:
            model.inherit(old)
        left = budget.left()
        cuts = _PairCuts(moves, model)
        with contextlib.suppress(Stopped):  # asked to stop: what was cut so far holds
            cuts.add(time.perf_counter() + (math.inf if left is None else CUT_SHARE * left))
        built = time.perf_counter() - building
        best, proven, rounds, plan, converged = 0, False, 0, {}, False
        grow = False
        while not budget.is_set():
            rounds += 1
            solved, room = time.perf_counter(), budget.left()
            bound, proven, found = model.solve(params, budget, plan,
                                               None if room is None else max(AHEAD_S, ROUND_SHARE * room))
            solved = time.perf_counter() - solved
            best = max(best, bound)
            plan = found or plan
            unpriced = model.unpriced(found) if found else []
            unchecked = model.unchecked(found) if found else {}
            if not unpriced and not unchecked:
                converged = proven
                break
            room = budget.left()
            if truncated and outside is not None and best >= outside and (room is None or room > 2 * built):
                grow = True  # the candidates left out cap the bound: hold twice as many, if that
                break  # twice as large a build (and rounds after it) fits in the time left
            try:  # the best plan's prices, then the next candidates' own phases in floor order
                # for as long as the model took to solve (at least AHEAD_S): a round's solve and
                # its pricing each get about half of it
                _price(moves, model, unpriced)
                _price_generated(model, found, unchecked, budget.is_set)
                cuts.refresh()
                cuts.rows(found)
                began = time.perf_counter()
                while time.perf_counter() - began < max(AHEAD_S, solved):
                    if not _price(moves, model, model.ahead(BULK, found)):
                        break  # every candidate priced
            except Stopped:  # the bound so far holds: prices only ever raise it
                break
            say(f"program bound: round {rounds}, {best} cycles (its model solved in {solved:.1f} s); "
                f"{len(model.prices) + len(model.phases)} moves and phases priced")
        if not grow:
            break
        before = max(before, _capped(best, outside))
        cap, old = 2 * cap, model
        say(f"program bound: {before} cycles, capped by the candidates left out; up to {cap} held per GEMM "
            "on average")
    if best == math.inf and outside is None:
        raise InputError.one(wl.source, "", f"no plan fits {spec.name}'s memory")
    value = max(before, _capped(best, outside))
    return ProgramBound(value, best, outside, converged and (outside is None or outside >= best),
                        {g: held[g][i].doc["id"] for g, i in plan.items()},
                        model.split(plan) if plan else [], {g: len(held[g]) for g in floors},
                        {g: len(cat.cands[g]) for g in floors}, len(model.prices) + len(model.phases),
                        rounds, grain, time.perf_counter() - t0)


def _start(cat: Catalogue) -> tuple[_Program, Moves, dict[str, list[_Terms]], dict[str, list[int]]]:
    """The program's heads, the moves' floors whatever any producer leaves, each head
    candidate's terms and each GEMM candidate's least plan (`_floor`)."""
    prog = _Program(cat)
    moves = Moves(cat)
    moves.refresh(cat.cands, exact=False)
    sync = cat.spec.exchange.sync_cycles
    memo: dict[tuple, int] = {}
    terms = {op.name: [_terms(cat, op, c, moves.largest, memo) for c in cat.cands[op.name]]
             for op in prog.heads}
    floors: dict[str, list[int]] = {}
    for op in prog.gemms:
        prepared = {v for which, v in cat.inputs(op) if op.inputs[which].prepare}
        floors[op.name] = [_floor(t, c, sync, prepared)
                           for t, c in zip(terms[op.name], cat.cands[op.name], strict=True)]
    return prog, moves, terms, floors


def _model(cat: Catalogue, prog: _Program, moves: Moves, terms: dict[str, list[_Terms]],
           chosen: dict[str, list[int]]) -> tuple[dict[str, list[Cand]], _BoundModel]:
    """The candidates `chosen` per head and the model over them (the moves' floors refreshed
    for the producers held)."""
    taken = {g: [cat.cands[g][i] for i in idx] for g, idx in chosen.items()}
    moves.refresh({op.name: taken.get(prog.head[op.name], []) if op.kind == "elementwise"
                   else taken[op.name] for op in cat.ops}, exact=False)
    return taken, _BoundModel(cat, prog, taken, {g: [terms[g][i] for i in idx] for g, idx in chosen.items()},
                              cat.spec.exchange.sync_cycles)


def _capped(best: float, outside: int | None) -> int:
    """The model's bound, capped by the least floor of the candidates it left out."""
    return int(min(best, outside if outside is not None else math.inf))


def _hold(cat: Catalogue, prog: _Program, floors: dict[str, list[int]], least: dict[str, int],
          upper: int | None, fixed: dict[str, str] | None, min_utilisation: float, cap: int
          ) -> tuple[dict[str, list[int]], int | None, bool]:
    """The candidates the model holds per head: the named one (`fixed`), else of those that
    can be in a plan below `upper`, `cap` per GEMM on average, cheapest first by the least
    plan each can be in (its floor and every other GEMM's least): the GEMM whose candidates'
    floors climb slowest holds more, so that the least of those left out (what caps the
    bound) is as high as the model's size allows; the least floor of a plan with one left
    out (None: none), and whether `cap` left any out."""
    chosen: dict[str, list[int]] = {}
    outside: int | None = None
    total = sum(least.values())
    within: dict[str, list[int]] = {}
    for op in prog.heads:
        n = len(cat.cands[op.name])
        if fixed is not None:
            ids = [c.doc["id"] for c in cat.cands[op.name]]
            if op.name in fixed:
                if fixed[op.name] not in ids:
                    raise InputError.one("", op.name, f"no candidate {fixed[op.name]!r} of at least "
                                                      f"{min_utilisation:.0%} of the tiles")
                chosen[op.name] = [ids.index(fixed[op.name])]
                continue
        if op.name not in floors:
            chosen[op.name] = list(range(n))
            continue
        rest = total - least[op.name]
        order = sorted(range(n), key=lambda i: (floors[op.name][i], i))
        within[op.name] = [i for i in order if upper is None or floors[op.name][i] + rest <= upper]
        chosen[op.name] = within[op.name][:1]  # every GEMM holds its cheapest: a plan is there
    names = list(within)
    ranked = sorted((floors[g][i] - least[g], k, i) for k, g in enumerate(names) for i in within[g][1:])
    room = max(0, cap * len(names) - len(names))
    for _, k, i in ranked[:room]:
        chosen[names[k]].append(i)
    for g in within if fixed is None else ():
        if left := set(range(len(floors[g]))) - set(chosen[g]):
            first_out = min(floors[g][i] for i in left) + total - least[g]
            outside = first_out if outside is None else min(outside, first_out)
    return chosen, outside, len(ranked) > room


def _price(moves: Moves, model: _BoundModel, keys: list[tuple]) -> int:
    """Price the moves and phases `keys` not priced yet into the model; how many keys."""
    for key in keys:
        if key in model.prices or key in model.phases:
            continue
        moves.cat.check()
        if not isinstance(key[1], int):
            model.add(key, moves.price(*key))
        elif key[2] == "reduction":
            model.add(key, _reduction_price(moves, model, key[0], key[1]))
        else:
            model.add(key, _phase_price(moves, model, *key))
    return len(keys)


def _price_generated(model: _BoundModel, plan: dict[str, int], keys: dict[str, tuple],
                     enough: Callable[[], bool]) -> None:
    """Price the input phases `keys` of `plan` by their own transfers: generated with the
    plan's layouts at the bound's grain (those phases only), each price raised to the phase's
    group bound where higher. That bound holds under any placement on the phase without its
    memory elements (a placement moves buffers by multiples of the paired alignment: widths
    are the layout's), and it sees what lane loads cannot: a multicast holds all its receive
    lanes at once, so rows and the columns crossing them take turns. The price is valid for
    the key: a phase's transfers depend on the GEMM's candidate and the producers' layouts."""
    if not keys:
        return
    cat = model.cat
    model.generated.update((g, j, haves) for g, i, haves in keys.values() for j in model.twins[g][i])
    layouts = {g: model.held[g][i].source.layout for g, i in plan.items()  # type: ignore[union-attr]
               if model.held[g][i].source is not None}
    try:
        gen = generate(cat.wl, cat.spec, layouts, cat.grain, only=frozenset(keys), check=cat.check)
    except InputError:  # the generator's own addresses do not fit (first fit): priced by lanes only
        return
    for gp in gen.phases:
        if gp.phase.name in keys:
            cat.check()
            key = keys[gp.phase.name]
            bare = phase_timings(gp.phase, cat.spec, elements=False)
            cycles = group_bound(bare, cat.spec, enough=enough).value
            if cycles > model.phases.get(key, 0):
                model.add(key, cycles)


class _PairCuts:
    """The row-pair argument with the producer's cells known (`layout.row_pairs`) for every
    pair of held (producer layout, consumer candidate) of an input phase whose A a producer
    leaves and whose B is broadcast from its homes, a few milliseconds per producer layout. Held as
    pricing holds a pair, it would take a row per pair (millions; the plans near the model's
    best come in families that differ by one split, and the bound stalled on them); instead
    each side's candidate gets what the whole program costs at least with its best partner,
    every pair counted in numpy: two rows of one term per candidate."""

    def __init__(self, moves: Moves, model: _BoundModel) -> None:
        self.moves, self.model = moves, model
        self.cuts: list[_Cut] = []
        self.priced = -1

    def add(self, until: float) -> None:
        """The cuts of every such phase and preparation move. Their tables are filled a slice
        of time each in turn, one producer layout (cheapest first, as `_hold` orders them) at
        a time, so that a cheap table is not left out behind a costly one when the time is
        short; rows left when it is up keep a floor of 0, which any pair's other terms hold."""
        made = [t for t in (*map(self._input_table, self.model.boundaries),
                            *map(self._move_table, self.model.boundaries)) if t is not None]
        self.cuts += [cut for cut, _row in made]  # their tables as far as filled: valid
        labels = [list(cut.at) for cut, _row in made]  # each table's rows, in order
        done = [0] * len(made)
        while time.perf_counter() <= until and any(d < len(ls) for d, ls in zip(done, labels, strict=True)):
            for k, (cut, row) in enumerate(made):
                end = min(until, time.perf_counter() + FILL_SLICE)
                while done[k] < len(labels[k]) and time.perf_counter() <= end:
                    self.moves.cat.check()
                    cut.table[done[k]] = row(labels[k][done[k]])
                    done[k] += 1
        for (cut, _row), n in zip(made, done, strict=True):
            what = f"{cut.g}'s input phase" if cut.tensor is None else cut.phase.phase
            left = len(cut.at) - n
            self.moves.cat.say(f"program bound: {what} floored for {n} x {cut.table.shape[1]} layouts"
                               + (f" (no time for the other {left} producer layouts)" if left else ""))
        self.refresh()

    def _input_table(self, b: _Boundary) -> tuple[_Cut, Callable[[str], np.ndarray]] | None:
        """GEMM `b.gemm`'s input phase, when its A comes from another head and its B is
        multicast from its homes: the cut with an empty table, and how a producer layout's row
        is made (the row-pair floors against every class of consumer)."""
        moves, model = self.moves, self.model
        wl, cat = moves.wl, moves.cat
        if b.gemm is None or b.reduction or cat.grain == BOX:
            return None
        op = next(o for o in cat.ops if o.name == b.gemm)
        a = op.inputs[0].tensor
        src = model.prog.layout_of(a)
        if src is None or src == b.gemm or homed(wl, op, 0):
            return None
        g, cands = b.gemm, model.held[b.gemm]
        floors = RowPairFloors(wl, op, [c.source for c in cands], [c.doc["needs"][a] for c in cands],  # type: ignore[misc]
                               moves.needs_of, cat.spec, cat.grain, cat.check)
        if not floors.slotted:
            return None  # no candidate has row pairs (B not homed, one row, no partner homes)
        first: dict[int, int] = {}
        for i, k in enumerate(floors.alike):
            first.setdefault(k, i)
        picked = list(first.values())
        cut = self._cut(b, src, g, len(first), np.array(floors.alike), (g, False))
        return cut, lambda label: floors.against(moves.held_of(a, label), picked)

    def _move_table(self, b: _Boundary) -> tuple[_Cut, Callable[[str], np.ndarray]] | None:
        """A preparation phase's move (from a head's output into GEMM `g`'s homes): the cut
        with an empty table, and how a producer layout's row is made (the move's receive floor
        with the producer's cells known, `run_floors.receive_floors`, for every need layout at
        once; 0 where the layouts are one, or the producer's pieces are not a grid's cells)."""
        moves, model = self.moves, self.model
        cat, elem = moves.cat, moves.wl.elem_bytes
        if b.gemm is not None or len(b.moves) != 1 or cat.grain == BOX:
            return None
        ((src, g, t),) = b.moves
        if src is None or src == g:
            return None
        needs = [c.doc["needs"][t] for c in model.held[g]]
        kinds = list(dict.fromkeys(needs))
        of = {n: k for k, n in enumerate(kinds)}
        probes = Probes.of([moves.needs_of(n) for n in kinds],
                           [moves.probe_needs(n, PROBES[-1]) for n in kinds])

        def row(label: str) -> np.ndarray:
            grid = grid_of(moves.held_of(t, label), cat.spec, elem)
            out = np.zeros(len(kinds), dtype=np.int64) if grid is None else receive_floors(
                grid, probes, cat.spec, elem, cat.grain)
            if label in of:
                out[of[label]] = 0
            return out

        cut = self._cut(b, src, g, len(kinds), np.array([of[n] for n in needs]), (src, g, t))
        return cut, row

    def _cut(self, b: _Boundary, src: str, g: str, classes: int, cls: np.ndarray, key: tuple) -> _Cut:
        """A cut of boundary `b` between heads `src` and `g` with a table of 0s, a row per
        output layout of `src`'s held candidates in their order."""
        held = self.model.held[src]
        at = {label: n for n, label in enumerate(dict.fromkeys(c.doc["output"] for c in held))}
        lab = np.array([at[c.doc["output"]] for c in held])
        return _Cut(b, src, g, np.zeros((len(at), classes), dtype=np.int64), at, lab, cls, key)

    def rows(self, plan: dict[str, int]) -> None:
        """Each table's floors as rows of the model at `plan`'s pair (`_BoundModel.table_rows`):
        the input phases' and the preparation moves'."""
        for cut in self.cuts:
            self.model.table_rows(cut, plan[cut.src], plan[cut.g])

    def refresh(self) -> None:
        """The cuts again with the phases priced since (each a term of its pair's exchange)."""
        priced = self.model.revision
        if priced != self.priced:
            self.priced = priced
            for cut in self.cuts:
                self.model.cut(cut)


@dataclass
class _Cut:
    """Floors of `phase`'s exchange per pair: `table[lab[j], cls[i]]` for head `src`'s held
    candidate j (its output layout's row, `at` by label) and GEMM `g`'s held candidate i; `key`
    names the model's variable they floor: the input phase's exchange (GEMM, False) or the
    move's (producer, GEMM, tensor) of a preparation phase."""

    phase: _Boundary
    src: str
    g: str
    table: np.ndarray
    at: dict[str, int]
    lab: np.ndarray
    cls: np.ndarray
    key: tuple
    rows: dict[int, np.ndarray] = field(default_factory=dict)  # table row -> src's candidates

    @property
    def tensor(self) -> str | None:
        """The tensor a preparation move's cut moves (None: an input phase's cut)."""
        return self.key[2] if len(self.key) == 3 else None

    def of(self, row: int) -> np.ndarray:
        if row not in self.rows:
            self.rows[row] = np.flatnonzero(self.lab == row)
        return self.rows[row]


def _gemm(model: _BoundModel, g: str, i: int) -> tuple[Operator, Any]:
    """GEMM `g`'s operator and the layout of its held candidate `i`."""
    c = model.held[g][i].source
    assert c is not None
    return next(o for o in model.cat.ops if o.name == g), c


def _phase_price(moves: Moves, model: _BoundModel, g: str, i: int,
                 haves: tuple[tuple[str, str], ...]) -> int:
    """Load bound of GEMM `g`'s input phase with candidate `i`, its activations coming from
    the producers' layouts `haves`: the weight broadcast and every move on the same lanes,
    tile pairs' transmit lanes included, or the group bound's argument on a row's tile pairs
    (`pricing.row_pair_bound`) where larger."""
    cat = moves.cat
    wl, spec, grain = cat.wl, cat.spec, cat.grain
    op, c = _gemm(model, g, i)
    lanes = Lanes(spec, pairs=True)
    homes: dict[str, Held] = {}  # operands multicast from their homes: weights, prepared ones
    for which, v in enumerate(op.inputs):
        if homed(wl, op, which):
            wanted = operand_needs(wl, op, c, which, 0)
            homes[v.tensor] = Held.of(operand_home(wanted))
            move_lanes(homes[v.tensor], wanted, wl.elem_bytes, spec, grain, lanes)
    have = {t: INPUT_LAYOUT for _, t in cat.inputs(op)}
    for h, label in haves:
        for _, t in cat.inputs(op):
            if model.prog.layout_of(t) == h:
                have[t] = label
    for which, t in cat.inputs(op):
        if t not in homes and have[t] != model.held[g][i].doc["needs"][t]:
            move_lanes(moves.held_of(t, have[t]), operand_needs(wl, op, c, which, 0), wl.elem_bytes,
                       spec, grain, lanes)
    a = op.inputs[0].tensor
    held_a = homes[a] if a in homes else moves.held_of(a, have[a]) if a in have else None
    rows = row_pair_bound(wl, op, c, spec, grain, held_a) if held_a is not None else 0
    return max(lanes.bound(), rows)


def _reduction_price(moves: Moves, model: _BoundModel, g: str, i: int) -> int:
    """Load bound of GEMM `g`'s reduction with candidate `i` (`reduction_lanes`)."""
    op, c = _gemm(model, g, i)
    return reduction_lanes(moves.cat, op, c).bound()


def reduction_lanes(cat: Catalogue, op: Operator, c: Candidate) -> Lanes:
    """The lane work of a reduction, tile pairs' transmit lanes included: every partial
    piece to its owner (`geometry.reduction_sends`), each stored whole on its partial and
    received whole, so one run, paired only from an aligned offset (each owner's slot is)."""
    src, dst, elems, at = reduction_sends(cat.wl, op, c)
    return unicast_lanes(src, dst, elems * PARTIAL_BYTES, cat.spec, cat.grain, Lanes(cat.spec, pairs=True),
                         at * PARTIAL_BYTES)


def _floor(t: _Terms, c: Cand, sync: int, prepared: set[str]) -> int:
    """What a GEMM candidate adds to any program at least: each operand it prepares in a
    phase of its own (sync and the move's floor), its input phase (sync and the largest of
    its weight broadcast, its own floors and each other operand's move floor), its compute,
    and its reduction phase with its sync."""
    phase = max([t.weights, t.inflow, *(v for k, v in c.moves.items() if k not in prepared)])
    phase += sum(sync + c.moves[k] for k in prepared)
    return sync + phase + t.multiply + t.reduce + ((sync + t.reduction) if t.parts > 1 else 0)


@dataclass
class _Boundary:
    """One boundary of every plan: the phase (empty after the last), and what its compute, its
    sync and its exchange are at least, as (head, value per held candidate) items; `moves`
    are its moved operands (producer head or None for a graph input, consumer GEMM, tensor)."""

    phase: str
    gemm: str | None  # whose input or reduction phase it is
    reduction: bool
    compute: list[tuple[str, list[int]]]
    sync: list[tuple[str, list[int]]]
    exchange: list[tuple[str, list[int]]] = field(default_factory=list)
    moves: list[tuple[str | None, str, str]] = field(default_factory=list)


class _BoundModel:
    """The CP-SAT model over the held candidates; prices add constraints as they come."""

    def __init__(self, cat: Catalogue, prog: _Program, held: dict[str, list[Cand]],
                 terms: dict[str, list[_Terms]], sync: int) -> None:
        self.cat, self.prog, self.held, self.terms = cat, prog, held, terms
        self.prices: dict[tuple[str, str, str], int] = {}  # (tensor, have, need) -> a move's
        # load bound; (GEMM, candidate, ((producer head, its output label), ...)) -> the input
        # phase's, all its parts on the same lanes
        self.phases: dict[tuple[str, int, tuple[tuple[str, str], ...]], int] = {}
        self.boundaries = self._walk(sync)
        self.cursor: dict[tuple, int] = {}  # `ahead`: the next candidate per phase and producers
        self.own: dict[tuple[str, bool], dict[int, int]] = {}  # (GEMM, reduction?) -> prices
        self.changed: dict[tuple[str, bool], int] = {}  # how often each one's prices changed
        self.folded: dict[tuple[str, bool], int] = {}  # ... when the model's rows last held them
        self.revision = 0  # prices added or raised so far
        self.generated: set[tuple] = set()  # phases priced by their generated transfers
        # per GEMM and held candidate, the held ones of the same layout in any memory class
        # (one list shared by them, in index order): their phases take the same transfers at
        # the same widths when every region starts at a multiple of the paired alignment
        self.twins: dict[str, list[list[int]]] = {}
        aligned = regions_aligned(cat.spec)
        for g, cands in held.items():
            keys = [(replace(c.source.layout, weight_region=""), c.source.batches_per_group)
                    if aligned and c.source is not None else i for i, c in enumerate(cands)]
            same: dict[Any, list[int]] = {}
            for i, k in enumerate(keys):
                same.setdefault(k, []).append(i)
            self.twins[g] = [same[k] for k in keys]
        self.twin_lits: dict[tuple[str, int], Any] = {}
        self.rows_made: set[tuple[int, int]] = set()  # `table_rows`' (cut, class)
        self.class_lits: dict[tuple[int, int], Any] = {}
        self.valued: dict[tuple, int] = {}  # each phase's exchange and move in the last solution
        self._build()

    def ahead(self, n: int, plan: dict[str, int]) -> list[tuple]:
        """Up to `n` more candidates per GEMM phase (the model holds them cheapest floor
        first), priced before any plan asks so that the bound climbs faster: the reduction, and
        the input phase with what its producers leave in `plan` (the model's best plan, whose
        producers the next best plans often keep); and up to `n` more layouts of each producer
        against `plan`'s candidate (the next best plans often differ from it by one split of
        the producer: families that share the plateau, each needing its own price)."""
        out: list[tuple] = []
        for b in self.boundaries:
            g = b.gemm
            if g is None:
                continue
            haves = () if b.reduction else self.phase_key(b, plan)[2]  # type: ignore[index]
            at = self.cursor.get((g, b.reduction, haves), 0)
            picked = 0
            while at < len(self.held[g]) and picked < n:
                if not b.reduction or self.terms[g][at].parts > 1:
                    out.append((g, at, "reduction" if b.reduction else haves))
                    picked += 1
                at += 1
            self.cursor[(g, b.reduction, haves)] = at
            for k in range(len(haves)):
                out += self._producers(n, g, plan[g], haves, k)
        return out

    def _producers(self, n: int, g: str, i: int, haves: tuple, k: int) -> list[tuple]:
        """Up to `n` keys of GEMM `g`'s input phase with candidate `i` and the `k`-th producer's
        next output layouts (its held candidates in floor order, each label once)."""
        src = haves[k][0]
        cursor = ("producer", g, i, haves[:k], haves[k + 1:])
        at, out = self.cursor.get(cursor, 0), []
        while at < len(self.held[src]) and len(out) < n:
            key = (g, i, (*haves[:k], (src, self.held[src][at].doc["output"]), *haves[k + 1:]))
            if key not in self.phases and key not in out:
                out.append(key)
            at += 1
        self.cursor[cursor] = at
        return out

    def phase_key(self, b: _Boundary, plan: dict[str, int]) -> tuple[str, int, Any] | None:
        """What a phase's price depends on: the GEMM's candidate and, for its input phase, the
        layouts its producers leave (None: the plan has no such phase)."""
        g = b.gemm
        if g is None or (b.reduction and self.terms[g][plan[g]].parts == 1):
            return None
        if b.reduction:
            return g, plan[g], "reduction"
        return g, plan[g], tuple((src, self._have(src, plan)) for src, _, _ in b.moves if src is not None)

    def _walk(self, sync: int) -> list[_Boundary]:
        out: list[_Boundary] = []
        group: list[tuple[str, list[int]]] = []  # compute steps since the last phase
        terms = self.terms
        for op in self.cat.ops:
            h = self.prog.head[op.name]
            if op.kind != "gemm":
                _add_step(group, h, [tm.elementwise for tm in terms[h]])
                continue
            g, ts = op.name, terms[op.name]
            moved = []
            for which, t in self.cat.inputs(op):
                if op.inputs[which].prepare:  # a phase of its own: the move into its homes
                    out.append(_Boundary(f"{g}-{t}-preparation", None, False, group, [(g, [sync] * len(ts))],
                                         moves=[(self.prog.layout_of(t), g, t)]))
                    group = []
                else:
                    moved.append((self.prog.layout_of(t), g, t))
            reading_input = any(self.cat.wl.tensors[v.tensor].input for v in op.inputs)
            b = _Boundary(f"{g}-{'input' if reading_input else 'redistribution'}", g, False, group,
                          [(g, [sync] * len(ts))], [(g, [max(tm.weights, tm.inflow) for tm in ts])], moved)
            out.append(b)
            if any(tm.parts > 1 for tm in ts):
                out.append(_Boundary(f"{g}-reduction", g, True,
                                     [(g, [tm.multiply if tm.parts > 1 else 0 for tm in ts])],
                                     [(g, [sync if tm.parts > 1 else 0 for tm in ts])],
                                     [(g, [tm.reduction for tm in ts])]))
            group = [(g, [tm.last for tm in ts])]
        out.append(_Boundary("", None, False, group, []))
        return out

    def _have(self, src: str | None, plan: dict[str, int]) -> str:
        return INPUT_LAYOUT if src is None else self.held[src][plan[src]].doc["output"]

    def _price(self, t: str, have: str, c: Cand) -> int:
        """A move's exact load bound once priced, its floor until then."""
        need = c.doc["needs"][t]
        return 0 if have == need else self.prices.get((t, have, need), c.moves[t])

    def unpriced(self, plan: dict[str, int]) -> list[tuple]:
        """The phases of `plan` and the moves in them not priced yet."""
        keys = [self.phase_key(b, plan) for b in self.boundaries]
        out: list[tuple] = [k for k in keys if k is not None and k not in self.phases]
        for b in self.boundaries:
            for src, g, t in b.moves:
                key = (t, self._have(src, plan), self.held[g][plan[g]].doc["needs"][t])
                if key[1] != key[2] and key not in self.prices:
                    out.append(key)
        return out

    def unchecked(self, plan: dict[str, int]) -> dict[str, tuple]:
        """The input phases of `plan` not priced by their generated transfers yet, by name (a
        reduction has no multicast: its lane price is its endpoint and pair bounds already)."""
        keys = {b.phase: self.phase_key(b, plan) for b in self.boundaries if not b.reduction}
        return {name: k for name, k in keys.items() if k is not None and k not in self.generated}

    def split(self, plan: dict[str, int]) -> list[dict[str, Any]]:
        """The plan's boundaries as the model counts them."""
        def at(items: list[tuple[str, list[int]]]) -> int:
            return max((v[plan[h]] for h, v in items), default=0)

        def moved(src: str | None, g: str, t: str) -> int:
            return self._price(t, self._have(src, plan), self.held[g][plan[g]])

        def phase(b: _Boundary) -> int:
            key = self.phase_key(b, plan)
            return 0 if key is None else self.phases.get(key, 0)

        return [{"phase": b.phase or "(final compute)", "compute": at(b.compute), "sync": at(b.sync),
                 "exchange": max([at(b.exchange), phase(b), *(moved(*mv) for mv in b.moves)])}
                for b in self.boundaries if not b.phase or at(b.sync)]

    def _build(self) -> None:
        """The model, built once: one-hot choice, memory rows, and per boundary a compute and
        an exchange variable at least each of its parts (each move a variable at least its
        floor); prices found later only add constraints (`add`)."""
        m = self.m = cp_model.CpModel()
        x = self.x = {h: [m.new_bool_var(f"x_{h}_{i}") for i in range(len(cs))]
                      for h, cs in self.held.items()}
        for xs in x.values():
            m.add_exactly_one(xs)
        self._memory(m, x)
        self.labels: dict[tuple[str, str, str], Any] = {}
        self.move_vars: dict[tuple[str | None, str, str], Any] = {}
        self.exchange_vars: dict[tuple[str, bool], Any] = {}  # (GEMM, reduction?) -> its phase's

        def expr(h: str, values: list[int]) -> Any:
            return sum(v * lit for v, lit in zip(values, x[h], strict=True) if v)

        def at_least(items: list[tuple[str, list[int]]]) -> Any:
            var = m.new_int_var(0, _TOP, "")
            for h, v in items:
                m.add(var >= expr(h, v))
            return var

        objective = []
        for b in self.boundaries:
            objective.append(at_least(b.compute))
            objective.extend(expr(h, v) for h, v in b.sync)
            exchange = at_least(b.exchange)
            for src, g, t in b.moves:
                move = self.move_vars[(src, g, t)] = at_least([(g, [c.moves[t] for c in self.held[g]])])
                m.add(exchange >= move)
            if b.gemm is not None:
                self.exchange_vars[(b.gemm, b.reduction)] = exchange
            objective.append(exchange)
        self.total = sum(objective)
        m.minimize(self.total)

    def cut(self, cut: _Cut) -> None:
        """Pair cuts between heads `cut.src` and `cut.g` (`_PairCuts`): every boundary's terms as
        the model counts them at least (a third head's at its least), `cut.phase`'s exchange
        also at least its pair's floor in `cut` or its price; then the program is at least each
        candidate's least over its partners."""
        phase, src, g = cut.phase, cut.src, cut.g
        priced: dict[int, list[tuple[int, int]]] = {}  # g's candidate -> (table row, its pair's price)
        if (t := cut.tensor) is not None:  # a move's: its prices by need label, for every candidate with it
            by_need: dict[str, list[tuple[int, int]]] = {}
            for (t2, have, need), cycles in self.prices.items():
                if t2 == t and have in cut.at:
                    by_need.setdefault(need, []).append((cut.at[have], cycles))
            for i, c in enumerate(self.held[g]):
                if c.doc["needs"][t] in by_need:
                    priced[i] = by_need[c.doc["needs"][t]]
        for (g2, i, haves), cycles in self.phases.items() if t is None else ():
            if g2 == g and isinstance(haves, tuple) and len(haves) == 1 and haves[0][0] == src \
                    and haves[0][1] in cut.at:
                priced.setdefault(i, []).append((cut.at[haves[0][1]], cycles))
        sides = (src, g)
        n = {h: len(self.held[h]) for h in sides}
        alone = {h: np.zeros(n[h], dtype=np.int64) for h in sides}  # terms of one side
        const = 0  # terms of neither
        coupled: list[tuple[np.ndarray, np.ndarray, int, bool]] = []  # max(side j, side i, rest[, table])
        for b in self.boundaries:
            for h, v in b.sync:
                if h in sides:
                    alone[h] += np.asarray(v, dtype=np.int64)
                else:
                    const += min(v, default=0)
            for items, paired in ((b.compute, False), (self._exchange_items(b), b is phase)):
                per = {h: [np.asarray(v, dtype=np.int64) for h2, v in items if h2 == h] for h in sides}
                side = {h: np.max(per[h], axis=0) if per[h] else np.zeros(n[h], dtype=np.int64)
                        for h in sides}
                rest = max((min(v, default=0) for h, v in items if h not in sides), default=0)
                if paired or (per[src] and per[g]):
                    coupled.append((side[src], side[g], rest, paired))
                elif per[src] or per[g]:
                    h = src if per[src] else g
                    alone[h] += np.maximum(side[h], rest)
                else:
                    const += rest
        best_i = np.empty(n[g], dtype=np.int64)
        best_j = np.full(n[src], np.iinfo(np.int64).max, dtype=np.int64)
        step = max(1, CUT_CHUNK // n[src])
        for at in range(0, n[g], step):
            self.cat.check()
            i = np.arange(at, min(n[g], at + step))
            total = alone[src][:, None] + alone[g][None, i] + const
            for vj, vi, rest, paired in coupled:
                term = np.maximum(np.maximum(vj[:, None], vi[None, i]), rest)
                if paired:
                    term = np.maximum(term, cut.table[cut.lab[:, None], cut.cls[None, i]])
                    for k in set(priced).intersection(i.tolist()):
                        for row, cycles in priced[k]:
                            js = cut.of(row)
                            term[js, k - at] = np.maximum(term[js, k - at], cycles)
                total += term
            best_i[i] = total.min(axis=0)
            np.minimum(best_j, total.min(axis=1), out=best_j)
        self.m.add(self.total >= sum(int(v) * x for v, x in zip(best_i, self.x[g], strict=True)))
        self.m.add(self.total >= sum(int(v) * x for v, x in zip(best_j, self.x[src], strict=True)))

    def table_rows(self, cut: _Cut, j: int, i: int) -> None:
        """`cut.phase`'s exchange (a preparation move's: the move) at least its pair's floor in
        `cut.table` = T for GEMM candidate `i`'s class c, whatever the producer's layout, by one
        row (made once) that holds for every plan (`table_row`): exchange >= sum_r a[r]
        [layout r] + sum_k b[k] [class k]. A move's row has a term per output layout of the
        producer (its literal, shared by every row): with a term for each of 11,000 producer
        candidates on attention CP-SAT's rounds were slow and erratic (13 s, then past a
        minute without a better bound). An input phase's row keeps a term per candidate: by
        layout, vitb-mlp's rounds were slower (10 in 90 s against 16). Made only when the
        model valued that phase below the pair's floor with producer candidate `j` (a cut the
        last solution breaks; the others slowed the model for nothing). One row rules out
        what pricing takes a pair a round for (every pair would be millions of rows); the row
        enforced by the class's literal instead left CP-SAT's relaxation too weak to prove a
        round's model in time."""
        c = int(cut.cls[i])
        if (id(cut), c) in self.rows_made or cut.table[cut.lab[j], c] <= self.valued[cut.key]:
            return  # made, or the plan it was asked for already counts that floor: not cut off
        self.rows_made.add((id(cut), c))
        rows, cols = table_row(cut.table, c, ROW_CLASSES)
        least = int(cols.min(initial=0))  # one literal for the classes at it: sum_k least [class k] = least
        if cut.tensor is None:
            var = self.exchange_vars[cut.key]
            producer = sum(int(v) * x for v, x in zip(rows[cut.lab], self.x[cut.src], strict=True) if v)
        else:
            var = self.move_vars[cut.key]
            producer = sum(int(rows[r]) * self._chosen(cut.src, "output", label)
                           for label, r in cut.at.items() if rows[r])
        self.m.add(var >= producer + sum(int(cols[k] - least) * self._class(cut, k)
                         for k in np.flatnonzero(cols > least).tolist()) + least)

    def _class(self, cut: _Cut, k: int) -> Any:
        """A literal: GEMM `cut.g`'s candidate is of class `k` in `cut`."""
        if (id(cut), k) not in self.class_lits:
            lit = self.class_lits[(id(cut), k)] = self.m.new_bool_var("")
            self.m.add(lit == sum(self.x[cut.g][i] for i in np.flatnonzero(cut.cls == k).tolist()))
        return self.class_lits[(id(cut), k)]

    def _exchange_items(self, b: _Boundary) -> list[tuple[str, list[int]]]:
        """What boundary `b`'s exchange is at least in the model, per head: its parts, its
        moves' floors and the phases priced for a candidate alone."""
        out = list(b.exchange)
        out += [(g, [c.moves[t] for c in self.held[g]]) for _, g, t in b.moves]
        if b.gemm is not None and (b.gemm, b.reduction) in self.own:
            own = self.own[(b.gemm, b.reduction)]
            out.append((b.gemm, [own.get(i, 0) for i in range(len(self.held[b.gemm]))]))
        return out

    def inherit(self, old: _BoundModel) -> None:
        """The prices a model holding fewer candidates found (its candidates are among these)."""
        for key, cycles in old.prices.items():
            self.add(key, cycles)
        at = {g: {id(c): k for k, c in enumerate(cs)} for g, cs in self.held.items()}
        for (g, i, haves), cycles in old.phases.items():
            k = at[g].get(id(old.held[g][i]))
            if k is not None:
                self.add((g, k, haves), cycles)

    def _chosen(self, h: str, key: str, value: str) -> Any:
        """A literal: the head's candidate has this output label (`key` "output") or needs
        input `key` in this layout."""
        if (h, key, value) not in self.labels:
            lit = self.labels[(h, key, value)] = self.m.new_bool_var("")
            self.m.add(lit == sum(v for v, c in zip(self.x[h], self.held[h], strict=True)
                                  if key_of(c, key) == value))
        return self.labels[(h, key, value)]

    def add(self, key: tuple, cycles: int) -> None:
        """A price found: a move's (tensor, have, need) or an input phase's (GEMM, candidate,
        producers' layouts); the model's variables are at least it when the plan has it."""
        self.revision += 1
        if isinstance(key[1], int):
            g, i, haves = key
            twins = self.twins[g][i]
            for j in twins:  # the same layout in another memory class: the same price
                self.phases[(g, j, haves)] = cycles
            reduction = haves == "reduction"
            if reduction or not haves:  # the candidate's alone: folded into one row (`_fold`)
                self.own.setdefault((g, reduction), {}).update(dict.fromkeys(twins, cycles))
                self.changed[(g, reduction)] = self.changed.get((g, reduction), 0) + 1
                return
            self.m.add(self.exchange_vars[(g, reduction)] >= cycles).only_enforce_if(
                [self._twin(g, i), *(self._chosen(h, "output", a) for h, a in haves)])
            return
        t, have, need = key
        self.prices[key] = cycles
        for (src, g, t2), var in self.move_vars.items():
            if t2 != t:
                continue
            lits = [self._chosen(g, t, need)]
            if src is not None:
                lits.append(self._chosen(src, "output", have))
            self.m.add(var >= cycles).only_enforce_if(lits)

    def _twin(self, g: str, i: int) -> Any:
        """A literal: GEMM `g`'s candidate is `i` or one of its twins."""
        twins = self.twins[g][i]
        if len(twins) == 1:
            return self.x[g][i]
        if (g, twins[0]) not in self.twin_lits:
            lit = self.twin_lits[(g, twins[0])] = self.m.new_bool_var("")
            self.m.add(lit == sum(self.x[g][j] for j in twins))
        return self.twin_lits[(g, twins[0])]

    def _fold(self) -> None:
        """Phases priced for a candidate alone (a reduction, an input phase fed by graph
        inputs only): one row per phase, the exchange at least the chosen candidate's price
        (one-hot choice), added again when more are priced; lighter for CP-SAT than one
        enforced row per price."""
        for (g, reduction), prices in self.own.items():
            if self.folded.get((g, reduction)) != self.changed[(g, reduction)]:
                self.m.add(self.exchange_vars[(g, reduction)]
                           >= sum(c * self.x[g][i] for i, c in prices.items()))
                self.folded[(g, reduction)] = self.changed[(g, reduction)]

    def solve(self, params: SolveParams, budget: Budget, hint: dict[str, int] | None = None,
              seconds: float | None = None) -> tuple[int, bool, dict[str, int]]:
        """The model's bound, whether proven optimal, and its best plan ({} when none), in at
        most `seconds` (else what `budget` has left)."""
        self._fold()
        self.m.clear_hints()
        for h, i in (hint or {}).items():
            for j, v in enumerate(self.x[h]):
                self.m.add_hint(v, i == j)
        solver = cpsat.new_solver(params, budget, None if seconds is None else min(seconds, budget.limit()))
        code = cpsat.solve(self.m, solver)
        if code == cp_model.INFEASIBLE:
            return math.inf, True, {}  # type: ignore[return-value]
        bound = int(math.ceil(solver.best_objective_bound - 1e-6))
        if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return bound, False, {}
        plan = {h: next(i for i, v in enumerate(xs) if solver.boolean_value(v)) for h, xs in self.x.items()}
        self.valued = {k: solver.value(v) for k, v in (*self.exchange_vars.items(), *self.move_vars.items())}
        return bound, code == cp_model.OPTIMAL, plan

    def _memory(self, m: cp_model.CpModel, x: dict[str, list[Any]]) -> None:
        """At each step the running operator's bytes and every output still to be read fit
        each region (the layout problem's memory rows, in head candidates)."""
        prog = self.prog
        capacity = {r.name: r.size for r in self.cat.spec.regions}
        for k, op in enumerate(self.cat.ops):
            h = prog.head[op.name]
            parts = [(h, "memory" if h == op.name else "holds")]
            parts += [(prog.head[p.name], "holds") for p in self.cat.ops[:k] if prog.last_read[p.name] >= k]
            rows: dict[str, list[Any]] = {}
            for h, field_ in parts:
                for v, c in zip(x[h], self.held[h], strict=True):
                    for r, nbytes in c.doc[field_].items():
                        if nbytes:
                            rows.setdefault(r, []).append(nbytes * v)
            for r, terms in rows.items():
                m.add(sum(terms) <= capacity[r])


def table_row(table: np.ndarray, c: int, keep: int) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients (a, b) with a[r] + b[k] <= table[r, k] everywhere, equal on column `c`: a
    row of the model that holds for every pair and is exact for that column. b is -max(a)
    (never above what holds, the table being at least 0) but on column `c` and the `keep` - 1
    other columns where it is highest, so that the row needs one term for all the rest
    (`_BoundModel.table_rows`)."""
    a = table[:, c]
    b = (table - a[:, None]).min(axis=0)
    order = np.argsort(-b, kind="stable")
    b[order[order != c][max(0, keep - 1):]] = -int(a.max(initial=0))
    return a, b


def _add_step(group: list[tuple[str, list[int]]], h: str, values: list[int]) -> None:
    """A compute step of head `h` after those in `group`: one head's steps run on the same
    tiles, its layout's, one after the other, and each is largest on the tile holding the
    largest piece (a multiply's block, a reduce-add's or an elementwise pass's piece): their
    sum is what that tile computes at least. Steps of different heads stay apart (the
    boundary's compute is at least the largest)."""
    for k, (h2, v) in enumerate(group):
        if h2 == h:
            group[k] = (h, [a + b for a, b in zip(v, values, strict=True)])
            return
    group.append((h, values))


def key_of(c: Cand, key: str) -> str:
    """A candidate's output label (`key` "output") or the label it needs input `key` in."""
    return c.doc["output"] if key == "output" else c.doc["needs"][key]
