"""Independent schedule validator.

Written from the model doc alone: it does not use the schedulers' occupancy
code, it recomputes every interval from the phase, the spec and each
transfer's id/start/width, then sweeps each resource for overlaps.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction

from ipuopt.exchange.phase import Phase
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.violation import Violation
from ipuopt.spec import Spec


@dataclass
class Report:
    violations: list[Violation]
    horizon: int

    @property
    def ok(self) -> bool:
        return not self.violations


@functools.lru_cache(maxsize=4096)  # fragments repeat a few lengths: exact arithmetic once each
def _cycles(words: int, rate: float) -> int:
    return math.ceil(Fraction(words) / Fraction(rate).limit_denominator(1 << 20))


def _sweep(intervals: list[tuple[int, int, str]], rule: str, tile: int,
           out: list[Violation], gap: int = 0) -> None:
    """Report every interval that starts before an earlier-started one has ended (+gap)."""
    intervals.sort()
    last_end, last_id = None, ""
    for s, e, tid in intervals:
        if last_end is not None and s < last_end + gap:
            out.append(Violation(rule, (last_id, tid), tile, (s, min(e, last_end + gap))))
        if last_end is None or e > last_end:
            last_end, last_id = e, tid


def _cross_sweep(a: list[tuple[int, int, str]], b: list[tuple[int, int, str]], rule: str,
                 tile: int, out: list[Violation], gap: int = 0, detail: str = "") -> None:
    """Report pairs (one from a, one from b) closer than `gap` (0: overlapping)."""
    events = sorted([(s, e, tid, 0) for s, e, tid in a] + [(s, e, tid, 1) for s, e, tid in b])
    last: list[tuple[int, str] | None] = [None, None]
    for s, e, tid, side in events:
        other = last[1 - side]
        if other is not None and s < other[0] + gap:
            out.append(Violation(rule, (other[1], tid), tile, (s, other[0] + gap), detail))
        if last[side] is None or e > last[side][0]:  # type: ignore[index]
            last[side] = (e, tid)


def validate(phase: Phase, spec: Spec, schedule: Schedule) -> Report:
    """Every violation of the model's rules by `schedule`, and its recomputed horizon."""
    ex = spec.exchange
    out: list[Violation] = []
    known = {t.id for t in phase.transfers}
    for tid in schedule.starts:
        if tid not in known:
            out.append(Violation("unknown-transfer", (tid,), None, None, "not in the phase"))
    tx: dict[int, list] = defaultdict(list)
    rx: dict[int, dict[str, list]] = defaultdict(lambda: {"ordinary": [], "paired": []})
    reads: dict[tuple, list] = defaultdict(list)
    writes: dict[tuple, list] = defaultdict(list)
    done: dict[str, int] = {}
    starts: dict[str, int] = {}
    horizon = 0
    for t in phase.transfers:
        if t.id not in schedule.starts:
            out.append(Violation("missing-transfer", (t.id,), None, None, "no start given"))
            continue
        s, width = schedule.starts[t.id], schedule.widths.get(t.id, "ordinary")
        starts[t.id] = s
        if s < 0:
            out.append(Violation("negative-start", (t.id,), t.src, (s, s)))
        partner = spec.partner(t.src)
        if width == "paired":
            align = ex.paired_alignment
            why = ("paired: never" if t.paired == "never" else
                   "source tile has no pair partner" if partner is None else
                   "address not aligned" if any(a is not None and a % align
                                                for a in (t.src_addr, t.dst_addr)) else "")
            if why:
                out.append(Violation("width", (t.id,), t.src, None, f"paired not allowed: {why}"))
            rate = ex.paired_words_per_cycle
        else:
            if t.paired == "required":
                out.append(Violation("width", (t.id,), t.src, None, "paired: required"))
            rate = ex.ordinary_words_per_cycle
        d = _cycles(t.words, rate)
        tx_end = s + ex.tx_overhead + d
        tx[t.src].append((s, tx_end, t.id))
        if width == "paired" and partner is not None:
            tx[partner].append((s, tx_end, t.id))
        nbytes = t.words * ex.word_bytes
        if t.src_addr is not None:
            for el in spec.elements(t.src_addr, nbytes):
                reads[(t.src, *el)].append((s + ex.tx_overhead, tx_end, t.id))
        finish = 0
        for x in t.dst:
            arrive = s + ex.tx_overhead + spec.latency(t.src, x)
            rx[x][width].append((arrive - ex.rx_lead, arrive + d, t.id))
            if t.dst_addr is not None:
                for el in spec.elements(t.dst_addr, nbytes):
                    writes[(x, *el)].append((arrive, arrive + d + ex.write_hazard, t.id))
            finish = max(finish, arrive + d)
        done[t.id] = finish
        horizon = max(horizon, finish)
    for tile, ivs in tx.items():
        _sweep(ivs, "tx-lane", tile, out)
    for tile, by_fmt in rx.items():
        _sweep(by_fmt["ordinary"] + by_fmt["paired"], "rx-lane", tile, out)
        if ex.format_switch and by_fmt["ordinary"] and by_fmt["paired"]:
            _cross_sweep(by_fmt["ordinary"], by_fmt["paired"], "format-switch", tile, out,
                         ex.format_switch, f"needs {ex.format_switch} cycles between formats")
    for key, rd in reads.items():
        wr = writes.get(key)
        if wr:
            _cross_sweep(rd, wr, "memory-hazard", key[0], out, 0,
                         f"read and write of element {key[2]} in region "
                         f"{spec.regions[key[1]].name}")
    for t in phase.transfers:
        for a in t.after:
            if t.id in starts and a in done and starts[t.id] < done[a]:
                out.append(Violation("dependency", (a, t.id), t.src, (starts[t.id], done[a]),
                                     f"starts before {a} completes"))
    if schedule.horizon is not None and schedule.horizon != horizon:
        out.append(Violation("horizon", (), None, None,
                             f"schedule says {schedule.horizon}, recomputed {horizon}"))
    return Report(out, horizon)
