"""A layout problem from a workload and a spec: every GEMM candidate priced, the ones that
cannot matter dropped with a reason, the redistributions that can matter priced.

Tens of thousands of candidates per GEMM give billions of (output, input) layout pairs, so
nothing is priced that a bound shows cannot be part of a plan within `within` of the best
plan: a candidate costs at least its own cycles plus, per input, the floor of moving that
input whatever the producer's layout (`pricing.move_floor`), and every other operator at
least its cheapest such figure; and, with the moves between operators floored from both
their ends (`layout.ties`), the cheapest plan through it. Against a reference plan (the
exact optimum of a small problem made of each operator's most promising candidates) this
drops all but a few hundred to a few thousand per operator; candidates alike on every edge
are then thinned to those no other is at least as good as in cycles, memory and held bytes.
The kept problem has the same optimum as the whole one (and every plan within `within` of it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ipuopt.budget import Stopped
from ipuopt.errors import InputError
from ipuopt.heap import bulk
from ipuopt.layout.candidates import Catalogue
from ipuopt.layout.moves import Moves
from ipuopt.layout.problem import LayoutProblem, layout_problem_from_dict
from ipuopt.layout.pruning import prune, top, undominated
from ipuopt.layout.ties import tied
from ipuopt.layout.writing import document
from ipuopt.spec import Spec
from ipuopt.workloads.fragments import Grain, grain_name
from ipuopt.workloads.workload import Workload

EXCHANGE_PRICES = ("bound", "greedy")
# candidates per operator of the reference plan: the first two tried, the next only while none fits
REFERENCE_WIDTHS = (6, 48, 192)


@dataclass
class Report:
    enumerated: dict[str, int] = field(default_factory=dict)
    kept: dict[str, int] = field(default_factory=dict)
    pairs_priced: int = 0
    pairs_probed: int = 0
    pairs_floored: int = 0
    rows: int = 0
    reference: int | None = None
    within: float = 0.0
    limit: float = 0.0
    exchange: str = "bound"
    grain: Grain = None
    scheduled: int = 0
    seconds: float = 0.0
    partial: int = 0  # the reference's candidates per operator, when the build stopped at them
    least: float | None = None  # no plan costs less (`ties.Ties.least`), once the ties are made

    def _least(self) -> dict[str, int]:
        return {} if self.least is None else {"least_plan": math.ceil(self.least)}

    def to_dict(self) -> dict[str, Any]:
        if self.partial:
            return {"enumerated": self.enumerated, "kept": self.kept, "partial": self.partial,
                    "reference_cycles": self.reference, **self._least(), "exchange": "bound",
                    "grain": grain_name(self.grain), "rule": (
                        f"partial: the build was stopped, so the problem holds only the {self.partial} "
                        "most promising candidates per operator (by own cycles and input-move floors) "
                        "and the moves between them; its optimum is a plan, not proven the best of all"),
                    "seconds": round(self.seconds, 1)}
        return {"enumerated": self.enumerated, "kept": self.kept, "redistribution_rows": self.rows,
                "pairs_floored": self.pairs_floored, "pairs_probed": self.pairs_probed,
                "pairs_priced": self.pairs_priced,
                "reference_cycles": self.reference, **self._least(),
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


@bulk()  # hundreds of thousands of candidates, millions of pairs: no collector rescans
def build_problem(wl: Workload, spec: Spec, within: float = 0.0, min_utilisation: float = 0.5,
                  progress: Callable[[str], None] | None = None,
                  reference_widths: tuple[int, ...] = REFERENCE_WIDTHS,
                  exchange: str = "bound", check: Callable[[], None] | None = None,
                  grain: Grain = None, partial: bool = False,
                  left: Callable[[], float | None] | None = None) -> tuple[LayoutProblem, dict[str, Any]]:
    """The layout problem of `wl` on `spec` and its document (the problem file's content).

    `exchange="greedy"` prices the kept candidates and redistributions by greedy horizons
    instead of load bounds; what is kept is still decided by load bounds, so a plan left
    out costs more than the limit under either pricing (`excluded_above`). `check` is called
    as moves are priced and may raise to stop the build. Phases are priced as `ipuopt gen`
    emits them at `grain` (`workloads.fragments`). `left` (seconds left) lets the pricing of
    moves stop at once when its pace shows that it cannot end in time. With `partial`, a
    build stopped after the reference plan returns the reference's problem (its few most
    promising candidates per operator, `kept.partial`) instead of raising: plans, but no
    proof that no plan left out is better. `reference_widths`: see `_reference`."""
    if exchange not in EXCHANGE_PRICES:
        raise InputError.one("", "--exchange", f"unknown pricing {exchange!r} (one of "
                                               f"{', '.join(EXCHANGE_PRICES)})")
    t0 = time.perf_counter()
    say = progress or (lambda _m: None)
    cat = Catalogue(wl, spec, min_utilisation, grain, say, check or (lambda: None))
    moves = Moves(cat)
    report = Report(enumerated=cat.enumerated, within=within, exchange=exchange, grain=grain)
    moves.refresh(cat.cands, exact=False)
    ref, small, doc, width, stopped = _reference(cat, moves, reference_widths, partial)
    report.reference = ref.value
    say(f"reference plan: {ref.value} cycles from the {width} most promising candidates per operator")
    try:
        if stopped:
            raise Stopped
        kept, rows = _kept(cat, moves, report, ref.value * (1 + within), exchange, say, left)
        doc = document(cat, kept, rows)
        report.rows, report.scheduled = len(rows), moves.scheduled
        report.pairs_priced, report.pairs_probed = moves.pairs_priced, moves.pairs_probed
        report.pairs_floored = moves.pairs_floored
    except Stopped:
        if not partial:
            raise
        say(f"stopped: the problem holds the reference's {width} candidates per operator")
        report.partial, kept = width, small  # and `doc` stays the reference problem's
    report.kept = {k: len(v) for k, v in kept.items()}
    report.seconds = time.perf_counter() - t0
    doc["kept"] = report.to_dict()
    problem = layout_problem_from_dict(doc, f"{wl.name} on {spec.name}")
    problem.catalogue = cat
    return problem, doc


def _reference(cat: Catalogue, moves: Moves, widths: tuple[int, ...], partial: bool
               ) -> tuple[Any, dict, dict, int, bool]:
    """The reference plan (the exact optimum of each operator's `widths[0]`, then `widths[1]`
    most promising candidates; wider still while none fits memory), its candidates, their
    problem, their width, and whether the build was stopped while a wider one was made (with
    `partial`, the best so far stands). A wider set holds the narrower: its plan is never
    worse, and the limit it sets decides what is kept (siglip-mlp: 121,618 -> 118,339 cycles,
    the build 23 -> 11 s; vitb-mlp on gc2: 44,720 -> 42,079)."""
    from ipuopt.layout.solve import plan  # the reference plan is solved exactly

    best: tuple[Any, dict, dict, int] | None = None
    for i, width in enumerate(widths):
        try:
            small = top(cat, width)
            doc = document(cat, small, moves.rows(small, math.inf))
        except Stopped:
            if best is None or not partial:
                raise
            return (*best, True)
        found = plan(layout_problem_from_dict(doc, "reference"), "milp", {"workers": 1, "seed": 0})
        if found.value is not None and (best is None or found.value <= best[0].value):
            best = (found, small, doc, width)
        if best is not None and i > 0:
            break
    if best is None:
        raise InputError.one(cat.wl.source, "", f"no plan of the {width} most promising candidates per "
                                                f"operator fits {cat.spec.name}'s memory ({found.reason})")
    return (*best, False)


def _kept(cat: Catalogue, moves: Moves, report: Report, limit: float, exchange: str,
          say: Callable[[str], None], left: Callable[[], float | None] | None
          ) -> tuple[dict[str, list], list[dict[str, Any]]]:
    """The candidates a plan within `limit` can use, pruned to a fixed point, and the
    redistribution rows between them."""
    report.limit = limit
    kept = prune(cat, limit, cat.cands)
    for _ in range(8):  # fewer producers: larger move floors, fewer candidates; to a fixed point
        moves.refresh(kept)
        smaller, ties = tied(cat, limit, kept)
        report.least = max(report.least or 0.0, ties.least)
        say("kept " + ", ".join(f"{k} {len(v)}" for k, v in smaller.items()))
        if sum(map(len, smaller.values())) == sum(map(len, kept.values())):
            break
        kept = smaller
    if exchange == "greedy":  # dominance is judged on the prices the problem will carry
        moves.greedy_own(kept)
    kept, ties = tied(cat, limit, {name: undominated(cs) for name, cs in kept.items()})
    report.least = max(report.least or 0.0, ties.least)
    say("kept " + ", ".join(f"{k} {len(v)}" for k, v in kept.items()) + "; pricing moves")
    rows = moves.rows(kept, limit, left, ties)
    if exchange == "greedy":
        moves.greedy_rows(rows)
    return kept, rows
