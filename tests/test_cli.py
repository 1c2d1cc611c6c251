"""The CLI end to end: solve, validate, bounds, compare, specs, import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DATA, ROOT, run_cli

from ipuopt.spec import load_spec, spec_names

EXAMPLES = ROOT / "models" / "examples"


@pytest.mark.parametrize(("what_if", "fields"), [
    ("gc200-elem64k", {"memory.regions"}), ("gc200-nopairs", {"pairs"}),
    ("gc200-slowroute", {"exchange.route_latency.base", "exchange.route_latency.per_tile"}),
    ("bow", {"clock_hz"}),
])
def test_a_what_if_spec_differs_from_gc200_in_what_its_name_says_only(what_if: str, fields: set) -> None:
    from ipuopt.spec import diff_specs

    base, other = load_spec("gc200"), load_spec(what_if)
    assert {path for path, _, _ in diff_specs(base, other)} - {"name", "description"} == fields
    if what_if == "gc200-elem64k":  # the same memory map, larger elements
        strip = [{k: v for k, v in r.items() if k != "element_bytes"} for r in base.raw["memory"]["regions"]]
        assert [{k: v for k, v in r.items() if k != "element_bytes"}
                for r in other.raw["memory"]["regions"]] == strip
        assert {r.element_bytes for r in other.regions} == {2 * r.element_bytes for r in base.regions}


def test_every_shipped_spec_loads() -> None:
    names = spec_names()
    for required in ("gc2", "gc200", "bow", "test64", "openshop"):
        assert required in names
    variants = [n for n in names if (load_spec(n).raw or {}) and
                (ROOT / "specs" / f"{n}.yaml").read_text().count("extends: gc200")]
    assert len(variants) >= 4  # bow, test64 and at least three what-ifs


def test_solve_writes_valid_schedule(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    r = run_cli("solve", str(EXAMPLES / "small.yaml"), "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    doc = json.loads(out.read_text())
    assert doc["horizon"] == summary["horizon"] and doc["solver"] == "greedy"
    assert {b["name"] for b in summary["bounds"]} == {"endpoint", "pair", "element", "matching", "dependency",
                                                   "heads-tails", "group", "clique"}
    assert summary["lower_bound"] <= summary["horizon"]
    r = run_cli("validate", str(EXAMPLES / "small.yaml"), str(out))
    assert r.returncode == 0 and r.stdout.startswith("ok")


def test_validate_fails_with_violations(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    assert run_cli("solve", str(EXAMPLES / "tiny.yaml"), "--out", str(out)).returncode == 0
    doc = json.loads(out.read_text())
    for entry in doc["transfers"]:
        entry["start"] = 0
    out.write_text(json.dumps(doc))
    r = run_cli("validate", str(EXAMPLES / "tiny.yaml"), str(out), "--json")
    assert r.returncode == 1
    rules = {v["rule"] for v in json.loads(r.stdout)["violations"]}
    assert "dependency" in rules


def test_out_never_overwrites_input(tmp_path: Path) -> None:
    phase = tmp_path / "p.yaml"
    phase.write_text((EXAMPLES / "tiny.yaml").read_text())
    before = phase.read_text()
    r = run_cli("solve", str(phase), "--out", str(phase))
    assert r.returncode == 2 and "refusing to overwrite" in r.stderr
    assert phase.read_text() == before


def test_quiet_and_spec_override() -> None:
    r = run_cli("solve", str(EXAMPLES / "tiny.yaml"), "--quiet", "--json")  # quiet: no progress, results
    assert r.returncode == 0 and r.stderr == "" and json.loads(r.stdout)["horizon"] == 130
    r = run_cli("solve", str(EXAMPLES / "tiny.yaml"), "--spec", "gc200-nopairs", "--json")
    assert json.loads(r.stdout)["spec"] == "gc200-nopairs"


@pytest.mark.parametrize("solver", ["cpsat", "auto"])
def test_zero_time_limit_falls_back(solver: str) -> None:
    r = run_cli("solve", str(EXAMPLES / "medium.yaml"), "--solver", solver, "--time-limit", "0",
                "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["status"] == "fallback" and s["horizon"] == s["extras"]["greedy_horizon"]
    assert s["method"].startswith("greedy/") and s["reason"]


def test_a_time_limit_means_auto() -> None:
    r = run_cli("solve", str(EXAMPLES / "small.yaml"), "--time-limit", "3", "--workers", "1", "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["solver"] == "auto" and s["extras"]["methods"] == ["time", "cpsat"]
    assert s["lower_bound"] <= s["horizon"] <= s["extras"]["greedy_horizon"]


def test_compare_rows(tmp_path: Path) -> None:
    r = run_cli("compare", str(EXAMPLES / "tiny.yaml"), str(EXAMPLES / "small.yaml"),
                "--solvers", "greedy,cpsat", "--time-limit", "2", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [(x["phase"], x["solver"]) for x in rows] == [
        ("tiny.yaml", "greedy"), ("tiny.yaml", "cpsat"),
        ("small.yaml", "greedy"), ("small.yaml", "cpsat")]
    for x in rows:
        assert x["bound"] <= x["horizon"]
    r = run_cli("compare", str(EXAMPLES), "--solvers", "greedy", "--csv")
    assert r.returncode == 0 and r.stdout.splitlines()[0].startswith("phase,spec,solver")
    assert len(r.stdout.splitlines()) == 1 + len(list(EXAMPLES.glob("*.yaml")))


def test_specs_commands() -> None:
    r = run_cli("specs", "show", "bow", "--json")
    doc = json.loads(r.stdout)
    assert doc["tiles"] == 1472 and doc["clock_hz"] == 1850000000 and "extends" not in doc
    r = run_cli("specs", "diff", "gc200", "gc200-nopairs")
    assert "pairs: 'adjacent' -> 'none'" in r.stdout
    assert "test64" in run_cli("specs", "list").stdout


def test_import_openshop(tmp_path: Path) -> None:
    src = DATA / "openshop" / "ta4x4_1os.txt"
    out = tmp_path / "ta.yaml"
    r = run_cli("import", "openshop", str(src), "--out", str(out))
    assert r.returncode == 0, r.stderr
    r = run_cli("solve", str(out), "--solver", "cpsat", "--time-limit", "20", "--json")
    s = json.loads(r.stdout)
    assert s["status"] == "optimal" and s["horizon"] == 193  # best known makespan
    bad = tmp_path / "bad.txt"
    bad.write_text("2 2\n1 2 3\n")
    r = run_cli("import", "openshop", str(bad), "--out", str(tmp_path / "x.yaml"))
    assert r.returncode == 2 and "expected 2x2 = 4 times" in r.stderr
