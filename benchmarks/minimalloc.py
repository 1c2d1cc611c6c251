"""MiniMalloc "challenging" instances: place each within its capacity, validated.

    .venv/bin/python benchmarks/minimalloc.py [--time-limit 60] [--solver auto|search|cpsat] [--seed 0]
                                              [--data DIR]   (DIR holds the CSVs and an INDEX.tsv)
                                              [--minimalloc BINARY]  (MiniMalloc's own build, run
                                               beside ipuopt on each instance: the time ratio)

Prints instance, buffers, lower bound (peak live bytes), placed?, peak, time, the
solver whose placement was kept (`auto` races the exact search against CP-SAT), and the
best-fit greedy peaks for comparison. With `--minimalloc`, each instance is run by both
programs one after the other (interleaved, on the same machine), each timed from the
command's start to its exit, ipuopt's placement checked by ipuopt's validator and
MiniMalloc's by its own `--validate`; the ratio is ipuopt's time over MiniMalloc's, and the
geometric mean over the instances is printed.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from public_data import DEFAULT_ROOT, index_rows

from ipuopt.arena.greedy import best_fit
from ipuopt.arena.problem import load_csv, load_offsets
from ipuopt.arena.solve import place
from ipuopt.arena.validate import validate_placement
from ipuopt.errors import InputError


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--solver", default="auto")
    ap.add_argument("--seed", type=int, default=0, help="seeds the search's restarts (and CP-SAT)")
    ap.add_argument("--data", type=Path, default=DEFAULT_ROOT / "minimalloc",
                    help="folder with the instances and INDEX.tsv (default: %(default)s)")
    ap.add_argument("--minimalloc", type=Path, default=None,
                    help="MiniMalloc's binary, to time beside ipuopt on each instance")
    args = ap.parse_args()
    if args.minimalloc is not None:
        side_by_side(args)
        return
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


def _timed(cmd: list[str], limit: float) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=limit + 60)
    return time.perf_counter() - t0, done


def side_by_side(args: argparse.Namespace) -> None:
    """Both programs as a user runs them, per instance: `ipuopt place --csv` and MiniMalloc."""
    if not args.minimalloc.is_file():
        print(f"error: --minimalloc {args.minimalloc}: not found", file=sys.stderr)
        sys.exit(2)
    ipuopt = [str(Path(sys.executable).parent / "ipuopt")]
    rows = index_rows(args.data, "minimalloc")
    print(f"{'instance':<26} {'buffers':>7} {'ipuopt':>8} {'by':>7} {'minimalloc':>10} {'ratio':>6}",
          flush=True)
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            path = args.data / r["file"]
            cap = r["capacity"]
            out = Path(tmp) / f"{path.stem}.ipuopt.csv"  # one per instance: never a stale answer
            t_ip, ip = _timed(ipuopt + ["place", "--csv", str(path), "--capacity", cap, "--solver",
                                        args.solver, "--time-limit", str(args.time_limit), "--seed",
                                        str(args.seed), "--out", str(out), "--json", "--quiet"],
                              args.time_limit)
            arena = load_csv(path, int(cap))
            try:
                placed = out.is_file() and validate_placement(arena, load_offsets(out, arena)).ok
            except InputError:  # a placement without every buffer: not placed
                placed = False
            try:
                by = json.loads(ip.stdout).get("method", "-")
            except ValueError:  # no result printed
                by = "-"
            t_mm, mm = _timed([str(args.minimalloc), f"--capacity={cap}", f"--input={path}",
                               f"--output={Path(tmp) / 'mm.csv'}", f"--timeout={int(args.time_limit)}s",
                               "--validate"], args.time_limit)
            mm_ok = mm.returncode == 0 and "Validation PASS" in mm.stderr
            ratio = t_ip / t_mm if placed and mm_ok else math.nan
            ratios.append(ratio)
            print(f"{r['file']:<26} {len(arena.buffers):>7} "
                  f"{(f'{t_ip:.2f}s' if placed else 'failed'):>8} {by:>7} "
                  f"{(f'{t_mm:.2f}s' if mm_ok else 'failed'):>10} {ratio:>6.2f}", flush=True)
    good = [x for x in ratios if not math.isnan(x)]
    if good:
        gm = math.exp(sum(math.log(x) for x in good) / len(good))
        print(f"\ngeometric mean ratio {gm:.2f} over {len(good)} of {len(rows)} instances; "
              f"ratio <= 1 on {sum(x <= 1 for x in good)}")


if __name__ == "__main__":
    main()
