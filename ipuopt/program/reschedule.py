"""Placement judged by what it does to the schedules: the reference compiler's offset search
(the activation arena's start moved in 4 KiB steps within one memory element) and the
conflict-aware placement (CP-SAT, least conflict weight), each kept only when the program's
phases, re-addressed to it and rescheduled, take fewer cycles in total than they do as the
generator placed them. So the placement returned is never slower than the one it started from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ipuopt.arena.problem import Arena, arena_from_dict
from ipuopt.arena.validate import validate_placement
from ipuopt.budget import Budget, Interrupted
from ipuopt.exchange.solve import solve
from ipuopt.params import Progress, SolveParams
from ipuopt.workloads.arena_export import arena_document, default_offsets, readdress
from ipuopt.workloads.records import Generation

STEP = 4096  # bytes: the reference compiler's offset search
PLACE_SHARE = 0.2  # of a time limit, for the conflict-aware placement


@dataclass
class PlacementTrial:
    name: str
    offsets: dict[str, int]
    conflicts: int  # the placement's conflict weight (arena model)
    horizons: dict[str, int] = field(default_factory=dict)  # phase -> scheduled horizon

    @property
    def total(self) -> int:
        return sum(self.horizons.values())

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "total": self.total, "conflicts": self.conflicts,
                "horizons": self.horizons}


def shifted(arena: Arena, offsets: dict[str, int], step: int = STEP) -> list[tuple[str, dict[str, int]]]:
    """The placement moved up by every multiple of `step` below one memory element that
    still fits the arena (the arena's start moved; buffers keep their order and gaps)."""
    out = []
    for delta in range(step, arena.element_bytes, step):
        moved = {b: o + delta for b, o in offsets.items()}
        if validate_placement(arena, moved).ok:
            out.append((f"start +{delta // 1024} KiB", moved))
    return out


def placements(gen: Generation, params: SolveParams, budget: Budget, conflict_aware: bool = True,
               progress: Progress | None = None) -> tuple[Arena, list[tuple[str, dict[str, int]]]]:
    """The generation's arena and the placements worth rescheduling, as generated first: the
    4 KiB shifts and (`conflict_aware`, given `PLACE_SHARE` of the time limit) CP-SAT's
    least-conflict placement."""
    arena = arena_from_dict(arena_document(gen))
    start = default_offsets(gen)
    named = [("first-fit (as generated)", start), *shifted(arena, start)]
    if conflict_aware and arena.conflicts:
        from ipuopt.arena.solve import place

        if progress:
            progress({"task": "conflict-aware placement"})
        limit = budget.seconds
        aware = place(arena, "conflicts", "cpsat", params,
                      budget=budget.share(PLACE_SHARE * limit if limit else 10.0))
        if aware.solution.offsets is not None:
            named.append(("conflict-aware (CP-SAT)", aware.solution.offsets))
    return arena, named


def horizons(gen: Generation, offsets: dict[str, int], method: str, params: SolveParams, budget: Budget
             ) -> dict[str, int] | None:
    """Every phase re-addressed to `offsets` and scheduled with `method` (the time limit
    shared equally); None when Ctrl-C cut it short."""
    each = None if budget.seconds is None else budget.seconds / max(1, len(gen.phases))
    out = {}
    for gp in gen.phases:
        res = solve(readdress(gen, gp, offsets), gen.spec, method, params, budget=budget.share(each))
        if res.interrupted:
            return None
        out[gp.phase.name] = res.value
    return out


@dataclass
class Rescheduled:
    """Every candidate placement tried, its phases rescheduled with `method`: the one kept
    (the first, as generated, unless another is shorter in total)."""

    workload: str
    spec: str
    arena: str
    method: str
    candidates: list[PlacementTrial]
    kept: PlacementTrial
    interrupted: bool = False  # Ctrl-C: the candidates rescheduled whole before it

    @property
    def before(self) -> int:
        return self.candidates[0].total

    @property
    def after(self) -> int:
        return self.kept.total

    def to_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "spec": self.spec, "arena": self.arena, "method": self.method,
                "before": self.before, "after": self.after, "kept": self.kept.name,
                "gain": (self.before - self.after) / self.before if self.before else 0.0,
                "candidates": [c.to_dict() for c in self.candidates], "offsets": self.kept.offsets,
                **({"interrupted": True} if self.interrupted else {})}


def judged(gen: Generation, arena: Arena, method: str, candidates: list[PlacementTrial],
           interrupted: bool = False) -> Rescheduled:
    """The candidate kept (the first one, as generated, unless another is shorter in total)."""
    if not candidates:
        raise Interrupted("no placement was rescheduled whole before the interrupt")
    before = candidates[0]
    best = min(candidates, key=lambda c: (c.total, c is not before))
    kept = best if best.total < before.total else before
    return Rescheduled(gen.workload.name, gen.spec.name, arena.name, method, candidates, kept, interrupted)


def reschedule(gen: Generation, method: str = "greedy", params: SolveParams | None = None,
               conflict_aware: bool = True, progress: Progress | None = None,
               budget: Budget | None = None) -> Rescheduled:
    """Every candidate placement of the generation's activation arena, its phases rescheduled
    with `method` (each phase given an equal share of `params`' time limit per candidate);
    the one kept and what it gained. `conflict_aware` adds CP-SAT's least-conflict placement."""
    params = params or SolveParams()
    budget = Budget.of(params.time_limit, budget)
    tell = progress or (lambda info: None)
    arena, named = placements(gen, params, budget, conflict_aware, progress)
    limit = budget.seconds
    share = None if limit is None else (1 - PLACE_SHARE) * limit / len(named)
    candidates = []
    for i, (name, offsets) in enumerate(named):
        if candidates and budget.expired():  # out of time: the ones rescheduled so far
            break
        tell({"task": f"candidate {i + 1}/{len(named)}: {name}"})
        found = horizons(gen, offsets, method, params, budget.share(share))
        if found is None:  # cut short by Ctrl-C: not comparable
            break
        candidates.append(PlacementTrial(name, offsets, validate_placement(arena, offsets).conflicts, found))
    return judged(gen, arena, method, candidates, budget.interrupted)
