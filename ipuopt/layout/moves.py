"""Pricing moves between layouts: each candidate's least input moves (exact from a graph
input, else a floor), the redistribution rows a plan within the limit could use, and the
greedy re-pricing of what was kept (`--exchange greedy`)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ipuopt.budget import Stopped
from ipuopt.layout.candidates import INPUT_LAYOUT, Cand, Catalogue
from ipuopt.layout.pricing import Held, input_held, move_bounds, move_floor, output_held
from ipuopt.layout.pruning import floors_of
from ipuopt.layout.run_floors import Probes, grid_of, receive_floors
from ipuopt.layout.ties import Ties
from ipuopt.workloads.fragments import BOX
from ipuopt.workloads.geometry import home_needs, operand_needs
from ipuopt.workloads.records import Need

BATCH = 8192  # held pieces x needs' lists priced in one pass: few for large layouts
# receiving tiles of the two probes a pair must pass before it is priced: the tiles that need the
# most (chosen once per need layout: cheap, rules out most pairs), then those that receive the most
# of this very move (most of the rest)
PROBES = (1, 8)
SPREAD = 16  # moves priced in one pass below which a held layout's pairs are probed by `busiest`
CHECK_EVERY = 1 << 16  # pairs looked at between two questions to the clock (`Moves._pairs`)


class Moves:
    """Moves priced so far (held layouts, need boxes and exact input moves cached)."""

    def __init__(self, cat: Catalogue) -> None:
        self.cat = cat
        self.wl, self.spec, self.grain = cat.wl, cat.spec, cat.grain
        self.held: dict[tuple[str, str], Held] = {}
        self.need_boxes: dict[str, Any] = {}
        self.exact: dict[tuple[str, str], int] = {}  # (graph input, need label) -> cycles
        self.alike: dict[tuple, int] = {}
        self.pairs_priced = 0
        self.pairs_probed = 0
        self.pairs_floored = 0
        self.probes: dict[tuple[str, int], list[Need]] = {}  # (need label, tiles) -> `probe_needs`
        self.need_arrays: dict[str, tuple[np.ndarray, ...]] = {}  # `busiest`'s, per need label
        self.held_index: dict[tuple[str, str], tuple] = {}  # `busiest`'s, per held layout
        self.largest: dict[str, int] = {}  # tensor -> most elements one tile holds (`refresh`)
        self.scheduled = 0

    def refresh(self, cands: dict[str, list[Cand]], exact: bool = True) -> None:
        """Each candidate's least input moves, given the layouts its producers can still
        leave: priced exactly from a graph input (its layout is fixed), else the floor of a
        tile that holds at most the largest piece any kept producer candidate leaves."""
        largest: dict[str, int] = {t: self.held_of(t, INPUT_LAYOUT).largest()
                                   for t in self.wl.tensors if self.wl.tensors[t].input}
        for op in self.cat.ops:
            largest[op.out.tensor] = max((c.doc["why"]["piece"] for c in cands[op.name]), default=0)
        self.largest = largest
        for op in self.cat.ops:
            for which, t in self.cat.inputs(op) if op.kind == "gemm" else ():
                for i, c in enumerate(cands[op.name]):
                    if i % 256 == 0:
                        self.cat.check()
                    n = c.doc["needs"][t]
                    if t in self.cat.producer or not exact:
                        c.moves[t] = move_floor(*c.blocks[t], largest[t], self.wl.elem_bytes, self.spec)
                    else:
                        if (t, n) not in self.exact:  # alike needs of one input cost alike
                            alike = (t, n.split(":", 1)[1], which, op.inputs[which], self.wl.gemm_dims(op))
                            if alike not in self.alike:
                                self.alike[alike] = self.price(t, INPUT_LAYOUT, n)
                            self.exact[(t, n)] = self.alike[alike]
                            if len(self.exact) % 200 == 0:
                                self.cat.say(f"{len(self.exact)} moves of graph inputs priced")
                        c.moves[t] = self.exact[(t, n)]

    def price(self, t: str, have: str, need: str) -> int:
        """The move bound of `t` from layout `have` into need label `need`."""
        self.cat.check()
        self.pairs_priced += 1
        return move_bounds(self.held_of(t, have), [self.needs_of(need)], self.wl.elem_bytes, self.spec,
                           self.grain)[0]

    def held_of(self, tensor: str, label: str) -> Held:
        """Where `tensor` is when in layout `label` (graph inputs all share the label `rows`)."""
        key = (tensor, label)
        if key not in self.held:
            if tensor in self.cat.producer:
                op, c = self.cat.origin[label]
                self.held[key] = output_held(self.wl, op, c)
            else:
                self.held[key] = input_held(self.wl, tensor, self.spec)
        return self.held[key]

    def rows(self, cands: dict[str, list[Cand]], limit: float, left: Callable[[], float | None] | None = None,
             ties: Ties | None = None) -> list[dict[str, Any]]:
        """Priced moves between kept layouts that a plan within `limit` could use. A pair is
        first floored by its runs (`run_floors`), then probed (`probe_needs`: its move's price
        as seen by a few receiving tiles), neither ever above the price: most pairs are ruled
        out so, and only the rest are priced.
        The moves out of one held layout are probed and priced together (`move_bounds`), up to
        `BATCH` needs' boxes at a time. With `left` (seconds left, or None), a stage that the
        first pairs' pace shows will not end in time stops at once (`Stopped`) rather than when
        the time is gone. `ties` (`layout.ties`) tell what a plan through each pair costs
        besides the move, and the move's floor from the producer's class."""
        todo = list(self._pairs(cands, limit, ties))
        unpriced = [i for i, row in enumerate(todo) if row[4] is None]
        if limit < math.inf and self.grain != BOX:  # floors counting runs, many pairs a call, rule
            # most pairs out first (a whole box is one transfer: rows are not runs)
            seen = self.run_floors(todo, unpriced)
            self.pairs_floored += len(seen)
            unpriced = [i for i in unpriced if todo[i][3] + seen.get(i, 0) <= limit]
        stages = zip((lambda row, k: self.probe_needs(row[2], k), self.busiest), PROBES, (64, 16),
                     strict=False)  # as many stages as PROBES gives tiles for
        for probe, tiles, lists in stages if limit < math.inf else ():  # (the reference's few: priced)
            ids = unpriced if probe != self.busiest else [i for i in unpriced if self._spread(todo[i])]
            seen = self._bounds(todo, ids, lambda row, f=probe, k=tiles: f(row, k), left, "probe", lists)
            unpriced = [i for i in unpriced if todo[i][3] + seen.get(i, 0) <= limit]
            self.pairs_probed += len(seen)
        priced = self._bounds(todo, unpriced, lambda row: self.needs_of(row[2]), left, "price")
        self.pairs_priced += len(priced)
        rows: list[dict[str, Any]] = []
        for i, (t, o, n, others, cycles) in enumerate(todo):
            cycles = priced.get(i, math.inf) if cycles is None else cycles
            if others + cycles <= limit:
                rows.append({"tensor": t, "from": o, "to": n, "cycles": cycles})
        return rows

    def run_floors(self, todo: list[tuple], ids: list[int]) -> dict[int, int]:
        """The run floor (`layout.run_floors`) of the pairs `ids` of `todo` whose producer's
        pieces form a grid: per held layout, every need label paired with it in one call."""
        by_tensor: dict[str, list[int]] = {}
        for i in ids:
            if todo[i][0] in self.cat.producer:
                by_tensor.setdefault(todo[i][0], []).append(i)
        out: dict[int, int] = {}
        for t, mine in by_tensor.items():
            labels = sorted({todo[i][2] for i in mine})
            at = {n: k for k, n in enumerate(labels)}
            probes = Probes.of([self.needs_of(n) for n in labels],
                               [self.probe_needs(n, PROBES[-1]) for n in labels])
            layouts: dict[str, int] = {}
            held = np.array([layouts.setdefault(todo[i][1], len(layouts)) for i in mine])
            by_layout = np.argsort(held, kind="stable")  # each held layout's pairs together
            order = np.asarray(mine)[by_layout]
            label = np.array([at[todo[i][2]] for i in mine])[by_layout]
            ends = np.cumsum(np.bincount(held, minlength=len(layouts)))
            for o, k in layouts.items():
                self.cat.check()
                grid = grid_of(self.held_of(t, o), self.spec, self.wl.elem_bytes)
                if grid is None:
                    continue
                span = slice(ends[k - 1] if k else 0, ends[k])
                which, of = np.unique(label[span], return_inverse=True)
                values = receive_floors(grid, probes.subset(which), self.spec, self.wl.elem_bytes, self.grain)
                out.update(zip(order[span].tolist(), values[of].tolist(), strict=True))
        return out

    def _bounds(self, todo: list[tuple], ids: list[int], needs_of: Callable[[tuple], list[Need]],
                left: Callable[[], float | None] | None, what: str, lists: int = 1) -> dict[int, int]:
        """`move_bounds` of the pairs `ids` of `todo` into the needs `needs_of` gives each pair, one
        pass per held layout and batch (`lists` times `BATCH` lists of needs per held piece)."""
        batches: dict[tuple[str, str], list[int]] = {}  # (tensor, held layout) -> its pairs
        for i in ids:
            batches.setdefault(todo[i][:2], []).append(i)
        out: dict[int, int] = {}
        t0, looked = time.perf_counter(), False

        def in_time() -> None:  # once past one-time costs: will the rest fit in what is left?
            nonlocal looked
            self.cat.check()
            if left is None or looked or len(out) < max(64, len(ids) // 20):
                return
            looked, room = True, left()
            if room is not None and (time.perf_counter() - t0) / len(out) * (len(ids) - len(out)) > room:
                self.cat.say(f"{len(ids) - len(out)} moves to {what}: more than the {room:.0f} s left")
                raise Stopped

        for (t, o), mine in batches.items():
            # each held layout made when its pairs are priced, not all first: an attention
            # block has thousands, and making them all took minutes without asking the clock
            in_time()
            held = self.held_of(t, o)
            size = max(1, BATCH * lists // max(1, len(held.tiles)))
            for at in range(0, len(mine), size):
                in_time()
                part = mine[at:at + size]
                out.update(zip(part, move_bounds(held, [needs_of(todo[i]) for i in part],
                                                 self.wl.elem_bytes, self.spec, self.grain), strict=True))
        return out

    def needs_of(self, need: str) -> list[Need]:
        """What the candidates of need label `need` receive."""
        if need not in self.need_boxes:
            nop, which, nc = self.cat.needs[need]
            wanted = operand_needs(self.wl, nop, nc, which, 0)
            self.need_boxes[need] = home_needs(wanted) if nop.inputs[which].prepare else wanted
        return self.need_boxes[need]

    def probe_needs(self, need: str, tiles: int) -> list[Need]:
        """The needs of `tiles` receiving tiles alone, spread over those that need the most: a
        move into them is part of the whole move (the same pieces to fewer tiles), so its price
        is never above the whole move's, and receiving lanes are what moves wait on."""
        if (need, tiles) not in self.probes:
            tile, box, lo, hi = self._need_arrays(need)
            volume = np.bincount(tile, weights=np.prod(hi - lo, axis=1)[box], minlength=self.spec.tiles)
            volume[np.bincount(tile, minlength=self.spec.tiles) == 0] = -1  # tiles that need none
            busiest = np.flatnonzero(volume == volume.max()).tolist() if len(tile) else []  # sorted
            chosen = set(busiest[:: max(1, -(-len(busiest) // tiles))])
            self.probes[(need, tiles)] = _only(self.needs_of(need), chosen)
        return self.probes[(need, tiles)]

    def busiest(self, row: tuple, tiles: int) -> list[Need]:
        """The needs of the `tiles` tiles whose receive lanes this move loads the most, alone: a
        probe fitted to the pair. A tile's load is estimated as the runs it receives (a need box
        is cut by the held pieces' boundaries, and a row of it is a run unless whole rows line
        up) at the lead each, plus the payload of what it does not hold already."""
        held, needs = self.held_of(*row[:2]), self.needs_of(row[2])
        tile, need, lo, hi = self._need_arrays(row[2])
        order, sorted_tiles, edges = self._held_index(*row[:2])
        first = np.searchsorted(sorted_tiles, tile, "left")
        count = np.searchsorted(sorted_tiles, tile, "right") - first
        entry = np.repeat(np.arange(len(tile)), count)  # (need, tile) entry of each piece that tile holds
        piece = order[np.repeat(first - np.cumsum(count) + count, count) + np.arange(count.sum())]
        box = need[entry]
        common = np.clip(np.minimum(held.hi[piece], hi[box]) - np.maximum(held.lo[piece], lo[box]), 0, None)
        gets = np.prod(hi - lo, axis=1)[need] - np.bincount(entry, weights=common.prod(axis=1),
                                                               minlength=len(tile))
        # per dimension: the held pieces' boundaries strictly inside each need box, plus one
        cut = [np.searchsorted(e, hi[:, d], "left") - np.searchsorted(e, lo[:, d], "right") + 1
               for d, e in enumerate(edges)]
        runs = cut[0] * (hi[:, 1] - lo[:, 1]) * cut[2]
        lead = self.spec.exchange.rx_lead
        load = lead * runs[need] * (gets > 0) + gets * self.wl.elem_bytes / self.spec.exchange.word_bytes
        per_tile = np.bincount(tile, weights=load, minlength=self.spec.tiles)
        return _only(needs, set(np.argsort(-per_tile, kind="stable")[:tiles].tolist()))

    def _spread(self, row: tuple) -> bool:
        """Whether the held layout of `row` is spread over so many tiles that few of its moves
        are priced in one pass (under `SPREAD`): then `busiest`, a pass per pair, is the cheaper
        way to rule a pair out; on fewer tiles pricing passes many pairs at once and costs about
        as much (test64's attention block: the probe took 10 s and spared 1 s of pricing)."""
        return BATCH // max(1, len(self.held_of(*row[:2]).tiles)) < SPREAD

    def _need_arrays(self, need: str) -> tuple[np.ndarray, ...]:
        """(tile, need index, lo, hi) of each (need box, tile) entry of need label `need`."""
        if need not in self.need_arrays:
            needs = self.needs_of(need)
            self.need_arrays[need] = (
                np.array([t for n in needs for t in n.tiles], dtype=np.int64),
                np.repeat(np.arange(len(needs)), [len(n.tiles) for n in needs]),
                np.array([[r[0] for r in n.box] for n in needs], dtype=np.int64).reshape(-1, 3),
                np.array([[r[1] for r in n.box] for n in needs], dtype=np.int64).reshape(-1, 3))
        return self.need_arrays[need]

    def _held_index(self, tensor: str, label: str) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """The held layout's pieces ordered by tile, their tiles so ordered, and per dimension
        the pieces' distinct boundaries."""
        key = (tensor, label)
        if key not in self.held_index:
            held = self.held_of(tensor, label)
            order = np.argsort(held.tiles, kind="stable")
            self.held_index[key] = (order, held.tiles[order], [
                np.unique(np.concatenate([held.lo[:, d], held.hi[:, d]])) for d in range(3)])
        return self.held_index[key]

    def _pairs(self, cands: dict[str, list[Cand]], limit: float, ties: Ties | None = None
               ) -> Iterator[tuple[str, str, str, float, int | None]]:
        """(tensor, held layout, need, the plan's least cycles without this move, the move's
        cycles when already priced exactly) of every pair a plan within `limit` could use.
        Millions of pairs on an attention block: the clock is asked every `CHECK_EVERY` (it was
        not, and `optimize siglip-attention --time-limit 600` was still listing pairs at 675 s)."""
        groups, floors, least, total = floors_of(self.cat, cands)
        looked = 0
        head_of = {m.name: h for h, ms in groups.items() for m in ms}
        for op in self.cat.ops:
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
            for _, t in self.cat.inputs(op):
                tie = (t, op.name) if ties is not None and (t, op.name) in ties.edges else None
                if t in self.cat.producer:
                    q = head_of[self.cat.producer[t].name]
                    # the most a layout leaves on one tile
                    piece = {cands[q][i].doc["output"]: cands[q][i].doc["why"]["piece"] for i in floors[q]}
                    if tie is not None:  # each side at the cheapest plan through it (`layout.ties`)
                        best_p, rest = {o: ties.producer[tie][o] for o in piece}, ties.total
                        best_c[t] = {n: ties.consumer[tie][n] for n in best_c.get(t, {})}
                    else:
                        best_p = {}
                        for i, f in floors[q].items():
                            o = cands[q][i].doc["output"]
                            best_p[o] = min(best_p.get(o, math.inf), f)
                        rest = total - least[q] - least[op.name]
                else:
                    best_p, rest = {INPUT_LAYOUT: 0}, total - least[op.name]
                    piece = {INPUT_LAYOUT: self.held_of(t, INPUT_LAYOUT).largest()}
                for n, fc in best_c.get(t, {}).items():
                    looked += len(best_p)
                    if looked >= CHECK_EVERY:
                        looked = 0
                        self.cat.check()
                    for o, fp in best_p.items():
                        if fp + fc + rest > limit or o == n:
                            continue
                        others = fp + fc - move_lb[(t, n)] + rest
                        cycles = self.exact.get((t, n)) if o == INPUT_LAYOUT else None
                        floor = move_floor(*block[(t, n)], piece[o], self.wl.elem_bytes, self.spec)
                        if tie is not None:
                            floor = max(floor, ties.floor(t, op.name, o, n))
                        if cycles is not None or others + floor <= limit:
                            yield t, o, n, others, cycles  # else this producer's own floor rules it out

    def greedy_own(self, cands: dict[str, list[Cand]]) -> None:
        """Each kept GEMM candidate's own exchange re-priced by greedy horizons. Pruning keeps
        working on load bounds (`Cand.own`), so what is kept is what bound prices keep."""
        from ipuopt.layout.scheduled import GreedyPricer

        self.pricer = GreedyPricer(self.wl, self.spec, self.grain)
        for op in self.cat.ops:
            for c in cands[op.name] if op.kind == "gemm" else ():
                own = self.pricer.own(op, c.source)  # type: ignore[arg-type]
                why = c.doc["why"]
                why["bound"] = {"weights": why["weights"], "reduction": why["reduction"]}
                why.update(own)
                c.doc["exchange"] = own["weights"] + own["reduction"]  # c.own keeps the bound
            self.cat.say(f"{op.name}: own phases scheduled ({self.pricer.phases} so far)")

    def greedy_rows(self, rows: list[dict[str, Any]]) -> None:
        """Every kept redistribution re-priced by the greedy horizon of its phase."""
        for i, row in enumerate(rows):
            t, have, need = row["tensor"], row["from"], row["to"]
            source = self.cat.origin[have] if t in self.cat.producer else None
            op, _, c = self.cat.needs[need]
            row["cycles"] = self.pricer.move(t, source, op, c)
            if (i + 1) % 50 == 0:
                self.cat.say(f"{i + 1} of {len(rows)} redistributions scheduled")
        self.scheduled = self.pricer.phases


def _only(needs: list[Need], tiles: set[int]) -> list[Need]:
    """`needs` as received by `tiles` alone (a probe)."""
    return [Need(tuple(t for t in n.tiles if t in tiles), n.box, n.addr, n.partial)
            for n in needs if tiles.intersection(n.tiles)]
