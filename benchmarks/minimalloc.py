"""MiniMalloc "challenging" instances: place each within its capacity, validated.

    .venv/bin/python benchmarks/minimalloc.py [--time-limit 60] [--solver auto|search|cpsat] [--seed 0]
                                              [--data DIR]   (DIR holds the CSVs and an INDEX.tsv)

Prints instance, buffers, lower bound (peak live bytes), placed?, peak, time, the
solver whose placement was kept (`auto` races the exact search against CP-SAT), and the
best-fit greedy peaks for comparison.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from public_data import DEFAULT_ROOT, index_rows

from ipuopt.arena.greedy import best_fit
from ipuopt.arena.problem import load_csv
from ipuopt.arena.solve import place
from ipuopt.arena.validate import validate_placement


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--solver", default="auto")
    ap.add_argument("--seed", type=int, default=0, help="seeds the search's restarts (and CP-SAT)")
    ap.add_argument("--data", type=Path, default=DEFAULT_ROOT / "minimalloc",
                    help="folder with the instances and INDEX.tsv (default: %(default)s)")
    args = ap.parse_args()
    rows = index_rows(args.data, "minimalloc")
    print(f"{'instance':<26} {'buffers':>7} {'bound':>8} {'placed':>6} {'peak':>8} {'time':>7} "
          f"{'by':>7} {'greedy size':>11} {'greedy area':>11}", flush=True)
    placed = 0
    for r in rows:
        cap = int(r["capacity"])
        arena = load_csv(args.data / r["file"], cap)
        t0 = time.perf_counter()
        res = place(arena, "fit", args.solver, {"time_limit": args.time_limit, "seed": args.seed})
        dt = time.perf_counter() - t0
        ok = res.solution.offsets is not None and validate_placement(arena, res.solution.offsets).ok
        placed += ok
        greedy = [validate_placement(arena, best_fit(arena, o)).peak for o in ("size", "area")]
        print(f"{r['file']:<26} {len(arena.buffers):>7} {arena.peak_live()[0]:>8} "
              f"{'yes' if ok else 'no':>6} {res.solution.peak if ok else '-':>8} {dt:>6.1f}s "
              f"{res.solver if ok else '-':>7} {greedy[0]:>11} {greedy[1]:>11}", flush=True)
    print(f"\nplaced {placed}/{len(rows)} within capacity, {args.time_limit:g}s each")


if __name__ == "__main__":
    main()
