"""Dense small phases with proven optima: how close the bounds come, and whether the MILP
proves what CP-SAT proves.

    .venv/bin/python benchmarks/small_dense.py [--phases 6] [--transfers 14] [--time-limit 60]
                                               [--milp-solver highs|cbc]

Random gc200 phases on 6 tiles (multicast up to 3, up to 200 words, addresses, pairs,
dependencies). Per phase: CP-SAT's optimum and time, the MILP's status, horizon and time,
the best bound without the clique bound (old) and with it, each as a share of the optimum.
"""

from __future__ import annotations

import argparse
import time

from ipuopt.exchange.random_phase import random_phase
from ipuopt.exchange.solve import solve
from ipuopt.spec import load_spec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phases", type=int, default=6)
    ap.add_argument("--transfers", type=int, default=14)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--milp-solver", choices=("highs", "cbc"), default="highs")
    args = ap.parse_args()
    spec = load_spec("gc200")
    params = {"time_limit": args.time_limit, "workers": 1, "seed": 0}
    print(f"{'seed':>4} {'optimum':>7} {'cpsat':>6} {'milp':>9} {'milp h':>6} {'time':>6} "
          f"{'old bound':>9} {'bound':>6} {'old/opt':>7} {'now/opt':>7}")
    for seed in range(args.phases):
        ph = random_phase(spec, args.transfers, seed=seed, tiles=6, max_words=200, max_fanout=3)
        t0 = time.perf_counter()
        c = solve(ph, spec, "cpsat", params)
        tc = time.perf_counter() - t0
        t0 = time.perf_counter()
        m = solve(ph, spec, "milp", {**params, "milp_solver": args.milp_solver})
        tm = time.perf_counter() - t0
        old = max(b.value for b in c.bounds if b.name != "clique")
        new = max(b.value for b in c.bounds)
        opt = c.value if c.status == "optimal" else 0
        print(f"{seed:>4} {opt or '-':>7} {tc:>5.1f}s {m.status:>9} {m.value:>6} "
              f"{tm:>5.1f}s {old:>9} {new:>6} {old / (opt or 1e9):>7.3f} {new / (opt or 1e9):>7.3f}",
              flush=True)


if __name__ == "__main__":
    main()
