"""CP-SAT plumbing: parameters, progress callbacks, stop on request."""

from __future__ import annotations

import threading
from typing import Any

from ortools.sat.python import cp_model

from ipuopt.budget import Budget
from ipuopt.errors import InputError
from ipuopt.params import Progress, SolveParams
from ipuopt.result import Status

STATUS = {cp_model.OPTIMAL: Status.OPTIMAL, cp_model.FEASIBLE: Status.FEASIBLE,
          cp_model.INFEASIBLE: Status.INFEASIBLE}
HALT_EVERY = 0.05  # seconds between the repeated stop requests of one asked search
HALT_TRIES = 100  # a search that has not begun 5 s after the request sees it at its start


class _Halt:
    """Stops one solver's search when Ctrl-C is asked. CP-SAT drops a `stop_search()` that
    comes before its `solve()` has set up (the moment between `solve`'s own check and the
    search's start), and the search would then run to its time limit: so the request is
    repeated until the solve has returned."""

    def __init__(self, solver: cp_model.CpSolver) -> None:
        self.solver = solver
        self.ended = threading.Event()

    def __call__(self) -> None:
        threading.Thread(target=self._repeat, daemon=True).start()

    def _repeat(self) -> None:
        for _ in range(HALT_TRIES):
            self.solver.stop_search()
            if self.ended.wait(HALT_EVERY):
                return


def is_parameter(key: str) -> bool:
    """A CP-SAT parameter's name (what `new_solver` passes through)."""
    return hasattr(cp_model.CpSolver().parameters, key)


def new_solver(params: SolveParams, budget: Budget, seconds: float | None = None, wall_clock: bool = False
               ) -> cp_model.CpSolver:
    """A solver set up from `params` for `seconds` (default: what `budget` has left) that stops
    when the user asks, and by the budget's hard end. Any CP-SAT parameter passes through by its
    own name; the other options are the methods' own, each checked by `registry.check_options`
    before any work. One worker plus a seed makes the search deterministic; the time limit is then
    deterministic time too, so a rerun stops at the same point, unless `wall_clock` holds it
    to real seconds or the hard end comes first (then `budget.wall_cut` says so)."""
    solver = cp_model.CpSolver()
    sp = solver.parameters
    workers = params.workers or 2
    limit = budget.limit() if seconds is None else seconds
    left = budget.hard_left()
    sp.num_workers = int(workers)
    sp.log_search_progress = params.verbose
    sp.catch_sigint_signal = False  # Ctrl-C is ours: it asks every solver to stop (Budget.request)
    if params.seed is not None:
        sp.random_seed = int(params.seed)
    if limit is not None:
        sp.max_time_in_seconds = float(limit)
        if params.reproducible and not wall_clock:
            sp.max_deterministic_time = float(limit)
            sp.max_time_in_seconds = 10 * float(limit) + 10
    if left is not None:
        sp.max_time_in_seconds = min(sp.max_time_in_seconds, left)
    for key, value in params.options.items():
        if not hasattr(sp, key):
            continue
        try:
            setattr(sp, key, value)
        except (TypeError, ValueError):  # pybind's message lists every overload: say what it wants
            raise InputError.one("", f"params.{key}", f"bad value {value!r}: CP-SAT's {key} is "
                                                      f"{type(getattr(sp, key)).__name__}") from None
    solver.ipuopt_halt = halt = _Halt(solver)
    budget.on_request(halt)
    solver.ipuopt_limits = (budget, params.reproducible and not wall_clock)  # read back by `solve`
    return solver


class ProgressCallback(cp_model.CpSolverSolutionCallback):
    """Reports each improving solution's objective and the proven bound."""

    def __init__(self, progress: Progress) -> None:
        super().__init__()
        self.progress = progress

    def on_solution_callback(self) -> None:
        self.progress({"incumbent": int(self.objective_value), "bound": int(self.best_objective_bound)})


def solve(model: cp_model.CpModel, solver: cp_model.CpSolver, progress: Progress | None = None) -> Any:
    """Solve with progress reports (solutions and bound moves); the CP-SAT status code."""
    if progress is not None and hasattr(solver, "best_bound_callback"):
        solver.best_bound_callback = lambda b: progress({"bound": int(b)})
    stop, deterministic = getattr(solver, "ipuopt_limits", (None, False))
    if stop is not None and stop.is_set():
        # asked before the search began: CP-SAT ignores stop_search() until solve() starts
        solver.parameters.max_time_in_seconds = 0.0
    code = solver.solve(model, ProgressCallback(progress) if progress else None)
    if stop is not None:
        solver.ipuopt_halt.ended.set()
        stop.forget(solver.ipuopt_halt)
    sp = solver.parameters
    if (deterministic and not stop.interrupted and code not in (cp_model.OPTIMAL, cp_model.INFEASIBLE)
            and solver.deterministic_time < 0.99 * sp.max_deterministic_time):
        # neither a proof nor the deterministic limit ended it: the deadline did (however little
        # of it the stages before left: a wall time near the limit is no test on a busy machine)
        stop.cut()
    return code


DEFINITE = (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE)


def race(models: list[cp_model.CpModel], params: SolveParams, budget: Budget, seconds: float
         ) -> tuple[int, Any, cp_model.CpSolver]:
    """Solve decision models, equivalent for the question asked, with one single-worker
    CP-SAT per worker, worker i on model i mod len(models) and its own seed, in threads
    (CP-SAT releases the GIL); the first definite answer stops the others. The index of the
    model answered, the status code and its solver.

    On small hard decision questions one search's time is heavy-tailed: seeds in parallel
    beat one search on two workers (Brucker's j8-per10-1 at horizon 1,000: 1.7 s against
    28 s). Reproducible parameters (one worker, a seed) run one search on the first model."""
    workers = params.workers or 2
    if workers <= 1:
        solver = new_solver(params, budget, seconds)
        return 0, solve(models[0], solver), solver
    base = params.seed or 0
    # each is one worker with a seed, yet not a reproducible run: keep to the wall clock
    solvers = [new_solver(params.with_(workers=1, seed=base + i), budget, seconds, wall_clock=True)
               for i in range(workers)]
    codes: list[Any] = [cp_model.UNKNOWN] * workers

    def run(i: int) -> None:
        codes[i] = solve(models[i % len(models)], solvers[i])
        if codes[i] in DEFINITE:
            for other in solvers:
                other.stop_search()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    best = next((i for i, c in enumerate(codes) if c in DEFINITE), 0)
    return best % len(models), codes[best], solvers[best]
