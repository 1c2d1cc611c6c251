"""The lanes of a partial schedule as interval sets, and the model's rules as what a
transfer must fit and then holds there: shared by the Python list greedy, the packed arrays
of the compiled one, and the packed one's Python twin."""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict

from ipuopt.exchange.timing import ORDINARY, PAIRED, Timing
from ipuopt.spec import Spec


class IntervalSet:
    """Sorted, pairwise-disjoint half-open intervals with earliest-conflict lookup."""

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def earliest_fit(self, s: int, length: int, margin: int = 0) -> int:
        """Smallest p >= s with [p - margin, p + length + margin) free of every interval."""
        starts, ends = self.starts, self.ends
        lo = s - margin
        i = bisect_right(starts, lo) - 1
        if i < 0 or ends[i] <= lo:
            i += 1
        span = length + 2 * margin
        n = len(starts)
        while i < n and starts[i] < lo + span:
            lo = ends[i]
            i += 1
        return lo + margin

    def add(self, s: int, e: int) -> None:
        """Add [s, e), merged with any interval it overlaps or touches: the free space is the
        same, and back-to-back transfers leave one interval for `earliest_fit` to step over."""
        starts, ends = self.starts, self.ends
        i = bisect_right(starts, s) - 1
        if i >= 0 and ends[i] >= s:
            s = starts[i]
            e = max(e, ends[i])
        else:
            i += 1
        j = i
        while j < len(starts) and starts[j] <= e:
            e = max(e, ends[j])
            j += 1
        starts[i:j] = [s]
        ends[i:j] = [e]



Key = tuple  # an interval set: ("tx" | "rx", tile), ("fmt", width, tile), ("rd" | "wr", element)


def uses(tm: Timing, width: str, spec: Spec, partner_rx: bool = False,
         ) -> tuple[list[tuple[Key, int, int, int]], list[tuple[Key, int, int]]]:
    """What the transfer at `width` must fit, (interval set, offset, length, margin), and what
    it then holds, (interval set, offset, length): the model's rules as interval sets, shared
    by the Python greedy and the packed arrays of the compiled one. `partner_rx`: the habit
    `paired_reserves_partner`."""
    fs = spec.exchange.format_switch
    other = PAIRED if width == ORDINARY else ORDINARY
    checks: list[tuple[Key, int, int, int]] = []
    holds: list[tuple[Key, int, int]] = []
    for occ in tm.occupancies(width, spec):
        k, o, n = occ.key, occ.offset, occ.length
        if occ.kind == "tx":
            keys = [("tx", k[0])]
            if partner_rx and k[0] == tm.partner and width == PAIRED:
                keys.append(("rx", k[0]))
            checks += [(key, o, n, 0) for key in keys]
            holds += [(key, o, n) for key in keys]
        elif occ.kind == "rx":
            checks.append((("rx", k[0]), o, n, 0))
            if fs:
                checks.append((("fmt", other, k[0]), o, n, fs))
            holds += [(("rx", k[0]), o, n), (("fmt", width, k[0]), o, n)]
        elif occ.kind == "rd":
            checks.append((("wr", k), o, n, 0))
            holds.append((("rd", k), o, n))
        else:
            checks.append((("rd", k), o, n, 0))
            holds.append((("wr", k), o, n))
    return checks, holds


class Lanes:
    """The resource state of a partial schedule."""

    def __init__(self, spec: Spec, partner_rx: bool = False) -> None:
        self.spec = spec
        self.partner_rx = partner_rx
        self.sets: dict[Key, IntervalSet] = defaultdict(IntervalSet)

    def checks(self, tm: Timing, width: str) -> list[tuple[IntervalSet, int, int, int]]:
        """(interval set, offset, length, margin) for each constraint the transfer must meet."""
        return [(self.sets[k], o, n, m) for k, o, n, m in uses(tm, width, self.spec, self.partner_rx)[0]]

    def commit(self, tm: Timing, width: str, start: int) -> None:
        for k, o, n in uses(tm, width, self.spec, self.partner_rx)[1]:
            self.sets[k].add(start + o, start + o + n)


def earliest(checks: list[tuple[IntervalSet, int, int, int]], lower: int) -> int:
    """The earliest start >= lower that every check admits (a fixpoint over the lanes)."""
    start = lower
    moved = True
    while moved:
        moved = False
        for lane, off, length, margin in checks:
            fit = lane.earliest_fit(start + off, length, margin) - off
            if fit > start:
                start = fit
                moved = True
    return start
