"""How long a workload's layout problem takes to build, and what `ipuopt layout --time-limit T`
answers in that time.

    .venv/bin/python benchmarks/layout_build.py [--grain runs|box|BYTES] [--only NAME]
                                                [--limits 10,60] [--no-build] [--build-limit 600]

Each row runs the command line in a fresh process (as a user meets it): `ipuopt
layout-problem` (seconds, peak memory from /usr/bin/time, candidates enumerated and kept,
moves floored by their runs, probed, priced and kept as rows), then `ipuopt layout
--time-limit T` for each T (wall
seconds, status, cycles, and what the plan came from). Workloads: the minis on test64, SigLIP
on gc200, vitb-mlp on gc2.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = [("mini-mlp", "test64"), ("mini-attention", "test64"), ("siglip-mlp", "gc200"),
         ("siglip-attention", "gc200"), ("vitb-mlp", "gc2")]
CLI = [sys.executable, "-c", "from ipuopt.entry import main; main()"]


def _timed(args: list[str], limit: float | None = None
           ) -> tuple[subprocess.CompletedProcess | None, float, int]:
    """The command's result (None when it outran `limit` seconds and was stopped), wall
    seconds and peak resident memory (MB)."""
    with tempfile.NamedTemporaryFile("r") as stats:
        t0 = time.perf_counter()
        proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", stats.name, *CLI, *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=limit)
            r = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        except subprocess.TimeoutExpired:  # the command and /usr/bin/time's child: not left running
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            r = None
        took = time.perf_counter() - t0
        lines = stats.read().strip().splitlines()
        peak = int(lines[-1]) // 1024 if lines and lines[-1].isdigit() else 0
    return r, took, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grain", default=None, help="as `ipuopt layout-problem --grain` (default: runs)")
    ap.add_argument("--only", help="only workloads whose name contains this")
    ap.add_argument("--limits", default="10,60", help="time limits for `ipuopt layout`, comma-separated")
    ap.add_argument("--no-build", action="store_true", help="skip the full builds")
    ap.add_argument("--build-limit", type=float, default=600.0, help="seconds a build may take")
    args = ap.parse_args()
    grain = ["--grain", args.grain] if args.grain else []
    cases = [c for c in CASES if not args.only or args.only in c[0]]
    if not args.no_build:
        print(f"{'workload':<18} {'spec':<6} {'grain':<5} {'candidates':>10} {'kept':>6} {'floored':>7} "
              f"{'probed':>7} "
              f"{'priced':>6} {'rows':>6} {'seconds':>8} {'peak MB':>8}")
        with tempfile.TemporaryDirectory() as tmp:
            for name, spec in cases:
                r, took, peak = _timed(["layout-problem", name, "--spec", spec, *grain, "--out",
                                        f"{tmp}/{name}.yaml", "--json", "--quiet"], args.build_limit)
                if r is None:
                    print(f"{name:<18} {spec:<6} not built in {args.build_limit:g} s (stopped)", flush=True)
                    continue
                if r.returncode != 0:
                    print(f"{name:<18} {spec:<6} failed: {r.stderr.strip()[-200:]}")
                    continue
                doc = json.loads(r.stdout)
                print(f"{name:<18} {spec:<6} {doc['grain']:<5} {sum(doc['enumerated'].values()):>10} "
                      f"{sum(doc['kept'].values()):>6} {doc.get('pairs_floored', 0):>7} "
                      f"{doc['pairs_probed']:>7} "
                      f"{doc['pairs_priced']:>6} "
                      f"{doc['redistribution_rows']:>6} {took:>8.1f} {peak:>8}",
                      flush=True)
    print(f"\n{'workload':<18} {'limit':>5} {'wall':>6} {'exit':>4} {'status':<9} {'cycles':>8}  from")
    for name, spec in cases:
        for limit in (float(x) for x in args.limits.split(",")):
            r, took, _ = _timed(["layout", name, "--spec", spec, *grain, "--time-limit", f"{limit:g}",
                                 "--json", "--quiet"])
            doc = json.loads(r.stdout) if r.stdout.strip() else {}
            kept = doc.get("kept") or {}
            source = ("compiler's layouts" if doc.get("method") == "compiler" else
                      f"reference's {kept['partial']} an operator" if kept.get("partial") else "full problem")
            print(f"{name:<18} {limit:>5g} {took:>6.1f} {r.returncode:>4} {doc.get('status', '-'):<9} "
                  f"{doc.get('cycles') if doc.get('cycles') is not None else '-':>8}  {source}", flush=True)


if __name__ == "__main__":
    main()
