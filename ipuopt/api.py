"""The Python API a notebook needs: build or load, solve, bound, validate, place, plan, generate.

Every function takes its input the same three ways: a bundled name ("tiny", "mini-mlp"), a
path, or an object (built in code, or a document as a dict); objects and dicts are checked as
files are, with the same errors. Methods and their settings mean what they mean on the
command line (`ipuopt.registry.resolve`): `solver="cpsat"` is the cpsat profile, a time limit
without a solver asks for `auto`. Every solving function returns a `Result` whose `solution`
is a `Schedule`, a `Placement` or a `Plan`; `to_dict()` is what `--json` prints.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ipuopt.arena.problem import Arena, Buffer, Conflict, arena_from_dict, checked_arena
from ipuopt.arena.problem import load_arena as _load_arena
from ipuopt.arena.solve import Placement
from ipuopt.arena.solve import place as _place
from ipuopt.arena.validate import validate_placement as _validate_placement
from ipuopt.budget import Budget
from ipuopt.errors import InputError
from ipuopt.exchange.bounds import all_bounds
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.phase import Phase, Transfer, checked_phase, phase_from_dict
from ipuopt.exchange.phase import load_phase as _load_phase
from ipuopt.exchange.schedule import Schedule, load_schedule, schedule_from_dict
from ipuopt.exchange.simulate import Simulation, load_arrivals
from ipuopt.exchange.simulate import simulate as _simulate
from ipuopt.exchange.solve import solve as _solve
from ipuopt.exchange.validate import Report
from ipuopt.exchange.validate import validate as _validate
from ipuopt.layout.problem import LayoutProblem, layout_problem_from_dict
from ipuopt.layout.problem import load_layout_problem as _load_layout_problem
from ipuopt.layout.solve import Plan
from ipuopt.params import SolveParams
from ipuopt.program.run import run_program
from ipuopt.registry import Method, resolve
from ipuopt.registry import methods as _methods
from ipuopt.render.notebook import RunDocument
from ipuopt.render.save import save
from ipuopt.render.views import arena_boxes, phase_view, program_view
from ipuopt.result import Bound, Result, Status
from ipuopt.spec import Spec, load_spec
from ipuopt.workloads.fragments import parse_grain
from ipuopt.workloads.phases import generate as _generate
from ipuopt.workloads.plans import parse_layouts, plan_layouts
from ipuopt.workloads.records import Generation
from ipuopt.workloads.workload import Workload, load_workload

__all__ = ["Arena", "Bound", "Buffer", "Conflict", "Generation", "InputError", "LayoutProblem", "Method",
           "Phase", "Placement", "Plan", "Report", "Result", "Schedule", "Simulation", "Spec", "Status",
           "Transfer", "Workload", "bounds", "export_model", "generate", "load_arena", "load_layout_problem",
           "load_phase", "load_schedule", "load_spec", "load_workload", "methods", "optimize", "place",
           "render_arena", "render_program", "render_schedule", "run", "select_layouts", "simulate", "solve",
           "sweep", "sweep_report", "validate", "validate_placement"]

PhaseLike = Phase | dict[str, Any] | str | Path
ArenaLike = Arena | dict[str, Any] | str | Path
ScheduleLike = Schedule | Result | dict[str, Any] | str | Path


def load_phase(source: PhaseLike | tuple[Phase, Spec], spec: Spec | str | None = None) -> tuple[Phase, Spec]:
    """`(Phase, Spec)` from a bundled name, a path, a document or a `Phase` built in code
    (checked as a file is); `spec` (name, path or `Spec`) replaces the phase's own."""
    if isinstance(source, tuple):  # what load_phase returned: (phase, its spec)
        source, spec = source[0], spec if spec is not None else source[1]
    if isinstance(source, Phase):
        return checked_phase(source, spec)
    if isinstance(source, dict):
        return phase_from_dict(source, spec, "(phase document)")
    return _load_phase(source, spec)


def load_arena(source: ArenaLike) -> Arena:
    """An `Arena` from a bundled name, a path, a document or one built in code (checked)."""
    if isinstance(source, Arena):
        return checked_arena(source)
    if isinstance(source, dict):
        return arena_from_dict(source, "(arena document)")
    return _load_arena(source)


def load_layout_problem(source: LayoutProblem | dict[str, Any] | str | Path) -> LayoutProblem:
    """A `LayoutProblem` from a bundled name, a path or a document (checked as a file is)."""
    if isinstance(source, LayoutProblem):
        return source
    if isinstance(source, dict):
        return layout_problem_from_dict(source, "(layout problem document)")
    return _load_layout_problem(source)


def _spec(spec: Spec | str) -> Spec:
    return spec if isinstance(spec, Spec) else load_spec(spec, field="spec")


def _workload(workload: Workload | str | Path) -> Workload:
    return workload if isinstance(workload, Workload) else load_workload(workload)


def methods(problem: str | None = None) -> list[Method]:
    """The methods of `problem` (exchange, arena, layout; all without): name, kind (exact,
    heuristic, portfolio), summary, the options each reads."""
    return _methods(problem)


def solve(phase: PhaseLike, spec: Spec | str | None = None, solver: str | None = None, *,
          time_limit: float | None = None, workers: int | None = None, seed: int | None = None,
          profile: str | None = None, params: dict[str, Any] | None = None) -> Result[Schedule]:
    """Schedule a phase; the schedule always validates. `solver`: greedy (default), auto (the
    default when only `time_limit` is given) or any other of `methods("exchange")`; a bare
    `cpsat` or `milp` brings its profile's settings, as on the command line. `params` passes
    options by name (a CP-SAT parameter, `milp_solver`, `prove_split`, a greedy habit), each
    checked for its kind before any work."""
    ph, sp = load_phase(phase, spec)
    chosen, settings = resolve("exchange", solver, profile=profile, time_limit=time_limit, workers=workers,
                               seed=seed, options=params)
    result = _solve(ph, sp, chosen.name, settings)  # its budget started there, from `settings`
    if result.solution is not None:
        result.solution.drawn_on = (ph, sp)  # so a notebook can draw it, titled as `render` does
        result.solution.note = f"{result.solver} {result.status}"
    return result


def bounds(phase: PhaseLike, spec: Spec | str | None = None, *, parts: float | None = None) -> list[Bound]:
    """Every named lower bound on the phase's optimal horizon (each with where it holds);
    `parts` (seconds): also the `part` bound, CP-SAT on one part of a phase that falls apart
    for that long (`ipuopt bounds --parts`)."""
    inst = Instance(*load_phase(phase, spec))
    found = all_bounds(inst, None)
    if parts is not None:
        from ipuopt.exchange.split import part_bound

        found.append(part_bound(inst, SolveParams(), Budget(parts)))
    return found


def validate(phase: PhaseLike, spec: Spec | str | None, schedule: ScheduleLike,
             ) -> Report:
    """Check a schedule (object, result, document or JSON file) against every rule: `.ok`,
    `.violations`, `.horizon`."""
    return _validate(*load_phase(phase, spec), _schedule(schedule))


def _schedule(schedule: ScheduleLike) -> Schedule:
    if isinstance(schedule, Result):  # the verdict goes with it, to name it in pictures
        return replace(schedule.solution, note=f"{schedule.method or schedule.solver} {schedule.status}")
    if isinstance(schedule, dict):
        return schedule_from_dict(schedule, "(schedule document)")
    return schedule if isinstance(schedule, Schedule) else load_schedule(schedule)


def simulate(phase: PhaseLike, spec: Spec | str | None, schedule: ScheduleLike,
             arrivals: dict[int, int] | str | Path | None = None) -> Simulation:
    """Replay a schedule event by event; `arrivals` maps tile -> barrier arrival cycle (or is the
    file `ipuopt simulate --arrivals` reads). `.ok`, `.breach`, `.horizon`, `.chain`, `.to_dict()`
    (every barrier metric)."""
    ph, sp = load_phase(phase, spec)
    return _simulate(ph, sp, _schedule(schedule), load_arrivals(arrivals, sp.tiles))


def place(arena: ArenaLike, objective: str = "fit", solver: str = "auto", *, time_limit: float | None = None,
          workers: int | None = None, seed: int | None = None) -> Result[Placement]:
    """Give an arena's buffers offsets (objective fit | peak | conflicts); validated."""
    params = resolve("arena", solver, time_limit=time_limit, workers=workers, seed=seed)[1]
    return _place(load_arena(arena), objective, solver, params)


def validate_placement(arena: ArenaLike, placement: Placement | Result | dict[str, int]) -> Any:
    """The placement validator's report (`.ok`, `.violations`, `.peak`, `.conflicts`) of
    offsets, a `Placement` or a `place` result."""
    return _validate_placement(load_arena(arena), _offsets(placement))


def _offsets(placement: Placement | Result | dict[str, int]) -> dict[str, int]:
    if isinstance(placement, Result):
        placement = placement.solution
    return (placement.offsets if isinstance(placement, Placement) else placement) or {}


def select_layouts(problem: LayoutProblem | dict[str, Any] | str | Path, solver: str = "milp", *, k: int = 1,
                   time_limit: float | None = None, workers: int | None = None, seed: int | None = None,
                   width: int = 64, beam: int = 64, spec: Spec | str = "gc200",
                   rerank: str | None = None) -> Result[Plan]:
    """The plan of a layout problem, or of a workload's (built on `spec` as `ipuopt layout
    WORKLOAD` does): status, cycles, bound, the choice per operator, the beam's plan and where
    it lost the exact one, the k best plans; `rerank` (an exchange method) also ranks the plans
    by their scheduled programs."""
    from ipuopt.layout.select import plan_of
    from ipuopt.program.rerank import ranker

    params = resolve("layout", solver, time_limit=time_limit, workers=workers, seed=seed)[1]
    budget = Budget(params.time_limit)  # shared with the reranking; without a limit the build has no end
    again = resolve("exchange", rerank) if rerank is not None else None
    return plan_of(problem, spec, solver, params, k, None, width, beam,
                   ranker(again[0].name, again[1], budget) if again else None, budget=budget)


def generate(workload: Workload | str | Path, spec: Spec | str = "gc200",
             layouts: dict[str, str] | None = None, grain: int | str | None = None, *,
             plan: Any = None) -> Generation:
    """The exchange phases a workload needs; `layouts` maps a GEMM to "RxCxP/AxB[/REGION]", or
    `plan` gives them (a plan or run file, its document, or the plan `select_layouts`
    returned); others get the per-operator default: least compute plus received words.
    `grain`: None (contiguous runs), bytes to cut runs at (a multiple of the word), or "box"
    (whole boxes)."""
    wl, sp = _workload(workload), _spec(spec)
    if layouts and plan is not None:
        raise InputError.one("", "layouts", "give layouts or a plan, not both (which would win?)")
    chosen = {**plan_layouts(plan, wl, sp),
              **parse_layouts([f"{op}={text}" for op, text in (layouts or {}).items()], sp, "layouts")}
    return _generate(wl, sp, chosen, parse_grain(grain, sp, "grain"))


def run(workload: Workload | str | Path, spec: Spec | str = "gc200", layouts: dict[str, str] | None = None,
        solver: str | None = None, *, time_limit: float | None = None, grain: int | str | None = None,
        workers: int | None = None, seed: int | None = None, profile: str | None = None,
        params: dict[str, Any] | None = None, plan: Any = None) -> RunDocument:
    """The whole program on the chip (see `ipuopt run`): per boundary barrier metrics and totals;
    the layouts as `generate` takes them. `workers`, `seed`, `profile` and `params` go to every
    phase's solver, as in `solve`."""
    chosen, settings = resolve("exchange", solver, profile=profile, time_limit=time_limit, workers=workers,
                               seed=seed, options=params)
    gen = generate(workload, spec, layouts, grain, plan=plan)
    return RunDocument(run_program(gen, chosen.name, settings).to_dict())


def optimize(workload: Workload | str | Path, spec: Spec | str = "gc200", *, grain: int | str | None = None,
             k: int = 3, time_limit: float | None = None, workers: int = 1,
             cluster: str | None = None) -> RunDocument:
    """The whole program (see `ipuopt optimize`): layout plans finished with real schedules,
    placement kept only if it shortens them, auto schedules; the run with its bound, gap,
    baselines and finalists under `optimize`. Its cells run in this process unless `workers`
    > 1 (a local Dask cluster: call it under `if __name__ == "__main__":`) or `cluster` names
    a Dask scheduler."""
    from ipuopt.program.cells import Cells, check_cluster
    from ipuopt.program.optimize import optimize as _optimize

    check_cluster(cluster, "cluster")
    sp = _spec(spec)
    wl = _workload(workload)
    params = SolveParams(time_limit)
    budget = Budget(params.limit())
    with Cells(None, cluster, workers, budget) as cells:
        return RunDocument(_optimize(wl, sp, parse_grain(grain, sp, "grain"), k, params, cells=cells,
                                     budget=budget).to_dict())


def render_schedule(phase: PhaseLike, spec: Spec | str | None, schedule: ScheduleLike,
                    out: str | Path) -> None:
    """A schedule's timeline to F.html (interactive) or F.png; a `Result`'s best bound is marked."""
    bound = schedule.bound if isinstance(schedule, Result) else None
    save(out, phase_view(*load_phase(phase, spec), _schedule(schedule), bound))


def render_program(run_doc: dict[str, Any], out: str | Path) -> None:
    """A program run (from `run`) to F.html or F.png."""
    save(out, program_view(run_doc))


def render_arena(arena: ArenaLike, placement: Placement | Result | dict[str, int], out: str | Path) -> None:
    """A placement (address against step, conflicts marked) to F.html or F.png."""
    save(out, arena_boxes(load_arena(arena), _offsets(placement)))


def export_model(source: PhaseLike | ArenaLike | LayoutProblem, out: str | Path, problem: str = "exchange", *,
                 spec: Spec | str | None = None, objective: str = "fit") -> dict[str, Any]:
    """Write the exact model of an exchange phase, an arena (for `objective`) or a layout
    problem to `out`: `.pb`/`.pbtxt` CP-SAT, `.mps`/`.lp` MILP. Its form, variables and
    constraints."""
    from ipuopt.export import arena_model, exchange_model, form_of, layout_model, write_model

    form = form_of(out, "out")
    if problem == "exchange":
        model = exchange_model(*load_phase(source, spec), form)  # type: ignore[arg-type]
    elif problem == "arena":
        model = arena_model(load_arena(source), objective, form)  # type: ignore[arg-type]
    elif problem == "layout":
        model = layout_model(load_layout_problem(source), form)  # type: ignore[arg-type]
    else:
        raise InputError.one("", "problem", f"unknown problem {problem!r} (exchange, arena, layout)")
    return write_model(model, out)


def sweep(path: str | Path, out: str | Path, cluster: str | None = None, workers: int | None = None,
          ) -> dict[str, Any]:
    """Run a sweep file's cells (phase x spec x solver) on Dask (local cores, or the
    scheduler at `cluster`) into the folder `out`; cells already there are skipped. Counts
    of cells, solved, already done, failed. See docs/solvers.md for the sweep file."""
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


def schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of a file kind (`phase`, `spec`, ..., `run`; `ipuopt.schemas.KINDS`), to
    check files made by other tools; docs/formats.md says what it leaves to the loaders."""
    from ipuopt.schemas import schema as _schema

    return _schema(kind)
