"""The product as a user meets it: help, mistakes, bundled names, progress, the README's Python."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from conftest import DATA, ROOT, run_cli

from ipuopt.cli import HOME, loaded


def _command_paths(cmd: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    for name, sub in getattr(cmd, "commands", {}).items():  # a group: walk its commands
        paths += _command_paths(sub, (*prefix, name))
    return paths


COMMANDS = _command_paths(typer.main.get_command(loaded()))


def test_every_command_is_walked() -> None:
    names = {" ".join(p) for p in COMMANDS}
    assert {"solve", "bounds", "validate", "compare", "gen", "layouts", "place", "specs list", "specs show",
            "specs diff", "import openshop", "simulate", "run", "render", "render-arena", "layout",
            "layout-problem"} <= names


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "ipuopt")
def test_help_of_every_command(path: tuple[str, ...]) -> None:
    r = run_cli(*path, "--help")
    assert r.returncode == 0, r.stderr
    assert "Usage:" in r.stdout and "Traceback" not in r.stderr + r.stdout
    assert "<bool>" not in r.stdout  # flags take no value


def test_each_command_loads_its_own_module_alone() -> None:
    """`HOME` names the module of every command (a command left out would still work, with every
    module loaded), and `ipuopt place` does not import the exchange commands and their bounds."""
    click_app = typer.main.get_command(loaded())
    homes = {name: cmd.callback.__module__ if cmd.callback else None
             for name, cmd in click_app.commands.items()}
    for name, module in homes.items():
        sub = getattr(click_app.commands[name], "commands", {})  # a group: its commands' module
        module = module or next(iter({c.callback.__module__ for c in sub.values()}))
        assert module == f"ipuopt.cli.{HOME[name]}", name
    assert set(HOME) == set(homes)
    code = ("import sys; from ipuopt.cli import loaded; loaded(['place', '--csv', 'x']); "
            "print(sorted(m for m in sys.modules\n"
            "             if m.startswith('ipuopt.cli.') or m == 'ipuopt.exchange.bounds'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["['ipuopt.cli.app',", "'ipuopt.cli.arena',", "'ipuopt.cli.options',",
                                  "'ipuopt.cli.terminal']"], out.stdout


def test_version() -> None:
    r = run_cli("--version")
    assert r.returncode == 0 and re.fullmatch(r"ipuopt \d+\.\d+\.\d+\n", r.stdout)


def _mistakes(tmp: Path) -> list[tuple[list[str], str]]:
    """(arguments, text the one error line must contain)."""
    (tmp / "bad.yaml").write_text("transfers: [1,\n")
    (tmp / "empty.yaml").write_text("")
    (tmp / "binary.yaml").write_bytes(b"\x00\xff\xfe\x80" * 64)
    (tmp / "nospec.yaml").write_text("spec: nosuch\ntransfers: []\n")
    (tmp / "afile").write_text("x")
    (tmp / "empty_dir").mkdir()
    (tmp / "ext.yaml").write_text("name: x\nextends: nosuch\n")
    tiny = str(ROOT / "models" / "examples" / "tiny.yaml")
    csv = str(DATA / "minimalloc" / "input.12.csv")
    return [
        (["solve", "tiny", "--time-limit", "-5"], "--time-limit"),
        (["solve", "tiny", "--workers", "0"], "--workers"),
        (["solve", "tiny", "--workers", "-3"], "--workers"),
        (["solve", "tiny", "--seed", "-1"], "--seed"),
        (["solve", "tiny", "--solver", "cpsat", "--seed", "99999999999999999999"], "--seed"),
        (["solve", "tiny", "--solver", "cpsat", "--workers", "99999999999999999999"], "--workers"),
        (["optimize", "mini-mlp", "--cluster", "notaurl"], "--cluster"),
        (["layout", "toy", "--solver", "beam", "--k", "3"], "the beam makes one plan"),
        (["solve", "tiny", "--solver", "cpsat", "--param", "num_workers=abc"], "CP-SAT's num_workers is int"),
        (["run", str(ROOT / "models" / "mini-mlp.yaml"), "--spec", "test64", "--out",
          str(ROOT / "models" / "mini-mlp.yaml")], "input file"),
        (["gen", "mini-mlp", "--spec", "test64", "--layout", "gemm1=2x16x2", "--plan", tiny],
         "--layout or --plan"),
        (["gen", "mini-mlp", "--spec", "test64", "--layout", "gemm1=2x16x2", "--layout", "gemm1=2x8x2"],
         "gemm1 is given twice"),
        (["solve", "tiny", "--export", str(tmp / "t.pb"), "--out", str(tmp / "t.json")], "--export"),
        (["solve", "tiny", "--solver", "milp", "--export", str(tmp / "t.pb")], "milp writes .mps, .lp"),
        (["place", "mini-mlp", "--solver", "cpsat", "--export", str(tmp / "a.lp")], "--solver cpsat writes"),
        (["optimize", "mini-mlp", "--cluster", "tcp://localhost"], "--cluster"),
        (["sweep", str(tmp / "afile"), "--out", str(tmp / "sw"), "--cluster", "tcp://localhost"],
         "--cluster"),
        (["solve", "tiny", "--solver", "simplex"], "--solver"),
        (["solve", "tiny", "--profile", "nosuch"], "--profile"),
        (["solve", "tiny", "--param", "novalue"], "--param"),
        (["solve", "tiny", "--out", str(tmp)], "is a directory"),
        (["solve", "tiny", "--out", str(tmp / "missing" / "s.json")], "does not exist"),
        (["solve", tiny, "--out", tiny], "input file"),
        (["solve", str(tmp / "bad.yaml")], "line 2"),
        (["solve", str(tmp / "empty.yaml")], "empty.yaml"),
        (["solve", str(tmp / "binary.yaml")], "binary.yaml"),
        (["solve", str(tmp / "nospec.yaml")], "nospec.yaml: spec: unknown spec"),
        (["solve", "tiny", "--spec", "nosuch"], "--spec: unknown spec"),
        (["solve", "nosuch-example"], "bundled examples: medium, small, tile368, tile368-shifted, tiny"),
        (["solve", "tiny", "--spec", str(tmp / "ext.yaml")], "extends: unknown spec"),
        (["bounds", str(tmp / "afile")], "afile"),
        (["validate", "tiny", str(tmp / "nosuch.json")], "file not found"),
        (["run", "mini-mlp", "--spec", "test64", "--workers", "0"], "--workers"),
        (["run", "mini-mlp", "--spec", "test64", "--param", "novalue"], "--param"),
        (["run", "mini-mlp", "--spec", "test64", "--param", "passes=2"], "--param passes"),
        (["compare", str(tmp / "empty_dir")], "no phase file"),
        (["compare", "tiny", "--solvers", ""], "--solvers"),
        (["compare", "tiny", "--solvers", "greedy,nope"], "--solvers"),
        (["compare", "tiny", "--time-limit", "-1"], "--time-limit"),
        (["gen", "mini-mlp", "--out-dir", str(tmp / "afile")], "--out-dir"),
        (["gen", "mini-mlp", "--arena"], "--arena"),
        (["gen", "mini-mlp", "--out-dir", str(tmp / "missing" / "g")], "does not exist"),
        (["place", "mini-mlp", "--reschedule", "--objective", "peak"], "--objective: not read with"),
        (["place", "mini-mlp", "--plan", str(tmp / "p.json")], "--plan: read only with --reschedule"),
        (["gen", "nosuch-model"], "bundled workloads"),
        (["gen", "mini-mlp", "--spec", "test64", "--layout", "gemm1=oops"], "--layout"),
        (["gen", "mini-mlp", "--spec", "test64", "--layout", "nope=1x1x1"], "--layout"),
        (["layouts", "mini-mlp", "--top", "-1"], "--top"),
        (["layouts", "mini-mlp", "--min-utilisation", "2"], "--min-utilisation"),
        (["layouts", "mini-mlp", "--op", "nope"], "--op"),
        (["layout-problem", "mini-mlp", "--out", str(tmp / "p.yaml"), "--min-utilisation", "0"],
         "--min-utilisation"),
        (["layout", "mini-mlp", "--spec", "test64", "--rerank", "--profile", "nope"], "nope"),
        (["place", "mini-mlp", "--objective", "speed"], "--objective"),
        (["place", "mini-mlp", "--solver", "magic"], "--solver"),
        (["place", "mini-mlp", "--time-limit", "-2"], "--time-limit"),
        (["place", "mini-mlp", "--workers", "0"], "--workers"),
        (["place", "--csv", csv], "--capacity"),
        (["place", "--csv", csv, "--capacity", "0"], "--capacity"),
        (["place"], "ARENA/--csv"),
        (["place", "mini-mlp", "--out", str(tmp)], "is a directory"),
        (["place", "nosuch-arena"], "bundled arenas: mini-mlp"),
        (["specs", "show", "nosuch"], "unknown spec"),
        (["specs", "diff", "gc200", "nosuch"], "unknown spec"),
        (["import", "openshop", str(tmp / "nosuch.txt"), "--out", str(tmp / "p.yaml")], "nosuch.txt"),
    ]


def test_mistakes_exit_2_with_one_clear_line(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    cases = list(_mistakes(tmp_path))
    with ThreadPoolExecutor(2) as pool:  # independent commands, each refused before any work
        results = list(pool.map(lambda case: run_cli(*case[0]), cases))
    failures = []
    for (args, expected), r in zip(cases, results, strict=True):
        lines = r.stderr.strip().splitlines()
        ok = (r.returncode == 2 and "Traceback" not in r.stderr and len(lines) >= 1
              and all(line.startswith("error: ") for line in lines) and expected in r.stderr)
        if not ok:
            failures.append((args, r.returncode, r.stderr[-300:]))
    assert not failures, failures


def test_out_is_checked_before_the_input_is_even_read(tmp_path: Path) -> None:
    """A bad --out is reported before any work: here the phase is broken too, and the
    error names --out, so nothing was loaded or solved."""
    (tmp_path / "broken.yaml").write_text("spec: test64\ntransfers: [{id: a}]\n")
    r = run_cli("solve", str(tmp_path / "broken.yaml"), "--solver", "cpsat",
                "--out", str(tmp_path / "nope" / "s.json"))
    assert r.returncode == 2 and "--out" in r.stderr and "transfer" not in r.stderr


def test_bundled_names_everywhere(tmp_path: Path) -> None:
    assert run_cli("solve", "tiny").returncode == 0
    assert run_cli("bounds", "small").returncode == 0
    assert run_cli("place", "mini-mlp").returncode == 0
    r = run_cli("gen", "mini-mlp", "--spec", "test64", "--out-dir", str(tmp_path / "g"), "--arena")
    assert r.returncode == 0 and (tmp_path / "g" / "mini-mlp-arena.yaml").is_file()
    # the folder `gen` wrote compares as its phases: the arena beside them is skipped, said on stderr
    r = run_cli("compare", str(tmp_path / "g"), "--solvers", "greedy", "--json", "--quiet")
    assert r.returncode == 0, r.stderr
    assert sorted(row["phase"] for row in json.loads(r.stdout)) == sorted(
        p.name for p in (tmp_path / "g").glob("mini-mlp-gemm*.json"))
    assert "mini-mlp-arena.yaml: not a phase" in r.stderr


@pytest.mark.parametrize("solver", ["greedy", "baseline", "search", "cpsat", "milp"])
def test_place_names_the_solver_it_ran(solver: str) -> None:
    doc = json.loads(run_cli("place", "mini-mlp", "--solver", solver, "--json").stdout)
    assert doc["solver"].split("/")[0] == solver and doc["status"] == "optimal"


def test_baseline_that_does_not_fit_says_why() -> None:
    r = run_cli("place", "--csv", str(DATA / "minimalloc" / "A.1048576.csv"), "--capacity", "1048576",
                "--solver", "baseline", "--json")
    doc = json.loads(r.stdout)
    assert r.returncode == 1 and doc["status"] == "unknown"
    assert "baseline" in doc["reason"] and "capacity 1048576" in doc["reason"]


def test_fallback_names_the_greedy_as_author() -> None:
    doc = json.loads(run_cli("solve", "small", "--solver", "cpsat", "--time-limit", "0", "--json").stdout)
    assert doc["solver"] == "cpsat" and doc["status"] in ("fallback", "optimal")
    assert doc["method"].startswith("greedy/")


def test_verbose_log_goes_to_stderr_and_json_stays_clean() -> None:
    r = run_cli("solve", "tiny", "--solver", "cpsat", "--time-limit", "5", "--verbose", "--json",
                "--workers", "1", "--seed", "0")
    assert r.returncode == 0
    assert json.loads(r.stdout)["horizon"] == 130
    assert "CP-SAT" in r.stderr  # the solver's own log


def test_progress_lines_on_a_long_solve() -> None:
    r = run_cli("solve", "medium", "--solver", "cpsat", "--time-limit", "3", "--json",
                env={"IPUOPT_PROGRESS_AFTER": "0"})  # a line from the start, not after 2 s
    lines = [x for x in r.stderr.splitlines() if x.startswith("[")]
    assert r.returncode == 0 and len(lines) >= 1 and "solve cpsat" in lines[0]
    json.loads(r.stdout)
    quiet = run_cli("solve", "medium", "--solver", "cpsat", "--time-limit", "3", "--quiet")
    assert quiet.stderr == "" and quiet.stdout.startswith("phase      medium")


def test_readme_python_example_runs_as_written() -> None:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "the README shows the Python API"
    r = subprocess.run([sys.executable, "-c", blocks[0]], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "optimal" in r.stdout
