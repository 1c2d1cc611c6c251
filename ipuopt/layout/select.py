"""Layout selection from whatever the user names: a layout problem (file, bundled name, dict)
or a workload to build one from, then the plan, then optionally the finalists reranked by
their scheduled programs. The policy lives here, so `ipuopt layout` and `ipuopt.select_layouts`
decide alike."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ipuopt.budget import Budget, Stopped
from ipuopt.data_files import bundled_hint, bundled_names, bundled_path
from ipuopt.errors import InputError
from ipuopt.io import read_document
from ipuopt.layout.problem import LayoutProblem, layout_problem_from_dict
from ipuopt.layout.solve import Plan, plan
from ipuopt.params import Progress, SolveParams
from ipuopt.result import Result, Status
from ipuopt.spec import Spec, load_spec
from ipuopt.workloads.fragments import Grain, parse_grain
from ipuopt.workloads.gemm import compiler_layouts
from ipuopt.workloads.workload import Workload, load_workload, workload_from_dict

BUILD_SHARE = 0.8  # of a time limit, for a workload's build; the rest solves what it built
RUNNERS_UP_WITHIN = 0.02  # with k > 1 plans and no `within`: room for runners-up in a built problem


@dataclass(frozen=True)
class BuildOptions:
    """How a workload's layout problem is built (`ipuopt layout-problem`)."""

    within: float = 0.0
    min_utilisation: float = 0.5
    exchange: str = "bound"
    grain: int | str | None = None
    partial: bool = False  # stopped after the reference plan: its candidates (`build_problem`)

    def check(self) -> None:
        if not 0 <= self.within <= 10:
            raise InputError.one("", "--within", f"must be in 0..10, got {self.within}")
        if not 0 < self.min_utilisation <= 1:
            raise InputError.one("", "--min-utilisation", f"must be in (0, 1], got {self.min_utilisation}")


def source_path(source: str | Path) -> Path:
    """A layout problem's path, or a workload's, for a name or a path."""
    path = bundled_path(source, "models/layouts")
    if not path.exists() and str(source) in bundled_names("models"):
        path = bundled_path(source, "models")
    return path


def build(workload: Workload | str | Path, spec: Spec | str, options: BuildOptions = BuildOptions(),
          progress: Progress | None = None, check: Any = None, left: Any = None
          ) -> tuple[LayoutProblem, dict[str, Any]]:
    """A workload's layout problem and its document (with `kept`: what was priced and kept);
    `check` may stop the build, `left` says the seconds left for it (`build_problem`)."""
    from ipuopt.layout.build import build_problem

    options.check()
    wl = workload if isinstance(workload, Workload) else load_workload(workload)
    sp = spec if isinstance(spec, Spec) else load_spec(spec, field="--spec")
    cut = parse_grain(options.grain, sp)
    problem, doc = build_problem(wl, sp, options.within, options.min_utilisation,
                                 (lambda m: progress({"task": m})) if progress else None,
                                 exchange=options.exchange, check=check, grain=cut,
                                 partial=options.partial, left=left)
    problem.extra["workload"] = doc["workload"] = wl.name  # the workload's own name, as runs and plans
    if isinstance(workload, str | Path) and Path(workload).exists():  # a file, not a bundled name
        problem.extra["workload_file"] = doc["workload_file"] = str(workload)
    return problem, doc


class BuildStopped(Stopped):  # noqa: N818 (a signal, as Stopped)
    """A workload's build stopped (time limit or Ctrl-C) before it had a problem: `result` is
    the compiler's plan, made before the build began."""

    def __init__(self, result: Result[Plan]) -> None:
        super().__init__(result.reason)
        self.result = result


def compiler_plan(wl: Workload, spec: Spec) -> Result[Plan]:
    """The plan a compiler makes today, one operator at a time (`compiler_layouts`): the
    answer when the model has none; not priced by the model (no cycles)."""
    choice = {op: c.layout.label for op, c in compiler_layouts(wl, spec).items()}
    return Result(Status.FALLBACK, Plan(wl.name, spec.name, choice), solver="milp", method="compiler")


def problem_of(source: LayoutProblem | Workload | dict[str, Any] | str | Path, spec: Spec | str = "gc200",
               k: int = 1, options: BuildOptions | None = None, progress: Progress | None = None,
               check: Any = None, left: Any = None, fallback: bool = False
               ) -> tuple[LayoutProblem, tuple[Workload, Spec] | None]:
    """The layout problem `source` names: a problem (object, document, file or bundled name),
    or one built from a workload with `options` on `spec` (k > 1 plans leave room for
    runners-up); with the workload and spec when built. With `fallback`, a workload's
    compiler plan is made first, and a build stopped before it has a problem raises
    `BuildStopped` with that plan."""
    built: tuple[Workload, Spec] | None = None
    path = None if isinstance(source, LayoutProblem | dict | Workload) else source_path(source)
    doc = source if path is None else read_document(path, bundled_hint("models/layouts", "problems") + "; "
                                                    + bundled_hint("models", "workloads").strip())
    if isinstance(doc, LayoutProblem):
        problem = doc
    elif isinstance(doc, Workload) or isinstance(doc, dict) and isinstance(doc.get("operators"), list):
        options = options or BuildOptions()
        if k > 1 and options.within == 0:
            options = replace(options, within=RUNNERS_UP_WITHIN)
        t0 = time.perf_counter()
        wl = doc if isinstance(doc, Workload) else workload_from_dict(doc, str(path or "(workload document)"))
        sp = spec if isinstance(spec, Spec) else load_spec(spec, field="--spec")
        plan_b = compiler_plan(wl, sp) if fallback else None
        try:
            problem, _ = build(wl, sp, options, progress, check, left)
        except Stopped:
            if plan_b is None:
                raise
            plan_b.runtime = time.perf_counter() - t0
            plan_b.reason = ("the layout problem's build was stopped before it had a plan (after "
                             f"{time.perf_counter() - t0:.1f} s): the compiler's layouts, one operator "
                             "at a time (least compute plus received words), not priced by the model")
            raise BuildStopped(plan_b) from None
        if path is not None and Path(source).exists():  # a file, not a bundled name
            problem.extra["workload_file"] = str(path)
        built = (wl, sp)
    else:
        if options is not None and (options.exchange != "bound" or options.grain is not None):
            given = "--exchange" if options.exchange != "bound" else "--grain"
            raise InputError.one(str(path or ""), given, "prices are chosen when a problem is built: give "
                                                         "a workload, or use `ipuopt layout-problem`")
        problem = layout_problem_from_dict(doc, str(path or "(layout problem document)"))
    return problem, built


# Ranks plans (rank, cycles, choice) by their programs scheduled: `program.rerank.rerank` with
# its method and budget bound, given the plans, the workload, the spec and the grain (the
# program layer schedules; the layout layer only names what to rank).
Rerank = Callable[[list[dict[str, Any]], Workload, Spec, Grain], list[dict[str, Any]]]


def plan_of(source: LayoutProblem | Workload | dict[str, Any] | str | Path, spec: Spec | str = "gc200",
            solver: str = "milp", params: SolveParams | None = None, k: int = 1,
            options: BuildOptions | None = None, width: int = 64, beam: int = 64,
            rerank: Rerank | None = None, progress: Progress | None = None,
            budget: Budget | None = None) -> Result[Plan]:
    """The plan of whatever `source` names, always an answer for a workload: a build stopped
    by its share of the time limit (or by Ctrl-C) after its reference plan solves the
    reference's candidates instead (`BuildOptions.partial`), and before it hands back the
    compiler's plan, with its status and the reason."""
    params = params or SolveParams()
    budget = Budget.of(params.time_limit, budget)  # without a limit the build has no end
    building = budget if budget.end is None else budget.share(BUILD_SHARE * budget.limit())
    options = replace(options or BuildOptions(), partial=True)
    try:
        problem, built = problem_of(source, spec, k, options, progress, building.check, building.left,
                                    fallback=True)
        result = select(problem, solver, params, k, width, beam, built, rerank, progress, budget)
    except BuildStopped as stop:
        result = stop.result
    result.interrupted = budget.interrupted
    return result


def select(problem: LayoutProblem, solver: str = "milp", params: SolveParams | None = None, k: int = 1,
           width: int = 64, beam: int = 64, built: tuple[Workload, Spec] | None = None,
           rerank: Rerank | None = None, progress: Progress | None = None,
           budget: Budget | None = None) -> Result[Plan]:
    """The plan (and the k best), with `rerank` the plans ranked by their scheduled programs
    too (the workload and spec: `built`, or those the problem names)."""
    result = plan(problem, solver, params, k, width, beam, budget, progress)
    sol = result.solution
    sol.kept = problem.extra.get("kept")
    if rerank is not None and sol.choice:
        sol.rerank = _rerank(result, problem, built, rerank)
    return result


def _rerank(result: Result[Plan], problem: LayoutProblem, built: tuple[Workload, Spec] | None,
            rerank: Rerank) -> list[dict[str, Any]]:
    if built is None:
        name, file = problem.extra.get("workload"), problem.extra.get("workload_file")
        if not name or not problem.extra.get("spec"):
            raise InputError.one(problem.name, "workload", "--rerank needs the problem's workload and spec "
                                                           "(a generated problem names both)")
        wl = load_workload(file if file and Path(file).exists() else name)
        if wl.name != name:
            raise InputError.one(problem.name, "workload_file", f"{file} is workload {wl.name!r}, "
                                                                f"not the problem's {name!r}")
        built = (wl, load_spec(problem.extra["spec"], field="spec"))
    sol = result.solution
    plans = sol.plans or [{"rank": 1, "cycles": sol.cycles, "choice": sol.choice}]
    kept = problem.extra.get("kept") or {}
    cut = parse_grain(kept.get("grain"), built[1], "kept.grain")
    return rerank(plans, *built, cut)
