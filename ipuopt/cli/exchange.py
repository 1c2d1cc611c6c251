"""Commands on one exchange phase: solve, bounds, validate, simulate, compare."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from ipuopt.budget import DEFAULT_TIME_LIMIT, Budget, run_interruptible
from ipuopt.cli.app import (
    START,
    ExportOpt,
    JsonOpt,
    LimitHelp,
    ParamOpt,
    QuietOpt,
    SeedOpt,
    SpecOpt,
    VerboseOpt,
    WorkersOpt,
    app,
)
from ipuopt.cli.options import check_export, check_out, exchange_params, write_export
from ipuopt.cli.terminal import (
    ProgressLines,
    err,
    exit_now,
    interrupted,
    json_doc,
    pct,
    plural,
    reclaim_stdout,
    solver_log,
)
from ipuopt.errors import InputError
from ipuopt.exchange.bounds import all_bounds, best_bound
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.phase import load_phase
from ipuopt.exchange.schedule import Schedule, load_schedule, schedule_for, schedule_from_dict
from ipuopt.exchange.solve import solve
from ipuopt.exchange.validate import validate
from ipuopt.export import FORMS
from ipuopt.io import read_document, write_document
from ipuopt.params import SolveParams
from ipuopt.registry import method
from ipuopt.result import Bound, Result


def _print_result(res: Result, spec_clock: float, sync: int) -> None:
    s, x = res.solution, res.extras
    us = s.horizon / spec_clock * 1e6 if s.horizon is not None else 0
    print(f"phase      {s.phase or '(unnamed)'}: {plural(len(s.starts), 'transfer')} on {s.spec}")
    limit = f" of {x['time_limit_s']:g}s" if "time_limit_s" in x else ""
    print(f"solver     {res.solver}  status {res.status}  time {res.runtime:.2f}s{limit}"
          + (f"  (schedule from {res.method})" if res.method.split("/")[0] != res.solver else ""))
    print(f"horizon    {s.horizon} cycles ({us:.2f} us) + sync {sync}")
    if "greedy_horizon" in x and res.solver != "greedy":
        print(f"greedy     {x['greedy_horizon']}")
    for b in res.bounds:
        print(f"bound      {b.name:<11} {b.value:>10}  {b.where}")
    print(f"best bound {res.bound}  gap {pct(res.gap)}")
    if res.reason:
        print(f"reason     {res.reason}")
    if note := x.get("not_reproducible"):
        print(f"note       not reproducible: {note}")


@app.command("solve")
def solve_cmd(
    phase: Annotated[Path, typer.Argument(help="Phase file (YAML or JSON) or bundled example name.")],
    spec: SpecOpt = None,
    profile: Annotated[str | None, typer.Option(help="Solver profile name or file.")] = None,
    solver: Annotated[str | None, typer.Option(
        help="greedy | cpsat | milp | lns | justify | iterated | colour | periodic | auto "
             "(default greedy; auto with --time-limit)",
    )] = None,
    time_limit: Annotated[float | None, typer.Option(help=LimitHelp)] = None,
    workers: WorkersOpt = None,
    seed: SeedOpt = None,
    param: ParamOpt = [],  # noqa: B006
    out: Annotated[Path | None, typer.Option(help="Write the schedule here (.json, or .yaml).")] = None,
    export: ExportOpt = None,
    json_out: JsonOpt = False,
    chain: Annotated[bool, typer.Option("--chain", help="Also the schedule's critical chain (what "
                                                        "holds each step of the last transfer).")] = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Schedule one exchange phase; print horizon, bounds and gap."""
    backend, params = exchange_params(profile, solver, time_limit, workers, seed, param, verbose)
    check_out(out, phase, spec, profile)
    check_out(export, phase, spec, profile, option="--export", suffixes=tuple(FORMS))
    check_export(export, out, solver)
    budget = Budget(params.limit(method("exchange", backend).default_limit), since=START)
    ph, sp = load_phase(phase, spec)
    if export is not None:
        from ipuopt.export import exchange_model

        return write_export(lambda form: exchange_model(ph, sp, form), export, json_out, phase)
    with ProgressLines(quiet, f"solve {backend}") as progress, solver_log(verbose):
        res = solve(ph, sp, backend, params, progress, budget)
    if out:
        write_document(out, res.to_dict(), protect=(phase,))
    if res.interrupted:
        reclaim_stdout()
    steps = None
    if chain:
        from ipuopt.exchange.simulate import simulate

        steps = simulate(ph, sp, res.solution).chain
    if json_out:
        print(json.dumps({**json_doc(res, out), **({"critical_chain": steps} if chain else {})}, indent=1))
    else:
        _print_result(res, sp.clock_hz, sp.exchange.sync_cycles)
        if steps is not None:
            _print_chain(steps)
    if res.interrupted:
        interrupted("the schedule", res.status, out)


@app.command("bounds")
def bounds_cmd(phase: Annotated[Path, typer.Argument(help="Phase file or bundled example name.")],
               spec: SpecOpt = None,
               time_limit: Annotated[float | None, typer.Option(help=(
                   "Seconds, wall-clock, for the whole command: the group and clique searches end "
                   "early, and what they found still bounds the phase (default: no limit; with "
                   "--parts, 60 s)."))] = None,
               parts: Annotated[bool, typer.Option("--parts", help=(
                   "Also the `part` bound: CP-SAT on one part of a phase that falls apart (the kind "
                   "that ends last in its greedy schedule), for the time the named bounds leave."))] = False,
               json_out: JsonOpt = False,
               quiet: QuietOpt = False) -> None:
    """Lower bounds on the phase's optimal horizon, each by name. Ctrl-C ends the searches
    early: the bounds found so far are printed (each still holds) and the exit code is 130."""
    params = SolveParams(time_limit=DEFAULT_TIME_LIMIT if parts and time_limit is None else time_limit)
    budget = Budget(params.time_limit, since=START)
    ph, sp = load_phase(phase, spec)
    inst = Instance(ph, sp)
    with ProgressLines(quiet, "bounds") as progress:
        def work() -> list[Bound]:
            progress({"stage": "bounds"})
            named = all_bounds(inst, budget.is_set)
            if parts and not budget.is_set():
                from ipuopt.exchange.split import part_bound

                named.append(part_bound(inst, params, budget, progress))
            return named

        bounds, stopped = run_interruptible(work, budget)
    if bounds is None:  # they did not end within the grace after Ctrl-C
        err("interrupted: before the bounds were found; nothing printed")
        exit_now(130)
    best = best_bound(bounds)
    if json_out:
        print(json.dumps({"phase": ph.name, "spec": sp.name, "transfers": len(ph.transfers),
                          "bounds": [b.to_dict() for b in bounds], "best": best.value,
                          **({"interrupted": True} if stopped else {})}, indent=1))
    else:
        w = max(len(b.name) for b in [*bounds, best])
        for b in bounds:
            print(f"{b.name:<{w}} {b.value:>10}  {b.where}")
        print(f"{'best':<{w}} {best.value:>10}  ({best.name})")
    if stopped:
        err("interrupted: the searches ended early; every bound printed still holds")
        exit_now(130)


@app.command("validate")
def validate_cmd(phase: Annotated[Path, typer.Argument(help="Phase (file or bundled name), or an arena "
                                                            "(file, bundled name, or allocator CSV).")],
                 schedule: Annotated[Path, typer.Argument(help="Its schedule, or the arena's placement "
                                                               "(ipuopt place --out; CSV with an offset "
                                                               "column for a CSV arena).")],
                 spec: SpecOpt = None,
                 capacity: Annotated[int | None, typer.Option(help="Bytes available (a CSV arena).")] = None,
                 json_out: JsonOpt = False) -> None:
    """Check a schedule, or a placement, against every rule; exit 1 and list the violations
    (rule, transfers or buffers, tile, cycles or bytes) when it fails."""
    is_csv = schedule.suffix.lower() == ".csv"
    doc = None if is_csv else read_document(schedule)
    if is_csv or (isinstance(doc, dict) and "offsets" in doc):
        _validate_placement(phase, schedule, capacity, json_out)
        return
    if capacity is not None:
        raise InputError.one("", "--capacity", "is for a CSV arena's placement, not a schedule")
    ph, sp, sched = with_schedule(phase, schedule, spec, doc)
    report = validate(ph, sp, sched)
    _print_report(report.violations, {"horizon": report.horizon,
                                       "violations": [v.to_dict() for v in report.violations]},
                  f"ok: {plural(len(ph.transfers), 'transfer')}, horizon {report.horizon}",
                  f"recomputed horizon {report.horizon}", json_out)


def _print_report(violations: list, doc: dict[str, Any], ok_line: str, summary: str, json_out: bool) -> None:
    """A validator's verdict: JSON, the ok line, or every violation; exit 1 when it fails."""
    if json_out:
        print(json.dumps({"ok": not violations, **doc}, indent=1))
    elif not violations:
        print(ok_line)
    else:
        for v in violations:
            print(v)
        print(f"{len(violations)} violations; {summary}")
    if violations:
        raise typer.Exit(1)


def _validate_placement(arena: Path, placement: Path, capacity: int | None, json_out: bool) -> None:
    from ipuopt.arena.problem import load_arena, load_csv, load_offsets
    from ipuopt.arena.validate import validate_placement

    if arena.suffix.lower() == ".csv":
        if capacity is None or capacity <= 0:
            raise InputError.one(str(arena), "--capacity", "required for a CSV arena, in bytes > 0")
        problem = load_csv(arena, capacity)
    else:
        problem = load_arena(arena)
    report = validate_placement(problem, load_offsets(placement, problem))
    peak = f"peak {report.peak} of {problem.capacity} bytes"
    doc = {"peak": report.peak, "conflicts": report.conflicts,
           "violations": [v.to_dict() for v in report.violations]}
    _print_report(report.violations, doc,
                  f"ok: {len(problem.buffers)} buffers, {peak}, conflict weight {report.conflicts}", peak,
                  json_out)


def with_schedule(phase: Path, schedule: Path, spec: str | None, doc: Any = None
                  ) -> tuple[Any, Any, Schedule]:
    """A phase, its spec and a schedule made for it (one made for another phase says so);
    `doc` is the schedule file's content when it was read already."""
    ph, sp = load_phase(phase, spec)
    sched = load_schedule(schedule) if doc is None else schedule_from_dict(doc, str(schedule))
    return ph, sp, schedule_for(sched, ph, str(schedule))


def _print_chain(chain: list[dict[str, Any]]) -> None:
    print("critical chain (last-ending transfer first):")
    for step in chain:
        held = step["held_by"] + (f" of tile {step['tile']}" if "tile" in step else "")
        after = f" after {step['after']}" if "after" in step else ""
        print(f"  {step['transfer']:<12} {step['src']:>5} -> {','.join(map(str, step['dst']))[:24]:<24} "
              f"[{step['start']}, {step['end']})  {step['width']:<8} held by {held}{after}")


@app.command("simulate")
def simulate_cmd(
    phase: Annotated[Path, typer.Argument(help="Phase file or bundled example name.")],
    schedule: Annotated[Path, typer.Argument(help="Schedule JSON.")],
    spec: SpecOpt = None,
    arrivals: Annotated[Path | None, typer.Option(help="JSON: tile id -> cycle it reaches the barrier "
                                                       "(others at 0).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Replay a schedule event by event: barrier metrics, lane use, critical chain; exit 1 at
    the first rule it breaks."""
    from ipuopt.exchange.simulate import load_arrivals, simulate

    ph, sp, sched = with_schedule(phase, schedule, spec)
    sim = simulate(ph, sp, sched, load_arrivals(arrivals, sp.tiles))
    doc = sim.to_dict()
    if json_out:
        print(json.dumps(doc, indent=1))
    elif sim.breach is not None:
        print(f"breach     {sim.breach}")
    else:
        print(f"horizon    {doc['horizon']} cycles from the exchange start")
        print(f"barrier    first arrival {doc['first_arrival']}  last {doc['last_arrival']} (tile "
              f"{doc['last_tile']})  spread {doc['spread']}  + sync {doc['sync']}")
        print(f"exchange   starts {doc['exchange_start']}  ends {doc['end']}  "
              f"({doc['after_last_arrival']} after the last arrival)")
        lanes = sorted(doc["lanes"].items(), key=lambda kv: -kv[1]["busy"])[:5]
        print("busiest    " + "  ".join(f"{k} {100 * v['busy']:.0f}%" for k, v in lanes))
        _print_chain(doc["critical_chain"])
    if not sim.ok:
        raise typer.Exit(1)
