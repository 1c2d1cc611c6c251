"""Sweeps on a real dask.distributed cluster: a worker killed mid-sweep, every cell once,
a resumed rerun that solves nothing; the report and the diff."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import ROOT, run_cli

from ipuopt.exchange.phase import load_phase
from ipuopt.exchange.schedule import load_schedule
from ipuopt.exchange.validate import validate

SWEEP = """name: test
phases: [phases/]
specs: [gc200, gc200-nopairs]
solvers:
  - {solver: greedy}
  - {solver: cpsat, time_limit: 1.5, workers: 1}
"""


def _sweep_folder(tmp_path: Path) -> Path:
    (tmp_path / "phases").mkdir()
    for name in ("tiny", "small", "medium"):
        shutil.copy(ROOT / "models" / "examples" / f"{name}.yaml", tmp_path / "phases")
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP)
    return path


def _rows(out: Path) -> list[dict[str, str]]:
    with (out / "results.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_sweep_survives_a_lost_worker_and_resumes(tmp_path: Path) -> None:
    from distributed import Client, LocalCluster

    sweep, out = _sweep_folder(tmp_path), tmp_path / "out"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        pids = client.run(os.getpid)
        cli = [sys.executable, "-c", "from ipuopt.entry import main; main()"]
        proc = subprocess.Popen([*cli, "sweep", str(sweep), "--out", str(out), "--cluster",
                                 cluster.scheduler_address, "--json"],
                                cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while time.time() < deadline and (not (out / "results.csv").exists() or len(_rows(out)) < 2):
            time.sleep(0.2)
        assert len(_rows(out)) < 12, "the sweep ended before a worker could be lost"
        victim = sorted(pids)[0]
        os.kill(pids[victim], signal.SIGKILL)  # a worker lost mid-sweep
        stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-2000:]
    assert json.loads(stdout)["solved"] + json.loads(stdout)["already_done"] == 12
    rows = _rows(out)
    assert len(rows) == 12 and len({r["cell"] for r in rows}) == 12  # every cell, once
    assert {r["phase"] for r in rows} == {f"phases/{n}.yaml" for n in ("tiny", "small", "medium")}
    assert all(r["worker"].startswith("tcp://127.0.0.1:") for r in rows)
    for r in rows:
        phase, spec = load_phase(tmp_path / r["phase"], r["spec"])
        report = validate(phase, spec, load_schedule(out / r["schedule"]))
        assert report.ok and report.horizon == int(r["horizon"])
    again = run_cli("sweep", str(sweep), "--out", str(out), "--json", "--workers", "1")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["solved"] == 0 and len(_rows(out)) == 12


def test_a_cut_row_is_solved_again(tmp_path: Path) -> None:
    sweep, out = _sweep_folder(tmp_path), tmp_path / "out"
    sweep.write_text(SWEEP.replace("  - {solver: cpsat, time_limit: 1.5, workers: 1}\n", ""))
    assert run_cli("sweep", str(sweep), "--out", str(out), "--workers", "1").returncode == 0
    data = (out / "results.csv").read_bytes()
    (out / "results.csv").write_bytes(data[:-15])  # a crash in the middle of the last row
    again = json.loads(run_cli("sweep", str(sweep), "--out", str(out), "--workers", "1", "--json").stdout)
    assert again["solved"] == 1 and len(_rows(out)) == 6 and len({r["cell"] for r in _rows(out)}) == 6


def test_report_and_diff(tmp_path: Path) -> None:
    sweep, out = _sweep_folder(tmp_path), tmp_path / "out"
    sweep.write_text(SWEEP.replace("  - {solver: cpsat, time_limit: 1.5, workers: 1}\n", ""))
    assert run_cli("sweep", str(sweep), "--out", str(out), "--workers", "1").returncode == 0
    old = tmp_path / "old"
    shutil.copytree(out, old)
    rows = _rows(old)
    rows[0]["horizon"] = str(int(rows[0]["horizon"]) + 10)  # the old sweep was worse there
    with (old / "results.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    r = run_cli("sweep-report", str(out), "--against", str(old), "--json", "--png", str(tmp_path / "r.png"))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["cases"]) == 6 and doc["solvers"][0]["cells"] == 6
    assert all(c["bound"] <= c["best"] <= c["greedy"] for c in doc["cases"])
    assert (doc["against"]["better"], doc["against"]["worse"], doc["against"]["same"]) == (1, 0, 5)
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
    text = run_cli("sweep-report", str(out), "--against", str(old)).stdout
    assert "1 better, 0 worse, 5 same" in text and "(-" in text
    import ipuopt

    assert ipuopt.sweep_report(out, against=old)["against"]["better"] == 1
    assert ipuopt.sweep(sweep, out, workers=1)["solved"] == 0


def test_sweep_mistakes(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    sweep = _sweep_folder(tmp_path)
    cases = (("phases: [nothing/*.json]\n", "matches no phase file"),
             ("phases: [phases/]\nsolvers: [{solver: magic}]\n", "solvers[0].solver"),
             ("phases: [phases/]\nsolvers: [{solver: cpsat, time_limit: -1}]\n", "solvers[0]"),
             ("phases: [phases/]\nspecs: [nosuch]\n", "unknown spec"))
    for i, (text, _) in enumerate(cases):
        (tmp_path / f"bad{i}.yaml").write_text(text)
    with ThreadPoolExecutor(2) as pool:  # each refused before any work
        results = list(pool.map(lambda i: run_cli("sweep", str(tmp_path / f"bad{i}.yaml"), "--out",
                                                  str(tmp_path / "o")), range(len(cases))))
    for (text, expected), r in zip(cases, results, strict=True):
        assert r.returncode == 2 and expected in r.stderr, (text, r.stderr)
    r = run_cli("sweep", str(sweep), "--out", str(tmp_path / "o"), "--cluster", "tcp://127.0.0.1:9")
    assert r.returncode == 2 and "--cluster" in r.stderr
    r = run_cli("sweep-report", str(tmp_path))
    assert r.returncode == 2 and "not a sweep folder" in r.stderr
