"""What a picture shows, as plain data: rows, items (row, begin, end, kind, detail), kinds
with colour and name, and marks. Both the HTML page and the PNG draw from it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ipuopt.arena.problem import Arena
from ipuopt.arena.validate import validate_placement
from ipuopt.exchange.phase import Phase
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.simulate import resource_uses, simulate
from ipuopt.spec import Spec

KINDS = {
    "unicast": ("#4c78a8", "send (unicast)"),
    "multicast": ("#f58518", "send (multicast)"),
    "paired": ("#54a24b", "send (paired)"),
    "borrowed": ("#9ecf8f", "borrowed transmit lane (partner's paired send)"),
    "receive": ("#72b7b2", "receive (ordinary)"),
    "receive-paired": ("#2e7d6e", "receive (paired)"),
}
CHAIN, HAZARD, BOUND = "#e45756", "#b279a2", "#2ca02c"
OUTLINES = {CHAIN: "critical chain", HAZARD: "chain step held by a memory hazard"}


@dataclass
class View:
    title: str
    subtitle: str
    rows: list[str]
    items: list[list[Any]]  # [row, begin, end, kind, ref]
    kinds: dict[str, tuple[str, str]]
    refs: list[str]
    marks: list[list[Any]] = field(default_factory=list)  # [row, begin, end, colour]
    unit: str = "cycles"
    outlines: dict[str, str] = field(default_factory=dict)  # mark colour -> what it outlines
    lines: list[list[Any]] = field(default_factory=list)  # [time, label, colour]: horizon, bound

    def to_dict(self) -> dict[str, Any]:
        begin = min((it[1] for it in self.items), default=0)
        end = max((it[2] for it in self.items), default=1)
        return {"title": self.title, "subtitle": self.subtitle, "rows": self.rows, "items": self.items,
                "kinds": {k: list(v) for k, v in self.kinds.items()}, "refs": self.refs,
                "marks": self.marks, "unit": self.unit, "outlines": self.outlines, "lines": self.lines,
                "t0": min(0, begin), "t1": max([end, *(line[0] for line in self.lines)])}


def phase_view(phase: Phase, spec: Spec, schedule: Schedule, bound: int | None = None) -> View:
    """Each tile that takes part gets a transmit and a receive row; the critical chain is
    outlined, its memory-hazard steps in another colour; the horizon and the best lower bound
    (when known) are marked."""
    sim = simulate(phase, spec, schedule)
    by_id = {t.id: t for t in phase.transfers}
    lane_uses = [u for u in resource_uses(phase, spec, schedule) if u.resource[0] in ("tx", "rx")]
    tiles = sorted({u.resource[1] for u in lane_uses})
    row = {}
    rows: list[str] = []
    for tile in tiles:
        for lane in ("tx", "rx"):
            row[(lane, tile)] = len(rows)
            rows.append(f"tile {tile} {lane}")
    refs, ref_of = [], {}
    for t in phase.transfers:
        if t.id in schedule.starts:
            ref_of[t.id] = len(refs)
            dst = ",".join(map(str, t.dst[:16])) + (f" (+{len(t.dst) - 16})" if len(t.dst) > 16 else "")
            width = schedule.widths.get(t.id, "ordinary")
            refs.append(f"{t.id}: {t.src} -> {dst}, {t.words} words, {width}, "
                        f"start {schedule.starts[t.id]}, end {sim.finish.get(t.id)}")
    items = []
    for u in lane_uses:
        lane, tile = u.resource[0], u.resource[1]
        t = by_id[u.transfer]
        if lane == "rx":
            kind = "receive-paired" if u.fmt == "paired" else "receive"
        elif tile != t.src:
            kind = "borrowed"
        else:
            kind = ("paired" if schedule.widths.get(t.id) == "paired"
                    else "multicast" if len(t.dst) > 1 else "unicast")
        items.append([row[(lane, tile)], u.begin, u.end, kind, ref_of[u.transfer]])
    marks = []
    for step in sim.chain:
        colour = HAZARD if step["held_by"] == "memory hazard" else CHAIN
        marks.append([row[("tx", by_id[step["transfer"]].src)], step["start"], step["end"], colour])
    sub = (f"{len(phase.transfers)} transfers on {spec.name}, horizon {sim.horizon}; outlined: the critical "
           f"chain ({len(sim.chain)} steps; purple where a memory hazard held it). Wheel: zoom, "
           f"shift+wheel or drag: scroll")
    title = f"{phase.name or 'phase'}: {schedule.note or 'schedule'}"
    lines = [[sim.horizon, f"horizon {sim.horizon}", "#333333"]]
    if bound is not None:
        lines.append([bound, f"best bound {bound}", BOUND])
    return View(title, sub, rows, items, KINDS, refs, marks, outlines=OUTLINES, lines=lines)


def program_view(run: dict[str, Any]) -> View:
    """One row per exchange boundary: the compute before it (first to last arrival), the
    barrier's sync, the exchange; and the final compute."""
    kinds = {"compute": ("#4c78a8", "compute (until the last tile arrives)"),
             "sync": ("#bab0ac", "barrier sync"), "exchange": ("#f58518", "exchange phase")}
    rows, items, refs, marks = [], [], [], []
    prev = 0
    for i, b in enumerate(run["boundaries"]):
        rows.append(b["phase"])
        refs.append(f"{b['phase']}: {b['transfers']} transfers; compute "
                    f"{b['compute_min']}..{b['compute_max']} per tile; arrivals "
                    f"{b['first_arrival']}..{b['last_arrival']} (spread {b['spread']}, "
                    f"last tile {b['last_tile']}); exchange [{b['exchange_start']}, {b['end']}) horizon "
                    f"{b['horizon']} (bound {b['lower_bound']})")
        items += [[i, prev, b["last_arrival"], "compute", i],
                  [i, b["last_arrival"], b["exchange_start"], "sync", i],
                  [i, b["exchange_start"], b["end"], "exchange", i]]
        marks.append([i, b["first_arrival"], b["last_arrival"], CHAIN])
        prev = b["end"]
    rows.append("final compute")
    refs.append(f"final compute: {run['final_compute']} cycles; program ends at {run['total_cycles']}")
    items.append([len(rows) - 1, prev, run["total_cycles"], "compute", len(refs) - 1])
    sub = (f"{run['workload']} on {run['spec']}: {run['total_cycles']} cycles "
           f"(compute {run['compute_cycles']}, exchange {run['exchange_cycles']}, "
           f"sync {run['sync_cycles']}); outlined: the arrival spread")
    return View(f"program run: {run['workload']}", sub, rows, items, kinds, refs, marks,
                outlines={CHAIN: "arrival spread (first to last tile at the barrier)"},
                lines=_program_lines(run))


def _program_lines(run: dict[str, Any]) -> list[list[Any]]:
    """The program's end, its bounds and (from `optimize`) the baselines it is measured against."""
    lines = [[run["total_cycles"], f"program end {run['total_cycles']}", "#333333"]]
    if run.get("lower_bound") is not None:
        lines.append([run["lower_bound"], f"bound, these layouts and placement {run['lower_bound']}", BOUND])
    if run.get("program_bound") is not None:
        lines.append([run["program_bound"], f"bound over every plan {run['program_bound']}", "#54a24b"])
    for name, cycles in run.get("optimize", {}).get("baselines", {}).items():
        lines.append([cycles, f"baseline: {name} {cycles}", "#9d755d"])
    return lines


def arena_boxes(arena: Arena, offsets: dict[str, int]) -> dict[str, Any]:
    """Buffers as boxes (steps x addresses), with the pairs that pay a conflict."""
    rep = validate_placement(arena, offsets)
    eb = arena.element_bytes
    by_id = {b.id: b for b in arena.buffers}
    paying = []
    for c in arena.conflicts:
        a, b = by_id[c.a], by_id[c.b]
        if c.weight and a.live_with(b):
            ea = range(offsets[a.id] // eb, (offsets[a.id] + a.size - 1) // eb + 1)
            if set(ea) & set(range(offsets[b.id] // eb, (offsets[b.id] + b.size - 1) // eb + 1)):
                paying.append([a.id, b.id, c.weight])
    boxes = [[b.id, b.first, b.end, offsets[b.id], offsets[b.id] + b.size, b.alias_of or ""]
             for b in arena.buffers]
    return {"title": f"{arena.name or 'arena'}: {len(arena.buffers)} buffers",
            "subtitle": f"capacity {arena.capacity} bytes, peak {rep.peak}, conflict weight {rep.conflicts}, "
                        f"memory elements of {eb} bytes; red: buffers that pay a conflict",
            "boxes": boxes, "conflicts": paying, "capacity": arena.capacity, "element": eb,
            "steps": max((b.end for b in arena.buffers), default=1), "ok": rep.ok,
            # the first view: the used addresses and a margin, at most the capacity (a small arena
            # is not drawn as a strip under a whole memory element)
            "top": min(arena.capacity, math.ceil(max(rep.peak, 1) * 1.15))}
