"""The whole program: its phases (`gen`), a run on the chip (`run`), `optimize`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from ipuopt.budget import DEFAULT_TIME_LIMIT, Budget, Interrupted, Stopped, run_interruptible
from ipuopt.cli.app import (
    START,
    GrainOpt,
    JsonOpt,
    LimitHelp,
    ParamOpt,
    PlanOpt,
    QuietOpt,
    SeedOpt,
    WorkersOpt,
    app,
)
from ipuopt.cli.options import check_out, check_out_dir, exchange_params, one_source
from ipuopt.cli.terminal import ProgressLines, err, interrupted, pct, reclaim_stdout
from ipuopt.errors import InputError
from ipuopt.io import write_atomic, write_document
from ipuopt.params import SolveParams
from ipuopt.registry import method
from ipuopt.spec import load_spec
from ipuopt.workloads.fragments import grain_name, parse_grain
from ipuopt.workloads.plans import parse_layouts, plan_layouts


@app.command("gen")
def gen_cmd(
    workload: Annotated[str, typer.Argument(help="Workload name under models/ or a file.")],
    spec: Annotated[str, typer.Option(help="Spec name or file.")] = "gc200",
    layout: Annotated[list[str], typer.Option(help="OP=RxCxP/AxB[/REGION], repeatable.")] = [],  # noqa: B006
    out_dir: Annotated[Path | None, typer.Option(help="Write one phase file per phase here.")] = None,
    arena: Annotated[bool, typer.Option("--arena", help="Also write the workload's arena file.")] = False,
    plan: PlanOpt = None,
    grain: GrainOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Generate every exchange phase a workload needs with the chosen GEMM layouts."""
    from ipuopt.workloads.phases import generate, phase_stats
    from ipuopt.workloads.workload import load_workload

    check_out_dir(out_dir)
    one_source(layout, plan)
    if arena and out_dir is None:
        raise InputError.one("", "--arena", "needs --out-dir to write the arena file into")
    wl = load_workload(workload)
    sp = load_spec(spec, field="--spec")
    cut = parse_grain(grain, sp)
    with ProgressLines(quiet, f"gen {wl.name}"):
        gen = generate(wl, sp, {**plan_layouts(plan, wl, sp), **parse_layouts(layout, sp)}, cut)
        stats = [phase_stats(gp, sp) for gp in gen.phases]
    rows = []
    for gp, st in zip(gen.phases, stats, strict=True):
        if out_dir is not None:
            out_dir.mkdir(exist_ok=True)
            path = out_dir / f"{wl.name}-{gp.phase.name}.json"
            doc = gp.phase.to_dict()
            doc["spec"] = sp.name
            write_document(path, doc)
            st["file"] = str(path)
        rows.append(st)
    if arena and out_dir is not None:
        from ipuopt.workloads.arena_export import arena_document

        doc = arena_document(gen)
        path = out_dir / f"{wl.name}-arena.yaml"
        write_atomic(path, yaml.safe_dump(doc, sort_keys=False, width=200))
    layouts = {op: c.to_dict() for op, c in gen.layouts.items()}
    if json_out:
        print(json.dumps({"workload": wl.name, "spec": sp.name, "grain": grain_name(cut),
                          "layouts": layouts, "phases": rows}, indent=1))
        return
    for op, c in layouts.items():
        print(f"{op:<10} {c['layout']:<28} tiles {c['tiles']:>5}  compute {c['compute']:>8}  "
              f"memory {c['memory']}")
    print(f"transfers at grain {grain_name(cut)}; 'box': the same phase with every box moved whole")
    print(f"{'phase':<26} {'transfers':>9} {'receives':>9} {'median d':>8} {'src words':>10} "
          f"{'bound':>7} {'box':>6} {'box rcv':>8}  fanout")
    for r in rows:
        fan = " ".join(f"{k}:{v}" for k, v in r["fanout"].items())
        print(f"{r['phase']:<26} {r['transfers']:>9} {r['receives']:>9} {r['median_payload_cycles']:>8g} "
              f"{r['source_words']:>10} {r['endpoint_bound']:>7} {r['box']['transfers']:>6} "
              f"{r['box']['receives']:>8}  {fan}")


@app.command("run")
def run_cmd(
    workload: Annotated[str, typer.Argument(help="Workload name under models/ or a file.")],
    spec: Annotated[str, typer.Option(help="Spec name or file.")] = "gc200",
    layout: Annotated[list[str], typer.Option(help="OP=RxCxP/AxB[/REGION], repeatable.")] = [],  # noqa: B006
    plan: PlanOpt = None,
    profile: Annotated[str | None, typer.Option(help="Solver profile for every phase.")] = None,
    solver: Annotated[str | None, typer.Option(help="greedy (default) | cpsat | milp | lns | justify "
                                                    "| iterated | colour | periodic | auto")] = None,
    time_limit: Annotated[float | None, typer.Option(help=LimitHelp + " Shared by the phases in "
                                                     "proportion to their transfers.")] = None,
    workers: WorkersOpt = None,
    seed: SeedOpt = None,
    param: ParamOpt = [],  # noqa: B006
    out: Annotated[Path | None, typer.Option(help="Write the run here (.json or .yaml; for render "
                                                  "--program).")] = None,
    grain: GrainOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """The whole program on the chip: per-tile compute, barriers, scheduled exchanges."""
    from ipuopt.program.run import run_program
    from ipuopt.workloads.phases import generate
    from ipuopt.workloads.workload import load_workload

    backend, params = exchange_params(profile, solver, time_limit, workers, seed, param)
    check_out(out, workload, spec, plan, profile)
    one_source(layout, plan)
    budget = Budget(params.limit(method("exchange", backend).default_limit), since=START)
    wl = load_workload(workload)
    sp = load_spec(spec, field="--spec")
    cut = parse_grain(grain, sp)
    with ProgressLines(quiet, f"run {wl.name}") as progress:
        gen = generate(wl, sp, {**plan_layouts(plan, wl, sp), **parse_layouts(layout, sp)}, cut)
        run = run_program(gen, backend, params, progress, budget=budget)
    doc = run.to_dict()
    if out:
        write_document(out, doc)
    if run.interrupted:
        reclaim_stdout()
    if json_out:
        print(json.dumps(doc, indent=1))
    else:
        _print_run(doc)
    if run.interrupted:
        interrupted(f"the program up to phase {len(doc['boundaries'])}", "feasible", out)


@app.command("optimize")
def optimize_cmd(
    workload: Annotated[str, typer.Argument(help="Workload name under models/ or a file.")],
    spec: Annotated[str, typer.Option(help="Spec name or file.")] = "gc200",
    grain: GrainOpt = None,
    k: Annotated[int, typer.Option("--k", help="Layout plans to finish (the model's k best), beside the "
                                               "beam's plan.")] = 3,
    time_limit: Annotated[float, typer.Option(help="Seconds, wall-clock, for the whole command.")
                          ] = DEFAULT_TIME_LIMIT,
    out: Annotated[Path | None, typer.Option(help="Write the run here (.json or .yaml; for render "
                                                  "--program). Finished cells are kept beside it "
                                                  "(OUT.cells/) until the run completes: the same "
                                                  "command resumes.")] = None,
    workers: Annotated[int | None, typer.Option(help="Cells at once on a local Dask cluster (default: "
                                                     "one per core; 1: in this process).")] = None,
    cluster: Annotated[str | None, typer.Option(help="Run the cells on the Dask scheduler at this "
                                                     "address (tcp://HOST:PORT).")] = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """The whole program: layout plans finished with real schedules, the placement kept only
    if it shortens them, auto schedules; beside the compiler's way, with the program's bound.
    Finalists, placement candidates and phases run as cells on Dask."""
    import shutil

    from ipuopt.program.cells import Cells, check_cluster
    from ipuopt.program.optimize import optimize
    from ipuopt.workloads.workload import load_workload

    if k < 1:
        raise InputError.one("", "--k", f"must be >= 1, got {k}")
    if workers is not None and workers < 1:
        raise InputError.one("", "--workers", f"must be >= 1, got {workers}")
    if workers is not None and cluster:
        raise InputError.one("", "--workers", "give --workers or --cluster, not both")
    check_cluster(cluster)
    params = SolveParams(time_limit)
    check_out(out, workload, spec)
    budget = Budget(params.limit(), since=START)
    wl = load_workload(workload)
    sp = load_spec(spec, field="--spec")
    cut = parse_grain(grain, sp)
    folder = None if out is None else out.with_name(out.name + ".cells")
    try:
        with ProgressLines(quiet, f"optimize {wl.name}") as progress, \
                Cells(folder, cluster, workers or os.cpu_count() or 1, budget, progress) as cells:
            # in a thread: Ctrl-C in any stage (the bound runs here, not in a cell) asks every
            # stage to stop, and the best program so far is kept
            found, _ = run_interruptible(lambda: optimize(wl, sp, cut, k, params, progress, cells, budget),
                                         budget)
        doc = None if found is None else found.to_dict()
    except Stopped:  # only Ctrl-C gets here: a short time limit returns the baseline
        doc = None
    if doc is None:
        raise Interrupted("nothing finished before the interrupt")
    if out:
        write_document(out, doc)
        if folder is not None and not doc.get("interrupted"):
            shutil.rmtree(folder, ignore_errors=True)  # complete: nothing to resume
    if doc.get("interrupted"):
        reclaim_stdout()
    if json_out:
        print(json.dumps(doc, indent=1))
    else:
        _print_optimize(doc)
    if doc.get("interrupted"):
        interrupted("the program", "feasible", out)
    if doc["optimize"].get("fallback"):
        err(f"error: --time-limit: {time_limit:g} s is too short to optimize {wl.name} "
            f"({doc['optimize']['fallback']}); the compiler's program is returned instead")
        raise typer.Exit(2)


def _print_optimize(doc: dict[str, Any]) -> None:
    o = doc["optimize"]
    for name, cycles in o["baselines"].items():
        print(f"baseline   {name}: {cycles} cycles")
    for f in o["finalists"]:
        print(f"finalist   {f['name']}: model {f['model_cycles']}, greedy program {f['greedy_cycles']}")
    print(f"chosen     {o['plan']}, placement {o['placement']}, schedules {o['schedules']} "
          f"({o['seconds']} s)")
    for note in o.get("notes", []):
        print(f"note       {note}")
    _print_run(doc)
    if "program_bound" in o:
        pb = o["program_bound"]
        how = "proven" if pb["proven"] else f"{pb['rounds']} pricing rounds, not converged"
        print(f"program bound {pb['value']} cycles over every plan, placement and schedule ({how}; "
              f"{pb['moves_priced']} moves priced in {pb['seconds']} s), gap {pct(doc['program_gap'])}")


def _print_run(doc: dict[str, Any]) -> None:
    for op, label in doc["layouts"].items():
        print(f"{op:<10} {label}")
    print(f"{'phase':<26} {'transfers':>9} {'compute':>8} {'min':>8} {'spread':>7} {'last':>5} "
          f"{'horizon':>8} {'bound':>8} {'end':>9}")
    for b in doc["boundaries"]:
        print(f"{b['phase']:<26} {b['transfers']:>9} {b['compute_max']:>8} {b['compute_min']:>8} "
              f"{b['spread']:>7} {str(b['last_tile']):>5} {b['horizon']:>8} {b['lower_bound']:>8} "
              f"{b['end']:>9}")
    print(f"total {doc['total_cycles']} cycles: compute {doc['compute_cycles']}, exchange "
          f"{doc['exchange_cycles']}, sync {doc['sync_cycles']} (arrival spread "
          f"{doc['arrival_spread_cycles']} within the compute)")
    if doc.get("lower_bound") is not None:
        print(f"bound {doc['lower_bound']} cycles for these layouts and this placement (every phase at its "
              f"best bound), gap {pct(doc['gap'])}")
