"""A normal (non-editable) install from the wheel, used from a folder far from the repository."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conftest import DATA, ROOT

_SKIP = shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "__pycache__", ".pytest_cache",
                               ".ruff_cache", ".hypothesis", "tests", "benchmarks", "*.so")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)


def test_wheel_installs_and_every_command_runs_elsewhere(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=_SKIP)
    dist = tmp_path / "dist"
    r = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(src), "-w", str(dist)],
             tmp_path)
    assert r.returncode == 0, r.stderr
    wheel = next(dist.glob("ipuopt-*.whl"))
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], tmp_path).returncode == 0
    # the dependencies come from this environment (installed from the same pyproject by the
    # set-up command): what is tested is the wheel itself, its data files and entry point
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    r = _run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", str(wheel)], tmp_path)
    assert r.returncode == 0, r.stderr
    shutil.rmtree(src)  # nothing of the source tree is left to lean on
    work = tmp_path / "elsewhere"
    work.mkdir()
    ipuopt = str(venv / "bin" / "ipuopt")
    shutil.copy(DATA / "openshop" / "ta4x4_1os.txt", work)

    def ok(*args: str) -> str:
        res = _run([ipuopt, *args], work)
        assert res.returncode == 0, (args, res.stderr)
        return res.stdout

    def wave(*commands: tuple[str, ...]) -> list[str]:
        """Commands that need nothing of each other, two at a time (the machine's cores)."""
        with ThreadPoolExecutor(2) as pool:
            return list(pool.map(lambda args: ok(*args), commands))

    first = wave(
        ("--version",), ("specs", "list"), ("specs", "show", "gc200-nopairs"),
        ("specs", "diff", "gc200", "gc200-nopairs"),
        ("solve", "tiny", "--solver", "cpsat", "--time-limit", "5", "--out", "s.json"),
        ("bounds", "medium"), ("compare", "tiny", "small", "--solvers", "greedy,milp", "--time-limit", "5"),
        ("gen", "mini-mlp", "--spec", "test64", "--out-dir", "gen", "--arena"),
        ("layouts", "mini-attention", "--spec", "test64", "--top", "2"),
        ("place", "mini-mlp", "--objective", "peak", "--json"), ("layout", "toy", "--json"),
        ("import", "openshop", "ta4x4_1os.txt", "--out", "os.yaml"),
        ("run", "mini-mlp", "--spec", "test64", "--out", "run.json"),
        ("place", "mini-mlp", "--out", "p.json"),
        ("layout-problem", "mini-mlp", "--spec", "test64", "--out", "lp.yaml"),
        ("layout", "mini-mlp", "--spec", "test64", "--json"))
    assert first[0].startswith("ipuopt ") and "gc200" in first[1]
    assert json.loads(first[9])["status"] == "optimal" and '"cycles": 236200' in first[10]
    assert '"optimal"' in first[15]
    valid, *_, from_file = wave(
        ("validate", "tiny", "s.json", "--json"), ("solve", "gen/mini-mlp-gemm1-input.json"),
        ("place", "gen/mini-mlp-arena.yaml", "--objective", "conflicts", "--time-limit", "5"),
        ("simulate", "tiny", "s.json", "--json"), ("render", "tiny", "s.json", "--out", "tiny.html"),
        ("render", "--program", "run.json", "--out", "run.png"),
        ("render-arena", "mini-mlp", "p.json", "--out", "arena.html"),
        ("solve", "os.yaml", "--profile", "cpsat-repro"), ("layout", "lp.yaml", "--json"))
    assert json.loads(valid)["ok"] and '"optimal"' in from_file
    assert "timeline" in (work / "tiny.html").read_text()
    r = _run([str(venv / "bin" / "python"), "-c", "import ipuopt; p, s = ipuopt.load_phase('tiny'); "
              "print(ipuopt.solve(p, s).value, ipuopt.__file__)"], work)
    horizon, where = r.stdout.split()
    assert r.returncode == 0 and horizon == "130", r.stderr
    assert Path(where).is_relative_to(venv), where  # the wheel's copy, not the checkout
    # the arena search's dive and the list greedy, compiled by the wheel's build
    r = _run([str(venv / "bin" / "python"), "-c", "from ipuopt.arena import search; from ipuopt.exchange "
              "import packed; print(search._compiled.__file__, packed._compiled.__file__)"], work)
    assert r.returncode == 0 and all(Path(f).is_relative_to(venv) for f in r.stdout.split()), r.stderr
