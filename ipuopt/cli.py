"""The ipuopt command line: a thin layer that parses, calls the library and prints."""

from __future__ import annotations

import csv
import io
import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from ipuopt.errors import InputError
from ipuopt.exchange.bounds import all_bounds, best_bound
from ipuopt.exchange.phase import load_phase
from ipuopt.exchange.schedule import load_schedule
from ipuopt.exchange.solve import BACKENDS, ExchangeResult, solve
from ipuopt.exchange.validate import validate
from ipuopt.io import write_atomic, write_json
from ipuopt.profiles import load_profile
from ipuopt.spec import diff_specs, load_spec, spec_names

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Exact models, lower bounds and greedy fallbacks for IPU compiler problems: exchange "
                  "scheduling, workload phases, arena placement.")
specs_app = typer.Typer(no_args_is_help=True, help="Hardware specs: list, show, diff.")
import_app = typer.Typer(no_args_is_help=True, help="Convert external benchmark formats to phases.")
app.add_typer(specs_app, name="specs")
app.add_typer(import_app, name="import")

SpecOpt = Annotated[str | None, typer.Option("--spec", help="Spec name or file; overrides the phase's.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


def _pct(g: float | None) -> str:
    return "n/a" if g is None else f"{100 * g:.2f}%"


class _Progress:
    """Incumbent/bound/gap lines on stderr, at most one a second, after the first 2 s."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.t0 = time.perf_counter()
        self.last = 0.0

    def __call__(self, info: dict[str, Any]) -> None:
        now = time.perf_counter() - self.t0
        if self.quiet or now < 2.0 or now - self.last < 1.0:
            return
        self.last = now
        inc, bnd = info.get("incumbent"), info.get("bound")
        g = (inc - bnd) / inc if inc and bnd is not None else None
        _err(f"[{now:7.1f}s] incumbent {inc}  bound {bnd}  gap {_pct(g)}")


def _params(profile: str | None, solver: str | None, time_limit: float | None,
            workers: int | None, seed: int | None, param: list[str]) -> tuple[str, dict]:
    backend, params = load_profile(profile) if profile else ("greedy", {})
    if solver:
        if solver not in BACKENDS:
            raise InputError.one("", "--solver", f"unknown solver {solver!r} (one of {', '.join(BACKENDS)})")
        if not profile:
            default = {"cpsat": "cpsat", "milp": "milp"}.get(solver)
            params = load_profile(default)[1] if default else {}
        backend = solver
    for key, value in (("time_limit", time_limit), ("workers", workers), ("seed", seed)):
        if value is not None:
            params[key] = value
    for item in param:
        if "=" not in item:
            raise InputError.one("", "--param", f"{item!r} is not KEY=VALUE")
        key, value = item.split("=", 1)
        params[key.strip()] = yaml.safe_load(value)
    return backend, params


def _print_result(res: ExchangeResult, spec_clock: float, sync: int) -> None:
    s = res.schedule
    us = s.horizon / spec_clock * 1e6 if s.horizon is not None else 0
    print(f"phase      {s.phase or '(unnamed)'}: {len(s.starts)} transfers on {s.spec}")
    print(f"solver     {s.solver}  status {s.status}  time {res.runtime:.2f}s")
    print(f"horizon    {s.horizon} cycles ({us:.2f} us) + sync {sync}")
    if "greedy_horizon" in s.extra and s.solver != "greedy":
        print(f"greedy     {s.extra['greedy_horizon']}")
    for b in res.bounds:
        print(f"bound      {b.name:<10} {b.value:>10}  {b.where}")
    print(f"best bound {s.lower_bound}  gap {_pct(res.gap)}")


@app.command("solve")
def solve_cmd(
    phase: Annotated[Path, typer.Argument(help="Phase file (YAML or JSON).")],
    spec: SpecOpt = None,
    profile: Annotated[str | None, typer.Option(help="Solver profile name or file.")] = None,
    solver: Annotated[str | None, typer.Option(help="greedy | cpsat | milp | lns")] = None,
    time_limit: Annotated[float | None, typer.Option(help="Seconds for the exact solver.")] = None,
    workers: Annotated[int | None, typer.Option(help="Solver threads.")] = None,
    seed: Annotated[int | None, typer.Option(help="Random seed (with --workers 1: reproducible).")] = None,
    param: Annotated[list[str], typer.Option(help="Backend parameter KEY=VALUE, repeatable.")] = [],  # noqa: B006
    out: Annotated[Path | None, typer.Option(help="Write the schedule JSON here.")] = None,
    json_out: JsonOpt = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="Print nothing but errors.")] = False,
) -> None:
    """Schedule one exchange phase; print horizon, bounds and gap."""
    ph, sp = load_phase(phase, spec)
    backend, params = _params(profile, solver, time_limit, workers, seed, param)
    res = solve(ph, sp, backend, params, _Progress(quiet))
    if out:
        write_json(out, res.schedule.to_dict([t.id for t in ph.transfers]), protect=(phase,))
    if quiet:
        return
    if json_out:
        print(json.dumps(res.summary(), indent=1))
    else:
        _print_result(res, sp.clock_hz, sp.exchange.sync_cycles)


@app.command("bounds")
def bounds_cmd(phase: Annotated[Path, typer.Argument()], spec: SpecOpt = None,
               json_out: JsonOpt = False) -> None:
    """Lower bounds on the phase's optimal horizon, each by name."""
    ph, sp = load_phase(phase, spec)
    bounds = all_bounds(ph, sp)
    best = best_bound(bounds)
    if json_out:
        print(json.dumps({"phase": ph.name, "spec": sp.name, "transfers": len(ph.transfers),
                          "bounds": [b.to_dict() for b in bounds], "best": best.value}, indent=1))
        return
    for b in bounds:
        print(f"{b.name:<10} {b.value:>10}  {b.where}")
    print(f"{'best':<10} {best.value:>10}  ({best.name})")


@app.command("validate")
def validate_cmd(phase: Annotated[Path, typer.Argument()],
                 schedule: Annotated[Path, typer.Argument()], spec: SpecOpt = None,
                 json_out: JsonOpt = False) -> None:
    """Check a schedule against every rule; exit 1 and list the violations when it fails."""
    ph, sp = load_phase(phase, spec)
    report = validate(ph, sp, load_schedule(schedule))
    if json_out:
        print(json.dumps({"ok": report.ok, "horizon": report.horizon,
                          "violations": [v.to_dict() for v in report.violations]}, indent=1))
    elif report.ok:
        print(f"ok: {len(ph.transfers)} transfers, horizon {report.horizon}")
    else:
        for v in report.violations:
            print(v)
        print(f"{len(report.violations)} violations; recomputed horizon {report.horizon}")
    if not report.ok:
        raise typer.Exit(1)


def _phase_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files += sorted(f for f in p.iterdir() if f.suffix in (".yaml", ".yml", ".json"))
        else:
            files.append(p)
    return files


@app.command("compare")
def compare_cmd(
    phases: Annotated[list[Path], typer.Argument(help="Phase files or directories of them.")],
    solvers: Annotated[str, typer.Option(help="Comma-separated backends.")] = "greedy,cpsat",
    spec: SpecOpt = None,
    time_limit: Annotated[float, typer.Option(help="Seconds per exact solve.")] = 10.0,
    workers: Annotated[int | None, typer.Option()] = None,
    seed: Annotated[int | None, typer.Option()] = None,
    json_out: JsonOpt = False,
    csv_out: Annotated[bool, typer.Option("--csv", help="CSV output.")] = False,
) -> None:
    """One row per phase and solver: transfers, best bound, horizon, status, gap, time."""
    names = [s.strip() for s in solvers.split(",") if s.strip()]
    for n in names:
        if n not in BACKENDS:
            raise InputError.one("", "--solvers", f"unknown solver {n!r} (one of {', '.join(BACKENDS)})")
    rows = []
    loaded = [(f, *load_phase(f, spec)) for f in _phase_files(phases)]
    for f, ph, sp in loaded:
        for name in names:
            res = solve(ph, sp, *_params(None, name, time_limit, workers, seed, []))
            s = res.schedule
            rows.append({"phase": f.name, "spec": sp.name, "solver": name,
                         "transfers": len(ph.transfers), "bound": s.lower_bound,
                         "horizon": s.horizon, "status": s.status,
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
        print(f"{'phase':<28} {'solver':<7} {'transfers':>9} {'bound':>8} {'horizon':>8} "
              f"{'status':<9} {'gap':>7} {'time':>7}")
        for r in rows:
            print(f"{r['phase'][:28]:<28} {r['solver']:<7} {r['transfers']:>9} {r['bound']:>8} "
                  f"{r['horizon']:>8} {r['status']:<9} {_pct(r['gap']):>7} {r['time_s']:>6.2f}s")


def _parse_layouts(items: list[str], spec) -> dict:
    from ipuopt.workloads.gemm import GemmLayout

    out = {}
    for item in items:
        if "=" not in item:
            raise InputError.one("", "--layout", f"{item!r} is not OP=RxCxP/AxB[/REGION]")
        op, text = item.split("=", 1)
        out[op.strip()] = GemmLayout.parse(text, spec)
    return out


@app.command("gen")
def gen_cmd(
    workload: Annotated[str, typer.Argument(help="Workload name under models/ or a file.")],
    spec: Annotated[str, typer.Option(help="Spec name or file.")] = "gc200",
    layout: Annotated[list[str], typer.Option(help="OP=RxCxP/AxB[/REGION], repeatable.")] = [],  # noqa: B006
    out_dir: Annotated[Path | None, typer.Option(help="Write one phase file per phase here.")] = None,
    arena: Annotated[bool, typer.Option(help="Also write the workload's arena file.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Generate every exchange phase a workload needs with the chosen GEMM layouts."""
    from ipuopt.workloads.phases import generate, phase_stats
    from ipuopt.workloads.workload import load_workload

    wl = load_workload(workload)
    sp = load_spec(spec)
    gen = generate(wl, sp, _parse_layouts(layout, sp))
    rows = []
    for gp in gen.phases:
        st = phase_stats(gp, sp)
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            path = out_dir / f"{wl.name}-{gp.phase.name}.json"
            doc = gp.phase.to_dict()
            doc["spec"] = sp.name
            write_json(path, doc)
            st["file"] = str(path)
        rows.append(st)
    if arena and out_dir is not None:
        from ipuopt.workloads.arena_export import arena_document

        doc = arena_document(gen)
        path = out_dir / f"{wl.name}-arena.yaml"
        write_atomic(path, yaml.safe_dump(doc, sort_keys=False, width=200))
    layouts = {op: c.to_dict() for op, c in gen.layouts.items()}
    if json_out:
        print(json.dumps({"workload": wl.name, "spec": sp.name, "layouts": layouts,
                          "phases": rows}, indent=1))
        return
    for op, c in layouts.items():
        print(f"{op:<10} {c['layout']:<28} tiles {c['tiles']:>5}  compute {c['compute']:>8}  "
              f"memory {c['memory']}")
    print(f"{'phase':<28} {'transfers':>9} {'endpoints':>9} {'src words':>10} {'delivered':>10} "
          f"{'bound':>7}  fanout")
    for r in rows:
        fan = " ".join(f"{k}:{v}" for k, v in r["fanout"].items())
        print(f"{r['phase']:<28} {r['transfers']:>9} {r['endpoints']:>9} {r['source_words']:>10} "
              f"{r['delivered_words']:>10} {r['endpoint_bound']:>7}  {fan}")


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

    wl = load_workload(workload)
    sp = load_spec(spec)
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


@app.command("place")
def place_cmd(
    arena: Annotated[Path | None, typer.Argument(help="Arena file (YAML or JSON).")] = None,
    csv_in: Annotated[Path | None, typer.Option("--csv", help="Allocator CSV: id,lower,upper,size.")] = None,
    capacity: Annotated[int | None, typer.Option(help="Bytes available (with --csv).")] = None,
    objective: Annotated[str, typer.Option(help="fit | peak | conflicts")] = "fit",
    solver: Annotated[str, typer.Option(help="auto | greedy | baseline | search | cpsat | milp")] = "auto",
    time_limit: Annotated[float, typer.Option(help="Seconds.")] = 60.0,
    workers: Annotated[int | None, typer.Option(
        help="CP-SAT workers; with 1, auto runs the search and then CP-SAT (reproducible) "
             "instead of racing them.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seeds the search's restarts and CP-SAT.")] = None,
    out: Annotated[Path | None, typer.Option(help="Placement JSON (or CSV with --csv).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Give buffers offsets: no overlap while live together, within capacity."""
    from ipuopt.arena.problem import load_arena, load_csv
    from ipuopt.arena.solve import place

    if (arena is None) == (csv_in is None):
        raise InputError.one("", "ARENA/--csv", "give an arena file or --csv FILE --capacity BYTES")
    if csv_in is not None:
        if capacity is None:
            raise InputError.one(str(csv_in), "--capacity", "required with --csv")
        problem = load_csv(csv_in, capacity)
    else:
        problem = load_arena(arena)  # type: ignore[arg-type]
    params: dict[str, Any] = {"time_limit": time_limit}
    if workers is not None:
        params["workers"] = workers
    if seed is not None:
        params["seed"] = seed
    res = place(problem, objective, solver, params)
    source = csv_in or arena
    if out is not None and res.offsets is not None:
        if csv_in is not None:
            buf = io.StringIO()
            writer = csv.writer(buf, lineterminator="\n")
            writer.writerow(["id", "lower", "upper", "size", "offset"])
            for b in problem.buffers:
                writer.writerow([b.id, b.first, b.end, b.size, res.offsets[b.id]])
            write_atomic(out, buf.getvalue(), protect=(source,))  # type: ignore[arg-type]
        else:
            write_json(out, res.to_dict(), protect=(source,))  # type: ignore[arg-type]
    if json_out:
        doc = res.to_dict()
        if len(doc["offsets"]) > 50 and out is not None:
            doc["offsets"] = f"{len(doc['offsets'])} offsets in {out}"
        print(json.dumps(doc, indent=1))
    else:
        print(f"arena      {problem.name or source}: {len(problem.buffers)} buffers, capacity "
              f"{problem.capacity}")
        print(f"solver     {res.solver}  status {res.status}  time {res.runtime:.2f}s")
        if res.offsets is not None:
            print(f"objective  {objective} = {res.value}  peak {res.peak}  lower bound {res.lower_bound}")
        if res.reason:
            print(f"reason     {res.reason}")
    if res.offsets is None:
        raise typer.Exit(1)


@specs_app.command("list")
def specs_list() -> None:
    """Shipped specs, with tile count and description."""
    for name in spec_names():
        s = load_spec(name)
        print(f"{name:<18} {s.tiles:>5} tiles  {s.description}")


@specs_app.command("show")
def specs_show(name: str, json_out: JsonOpt = False) -> None:
    """The resolved spec (after extends)."""
    s = load_spec(name)
    doc = {k: v for k, v in (s.raw or {}).items() if k != "extends"}
    print(json.dumps(doc, indent=1) if json_out else yaml.safe_dump(doc, sort_keys=False), end="")
    if json_out:
        print()


@specs_app.command("diff")
def specs_diff(a: str, b: str) -> None:
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

    phase = openshop_phase(read_openshop(file), name=file.stem)
    write_atomic(out, yaml.safe_dump(phase.to_dict(), sort_keys=False, width=1000),
                 protect=(file,))
    print(f"wrote {out}: {len(phase.transfers)} transfers")


def main() -> None:
    try:
        app()
    except InputError as exc:
        for p in exc.problems:
            _err(f"error: {p}")
        sys.exit(2)
