"""PuLP plumbing: HiGHS (through highspy) or bundled CBC, quiet output, status and dual bound."""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Iterator

import pulp

from ipuopt.budget import Budget
from ipuopt.params import SolveParams
from ipuopt.result import Status


@contextlib.contextmanager
def quiet_stdout(active: bool) -> Iterator[None]:
    """HiGHS prints a banner from C++ whatever its options: silence file descriptor 1."""
    if not active:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def milp_solver_name(params: SolveParams) -> str:
    """`milp_solver` (highs or cbc, checked by `registry.check_options`); `solver`, its older
    name, is still read."""
    options = params.options
    return str(options.get("milp_solver", options.get("solver", "highs")))


class _WarmHiGHS(pulp.HiGHS):
    """PuLP's HiGHS has no warm start: hand HiGHS the variables' initial values itself."""

    def callSolver(self, lp: pulp.LpProblem) -> None:
        import highspy

        start = highspy.HighsSolution()
        start.col_value = [v.varValue if v.varValue is not None else 0.0 for v in lp.variables()]
        start.value_valid = True
        lp.solverModel.setSolution(start)
        lp.solverModel.run()


def solve(prob: pulp.LpProblem, params: SolveParams, budget: Budget, warm: bool = False
          ) -> tuple[Status, float | None]:
    """Solve `prob` within `budget`; its status and the proven bound on its objective (None when unknown).
    With `warm`, the variables' initial values are handed over as a starting solution."""
    name = milp_solver_name(params)
    msg = bool(params.options.get("msg", False)) or params.verbose
    limit = budget.limit()
    if name == "highs":
        # No `threads`: HiGHS keeps one global scheduler per process, and a solve asking for
        # another thread count than the first one fails without a solution.
        backend = (_WarmHiGHS if warm else pulp.HiGHS)(msg=msg, timeLimit=limit)
    else:
        # PuLP's own bundled CBC (PULP_CBC_CMD) goes in PuLP 4.0; what PuLP recommends now is
        # COIN_CMD with the binary of `pulp[cbc]` (the cbcbox package)
        import cbcbox

        backend = pulp.COIN_CMD(msg=msg, timeLimit=limit, threads=params.workers, warmStart=warm,
                                path=cbcbox.cbc_bin_path())
    with quiet_stdout(not msg):
        prob.solve(backend)
    if prob.status == pulp.LpStatusInfeasible:
        return Status.INFEASIBLE, None
    if prob.sol_status == pulp.LpSolutionOptimal:
        return Status.OPTIMAL, pulp.value(prob.objective)
    bound = None
    if name == "highs" and prob.solverModel is not None:
        dual = prob.solverModel.getInfo().mip_dual_bound
        bound = dual if math.isfinite(dual) and abs(dual) < 1e18 else None
    if prob.sol_status == pulp.LpSolutionIntegerFeasible:
        return Status.FEASIBLE, bound
    return Status.UNKNOWN, bound
