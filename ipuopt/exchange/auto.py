"""`--solver auto`: the method chosen by the phase's size, the best of all it ran kept.

Every phase first gets the non-delay greedy (rule `time`) with three width policies (on
large phases only when the limit is 30 s or more, as it is slower on wide multicasts, and
no new one after 40% of the limit). Small phases then go to CP-SAT, warm-started with the
better schedule; it proves most of them. A larger phase that falls apart into parts that
share no lane, element or dependency (`split`: a reduction's groups on disjoint tiles) is
solved part by part first, each kind of part once, the longest first (60% of the time left).
Larger ones cut into fragments are justified (below; 15% of the time left at most), then
solved as their boxes (`coarse`: a box's fragments one block, auto on the blocks, unrolled;
60% of the time left), then coloured into rounds (`colour`: a fifth of the time at most, at
once given up where rounds do not fit), then their streams of alike fragments between a few
tiles put in one repeating pattern (`periodic`: a quarter of the time left at most), then
justified (`justify`: forward-backward passes of the list greedy until the horizon settles;
30% of the time left at most), then get the iterated greedy from the best schedule so far
for half of the remaining time (many full greedy schedules, each valid), then LNS from its
best (CP-SAT re-placing a few hundred transfers at a time).
The best schedule and the best bound of every method are kept, so auto never returns worse
than the greedy; the solver named is the method that made the schedule returned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ipuopt.budget import Budget, Stopped
from ipuopt.exchange.coarse import fragmented
from ipuopt.exchange.greedy import greedy_schedule, timed_cost
from ipuopt.exchange.instance import ExchangeMethod, Instance, Solution
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import PIPELINE, declare, method
from ipuopt.result import Result, Status

CPSAT_UP_TO = 300  # transfers: CP-SAT's whole model still proves or nearly proves these
TIMED_FROM = 30.0  # seconds of time limit from which the non-delay greedy is tried first
PAIRED_CREDITS = (0.25, 1.0, 0.0)  # its width policies, the most often best first


@dataclass(frozen=True)
class Stage:
    """One step of the pipeline: a method of the registry (`runs`, by default its name) given
    `share` of the time left when it starts, from the best schedule so far."""

    name: str
    share: float
    runs: str = ""

    def method(self) -> ExchangeMethod:
        return method("exchange", self.runs or self.name).load()


SMALL = (Stage("time", 1.0, "nondelay"), Stage("cpsat", 1.0))
# A phase that falls apart (`split`): its parts first, the longest of them solved whole; the
# stages after it work on the whole phase from its schedule. A small part is most often a
# reduction's group, where one repeating pattern (`periodic`) does what CP-SAT does not
# (120 fragments among three tiles: 1,540 cycles where CP-SAT keeps the greedy's 1,898).
SPLIT = Stage("split", 0.6)
PART = (Stage("time", 1.0, "nondelay"), Stage("periodic", 0.25), Stage("cpsat", 1.0))
# On phases cut into fragments, `justify` also runs before `coarse` (a share of its own): it
# settles in seconds where the boxes' search spends most of its time without gain, and what
# it finds is the start every later stage improves on (60 s each, 2 cores, at 3a6b02e: attention
# oproj-redistribution on the beam's layouts 14,966 -> 14,768, vitb-mlp gemm2-redistribution
# 14,639 -> 14,099; nowhere worse among six redistributions and reductions).
EARLY = Stage("justify", 0.15)
LARGE = (Stage("time", 0.4, "nondelay"), EARLY, Stage("coarse", 0.6), Stage("colour", 0.2),
         Stage("periodic", 0.25), Stage("justify", 0.3), Stage("iterated", 0.5), Stage("lns", 1.0))


def pipeline(inst: Instance, limit: float, part: bool = False) -> tuple[Stage, ...]:
    """The stages auto runs on `inst` with `limit` seconds (`part`: a part of a phase, `split`)."""
    if len(inst.timings) <= CPSAT_UP_TO:  # CP-SAT proves a small phase's parts one kind at a
        # time where it does not prove their sum (eight alike groups of 12: at once, against
        # 263 unproven after 60 s)
        return PART if part else (SPLIT, *SMALL) if len(inst.parts) > 1 else SMALL
    stages = LARGE if fragmented(inst.timings) else tuple(s for s in LARGE
                                                          if s.name != "coarse" and s != EARLY)
    if limit < TIMED_FROM or timed_cost(inst.timings) >= 0.4 * limit:
        stages = stages[1:]
    return (SPLIT, *stages) if len(inst.parts) > 1 else stages


@declare("exchange", "nondelay", "heuristic", "the non-delay list greedy (rule time) with each width policy")
def solve_nondelay(inst: Instance, hint: Solution, params: SolveParams, budget: Budget,
                   progress: Progress | None = None) -> Result:
    """The non-delay greedy (rule `time`) with each width policy; the best, or the hint."""
    best, best_h = hint, inst.horizon(hint)

    for credit in PAIRED_CREDITS:
        try:
            timed = greedy_schedule(inst.phase, inst.spec, "time", inst.timings, paired_credit=credit,
                                    check=budget.check)
        except Stopped:
            break
        if (h := inst.horizon(timed)) < best_h:
            best, best_h = timed, h
    status = Status.FEASIBLE if best is not hint else Status.FALLBACK
    return Result(status, best, best_h, inst.bound, solver="time")


@declare("exchange", "auto", "portfolio",
         "by size: split, CP-SAT, or the non-delay greedy, coarse, colour, periodic, justify, "
         "iterated and LNS",
         options=PIPELINE, runs_cpsat=True)
def solve_auto(inst: Instance, hint: Solution, params: SolveParams, budget: Budget,
               progress: Progress | None = None, part: bool = False) -> Result:
    limit, t0 = budget.limit(), time.perf_counter()
    best = Result(Status.FALLBACK, hint, inst.horizon(hint), inst.bound, solver="greedy")
    bound, ran, extras = inst.bound, [], {}

    def told(event: dict) -> None:  # a stage's best (coarse's blocks, say) may be worse than auto's
        progress({**event, "incumbent": min(event["incumbent"], best.value)}  # type: ignore[misc]
                 if "incumbent" in event else event)

    for stage in pipeline(inst, limit, part):
        if budget.is_set() or best.status == Status.OPTIMAL:
            break
        if progress is not None:
            progress({"stage": f"auto: {stage.name}"})
        left = max(0.0, limit - (time.perf_counter() - t0))
        found = stage.method()(inst, best.solution, params, budget.share(stage.share * left, firm=False),
                               told if progress is not None else None)
        ran.append(stage.name)
        bound = max(bound, found.bound or 0)
        if found.status == Status.FALLBACK or found.solution is None:
            continue
        extras.update({k: v for k, v in found.extras.items() if k != "reason"})
        extras[f"{stage.name}_horizon"] = found.value
        if found.value < best.value or found.status == Status.OPTIMAL:
            best = Result(found.status, found.solution, found.value, solver=stage.name)
            inst.keep(best.solution, best.value, f"auto/{stage.name}")
            if progress is not None:  # not every stage reports what it hands back (split)
                progress({"incumbent": best.value, "bound": bound})
    if not ran and best.value > bound:  # no stage had time: the greedy is returned as it is
        return Result(Status.FALLBACK, best.solution, best.value, bound, solver="greedy",
                      extras={"reason": f"no time for a stage after the greedy and the bounds "
                                        f"({limit:.2f} s were left)", "methods": ran})
    if best.value <= bound:
        return Result(Status.OPTIMAL, best.solution, best.value, best.value, solver=f"auto/{best.solver}",
                      extras={**extras, "methods": ran})
    return Result(Status.FEASIBLE, best.solution, best.value, bound, solver=f"auto/{best.solver}",
                  extras={**extras, "methods": ran})
