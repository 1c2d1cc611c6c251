"""Many phases at once (`compare`, sweeps), schemas, specs and imports."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Annotated

import typer
import yaml

from ipuopt.cli.app import (
    JsonOpt,
    QuietOpt,
    SeedOpt,
    SpecOpt,
    VerboseOpt,
    WorkersOpt,
    app,
    import_app,
    specs_app,
)
from ipuopt.cli.options import check_out, check_out_dir, exchange_params
from ipuopt.cli.terminal import ProgressLines, err, exit_now, num, pct, plural, solver_log
from ipuopt.errors import InputError
from ipuopt.exchange.phase import load_phase
from ipuopt.exchange.solve import solve
from ipuopt.io import read_document, write_atomic, write_document
from ipuopt.params import SolveParams
from ipuopt.registry import resolve
from ipuopt.spec import diff_specs, load_spec, spec_names


def _is_phase(path: Path) -> bool:
    doc = read_document(path)
    return isinstance(doc, dict) and "transfers" in doc


def _phase_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            # `gen --out-dir` writes the arena (and other files) beside the phases: read only phases.
            documents = sorted(f for f in p.iterdir() if f.suffix in (".yaml", ".yml", ".json"))
            found = [f for f in documents if _is_phase(f)]
            if not found:
                raise InputError.one(str(p), "", "folder holds no phase file (.yaml, .yml, .json with "
                                     "transfers)")
            for f in documents:
                if f not in found:
                    err(f"note: {f}: not a phase (no transfers), skipped")
            files += found
        else:
            files.append(p)
    return files


@app.command("compare")
def compare_cmd(
    phases: Annotated[list[Path], typer.Argument(help="Phase files, folders of them, or bundled names.")],
    solvers: Annotated[str, typer.Option(help="Comma-separated backends.")] = "greedy,cpsat",
    spec: SpecOpt = None,
    time_limit: Annotated[float, typer.Option(help="Seconds, wall-clock, for each row (phase and solver): "
                                                   "bounds, search and validation.")] = 10.0,
    workers: WorkersOpt = None,
    seed: SeedOpt = None,
    json_out: JsonOpt = False,
    csv_out: Annotated[bool, typer.Option("--csv", help="CSV output.")] = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """One row per phase and solver: transfers, best bound, horizon, status, gap, time."""
    if json_out and csv_out:
        raise InputError.one("", "--json/--csv", "give one output format")
    solver_names = [s.strip() for s in solvers.split(",") if s.strip()]
    if not solver_names:
        raise InputError.one("", "--solvers", "name at least one solver")
    for n in solver_names:
        resolve("exchange", n, time_limit=time_limit, workers=workers, seed=seed, field="--solvers")
    rows = []
    loaded = [(f, *load_phase(f, spec)) for f in _phase_files(phases)]
    cells = [(f, ph, sp, name) for f, ph, sp in loaded for name in solver_names]
    with ProgressLines(quiet, "compare") as progress, solver_log(verbose):
        for i, (f, ph, sp, name) in enumerate(cells):
            progress.start(f"compare {i + 1}/{len(cells)}: {f.name} {name}")
            backend, params = exchange_params(None, name, time_limit, workers, seed, [], verbose)
            res = solve(ph, sp, backend, params, progress)
            if res.interrupted:
                raise KeyboardInterrupt  # a table of partly interrupted rows would mislead
            rows.append({"phase": f.name, "spec": sp.name, "solver": name,
                         "transfers": len(ph.transfers), "bound": res.bound,
                         "greedy": res.extras["greedy_horizon"], "horizon": res.value, "status": res.status,
                         "gap": None if res.gap is None else round(res.gap, 4),
                         "time_s": round(res.runtime, 2)})
    if json_out:
        print(json.dumps(rows, indent=1))
    elif csv_out:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["phase"])
        writer.writeheader()
        writer.writerows(rows)
        print(buf.getvalue(), end="")
    else:
        wp = max([len("phase")] + [len(r["phase"]) for r in rows])
        ws = max([len("solver")] + [len(r["solver"]) for r in rows])
        print(f"{'phase':<{wp}} {'solver':<{ws}} {'transfers':>9} {'bound':>8} {'greedy':>8} {'horizon':>8} "
              f"{'status':<9} {'gap':>7} {'time':>7}")
        for r in rows:
            print(f"{r['phase']:<{wp}} {r['solver']:<{ws}} {r['transfers']:>9} {num(r['bound']):>8} "
                  f"{num(r['greedy']):>8} {num(r['horizon']):>8} {r['status']:<9} {pct(r['gap']):>7} "
                  f"{r['time_s']:>6.2f}s")


@app.command("sweep")
def sweep_cmd(
    sweep: Annotated[Path, typer.Argument(help="Sweep file: phases, specs, solvers.")],
    out: Annotated[Path, typer.Option(help="Results folder (results.csv, schedules/); rerun to resume.")],
    cluster: Annotated[str | None, typer.Option(help="A running Dask scheduler, tcp://HOST:PORT "
                                                     "(default: a local cluster).")] = None,
    workers: Annotated[int | None, typer.Option(help="Local worker processes (default: the cores).")] = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Solve every phase x spec x solver cell on Dask; rows appear as cells finish."""
    from ipuopt.program.cells import check_cluster
    from ipuopt.sweeps.plan import load_sweep
    from ipuopt.sweeps.run import run_sweep

    SolveParams(workers=workers)
    check_cluster(cluster)
    if cluster and workers:
        raise InputError.one("", "--workers",
                             "sets the local cluster's size; a --cluster has its own workers")
    check_out_dir(out)
    plan = load_sweep(sweep)
    try:
        with ProgressLines(quiet, f"sweep {plan.name}: {len(plan.cells)} cells", every=5.0) as progress:
            run = run_sweep(plan, out, cluster, workers, progress)
    except KeyboardInterrupt:  # every finished cell is already in results.csv, whole
        from ipuopt.sweeps.run import finished_cells

        err(f"interrupted: {len(finished_cells(out))} of {len(plan.cells)} cells are done in "
            f"{out / 'results.csv'}; rerun the same command to resume")
        exit_now(130)
    doc = {"sweep": plan.name, "out": str(out), "cells": run.total, "solved": run.solved,
           "already_done": run.skipped, "failed": run.failed, "seconds": round(run.seconds, 1)}
    if json_out:
        print(json.dumps(doc, indent=1))
    elif not quiet:
        print(f"sweep {plan.name}: {run.total} cells, {run.solved} solved now, {run.skipped} already "
              f"in {out}, {len(run.failed)} failed, {run.seconds:.1f}s")
        for f in run.failed:
            print(f"failed     {f}")
    if run.failed:
        raise typer.Exit(1)


@app.command("sweep-report")
def sweep_report_cmd(
    out: Annotated[Path, typer.Argument(help="A sweep's results folder.")],
    against: Annotated[Path | None, typer.Option(help="An older sweep's folder to compare with.")] = None,
    png: Annotated[Path | None, typer.Option(help="Also plot it to this PNG file.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Per phase and spec: greedy, best and bound with the gap; per solver totals; with
    --against, what got better or worse."""
    from ipuopt.sweeps.report import compare, load_results, report_png, summarise

    check_out(png, option="--png", suffixes=(".png",))
    rows = load_results(out)
    summary = summarise(rows)
    diff = compare(rows, load_results(against)) if against else None
    if png:
        write_atomic(png, report_png(summary, diff))
    if json_out:
        print(json.dumps({**summary, **({"against": diff} if diff else {})}, indent=1))
        return
    print(f"{'phase':<40} {'spec':<16} {'greedy':>8} {'best':>8} {'bound':>8} {'gap':>7}  best by")
    for c in summary["cases"]:
        print(f"{Path(c['phase']).stem[-40:]:<40} {c['spec']:<16} {str(c['greedy']):>8} {c['best']:>8} "
              f"{c['bound']:>8} {pct(c['gap']):>7}  {c['best_solver']}")
    print(f"\n{'solver':<22} {'cells':>5} {'optimal':>7} {'total horizon':>13} {'mean gap':>8} "
          f"{'seconds':>8}")
    for s in summary["solvers"]:
        print(f"{s['solver']:<22} {s['cells']:>5} {s['optimal']:>7} {s['total_horizon']:>13} "
              f"{pct(s['mean_gap']):>8} {s['seconds']:>8}")
    if diff:
        print(f"\nagainst {against}: {diff['better']} better, {diff['worse']} worse, {diff['same']} same")
        for c in diff["changes"]:
            if c["change"]:
                word = "better" if c["change"] < 0 else "worse"
                print(f"  {word:<6} {Path(c['phase']).stem[-40:]:<40} {c['spec']:<16} {c['solver']:<12} "
                      f"{c['before']:>7} -> {c['after']:>7} ({c['percent']:+.2f}%)")
        for k in diff["only_new"]:
            print(f"  new    {' '.join(k)}")
        for k in diff["only_old"]:
            print(f"  gone   {' '.join(k)}")


@app.command("schema")
def schema_cmd(
    kind: Annotated[str | None, typer.Argument(help="File kind; without it, every kind is listed.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write the schema to this JSON file.")] = None,
    out_dir: Annotated[Path | None,
                       typer.Option(help="Write every kind's schema here as KIND.schema.json.")] = None,
) -> None:
    """The JSON Schema of a file kind (phase, spec, arena, ...), to check files made elsewhere."""
    from ipuopt.schemas import KINDS, schema

    doc = schema(kind) if kind is not None else None  # an unknown kind is refused first
    if out_dir is not None and (kind is not None or out is not None):
        raise InputError.one("", "--out-dir", "writes every kind: give no KIND and no --out")
    if out is not None and kind is None:
        raise InputError.one("", "--out", "name the KIND to write")
    check_out(out, suffixes=(".json",))
    check_out_dir(out_dir)
    if out_dir is not None:
        out_dir.mkdir(exist_ok=True)
        for k in KINDS:
            write_document(out_dir / f"{k}.schema.json", schema(k))
        print(f"wrote {len(KINDS)} schemas to {out_dir}")
    elif kind is None:
        for k in KINDS:
            print(f"{k:<15} {schema(k)['description']}")
    elif out is not None:
        write_document(out, doc)
        print(f"wrote {out}")
    else:
        print(json.dumps(doc, indent=1))


@specs_app.command("list")
def specs_list() -> None:
    """Shipped specs, with tile count and description."""
    for name in spec_names():
        s = load_spec(name)
        print(f"{name:<18} {s.tiles:>5} tiles  {s.description}")


@specs_app.command("show")
def specs_show(name: Annotated[str, typer.Argument(help="Spec name or file.")],
               json_out: JsonOpt = False) -> None:
    """The resolved spec (after extends)."""
    s = load_spec(name)
    doc = {k: v for k, v in (s.raw or {}).items() if k != "extends"}
    print(json.dumps(doc, indent=1) if json_out else yaml.safe_dump(doc, sort_keys=False), end="")
    if json_out:
        print()


@specs_app.command("diff")
def specs_diff(a: Annotated[str, typer.Argument(help="Spec name or file.")],
               b: Annotated[str, typer.Argument(help="Spec name or file.")]) -> None:
    """Fields whose resolved values differ."""
    rows = diff_specs(load_spec(a), load_spec(b))
    if not rows:
        print("no differences")
    for path, x, y in rows:
        print(f"{path}: {x!r} -> {y!r}")


@import_app.command("openshop")
def import_openshop(
    file: Annotated[Path, typer.Argument(help="Open-shop text file: 'n m' then n rows of m times.")],
    out: Annotated[Path, typer.Option(help="Phase file to write.")],
) -> None:
    """An open-shop instance as a unicast phase on the openshop spec (horizon == makespan)."""
    from ipuopt.exchange.openshop import openshop_phase, read_openshop

    check_out(out, file)
    phase = openshop_phase(read_openshop(file), name=file.stem)
    write_document(out, phase.to_dict(), protect=(file,))
    print(f"wrote {out}: {plural(len(phase.transfers), 'transfer')}")
