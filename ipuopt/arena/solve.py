"""The front door of arena placement: pick a solver, place, validate, report.

Every solver starts from the best-fit greedy (warm start and fallback) and adds candidate
placements to one run; the best valid candidate is returned, credited to its solver."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ipuopt.arena.greedy import best_greedy, shift_baseline
from ipuopt.arena.problem import OBJECTIVES, Arena
from ipuopt.arena.search import search_fit
from ipuopt.arena.validate import validate_placement
from ipuopt.budget import Budget, run_interruptible
from ipuopt.display import count, html
from ipuopt.errors import InputError
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import check_options, method
from ipuopt.result import Bound, Result, Status


@dataclass
class Placement:
    """The solution of an arena: an offset per buffer (none when nothing was found) and the
    peak address it reaches, for the objective it was placed for."""

    arena: Arena
    objective: str
    offsets: dict[str, int] | None
    peak: int | None = None

    def __repr__(self) -> str:
        placed = count(len(self.offsets or {}), "buffer")
        return f"Placement(arena {self.arena.name!r}: {placed} placed, objective {self.objective}, " \
               f"peak {self.peak})"

    def _repr_html_(self) -> str | None:
        return html("placement", self)

    def to_dict(self) -> dict[str, Any]:
        a = self.arena
        return {"arena": a.name, "spec": a.spec_name, "region": a.region, "objective": self.objective,
                "peak": self.peak, "offsets": self.offsets or {}}


def _score(arena: Arena, objective: str, offsets: dict[str, int]) -> tuple[int, int, bool]:
    """(objective value, peak, valid) of a placement."""
    rep = validate_placement(arena, offsets)
    value = {"fit": 0, "peak": rep.peak, "conflicts": rep.conflicts}[objective]
    return value, rep.peak, rep.ok


@dataclass
class _Run:
    """One call of `place`: what every solver adds to, and what the answer is chosen from."""

    arena: Arena
    objective: str
    solver: str
    params: SolveParams
    budget: Budget
    tell: Progress
    limit: float  # seconds at the start
    bound: int
    live: int  # the most bytes live at once (at step `live_step`): no placement's peak is lower
    live_step: int
    greedy: dict[str, int] = field(default_factory=dict)
    t0: float = field(default_factory=time.perf_counter)
    candidates: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    status: Status = Status.FEASIBLE
    info: dict[str, Any] = field(default_factory=dict)
    proof: str = ""  # set with the solver's name when it proved that nothing fits
    prover: str = ""
    interrupted: bool = False

    def remaining(self) -> float:
        return max(0.1, self.budget.limit())

    def add(self, name: str, offsets: dict[str, int] | None) -> None:
        if offsets is not None:
            self.candidates.append((name, offsets))

    def hint(self) -> dict[str, int]:
        """The best candidate so far (CP-SAT's hint), or none."""
        if not self.candidates:
            return {}
        return min(self.candidates, key=lambda c: _score(self.arena, self.objective, c[1])[0])[1]

    def infeasible(self, prover: str, reason: str) -> None:
        if not self.proof:  # the first proof is the one reported
            self.prover, self.proof = prover, reason


class _CpsatRun:
    """One CP-SAT solve of the arena model, in this thread (`run`) or another (`start`).

    OR-Tools is imported and the model built by `run` itself: importing CP-SAT costs about
    0.3 s (it brings pandas), more than the exact search needs on many arenas, so a command
    that never asks CP-SAT never pays for it."""

    def __init__(self, run: _Run, params: SolveParams, wall_clock: bool = False) -> None:
        self.owner, self.params, self.wall_clock = run, params, wall_clock
        self.solver: Any = None
        self.status = Status.UNKNOWN
        self.offsets: dict[str, int] | None = None
        self.decisive = threading.Event()  # set on a proof: optimal (or found, for fit) or infeasible
        self.cancelled = False
        self.solving = False
        self.lock = threading.Lock()  # cancelled or solving: one or the other, never both
        self.thread: threading.Thread | None = None

    def run(self) -> None:
        from ipuopt.arena.cpsat import ArenaModel
        from ipuopt.backends import cpsat

        run = self.owner
        if self.cancelled:
            return
        model = ArenaModel(run.arena, run.objective)
        model.hint(run.hint())
        self.solver = cpsat.new_solver(self.params, run.budget, run.remaining(), self.wall_clock)
        with self.lock:
            if self.cancelled:
                return
            self.solving = True
        self.status = cpsat.STATUS.get(cpsat.solve(model.model, self.solver), Status.UNKNOWN)
        if self.status in (Status.OPTIMAL, Status.FEASIBLE):
            self.offsets = model.read(self.solver)
        if self.status in (Status.OPTIMAL, Status.INFEASIBLE):
            self.decisive.set()

    def start(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self.run, daemon=True)
            self.thread.start()

    def finish(self, stop: bool) -> None:
        """Wait for the thread; with `stop`, end its search first. A thread still importing
        OR-Tools or building the model is not waited for (it returns before solving: the
        search's answer need not wait the import's 0.3 s); CP-SAT ignores a stop that arrives
        before its solve has begun, hence the repeated request."""
        if stop:
            with self.lock:
                self.cancelled = True
                if not self.solving:
                    return
        while self.thread is not None and self.thread.is_alive():
            if stop and self.solver is not None:
                self.solver.stop_search()
            self.thread.join(0.05)

    def collect(self, run: _Run) -> None:
        """Its placement, optimality or infeasibility proof into the run."""
        run.add("cpsat", self.offsets)
        if self.offsets is not None:
            if self.status == Status.OPTIMAL:
                run.status = Status.OPTIMAL
            elif run.objective == "conflicts":
                run.bound = max(run.bound, int(self.solver.best_objective_bound) // (run.arena.capacity + 1))
        elif self.status == Status.INFEASIBLE:
            run.infeasible("cpsat", "proved infeasible by CP-SAT")


def _exhaustive(arena: Arena) -> bool:
    """The search leaves the space under a fixed buffer unused and reserves an alias owner
    over its aliases' whole hull, so only without either is an exhausted search a proof."""
    return all(b.offset is None and b.alias_of is None for b in arena.buffers)


# The search alone (a dive on each core) for this long before CP-SAT joins a race: it places
# most arenas that it places at all in a fraction of a second, and a CP-SAT started at once
# (its import and model) would slow it on the shared cores for nothing (MiniMalloc's K: 0.52 s
# in all with 0.3, 0.73-0.78 s with 0.1).
HEAD_START = 0.3


def run_search(run: _Run, race: bool = False) -> None:
    """The exact search (fit and peak), alone or racing CP-SAT on the other core. Search and
    CP-SAT succeed on different instances (the search on tangled live ranges, CP-SAT where
    one shape dominates), so `auto` races them unless asked for one worker, which keeps the
    run reproducible: search for half the limit, then CP-SAT. In a race CP-SAT starts after
    `HEAD_START` seconds of search, or when the search gives up sooner; the search runs a dive
    per worker throughout."""
    if run.objective not in ("fit", "peak"):
        return
    target = run.arena.capacity if run.objective == "fit" else run.live
    # a race is not reproducible anyway: CP-SAT keeps to the wall clock
    cp_run = _CpsatRun(run, run.params.with_(workers=max(1, (run.params.workers or 2) - 1)),
                       wall_clock=True) if race else None
    run.tell({"stage": "search and CP-SAT racing" if race else "exact search"})
    limit = run.limit if run.solver == "search" or race else run.limit / 2
    t0 = time.perf_counter()

    def stop() -> bool:
        if cp_run is None:
            return run.budget.is_set()
        if cp_run.thread is None and time.perf_counter() - t0 >= HEAD_START:
            cp_run.start()
        return run.budget.is_set() or cp_run.decisive.is_set()

    # dives on every core the run may use: one worker keeps it reproducible
    res = search_fit(run.arena, target, time_limit=limit, seed=run.params.seed or 0, stop=stop,
                     threads=run.params.workers or 2)
    run.info["search_nodes"] = res.extras["nodes"]
    # the search ignores distinct_elements_from, so its placement may not stand
    found = res.solution is not None and validate_placement(run.arena, res.solution).ok
    proof = res.status == Status.INFEASIBLE and run.objective == "fit" and _exhaustive(run.arena)
    if cp_run is not None:
        # an exhausted search settles `fit`; for `peak` it only shows that peak > live
        settled = found or proof or run.budget.is_set()
        if not settled:
            cp_run.start()
        cp_run.finish(stop=settled)
    if found:
        run.add("search", res.solution)
        if run.objective == "peak":
            run.status = Status.OPTIMAL  # reached the live-bytes lower bound
    elif proof:
        run.infeasible("search", "exhaustive search: no placement within capacity")
    if cp_run is not None:
        cp_run.collect(run)


def run_cpsat(run: _Run) -> None:
    run.tell({"stage": "CP-SAT"})
    cp_run = _CpsatRun(run, run.params)
    cp_run.run()
    cp_run.collect(run)


def run_milp(run: _Run) -> None:
    run.tell({"stage": "MILP"})
    from ipuopt.arena.milp import solve_arena_milp

    res = solve_arena_milp(run.arena, run.objective, run.params, run.budget)
    if res.status == Status.INFEASIBLE:
        run.infeasible("milp", "proved infeasible by MILP")
    run.add("milp", res.solution)
    if res.status == Status.OPTIMAL:
        run.status = Status.OPTIMAL


def run_baseline(run: _Run) -> None:
    shifted, _ = shift_baseline(run.arena, run.greedy)
    run.add("baseline", shifted)
    run.info["baseline_peak"] = _score(run.arena, run.objective, shifted)[1]


def run_greedy(run: _Run) -> None:
    if run.objective == "conflicts" and run.candidates:
        run_baseline(run)  # the shift is the greedy's way to dodge conflicts


def run_auto(run: _Run) -> None:
    if run.status == Status.OPTIMAL:
        return  # the greedy already met the bound
    race = (run.params.workers or 2) != 1 and run.objective in ("fit", "peak")
    run_search(run, race)
    if not race and not run.proof and (run.objective == "conflicts" or not run.candidates
                                       or (run.objective == "peak" and run.status != Status.OPTIMAL)):
        run_cpsat(run)


def place(arena: Arena, objective: str = "fit", solver: str = "auto",
          params: SolveParams | dict[str, Any] | None = None,
          progress: Progress | None = None, budget: Budget | None = None) -> Result[Placement]:
    """Place `arena` within `budget` (or `params`' time limit); every placement returned
    passes the validator.

    `progress` hears what the placer is doing (`stage`) and the greedy's peak. Ctrl-C stops
    the solvers and returns the best placement found so far, marked `interrupted`."""
    if objective not in OBJECTIVES:
        raise InputError.one("", "--objective", f"one of {', '.join(OBJECTIVES)}")
    chosen = method("arena", solver)
    params = SolveParams.of(params)
    check_options(chosen, params.options, "params")
    strategy = chosen.load()
    budget = Budget.of(params.limit(), budget)
    live, step = arena.peak_live()
    run = _Run(arena, objective, solver, params, budget, progress or (lambda info: None), budget.limit(),
               {"fit": 0, "peak": live, "conflicts": 0}[objective], live, step)
    if live > arena.capacity:
        return _answer(run, Status.INFEASIBLE,
                       reason=f"at step {step} live bytes {live} exceed capacity {arena.capacity}")
    run.tell({"stage": "greedy"})
    greedy, order = best_greedy(arena)
    _, g_peak, g_ok = _score(arena, objective, greedy)
    run.tell({"stage": "greedy done", "greedy peak": g_peak})
    run.info["greedy_peak"] = g_peak
    run.greedy = greedy
    if g_ok:
        run.add(f"greedy/{order}", greedy)
        if objective == "fit" or (objective == "peak" and g_peak <= live):
            run.status = Status.OPTIMAL
    _, run.interrupted = run_interruptible(lambda: strategy(run), budget)
    return _choose(run, g_peak)


def _answer(run: _Run, status: Status, name: str = "", offsets: dict[str, int] | None = None,
            value: int | None = None, peak: int | None = None, reason: str = "") -> Result[Placement]:
    bound = value if status == Status.OPTIMAL else run.bound
    named = [Bound("live bytes", run.live, f"step {run.live_step}")] if run.objective == "peak" else []
    return Result(status, Placement(run.arena, run.objective, offsets, peak), value, bound,
                  time.perf_counter() - run.t0, run.solver, run.info, name or run.solver, run.interrupted,
                  named, reason)


def _choose(run: _Run, g_peak: int) -> Result[Placement]:
    """The best valid candidate, or the proof that nothing fits, or why nothing was found."""
    if run.proof:
        return _answer(run, Status.INFEASIBLE, run.prover, reason=run.proof)
    scored = [(name, offs, *_score(run.arena, run.objective, offs)) for name, offs in run.candidates]
    valid = [s for s in scored if s[4]]
    if not valid:
        cap = run.arena.capacity
        why = {"greedy": f"greedy peak {g_peak} exceeds capacity {cap}",
               "baseline": f"the baseline (4 KiB shift of the best-fit placement) needs "
                           f"{run.info.get('baseline_peak')} bytes, more than capacity {cap}",
               }.get(run.solver, "no placement found in the time limit and none proved impossible")
        return _answer(run, Status.UNKNOWN, reason=why)
    # a solver asked for by name keeps its own placement unless another is better in the
    # objective itself; the result always names the solver whose placement it is
    name, offsets, value, peak, _ = min(valid, key=lambda v: (v[2], not v[0].startswith(run.solver), v[3]))
    status = run.status
    if run.objective == "fit" or (run.objective == "peak" and value <= run.bound):
        status = Status.OPTIMAL
    return _answer(run, status, name, offsets, value, peak)
