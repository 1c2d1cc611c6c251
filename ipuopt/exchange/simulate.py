"""Event-driven replay of a schedule on the chip: lanes, memory, arrivals, barrier metrics.

A third reading of the model, apart from the schedulers (which share `timing.py`) and the
validator (which sweeps interval lists): every occupancy is derived here from the spec's
fields, turned into begin and end events, and replayed in time order against the state of
each lane and memory element. The first rule broken stops the replay. A replay that runs
through yields the horizon, the barrier metrics of the phase given the tiles' arrival at
the barrier, lane utilisation, and the critical chain of the transfer that ends last.

The same occupancies are first checked at once in numpy (`_clean`: per resource, sorted by
begin, no use starts before an earlier one's end): an event replay of a few hundred
thousand transfers takes minutes in Python, and it is only needed to name the first rule a
schedule breaks.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from ipuopt.errors import InputError, Problem
from ipuopt.exchange.phase import Phase, Transfer
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.violation import Violation
from ipuopt.io import parse_int, read_document
from ipuopt.spec import Spec

BINS = 10  # utilisation is reported over the whole phase and over tenths of it


@dataclass
class Simulation:
    """What the replay saw. Times are relative to the exchange start unless named otherwise."""

    ok: bool
    breach: Violation | None
    horizon: int
    finish: dict[str, int]  # transfer -> completion at its last destination
    arrivals: dict[int, int] = field(default_factory=dict)  # tile -> barrier arrival (absolute)
    sync: int = 0
    lanes: dict[str, dict[str, Any]] = field(default_factory=dict)
    chain: list[dict[str, Any]] = field(default_factory=list)

    @property
    def first_arrival(self) -> int:
        return min(self.arrivals.values(), default=0)

    @property
    def last_arrival(self) -> int:
        return max(self.arrivals.values(), default=0)

    @property
    def last_tile(self) -> int | None:
        return max(self.arrivals, key=lambda t: (self.arrivals[t], -t)) if self.arrivals else None

    @property
    def exchange_start(self) -> int:
        return self.last_arrival + self.sync

    def to_dict(self) -> dict[str, Any]:
        end = self.exchange_start + self.horizon
        return {"ok": self.ok, "breach": self.breach.to_dict() if self.breach else None,
                "horizon": self.horizon, "first_arrival": self.first_arrival,
                "last_arrival": self.last_arrival, "last_tile": self.last_tile,
                "spread": self.last_arrival - self.first_arrival, "sync": self.sync,
                "exchange_start": self.exchange_start, "end": end,
                "after_last_arrival": end - self.last_arrival, "critical_chain": self.chain,
                "lanes": self.lanes}


@dataclass(frozen=True)
class Use:
    """One transfer's use of one resource over [begin, end)."""

    transfer: str
    resource: tuple  # ("tx", tile) | ("rx", tile) | ("rd", tile, element) | ("wr", tile, element)
    begin: int
    end: int
    fmt: str = ""  # receive format, for rx uses


def _payload(words: int, rate: float) -> int:
    p, q = _rate(rate)
    return -(-words * q // p)


def _latency(spec: Spec, src: int, dst: int) -> int:
    ex = spec.exchange
    return ex.latency_base + math.floor(ex.latency_per_tile * abs(src - dst))


def _elements(spec: Spec, addr: int | None, nbytes: int) -> list[tuple[str, int]]:
    """(region, element index) of every element that [addr, addr + nbytes) touches."""
    if addr is None:
        return []
    out = []
    for r in spec.regions:
        lo, hi = max(addr, r.start), min(addr + nbytes, r.start + r.size)
        if lo < hi:
            out += [(r.name, e) for e in range((lo - r.start) // r.element_bytes,
                                               (hi - 1 - r.start) // r.element_bytes + 1)]
    return out


def _uses(t: Transfer, start: int, paired: bool, spec: Spec) -> tuple[list[Use], int]:
    """Every resource use of `t` started at `start`, and its completion."""
    ex = spec.exchange
    d = _payload(t.words, ex.paired_words_per_cycle if paired else ex.ordinary_words_per_cycle)
    sent = start + ex.tx_overhead
    uses = [Use(t.id, ("tx", t.src), start, sent + d)]
    if paired:
        uses.append(Use(t.id, ("tx", spec.partner(t.src)), start, sent + d))
    nbytes = t.words * ex.word_bytes
    uses += [Use(t.id, ("rd", t.src, el), sent, sent + d) for el in _elements(spec, t.src_addr, nbytes)]
    finish = 0
    fmt = "paired" if paired else "ordinary"
    for x in t.dst:
        arrive = sent + _latency(spec, t.src, x)
        uses.append(Use(t.id, ("rx", x), arrive - ex.rx_lead, arrive + d, fmt))
        uses += [Use(t.id, ("wr", x, el), arrive, arrive + d + ex.write_hazard)
                 for el in _elements(spec, t.dst_addr, nbytes)]
        finish = max(finish, arrive + d)
    return uses, finish


def _width_breach(t: Transfer, paired: bool, spec: Spec) -> Violation | None:
    if not paired:
        required = t.paired == "required"
        return Violation("width", (t.id,), t.src, None, "paired: required") if required else None
    a = spec.exchange.paired_alignment
    why = ("paired: never" if t.paired == "never" else
           "source tile has no pair partner" if spec.partner(t.src) is None else
           "address not aligned" if any(x is not None and x % a for x in (t.src_addr, t.dst_addr)) else "")
    return Violation("width", (t.id,), t.src, None, f"paired not allowed: {why}") if why else None


def resource_uses(phase: Phase, spec: Spec, schedule: Schedule) -> list[Use]:
    """Every lane and memory use of every scheduled transfer (for pictures)."""
    out: list[Use] = []
    by_id = {t.id: t for t in phase.transfers}
    for tid, start in schedule.starts.items():
        if tid in by_id:
            out += _uses(by_id[tid], start, schedule.widths.get(tid) == "paired", spec)[0]
    return out


def load_arrivals(source: str | Path | dict[Any, Any] | None, tiles: int) -> dict[int, int]:
    """Barrier arrivals, tile id -> the cycle it reaches the barrier, from a JSON or YAML file
    (`simulate --arrivals`) or a mapping (keys may be strings, as in JSON); every bad entry
    reported."""
    if source is None:
        return {}
    where = "arrivals" if isinstance(source, dict) else str(source)
    doc = source if isinstance(source, dict) else read_document(source)
    if not isinstance(doc, dict):
        raise InputError.one(where, "", "must map tile ids (strings) to arrival cycles")
    out, problems = {}, []
    for key, value in doc.items():
        tile, cycle = parse_int(key), parse_int(value)
        if tile is None or not 0 <= tile < tiles:
            problems.append(Problem(where, str(key), f"not a tile id (0..{tiles - 1})"))
        if cycle is None or cycle < 0:
            problems.append(Problem(where, str(key), f"arrival must be a cycle >= 0, got {value!r}"))
        elif tile is not None:
            out[tile] = cycle
    if problems:
        raise InputError(problems)
    return out


def simulate(phase: Phase, spec: Spec, schedule: Schedule,
             arrivals: dict[int, int] | None = None, detail: bool = True) -> Simulation:
    """Replay `schedule`; stop at the first broken rule. `arrivals` maps tile -> cycle at
    which it reaches the barrier (tiles not named arrive at 0); the exchange starts
    `sync_cycles` after the last arrival. Without `detail`, no lane utilisation and no
    critical chain (a program's replay reads neither)."""
    ex = spec.exchange
    arrived = {t: 0 for t in range(spec.tiles)} | {int(k): int(v) for k, v in (arrivals or {}).items()}
    sim = Simulation(True, None, 0, {}, arrived, ex.sync_cycles)
    by_id = {t.id: t for t in phase.transfers}
    for tid in schedule.starts:
        if tid not in by_id:
            return _stop(sim, Violation("unknown-transfer", (tid,), None, None, "not in the phase"))
    for t in phase.transfers:
        if t.id not in schedule.starts:
            return _stop(sim, Violation("missing-transfer", (t.id,), None, None, "no start given"))
        start, paired = schedule.starts[t.id], schedule.widths.get(t.id) == "paired"
        if start < 0:
            return _stop(sim, Violation("negative-start", (t.id,), t.src, (start, start)))
        if breach := _width_breach(t, paired, spec):
            return _stop(sim, breach)
    clean, finish = _clean(phase, spec, schedule)
    if not clean:
        return _replay(phase, spec, schedule, sim)
    sim.finish = dict(zip(by_id, finish.tolist(), strict=True))
    sim.horizon = max(sim.finish.values(), default=0)
    if detail:
        uses = resource_uses(phase, spec, schedule)
        sim.lanes = _utilisation(uses, sim.horizon)
        sim.chain = _critical_chain(phase, spec, schedule, uses, sim.finish)
    return sim


def _replay(phase: Phase, spec: Spec, schedule: Schedule, sim: Simulation) -> Simulation:
    """The event replay of a schedule whose starts and widths are each allowed, up to the
    first rule broken."""
    ex = spec.exchange
    uses: list[Use] = []
    for t in phase.transfers:
        mine, sim.finish[t.id] = _uses(t, schedule.starts[t.id], schedule.widths.get(t.id) == "paired", spec)
        uses += mine
    # Events: (time, 0 = end / 1 = begin, sequence, use); ends first, as intervals are half-open.
    events: list[tuple[int, int, int, Any]] = []
    for i, u in enumerate(uses):
        events += [(u.begin, 1, i, u), (u.end, 0, i, u)]
    for t in phase.transfers:  # a dependency is checked when its dependant starts
        events.append((schedule.starts[t.id], 1, len(uses) + len(events), ("start", t)))
    heapq.heapify(events)
    holder: dict[tuple, Use] = {}  # lane -> the use holding it
    active: dict[tuple, dict[str, Use]] = defaultdict(dict)  # (tile, element) -> kind -> a use
    counts: dict[tuple, int] = defaultdict(int)  # (kind, tile, element) -> active uses
    last_fmt: dict[tuple[int, str], Use] = {}  # (tile, format) -> latest-ending receive so far
    while events:
        time, begin, _, item = heapq.heappop(events)
        if isinstance(item, tuple):  # a transfer starts: its dependencies must be complete
            t = item[1]
            for dep in t.after:
                if sim.finish[dep] > time:
                    return _stop(sim, Violation("dependency", (dep, t.id), t.src, (time, sim.finish[dep]),
                                             f"starts before {dep} completes"))
            continue
        u: Use = item
        kind, tile = u.resource[0], u.resource[1]
        if not begin:
            if kind in ("tx", "rx") and holder.get(u.resource) is u:
                del holder[u.resource]
            elif kind in ("rd", "wr"):
                counts[u.resource] -= 1
            continue
        if kind in ("tx", "rx"):
            if (other := holder.get(u.resource)) is not None:
                return _stop(sim, Violation(f"{kind}-lane", (other.transfer, u.transfer), tile,
                                         (time, min(u.end, other.end))))
            holder[u.resource] = u
            if kind == "rx" and ex.format_switch:
                other_fmt = "ordinary" if u.fmt == "paired" else "paired"
                prev = last_fmt.get((tile, other_fmt))
                if prev is not None and time < prev.end + ex.format_switch:
                    return _stop(sim, Violation("format-switch", (prev.transfer, u.transfer), tile,
                                             (time, prev.end + ex.format_switch),
                                             f"needs {ex.format_switch} cycles between formats"))
                if (tile, u.fmt) not in last_fmt or u.end > last_fmt[(tile, u.fmt)].end:
                    last_fmt[(tile, u.fmt)] = u
        else:
            opposite = ("wr" if kind == "rd" else "rd", tile, u.resource[2])
            if counts[opposite] > 0:
                other = active[(tile, u.resource[2])][opposite[0]]
                return _stop(sim, Violation("memory-hazard", (other.transfer, u.transfer), tile,
                                         (time, min(u.end, other.end)),
                                         f"read and write of element {u.resource[2][1]} in region "
                                         f"{u.resource[2][0]}"))
            counts[u.resource] += 1
            active[(tile, u.resource[2])][kind] = u
    sim.horizon = max(sim.finish.values(), default=0)
    sim.lanes = _utilisation(uses, sim.horizon)
    sim.chain = _critical_chain(phase, spec, schedule, uses, sim.finish)
    return sim


def _rate(rate: float) -> tuple[int, int]:
    """A width's words per cycle as the fraction `_payload` divides by."""
    f = Fraction(rate).limit_denominator(1 << 20)
    return f.numerator, f.denominator


def _element_rows(spec: Spec, tiles: np.ndarray, addr: np.ndarray, nbytes: np.ndarray,
                  begin: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(resource key, begin, end) of each element each access touches (`_elements`, one row
    per element); `addr` < 0 means no address."""
    regions = spec.regions
    keys, bs, es = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    span = max((r.size // r.element_bytes + 1 for r in regions), default=1)
    for k, r in enumerate(regions):
        lo = np.maximum(addr, r.start)
        hi = np.minimum(addr + nbytes, r.start + r.size)
        on = (addr >= 0) & (lo < hi)
        first = (lo[on] - r.start) // r.element_bytes
        count = (hi[on] - 1 - r.start) // r.element_bytes - first + 1
        rows = np.repeat(np.arange(len(count)), count)
        element = first[rows] + (np.arange(len(rows)) - np.repeat(np.cumsum(count) - count, count))
        keys.append((tiles[on][rows] * len(regions) + k) * span + element)
        bs.append(begin[on][rows])
        es.append(end[on][rows])
    return np.concatenate(keys), np.concatenate(bs), np.concatenate(es)


def _earlier_ends(keys: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per row (rows sorted by key), the largest end among rows of the same key up to it (-1:
    none); `ends` < 0 does not count."""
    if not len(keys):
        return ends
    group = np.concatenate([[0], np.cumsum(keys[1:] != keys[:-1])])
    big = int(max(ends.max(), 0)) + 2
    return np.maximum.accumulate(np.maximum(ends, -1) + 1 + group * big) - group * big - 1


def _exclusive(keys: np.ndarray, begin: np.ndarray, end: np.ndarray) -> bool:
    """No two uses of one resource overlap (half-open intervals)."""
    order = np.lexsort((begin, keys))
    k, b, e = keys[order], begin[order], end[order]
    reach = _earlier_ends(k, e)
    return not np.any((k[1:] == k[:-1]) & (b[1:] < reach[:-1]))


def _clean(phase: Phase, spec: Spec, schedule: Schedule) -> tuple[bool, np.ndarray]:
    """Whether the schedule breaks no lane, format, memory or dependency rule (the
    occupancies of `_uses`, all at once), and each transfer's completion."""
    ex = spec.exchange
    ts = phase.transfers
    n = len(ts)
    start = np.fromiter((schedule.starts[t.id] for t in ts), np.int64, n)
    paired = np.fromiter((schedule.widths.get(t.id) == "paired" for t in ts), bool, n)
    src = np.fromiter((t.src for t in ts), np.int64, n)
    words = np.fromiter((t.words for t in ts), np.int64, n)
    ndst = np.fromiter((len(t.dst) for t in ts), np.int64, n)
    dst = np.fromiter((x for t in ts for x in t.dst), np.int64, int(ndst.sum()))
    owner = np.repeat(np.arange(n), ndst)
    (po, qo), (pp, qp) = _rate(ex.ordinary_words_per_cycle), _rate(ex.paired_words_per_cycle)
    d = np.where(paired, -(-words * qp // pp), -(-words * qo // po))
    sent = start + ex.tx_overhead
    arrive = sent[owner] + ex.latency_base + np.floor(
        ex.latency_per_tile * np.abs(src[owner] - dst)).astype(np.int64)
    done = arrive + d[owner]
    finish = np.zeros(n, dtype=np.int64)
    np.maximum.at(finish, owner, done)
    partner = np.array([spec.partner(int(s)) for s in src[paired]], dtype=np.int64)  # widths checked
    lane = np.concatenate([src, partner, spec.tiles + dst])
    if not _exclusive(lane, np.concatenate([start, start[paired], arrive - ex.rx_lead]),
                      np.concatenate([sent + d, (sent + d)[paired], done])):
        return False, finish
    if ex.format_switch and _too_soon(dst, arrive - ex.rx_lead, done, paired[owner], ex.format_switch):
        return False, finish
    nbytes = words * ex.word_bytes
    none = -1
    src_addr = np.fromiter((none if t.src_addr is None else t.src_addr for t in ts), np.int64, n)
    dst_addr = np.fromiter((none if t.dst_addr is None else t.dst_addr for t in ts), np.int64, n)
    rk, rb, re_ = _element_rows(spec, src, src_addr, nbytes, sent, sent + d)
    wk, wb, we = _element_rows(spec, dst, dst_addr[owner], nbytes[owner], arrive, done + ex.write_hazard)
    if _too_soon(np.concatenate([rk, wk]), np.concatenate([rb, wb]), np.concatenate([re_, we]),
                 np.concatenate([np.zeros(len(rk), bool), np.ones(len(wk), bool)]), 0):
        return False, finish
    at = phase.index or {t.id: i for i, t in enumerate(ts)}
    for i, t in enumerate(ts):
        if t.after and start[i] < max(finish[at[dep]] for dep in t.after):
            return False, finish
    return True, finish


def _too_soon(keys: np.ndarray, begin: np.ndarray, end: np.ndarray, kind: np.ndarray, gap: int) -> bool:
    """A use begins less than `gap` cycles after the end of an earlier-begun use of the same
    key and the other kind: a read against a write of one element (gap 0), or a receive
    after the tile's last receive of the other format (the format switch; receive lanes
    already exclusive, so a tile's receives end in begin order)."""
    order = np.lexsort((begin, keys))
    k, b, e, w = keys[order], begin[order], end[order], kind[order]
    other = np.where(w, _earlier_ends(k, np.where(w, -1, e)), _earlier_ends(k, np.where(w, e, -1)))
    return bool(np.any((other >= 0) & (b < other + gap)))


def _stop(sim: Simulation, breach: Violation) -> Simulation:
    sim.ok, sim.breach = False, breach
    sim.horizon = max(sim.finish.values(), default=0)
    return sim


def _utilisation(uses: list[Use], horizon: int) -> dict[str, dict[str, Any]]:
    """Per lane that carries anything: busy share of [0, horizon) and of each tenth of it."""
    if horizon <= 0:
        return {}
    edges = [horizon * k / BINS for k in range(BINS + 1)]
    busy: dict[str, list[float]] = defaultdict(lambda: [0.0] * (BINS + 1))
    for u in uses:
        if u.resource[0] not in ("tx", "rx"):
            continue
        row = busy[f"{u.resource[0]}{u.resource[1]}"]
        lo, hi = max(u.begin, 0), min(u.end, horizon)
        row[0] += max(0, hi - lo)
        for k in range(BINS):
            row[k + 1] += max(0.0, min(hi, edges[k + 1]) - max(lo, edges[k]))
    width = horizon / BINS
    return {lane: {"busy": round(row[0] / horizon, 4),
                   "tenths": [round(x / width, 4) for x in row[1:]]}
            for lane, row in sorted(busy.items(), key=lambda kv: (kv[0][:2], int(kv[0][2:])))}


def _critical_chain(phase: Phase, spec: Spec, schedule: Schedule, uses: list[Use],
                    finish: dict[str, int]) -> list[dict[str, Any]]:
    """From the transfer that ends last back to the phase start: what held each step.

    A transfer's start is held by whatever ends exactly when one of its uses begins: a
    dependency's completion, the lane's previous holder, the other format's receive plus
    the switch time, or an opposing memory access (a hazard). Its latency and payload take
    it from start to finish. A step nothing held is an idle gap: the start could move earlier."""
    if not finish:
        return []
    ex = spec.exchange
    by_id = {t.id: t for t in phase.transfers}
    ends: dict[tuple, dict[int, Use]] = defaultdict(dict)  # resource -> end -> a use ending then
    rx_ends: dict[tuple[int, str], dict[int, Use]] = defaultdict(dict)
    for u in uses:
        ends[u.resource].setdefault(u.end, u)
        if u.resource[0] == "rx":
            rx_ends[(u.resource[1], u.fmt)].setdefault(u.end + ex.format_switch, u)
    mine: dict[str, list[Use]] = defaultdict(list)
    for u in uses:
        mine[u.transfer].append(u)
    chain: list[dict[str, Any]] = []
    tid: str | None = max(finish, key=lambda k: (finish[k], k))
    seen: set[str] = set()
    while tid is not None and tid not in seen:
        seen.add(tid)
        t, start = by_id[tid], schedule.starts[tid]
        step = {"transfer": tid, "src": t.src, "dst": list(t.dst), "start": start, "end": finish[tid],
                "width": schedule.widths.get(tid, "ordinary"),
                "latency": max(_latency(spec, t.src, x) for x in t.dst)}
        held = _holder(t, start, mine[tid], finish, ends, rx_ends, ex.format_switch)
        step.update(held)
        chain.append(step)
        tid = held.get("after")
    return chain


def _holder(t: Transfer, start: int, uses: list[Use], finish: dict[str, int],
            ends: dict[tuple, dict[int, Use]], rx_ends: dict[tuple[int, str], dict[int, Use]],
            switch: int) -> dict[str, Any]:
    if start == 0:
        return {"held_by": "phase start"}
    for dep in t.after:
        if finish[dep] == start:
            return {"held_by": "dependency", "after": dep}
    for u in uses:
        kind, tile = u.resource[0], u.resource[1]
        if kind in ("tx", "rx") and (prev := ends[u.resource].get(u.begin)) and prev.transfer != t.id:
            what = "borrowed transmit lane" if kind == "tx" and tile != t.src else f"{kind} lane"
            return {"held_by": what, "tile": tile, "after": prev.transfer}
        if kind == "rx" and switch:
            other = "ordinary" if u.fmt == "paired" else "paired"
            if (prev := rx_ends[(tile, other)].get(u.begin)) and prev.transfer != t.id:
                return {"held_by": "format switch", "tile": tile, "after": prev.transfer}
        if kind in ("rd", "wr"):
            opposite = ("wr" if kind == "rd" else "rd", tile, u.resource[2])
            if (prev := ends[opposite].get(u.begin)) and prev.transfer != t.id:
                return {"held_by": "memory hazard", "tile": tile, "element": list(u.resource[2]),
                        "after": prev.transfer}
    return {"held_by": "idle gap (nothing holds this start)"}
