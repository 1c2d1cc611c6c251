"""The whole program: layouts, placement and schedules chosen together, against the compiler's
own way, with the program's bound.

1. Plans: the layout model's k best (exchange priced by load bounds) and the beam's plan.
2. Baselines: the compiler as it is (the beam's plan, first-fit placement, greedy schedules)
   and the load-bound optimum plan with greedy schedules.
3. Finalists: every plan's program generated and replayed with greedy schedules; the best
   is kept (both baselines are finalists, so it is never worse than either).
4. Placement: the kept plan's arena placed again (4 KiB offsets, conflict-aware) and kept
   only if its rescheduled phases get shorter (`workloads.reschedule`).
5. Schedules: the kept plan and placement replayed with `auto` on every phase, never worse
   than its greedy run (auto starts from the greedy's schedule).

Two bounds are reported: the chosen program's (`lower_bound`: every phase at its best lower
bound, for these layouts and this placement, `ProgramRun.lower_bound`) and the program's
(`program_bound`: no plan the layout problem admits, under any placement and any schedules,
takes fewer cycles; `layout.program_bound`), priced after the finalists with the best of them
as the ceiling that decides which candidates the bound's model must hold.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from ipuopt.layout.program_bound import program_bound
from ipuopt.params import Interrupted, Progress, SolveParams, Stopped
from ipuopt.result import gap
from ipuopt.spec import Spec
from ipuopt.workloads.arena_export import readdress
from ipuopt.workloads.gemm import GemmLayout
from ipuopt.workloads.phases import generate
from ipuopt.workloads.program import run_program
from ipuopt.workloads.records import Generation
from ipuopt.workloads.reschedule import reschedule
from ipuopt.workloads.workload import Workload

# Shares of the time left when each stage starts (building the layout problem takes what it
# needs first): the plans, the finalists' greedy runs, the placement, then auto has the rest.
SHARES = {"plans": 0.15, "finalists": 0.4, "bound": 0.2, "placement": 0.35, "schedules": 1.0}


def readdressed(gen: Generation, offsets: dict[str, int]) -> Generation:
    """The generation with every phase moved to another placement of its activation arena."""
    return replace(gen, phases=[replace(gp, phase=readdress(gen, gp, offsets)) for gp in gen.phases])


def _layouts(wl: Workload, spec: Spec, choice: dict[str, str]) -> dict[str, GemmLayout]:
    gemms = {o.name for o in wl.operators if o.kind == "gemm"}
    return {op: GemmLayout.parse(label, spec) for op, label in choice.items() if op in gemms}


def optimize(wl: Workload, spec: Spec, grain: int | str | None = None, k: int = 3,
             params: SolveParams | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """The best program found, its bound and gap, the baselines and every finalist (see the
    module's docstring); a run document (`ipuopt run`'s) with `optimize` beside it."""
    from ipuopt.layout.select import BuildOptions, build, select

    params = params or SolveParams()
    params.start_clock()
    tell = progress or (lambda info: None)
    t0 = time.perf_counter()

    def budget(stage: str) -> SolveParams:
        return params.share(SHARES[stage] * params.budget())

    tell({"task": "layout plans"})
    try:
        problem, _ = build(wl, spec, BuildOptions(within=0.02 if k > 1 else 0.0, grain=grain), progress,
                           params.stop.check)
    except Stopped:
        if params.stop.interrupted:
            raise
        return baseline_only(wl, spec, grain, "the time limit ran out while building the layout problem",
                             t0, progress)
    plan = select(problem, "milp", budget("plans"), k)
    sol = plan.solution
    plans = [{"name": f"layout plan {p['rank']}", "model_cycles": p["cycles"], "choice": p["choice"]}
             for p in (sol.plans or [{"rank": 1, "cycles": sol.cycles, "choice": sol.choice}])]
    if sol.beam and sol.beam.get("choice"):  # second: both baselines come first
        beam_plan = {"name": "beam plan", "model_cycles": sol.beam["cycles"], "choice": sol.beam["choice"]}
        plans.insert(1, beam_plan)
    each = SHARES["finalists"] * params.budget() / len(plans)
    finalists: list[dict[str, Any]] = []
    took = 0.0  # seconds of one finalist's greedy replay: what every later step costs at least
    for p in plans:
        same = next((f for f in finalists if f["choice"] == p["choice"]), None)
        if same is not None:  # the beam often picks the model's plan: replayed once
            finalists.append({**p, "gen": same["gen"], "greedy": same["greedy"]})
            continue
        if finalists and params.stop.left() < 1.5 * took:  # the greedy's first schedule always runs
            break
        tell({"task": f"finalist: {p['name']}"})
        t1 = time.perf_counter()
        gen = generate(wl, spec, _layouts(wl, spec, p["choice"]), grain)
        run = run_program(gen, "greedy", params.share(each)).to_dict()
        took = max(took, time.perf_counter() - t1)
        if run.get("interrupted"):  # a program cut short is not comparable
            break
        finalists.append({**p, "gen": gen, "greedy": run})
    if not finalists:
        if params.stop.interrupted:
            raise Interrupted("no program was replayed whole before the interrupt")
        return baseline_only(wl, spec, grain, "the time limit ran out before a plan's program was "
                                              "replayed", t0, progress)
    best = min(finalists, key=lambda f: f["greedy"]["total_cycles"])
    final, schedules, placed = best["greedy"], "greedy", None
    bound = None
    if not params.stop.interrupted:
        tell({"task": "program bound"})
        bound = program_bound(wl, spec, grain, best["greedy"]["total_cycles"], params=budget("bound"),
                              say=lambda m: tell({"task": m}))
    if not params.stop.interrupted and params.stop.left() > 3 * took:  # a few candidates, then auto
        tell({"task": f"placement of {best['name']}"})
        try:
            placed = reschedule(best["gen"], "greedy", budget("placement"), progress=progress)
        except Interrupted:
            placed = None
    if placed is not None and not params.stop.interrupted and params.stop.left() > took:
        tell({"task": f"schedules of {best['name']}"})
        run = run_program(readdressed(best["gen"], placed["offsets"]), "auto", budget("schedules"),
                          progress).to_dict()
        if not run.get("interrupted") and run["total_cycles"] <= best["greedy"]["total_cycles"]:
            final, schedules = run, "auto"  # else the greedy's: never worse
    if params.stop.interrupted:
        final = {**final, "interrupted": True}
    beam = next((f["greedy"]["total_cycles"] for f in finalists if f["name"] == "beam plan"), None)
    if bound is not None:
        final["program_bound"] = bound.value
        final["program_gap"] = gap(final["total_cycles"], bound.value)
    final["optimize"] = {
        "plan": best["name"], "model_cycles": best["model_cycles"], "schedules": schedules,
        "placement": placed["kept"] if schedules == "auto" else "first-fit (as generated)",
        "placement_gain_cycles": placed["before"] - placed["after"] if schedules == "auto" else 0,
        "baselines": {"load-bound optimum plan, greedy": finalists[0]["greedy"]["total_cycles"],
                      **({"compiler (beam plan, first-fit, greedy)": beam} if beam is not None else {})},
        "finalists": [{"name": f["name"], "model_cycles": f["model_cycles"],
                       "greedy_cycles": f["greedy"]["total_cycles"],
                       "greedy_bound": f["greedy"]["lower_bound"], "choice": f["choice"]} for f in finalists],
        "gap_by_phase": {b["phase"]: b["gap_cycles"] for b in final["boundaries"]},
        **({"program_bound": bound.to_dict()} if bound is not None else {}),
        "seconds": round(time.perf_counter() - t0, 1)}
    return final


def baseline_only(wl: Workload, spec: Spec, grain: int | str | None, why: str, t0: float,
                  progress: Progress | None) -> dict[str, Any]:
    """The compiler's program when the time limit is too short for anything better: its
    default layouts, first-fit placement and the greedy's first schedules (which always
    complete, whatever the clock), with `optimize.fallback` saying why."""
    if progress:
        progress({"task": "baseline (default layouts, greedy)"})
    run = run_program(generate(wl, spec, None, grain), "greedy").to_dict()
    name = "compiler (default layouts, first-fit, greedy)"
    run["optimize"] = {"plan": name, "model_cycles": None, "schedules": "greedy",
                       "placement": "first-fit (as generated)", "placement_gain_cycles": 0,
                       "baselines": {name: run["total_cycles"]}, "finalists": [], "fallback": why,
                       "gap_by_phase": {b["phase"]: b["gap_cycles"] for b in run["boundaries"]},
                       "seconds": round(time.perf_counter() - t0, 1)}
    return run
