"""`ipuopt optimize`: the whole program chosen with real schedules, never worse than the
compiler's way, with its bound. (Every schedule it replays passed the validator: `solve`
refuses to return one that does not.)"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli


def test_optimize_beats_or_matches_both_baselines_with_its_bound(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    r = run_cli("optimize", "mini-mlp", "--spec", "test64", "--grain", "box", "--k", "2",
                "--time-limit", "20", "--out", str(out), "--json", "--quiet")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc == json.loads(out.read_text())
    o = doc["optimize"]
    assert all(doc["total_cycles"] <= cycles for cycles in o["baselines"].values())
    assert len(o["finalists"]) == 3 and o["finalists"][1]["name"] == "beam plan" and len(o["baselines"]) == 2
    assert min(f["greedy_cycles"] for f in o["finalists"]) >= doc["total_cycles"]
    assert doc["lower_bound"] <= doc["total_cycles"]
    # over every plan: at most the chosen plan's own (placement-free parts of its bounds)
    assert 0 < doc["program_bound"] <= doc["lower_bound"]
    assert o["program_bound"]["value"] == doc["program_bound"]
    assert o["gap_by_phase"].keys() == {b["phase"] for b in doc["boundaries"]}
    assert run_cli("render", "--program", str(out), "--out", str(tmp_path / "run.png")).returncode == 0
    assert run_cli("optimize", "mini-mlp", "--k", "0").returncode == 2


def test_a_time_limit_too_short_returns_the_compilers_program(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    r = run_cli("optimize", "mini-mlp", "--spec", "test64", "--grain", "box", "--time-limit", "0.5",
                "--out", str(out), "--quiet")
    assert r.returncode == 2
    assert [line for line in r.stderr.splitlines() if line.startswith("error")] == [
        next(line for line in r.stderr.splitlines() if "too short" in line)]
    doc = json.loads(out.read_text())
    assert doc["optimize"]["fallback"] and doc["optimize"]["finalists"] == []
    assert doc["layouts"] == {"gemm1": "2x16x2/1x2/interleaved", "gemm2": "2x4x8/2x4/interleaved"}
    baselines = doc["optimize"]["baselines"]
    assert doc["total_cycles"] == baselines["compiler (default layouts, first-fit, greedy)"]


def test_bad_workloads_and_specs_are_one_line_before_any_work() -> None:
    for args, says in ((["nosuch"], "nosuch"), (["mini-mlp", "--spec", "nosuch"], "--spec"),
                       (["mini-mlp", "--time-limit", "-1"], "--time-limit"),
                       (["mini-mlp", "--grain", "3"], "--grain")):
        r = run_cli("optimize", *args, "--quiet")
        assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
