"""The simulator against the validator: same verdict, same horizon, on random phases."""

from __future__ import annotations

import json
import random
from pathlib import Path

from conftest import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_properties import specs

from ipuopt.exchange.greedy import greedy_schedule
from ipuopt.exchange.phase import load_phase
from ipuopt.exchange.random_phase import random_phase
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.simulate import Simulation, _clean, _replay, simulate
from ipuopt.exchange.solve import solve
from ipuopt.exchange.validate import validate
from ipuopt.spec import Spec, load_spec
from ipuopt.workloads.phases import generate
from ipuopt.workloads.workload import load_workload


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs(), n=st.integers(1, 14), seed=st.integers(0, 10**6))
def test_valid_schedules_replay_with_the_validators_horizon(spec: Spec, n: int, seed: int) -> None:
    phase = random_phase(spec, n, seed=seed, tiles=6, max_words=24, p_dep=0.2)
    schedule = Schedule(*greedy_schedule(phase, spec))
    report = validate(phase, spec, schedule)
    sim = simulate(phase, spec, schedule)
    assert report.ok and sim.ok, sim.breach
    assert sim.horizon == report.horizon
    assert sim.chain and sim.chain[0]["end"] == sim.horizon and sim.chain[-1]["held_by"] != ""


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs(), n=st.integers(2, 12), seed=st.integers(0, 10**6), moves=st.integers(1, 3))
def test_broken_schedules_are_caught_by_both(spec: Spec, n: int, seed: int, moves: int) -> None:
    """Shift starts and flip widths at random: the simulator breaks off exactly when the
    validator finds a violation."""
    phase = random_phase(spec, n, seed=seed, tiles=4, max_words=16, p_dep=0.2)
    starts, widths = greedy_schedule(phase, spec)
    rng = random.Random(seed)
    for _ in range(moves):
        tid = rng.choice(list(starts))
        if rng.random() < 0.7:
            starts[tid] = max(0, starts[tid] + rng.randint(-30, 30))
        else:
            widths[tid] = "paired" if widths[tid] == "ordinary" else "ordinary"
    schedule = Schedule(starts, widths)
    report = validate(phase, spec, schedule)
    sim = simulate(phase, spec, schedule)
    assert sim.ok == report.ok, (sim.breach, report.violations[:3])
    if sim.ok or sim.breach.rule != "width":  # the numpy check and the event replay agree
        clean, finish = _clean(phase, spec, schedule)
        replay = _replay(phase, spec, schedule, Simulation(True, None, 0, {}))
        assert clean == replay.ok, replay.breach
        assert finish.tolist() == [replay.finish[t.id] for t in phase.transfers]
    if sim.ok:
        assert sim.horizon == report.horizon
    else:
        assert sim.breach.rule in {v.rule for v in report.violations}


def test_barrier_metrics_with_arrivals() -> None:
    phase, spec = load_phase("tiny")
    res = solve(phase, spec)
    sim = simulate(phase, spec, res.solution, {3: 500, 7: 120})
    doc = sim.to_dict()
    assert (doc["first_arrival"], doc["last_arrival"], doc["last_tile"], doc["spread"]) == (0, 500, 3, 500)
    assert doc["exchange_start"] == 500 + spec.exchange.sync_cycles
    assert doc["end"] == doc["exchange_start"] + res.value
    assert doc["after_last_arrival"] == doc["end"] - 500
    assert all(0 <= lane["busy"] <= 1 and len(lane["tenths"]) == 10 for lane in doc["lanes"].values())
    assert simulate(phase, spec, res.solution).horizon == res.value


def test_simulate_cli(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    assert run_cli("solve", "small", "--out", str(out)).returncode == 0
    (tmp_path / "arr.json").write_text(json.dumps({"3": 900, "10": 50}))
    r = run_cli("simulate", "small", str(out), "--arrivals", str(tmp_path / "arr.json"), "--json")
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["last_tile"] == 3 and doc["spread"] == 900
    bad = json.loads(out.read_text())
    bad["transfers"][1]["start"] = bad["transfers"][0]["start"]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    r = run_cli("simulate", "small", str(tmp_path / "bad.json"))
    assert r.returncode == 1 and r.stdout.startswith("breach")
    (tmp_path / "arr.json").write_text(json.dumps({"9999": 5}))
    r = run_cli("simulate", "small", str(out), "--arrivals", str(tmp_path / "arr.json"))
    assert r.returncode == 2 and "9999" in r.stderr


def test_program_replay(tmp_path: Path) -> None:
    """Each boundary starts the exchange sync cycles after the slowest tile, which computed
    since the previous exchange ended; the total adds up; a plan gives the same run."""
    # whole boxes: the replay's arithmetic does not depend on the grain, and they schedule fastest
    r = run_cli("run", "mini-mlp", "--spec", "test64", "--grain", "box", "--json", "--out",
                str(tmp_path / "run.json"))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert json.loads((tmp_path / "run.json").read_text()) == doc
    prev_end = 0
    for b in doc["boundaries"]:
        assert b["first_arrival"] >= prev_end
        assert b["last_arrival"] == prev_end + b["compute_max"]
        assert b["exchange_start"] == b["last_arrival"] + b["sync"]
        assert b["end"] == b["exchange_start"] + b["horizon"] and b["horizon"] >= b["lower_bound"]
        prev_end = b["end"]
    phases = len(generate(load_workload("mini-mlp"), load_spec("test64"), grain="box").phases)
    assert len(doc["boundaries"]) == phases and doc["total_cycles"] == prev_end + doc["final_compute"]
    # the program bound: every boundary's slowest compute and sync, its phase at its best bound
    bound = doc["final_compute"] + sum(b["compute_max"] + b["sync"] + b["lower_bound"]
                                       for b in doc["boundaries"])
    assert doc["lower_bound"] == bound <= doc["total_cycles"] and doc["gap"] >= 0
    assert doc["boundaries"][1]["compute_max"] > doc["boundaries"][1]["compute_min"]  # ragged grid
    (tmp_path / "plan.json").write_text(json.dumps({"status": "optimal", "choice": doc["layouts"]}))
    again = json.loads(run_cli("run", "mini-mlp", "--spec", "test64", "--plan", str(tmp_path / "plan.json"),
                               "--grain", "box", "--json").stdout)
    assert again["total_cycles"] == doc["total_cycles"]
    r = run_cli("gen", "mini-mlp", "--spec", "test64", "--plan", str(tmp_path / "plan.json"), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["layouts"]["gemm1"]["layout"] == doc["layouts"]["gemm1"]


def test_program_replay_takes_the_solvers_options() -> None:
    """`run` (and `ipuopt.run`) hands --param, --workers and --seed to every phase's solver:
    justify's passes are fixed (the same run twice) and no phase ends above the greedy's,
    nor CP-SAT's."""
    def horizons(*args: str) -> list[int]:
        r = run_cli("run", "mini-mlp", "--spec", "test64", "--grain", "box", "--json", "--quiet", *args)
        assert r.returncode == 0, r.stderr
        return [b["horizon"] for b in json.loads(r.stdout)["boundaries"]]

    greedy = horizons()
    passes = horizons("--solver", "justify", "--param", "passes=3")
    assert passes == horizons("--solver", "justify", "--param", "passes=3")
    exact = horizons("--solver", "cpsat", "--workers", "1", "--seed", "0", "--time-limit", "8")
    assert all(p <= g and e <= g for p, e, g in zip(passes, exact, greedy, strict=True))
    assert passes != greedy  # the passes shortened at least one phase
    import ipuopt

    doc = ipuopt.run("mini-mlp", "test64", solver="justify", grain="box", params={"passes": 3})
    assert [b["horizon"] for b in doc["boundaries"]] == passes  # the Python API, the same


def test_solve_prints_the_critical_chain() -> None:
    doc = json.loads(run_cli("solve", "tiny", "--solver", "cpsat", "--chain", "--json").stdout)
    chain = doc["critical_chain"]
    assert chain[0]["end"] == doc["horizon"] and chain[-1]["held_by"] == "phase start"
    text = run_cli("solve", "tiny", "--chain").stdout
    assert "critical chain" in text and "held by" in text


def test_a_program_time_limit_is_shared_by_every_phase() -> None:
    """Each phase gets its share of what is left: a phase that ends early leaves its time to the
    next ones (a phase's own clock once cut the whole program's deadline short)."""
    import ipuopt
    from ipuopt.budget import Budget

    doc = ipuopt.run("mini-mlp", "test64", grain="box", time_limit=6)
    shares = [b["time_limit_s"] for b in doc["boundaries"]]
    assert len(shares) == len(doc["boundaries"]) >= 3, shares
    # the generation before the first phase takes ~0.1 s here: room for a machine 20 times slower
    assert all(s > 0.2 for s in shares) and sum(shares) > 3, shares
    parent = Budget(10)
    child = parent.share(1)
    assert parent.left() > 8 and child.left() <= 1
    child.request()  # Ctrl-C in the child's solve reaches the parent, and back
    assert parent.interrupted


def test_the_api_reads_the_arrivals_file_the_cli_reads(tmp_path: Path) -> None:
    """`ipuopt.simulate` takes the `--arrivals` file (or its mapping, keys as JSON has them) and
    refuses what the command line refuses."""
    import ipuopt
    from ipuopt.errors import InputError

    res = ipuopt.solve("small")
    (tmp_path / "arr.json").write_text(json.dumps({"3": 900, "10": 50}))
    by_file = ipuopt.simulate("small", None, res, tmp_path / "arr.json").to_dict()
    assert by_file == ipuopt.simulate("small", None, res, {"3": 900, "10": 50}).to_dict()
    assert (by_file["last_tile"], by_file["spread"]) == (3, 900)
    (tmp_path / "arr.json").write_text(json.dumps({"9999": 5, "2": -1}))
    try:
        ipuopt.simulate("small", None, res, str(tmp_path / "arr.json"))
    except InputError as exc:
        assert [p.field for p in exc.problems] == ["9999", "2"]
    else:
        raise AssertionError("bad arrivals accepted")
