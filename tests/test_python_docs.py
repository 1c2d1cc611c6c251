"""The Python API as docs/python.md shows it, one result shape, one policy, model export."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import highspy
import pytest
from conftest import run_cli
from google.protobuf import text_format
from ortools.sat import cp_model_pb2
from ortools.sat.python import cp_model

import ipuopt
from ipuopt.arena.cpsat import grain
from ipuopt.registry import HOMES, methods, resolve

ROOT = Path(__file__).resolve().parents[1]
COMMON = {"solver", "method", "status", "value", "lower_bound", "gap", "runtime_s", "bounds", "extras"}


def test_every_example_in_docs_python_runs() -> None:
    """Each block in its own namespace, all in one interpreter (start-up paid once)."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "python.md").read_text(), re.S)
    assert len(blocks) >= 6
    script = "\n".join(f"exec({b!r}, {{}})\nprint('--- block {i} ok')" for i, b in enumerate(blocks))
    r = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.count("ok\n") == len(blocks)


def test_names_and_objects_the_same_way() -> None:
    assert dir(ipuopt) == sorted(ipuopt.__all__)
    assert all(getattr(ipuopt, name) is not None for name in ipuopt.__all__)
    doc = {"spec": "test64", "transfers": [{"id": "a", "src": 0, "dst": [1], "words": 64}]}
    by_dict = ipuopt.solve(doc)
    by_object = ipuopt.solve(ipuopt.Phase("test64", [ipuopt.Transfer("a", 0, (1,), 64)]))
    assert by_dict.value == by_object.value > 0 and by_dict.status == "optimal"
    assert ipuopt.place("mini-mlp", "peak").value == ipuopt.place(ipuopt.load_arena("mini-mlp"), "peak").value
    assert ipuopt.select_layouts("toy").value == 236200


def test_objects_are_checked_as_files_are(tmp_path: Path) -> None:
    bad = {"spec": "test64", "transfers": [{"id": "a", "src": 0, "dst": [1], "words": 0},
                                           {"id": "b", "src": 1, "dst": [1], "words": 4}]}
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    reasons = []
    built = ipuopt.Phase("test64", [ipuopt.Transfer("a", 0, (1,), 0), ipuopt.Transfer("b", 1, (1,), 4)])
    for source in (bad, built, tmp_path / "bad.json"):
        with pytest.raises(ipuopt.InputError) as err:
            ipuopt.solve(source)
        reasons.append(sorted((p.field, p.reason) for p in err.value.problems))
    assert reasons[0] == reasons[1] == reasons[2] and len(reasons[0]) == 2
    arena = ipuopt.Arena([ipuopt.Buffer("x", 4096, 0, 2), ipuopt.Buffer("x", 100, 1, 3, align=3)], 4096, 4096)
    with pytest.raises(ipuopt.InputError) as err:
        ipuopt.place(arena)
    assert {p.field for p in err.value.problems} == {"buffer x.id"}  # the duplicate id
    with pytest.raises(ipuopt.InputError) as err:
        ipuopt.place(ipuopt.Arena([ipuopt.Buffer("y", 0, 3, 1)], 64, 0))
    assert {p.field for p in err.value.problems} == {"element_bytes", "buffer y.size", "buffer y.live"}


def test_one_policy_for_every_front_door(tmp_path: Path) -> None:
    """`cpsat` by name brings its profile from the API, a sweep and the CLI alike; a time
    limit alone means auto; a registry entry exists for every method each front door takes."""
    method, params = resolve("exchange", "cpsat")
    assert method.kind == "exact" and (params.time_limit, params.workers) == (60.0, 2)
    assert resolve("exchange", None, time_limit=5)[0].name == "auto"
    assert resolve("exchange", None)[0].name == "greedy"
    sweep = tmp_path / "s.yaml"
    sweep.write_text("phases: [p.yaml]\nsolvers:\n  - {solver: cpsat}\n")
    (tmp_path / "p.yaml").write_text((ROOT / "models" / "examples" / "tiny.yaml").read_text())
    from ipuopt.sweeps.plan import load_sweep

    cell = load_sweep(sweep).cells[0]
    assert (cell.backend, cell.params) == ("cpsat", {"time_limit": 60.0, "workers": 2})
    arena = {("arena", s) for s in ("auto", "greedy", "baseline", "search", "cpsat", "milp")}
    every = methods()
    assert {(m.problem, m.name) for m in every} >= arena
    assert all(m.kind in ("exact", "heuristic", "portfolio") and callable(m.load()) for m in every)
    # each declared where the registry's index says, and every method of a problem called alike
    assert all(m.function.__module__ == HOMES[m.problem][m.name] for m in every)
    assert all(list(inspect.signature(m.function).parameters)[:5] == ["inst", "hint", "params", "budget",
                                                                         "progress"] for m in every)
    assert [m.name for m in every if m.baseline] == ["greedy", "beam"]
    assert ipuopt.solve("tiny", time_limit=2, workers=1, seed=0).solver == "auto"


def test_one_result_shape_on_the_command_line(tmp_path: Path) -> None:
    docs = []
    for args in (["solve", "tiny"], ["place", "mini-mlp", "--objective", "peak"], ["layout", "toy"]):
        r = run_cli(*args, "--json", "--quiet", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        docs.append(json.loads(r.stdout))
    for doc in docs:
        assert set(doc) >= COMMON and doc["value"] is not None
    solve_doc, place_doc, layout_doc = docs
    assert solve_doc["horizon"] == solve_doc["value"] and len(solve_doc["transfers"]) == 6
    assert place_doc["peak"] == place_doc["value"] and place_doc["offsets"]
    assert layout_doc["cycles"] == layout_doc["value"] == 236200 and layout_doc["choice"]


def _cpsat_optimum(path: Path) -> float:
    model = cp_model.CpModel()
    if path.suffix == ".pb":
        proto = cp_model_pb2.CpModelProto()
        proto.ParseFromString(path.read_bytes())
        model.Proto().parse_text_format(text_format.MessageToString(proto))
    else:
        model.Proto().parse_text_format(path.read_text())
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = 30
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL
    return solver.objective_value


def _highs_optimum(path: Path) -> float:
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", 60.0)
    h.readModel(str(path))
    h.run()
    assert h.modelStatusToString(h.getModelStatus()) == "Optimal"
    return h.getInfo().objective_function_value


@pytest.mark.parametrize("suffix", [".pb", ".pbtxt", ".mps", ".lp"])
def test_exported_models_load_back_with_the_same_optimum(tmp_path: Path, suffix: str) -> None:
    """Read by OR-Tools (CP-SAT) or HiGHS (MILP), each model has ipuopt's own optimum."""
    optimum = _cpsat_optimum if suffix.startswith(".pb") else _highs_optimum
    out = tmp_path / f"tiny{suffix}"
    r = run_cli("solve", "tiny", "--export", str(out), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["file"] == str(out)
    assert optimum(out) == ipuopt.solve("tiny", solver="cpsat", time_limit=10).value == 130
    ipuopt.export_model("toy", out, "layout")
    assert optimum(out) == 236200
    arena = ipuopt.load_arena("mini-mlp")
    ipuopt.export_model(arena, out, "arena", objective="peak")
    unit = grain(arena, "peak") if suffix.startswith(".pb") else 1  # CP-SAT counts in grains
    assert optimum(out) * unit == ipuopt.place(arena, "peak").value == 2568


def test_export_refuses_what_it_cannot_write(tmp_path: Path) -> None:
    phase = ROOT / "models" / "examples" / "tiny.yaml"
    for target, words in ((tmp_path / "m.txt", "unknown file type"), (tmp_path, "is a directory")):
        r = run_cli("solve", str(phase), "--export", str(target), cwd=tmp_path)
        assert r.returncode == 2 and "--export" in r.stderr and words in r.stderr, r.stderr
