"""Generated-phase suite: every phase of a workload on a spec, with bounds, greedy and exact.

    .venv/bin/python benchmarks/workloads.py                     # small suite (fixtures)
    .venv/bin/python benchmarks/workloads.py --full [--exact-time 60]
    .venv/bin/python benchmarks/workloads.py --write-fixtures    # refresh benchmarks/fixtures

Small phases are committed under benchmarks/fixtures/; full-size ones are
generated on demand (generation is deterministic). Exact: CP-SAT for phases up
to --cpsat-max transfers, LNS above, each for --exact-time seconds.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ipuopt.exchange.solve import solve
from ipuopt.io import write_json
from ipuopt.spec import load_spec
from ipuopt.workloads.gemm import GemmLayout
from ipuopt.workloads.phases import generate
from ipuopt.workloads.workload import load_workload

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SMALL = [("mini-mlp", "test64", {}), ("mini-attention", "test64", {}),
         ("mini-mlp", "gc200-nopairs", {})]
FULL = [("siglip-mlp", "gc200", {"gemm1": "4x92x4/4x1", "gemm2": "4x24x15/15x1"}),
        ("siglip-attention", "gc200", {})]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="full-size workloads too")
    ap.add_argument("--exact-time", type=float, default=10.0)
    ap.add_argument("--cpsat-max", type=int, default=3000)
    ap.add_argument("--no-exact", action="store_true")
    ap.add_argument("--write-fixtures", action="store_true")
    args = ap.parse_args()
    suite = SMALL + (FULL if args.full else [])
    print(f"{'workload':<17} {'spec':<14} {'phase':<24} {'transfers':>9} {'endpoints':>9} "
          f"{'bound':>7} {'greedy':>7} {'g-time':>7} {'exact':>7} {'solver':<6} {'gap':>6} "
          f"{'x-time':>7}", flush=True)
    for name, spec_name, lay in suite:
        spec = load_spec(spec_name)
        wl = load_workload(name)
        chosen = {k: GemmLayout.parse(v, spec) for k, v in lay.items()}
        for gp in generate(wl, spec, chosen).phases:
            phase = gp.phase
            if args.write_fixtures and spec_name == "test64":
                FIXTURES.mkdir(exist_ok=True)
                write_json(FIXTURES / f"{name}-{spec_name}-{phase.name}.json", phase.to_dict())
            t0 = time.perf_counter()
            g = solve(phase, spec, "greedy")
            gt = time.perf_counter() - t0
            exact, solver, xt, gap = "-", "-", 0.0, (g.value - g.lower_bound) / max(g.value, 1)
            if not args.no_exact and g.status != "optimal":
                solver = "cpsat" if len(phase.transfers) <= args.cpsat_max else "lns"
                t0 = time.perf_counter()
                x = solve(phase, spec, solver, {"time_limit": args.exact_time})
                xt = time.perf_counter() - t0
                exact = str(x.value)
                gap = (x.value - x.lower_bound) / max(x.value, 1)
            print(f"{name:<17} {spec_name:<14} {phase.name:<24} {len(phase.transfers):>9} "
                  f"{sum(len(t.dst) for t in phase.transfers):>9} {g.lower_bound:>7} "
                  f"{g.value:>7} {gt:>6.1f}s {exact:>7} {solver:<6} {gap:>6.1%} {xt:>6.1f}s",
                  flush=True)


if __name__ == "__main__":
    main()
