"""CP-SAT model of one exchange phase, every rule of the model doc.

Variables: a start per transfer and, where both widths are allowed, a literal
`paired`. Each occupancy of each width becomes an (optional) interval at
start + offset; lanes are no-overlaps, memory hazards and format switches
are no-overlaps of shifted or extended intervals (see `_element_constraints`
and `_format_constraints`). Objective: the horizon.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from ipuopt.backends import cpsat
from ipuopt.backends.cpsat import new_solver
from ipuopt.budget import Budget, Stopped
from ipuopt.exchange.instance import Instance, Solution, horizon_of
from ipuopt.exchange.timing import ORDINARY, PAIRED, Timing
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import SHARE, declare
from ipuopt.result import Result, Status
from ipuopt.spec import Spec


@dataclass
class ExchangeModel:
    """The built model and the handles needed to read a solution back."""

    model: cp_model.CpModel
    starts: dict[str, cp_model.IntVar]
    paired: dict[str, Any]  # literal, or a constant 0/1 when the width is fixed
    horizon: cp_model.IntVar
    stats: dict[str, int] = field(default_factory=dict)
    ordered: list[list[Timing]] = field(default_factory=list)  # groups kept in one order: hints `in_order`

    def hint_order(self, solution: Solution) -> Solution:
        """`solution` as the model keeps it: alike transfers' slots handed out in start order."""
        return in_order(self.ordered, solution)


def _width_literal(model: cp_model.CpModel, tm: Timing) -> Any:
    if len(tm.widths) == 2:
        return model.new_bool_var(f"paired_{tm.transfer.id}")
    return 1 if tm.widths[0] == PAIRED else 0


def _presence(lit: Any, width: str) -> Any:
    """Presence of the `width` version of a transfer; True for the only width it has."""
    if isinstance(lit, int):
        return True
    return lit if width == PAIRED else ~lit


def _interval(model: cp_model.CpModel, start: Any, size: int, present: Any, name: str) -> Any:
    if present is True:
        return model.new_fixed_size_interval_var(start, size, name)
    return model.new_optional_fixed_size_interval_var(start, size, present, name)


def build_model(spec: Spec, timings: list[Timing], upper: int,
                lower: int = 0, fixed: dict[str, tuple[int, str]] | None = None,
                window: dict[str, tuple[int, int]] | None = None,
                check: Callable[[], None] | None = None, break_mirror: bool = True,
                break_identical: bool = True) -> ExchangeModel:
    """The model with horizon in [lower, upper].

    For large-neighbourhood search: `fixed` pins some transfers (start, width),
    which become constants whose occupancies still block the others, and
    `window` bounds the start of a free transfer to [lo, hi] (dependencies on
    transfers left out of `timings` are expressed through these windows).
    `check` is called every few hundred constraints and may raise to stop (Ctrl-C, deadline).
    `break_mirror` keeps one of each schedule and its mirror image when the phase is
    `time_symmetric` (stats["mirror_broken"] says it was); `break_identical` keeps one order
    of the transfers alike in every respect (`identical_groups`), so hints go through
    `hint_order`.
    """
    check = check or (lambda: None)
    window = window or {}
    ex = spec.exchange
    fixed = fixed or {}
    m = cp_model.CpModel()
    horizon = m.new_int_var(lower, upper, "horizon")
    starts: dict[str, Any] = {}
    paired: dict[str, Any] = {}
    by_kind: dict[str, dict[tuple, list]] = {k: defaultdict(list) for k in ("tx", "rx", "rd", "wr")}
    for n, tm in enumerate(timings):
        if n % 64 == 0:
            check()
        t = tm.transfer
        if t.id in fixed:
            s0, w0 = fixed[t.id]
            starts[t.id] = s0
            paired[t.id] = 1 if w0 == PAIRED else 0
            widths = (w0,)
        else:
            lo, hi = window.get(t.id, (0, upper))
            latest = min(hi, upper - min(tm.end_offset(w) for w in tm.widths))
            starts[t.id] = m.new_int_var(lo, max(lo, latest), f"s_{t.id}")
            paired[t.id] = _width_literal(m, tm)
            widths = tm.widths
        lit = paired[t.id]
        for w in widths:
            present = True if t.id in fixed else _presence(lit, w)
            for occ in tm.occupancies(w, spec):
                by_kind[occ.kind][occ.key].append((t.id, w, occ.offset, occ.length, present))
        m.add(horizon >= completion(tm, starts, paired))
    stats = {"transfers": len(timings), "intervals": 0, "pairwise": 0}

    def make(items: list, shift: int = 0, grow: int = 0) -> list:
        stats["intervals"] += len(items)
        return [(tid, w, _interval(m, starts[tid] + off + shift, ln + grow - shift, pr,
                                   f"{tid}_{w}"))
                for tid, w, off, ln, pr in items]

    for kind in ("tx", "rx"):
        for items in by_kind[kind].values():
            check()
            if len({i[0] for i in items}) > 1 and any(i[0] not in fixed for i in items):
                m.add_no_overlap([iv for _, _, iv in make(items)])
    _element_constraints(m, by_kind, ex.write_hazard, ex.tx_overhead, ex.rx_lead, make, stats, fixed, check)
    if ex.format_switch:
        _format_constraints(m, by_kind["rx"], ex.format_switch, make, stats, fixed, check)
    mirror = break_mirror and not fixed and not window and timings and time_symmetric(spec, timings)
    if mirror:
        # Reversing time maps every schedule to one of the same horizon: keep the half in
        # which the anchor's midpoint is in the first half of the horizon.
        tm = mirror_anchor(timings)
        m.add(starts[tm.transfer.id] + completion(tm, starts, paired) <= horizon)
        stats["mirror_broken"] = 1
    ordered = identical_groups(timings, fixed, window) if break_identical and not mirror else []
    stats["ordered"] = _order_identical(m, spec, ordered, starts, paired)  # (with the mirror break
    # kept too, every optimum could be lost)
    by_id = {tm.transfer.id: tm for tm in timings}
    for tm in timings:
        for a in tm.transfer.after:
            if a in by_id and not (tm.transfer.id in fixed and a in fixed):
                m.add(starts[tm.transfer.id] >= completion(by_id[a], starts, paired))
    m.minimize(horizon)
    return ExchangeModel(m, starts, paired, horizon, stats, ordered)


# The share of the time that optimises on phases whose mirror is broken (open shops): there
# the questions prove and the optimiser barely moves its bound (benchmarks/README.md, "Open
# shop": Brucker's j6-per0-0, j7-per0-1, j7-per10-0 proven in 25-27 s at 0.2, 41-45 s at 0.5)
OPEN_SHOP_SPLIT = 0.2
SPLIT = 0.5  # on any other phase


def identical_groups(timings: list[Timing], fixed: dict | None = None,
                     window: dict | None = None, elements: bool = True) -> list[list[Timing]]:
    """Free transfers alike in every respect the rules see (tiles, widths, durations,
    arrivals, elements, window; no dependency either way), in the order given: any two can
    trade their (start, width) and the schedule stays a schedule of the same horizon. Without
    `elements`, memory elements may differ (then they no longer can)."""
    fixed, window = fixed or {}, window or {}
    waited = {a for tm in timings for a in tm.transfer.after}
    groups: dict[tuple, list[Timing]] = defaultdict(list)
    for tm in timings:
        t = tm.transfer
        if not (t.after or t.id in waited or t.id in fixed):
            groups[(t.src, t.dst, tm.widths, tuple(tm.duration.items()), tuple(tm.arrival.items()),
                    elements and (tm.read_elements, tm.write_elements), window.get(t.id))].append(tm)
    return [g for g in groups.values() if len(g) > 1]


def in_order(groups: list[list[Timing]], solution: Solution) -> Solution:
    """The same schedule with each group's (start, width) handed out in start order."""
    starts, widths = dict(solution[0]), dict(solution[1])
    for group in groups:
        ids = [tm.transfer.id for tm in group]
        slots = sorted((starts[t], widths[t]) for t in ids)
        for t, (s, w) in zip(ids, slots, strict=True):
            starts[t], widths[t] = s, w
    return starts, widths


def _order_identical(m: cp_model.CpModel, spec: Spec, groups: list[list[Timing]], starts: dict,
                     paired: dict) -> int:
    """Each of a group (`identical_groups`) starts after the previous one leaves their common
    transmit lane: every schedule has such a twin (`in_order`), so the optimum is kept and the
    search no longer walks through permutations."""
    o = spec.exchange.tx_overhead
    pairs = [(a, b) for group in groups for a, b in itertools.pairwise(group)]
    for a, b in pairs:
        m.add(starts[b.transfer.id] >= completion(a, starts, paired) - max(a.arrival.values()) + o)
    return len(pairs)


def time_symmetric(spec: Spec, timings: list[Timing]) -> bool:
    """True when every schedule read backwards is a schedule: no dependencies, and each
    transfer holds every resource over the same interval [S, S + end) at either width
    (no overhead, latency, lead or hazard: the open shop). Lane, element and format
    rules are symmetric in time."""
    return all(not tm.transfer.after and all(
        occ.offset == 0 and occ.length == tm.end_offset(w) for w in tm.widths
        for occ in tm.occupancies(w, spec)) for tm in timings)


def mirror_anchor(timings: list[Timing]) -> Timing:
    """The transfer whose midpoint the symmetry break keeps in the first half: the longest."""
    return max(timings, key=lambda tm: min(tm.end_offset(w) for w in tm.widths))


def mirrored(timings: list[Timing], solution: Solution) -> Solution:
    """The schedule read backwards (valid when `time_symmetric`): S' = H - S - end."""
    starts, widths = solution
    h = horizon_of(timings, starts, widths)
    return ({tm.transfer.id: h - starts[tm.transfer.id] - tm.end_offset(widths[tm.transfer.id])
             for tm in timings}, dict(widths))


def completion(tm: Timing, starts: dict, paired: dict) -> Any:
    """Completion at all destinations: linear in the start and the width literal."""
    tid = tm.transfer.id
    lit = paired[tid]
    if isinstance(lit, int):
        return starts[tid] + tm.end_offset(PAIRED if lit else ORDINARY)
    gain = tm.end_offset(ORDINARY) - tm.end_offset(PAIRED)
    return starts[tid] + tm.end_offset(ORDINARY) - gain * lit


def _element_constraints(m: cp_model.CpModel, by_kind: dict, hazard: int, overhead: int, lead: int,
                         make: Any, stats: dict, fixed: dict, check: Callable[[], None]) -> None:
    """A read and a write of one element on one tile must not overlap.

    With write_hazard <= tx_overhead, one no-overlap per element over reads
    moved `hazard` cycles earlier and writes without their hazard tail is exact:
    two reads of a tile are at least tx_overhead apart (the transmit lane) and two
    writes' payload windows never overlap (the receive lane). Otherwise each
    read/write pair gets its own two-interval no-overlap.
    """
    for key, writes in by_kind["wr"].items():
        check()
        reads = by_kind["rd"].get(key)
        if not reads or all(i[0] in fixed for i in reads + writes):
            continue
        if hazard <= overhead + lead:
            ivs = make(reads, shift=-min(hazard, overhead))
            ivs += make(writes, grow=-min(hazard, overhead))
            m.add_no_overlap([iv for _, _, iv in ivs])
            continue
        # redundant, for propagation: reads from o before and writes to lead after their
        # payload never overlap one another, and never a write the pairs below keep apart
        m.add_no_overlap([iv for _, _, iv in make(reads, shift=-overhead) + make(writes, grow=lead - hazard)])
        r_ivs, w_ivs = make(reads), make(writes)
        for rid, _, riv in r_ivs:
            for wid, _, wiv in w_ivs:
                if rid != wid and not (rid in fixed and wid in fixed):
                    m.add_no_overlap([riv, wiv])
                    stats["pairwise"] += 1


def _format_constraints(m: cp_model.CpModel, rx: dict, switch: int, make: Any,
                        stats: dict, fixed: dict, check: Callable[[], None]) -> None:
    """Receives of different formats on one tile are `switch` cycles apart: each
    ordinary/paired pair of receive intervals, both extended by `switch` at the end,
    must not overlap."""
    for items in rx.values():
        check()
        ords = [i for i in items if i[1] == ORDINARY]
        pairs = [i for i in items if i[1] == PAIRED]
        if not ords or not pairs or all(i[0] in fixed for i in items):
            continue
        o_ivs, p_ivs = make(ords, grow=switch), make(pairs, grow=switch)
        for oid, _, oiv in o_ivs:
            for pid, _, piv in p_ivs:
                if oid != pid and not (oid in fixed and pid in fixed):
                    m.add_no_overlap([oiv, piv])
                    stats["pairwise"] += 1


def _read(solver: cp_model.CpSolver, em: ExchangeModel) -> tuple[dict[str, int], dict[str, str]]:
    starts = {tid: v if isinstance(v, int) else int(solver.value(v)) for tid, v in em.starts.items()}
    widths = {tid: (PAIRED if (lit if isinstance(lit, int) else solver.boolean_value(lit))
                    else ORDINARY) for tid, lit in em.paired.items()}
    return starts, widths


class _Probes:
    """Which decision questions to ask between the proven bound `lo` and the incumbent `hi`.

    First T = lo, on a short share: the bound is often the optimum (most Taillard and
    Gueret-Prins instances) and a schedule that meets it ends the search. Then
    bisection: refuting T raises lo to T + 1, a schedule lowers hi to its horizon. A
    question left open (time out) is retried nearer hi, where both answers come easier;
    the last question, T = hi - 1, gets all the time left.
    """

    FIRST_SHARE = 0.15

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi
        self.open_at: int | None = None  # the highest T left undecided so far
        self.refuted = 0
        self.log: list[list] = []  # [T, answer] per question, in order
        self.exhausted = False  # the last question, with all the time left, stayed open

    @property
    def done(self) -> bool:
        return self.lo >= self.hi or self.exhausted

    def next(self, remaining: float) -> tuple[int, float]:
        """The next T and its seconds."""
        top = self.hi - 1
        if not self.log:
            target = self.lo
        elif self.open_at is None:
            target = (self.lo + top) // 2
        else:
            target = (max(self.open_at + 1, self.lo) + top + 1) // 2
        target = max(self.lo, min(target, top))
        if target == top:
            return target, remaining
        if not self.log:
            return target, remaining * self.FIRST_SHARE
        return target, remaining / max(2, (top - target).bit_length() + 1)

    def answer(self, target: int, code: Any, found: int | None) -> None:
        if code == cp_model.INFEASIBLE:
            self.lo = max(self.lo, target + 1)
            self.refuted += 1
            self.log.append([target, "none"])
        elif found is not None:
            self.hi = min(self.hi, found)
            self.log.append([target, found])
        else:
            self.open_at = target if self.open_at is None else max(self.open_at, target)
            self.exhausted = target >= self.hi - 1
            self.log.append([target, "open"])


@declare("exchange", "cpsat", "exact", "the whole phase in CP-SAT, proof phase after",
         options={"prove_split": SHARE}, runs_cpsat=True, profile="cpsat")
def solve_cpsat(inst: Instance, hint: Solution, params: SolveParams, budget: Budget,
                progress: Progress | None = None) -> Result:
    """Minimise the horizon; the greedy schedule is the hint and the fallback.

    With a time limit, the first `prove_split` of it (default `SPLIT`, `OPEN_SHOP_SPLIT` on
    a phase whose mirror is broken) optimises;
    if that ends unproved, the rest asks plain decision questions "is there a
    schedule of horizon at most T?" (`_Probes`). Without an objective CP-SAT's
    propagation often refutes one far sooner than the optimiser moves its bound,
    and finds one far sooner than the optimiser walks down to it (Brucker's
    j8-per10-1: horizon 1,000 = its bound in 2 s at T = 1,000; the optimiser
    stopped at 1,008 in 60 s).
    """
    spec, timings, lower = inst.spec, inst.timings, inst.bound
    options = dict(params.options)
    given = options.pop("prove_split", None)
    params = params.with_(options=options)
    limit = budget.limit()
    upper = inst.horizon(hint)
    if limit < 0.05:
        return Result(Status.FALLBACK, hint, upper, None, solver="cpsat", extras={"reason": "no time left"})
    t0 = time.perf_counter()
    tell = progress or (lambda info: None)
    tell({"stage": "cpsat: building the model"})
    try:
        em = build_model(spec, timings, upper, lower, check=budget.check)
    except Stopped:
        return Result(Status.FALLBACK, hint, upper, None, time.perf_counter() - t0, "cpsat",
                      {"reason": "stopped while building the model"})
    broken = em.stats.get("mirror_broken")
    split = float(given) if given is not None else OPEN_SHOP_SPLIT if broken else SPLIT
    if broken:
        tm = mirror_anchor(timings)
        tid = tm.transfer.id
        if 2 * hint[0][tid] + tm.end_offset(hint[1][tid]) > upper:
            hint = mirrored(timings, hint)  # the same schedule, in the half the model keeps
    hint = em.hint_order(hint)
    for tid, var in em.starts.items():
        em.model.add_hint(var, hint[0][tid])
        lit = em.paired[tid]
        if not isinstance(lit, int):
            em.model.add_hint(lit, hint[1][tid] == PAIRED)
    em.model.add_hint(em.horizon, upper)
    build = time.perf_counter() - t0
    tell({"stage": "cpsat: search"})
    solver = new_solver(params, budget, limit * split)
    code = cpsat.solve(em.model, solver, progress)
    extras = {"build_s": round(build, 3), "prove_split": split, **em.stats}

    def done(status: Status, solution: tuple, value: int, bound: int | None) -> Result:
        extras["solve_s"] = round(time.perf_counter() - t0 - build, 3)
        return Result(status, solution, value, bound, time.perf_counter() - t0, "cpsat", extras)

    if code == cp_model.INFEASIBLE:
        # The hint is feasible with horizon `upper`, so this means lower > upper: greedy is optimal.
        return done(Status.OPTIMAL, hint, upper, upper)
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        solution = _read(solver, em)
        status, bound = cpsat.STATUS[code], int(solver.best_objective_bound)
        incumbent = int(solver.value(em.horizon))
    elif split >= 1 or budget.is_set():
        return done(Status.FALLBACK, hint, upper, None)
    else:
        solution, status, bound, incumbent = hint, Status.FALLBACK, lower, upper
    if status != Status.OPTIMAL and split < 1:
        em.model.clear_objective()
        em.model.clear_hints()
        # With the mirror broken, refutations come sooner and schedules later (j8-per10-0:
        # bound 1,015 against 1,010; j8-per10-1: 1,000 found only without): race both.
        models = [em] + ([build_model(spec, timings, upper, lower, break_mirror=False)]
                         if broken else [])
        for other in models[1:]:
            other.model.clear_objective()
        probe = _Probes(bound, incumbent)
        while not probe.done and not budget.is_set():
            remaining = float(limit) - (time.perf_counter() - t0)
            if remaining < 0.1:
                break
            target, share = probe.next(remaining)
            for one in models:
                domain = one.model.proto.variables[one.horizon.index].domain  # [lower, upper]
                domain[0], domain[1] = probe.lo, target
            which, code, decide = cpsat.race([one.model for one in models], params, budget, share)
            found = None
            if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                solution = _read(decide, models[which])
                status, found = Status.FEASIBLE, inst.horizon(solution)
            probe.answer(target, code, found)
            if progress:
                progress({"incumbent": probe.hi, "bound": probe.lo})
        bound, incumbent = probe.lo, probe.hi
        extras["decision_steps"] = probe.refuted
        extras["probes"] = probe.log
        if incumbent <= bound:
            status = Status.OPTIMAL
    return done(status, solution, incumbent, bound)
