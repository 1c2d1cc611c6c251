"""The whole program: layouts, placement and schedules chosen together, against the compiler's
own way, with the program's bound.

1. Plans: the layout model's k best (exchange priced by load bounds) and the beam's plan.
2. Baselines: the compiler as it is (the beam's plan, first-fit placement, greedy schedules)
   and the load-bound optimum plan with greedy schedules.
3. Finalists: every plan's program generated and replayed with greedy schedules; the best
   is kept (both baselines are finalists, so it is never worse than either). After the
   program bound, the plan at its optimum is replayed as one more finalist when it is none
   of them (the bound steers the search: a plan it values below the best's own bound).
4. Placement: the kept plan's arena placed again (4 KiB offsets, conflict-aware) and kept
   only if its rescheduled phases get shorter (`workloads.reschedule`).
5. Schedules: the kept plan and placement replayed with `auto` on every phase, never worse
   than its greedy run (auto starts from the greedy's schedule). When the placement cannot
   fit (a fragment-level program whose greedy replay takes minutes), the phases whose
   replay was quickest get `auto` as generated, the others keep their greedy schedules.

Two bounds are reported: the chosen program's (`lower_bound`: every phase at its best lower
bound, for these layouts and this placement, `ProgramRun.lower_bound`) and the program's
(`program_bound`: no plan the layout problem admits, under any placement and any schedules,
takes fewer cycles; `layout.program_bound`), priced after the finalists with the best of them
as the ceiling that decides which candidates the bound's model must hold.
"""

from __future__ import annotations

import json
import math
import time
from array import array
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ipuopt.arena.validate import validate_placement
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.solve import solve
from ipuopt.exchange.timing import ORDINARY, PAIRED
from ipuopt.layout.program_bound import ProgramBound, program_bound
from ipuopt.params import Interrupted, Progress, SolveParams, Stopped
from ipuopt.program.cells import Cell, Cells, cell_key
from ipuopt.program.reschedule import PLACE_SHARE, PlacementTrial, horizons, judged, placements
from ipuopt.program.run import run_program
from ipuopt.result import Result, gap
from ipuopt.spec import Spec
from ipuopt.workloads.arena_export import default_offsets, readdress
from ipuopt.workloads.gemm import GemmLayout, compiler_layouts
from ipuopt.workloads.phases import generate
from ipuopt.workloads.records import Generation
from ipuopt.workloads.workload import Workload

# Shares of the time left when each stage starts (building the layout problem takes what it
# needs first): the plans, the finalists' greedy runs, the placement, then auto has the rest.
COMPILER = "compiler (default layouts, first-fit, greedy)"
SHARES = {"build": 0.4, "plans": 0.15, "finalists": 0.4, "bound": 0.2, "placement": 0.35}
REPLAY_RESERVE = 0.05  # of the time left for the schedules: replaying them and writing the run
# After the last cell: the final replay, then letting go of what it holds, each about as long
# as the finalist's own replay (attention at fragment level: 19 s from the last cell to the exit)
REPLAY_MARGIN = 3.0
CLOSING = 3.0  # seconds: the local cluster's workers ending and the run file written
PLACEMENT_REPLAYS = 3  # the placement stage needs time for this many greedy replays, or is skipped
# Without the placement: auto on a phase needs this many times its greedy replay's seconds for
# its greedy to try more rules than the first; the quickest phases get it (up to AUTO_ALONE of
# what is left), the bound the rest, first (it reuses the layout problem's candidates).
AUTO_TIMES = 5.0
AUTO_ALONE = 0.5  # of the time left after the finalists: at most this for that auto, the rest the bound's
BOUND_PLAN = "program bound's plan"
STEERED_SHARE = 0.25  # of the time left after the bound: at most this for replaying its plan


_GENERATIONS: dict[str, Generation] = {}  # per process: the last plan generated, made once


def _generation(ident: str, wl: Workload, spec: Spec, choice: dict[str, str], grain: Any) -> Generation:
    key = cell_key(ident, choice)
    if key not in _GENERATIONS:
        _GENERATIONS.clear()  # one at a time: fragment-level generations are large
        _GENERATIONS[key] = generate(wl, spec, _layouts(wl, spec, choice), grain)
    return _GENERATIONS[key]


Budget = SolveParams | tuple[float, float]  # a share of this clock, or (seconds, epoch deadline)


def _params(given: Budget, **options: Any) -> SolveParams:
    """A cell's budget (with these solver options), called first thing in the cell. On a worker
    (seconds, deadline) starts counting at once, so that generating the plan there is inside
    it, and never runs past the command's deadline (time.time(): another process's monotonic
    clock is not this one's), however long the cell waited for its runner."""
    if not isinstance(given, SolveParams):
        seconds, deadline = given
        given = SolveParams(seconds)
        given.stop.until(time.monotonic() + deadline - time.time())
    given.start_clock()  # a cell's seconds count from its start, not from when it was queued
    return given.with_(options={**given.options, **options}) if options else given


def _give(params: SolveParams, local: bool, seconds: float, keep: float = 0.0) -> Budget:
    """A cell's time: in this process, seconds on the command's clock, else seconds and a
    wall-clock deadline `keep` seconds before the command's end, so that a cell queued behind
    a slow one still leaves the time kept (the final replay: attention's schedule cells ran to
    the command's end and its replay past the limit)."""
    if local:  # Ctrl-C reaches it; its clock starts with the cell, ending `keep` before the command's
        return params.sooner(keep).with_(time_limit=max(0.0, seconds))
    left = params.stop.left()
    return max(0.0, seconds), time.time() + (math.inf if left is None else max(0.0, left - keep))


def packed(weights: list[int], at_once: int) -> list[float]:
    """Each cell's share of a stage's time when `at_once` run together: dealt largest first to
    the least loaded runner (as Dask takes them, submitted in that order), a cell's share is
    its weight over the most loaded runner's; every runner's cells then add up to at most the
    stage, in weight or in time alike."""
    loads = [0] * max(1, at_once)
    for w in sorted(weights, reverse=True):
        loads[loads.index(min(loads))] += w
    return [w / max(loads) if max(loads) else 1.0 for w in weights]


def _finalist(ident: str, wl: Workload, spec: Spec, choice: dict[str, str], grain: Any,
              params: Budget) -> dict[str, Any] | None:
    """A cell: the plan's program replayed with greedy schedules, one rule on large phases
    (every plan's made the same way, and fast; None if cut short)."""
    t, params = time.perf_counter(), _params(params, quick=True)
    gen = _generation(ident, wl, spec, choice, grain)
    made = time.perf_counter() - t
    run = run_program(gen, "greedy", params)
    if run.interrupted:
        return None
    kept = [_compact(gp.phase.transfers, r) for gp, r in zip(gen.phases, run.results, strict=True)]
    doc, took = run.to_dict(), time.perf_counter() - t
    replay = took - made - sum(b["solve_s"] for b in doc["boundaries"])  # simulating the phases
    return {"run": doc, "seconds": took, "generate_s": made, "replay_s": max(0.0, replay), "schedules": kept}


def _compact(transfers: list, res: Result[Schedule]) -> tuple:
    """A phase's schedule in a few bytes a transfer (starts in the phase's order, the paired
    ones' indices), to carry from a cell: dicts of hundreds of thousands of ids would not."""
    sc = res.solution
    return (res.status, res.value, res.bound, sc.phase, sc.spec,
            array("q", (sc.starts[t.id] for t in transfers)),
            array("l", (i for i, t in enumerate(transfers) if sc.widths[t.id] == PAIRED)))


def _expanded(transfers: list, kept: tuple) -> Result[Schedule]:
    status, value, bound, phase, spec, starts, paired = kept
    widths = dict.fromkeys((t.id for t in transfers), ORDINARY)
    widths.update((transfers[i].id, PAIRED) for i in paired)
    starts = {t.id: s for t, s in zip(transfers, starts, strict=True)}
    return Result(status, Schedule(starts, widths, value, phase, spec), value, bound)


def _quickest(finalist: dict[str, Any], budget: float, at_once: int) -> list[int]:
    """The finalist's phases, quickest replay first, whose auto runs (`AUTO_TIMES` their
    replay's seconds each) fit in `budget` seconds with `at_once` running together, after
    generating the plan again (a runner may hold another plan); none for a replay that did
    not keep its schedules or seconds."""
    if finalist.get("schedules") is None:
        return []
    seconds = [b.get("solve_s", math.inf) for b in finalist["greedy"]["boundaries"]]
    budget -= finalist.get("generate_s", math.inf)
    picked: list[int] = []
    total = 0.0
    for i in sorted(range(len(seconds)), key=lambda i: seconds[i]):
        if (total + AUTO_TIMES * seconds[i]) / max(1, at_once) > budget:
            break
        picked.append(i)
        total += AUTO_TIMES * seconds[i]
    return picked


def _auto_need(finalist: dict[str, Any], budget: float, at_once: int) -> float:
    """Seconds the auto of the finalist's quickest phases (`_quickest` within `budget`) takes
    with its generation: 0 when none fits."""
    picked = _quickest(finalist, budget, at_once)
    if not picked:
        return 0.0
    seconds = [b["solve_s"] for b in finalist["greedy"]["boundaries"]]
    return finalist["generate_s"] + sum(AUTO_TIMES * seconds[i] for i in picked) / max(1, at_once)


def _reserve(finalist: dict[str, Any], left: float) -> float:
    """Seconds kept after the schedule cells: the program's final replay (simulating every
    phase, as long as the finalist's replay spent on it: minutes at fragment level) and the
    command's end."""
    return max(2.0, REPLAY_RESERVE * left, REPLAY_MARGIN * finalist.get("replay_s", 0.0) + CLOSING)


def _replays_that_fit(finalist: dict[str, Any], at_once: int, left: float | None) -> int | None:
    """How many placements may be replayed: the rounds of `at_once` replays (each as long as
    the finalist's) that fit in `left` seconds beside what auto then needs on every phase
    and the final replay (a fragment-level replay takes minutes: all nine would leave auto
    nothing); None: all of them."""
    took = finalist["seconds"]
    if left is None or took <= 0:
        return None
    after = _reserve(finalist, left) + _auto_need(finalist, math.inf, at_once)
    return max(0, math.floor((left - after) / took)) * max(1, at_once)


def _placement(ident: str, wl: Workload, spec: Spec, choice: dict[str, str], grain: Any,
               offsets: dict[str, int], params: Budget) -> dict[str, int] | None:
    """A cell: the plan's phases moved to `offsets` and rescheduled with the greedy."""
    params = _params(params, quick=True)
    return horizons(_generation(ident, wl, spec, choice, grain), offsets, "greedy", params)


def _schedule(ident: str, wl: Workload, spec: Spec, choice: dict[str, str], grain: Any,
              offsets: dict[str, int], index: int, params: Budget) -> Result | None:
    """A cell: one phase of the plan, moved to `offsets`, scheduled with `auto`."""
    params = _params(params)
    gen = _generation(ident, wl, spec, choice, grain)
    res = solve(readdress(gen, gen.phases[index], offsets), spec, "auto", params)
    return None if res.interrupted else res


def _finalists(cells: Cells, ident: str, wl: Workload, spec: Spec, grain: Any, unique: list[dict[str, str]],
               stage: SolveParams, give: Callable[[float], Budget]) -> dict[str, dict[str, Any]]:
    """The plans' greedy replays, `cells.parallel` at a time in the order given (the baselines
    first), each round sharing what is left of the stage; no round starts that the last one
    shows will not fit (a replay's first schedules always complete, so a fragment-level
    program can take minutes whatever its share)."""
    done: dict[str, dict[str, Any]] = {}
    par = cells.parallel
    for at in range(0, len(unique), par):
        left = stage.budget() or 0.0
        took = max((r["seconds"] for r in done.values()), default=0.0)
        if done and (left < took or stage.stop.is_set()):
            break
        batch = unique[at:at + par]
        each = left / math.ceil((len(unique) - at) / par)
        replays = cells.run("finalists", [
            Cell(cell_key("finalist", ident, c), _finalist, (ident, wl, spec, c, grain, give(each)))
            for c in batch])
        done.update({json.dumps(c, sort_keys=True): r for c, r in zip(batch, replays, strict=True)
                     if r is not None})
    return done


def _bound_plan(bound: ProgramBound | None, finalists: list[dict[str, Any]]) -> dict[str, str] | None:
    """The plan at the program bound's optimum (its GEMMs' layouts), unless a finalist has it."""
    if bound is None or not bound.plan:
        return None
    if any(all(f["choice"].get(op) == label for op, label in bound.plan.items()) for f in finalists):
        return None
    return dict(bound.plan)


def so_far(best: dict[str, Any], bound: Any) -> str:
    """The progress line's figures: the best program so far and the program bound."""
    return f"best program so far {best['greedy']['total_cycles']}" + (
        f", bound {bound.value}" if bound is not None else "")


def readdressed(gen: Generation, offsets: dict[str, int]) -> Generation:
    """The generation with every phase moved to another placement of its activation arena."""
    return replace(gen, phases=[replace(gp, phase=readdress(gen, gp, offsets)) for gp in gen.phases])


def _layouts(wl: Workload, spec: Spec, choice: dict[str, str]) -> dict[str, GemmLayout]:
    gemms = {o.name for o in wl.operators if o.kind == "gemm"}
    return {op: GemmLayout.parse(label, spec) for op, label in choice.items() if op in gemms}


def optimize(wl: Workload, spec: Spec, grain: int | str | None = None, k: int = 3,
             params: SolveParams | None = None, progress: Progress | None = None,
             cells: Cells | None = None) -> dict[str, Any]:
    """The best program found, its bound and gap, the baselines and every finalist (see the
    module's docstring); a run document (`ipuopt run`'s) with `optimize` beside it. The
    finalists, the placement candidates and the phases' schedules run as `cells` (here, one
    after the other, by default)."""
    from ipuopt.layout.select import BuildOptions, build, select

    params = params or SolveParams()
    params.start_clock()
    tell = progress or (lambda info: None)
    t0 = time.perf_counter()
    ident = cell_key("program", repr(wl), repr(spec), str(grain))

    def give(seconds: float, keep: float = 0.0) -> Budget:
        return _give(params, cells is None or cells.local, seconds, keep)

    def budget(stage: str) -> SolveParams:
        return params.share(SHARES[stage] * params.budget())

    tell({"task": "layout plans"})
    building = params.share(SHARES["build"] * params.budget())
    short = None  # why the layout model gave no plans
    try:
        # stopped by its share, the build hands back its reference problem: a few plans to price
        problem, _ = build(wl, spec, BuildOptions(within=0.02 if k > 1 else 0.0, grain=grain, partial=True),
                           progress, building.stop.check, building.stop.left)
    except Stopped:
        if params.stop.interrupted:
            raise
        short = (f"the layout problem was not built within its {SHARES['build']:.0%} of the time limit: "
                 "the compiler's default layouts are the only plan")
    plans_from = short  # or why its plans come from a part of the space
    if short is None:
        partial = problem.extra.get("kept", {}).get("partial")
        if partial:
            plans_from = (f"the layout problem's build was stopped by its {SHARES['build']:.0%} of the "
                          f"time limit: plans are the best of its {partial} most promising candidates "
                          "per operator")
        sol = select(problem, "milp", budget("plans"), k).solution
        plans = [{"name": f"layout plan {p['rank']}", "model_cycles": p["cycles"], "choice": p["choice"]}
                 for p in (sol.plans or [{"rank": 1, "cycles": sol.cycles, "choice": sol.choice}])]
        if sol.beam and sol.beam.get("choice"):  # second: both baselines come first
            plans.insert(1, {"name": "beam plan", "model_cycles": sol.beam["cycles"],
                             "choice": sol.beam["choice"]})
    else:
        tell({"task": short})
        plans = [{"name": COMPILER, "model_cycles": None,
                  "choice": {op: c.layout.label for op, c in compiler_layouts(wl, spec).items()}}]
    cells = cells or Cells(stop=params.stop)
    par = cells.parallel
    unique = list({json.dumps(p["choice"], sort_keys=True): p["choice"] for p in plans}.values())
    tell({"task": f"finalists: {len(unique)} programs"})
    done = _finalists(cells, ident, wl, spec, grain, unique, budget("finalists"), give)
    finalists = [{**p, **done[key], "greedy": done[key]["run"]} for p in plans  # with its schedules
                 if (key := json.dumps(p["choice"], sort_keys=True)) in done]
    took = max((r["seconds"] for r in done.values()), default=0.0)  # what every later step costs at least
    if not finalists:
        if params.stop.interrupted:
            raise Interrupted("no program was replayed whole before the interrupt")
        return baseline_only(wl, spec, grain, "the time limit ran out before a plan's program was "
                                              "replayed", t0, progress)
    if short and params.stop.expired():  # the default layouts' replay was all there was time for
        return baseline_only(wl, spec, grain, "the time limit ran out while building the layout problem",
                             t0, progress, finalists[0]["greedy"])
    best = min(finalists, key=lambda f: f["greedy"]["total_cycles"])
    final, schedules, placed = best["greedy"], "greedy", None
    bound = None
    if not params.stop.interrupted:
        tell({"task": "program bound"})
        try:
            # when what its share leaves cannot hold the placement (a few replays) and auto,
            # those will not run: the bound may then have the time the quickest phases' auto
            # (the stage that runs instead) does not need, less the run's writing
            left = params.budget()
            later = left is None or (1 - SHARES["bound"]) * left > PLACEMENT_REPLAYS * took
            share = budget("bound") if later else params.share(
                left - _reserve(best, left) - _auto_need(best, AUTO_ALONE * left, par))
            built = None if short else problem.catalogue
            bound = program_bound(wl, spec, grain, best["greedy"]["total_cycles"], params=share,
                                  say=lambda m: tell({"task": m}),
                                  catalogue=built if built is not None and built.grain == grain else None)
        except Stopped:  # stopped before its first round: no bound; the best program stands
            tell({"task": "program bound: stopped before its first round"})
    steered, spare = _bound_plan(bound, finalists), params.stop.left()
    if steered is not None and not params.stop.interrupted and (
            spare is None or spare > (PLACEMENT_REPLAYS + 1) * took):
        # the plan the bound's model values least, when no finalist is it: the bound steers
        # the search (its own bound may be far below the best's); kept if its replay is shorter
        tell({"task": f"the program bound's plan ({so_far(best, bound)})"})
        stage = params.share(STEERED_SHARE * params.budget())
        done = _finalists(cells, ident, wl, spec, grain, [steered], stage, give)
        run = done.get(json.dumps(steered, sort_keys=True))
        if run is not None:
            finalists.append({"name": BOUND_PLAN, "model_cycles": bound.model, "choice": steered, **run,
                              "greedy": run["run"]})
            took = max(took, run["seconds"])
            if run["run"]["total_cycles"] < best["greedy"]["total_cycles"]:
                best = finalists[-1]
    gen = _generation(ident, wl, spec, best["choice"], grain)
    notes: list[str] = []  # why a stage did less than it could: the user asks when the answer is short
    need, spare = PLACEMENT_REPLAYS * took, params.stop.left()
    if params.stop.interrupted:
        pass  # stopped: no placement search, and nothing to explain
    elif spare <= need:
        notes.append(f"placement search skipped: {spare:.1f} s left, below the "
                     f"{PLACEMENT_REPLAYS} greedy replays of the plan it needs ({need:.1f} s)")
    else:  # then auto
        tell({"task": f"placement of {best['name']}"})
        stage = budget("placement")
        arena, named = placements(gen, stage, progress=progress)
        (first, start), rest = named[0], named[1:]
        ranked = sorted(((validate_placement(arena, o).conflicts, n, o) for n, o in rest), key=lambda c: c[0])
        others = ranked[:_replays_that_fit(best, par, params.budget())]  # the least conflicted first
        if len(others) < len(rest):
            notes.append(f"{len(others)} of {len(rest)} other placements replayed: the time left was kept "
                         "for auto on every phase and the final replay")
        share = (1 - PLACE_SHARE) * stage.budget() / max(1, math.ceil(len(others) / par))
        found = cells.run(f"placements ({so_far(best, bound)})", [
            Cell(cell_key("placement", ident, best["choice"], offsets), _placement,
                 (ident, wl, spec, best["choice"], grain, offsets, give(share))) for _, _, offsets in others])
        # as generated, the finalist's replay has its horizons already
        candidates = [PlacementTrial(first, start, validate_placement(arena, start).conflicts,
                                {b["phase"]: b["horizon"] for b in best["greedy"]["boundaries"]})]
        for (conflicts, name, offsets), hs in zip(others, found, strict=True):
            if hs is None:
                break  # cut short: the ones before it are comparable
            candidates.append(PlacementTrial(name, offsets, conflicts, hs))
        placed = judged(gen, arena, "greedy", candidates)
    improved: list[int] = []  # the phases given auto when the placement did not fit
    if placed is not None:
        at, phases = placed["offsets"], list(range(len(gen.phases)))
        if params.stop.left() <= took:
            phases = []
    else:  # as generated: the quickest phases get auto, the others keep their replay's schedules
        at, left = default_offsets(gen), params.budget() or 0.0
        phases = improved = sorted(_quickest(best, left - _reserve(best, left), par))
        if len(phases) < len(gen.phases) and not params.stop.interrupted:
            notes.append(f"auto on {len(phases)} of {len(gen.phases)} phases: the others' ({AUTO_TIMES:g} "
                         f"times their greedy replay) did not fit in the {left:.1f} s left")
    if phases and not params.stop.interrupted:
        left = params.budget() or 0.0
        keep = _reserve(best, left)  # then the replay and the file
        total = max(0.0, left - keep)
        weights = [len(gen.phases[i].phase.transfers) + 1 for i in phases]
        order = sorted(range(len(phases)), key=lambda k: -weights[k])  # the largest first
        secs = [total * part for part in packed(weights, par)]
        tell({"task": f"schedules of {best['name']} ({len(phases)} of {len(gen.phases)} phases)"})
        solved = cells.run(f"schedules ({so_far(best, bound)})", [
            Cell(cell_key("schedule", ident, best["choice"], at, phases[k]), _schedule,
                 (ident, wl, spec, best["choice"], grain, at, phases[k], give(secs[k], keep)))
            for k in order])
        results = {phases[k]: r for k, r in zip(order, solved, strict=True)}
        if all(r is not None for r in results.values()):
            results.update({i: _expanded(gp.phase.transfers, best["schedules"][i])
                            for i, gp in enumerate(gen.phases) if i not in results})
            run = run_program(readdressed(gen, at), "auto",
                              results=[results[i] for i in range(len(gen.phases))]).to_dict()
            if run["total_cycles"] <= best["greedy"]["total_cycles"]:
                final, schedules = run, "auto"  # else the greedy's: never worse
            else:
                notes.append(f"auto's program ({run['total_cycles']} cycles) was longer than the greedy's: "
                             "the greedy's kept")
        elif not params.stop.interrupted:
            notes.append("auto's schedules were cut short by the time limit: the greedy's kept")
    if params.stop.interrupted:
        final = {**final, "interrupted": True}
    # let go of the plan's generation now: freed at the interpreter's exit instead, attention's
    # (4.5 million objects at fragment level) took 14 s past the run file; here 0.2 s
    _GENERATIONS.clear()
    beam = next((f["greedy"]["total_cycles"] for f in finalists if f["name"] == "beam plan"), None)
    if bound is not None:
        final["program_bound"] = bound.value
        final["program_gap"] = gap(final["total_cycles"], bound.value)
    final["optimize"] = {
        "plan": best["name"], "model_cycles": best["model_cycles"], "schedules": schedules,
        "placement": placed["kept"] if schedules == "auto" and placed else "first-fit (as generated)",
        "placement_gain_cycles": placed["before"] - placed["after"] if schedules == "auto" and placed else 0,
        **({"auto_phases": [gen.phases[i].phase.name for i in improved]} if placed is None else {}),
        "baselines": {COMPILER: finalists[0]["greedy"]["total_cycles"]} if short else {
            "load-bound optimum plan, greedy": finalists[0]["greedy"]["total_cycles"],
            **({"compiler (beam plan, first-fit, greedy)": beam} if beam is not None else {})},
        **({"plans_from": plans_from} if plans_from else {}),
        "finalists": [{"name": f["name"], "model_cycles": f["model_cycles"],
                       "greedy_cycles": f["greedy"]["total_cycles"],
                       "greedy_bound": f["greedy"]["lower_bound"], "choice": f["choice"]} for f in finalists],
        "gap_by_phase": {b["phase"]: b["gap_cycles"] for b in final["boundaries"]},
        **({"program_bound": bound.to_dict()} if bound is not None else {}),
        "cells": {"ran": cells.ran, "reused": cells.reused, "at_once": par},
        **({"notes": notes} if notes else {}),
        "seconds": round(time.perf_counter() - t0, 1)}
    return final


def baseline_only(wl: Workload, spec: Spec, grain: int | str | None, why: str, t0: float,
                  progress: Progress | None, run: dict[str, Any] | None = None) -> dict[str, Any]:
    """The compiler's program (`run` when replayed already) when the time limit is too short
    for anything better: its default layouts, first-fit placement and the greedy's first
    schedules (which always complete, whatever the clock), with `optimize.fallback` saying why."""
    if run is None:
        if progress:
            progress({"task": "baseline (default layouts, greedy)"})
        run = run_program(generate(wl, spec, None, grain), "greedy").to_dict()
    name = COMPILER
    run["optimize"] = {"plan": name, "model_cycles": None, "schedules": "greedy",
                       "placement": "first-fit (as generated)", "placement_gain_cycles": 0,
                       "baselines": {name: run["total_cycles"]}, "finalists": [], "fallback": why,
                       "gap_by_phase": {b["phase"]: b["gap_cycles"] for b in run["boundaries"]},
                       "seconds": round(time.perf_counter() - t0, 1)}
    return run
