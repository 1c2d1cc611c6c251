"""Fragment-level phases at full size: how long the greedy and each bound take, and what
`ipuopt solve --solver auto --time-limit T` reaches, in what wall-clock and memory.

    .venv/bin/python benchmarks/fragment_gaps.py [--workload siglip-mlp] [--grain 256]
                                                 [--time-limit 300] [--only A,B] [--dir D]

The workload's phases (default layouts, gc200) are written by `ipuopt gen --grain` into
--dir (kept: rerunning skips generation). Per phase, in this process: the first greedy rule
and each named bound, timed. Then, as a user would run it, one command per phase:
`ipuopt solve PHASE --solver auto --time-limit T --workers 1 --seed 0 --json`, its wall-clock
from start-up to exit and its peak resident memory (the child's own, from wait4).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ipuopt.exchange import bounds
from ipuopt.exchange.greedy import LARGE_RULES, greedy_schedule
from ipuopt.exchange.instance import horizon_of
from ipuopt.exchange.phase import load_phase
from ipuopt.exchange.timing import phase_timings

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "from ipuopt.entry import main; main()"]


def _child(args: list[str]) -> tuple[float, int, dict]:
    """Wall seconds, peak RSS (MiB) and JSON output of one CLI command."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([*CLI, *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    try:
        doc = json.loads(out)
    except json.JSONDecodeError:
        doc = {"status": f"exit {os.waitstatus_to_exitcode(status)}"}
    return wall, usage.ru_maxrss // 1024, doc


def _bound_times(phase, spec, timings) -> list[str]:
    """Seconds each named bound takes, in `ipuopt bounds`' order."""
    out = []
    for name, run in (("endpoint", lambda: bounds.endpoint_bound(timings, spec)),
                      ("pair", lambda: bounds.pair_bound(timings, spec)),
                      ("element", lambda: bounds.element_bound(timings, spec)),
                      ("dependency", lambda: bounds.dependency_bound(timings, phase)),
                      ("group", lambda: bounds.group_bound(timings, spec)),
                      ("clique", lambda: bounds.clique_bound(timings, spec))):
        t0 = time.perf_counter()
        run()
        out.append(f"{name} {time.perf_counter() - t0:.0f}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="siglip-mlp")
    ap.add_argument("--spec", default="gc200")
    ap.add_argument("--grain", default="256")
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--only", help="comma-separated phase names")
    ap.add_argument("--dir", type=Path, default=ROOT / "benchmarks" / "out" / "fragments")
    args = ap.parse_args()
    folder = args.dir / f"{args.workload}-{args.spec}-{args.grain}"
    if not folder.exists():
        args.dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([*CLI, "gen", args.workload, "--spec", args.spec, "--grain", args.grain,
                        "--out-dir", str(folder), "--quiet"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
    files = sorted(folder.glob("*.json"))
    if args.only:
        files = [f for f in files if any(f.stem.endswith(n) for n in args.only.split(","))]
    print(f"| phase | transfers | receives | greedy (1 rule) | bounds: s each | bound "
          f"| auto {args.time_limit:g} s | wall | peak MiB | best / bound | bound / best by |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|")
    for f in files:
        phase, spec = load_phase(f)
        timings = phase_timings(phase, spec)
        t0 = time.perf_counter()
        greedy = horizon_of(timings, *greedy_schedule(phase, spec, LARGE_RULES[0], timings))
        g_time = time.perf_counter() - t0
        took = _bound_times(phase, spec, timings)
        wall, peak, doc = _child(["solve", str(f), "--solver", "auto", "--time-limit",
                                  f"{args.time_limit:g}", "--workers", "1", "--seed", "0", "--json",
                                  "--quiet"])
        best, bound = doc.get("horizon"), doc.get("lower_bound")
        named = max(doc.get("bounds", [{"name": "?", "value": 0}]), key=lambda b: b["value"])["name"]
        ratio = f"{best / bound:.3f}" if best and bound else "-"
        print(f"| {phase.name} | {len(timings):,} | {sum(len(tm.transfer.dst) for tm in timings):,} | "
              f"{greedy:,} ({g_time:.0f} s) | {', '.join(took)} | {bound or '-'} | "
              f"{best or doc.get('status')} | {wall:.0f} s | {peak:,} | {ratio} | "
              f"{named} / {doc.get('method', '-')} |", flush=True)


if __name__ == "__main__":
    main()
