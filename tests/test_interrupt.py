"""Ctrl-C during a solve or a placement: stop within seconds, keep the best answer, say so."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import DATA, ROOT

from ipuopt.exchange.phase import load_phase
from ipuopt.exchange.schedule import load_schedule
from ipuopt.exchange.validate import validate


def _interrupt(args: list[str], after: float) -> tuple[subprocess.CompletedProcess, float]:
    """Run the CLI, send SIGINT after `after` seconds; the result and the seconds it took to stop."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", "from ipuopt.entry import main; main()", *args],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(after)
    assert proc.poll() is None, "the command ended before it could be interrupted"
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(args, proc.returncode, out, err), time.perf_counter() - t0


@pytest.mark.parametrize("solver", ["cpsat", "lns", "milp"])
def test_ctrl_c_during_a_solve_writes_the_best_schedule(solver: str, tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    r, took = _interrupt(["solve", "medium", "--solver", solver, "--time-limit", "300", "--out", str(out),
                          "--json"], after=4.0)
    assert r.returncode == 130 and took < 8, (r.returncode, took, r.stderr)
    assert "interrupted" in r.stderr and str(out) in r.stderr and "Traceback" not in r.stderr
    doc = json.loads(out.read_text())
    assert doc["status"] in ("feasible", "fallback") and doc["interrupted"] is True
    assert json.loads(r.stdout)["horizon"] == doc["horizon"]
    phase, spec = load_phase(ROOT / "models" / "examples" / "medium.yaml")
    assert validate(phase, spec, load_schedule(out)).ok


def test_ctrl_c_during_a_placement_keeps_the_best_placement(tmp_path: Path) -> None:
    out = tmp_path / "p.csv"
    # K is out of the search's reach: with room to spare the greedy places it, and the search
    # keeps looking for the live-bytes peak until interrupted
    src = DATA / "minimalloc" / "K.1048576.csv"
    r, took = _interrupt(["place", "--csv", str(src), "--capacity", "2000000", "--objective", "peak",
                          "--solver", "search", "--time-limit", "300", "--out", str(out)], after=3.0)
    assert r.returncode == 130 and took < 8, (r.returncode, took, r.stderr)
    assert "interrupted: the placement is the best found so far (status feasible)" in r.stderr
    rows = out.read_text().splitlines()
    assert rows[0] == "id,lower,upper,size,offset" and len(rows) == 455


def test_ctrl_c_before_any_placement_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "p.csv"
    # I with seed 1: the greedy does not fit and the race needs tens of seconds
    src = DATA / "minimalloc" / "I.1048576.csv"
    r, took = _interrupt(["place", "--csv", str(src), "--capacity", "1048576", "--seed", "1",
                          "--time-limit", "300", "--out", str(out)], after=3.0)
    assert r.returncode == 130 and took < 8, (r.returncode, took, r.stderr)
    assert "nothing found before the interrupt (status unknown)" in r.stderr and not out.exists()

