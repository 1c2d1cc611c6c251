"""Arena placement: `place`, and `place --reschedule` on a workload's phases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ipuopt.budget import DEFAULT_TIME_LIMIT, Budget
from ipuopt.cli.app import START, ExportOpt, GrainOpt, JsonOpt, PlanOpt, QuietOpt, VerboseOpt, app
from ipuopt.cli.options import check_export, check_out, refuse_unread, write_export
from ipuopt.cli.terminal import ProgressLines, interrupted, json_doc, num, reclaim_stdout, solver_log
from ipuopt.errors import InputError
from ipuopt.export import FORMS
from ipuopt.io import FORMATS, write_atomic, write_document
from ipuopt.registry import resolve
from ipuopt.spec import load_spec
from ipuopt.workloads.fragments import parse_grain
from ipuopt.workloads.plans import plan_layouts


@app.command("place")
def place_cmd(
    arena: Annotated[Path | None, typer.Argument(help="Arena file (YAML, JSON) or bundled name.")] = None,
    csv_in: Annotated[Path | None, typer.Option("--csv", help="Allocator CSV: id,lower,upper,size.")] = None,
    capacity: Annotated[int | None, typer.Option(help="Bytes available (with --csv).")] = None,
    objective: Annotated[str, typer.Option(help="fit | peak | conflicts")] = "fit",
    solver: Annotated[str, typer.Option(help="auto | greedy | baseline | search | cpsat | milp")] = "auto",
    time_limit: Annotated[float, typer.Option(help="Seconds, wall-clock, for the whole command."
                                              )] = DEFAULT_TIME_LIMIT,
    workers: Annotated[int | None, typer.Option(
        help="CP-SAT workers; with 1, auto runs the search and then CP-SAT (reproducible) "
             "instead of racing them.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seeds the search's restarts and CP-SAT.")] = None,
    out: Annotated[Path | None, typer.Option(help="Placement JSON (or CSV with --csv).")] = None,
    export: ExportOpt = None,
    reschedule: Annotated[bool, typer.Option(
        "--reschedule", help="ARENA is a workload (name or file): try its activation arena's start at 4 KiB "
                             "steps within one memory element and the conflict-aware placement, and keep "
                             "one only if the phases, rescheduled, take fewer cycles in total.")] = False,
    spec: Annotated[str, typer.Option(help="With --reschedule: the spec (name or file).")] = "gc200",
    plan: PlanOpt = None,
    grain: GrainOpt = None,
    schedule_with: Annotated[str, typer.Option(help="With --reschedule: the exchange method that "
                                                    "schedules every phase (greedy, auto, ...).")] = "greedy",
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Give buffers offsets: no overlap while live together, within capacity."""
    from ipuopt.arena.problem import OBJECTIVES, load_arena, load_csv, offsets_csv
    from ipuopt.arena.solve import place

    refuse_unread("not read with --reschedule" if reschedule else "read only with --reschedule", {
        "--objective": objective != "fit", "--solver": solver != "auto", "--workers": workers is not None,
        "--seed": seed is not None, "--capacity": capacity is not None, "--export": export is not None,
    } if reschedule else {
        "--spec": spec != "gc200", "--plan": plan is not None, "--grain": grain is not None,
        "--schedule-with": schedule_with != "greedy"})
    if reschedule:
        if arena is None or csv_in is not None:
            raise InputError.one("", "--reschedule", "give the workload (name or file) as ARENA")
        return _reschedule(str(arena), spec, plan, grain, schedule_with, time_limit, out, json_out, quiet)
    if (arena is None) == (csv_in is None):
        raise InputError.one("", "ARENA/--csv", "give an arena file or --csv FILE --capacity BYTES")
    if objective not in OBJECTIVES:
        raise InputError.one("", "--objective",
                             f"unknown objective {objective!r} (one of {', '.join(OBJECTIVES)})")
    params = resolve("arena", solver, time_limit=time_limit, workers=workers, seed=seed,
                     options={"verbose": True} if verbose else None)[1]
    if csv_in is not None and capacity is None:
        raise InputError.one(str(csv_in), "--capacity", "required with --csv")
    if capacity is not None and capacity <= 0:
        raise InputError.one("", "--capacity", f"must be > 0 bytes, got {capacity}")
    source = csv_in or arena
    check_out(out, source, suffixes=(".csv",) if csv_in is not None else tuple(FORMATS))
    check_out(export, source, option="--export", suffixes=tuple(FORMS))
    check_export(export, out, solver)
    budget = Budget(params.limit(), since=START)
    problem = load_csv(csv_in, capacity) if csv_in is not None else load_arena(arena)  # type: ignore[arg-type]
    if export is not None:
        from ipuopt.export import arena_model

        return write_export(lambda form: arena_model(problem, objective, form), export, json_out, source)
    with ProgressLines(quiet, f"place {solver}") as progress, solver_log(verbose):
        res = place(problem, objective, solver, params, progress, budget)
    offsets = res.solution.offsets
    if out is not None and offsets is not None:
        if csv_in is not None:
            write_atomic(out, offsets_csv(problem, offsets), protect=(source,))  # type: ignore[arg-type]
        else:
            write_document(out, res.to_dict(), protect=(source,))  # type: ignore[arg-type]
    if res.interrupted:
        reclaim_stdout()
    if json_out:
        print(json.dumps(json_doc(res, out), indent=1))
    else:
        print(f"arena      {problem.name or source}: {len(problem.buffers)} buffers, capacity "
              f"{problem.capacity}")
        print(f"solver     {res.solver}  status {res.status}  time {res.runtime:.2f}s"
              + (f"  (placement from {res.method})" if res.method != res.solver else ""))
        if offsets is not None and objective == "fit":
            print(f"objective  fit: every buffer placed within capacity (peak {res.solution.peak} of "
                  f"{problem.capacity} bytes)")
        elif offsets is not None:
            print(f"objective  {objective} = {res.value}  peak {res.solution.peak}  "
                  f"lower bound {num(res.bound)}")
        if res.reason:
            print(f"reason     {res.reason}")
    if res.interrupted:
        interrupted("the placement" if offsets is not None else None, res.status, out)
    if offsets is None:
        raise typer.Exit(1)


def _reschedule(workload: str, spec: str, plan: Path | None, grain: str | None, method_name: str,
                time_limit: float, out: Path | None, json_out: bool, quiet: bool) -> None:
    from ipuopt.program.reschedule import reschedule
    from ipuopt.workloads.phases import generate
    from ipuopt.workloads.workload import load_workload

    chosen, params = resolve("exchange", method_name, time_limit=time_limit, field="--schedule-with")
    check_out(out, workload, spec, plan)
    budget = Budget(params.limit(), since=START)
    wl = load_workload(workload)
    sp = load_spec(spec, field="--spec")
    with ProgressLines(quiet, f"reschedule {wl.name}") as progress:
        gen = generate(wl, sp, plan_layouts(plan, wl, sp), parse_grain(grain, sp))
        doc = reschedule(gen, chosen.name, params, progress=progress, budget=budget).to_dict()
    if out:
        write_document(out, doc)
    if json_out:
        print(json.dumps(doc, indent=1))
        return
    print(f"arena      {doc['arena']} on {doc['spec']}: phases scheduled by {doc['method']}")
    names = list(doc["candidates"][0]["horizons"])
    print(f"{'placement':<26} {'conflicts':>9} {'exchange':>9}  " + "  ".join(names))
    for c in doc["candidates"]:
        print(f"{c['name']:<26} {c['conflicts']:>9} {c['total']:>9}  "
              + "  ".join(f"{h:>{len(n)}}" for n, h in c["horizons"].items()))
    print(f"kept       {doc['kept']}: {doc['before']} -> {doc['after']} cycles of exchange "
          f"({doc['gain']:.1%} less)" if doc["after"] < doc["before"] else
          f"kept       {doc['kept']}: no candidate made the phases shorter ({doc['before']} cycles)")
