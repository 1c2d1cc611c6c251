"""Bad input of every kind, through the CLI: a message naming file, field and reason; exit 2."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import HAND_SPEC, run_cli

GOOD = {"id": "t0", "src": 0, "dst": [2], "words": 4}

PHASE_ERRORS = {
    "unknown tile": ({"dst": [99]}, "transfer t0.dst", "unknown tile 99"),
    "src among dst": ({"dst": [0, 2]}, "transfer t0.dst", "source tile 0 is among"),
    "repeated dst": ({"dst": [2, 2]}, "transfer t0.dst", "repeated destination"),
    "words <= 0": ({"words": 0}, "transfer t0.words", "must be an integer > 0"),
    "unknown after": ({"after": ["zz"]}, "transfer t0.after", "unknown transfer id 'zz'"),
    "fanout": ({"dst": [1, 2, 3, 4, 5]}, "transfer t0.dst", "above max_fanout"),
    "paired required": ({"src_addr": 4, "paired": "required"}, "transfer t0.paired",
                        "cannot be paired"),
    "address outside": ({"dst_addr": 0xFFFF0}, "transfer t0.dst_addr", "outside tile memory"),
    "unknown field": ({"colour": 3}, "transfer t0.colour", "unknown field"),
}


@pytest.fixture
def spec_file(write_yaml):
    return write_yaml("hand.yaml", HAND_SPEC)


@pytest.mark.parametrize("case", sorted(PHASE_ERRORS))
def test_phase_error(case, spec_file, write_yaml) -> None:
    change, field, reason = PHASE_ERRORS[case]
    phase = write_yaml("p.yaml", {"spec": str(spec_file), "transfers": [{**GOOD, **change}]})
    r = run_cli("solve", str(phase))
    assert r.returncode == 2
    assert f"{phase}: {field}: " in r.stderr and reason in r.stderr
    assert "Traceback" not in r.stderr


def test_all_errors_reported_at_once(spec_file, write_yaml) -> None:
    transfers = [{**GOOD, "id": "a", "after": ["b"]}, {**GOOD, "id": "b", "after": ["a"]},
                 {**GOOD, "id": "b"}, {**GOOD, "id": "c", "words": -1, "dst": [0, 99]},
                 {**GOOD, "id": "c"}]
    phase = write_yaml("p.yaml", {"spec": str(spec_file), "transfers": transfers})
    r = run_cli("bounds", str(phase))
    assert r.returncode == 2
    assert "transfer b.id: duplicate id" in r.stderr
    assert "dependency cycle" in r.stderr
    # a malformed field does not hide the transfer's other mistakes, nor a duplicate of its id
    for said in ("transfer c.words", "transfer c.id: duplicate id", "source tile 0 is among",
                 "unknown tile 99"):
        assert said in r.stderr, said


def test_a_relative_spec_path_starts_from_the_phase_folder(spec_file, tmp_path) -> None:
    """Never also from the current folder: the same command must mean the same spec wherever
    it is run."""
    import yaml
    (tmp_path / "phases").mkdir()
    phase = tmp_path / "phases" / "p.yaml"
    phase.write_text(yaml.safe_dump({"spec": spec_file.name, "transfers": [GOOD]}))
    r = run_cli("solve", str(phase), cwd=tmp_path)  # hand.yaml is in the current folder, not beside
    assert r.returncode == 2 and "spec file not found" in r.stderr and "phases/hand.yaml" in r.stderr
    (tmp_path / "phases" / spec_file.name).write_text(spec_file.read_text())
    assert run_cli("solve", str(phase), cwd=tmp_path).returncode == 0


def test_json_phase_and_missing_file(spec_file, tmp_path) -> None:
    import json
    p = tmp_path / "p.json"
    p.write_text(json.dumps({"spec": str(spec_file), "transfers": [GOOD]}))
    assert run_cli("solve", str(p)).returncode == 0
    r = run_cli("solve", str(tmp_path / "missing.yaml"))
    assert r.returncode == 2 and "file not found" in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    r = run_cli("solve", str(bad))
    assert r.returncode == 2 and "invalid JSON" in r.stderr


SPEC_ERRORS = {
    "unknown key": (lambda d: d.update(colour=1), "colour", "unknown key"),
    "missing field": (lambda d: d["exchange"].pop("rx_lead"), "exchange.rx_lead", "missing"),
    "non-positive": (lambda d: d.update(tiles=0), "tiles", "positive integer"),
    "region outside": (lambda d: d["memory"]["regions"][0].update(size=0x20000),
                       "memory.regions[0]", "outside memory"),
    "regions overlap": (lambda d: d["memory"]["regions"].append(
        {"name": "x", "start": 0x100, "size": 0x100, "element_bytes": 0x100}),
        "memory.regions[1]", "overlaps"),
    "pair missing tile": (lambda d: d.update(pairs=[[0, 99]]), "pairs[0]", "does not exist"),
}


@pytest.mark.parametrize("case", sorted(SPEC_ERRORS))
def test_spec_error(case, write_yaml) -> None:
    mutate, field, reason = SPEC_ERRORS[case]
    doc = copy.deepcopy(HAND_SPEC)
    mutate(doc)
    spec = write_yaml("s.yaml", doc)
    phase = write_yaml("p.yaml", {"spec": "gc200", "transfers": [GOOD]})
    r = run_cli("solve", str(phase), "--spec", str(spec))
    assert r.returncode == 2
    assert f"{spec}: {field}: " in r.stderr and reason in r.stderr


def test_extends_cycle_rejected(write_yaml) -> None:
    a = write_yaml("a.yaml", {"name": "a", "extends": "b.yaml"})
    write_yaml("b.yaml", {"name": "b", "extends": "a.yaml"})
    phase = write_yaml("p.yaml", {"spec": "gc200", "transfers": [GOOD]})
    r = run_cli("bounds", str(phase), "--spec", str(a))
    assert r.returncode == 2 and "cycle in extends" in r.stderr


def test_extends_deep_merge(write_yaml) -> None:
    from ipuopt.spec import load_spec
    path = write_yaml("v.yaml", {"name": "v", "extends": "gc200",
                                 "exchange": {"rx_lead": 9}})
    spec = load_spec(str(path))
    base = load_spec("gc200")
    assert spec.exchange.rx_lead == 9 and spec.tiles == base.tiles
    assert spec.exchange.tx_overhead == base.exchange.tx_overhead


@pytest.mark.parametrize("solver,param,why", [
    ("justify", "passes=-1", "must be a whole number >= 0, got -1"),
    ("auto", "prove_split=2", "must be a number in (0, 1], got 2"),
    ("lns", "free=0", "must be a whole number >= 1, got 0"),
    ("lns", "sub_time_limit=fast", "must be a number of seconds > 0, got 'fast'"),
    ("iterated", "rounds=2.5", "must be a whole number >= 0, got 2.5"),
    ("milp", "milp_solver=gurobi", "must be highs or cbc, got 'gurobi'"),
    ("greedy", "quick=3", "must be true or false, got 3"),
])
def test_an_option_of_the_wrong_kind_is_refused_before_any_work(spec_file, write_yaml, monkeypatch,
                                                                 solver, param, why) -> None:
    """Each option's kind and range are declared with its method (`registry.declare`) and checked at every
    front door before the greedy runs: the command line, the API and the library's `solve`
    (the methods checked their own, after the greedy and the bounds, or not at all)."""
    import re

    import yaml

    import ipuopt
    import ipuopt.exchange.greedy as greedy_module
    import ipuopt.exchange.solve as solve_module
    from ipuopt.api import load_phase
    from ipuopt.errors import InputError

    phase = write_yaml("p.yaml", {"spec": str(spec_file), "transfers": [GOOD]})
    r = run_cli("solve", str(phase), "--solver", solver, "--param", param)
    key, value = param.split("=")
    assert r.returncode == 2 and why in r.stderr and f"--param {key}" in r.stderr, r.stderr

    def no_work(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("the greedy ran before the options were checked")

    monkeypatch.setattr(greedy_module, "best_greedy", no_work)
    options = {key: yaml.safe_load(value)}
    with pytest.raises(InputError, match=re.escape(why)):
        solve_module.solve(*load_phase(phase), solver, options)
    with pytest.raises(InputError, match=re.escape(why)):
        ipuopt.solve(phase, solver=solver, params=options)


def test_bad_solver_and_profile(spec_file, write_yaml) -> None:
    phase = write_yaml("p.yaml", {"spec": str(spec_file), "transfers": [GOOD]})
    r = run_cli("solve", str(phase), "--solver", "magic")
    assert r.returncode == 2 and "unknown solver" in r.stderr
    r = run_cli("solve", str(phase), "--profile", "nope")
    assert r.returncode == 2 and "unknown solver profile" in r.stderr
    r = run_cli("solve", str(phase), "--solver", "cpsat", "--param", "no_such_param=1")
    assert r.returncode == 2 and "not a CP-SAT parameter" in r.stderr


def test_every_option_a_stage_of_auto_reads_is_taken_through_auto(spec_file, write_yaml) -> None:
    """One place says which options a method reads (the registry): `passes` is justify's, a stage
    of auto, and a CP-SAT parameter reaches the CP-SAT stages alongside it."""
    phase = write_yaml("p.yaml", {"spec": str(spec_file), "transfers": [GOOD]})
    r = run_cli("solve", str(phase), "--solver", "auto", "--time-limit", "2", "--param", "passes=3",
                "--param", "num_search_workers=1", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "optimal"


def test_yaml_files_are_written_as_pyyaml_writes_them_and_load_back_equal() -> None:
    """`io.yaml_text` (the fast writer of YAML outputs) gives PyYAML's own text, and what needs
    quoting loads back as written (colons, YAML words, numbers as strings, empty and nested
    collections, non-ASCII; a string over lines is written in JSON's form, also YAML)."""
    import yaml

    from ipuopt.io import yaml_text

    tricky = {"a": 1, "b": [1, {"c": "x: y", "d": []}], "e": {}, "f": None, "g": True, "h": 1.5, "i": 1e-05,
              "j": "yes", "k": "", "l": " lead", "m": "#c", "n": "é", "o": "1e5", "p": [[1, 2], [], [[3]]],
              "r": [{"x": [1]}, {}], "s": "null", "t": -0.0, "u": 10**20, "v": "'q'", "w": '"d"', "x": "- a"}
    assert yaml_text(tricky) == yaml.safe_dump(tricky, sort_keys=False, width=1000)
    lines = {"q": "a\nb", "long": "word " * 300}
    for data in (tricky, lines, [tricky, [lines]], {"only": {}}, [], "text", 3):
        assert yaml.safe_load(yaml_text(data)) == data
