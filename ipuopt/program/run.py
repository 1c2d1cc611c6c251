"""The whole program on the chip: compute, barrier, exchange, compute, ... with real skew.

Each tile computes its own share of every operator (unbalanced grids give unequal
shares), reaches the barrier, and the exchange starts `sync_cycles` after the last
arrival; the next compute starts for every tile when the exchange ends (bulk-synchronous).
Each exchange phase is scheduled (greedy by default) and replayed by the simulator, which
gives the barrier metrics of every boundary.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ipuopt.budget import Budget
from ipuopt.exchange.simulate import simulate
from ipuopt.exchange.solve import solve
from ipuopt.params import Progress, SolveParams
from ipuopt.registry import method
from ipuopt.result import Result, gap
from ipuopt.workloads.records import Generation


@dataclass
class ProgramRun:
    workload: str
    spec: str
    solver: str
    layouts: dict[str, str]
    boundaries: list[dict[str, Any]] = field(default_factory=list)
    final_compute: int = 0
    total: int = 0
    interrupted: bool = False  # Ctrl-C: the boundaries up to the one it stopped
    results: list[Result] = field(default_factory=list, repr=False)  # each phase's schedule, not written

    @property
    def lower_bound(self) -> int | None:
        """No schedule of these phases (these layouts, this placement) ends the program sooner:
        every boundary's slowest compute, sync and its phase's best bound, then the final
        compute (the replay's total with each horizon replaced by its bound). None while cut
        short by Ctrl-C."""
        if self.interrupted:
            return None
        return self.total - sum(b["horizon"] - b["lower_bound"] for b in self.boundaries)

    def to_dict(self) -> dict[str, Any]:
        exchange = sum(b["horizon"] for b in self.boundaries)
        sync = sum(b["sync"] for b in self.boundaries)
        waiting = sum(b["spread"] for b in self.boundaries)
        bound = self.lower_bound
        return {"workload": self.workload, "spec": self.spec, "solver": self.solver,
                "layouts": self.layouts, "total_cycles": self.total, "lower_bound": bound,
                "gap": gap(self.total, bound), "exchange_cycles": exchange, "sync_cycles": sync,
                "compute_cycles": self.total - exchange - sync, "arrival_spread_cycles": waiting,
                "final_compute": self.final_compute, "boundaries": self.boundaries,
                **({"interrupted": True} if self.interrupted else {})}


def run_program(gen: Generation, solver: str = "greedy", params: SolveParams | dict | None = None,
                progress: Progress | None = None, results: list[Result] | None = None,
                budget: Budget | None = None) -> ProgramRun:
    """Replay the generated program: per boundary, the compute that led to it (slowest and
    fastest tile), the barrier metrics and the scheduled exchange. A time limit is for the
    whole program: each phase gets the time left in proportion to its transfers. Ctrl-C ends
    the run at the phase it interrupts (`interrupted`). `results`: each phase's schedule
    already found (by `solver`, elsewhere), replayed as they are."""
    spec = gen.spec
    params = SolveParams.of(params)
    budget = Budget.of(params.limit(method("exchange", solver).default_limit), budget)
    weights = [len(gp.phase.transfers) + 1 for gp in gen.phases]
    run = ProgramRun(gen.workload.name, spec.name, solver,
                     {op: c.layout.label for op, c in gen.layouts.items()})
    now = 0  # when the previous exchange ended: every tile starts computing then
    for index in range(len(gen.phases) + 1):
        steps = [c for c in gen.compute if c.before_phase == index]
        work: dict[int, int] = {}
        for c in steps:
            for tile, cycles in c.cycles.items():
                work[tile] = work.get(tile, 0) + cycles
        if index == len(gen.phases):
            run.final_compute = max(work.values(), default=0)
            run.total = now + run.final_compute
            break
        gp = gen.phases[index]
        if progress:
            progress({"task": f"run {index + 1}/{len(gen.phases)}: {gp.phase.name}"})
        left = budget.left()
        share = None if left is None else left * weights[index] / sum(weights[index:])
        t0 = time.perf_counter()
        res = results[index] if results is not None else solve(
            gp.phase, spec, solver, params, budget=budget.share(share))
        took = time.perf_counter() - t0
        run.results.append(res)
        sim = simulate(gp.phase, spec, res.solution,
                       {t: now + work.get(t, 0) for t in range(spec.tiles)}, detail=False)
        doc = sim.to_dict()
        run.boundaries.append({
            "phase": gp.phase.name, "transfers": len(gp.phase.transfers),
            "compute": [c.label for c in steps],
            "compute_max": max(work.values(), default=0), "compute_min": min(work.values(), default=0),
            **{k: doc[k] for k in ("first_arrival", "last_arrival", "last_tile", "spread", "sync",
                                   "exchange_start", "horizon", "end", "after_last_arrival")},
            "status": res.status, "lower_bound": res.bound, "gap_cycles": res.value - res.bound,
            **({"time_limit_s": round(share, 3)} if share is not None else {}),
            **({"solve_s": round(took, 3)} if results is None else {})})
        now = doc["end"]
        if res.interrupted:
            run.interrupted, run.total = True, now
            break
    return run
