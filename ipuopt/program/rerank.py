"""Finalists ranked by their real phases: each plan's program generated, every exchange
scheduled and the whole run replayed, so the model's ranking can be checked."""

from __future__ import annotations

from typing import Any

from ipuopt.budget import Budget
from ipuopt.layout.select import Rerank
from ipuopt.params import Progress, SolveParams
from ipuopt.program.run import run_program
from ipuopt.spec import Spec
from ipuopt.workloads.fragments import Grain
from ipuopt.workloads.gemm import GemmLayout
from ipuopt.workloads.phases import generate
from ipuopt.workloads.workload import Workload


def rerank(plans: list[dict[str, Any]], wl: Workload, spec: Spec, solver: str = "greedy",
           params: SolveParams | dict | None = None, progress: Progress | None = None,
           grain: Grain = None, budget: Budget | None = None) -> list[dict[str, Any]]:
    """Per plan (rank, cycles, choice): its scheduled cycles, compute and exchange (phases
    generated at `grain`), and its rank by scheduled cycles; `agrees` says whether both
    rankings put it at the same place."""
    gemms = {o.name for o in wl.operators if o.kind == "gemm"}
    params = SolveParams.of(params)
    budget = Budget.of(None, budget)  # each program its own time limit (a share of it), not past it
    out = []
    for p in plans:
        layouts = {op: GemmLayout.parse(cid, spec) for op, cid in p["choice"].items() if op in gemms}
        run = run_program(generate(wl, spec, layouts, grain), solver, params, progress,
                          budget=budget.share(params.time_limit)).to_dict()
        out.append({"rank": p["rank"], "cycles": p["cycles"], "scheduled": run["total_cycles"],
                    "compute": run["compute_cycles"], "exchange": run["exchange_cycles"],
                    "sync": run["sync_cycles"], "choice": p["choice"]})
    by_scheduled = sorted(out, key=lambda r: (r["scheduled"], r["rank"]))
    for n, r in enumerate(by_scheduled, 1):
        r["scheduled_rank"] = n
        r["agrees"] = r["scheduled_rank"] == r["rank"]
    return out


def ranker(solver: str, params: SolveParams, budget: Budget, progress: Progress | None = None) -> Rerank:
    """What `layout.select` takes to rank its plans: `rerank` with this method, `params`' time
    limit for each program, within `budget`."""
    return lambda plans, wl, spec, grain: rerank(plans, wl, spec, solver, params, progress, grain, budget)
