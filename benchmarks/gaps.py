"""Greedy against best against bound on full-size phases: the workload generator's phases
(default layouts, gc200) and the 60,000-transfer random scaling phase.

    .venv/bin/python benchmarks/gaps.py [--time-limit 300] [--workload siglip-mlp ...]
                                        [--no-random] [--only PHASE]

Per phase: the greedy (`ipuopt solve`'s default), `--solver auto` within the time limit,
the best bound with and without the clique bound (the bounds before it), and the ratios
best / bound; "before" is what `ipuopt solve` gave without a time limit and without the
clique bound (greedy over the old bound).
"""

from __future__ import annotations

import argparse
import time

from ipuopt.exchange.bounds import all_bounds
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.random_phase import random_phase
from ipuopt.exchange.solve import solve
from ipuopt.spec import load_spec
from ipuopt.workloads.phases import generate
from ipuopt.workloads.workload import load_workload


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--workload", action="append", help="workloads (default siglip-mlp)")
    ap.add_argument("--spec", default="gc200")
    ap.add_argument("--no-random", action="store_true", help="skip the 60,000-transfer phase")
    ap.add_argument("--only", help="only phases whose name contains this")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    spec = load_spec(args.spec)
    phases = []
    for name in args.workload or ["siglip-mlp"]:
        phases += [gp.phase for gp in generate(load_workload(name), spec).phases]
    if not args.no_random:
        phases.append(random_phase(spec, 60000, seed=0, name="random-60000"))
    if args.only:
        phases = [p for p in phases if args.only in p.name]
    head = (f"{'phase':<26} {'transfers':>9} {'old bound':>9} {'bound':>7} {'greedy':>7} {'best':>7} "
            f"{'before':>7} {'now':>6} {'time':>6}  bound name / best by")
    print(head)
    for ph in phases:
        t0 = time.perf_counter()
        r = solve(ph, spec, "auto", {"time_limit": args.time_limit, "workers": 1, "seed": args.seed})
        s = r
        old = max(b.value for b in all_bounds(Instance(ph, spec), None) if b.name != "clique")
        greedy = s.extras["greedy_horizon"]
        name = max(r.bounds, key=lambda b: b.value).name
        print(f"{ph.name:<26} {len(ph.transfers):>9} {old:>9} {s.lower_bound:>7} {greedy:>7} "
              f"{s.value:>7} {greedy / old:>7.3f} {s.value / s.lower_bound:>6.3f} "
              f"{time.perf_counter() - t0:>5.0f}s  {name} / {s.solver}", flush=True)


if __name__ == "__main__":
    main()
