"""What the reference compiler's scheduling habits cost: the greedy's horizon on generated
phases with each habit (`ipuopt solve PHASE --param HABIT=true`) against without.

    .venv/bin/python benchmarks/habits.py [--workload siglip-mlp] [--spec gc200] [--grain 256]
                                          [--phases gemm1-reduction,gemm2-reduction]

Each cell is what `ipuopt solve PHASE --param ...` (the greedy) returns for that phase; the
bound is the endpoint bound. The reference measured: dropping release-after-receives cut a
63,720-transfer reduction from 12,527 to 7,991 cycles (its cost: +57%); pairing all 4,028
eligible transfers with both partner lanes reserved gave 57,741 cycles against 33,081 once
only the transmit lane was borrowed (+75%).
"""

from __future__ import annotations

import argparse
import time

from ipuopt.exchange.bounds import endpoint_bound
from ipuopt.exchange.greedy import best_greedy
from ipuopt.exchange.instance import Instance, horizon_of
from ipuopt.exchange.timing import PAIRED, phase_timings
from ipuopt.spec import load_spec
from ipuopt.workloads.fragments import parse_grain
from ipuopt.workloads.phases import generate
from ipuopt.workloads.workload import load_workload

CASES = {
    "default": frozenset(),
    "release_after_receives": frozenset({"release_after_receives"}),
    "pair_whenever_possible": frozenset({"pair_whenever_possible"}),
    "pair_whenever_possible+paired_reserves_partner": frozenset({"pair_whenever_possible",
                                                                  "paired_reserves_partner"}),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="siglip-mlp")
    ap.add_argument("--spec", default="gc200")
    ap.add_argument("--grain", default="256")
    ap.add_argument("--phases", default="gemm1-reduction,gemm2-reduction")
    args = ap.parse_args()
    spec = load_spec(args.spec)
    gen = generate(load_workload(args.workload), spec, grain=parse_grain(args.grain, spec))
    wanted = args.phases.split(",")
    print(f"| phase | transfers | paired-eligible | bound | {' | '.join(CASES)} |")
    print("|---|---:|---:|---:|" + "---:|" * len(CASES))
    for gp in gen.phases:
        if gp.phase.name not in wanted:
            continue
        timings = phase_timings(gp.phase, spec)
        cells = []
        base = None
        for habits in CASES.values():
            t0 = time.perf_counter()
            starts, widths, _ = best_greedy(Instance(gp.phase, spec, timings), habits=habits)
            h = horizon_of(timings, starts, widths)
            base = base or h
            cells.append(f"{h:,} ({h / base - 1:+.0%}, {time.perf_counter() - t0:.0f} s)")
        eligible = sum(PAIRED in tm.widths for tm in timings)
        print(f"| {gp.phase.name} | {len(timings):,} | {eligible:,} | "
              f"{endpoint_bound(timings, spec).value:,} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
