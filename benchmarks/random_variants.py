"""Which rule of a random phase makes its gap: the same phase with one rule taken away.

    .venv/bin/python benchmarks/random_variants.py [--transfers 60000] [--only "no deps"]

The random gc200 phase of `gaps.py` (seed 0), then the same draw without dependencies, without
addresses (no memory-element hazards), with one destination per transfer, and without both
dependencies and addresses. Prints each variant's best bound (and every named bound) and the
greedy's `longest` rule (the one that wins on the phase itself). A variant whose ratio drops
shows that the rule taken away is where the schedule or the bound falls short.
"""

from __future__ import annotations

import argparse
import time

from ipuopt.exchange.bounds import all_bounds, best_bound
from ipuopt.exchange.greedy import greedy_schedule, horizon_of
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.random_phase import random_phase
from ipuopt.spec import load_spec

VARIANTS = {"as is": {}, "no deps": {"p_dep": 0.0}, "no addresses": {"p_addr": 0.0},
            "unicast": {"max_fanout": 1}, "no deps, no addresses": {"p_dep": 0.0, "p_addr": 0.0}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transfers", type=int, default=60000)
    ap.add_argument("--spec", default="gc200")
    ap.add_argument("--only", action="append", help="variants by name (default: all)")
    args = ap.parse_args()
    spec = load_spec(args.spec)
    print(f"{'variant':<22} {'bound':>6} {'by':<12} {'greedy':>7} {'ratio':>6} {'time':>6}  every bound")
    for name, kw in VARIANTS.items():
        if args.only and name not in args.only:
            continue
        phase = random_phase(spec, args.transfers, seed=0, name=f"random-{args.transfers}", **kw)
        inst = Instance(phase, spec)
        t0 = time.perf_counter()
        bounds = all_bounds(inst, lambda t0=t0: time.perf_counter() - t0 > 30)
        best = best_bound(bounds)
        t1 = time.perf_counter()
        starts, widths = greedy_schedule(phase, spec, "longest", inst.timings)
        h = horizon_of(inst.timings, starts, widths)
        every = ", ".join(f"{b.name} {b.value}" for b in bounds)
        print(f"{name:<22} {best.value:>6} {best.name:<12} {h:>7} {h / max(1, best.value):>6.3f} "
              f"{time.perf_counter() - t1:>5.1f}s  {every}", flush=True)


if __name__ == "__main__":
    main()
