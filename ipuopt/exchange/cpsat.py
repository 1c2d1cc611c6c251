"""CP-SAT model of one exchange phase, every rule of the model doc.

Variables: a start per transfer and, where both widths are allowed, a literal
`paired`. Each occupancy of each width becomes an (optional) interval at
start + offset; lanes are no-overlaps, memory hazards and format switches
are no-overlaps of shifted or extended intervals (see `_element_constraints`
and `_format_constraints`). Objective: the horizon.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from ipuopt.backends import cpsat
from ipuopt.backends.cpsat import new_solver
from ipuopt.errors import InputError
from ipuopt.exchange.instance import Instance, Solution
from ipuopt.exchange.timing import ORDINARY, PAIRED, Timing
from ipuopt.params import Progress, SolveParams, Stopped
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
                check: Callable[[], None] | None = None) -> ExchangeModel:
    """The model with horizon in [lower, upper].

    For large-neighbourhood search: `fixed` pins some transfers (start, width),
    which become constants whose occupancies still block the others, and
    `window` bounds the start of a free transfer to [lo, hi] (dependencies on
    transfers left out of `timings` are expressed through these windows).
    `check` is called every few hundred constraints and may raise to stop (Ctrl-C, deadline).
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
    _element_constraints(m, by_kind, ex.write_hazard, ex.tx_overhead, make, stats, fixed, check)
    if ex.format_switch:
        _format_constraints(m, by_kind["rx"], ex.format_switch, make, stats, fixed, check)
    by_id = {tm.transfer.id: tm for tm in timings}
    for tm in timings:
        for a in tm.transfer.after:
            if a in by_id and not (tm.transfer.id in fixed and a in fixed):
                m.add(starts[tm.transfer.id] >= completion(by_id[a], starts, paired))
    m.minimize(horizon)
    return ExchangeModel(m, starts, paired, horizon, stats)


def completion(tm: Timing, starts: dict, paired: dict) -> Any:
    """Completion at all destinations: linear in the start and the width literal."""
    tid = tm.transfer.id
    lit = paired[tid]
    if isinstance(lit, int):
        return starts[tid] + tm.end_offset(PAIRED if lit else ORDINARY)
    gain = tm.end_offset(ORDINARY) - tm.end_offset(PAIRED)
    return starts[tid] + tm.end_offset(ORDINARY) - gain * lit


def _element_constraints(m: cp_model.CpModel, by_kind: dict, hazard: int, overhead: int,
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
        if hazard <= overhead:
            ivs = make(reads, shift=-hazard)
            ivs += make(writes, grow=-hazard)
            m.add_no_overlap([iv for _, _, iv in ivs])
            continue
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


def hint_horizon(timings: list[Timing], hint: tuple[dict[str, int], dict[str, str]]) -> int:
    starts, widths = hint
    return max((starts[tm.transfer.id] + tm.end_offset(widths[tm.transfer.id]) for tm in timings),
               default=0)


def solve_cpsat(inst: Instance, hint: Solution, params: SolveParams,
                progress: Progress | None = None) -> Result:
    """Minimise the horizon; the greedy schedule is the hint and the fallback.

    With a time limit, the first `prove_split` of it (default 0.5) optimises;
    if that ends unproved, the rest asks the plain decision question "is there
    a schedule shorter than the incumbent?" repeatedly. Without an objective
    CP-SAT's propagation often refutes it far sooner than the optimiser moves
    its bound (Brucker's open-shop instances: seconds against minutes).
    """
    spec, timings, lower = inst.spec, inst.timings, inst.bound
    options = dict(params.options)
    split = float(options.pop("prove_split", 0.5))
    params = params.with_(options=options)
    limit = params.budget()
    if not 0 < split <= 1:
        raise InputError.one("", "params.prove_split", "must be in (0, 1]")
    upper = inst.horizon(hint)
    if limit < 0.05:
        return Result(Status.FALLBACK, hint, upper, None, solver="cpsat", extras={"reason": "no time left"})
    t0 = time.perf_counter()
    tell = progress or (lambda info: None)
    tell({"stage": "cpsat: building the model"})
    try:
        em = build_model(spec, timings, upper, lower, check=params.stop.check)
    except Stopped:
        return Result(Status.FALLBACK, hint, upper, None, time.perf_counter() - t0, "cpsat",
                      {"reason": "stopped while building the model"})
    for tid, var in em.starts.items():
        em.model.add_hint(var, hint[0][tid])
        lit = em.paired[tid]
        if not isinstance(lit, int):
            em.model.add_hint(lit, hint[1][tid] == PAIRED)
    em.model.add_hint(em.horizon, upper)
    build = time.perf_counter() - t0
    tell({"stage": "cpsat: search"})
    solver = new_solver(params, limit * split)
    code = cpsat.solve(em.model, solver, progress)
    extras = {"build_s": round(build, 3), **em.stats}

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
    elif split >= 1 or params.stop.is_set():
        return done(Status.FALLBACK, hint, upper, None)
    else:
        solution, status, bound, incumbent = hint, Status.FALLBACK, lower, upper
    if status != Status.OPTIMAL and split < 1:
        em.model.clear_objective()
        em.model.clear_hints()
        proved = 0
        while incumbent > bound and not params.stop.is_set():
            remaining = float(limit) - (time.perf_counter() - t0)
            if remaining < 0.1:
                break
            em.model.add(em.horizon <= incumbent - 1)
            decide = new_solver(params, remaining)
            code = cpsat.solve(em.model, decide)
            if code == cp_model.INFEASIBLE:
                bound = incumbent
                proved += 1
            elif code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                solution = _read(decide, em)
                incumbent = int(decide.value(em.horizon))
                status = Status.FEASIBLE
                if progress:
                    progress({"incumbent": incumbent, "bound": bound})
            else:
                break
        extras["decision_steps"] = proved
        if incumbent <= bound:
            status = Status.OPTIMAL
    return done(status, solution, incumbent, bound)
