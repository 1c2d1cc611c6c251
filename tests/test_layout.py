"""Layout selection: MILP, CP-SAT and brute force agree; the beam never beats them and the
report says where it lost; memory infeasibility names the step and region; bad files."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, run_cli

from ipuopt.errors import InputError
from ipuopt.layout.problem import layout_problem_from_dict, load_layout_problem
from ipuopt.layout.solve import plan
from ipuopt.result import Result, Status

LAYOUTS = ("rows", "cols", "blocks")


def random_problem(seed: int) -> dict:
    rng = random.Random(seed)
    n = rng.randint(2, 4)
    ops = [f"op{i}" for i in range(n)]
    tensors = {"x": {"layout": rng.choice(LAYOUTS)}} | {f"t{i}": {"producer": op} for i, op in enumerate(ops)}
    operators, rows = {}, []
    for i, op in enumerate(ops):
        inputs = ["x"] if i == 0 else [f"t{i - 1}"] + (["x"] if rng.random() < 0.3 else [])
        if i >= 2 and rng.random() < 0.4:
            inputs.append(f"t{i - 2}")  # a tensor live across a step
        cands = [{"id": f"{op}-c{j}", "compute": rng.randint(10, 100), "exchange": rng.randint(0, 30),
                  "memory": {"m": rng.randint(0, 60)}, "needs": {t: rng.choice(LAYOUTS) for t in inputs},
                  "output": rng.choice(LAYOUTS), "holds": {"m": rng.randint(0, 40)}}
                 for j in range(rng.randint(1, 4))]
        operators[op] = {"inputs": inputs, "output": f"t{i}", "candidates": cands}
    for t in tensors:
        for a, b in itertools.permutations(LAYOUTS, 2):
            if rng.random() < 0.7:
                rows.append({"tensor": t, "from": a, "to": b, "cycles": rng.randint(1, 80)})
    return {"name": f"random-{seed}", "capacity": {"m": rng.randint(60, 160)}, "order": ops,
            "tensors": tensors, "operators": operators, "redistribution": rows}


def brute_force(problem) -> int | None:
    best = None
    names = problem.order
    for combo in itertools.product(*(problem.operators[n].candidates for n in names)):
        choice = dict(zip(names, combo, strict=True))
        total = problem.cycles(choice)
        if total is not None and problem.overflow(choice) is None and (best is None or total < best):
            best = total
    return best


@pytest.mark.parametrize("seed", range(40))
def test_exact_models_agree_with_brute_force(seed: int) -> None:
    problem = layout_problem_from_dict(random_problem(seed), "random")
    truth = brute_force(problem)
    params = {"time_limit": 20, "workers": 1, "seed": 0}
    milp, cpsat, beam = (plan(problem, s, params).to_dict() for s in ("milp", "cpsat", "beam"))
    if truth is None:
        assert milp["status"] == cpsat["status"] == Status.INFEASIBLE
        assert beam["cycles"] is None
        return
    assert milp["status"] == cpsat["status"] == Status.OPTIMAL
    assert milp["cycles"] == cpsat["cycles"] == truth == milp["lower_bound"] == cpsat["lower_bound"]
    if beam["cycles"] is not None:
        assert beam["cycles"] >= truth


def test_hand_written_problem_file(tmp_path: Path) -> None:
    problem = load_layout_problem(ROOT / "models" / "layouts" / "toy.yaml")
    results = [plan(problem, s).to_dict() for s in ("milp", "cpsat", "beam")]
    assert [r["cycles"] for r in results] == [236200] * 3
    assert results[0]["choice"] == {"gemm1": "8x46x4/2x2/interleaved", "gemm2": "7x10x21/21x1/interleaved",
                                    "gelu": "in-place-8x46"}
    out = tmp_path / "plan.json"
    r = run_cli("layout", "models/layouts/toy.yaml", "--out", str(out), "--json")
    doc = json.loads(out.read_text())
    assert r.returncode == 0 and json.loads(r.stdout) == doc
    assert {"workload", "solver", "status", "cycles", "lower_bound", "choice"} <= set(doc)
    # the plan's choice feeds run/gen --plan as layouts when its ids are layout labels
    assert doc["status"] == "optimal" and doc["cycles"] == doc["lower_bound"] == 236200


def test_beam_loses_the_optimum_and_the_report_says_where() -> None:
    problem = load_layout_problem(ROOT / "models" / "layouts" / "beam-loses.yaml")
    doc = plan(problem, "milp", k=3).to_dict()
    assert doc["cycles"] == 3890 and doc["beam"]["cycles"] == 8200
    assert doc["beam"]["discarded"] == [{"operator": "gemm1", "candidate": "g1-c69", "where": "screen",
                                         "rank": 70, "of": 70, "width": 64}]
    cycles = [p["cycles"] for p in doc["plans"]]
    assert cycles == sorted(cycles) and len({json.dumps(p["choice"]) for p in doc["plans"]}) == 3
    wide = plan(problem, "milp", width=70, beam=70).to_dict()
    assert wide["beam"]["cycles"] == 3890 and wide["beam"]["discarded"] == []
    narrow = plan(problem, "milp", width=70, beam=4).to_dict()  # screened in, then dropped by the beam
    assert narrow["beam"]["discarded"] == [{"operator": "gemm1", "candidate": "g1-c69", "where": "beam",
                                            "step": 0, "rank": 70, "beam": 4}]


def test_beam_step_that_drops_the_optimum() -> None:
    """Screens keep everything, but a beam of one partial plan keeps the locally cheapest."""
    doc = plan(load_layout_problem(ROOT / "models" / "layouts" / "toy.yaml"), "milp", beam=1).to_dict()
    assert doc["beam"]["cycles"] == 277734 > doc["cycles"]
    assert doc["beam"]["discarded"] == [{"operator": "gemm1", "candidate": "8x46x4/2x2/interleaved",
                                         "where": "beam", "step": 0, "rank": 2, "beam": 1}]


def test_memory_infeasible_names_step_and_region() -> None:
    doc = yaml.safe_load((ROOT / "models" / "layouts" / "toy.yaml").read_text())
    doc["capacity"]["interleaved"] = 50000
    out = plan(layout_problem_from_dict(doc, "toy"), "milp").to_dict()
    assert out["status"] == Status.INFEASIBLE and out["cycles"] is None
    # gemm2's smallest working memory plus the smallest hold of gelu's output, live into step 2
    assert out["reason"].startswith("step 2 (gemm2): region interleaved needs at least 71880 bytes")


BAD = {
    "order": ({"order": ["gemm1", "gemm2"]}, "order"),
    "unknown key": ({"colour": 1}, "colour"),
    "needs": ({"operators.gemm1.candidates.0.needs": {}}, "candidate 4x92x4/4x1/interleaved.needs"),
    "region": ({"operators.gemm1.candidates.0.memory": {"sram": 1}}, "memory.sram"),
    "negative": ({"operators.gemm1.candidates.0.compute": -5}, "compute"),
    "tensor": ({"operators.gemm1.inputs": ["nope"]}, "operators.gemm1.inputs"),
    "producer": ({"tensors.h": {"producer": "nobody"}}, "tensors.h"),
    "row": ({"redistribution": [{"tensor": "a", "from": "p"}]}, "redistribution[0]"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_problem_files(case: str, tmp_path: Path) -> None:
    doc = yaml.safe_load((ROOT / "models" / "layouts" / "toy.yaml").read_text())
    change, field = BAD[case]
    for path, value in change.items():
        node, *keys = path.split(".")
        if not keys:
            doc[node] = value
            continue
        target = doc[node]
        for key in keys[:-1]:
            target = target[int(key)] if key.isdigit() else target[key]
        target[keys[-1]] = value
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError) as err:
        load_layout_problem(f)
    assert str(f) in str(err.value) and field in str(err.value), str(err.value)
    r = run_cli("layout", str(f))
    assert r.returncode == 2 and field in r.stderr and "Traceback" not in r.stderr


def test_layout_from_python() -> None:
    import ipuopt

    assert ipuopt.select_layouts(ROOT / "models" / "layouts" / "toy.yaml", "cpsat").value == 236200
    built = ipuopt.select_layouts("mini-mlp", spec="test64")  # a workload, by name: built, then planned
    assert built.status == "optimal" and built.solution.kept["enumerated"] and built.solution.rerank is None


def test_layout_cli_mistakes() -> None:
    r = run_cli("layout", "models/examples/tiny.yaml")  # a phase: neither a problem nor a workload
    assert r.returncode == 2 and "operators" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("layout", "models/layouts/toy.yaml", "--solver", "magic")
    assert r.returncode == 2 and "--solver" in r.stderr
    r = run_cli("layout", "models/layouts/toy.yaml", "--k", "0")
    assert r.returncode == 2 and "--k" in r.stderr


def test_a_plan_never_costs_more_than_the_beams(swap_method) -> None:
    """An exact method stopped by its time above the beam's plan (HiGHS's incumbent at its
    limit): the beam's plan is returned, feasible, with the method's bound and the reason."""

    problem = layout_problem_from_dict(random_problem(3), "random")
    worst, most = None, -1
    for combo in itertools.product(*(range(len(problem.operators[n].candidates)) for n in problem.order)):
        choice = dict(zip(problem.order, combo, strict=True))
        chosen = {op: problem.operators[op].candidates[i] for op, i in choice.items()}
        total = problem.cycles(chosen)
        if total is not None and problem.overflow(chosen) is None and total > most:
            worst, most = choice, total
    beam = plan(problem, "beam").to_dict()
    assert worst is not None and beam["cycles"] < most
    swap_method("layout", "milp", lambda *a, **k: Result(Status.FEASIBLE, worst, most, 7, solver="milp"))
    got = plan(problem, "milp", {"time_limit": 5})
    assert got.value == beam["cycles"] and got.status == Status.FEASIBLE and got.bound == 7
    assert got.solution.choice == beam["choice"] and "beam's plan" in got.reason


def test_ctrl_c_in_a_layout_method_is_an_answer(swap_method, monkeypatch) -> None:
    """The layout front door is the solve kernel's: Ctrl-C while the method runs (one that
    hears no stop, as a MILP past its grace) leaves the beam's plan, marked interrupted."""
    import threading

    from ipuopt import kernel

    started, never = threading.Event(), threading.Event()

    def deaf(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        started.set()
        never.wait()

    def interrupted_in_the_method(work, stop, grace=3.0):  # noqa: ANN001, ANN202 (Ctrl-C, the grace ends)
        threading.Thread(target=work, daemon=True).start()
        assert started.wait(120), "the method never began"
        stop.request()
        return None, True

    problem = load_layout_problem(ROOT / "models" / "layouts" / "toy.yaml")
    beam = plan(problem, "beam")
    swap_method("layout", "milp", deaf)
    monkeypatch.setattr(kernel, "run_interruptible", interrupted_in_the_method)
    try:
        got = plan(problem, "milp", {"time_limit": 600})
    finally:
        never.set()
    assert got.interrupted and got.status == Status.FALLBACK and "beam's plan" in got.reason
    assert got.value == beam.value and got.solution.choice == beam.solution.choice
