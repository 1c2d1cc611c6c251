"""Ctrl-C at random moments of every stage of `--solver auto`, on a large phase: does the
command always end within 5 s with the best schedule written whole?

    .venv/bin/python benchmarks/interrupts.py [--phase FILE] [--transfers 60000] [--repeat 20]
                                              [--stages time,coarse,...] [--spread 3] [--seed 0]
                                              [--time-limit 900]

By default the phase is the gc200 random multicast phase of `--transfers` transfers (and
dependencies); `--phase` takes any phase file (a fragment-level phase from `ipuopt gen` is
the one with every stage, `coarse` included). For each stage of auto's pipeline and each
repetition: `ipuopt solve PHASE --solver auto --time-limit T --out S.json` runs until its
progress line says the stage began, then waits a random 0..`--spread` s and sends SIGINT.
A row per stage: interrupts sent, those that landed in the stage (the line still the last
one), exits with 130 within 5 s, files written whole with "interrupted": true and accepted
by the validator, and the slowest exit.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "from ipuopt.entry import main; main()"]
STAGES = ("split", "time", "coarse", "colour", "periodic", "justify", "iterated", "lns")


def once(phase: Path, stage: str, spread: float, rng: random.Random, out: Path, limit: float) -> dict | None:
    """One interrupted run; None when the stage never came (the pipeline skipped it)."""
    out.unlink(missing_ok=True)
    args = ["solve", str(phase), "--solver", "auto", "--time-limit", str(limit), "--out", str(out)]
    # SIGINT as a terminal gives it: a shell starts a background job with SIGINT ignored, and
    # Python then keeps it ignored (this script run with `&` would measure nothing)
    proc = subprocess.Popen([*CLI, *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT),
                                                       "IPUOPT_PROGRESS_AFTER": "0"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: list[str] = []
    began, skipped = threading.Event(), threading.Event()
    later = STAGES[STAGES.index(stage) + 1:] if stage in STAGES else ()

    def read() -> None:
        for line in proc.stderr:  # type: ignore[union-attr]
            lines.append(line)
            if f"stage auto: {stage}" in line:
                began.set()
            elif not began.is_set() and any(f"stage auto: {x}" in line for x in later):
                skipped.set()  # the pipeline went past it without running it

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    while not began.wait(0.5):
        if proc.poll() is not None or skipped.is_set():
            proc.kill()
            proc.wait()
            return None
    time.sleep(rng.uniform(0, spread))
    last = next((x for x in reversed(lines) if "stage " in x), "").split("stage ", 1)[-1]
    # auto's line names the stage ("auto: iterated"), the stage's own lines begin with its name
    inside = any(re.match(rf"{re.escape(name)}(\W|$)", last) for name in (f"auto: {stage}", stage))
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
    took = time.perf_counter() - t0
    reader.join(5)
    whole = False
    if out.exists():
        check = subprocess.run([*CLI, "validate", str(phase), str(out)], cwd=ROOT, capture_output=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
        whole = json.loads(out.read_text()).get("interrupted") is True and check.returncode == 0
    ok = proc.returncode == 130 and took < 5
    if not ok:  # what it was doing: the lines after the signal
        print("".join(f"    | {x}" for x in lines[-6:]), file=sys.stderr, end="", flush=True)
    return {"inside": inside, "ok": ok, "whole": whole, "took": took}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phase", type=Path, help="a phase file (default: the random phase)")
    ap.add_argument("--transfers", type=int, default=60000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--spread", type=float, default=3.0, help="seconds: the signal's random delay at most")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=900.0,
                    help="the solve's limit: a shorter one reaches the later stages sooner")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        phase = args.phase
        if phase is None:
            from ipuopt.exchange.random_phase import random_phase
            from ipuopt.io import write_document
            from ipuopt.spec import load_spec

            phase = Path(tmp) / "random.json"
            write_document(phase, random_phase(load_spec("gc200"), args.transfers, seed=args.seed,
                                               name=f"random-{args.transfers}").to_dict())
        print(f"{'stage':<9} {'sent':>4} {'inside':>6} {'exit 130 <5s':>12} {'whole':>5} {'slowest s':>9}")
        for stage in args.stages.split(","):
            rows = []
            for _ in range(args.repeat):
                row = once(phase, stage, args.spread, rng, Path(tmp) / "s.json", args.time_limit)
                if row is None:
                    break
                rows.append(row)
                print(f"  {stage} #{len(rows)}: inside {row['inside']}, exit ok {row['ok']}, "
                      f"whole {row['whole']}, {row['took']:.2f} s", file=sys.stderr, flush=True)
            if not rows:
                print(f"{stage:<9} auto's pipeline does not run it on this phase")
                continue
            print(f"{stage:<9} {len(rows):>4} {sum(r['inside'] for r in rows):>6} "
                  f"{sum(r['ok'] for r in rows):>12} {sum(r['whole'] for r in rows):>5} "
                  f"{max(r['took'] for r in rows):>9.2f}", flush=True)


if __name__ == "__main__":
    main()
