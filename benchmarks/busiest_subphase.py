"""Which side of a random phase's gap is weak: the sub-phase of its busiest receive tiles.

    .venv/bin/python benchmarks/busiest_subphase.py [--transfers 60000] [--tiles 1,20]
                                                   [--time-limit 60]

The random gc200 phase of `gaps.py` (seed 0). For each K in `--tiles`: the transfers that
receive at one of the K tiles with the largest receive-lane bound, their dependencies on
transfers outside dropped (a relaxation: any schedule of the phase restricted to them is a
schedule of the sub-phase, so its optimum is a lower bound on the phase's). Prints the
sub-phase's size, best bound, greedy and CP-SAT horizons (CP-SAT's proven bound too). A
sub-phase scheduled close to the phase's bound says these lanes alone do not make the gap.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from ipuopt.budget import Budget
from ipuopt.exchange.bounds import all_bounds, receive_lane_bounds
from ipuopt.exchange.cpsat import solve_cpsat
from ipuopt.exchange.greedy import best_greedy
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.phase import Phase
from ipuopt.exchange.random_phase import random_phase
from ipuopt.params import SolveParams
from ipuopt.spec import load_spec


def busiest_receivers(inst: Instance, k: int) -> list[int]:
    """The k tiles whose receive lanes bound the horizon most (the endpoint bound's rule)."""
    bounds = receive_lane_bounds(inst.timings, inst.spec)
    return sorted(bounds, key=lambda x: -bounds[x])[:k]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transfers", type=int, default=60000)
    ap.add_argument("--tiles", default="1,20", help="comma-separated K values")
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    spec = load_spec("gc200")
    phase = random_phase(spec, args.transfers, seed=0, name=f"random-{args.transfers}")
    inst = Instance(phase, spec)
    named = all_bounds(inst, None)
    whole = max(named, key=lambda b: b.value)
    print(f"{phase.name}: best bound {whole.value} ({whole.name}, {whole.where}); each: "
          + ", ".join(f"{b.name} {b.value}" for b in named))
    print(f"{'tiles':>5} {'transfers':>9} {'bound':>6} {'greedy':>7} {'cpsat':>6} {'proven':>7} {'time':>6}")
    for k in (int(x) for x in args.tiles.split(",")):
        tiles = set(busiest_receivers(inst, k))
        chosen = [tm.transfer for tm in inst.timings if tiles & set(tm.arrival)]
        ids = {t.id for t in chosen}
        chosen = [dataclasses.replace(t, after=tuple(a for a in t.after if a in ids)) for t in chosen]
        sub = Instance(Phase(spec_ref=spec.name, transfers=chosen, name=f"busiest-{k}"), spec)
        sub.bound = max(b.value for b in all_bounds(sub, None))
        starts, widths, _ = best_greedy(sub)
        t0 = time.perf_counter()
        res = solve_cpsat(sub, (starts, widths), SolveParams(workers=2, seed=0), Budget(args.time_limit))
        print(f"{k:>5} {len(chosen):>9} {sub.bound:>6} {sub.horizon((starts, widths)):>7} {res.value:>6} "
              f"{res.bound if res.bound is not None else '-':>7} {time.perf_counter() - t0:>5.1f}s",
              flush=True)


if __name__ == "__main__":
    main()
