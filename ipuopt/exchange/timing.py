"""The formulas of the exchange model, in one home: durations, arrivals, occupancies.

Greedy, CP-SAT and MILP all build on `occupancies`; the validator does not (it
recomputes every interval from the model doc on its own).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ipuopt.exchange.phase import Phase, Transfer, paired_possible
from ipuopt.spec import Spec

ORDINARY = "ordinary"
PAIRED = "paired"
WIDTHS = (ORDINARY, PAIRED)


def payload_cycles(words: int, rate: float) -> int:
    """ceil(P / r), exact for fractional rates."""
    if float(rate).is_integer():  # the usual case, a hundred times faster than Fractions
        return -(-words // int(rate))
    return math.ceil(Fraction(words) / Fraction(rate).limit_denominator(1 << 20))


@dataclass(frozen=True)
class Occupancy:
    """One busy interval [S + offset, S + offset + length) of a transfer on one resource.

    kind is tx (transmit lane), rx (receive lane), rd (element read), wr (element write).
    key identifies the resource: (tile,) for lanes, (tile, region, element) for elements.
    """

    kind: str
    key: tuple
    offset: int
    length: int


@dataclass(frozen=True)
class Timing:
    """Everything about one transfer that does not depend on its start."""

    transfer: Transfer
    widths: tuple[str, ...]
    duration: dict[str, int]
    arrival: dict[int, int]  # destination -> tx_overhead + route latency
    partner: int | None
    read_elements: tuple[tuple[int, int], ...]
    write_elements: tuple[tuple[int, int], ...]

    def end_offset(self, width: str) -> int:
        """Completion at all destinations, relative to the start."""
        return max(self.arrival.values()) + self.duration[width]

    def occupancies(self, width: str, spec: Spec) -> list[Occupancy]:
        ex = spec.exchange
        t = self.transfer
        d = self.duration[width]
        busy = ex.tx_overhead + d
        occ = [Occupancy("tx", (t.src,), 0, busy)]
        if width == PAIRED:
            occ.append(Occupancy("tx", (self.partner,), 0, busy))
        for x, a in self.arrival.items():
            occ.append(Occupancy("rx", (x,), a - ex.rx_lead, ex.rx_lead + d))
        for r, e in self.read_elements:
            occ.append(Occupancy("rd", (t.src, r, e), ex.tx_overhead, d))
        for x, a in self.arrival.items():
            for r, e in self.write_elements:
                occ.append(Occupancy("wr", (x, r, e), a, d + ex.write_hazard))
        return occ


def transfer_timing(t: Transfer, spec: Spec, elements: bool = True) -> Timing:
    """`elements=False`: no memory element read or written (what no placement can be sure to
    avoid is left out: for bounds that hold under any placement)."""
    ex = spec.exchange
    if t.paired == "required":
        widths: tuple[str, ...] = (PAIRED,)
    elif paired_possible(t, spec):
        widths = WIDTHS
    else:
        widths = (ORDINARY,)
    duration = {ORDINARY: payload_cycles(t.words, ex.ordinary_words_per_cycle),
                PAIRED: payload_cycles(t.words, ex.paired_words_per_cycle)}
    nbytes = t.words * ex.word_bytes
    return Timing(
        transfer=t,
        widths=widths,
        duration={w: duration[w] for w in widths},
        arrival={x: ex.tx_overhead + spec.latency(t.src, x) for x in t.dst},
        partner=spec.partner(t.src),
        read_elements=spec.elements(t.src_addr, nbytes) if elements and t.src_addr is not None else (),
        write_elements=spec.elements(t.dst_addr, nbytes) if elements and t.dst_addr is not None else (),
    )


def phase_timings(phase: Phase, spec: Spec, elements: bool = True) -> list[Timing]:
    return [transfer_timing(t, spec, elements) for t in phase.transfers]
