"""The whole program: layouts, placement and schedules chosen together, against the compiler's
own way, with the program's bound.

1. Plans: the layout model's k best (exchange priced by load bounds) and the beam's plan.
2. Baselines: the compiler as it is (the beam's plan, first-fit placement, greedy schedules)
   and the load-bound optimum plan with greedy schedules.
3. Finalists: every plan's program generated and replayed with greedy schedules; the best
   is kept (both baselines are finalists, so it is never worse than either). After the
   program bound, the plan at its optimum is replayed as one more finalist when it is none
   of them (the bound steers the search: a plan it values below the best's own bound).
4. Placement: the kept plan's arena placed again (4 KiB offsets, conflict-aware) and kept
   only if its rescheduled phases get shorter (`workloads.reschedule`).
5. Schedules: the kept plan and placement replayed with `auto` on every phase, never worse
   than its greedy run (auto starts from the greedy's schedule). When the placement cannot
   fit (a fragment-level program whose greedy replay takes minutes), the phases whose
   replay was quickest get `auto` as generated, the others keep their greedy schedules.

Two bounds are reported: the chosen program's (`lower_bound`: every phase at its best lower
bound, for these layouts and this placement, `ProgramRun.lower_bound`) and the program's
(`program_bound`: no plan the layout problem admits, under any placement and any schedules,
takes fewer cycles; `layout.program_bound`), priced after the finalists with the best of them
as the ceiling that decides which candidates the bound's model must hold.
"""

from __future__ import annotations

import json
import math
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ipuopt.arena.validate import validate_placement
from ipuopt.budget import Budget, Grant, Interrupted, Stopped
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.solve import solve
from ipuopt.exchange.timing import ORDINARY, PAIRED
from ipuopt.layout.program_bound import ProgramBound, program_bound
from ipuopt.params import Progress, SolveParams
from ipuopt.program.cells import Cell, Cells, cell_key
from ipuopt.program.reschedule import PLACE_SHARE, PlacementTrial, Rescheduled, horizons, judged, placements
from ipuopt.program.run import run_program
from ipuopt.result import Result, gap
from ipuopt.spec import Spec
from ipuopt.workloads.arena_export import default_offsets, readdress
from ipuopt.workloads.fragments import Grain
from ipuopt.workloads.gemm import GemmLayout, compiler_layouts
from ipuopt.workloads.phases import generate
from ipuopt.workloads.records import Generation
from ipuopt.workloads.workload import Workload

# Shares of the time left when each stage starts (building the layout problem takes what it
# needs first): the plans, the finalists' greedy runs, the placement, then auto has the rest.
COMPILER = "compiler (default layouts, first-fit, greedy)"
SHARES = {"build": 0.4, "plans": 0.15, "finalists": 0.4, "bound": 0.2, "placement": 0.35}
REPLAY_RESERVE = 0.05  # of the time left for the schedules: replaying them and writing the run
# After the last cell: the final replay, then letting go of what it holds, each about as long
# as the finalist's own replay (attention at fragment level: 19 s from the last cell to the exit)
REPLAY_MARGIN = 3.0
CLOSING = 3.0  # seconds: the local cluster's workers ending and the run file written
PLACEMENT_REPLAYS = 3  # the placement stage needs time for this many greedy replays, or is skipped
# Without the placement: auto on a phase needs this many times its greedy replay's seconds for
# its greedy to try more rules than the first; the quickest phases get it (up to AUTO_ALONE of
# what is left), the bound the rest, first (it reuses the layout problem's candidates).
AUTO_TIMES = 5.0
AUTO_ALONE = 0.5  # of the time left after the finalists: at most this for that auto, the rest the bound's
BOUND_PLAN = "program bound's plan"
STEERED_SHARE = 0.25  # of the time left after the bound: at most this for replaying its plan


_GENERATIONS: dict[str, Generation] = {}  # per process: the last plan generated, made once


def _generation(ident: str, wl: Workload, spec: Spec, choice: dict[str, str], grain: Any) -> Generation:
    key = cell_key(ident, choice)
    if key not in _GENERATIONS:
        _GENERATIONS.clear()  # one at a time: fragment-level generations are large
        _GENERATIONS[key] = generate(wl, spec, _layouts(wl, spec, choice), grain)
    return _GENERATIONS[key]




def packed(weights: list[int], at_once: int) -> list[float]:
    """Each cell's share of a stage's time when `at_once` run together: dealt largest first to
    the least loaded runner (as Dask takes them, submitted in that order), a cell's share is
    its weight over the most loaded runner's; every runner's cells then add up to at most the
    stage, in weight or in time alike."""
    loads = [0] * max(1, at_once)
    for w in sorted(weights, reverse=True):
        loads[loads.index(min(loads))] += w
    return [w / max(loads) if max(loads) else 1.0 for w in weights]


def _finalist(ident: str, wl: Workload, spec: Spec, choice: dict[str, str], grain: Any,
              params: SolveParams, grant: Grant) -> dict[str, Any] | None:
    """A cell: the plan's program replayed with greedy schedules, one rule on large phases
    (every plan's made the same way, and fast; None if cut short)."""
    t, budget = time.perf_counter(), grant.start()
    gen = _generation(ident, wl, spec, choice, grain)
    made = time.perf_counter() - t
    run = run_program(gen, "greedy", _quick(params), budget=budget)
    if run.interrupted:
        return None
    kept = [_compact(gp.phase.transfers, r) for gp, r in zip(gen.phases, run.results, strict=True)]
    doc, took = run.to_dict(), time.perf_counter() - t
    replay = took - made - sum(b["solve_s"] for b in doc["boundaries"])  # simulating the phases
    return {"run": doc, "seconds": took, "generate_s": made, "replay_s": max(0.0, replay), "schedules": kept}


def _compact(transfers: list, res: Result[Schedule]) -> tuple:
    """A phase's schedule in a few bytes a transfer (starts in the phase's order, the paired
    ones' indices), to carry from a cell: dicts of hundreds of thousands of ids would not."""
    sc = res.solution
    return (res.status, res.value, res.bound, sc.phase, sc.spec,
            array("q", (sc.starts[t.id] for t in transfers)),
            array("l", (i for i, t in enumerate(transfers) if sc.widths[t.id] == PAIRED)))


def _expanded(transfers: list, kept: tuple) -> Result[Schedule]:
    status, value, bound, phase, spec, starts, paired = kept
    widths = dict.fromkeys((t.id for t in transfers), ORDINARY)
    widths.update((transfers[i].id, PAIRED) for i in paired)
    starts = {t.id: s for t, s in zip(transfers, starts, strict=True)}
    return Result(status, Schedule(starts, widths, value, phase, spec), value, bound)


def _quickest(finalist: dict[str, Any], budget: float, at_once: int) -> list[int]:
    """The finalist's phases, quickest replay first, whose auto runs (`AUTO_TIMES` their
    replay's seconds each) fit in `budget` seconds with `at_once` running together, after
    generating the plan again (a runner may hold another plan); none for a replay that did
    not keep its schedules or seconds."""
    if finalist.get("schedules") is None:
        return []
    seconds = [b.get("solve_s", math.inf) for b in finalist["greedy"]["boundaries"]]
    budget -= finalist.get("generate_s", math.inf)
    picked: list[int] = []
    total = 0.0
    for i in sorted(range(len(seconds)), key=lambda i: seconds[i]):
        if (total + AUTO_TIMES * seconds[i]) / max(1, at_once) > budget:
            break
        picked.append(i)
        total += AUTO_TIMES * seconds[i]
    return picked


def _auto_need(finalist: dict[str, Any], budget: float, at_once: int) -> float:
    """Seconds the auto of the finalist's quickest phases (`_quickest` within `budget`) takes
    with its generation: 0 when none fits."""
    picked = _quickest(finalist, budget, at_once)
    if not picked:
        return 0.0
    seconds = [b["solve_s"] for b in finalist["greedy"]["boundaries"]]
    return finalist["generate_s"] + sum(AUTO_TIMES * seconds[i] for i in picked) / max(1, at_once)


def _reserve(finalist: dict[str, Any], left: float) -> float:
    """Seconds kept after the schedule cells: the program's final replay (simulating every
    phase, as long as the finalist's replay spent on it: minutes at fragment level) and the
    command's end."""
    return max(2.0, REPLAY_RESERVE * left, REPLAY_MARGIN * finalist.get("replay_s", 0.0) + CLOSING)


def _replays_that_fit(finalist: dict[str, Any], at_once: int, left: float | None) -> int | None:
    """How many placements may be replayed: the rounds of `at_once` replays (each as long as
    the finalist's) that fit in `left` seconds beside what auto then needs on every phase
    and the final replay (a fragment-level replay takes minutes: all nine would leave auto
    nothing); None: all of them."""
    took = finalist["seconds"]
    if left is None or took <= 0:
        return None
    after = _reserve(finalist, left) + _auto_need(finalist, math.inf, at_once)
    return max(0, math.floor((left - after) / took)) * max(1, at_once)


def _placement(ident: str, wl: Workload, spec: Spec, choice: dict[str, str], grain: Any,
               offsets: dict[str, int], params: SolveParams, grant: Grant) -> dict[str, int] | None:
    """A cell: the plan's phases moved to `offsets` and rescheduled with the greedy."""
    budget = grant.start()
    return horizons(_generation(ident, wl, spec, choice, grain), offsets, "greedy", _quick(params), budget)


def _schedule(ident: str, wl: Workload, spec: Spec, choice: dict[str, str], grain: Any,
              offsets: dict[str, int], index: int, params: SolveParams, grant: Grant) -> Result | None:
    """A cell: one phase of the plan, moved to `offsets`, scheduled with `auto`."""
    budget = grant.start()
    gen = _generation(ident, wl, spec, choice, grain)
    res = solve(readdress(gen, gen.phases[index], offsets), spec, "auto", params, budget=budget)
    return None if res.interrupted else res


def _quick(params: SolveParams) -> SolveParams:
    """The greedy's first rule alone on large phases: replays that compare plans or placements."""
    return params.with_(options={**params.options, "quick": True})


def _finalists(cells: Cells, ident: str, wl: Workload, spec: Spec, grain: Any, unique: list[dict[str, str]],
               params: SolveParams, stage: Budget, give: Callable[[float], Grant]
               ) -> dict[str, dict[str, Any]]:
    """The plans' greedy replays, `cells.parallel` at a time in the order given (the baselines
    first), each round sharing what is left of the stage; no round starts that the last one
    shows will not fit (a replay's first schedules always complete, so a fragment-level
    program can take minutes whatever its share)."""
    done: dict[str, dict[str, Any]] = {}
    par = cells.parallel
    for at in range(0, len(unique), par):
        left = stage.left() or 0.0
        took = max((r["seconds"] for r in done.values()), default=0.0)
        if done and (left < took or stage.is_set()):
            break
        batch = unique[at:at + par]
        each = left / math.ceil((len(unique) - at) / par)
        replays = cells.run("finalists", [
            Cell(cell_key("finalist", ident, c), _finalist, (ident, wl, spec, c, grain, params, give(each)))
            for c in batch])
        done.update({json.dumps(c, sort_keys=True): r for c, r in zip(batch, replays, strict=True)
                     if r is not None})
    return done


def _bound_plan(bound: ProgramBound | None, finalists: list[dict[str, Any]]) -> dict[str, str] | None:
    """The plan at the program bound's optimum (its GEMMs' layouts), unless a finalist has it."""
    if bound is None or not bound.plan:
        return None
    if any(all(f["choice"].get(op) == label for op, label in bound.plan.items()) for f in finalists):
        return None
    return dict(bound.plan)


def so_far(best: dict[str, Any], bound: Any) -> str:
    """The progress line's figures: the best program so far and the program bound."""
    return f"best program so far {best['greedy']['total_cycles']}" + (
        f", bound {bound.value}" if bound is not None else "")


def readdressed(gen: Generation, offsets: dict[str, int]) -> Generation:
    """The generation with every phase moved to another placement of its activation arena."""
    return replace(gen, phases=[replace(gp, phase=readdress(gen, gp, offsets)) for gp in gen.phases])


def _layouts(wl: Workload, spec: Spec, choice: dict[str, str]) -> dict[str, GemmLayout]:
    gemms = {o.name for o in wl.operators if o.kind == "gemm"}
    return {op: GemmLayout.parse(label, spec) for op, label in choice.items() if op in gemms}


@dataclass
class Optimized:
    """`optimize`'s answer: the program kept (its run document, `ipuopt run`'s), how it was
    made, against what, and the program bound over every plan (`to_dict`: the run file)."""

    run: dict[str, Any]
    plan: str
    model_cycles: int | None
    baselines: dict[str, int]
    seconds: float
    schedules: str = "greedy"  # or auto
    placement: str = "first-fit (as generated)"
    placement_gain_cycles: int = 0
    auto_phases: list[str] | None = None  # given auto as generated, when the placement did not fit
    plans_from: str | None = None  # why the plans come from a part of the space
    finalists: list[dict[str, Any]] = field(default_factory=list)
    fallback: str | None = None  # why the compiler's program is all there is
    bound: ProgramBound | None = None
    cells: dict[str, int] | None = None
    notes: list[str] = field(default_factory=list)  # why a stage did less than it could
    interrupted: bool = False

    @property
    def total(self) -> int:
        return self.run["total_cycles"]

    def to_dict(self) -> dict[str, Any]:
        doc = {**self.run, **({"interrupted": True} if self.interrupted else {})}
        if self.bound is not None:
            doc["program_bound"] = self.bound.value
            doc["program_gap"] = gap(self.total, self.bound.value)
        out: dict[str, Any] = {
            "plan": self.plan, "model_cycles": self.model_cycles, "schedules": self.schedules,
            "placement": self.placement, "placement_gain_cycles": self.placement_gain_cycles}
        if self.auto_phases is not None:
            out["auto_phases"] = self.auto_phases
        out["baselines"] = self.baselines
        if self.plans_from:
            out["plans_from"] = self.plans_from
        out["finalists"] = self.finalists
        if self.fallback:
            out["fallback"] = self.fallback
        out["gap_by_phase"] = {b["phase"]: b["gap_cycles"] for b in self.run["boundaries"]}
        if self.bound is not None:
            out["program_bound"] = self.bound.to_dict()
        if self.cells is not None:
            out["cells"] = self.cells
        if self.notes:
            out["notes"] = self.notes
        out["seconds"] = round(self.seconds, 1)
        doc["optimize"] = out
        return doc


class _Search:
    """One `optimize`, stage by stage (the module's docstring), each stage given its share of
    the budget left when it starts; what the stages found is kept here."""

    def __init__(self, wl: Workload, spec: Spec, grain: Grain, k: int, params: SolveParams,
                 progress: Progress | None, cells: Cells | None, budget: Budget) -> None:
        self.wl, self.spec, self.grain, self.k, self.params, self.budget = wl, spec, grain, k, params, budget
        self.progress, self.tell = progress, progress or (lambda info: None)
        self.cells, self.local = cells or Cells(stop=budget), cells is None or cells.local
        self.ident = cell_key("program", repr(wl), repr(spec), str(grain))
        self.t0 = time.perf_counter()
        self.problem: Any = None
        self.short: str | None = None  # why the layout model gave no plans
        self.plans_from: str | None = None  # or why its plans come from a part of the space
        self.finalists: list[dict[str, Any]] = []
        self.best: dict[str, Any] = {}
        self.took = 0.0  # the slowest replay: what every later step costs at least
        self.bound: ProgramBound | None = None
        self.notes: list[str] = []

    def share(self, stage: str) -> Budget:
        return self.budget.share(SHARES[stage] * self.budget.limit())

    def give(self, seconds: float, keep: float = 0.0) -> Grant:
        """A cell's time; a cell queued behind a slow one still leaves the time kept (the final
        replay: attention's schedule cells ran to the command's end and its replay past the limit)."""
        return self.budget.grant(seconds, keep, self.local)

    def plans(self) -> list[dict[str, Any]]:
        """The layout model's k best and the beam's plan, or the compiler's alone when the
        layout problem is not built within its share."""
        from ipuopt.layout.select import BuildOptions, build, select

        self.tell({"task": "layout plans"})
        building = self.share("build")
        try:
            # stopped by its share, the build hands back its reference problem: a few plans to price
            self.problem, _ = build(self.wl, self.spec, BuildOptions(within=0.02 if self.k > 1 else 0.0,
                                                                     grain=self.grain, partial=True),
                                    self.progress, building.check, building.left)
        except Stopped:
            if self.budget.interrupted:
                raise
            self.short = self.plans_from = (
                f"the layout problem was not built within its {SHARES['build']:.0%} of the time limit: "
                "the compiler's default layouts are the only plan")
            self.tell({"task": self.short})
            layouts = compiler_layouts(self.wl, self.spec)
            return [{"name": COMPILER, "model_cycles": None,
                     "choice": {op: c.layout.label for op, c in layouts.items()}}]
        partial = self.problem.extra.get("kept", {}).get("partial")
        if partial:
            self.plans_from = (f"the layout problem's build was stopped by its {SHARES['build']:.0%} of the "
                               f"time limit: plans are the best of its {partial} most promising candidates "
                               "per operator")
        sol = select(self.problem, "milp", self.params, self.k, budget=self.share("plans")).solution
        plans = [{"name": f"layout plan {p['rank']}", "model_cycles": p["cycles"], "choice": p["choice"]}
                 for p in (sol.plans or [{"rank": 1, "cycles": sol.cycles, "choice": sol.choice}])]
        if sol.beam and sol.beam.get("choice"):  # second: both baselines come first
            plans.insert(1, {"name": "beam plan", "model_cycles": sol.beam["cycles"],
                             "choice": sol.beam["choice"]})
        return plans

    def replay(self, plans: list[dict[str, Any]], stage: Budget) -> list[dict[str, Any]]:
        """The plans' programs replayed with greedy schedules (`_finalists`), as finalists."""
        unique = list({json.dumps(p["choice"], sort_keys=True): p["choice"] for p in plans}.values())
        done = _finalists(self.cells, self.ident, self.wl, self.spec, self.grain, unique, self.params, stage,
                          self.give)
        found = [{**p, **done[key], "greedy": done[key]["run"]}
                 for p in plans if (key := json.dumps(p["choice"], sort_keys=True)) in done]
        self.finalists += found
        self.took = max([self.took, *(f["seconds"] for f in found)])
        return found

    def price_bound(self) -> None:
        """The program bound over every plan, with the best program as its ceiling. When what
        its share would leave cannot hold the placement (a few replays) and auto, those will
        not run: the bound may then have the time the quickest phases' auto (the stage that
        runs instead) does not need, less the run's writing."""
        self.tell({"task": "program bound"})
        try:
            left = self.budget.limit()
            later = (1 - SHARES["bound"]) * left > PLACEMENT_REPLAYS * self.took
            need = _reserve(self.best, left) + _auto_need(self.best, AUTO_ALONE * left, self.cells.parallel)
            its = self.share("bound") if later else self.budget.share(left - need)
            built = None if self.short else self.problem.catalogue
            self.bound = program_bound(self.wl, self.spec, self.grain, self.best["greedy"]["total_cycles"],
                                       params=self.params, budget=its, say=lambda m: self.tell({"task": m}),
                                       catalogue=built if built is not None and built.grain == self.grain
                                       else None)
        except Stopped:  # stopped before its first round: no bound; the best program stands
            self.tell({"task": "program bound: stopped before its first round"})

    def steer(self) -> None:
        """The plan the bound's model values least, when no finalist is it, replayed as one
        more finalist and kept if shorter: the bound steers the search (its own bound may be
        far below the best's)."""
        steered, spare = _bound_plan(self.bound, self.finalists), self.budget.left()
        if steered is None or self.budget.interrupted or (
                spare is not None and spare <= (PLACEMENT_REPLAYS + 1) * self.took):
            return
        self.tell({"task": f"the program bound's plan ({so_far(self.best, self.bound)})"})
        found = self.replay([{"name": BOUND_PLAN, "model_cycles": self.bound.model, "choice": steered}],
                            self.budget.share(STEERED_SHARE * self.budget.limit()))
        if found and found[0]["greedy"]["total_cycles"] < self.best["greedy"]["total_cycles"]:
            self.best = found[0]

    def place(self, gen: Generation) -> Rescheduled | None:
        """The kept plan's arena placed again, each placement's phases rescheduled with the
        greedy (the least conflicted first, as many as leave auto its time): the one kept."""
        need, spare = PLACEMENT_REPLAYS * self.took, self.budget.left()
        if self.budget.interrupted:
            return None  # stopped: no placement search, and nothing to explain
        if spare <= need:
            self.notes.append(f"placement search skipped: {spare:.1f} s left, below the "
                              f"{PLACEMENT_REPLAYS} greedy replays of the plan it needs ({need:.1f} s)")
            return None
        best, par = self.best, self.cells.parallel
        self.tell({"task": f"placement of {best['name']}"})
        stage = self.share("placement")
        arena, named = placements(gen, self.params, stage, progress=self.progress)
        (first, start), rest = named[0], named[1:]
        ranked = sorted(((validate_placement(arena, o).conflicts, n, o) for n, o in rest), key=lambda c: c[0])
        others = ranked[:_replays_that_fit(best, par, self.budget.limit())]  # the least conflicted first
        if len(others) < len(rest):
            self.notes.append(f"{len(others)} of {len(rest)} other placements replayed: the time left was "
                              "kept for auto on every phase and the final replay")
        each = (1 - PLACE_SHARE) * stage.limit() / max(1, math.ceil(len(others) / par))
        found = self.cells.run(f"placements ({so_far(best, self.bound)})", [
            Cell(cell_key("placement", self.ident, best["choice"], offsets), _placement,
                 (self.ident, self.wl, self.spec, best["choice"], self.grain, offsets, self.params,
                  self.give(each)))
            for _, _, offsets in others])
        # as generated, the finalist's replay has its horizons already
        candidates = [PlacementTrial(first, start, validate_placement(arena, start).conflicts,
                                     {b["phase"]: b["horizon"] for b in best["greedy"]["boundaries"]})]
        for (conflicts, name, offsets), hs in zip(others, found, strict=True):
            if hs is None:
                break  # cut short: the ones before it are comparable
            candidates.append(PlacementTrial(name, offsets, conflicts, hs))
        return judged(gen, arena, "greedy", candidates)

    def schedule(self, gen: Generation, placed: Rescheduled | None
                 ) -> tuple[dict[str, Any] | None, list[int]]:
        """The kept program replayed with `auto` on its phases (every phase at the kept
        placement; without one, the quickest phases as generated): its run, None when it is
        not shorter than the greedy's or was cut short; and the phases given auto as generated."""
        best, par = self.best, self.cells.parallel
        improved: list[int] = []
        if placed is not None:
            at, phases = placed.kept.offsets, list(range(len(gen.phases)))
            if self.budget.left() <= self.took:
                phases = []
        else:  # as generated: the quickest phases get auto, the others keep their replay's schedules
            at, left = default_offsets(gen), self.budget.limit()
            phases = improved = sorted(_quickest(best, left - _reserve(best, left), par))
            if len(phases) < len(gen.phases) and not self.budget.interrupted:
                self.notes.append(f"auto on {len(phases)} of {len(gen.phases)} phases: the others' "
                                  f"({AUTO_TIMES:g} times their greedy replay) did not fit in the "
                                  f"{left:.1f} s left")
        if not phases or self.budget.interrupted:
            return None, improved
        left = self.budget.limit()
        keep = _reserve(best, left)  # then the replay and the file
        total = max(0.0, left - keep)
        weights = [len(gen.phases[i].phase.transfers) + 1 for i in phases]
        order = sorted(range(len(phases)), key=lambda k: -weights[k])  # the largest first
        secs = [total * part for part in packed(weights, par)]
        self.tell({"task": f"schedules of {best['name']} ({len(phases)} of {len(gen.phases)} phases)"})
        solved = self.cells.run(f"schedules ({so_far(best, self.bound)})", [
            Cell(cell_key("schedule", self.ident, best["choice"], at, phases[k]), _schedule,
                 (self.ident, self.wl, self.spec, best["choice"], self.grain, at, phases[k], self.params,
                  self.give(secs[k], keep)))
            for k in order])
        results = {phases[k]: r for k, r in zip(order, solved, strict=True)}
        if not all(r is not None for r in results.values()):
            if not self.budget.interrupted:
                self.notes.append("auto's schedules were cut short by the time limit: the greedy's kept")
            return None, improved
        results.update({i: _expanded(gp.phase.transfers, best["schedules"][i])
                        for i, gp in enumerate(gen.phases) if i not in results})
        run = run_program(readdressed(gen, at), "auto",
                          results=[results[i] for i in range(len(gen.phases))]).to_dict()
        if run["total_cycles"] > best["greedy"]["total_cycles"]:  # the greedy's: never worse
            self.notes.append(f"auto's program ({run['total_cycles']} cycles) was longer than the greedy's: "
                              "the greedy's kept")
            return None, improved
        return run, improved

    def answer(self, final: dict[str, Any] | None, placed: Rescheduled | None, improved: list[int],
               gen: Generation) -> Optimized:
        best, auto = self.best, final is not None
        beam = next((f["greedy"]["total_cycles"] for f in self.finalists if f["name"] == "beam plan"), None)
        first = self.finalists[0]["greedy"]["total_cycles"]
        return Optimized(
            final if auto else best["greedy"], best["name"], best["model_cycles"],
            {COMPILER: first} if self.short else {
                "load-bound optimum plan, greedy": first,
                **({"compiler (beam plan, first-fit, greedy)": beam} if beam is not None else {})},
            time.perf_counter() - self.t0, "auto" if auto else "greedy",
            placed.kept.name if auto and placed else "first-fit (as generated)",
            placed.before - placed.after if auto and placed else 0,
            [gen.phases[i].phase.name for i in improved] if placed is None else None, self.plans_from,
            [{"name": f["name"], "model_cycles": f["model_cycles"],
              "greedy_cycles": f["greedy"]["total_cycles"], "greedy_bound": f["greedy"]["lower_bound"],
              "choice": f["choice"]} for f in self.finalists],
            bound=self.bound, cells={"ran": self.cells.ran, "reused": self.cells.reused,
                                     "at_once": self.cells.parallel},
            notes=self.notes, interrupted=self.budget.interrupted)


def optimize(wl: Workload, spec: Spec, grain: int | str | None = None, k: int = 3,
             params: SolveParams | None = None, progress: Progress | None = None,
             cells: Cells | None = None, budget: Budget | None = None) -> Optimized:
    """The best program found, its bound and gap, the baselines and every finalist (see the
    module's docstring). The finalists, the placement candidates and the phases' schedules
    run as `cells` (here, one after the other, by default)."""
    params = params or SolveParams()
    search = _Search(wl, spec, grain, k, params, progress, cells, Budget.of(params.limit(), budget))
    plans = search.plans()
    unique = {json.dumps(p["choice"], sort_keys=True) for p in plans}
    search.tell({"task": f"finalists: {len(unique)} programs"})
    if not search.replay(plans, search.share("finalists")):
        if search.budget.interrupted:
            raise Interrupted("no program was replayed whole before the interrupt")
        return baseline_only(wl, spec, grain, "the time limit ran out before a plan's program was replayed",
                             search.t0, progress)
    if search.short and search.budget.expired():  # the default layouts' replay was all there was time for
        return baseline_only(wl, spec, grain, "the time limit ran out while building the layout problem",
                             search.t0, progress, search.finalists[0]["greedy"])
    search.best = min(search.finalists, key=lambda f: f["greedy"]["total_cycles"])
    if not search.budget.interrupted:
        search.price_bound()
    search.steer()
    gen = _generation(search.ident, wl, spec, search.best["choice"], grain)
    placed = search.place(gen)
    final, improved = search.schedule(gen, placed)
    # let go of the plan's generation now: freed at the interpreter's exit instead, attention's
    # (4.5 million objects at fragment level) took 14 s past the run file; here 0.2 s
    _GENERATIONS.clear()
    return search.answer(final, placed, improved, gen)


def baseline_only(wl: Workload, spec: Spec, grain: int | str | None, why: str, t0: float,
                  progress: Progress | None, run: dict[str, Any] | None = None) -> Optimized:
    """The compiler's program (`run` when replayed already) when the time limit is too short
    for anything better: its default layouts, first-fit placement and the greedy's first
    schedules (which always complete, whatever the clock), with `fallback` saying why."""
    if run is None:
        if progress:
            progress({"task": "baseline (default layouts, greedy)"})
        run = run_program(generate(wl, spec, None, grain), "greedy").to_dict()
    return Optimized(run, COMPILER, None, {COMPILER: run["total_cycles"]}, time.perf_counter() - t0,
                     fallback=why)
