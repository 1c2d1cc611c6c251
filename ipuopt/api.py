"""The Python API a notebook needs: load, solve, bound, validate, place, generate.

Thin wrappers over the problem packages with keyword options, so a user never assembles
parameter dicts or imports solver modules; `import ipuopt` exposes every name here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ipuopt.arena.problem import Arena, load_arena
from ipuopt.arena.solve import Placement
from ipuopt.arena.solve import place as _place
from ipuopt.arena.validate import validate_placement
from ipuopt.exchange.bounds import Bound, all_bounds
from ipuopt.exchange.phase import Phase, load_phase
from ipuopt.exchange.schedule import Schedule, load_schedule
from ipuopt.exchange.simulate import Simulation
from ipuopt.exchange.simulate import simulate as _simulate
from ipuopt.exchange.solve import ExchangeResult
from ipuopt.exchange.solve import solve as _solve
from ipuopt.exchange.validate import Report
from ipuopt.exchange.validate import validate as _validate
from ipuopt.params import SolveParams
from ipuopt.render.save import save
from ipuopt.render.views import arena_boxes, phase_view, program_view
from ipuopt.spec import Spec, load_spec
from ipuopt.workloads.fragments import parse_grain
from ipuopt.workloads.gemm import GemmLayout
from ipuopt.workloads.phases import Generation
from ipuopt.workloads.phases import generate as _generate
from ipuopt.workloads.program import run_program
from ipuopt.workloads.workload import Workload, load_workload

__all__ = ["Arena", "Bound", "ExchangeResult", "Generation", "Phase", "Placement", "Report",
           "Schedule", "Spec", "Workload", "bounds", "generate", "load_arena", "load_phase",
           "load_schedule", "load_spec", "load_workload", "place", "render_arena", "render_schedule",
           "render_program", "run", "select_layouts", "simulate", "solve", "sweep", "sweep_report",
           "validate", "validate_placement"]


def solve(phase: Phase, spec: Spec, solver: str = "greedy", *, time_limit: float | None = None,
          workers: int | None = None, seed: int | None = None,
          params: dict[str, Any] | None = None) -> ExchangeResult:
    """Schedule a phase with greedy | cpsat | milp | lns; the schedule always validates.

    `params` passes any backend parameter through (a CP-SAT parameter by its own name,
    or `solver: cbc` for the MILP)."""
    return _solve(phase, spec, solver, SolveParams(time_limit, workers, seed, options=dict(params or {})))


def bounds(phase: Phase, spec: Spec) -> list[Bound]:
    """Every named lower bound on the phase's optimal horizon (each with where it holds)."""
    return all_bounds(phase, spec)


def validate(phase: Phase, spec: Spec, schedule: Schedule | str | Path) -> Report:
    """Check a schedule (object or JSON file) against every rule; `.ok`, `.violations`, `.horizon`."""
    if not isinstance(schedule, Schedule):
        schedule = load_schedule(schedule)
    return _validate(phase, spec, schedule)


def place(arena: Arena, objective: str = "fit", solver: str = "auto", *, time_limit: float = 60.0,
          workers: int | None = None, seed: int | None = None) -> Placement:
    """Give an arena's buffers offsets (objective fit | peak | conflicts); validated."""
    return _place(arena, objective, solver, SolveParams(time_limit, workers, seed))


def generate(workload: Workload | str, spec: Spec | str = "gc200",
             layouts: dict[str, str] | None = None, grain: int | str | None = None) -> Generation:
    """The exchange phases a workload needs; `layouts` maps a GEMM to "RxCxP/AxB[/REGION]"
    (others get the per-operator default: least compute plus received words). `grain`: None
    (contiguous runs), bytes to cut runs at (a multiple of the word), or "box" (whole boxes)."""
    wl = workload if isinstance(workload, Workload) else load_workload(workload)
    sp = spec if isinstance(spec, Spec) else load_spec(spec)
    chosen = {op: GemmLayout.parse(text, sp) for op, text in (layouts or {}).items()}
    return _generate(wl, sp, chosen, parse_grain(grain, sp, "grain"))


def simulate(phase: Phase, spec: Spec, schedule: Schedule,
             arrivals: dict[int, int] | None = None) -> Simulation:
    """Replay a schedule event by event; `arrivals` maps tile -> barrier arrival cycle.
    `.ok`, `.breach`, `.horizon`, `.chain`, `.to_dict()` (every barrier metric)."""
    return _simulate(phase, spec, schedule, arrivals)


def run(workload: Workload | str, spec: Spec | str = "gc200", layouts: dict[str, str] | None = None,
        solver: str = "greedy", *, time_limit: float | None = None, grain: int | str | None = None,
        ) -> dict[str, Any]:
    """The whole program on the chip (see `ipuopt run`): per boundary barrier metrics and totals."""
    gen = generate(workload, spec, layouts, grain)
    return run_program(gen, solver, SolveParams(time_limit)).to_dict()


def render_schedule(phase: Phase, spec: Spec, schedule: Schedule, out: str | Path) -> None:
    """A schedule's timeline to F.html (interactive) or F.png."""
    save(out, phase_view(phase, spec, schedule))


def render_program(run_doc: dict[str, Any], out: str | Path) -> None:
    """A program run (from `run`) to F.html or F.png."""
    save(out, program_view(run_doc))


def render_arena(arena: Arena, offsets: dict[str, int], out: str | Path) -> None:
    """A placement (address against step, conflicts marked) to F.html or F.png."""
    save(out, arena_boxes(arena, offsets))


def sweep(path: str | Path, out: str | Path, cluster: str | None = None, workers: int | None = None,
          ) -> dict[str, Any]:
    """Run a sweep file's cells on Dask (local cores, or the scheduler at `cluster`) into
    `out`; cells already there are skipped. Counts of cells, solved, skipped, failed."""
    from ipuopt.sweeps.plan import load_sweep
    from ipuopt.sweeps.run import run_sweep

    done = run_sweep(load_sweep(path), Path(out), cluster, workers)
    return {"cells": done.total, "solved": done.solved, "already_done": done.skipped, "failed": done.failed}


def sweep_report(out: str | Path, against: str | Path | None = None) -> dict[str, Any]:
    """Per phase and spec greedy, best, bound and gap; per solver totals; with `against`,
    what changed since that sweep."""
    from ipuopt.sweeps.report import compare, load_results, summarise

    rows = load_results(Path(out))
    doc = summarise(rows)
    if against is not None:
        doc["against"] = compare(rows, load_results(Path(against)))
    return doc


def select_layouts(problem: str | Path, solver: str = "milp", *, k: int = 1, time_limit: float = 60.0,
                   width: int = 64, beam: int = 64) -> dict[str, Any]:
    """The plan for a layout problem file (see `ipuopt layout`): status, cycles, bound, choice,
    the beam's plan and where it lost the exact one, and the k best plans."""
    from ipuopt.layout.problem import load_layout_problem
    from ipuopt.layout.solve import plan

    return plan(load_layout_problem(problem), solver, {"time_limit": time_limit}, k, width, beam)
