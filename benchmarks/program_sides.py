"""Which side of a program's gap is weak: a run written by `ipuopt optimize --out RUN.json` (or
`ipuopt run`) split into what its schedules, its placement and its plan leave on the table.

    .venv/bin/python benchmarks/program_sides.py RUN.json [--grain G]

Per phase: the horizon, the best bound under the run's placement (as the run reports it), and
the best bound under any placement: every named bound on the phase with its memory elements
dropped (widths kept: a placement moves buffers by multiples of the paired alignment), as the
program bound prices a plan. The program's figures are the replay's total with each horizon
replaced by the bound, so the gap splits in three:

- schedule: program - bound under this placement (a better schedule could take at most that);
- placement: bound under this placement - bound under any placement (element clashes: a
  placement that avoids them may win up to that, or the element bounds are weak);
- plan: bound under any placement - the program bound over every plan (another plan may win
  up to that, or the program bound's prices are weak).

`--grain` must be the one the run was made with (optimize's default: contiguous runs).
"""

from __future__ import annotations

import argparse
import json
import time

from ipuopt.exchange.bounds import all_bounds, best_bound
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.timing import phase_timings
from ipuopt.spec import load_spec
from ipuopt.workloads.fragments import parse_grain
from ipuopt.workloads.phases import generate
from ipuopt.workloads.plans import plan_layouts
from ipuopt.workloads.workload import load_workload


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--grain", default=None)
    args = ap.parse_args()
    with open(args.run) as f:
        doc = json.load(f)
    wl, spec = load_workload(doc["workload"]), load_spec(doc["spec"])
    gen = generate(wl, spec, plan_layouts(doc, wl, spec), parse_grain(args.grain, spec))
    phases = {gp.phase.name: gp.phase for gp in gen.phases}
    print(f"{'phase':<26} {'transfers':>9} {'horizon':>8} {'placed':>8} {'any':>8} {'by':<10} {'seconds':>7}")
    here = anywhere = doc["total_cycles"]
    for b in doc["boundaries"]:
        phase = phases[b["phase"]]
        if len(phase.transfers) != b["transfers"]:
            raise SystemExit(f"{b['phase']}: {len(phase.transfers)} transfers here, {b['transfers']} in the "
                             "run: give the run's --grain")
        t0 = time.perf_counter()
        free = best_bound(all_bounds(Instance(phase, spec, phase_timings(phase, spec, elements=False)), None))
        placed = max(b["lower_bound"], free.value)  # both hold under the run's placement
        here -= b["horizon"] - placed
        anywhere -= b["horizon"] - free.value
        print(f"{b['phase']:<26} {b['transfers']:>9} {b['horizon']:>8} {placed:>8} {free.value:>8} "
              f"{free.name:<10} {time.perf_counter() - t0:>7.1f}")
    every = doc.get("program_bound")  # optimize's: a number here, the whole bound in `optimize`
    program = doc["total_cycles"]
    print(f"\nprogram {program}; bound under this placement {here}; under any placement {anywhere}; "
          f"over every plan {every if every is not None else '-'}")
    sides = [("schedule", program - here), ("placement", here - anywhere)]
    if every is not None:
        sides.append(("plan", anywhere - every))
    for name, cycles in sides:
        print(f"  {name:<10} {cycles:>8} cycles ({cycles / program:.1%} of the program)")


if __name__ == "__main__":
    main()
