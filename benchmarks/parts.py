"""A phase that falls apart, part by part: each kind of part solved by CP-SAT alone, for the
certificate the parts give (the phase's horizon is its longest part's; a part's optimum
bounds the phase's from below).

    .venv/bin/python benchmarks/parts.py PHASE [--time-limit 60] [--workers 2] [--kind K]

Prints per kind of part (the same timings on other tiles): copies, transfers, the part's best
named bound, its greedy, CP-SAT's horizon, status and proven bound; then the phase: the
longest part's horizon (a schedule of the phase: every part of a kind takes that schedule)
and the largest proven bound (a lower bound on the phase's optimum). When the two meet, the
phase is solved exactly. `--kind K` solves only the K-th kind (by copies, as printed): its
proven bound still bounds the phase.
"""

from __future__ import annotations

import argparse
import time

from ipuopt.budget import Budget
from ipuopt.exchange.bounds import all_bounds, best_bound
from ipuopt.exchange.cpsat import solve_cpsat
from ipuopt.exchange.greedy import best_greedy
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.phase import load_phase
from ipuopt.exchange.split import kinds_of
from ipuopt.params import SolveParams


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("phase")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--kind", type=int, default=None, help="only this kind (its number as printed)")
    args = ap.parse_args()
    phase, spec = load_phase(args.phase)
    inst = Instance(phase, spec)
    kinds = kinds_of(inst)
    print(f"{phase.name}: {len(inst.timings)} transfers, {len(inst.parts)} parts of {len(kinds)} kinds")
    print(f"{'kind':>4} {'copies':>6} {'transfers':>9} {'bound':>7} {'greedy':>7} {'cpsat':>7} "
          f"{'status':<9} {'proven':>7} {'seconds':>7}")
    horizon = lower = 0
    for k, parts in enumerate(sorted(kinds, key=len, reverse=True)):
        if args.kind is not None and k != args.kind:
            continue
        sub = Instance.of(spec, [inst.timings[i] for i in parts[0]])
        sub.bound = best_bound(all_bounds(sub, None)).value
        greedy = best_greedy(sub)[:2]
        t0 = time.perf_counter()
        res = solve_cpsat(sub, greedy, SolveParams(workers=args.workers), Budget(args.time_limit))
        proven = max(res.bound or 0, sub.bound)
        horizon, lower = max(horizon, res.value), max(lower, proven)
        print(f"{k:>4} {len(parts):>6} {len(parts[0]):>9} {sub.bound:>7} {sub.horizon(greedy):>7} "
              f"{res.value:>7} {str(res.status):<9} {proven:>7} {time.perf_counter() - t0:>7.1f}")
    if args.kind is not None:
        print(f"phase: bound {lower} (kind {args.kind}'s proven bound)")
        return
    word = "solved exactly" if horizon == lower else f"gap {(horizon - lower) / horizon:.2%}"
    print(f"phase: horizon {horizon} (the longest part), bound {lower} (the largest proven): {word}")


if __name__ == "__main__":
    main()
