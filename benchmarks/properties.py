"""Property run: thousands of generated phases across every shipped spec and every solver.

    .venv/bin/python benchmarks/properties.py [--phases 10000] [--seed 0] [--jobs 2] [--time-limit 0.2]

For each phase (2 to 14 transfers among 4 to 12 tiles, random fanout, sizes, addresses,
dependencies and `paired: never`), on a spec taken in turn from every shipped one:
- the greedy and one exact solver (cpsat, milp, lns, colour in turn) schedule it; every schedule
  passes the validator, the simulator replays it to the same horizon, and it lies at or
  above the best lower bound;
- CP-SAT (and LNS, colour) is never worse than its greedy hint;
- every fifth phase also runs with a zero time limit, which must return the greedy
  schedule (status fallback, or optimal when the greedy meets the bound).
Prints one line per failure and a summary (phases, solves, failures, time); exit 1 on any
failure. The test suite runs a bounded share of it (tests/test_properties.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from ipuopt.exchange.random_phase import random_phase
from ipuopt.exchange.simulate import simulate
from ipuopt.exchange.solve import solve
from ipuopt.exchange.validate import validate
from ipuopt.spec import load_spec, spec_names

EXACT = ("cpsat", "milp", "lns", "colour")


def check_phase(index: int, seed: int, time_limit: float) -> tuple[int, list[str]]:
    """(solves run, failures) for the phase numbered `index`."""
    specs = spec_names()
    spec = load_spec(specs[index % len(specs)])
    k = seed * 1_000_003 + index
    n, tiles = 2 + k % 13, 4 + (k // 13) % 9
    phase = random_phase(spec, n, seed=k, tiles=tiles, max_fanout=1 + k % 4, max_words=8 + k % 57,
                         p_dep=0.15, name=f"p{index}")
    failures: list[str] = []
    where = f"phase {index} ({spec.name}, {n} transfers, seed {k})"

    def run(solver: str, limit: float) -> None:
        res = solve(phase, spec, solver, {"time_limit": limit, "workers": 1, "seed": 0})
        s = res
        report = validate(phase, spec, s.solution)
        if not report.ok:
            failures.append(f"{where}: {solver} schedule rejected by the validator")
        sim = simulate(phase, spec, s.solution)
        if sim.ok != report.ok or sim.horizon != report.horizon:
            failures.append(f"{where}: the simulator ({sim.breach or sim.horizon}) disagrees with the "
                            f"validator ({report.horizon})")
        if s.lower_bound is not None and s.value < s.lower_bound:
            failures.append(f"{where}: {solver} horizon {s.value} below its bound {s.lower_bound}")
        if solver in ("cpsat", "lns", "colour") and s.value > s.extras["greedy_horizon"]:
            failures.append(f"{where}: {solver} {s.value} worse than its greedy hint "
                            f"{s.extras['greedy_horizon']}")
        if limit == 0 and (s.value != s.extras["greedy_horizon"]
                           or s.status not in ("fallback", "optimal")):
            failures.append(f"{where}: {solver} with a zero time limit gave {s.status} {s.value}, "
                            f"not the greedy fallback {s.extras['greedy_horizon']}")

    solves = 2
    run("greedy", time_limit)
    run(EXACT[index % len(EXACT)], time_limit)
    if index % 5 == 0:
        run("cpsat", 0.0)
        solves += 1
    return solves, failures


def run_share(phases: int, seed: int = 0, time_limit: float = 0.2, jobs: int = 1) -> tuple[int, list[str]]:
    """(solves, failures) over `phases` phases."""
    args = [(i, seed, time_limit) for i in range(phases)]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(check_phase, *zip(*args, strict=True), chunksize=20))
    else:
        results = [check_phase(*a) for a in args]
    return sum(r[0] for r in results), [f for r in results for f in r[1]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--time-limit", type=float, default=0.2, help="seconds per exact solve")
    args = ap.parse_args()
    t0 = time.perf_counter()
    solves, failures = run_share(args.phases, args.seed, args.time_limit, args.jobs)
    for f in failures:
        print(f)
    print(f"phases {args.phases}  specs {len(spec_names())}  solves {solves}  failures {len(failures)}  "
          f"time {time.perf_counter() - t0:.0f}s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
