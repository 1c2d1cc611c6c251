"""Layout selection: candidates, the layout problem, the plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from ipuopt.budget import DEFAULT_TIME_LIMIT, Budget, Stopped
from ipuopt.cli.app import (
    START,
    ExchangeOpt,
    ExportOpt,
    GrainOpt,
    JsonOpt,
    QuietOpt,
    SeedOpt,
    UtilOpt,
    VerboseOpt,
    WithinOpt,
    WorkersOpt,
    app,
)
from ipuopt.cli.options import check_export, check_out, exchange_params, write_export
from ipuopt.cli.terminal import ProgressLines, err, interrupted, solver_log
from ipuopt.errors import InputError
from ipuopt.export import FORMS
from ipuopt.io import write_document
from ipuopt.registry import resolve
from ipuopt.spec import load_spec


@app.command("layouts")
def layouts_cmd(
    workload: Annotated[str, typer.Argument(help="Workload name under models/ or a file.")],
    spec: Annotated[str, typer.Option(help="Spec name or file.")] = "gc200",
    op: Annotated[str | None, typer.Option(help="Only this GEMM.")] = None,
    top: Annotated[int, typer.Option(help="Print the N fastest (0: all).")] = 10,
    min_utilisation: Annotated[float, typer.Option(help="Least fraction of tiles used.")] = 0.5,
    json_out: JsonOpt = False,
) -> None:
    """Every valid candidate layout per GEMM: compute, memory per region, output layout."""
    from ipuopt.workloads.gemm import enumerate_candidates
    from ipuopt.workloads.workload import load_workload

    if top < 0:
        raise InputError.one("", "--top", f"must be >= 0 (0: all), got {top}")
    if not 0 <= min_utilisation <= 1:
        raise InputError.one("", "--min-utilisation", f"must be within [0, 1], got {min_utilisation:g}")
    wl = load_workload(workload)
    sp = load_spec(spec, field="--spec")
    result = {}
    for o in wl.operators:
        if o.kind != "gemm" or (op and o.name != op):
            continue
        cands = sorted(enumerate_candidates(wl, o, sp, min_utilisation),
                       key=lambda c: (c.compute_cycles, c.layout.label))
        result[o.name] = (len(cands), cands[:top] if top else cands)
    if op and not result:
        raise InputError.one(wl.source, "--op", f"no GEMM named {op!r}")
    if json_out:
        print(json.dumps({name: {"count": n, "candidates": [c.to_dict() for c in cs]}
                          for name, (n, cs) in result.items()}, indent=1))
        return
    for name, (n, cs) in result.items():
        print(f"{name}: {n} valid layouts on {sp.name}")
        for c in cs:
            print(f"  {c.layout.label:<30} tiles {c.tiles_used:>5}  compute {c.compute_cycles:>9}  "
                  f"memory {c.memory}  -> {c.output}")


@app.command("layout-problem")
def layout_problem_cmd(
    workload: Annotated[str, typer.Argument(help="Workload name under models/ or a file.")],
    out: Annotated[Path, typer.Option(help="Write the layout problem (YAML) here.")],
    spec: Annotated[str, typer.Option(help="Spec name or file.")] = "gc200",
    within: WithinOpt = 0.0,
    min_utilisation: UtilOpt = 0.5,
    exchange: ExchangeOpt = "bound",
    grain: GrainOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Price every candidate layout of a workload's operators and the redistributions that can
    matter; write the layout problem that `ipuopt layout` solves."""
    from ipuopt.layout.select import BuildOptions, build

    check_out(out, workload, spec)
    with ProgressLines(quiet, f"layout problem {workload} on {spec}") as progress:
        problem, doc = build(workload, spec, BuildOptions(within, min_utilisation, exchange, grain), progress)
    write_document(out, doc)
    kept = doc["kept"]
    if json_out:
        print(json.dumps({"out": str(out), **kept}, indent=1))
        return
    print(f"wrote {out}: {problem.name}, {kept['redistribution_rows']} redistribution rows "
          f"({kept['pairs_priced']} moves priced) in {kept['seconds']} s")
    for op, n in kept["enumerated"].items():
        print(f"  {op:<14} {n:>7} candidates, {kept['kept'][op]:>5} kept")
    print(f"reference plan {kept['reference_cycles']} cycles; kept: every candidate that can be in a plan "
          f"within {kept['within']:.0%} of it; exchange priced by {kept['exchange']} at grain "
          f"{kept['grain']}")
    if kept["exchange"] == "greedy":
        print(f"greedy: {kept['phases_scheduled']} phases scheduled; every plan left out costs more than "
              f"{kept['excluded_above']} cycles")


@app.command("layout")
def layout_cmd(
    problem: Annotated[Path, typer.Argument(help="Layout problem file (YAML or JSON) or bundled name, "
                                                 "or a workload (name or file) to build the problem from.")],
    spec: Annotated[str, typer.Option(help="Spec of a workload (name or file).")] = "gc200",
    solver: Annotated[str, typer.Option(help="milp | cpsat | beam")] = "milp",
    time_limit: Annotated[float | None, typer.Option(
        help="Seconds, wall-clock, for the whole command, building a workload's problem included. Without "
             f"it the exact solver has {DEFAULT_TIME_LIMIT:g} s and a build runs to its end.")] = None,
    k: Annotated[int, typer.Option("--k", help="The k best distinct plans.")] = 1,
    width: Annotated[int, typer.Option(help="Beam baseline: candidates kept per operator.")] = 64,
    beam: Annotated[int, typer.Option(help="Beam baseline: partial plans kept per step.")] = 64,
    rerank: Annotated[bool, typer.Option("--rerank", help="Schedule each plan's phases and rank the plans "
                                                          "by scheduled cycles.")] = False,
    profile: Annotated[str | None, typer.Option(help="Solver profile for --rerank (default greedy).")] = None,
    within: WithinOpt = 0.0,
    min_utilisation: UtilOpt = 0.5,
    exchange: ExchangeOpt = "bound",
    grain: GrainOpt = None,
    workers: WorkersOpt = None,
    seed: SeedOpt = None,
    out: Annotated[Path | None, typer.Option(help="Write the plan JSON here.")] = None,
    export: ExportOpt = None,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Pick one candidate per operator: least compute + exchange + redistribution cycles
    within memory; exact (MILP or CP-SAT) or the beam baseline."""
    from ipuopt.layout.select import BuildOptions, plan_of, problem_of, source_path
    from ipuopt.program.rerank import ranker

    params = resolve("layout", solver, time_limit=time_limit, workers=workers, seed=seed,
                     options={"verbose": True} if verbose else None)[1]
    if profile and not rerank:
        raise InputError.one("", "--profile", "schedules the plans of --rerank: give --rerank too")
    again = exchange_params(profile, None, None, None, None, []) if rerank else None
    path = source_path(problem)
    check_out(out, path, spec, profile)
    check_out(export, path, spec, option="--export", suffixes=tuple(FORMS))
    check_export(export, out, solver)
    budget = Budget(time_limit, since=START)
    options = BuildOptions(within, min_utilisation, exchange, grain)
    if export is not None:
        from ipuopt.export import layout_model

        try:
            with ProgressLines(quiet, "layout problem") as progress:
                problem_, _ = problem_of(problem, spec, k, options, progress, budget.check)
        except Stopped:
            err(f"error: the time limit ({time_limit:g} s) ran out while building the layout problem of "
                f"{problem}; give more time, or build it once with `ipuopt layout-problem`")
            raise typer.Exit(1) from None
        return write_export(lambda form: layout_model(problem_, form), export, json_out, path)
    with solver_log(verbose), ProgressLines(quiet, f"layout {solver}") as progress:
        res = plan_of(problem, spec, solver, params, k, options, width, beam,
                      ranker(*again, budget, progress) if again else None, progress, budget)
    result = res.to_dict()
    if out and result["choice"]:
        write_document(out, result, protect=(path,))
    if json_out:
        print(json.dumps(result, indent=1))
    else:
        _print_plan(result, solver)
    if res.interrupted:
        interrupted("the plan" if result["choice"] else None, res.status, out if result["choice"] else None)
    if not result["choice"]:
        raise typer.Exit(1)


def _print_plan(result: dict[str, Any], solver: str) -> None:
    print(f"problem    {result['workload']}: solver {solver}  status {result['status']}  "
          f"time {result['runtime_s']:.2f}s")
    if kept := result.get("kept"):
        counts = ", ".join(f"{op} {n}/{kept['enumerated'][op]}" for op, n in kept["kept"].items())
        print(f"kept       {counts} candidates ({kept['seconds']} s to build)")
    if result["cycles"] is not None:
        print(f"cycles     {result['cycles']}" + ("" if result["lower_bound"] is None
                                                     else f"  lower bound {result['lower_bound']}"))
    for op, cid in result["choice"].items():
        print(f"  {op:<14} {cid}")
    if "reason" in result:
        print(f"reason     {result['reason']}")
    b = result.get("beam")
    if b and solver != "beam":
        print(f"beam       {b['cycles'] if b['cycles'] is not None else 'no plan within memory,'} cycles "
              f"(width {b['width']}, beam {b['beam']})")
        for d in b.get("discarded", []):
            where = (f"screened out at rank {d['rank']} of {d['of']}" if d["where"] == "screen"
                     else f"dropped at step {d['step']}, rank {d['rank']} (beam {d['beam']})")
            print(f"  lost     {d['operator']} = {d['candidate']}: {where}")
    for p in result.get("plans", []):
        picks = "  ".join(f"{o}={c}" for o, c in p["choice"].items())
        print(f"plan {p['rank']:<5} {p['cycles']}  {picks}")
    if rr := result.get("rerank"):
        print(f"{'rank':>4} {'model':>9} {'scheduled':>10} {'sched rank':>10}")
        for r in rr:
            print(f"{r['rank']:>4} {r['cycles']:>9} {r['scheduled']:>10} {r['scheduled_rank']:>10}"
                  + ("" if r["agrees"] else "  <- the rankings disagree"))
