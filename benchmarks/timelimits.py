"""Do time limits hold? Wall-clock of whole commands (start-up, loading, bounds, search,
validation, writing) against their --time-limit, for every exchange solver on the bundled
examples and the largest generated phases, and for placement and layout selection.

    .venv/bin/python benchmarks/timelimits.py [--limits 10,60] [--solvers greedy,cpsat,...]
                                              [--phases DIR] [--grain B] [--quick] [--instances A,B]
                                              [--no-others]

Goal: wall <= 1.05 x limit + 2 s (start-up). The SigLIP MLP phases are generated into
--phases (default: a temporary folder) by `ipuopt gen siglip-mlp [--grain B]`. Each command runs alone
(one at a time) with its default workers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "from ipuopt.entry import main; main()"]
SOLVERS = ("greedy", "cpsat", "milp", "lns", "iterated", "colour", "auto")
EXAMPLES = ("tiny", "small", "medium")
LARGE = ("gemm1-input", "gemm2-redistribution", "gemm2-reduction")  # 3,100 multicasts to 29,400


def run(args: list[str]) -> tuple[float, dict]:
    t0 = time.perf_counter()
    r = subprocess.run([*CLI, *args, "--json", "--quiet"], capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    try:
        doc = json.loads(r.stdout)
    except json.JSONDecodeError:
        doc = {"status": f"exit {r.returncode}: {r.stderr.strip()[-80:]}"}
    return wall, doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limits", default="10,60", help="comma-separated seconds")
    ap.add_argument("--solvers", default=",".join(SOLVERS))
    ap.add_argument("--phases", type=Path, help="folder for the generated SigLIP MLP phases")
    ap.add_argument("--grain", help="gen's --grain for the SigLIP phases (default: contiguous runs)")
    ap.add_argument("--quick", action="store_true", help="the examples only")
    ap.add_argument("--instances", help="comma-separated: only these phases (e.g. gemm1-input,medium)")
    ap.add_argument("--no-others", action="store_true", help="exchange only: no place, no layout rows")
    args = ap.parse_args()
    limits = [float(x) for x in args.limits.split(",")]
    phases = [(name, name) for name in EXAMPLES]
    if not args.quick:
        folder = args.phases or Path(tempfile.mkdtemp(prefix="ipuopt-timelimits-"))
        if not (folder / f"siglip-mlp-{LARGE[0]}.json").exists():
            grain = ["--grain", args.grain] if args.grain else []
            subprocess.run([*CLI, "gen", "siglip-mlp", *grain, "--out-dir", str(folder), "--quiet"],
                           check=True, cwd=ROOT, capture_output=True)
        phases += [(name, str(folder / f"siglip-mlp-{name}.json")) for name in LARGE]
    if args.instances:
        phases = [p for p in phases if p[0] in args.instances.split(",")]
    rows = []
    for limit in limits:
        for name, ref in phases:
            for solver in args.solvers.split(","):
                wall, doc = run(["solve", ref, "--solver", solver, "--time-limit", f"{limit:g}"])
                rows.append((name, len(doc.get("transfers", [])), solver, limit, wall, doc.get("status"),
                             doc.get("horizon", "")))
                print_row(rows[-1], flush=True)
        if args.no_others:
            continue
        for arena, extra in (("mini-mlp", []), (str(ROOT / "tests/data/minimalloc/K.1048576.csv"),
                                                ["--capacity", "1048576", "--objective", "peak"])):
            for solver in ("auto", "search", "cpsat", "milp"):
                src = ["--csv", arena] if arena.endswith(".csv") else [arena]
                wall, doc = run(["place", *src, *extra, "--solver", solver, "--time-limit", f"{limit:g}"])
                rows.append((Path(arena).stem, "", f"place {solver}", limit, wall, doc.get("status"),
                             doc.get("value", "")))
                print_row(rows[-1], flush=True)
        for workload in ("mini-mlp", "siglip-mlp"):
            wall, doc = run(["layout", workload, "--time-limit", f"{limit:g}"])
            rows.append((workload, "", "layout milp", limit, wall, doc.get("status"), doc.get("cycles", "")))
            print_row(rows[-1], flush=True)
    bad = [r for r in rows if r[4] > 1.05 * r[3] + 2]
    print(f"\n{len(rows) - len(bad)} of {len(rows)} within 1.05 x limit + 2 s; worst wall/limit "
          f"{max(r[4] / r[3] for r in rows):.2f}")
    for r in bad:
        print("over:", *r)


HEADER = False


def print_row(row: tuple, flush: bool = False) -> None:
    global HEADER
    if not HEADER:
        print(f"| {'instance':<22} | {'transfers':>9} | {'solver':<14} | {'limit':>5} | {'wall':>7} | "
              f"{'wall/limit':>10} | {'within':<6} | {'status':<9} | {'objective':>9} |")
        print("|---|---:|---|---:|---:|---:|---|---|---:|")
        HEADER = True
    name, n, solver, limit, wall, status, value = row
    ok = "yes" if wall <= 1.05 * limit + 2 else "**no**"
    print(f"| {name:<22} | {n!s:>9} | {solver:<14} | {limit:>5g} | {wall:>6.1f}s | {wall / limit:>10.2f} | "
          f"{ok:<6} | {status!s:<9} | {value!s:>9} |", flush=flush)


if __name__ == "__main__":
    main()
