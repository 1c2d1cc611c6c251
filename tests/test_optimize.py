"""`ipuopt optimize`: the whole program chosen with real schedules, never worse than the
compiler's way, with its bound. (Every schedule it replays passed the validator: `solve`
refuses to return one that does not.)"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

from conftest import run_cli, start_cli

from ipuopt.budget import Budget, Grant
from ipuopt.params import SolveParams
from ipuopt.render.views import program_view


def test_optimize_beats_or_matches_both_baselines_with_its_bound(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    r = run_cli("optimize", "mini-mlp", "--spec", "test64", "--grain", "box", "--k", "2",
                "--time-limit", "20", "--out", str(out), "--json", "--quiet")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc == json.loads(out.read_text())
    o = doc["optimize"]
    assert all(doc["total_cycles"] <= cycles for cycles in o["baselines"].values())
    plans, steered = o["finalists"][:3], o["finalists"][3:]
    assert len(plans) == 3 and plans[1]["name"] == "beam plan" and len(o["baselines"]) == 2
    # the bound's plan is replayed too when no plan is it (and the time left holds a replay)
    bound_plan = o["program_bound"]["plan"]
    assert all(f["name"] == "program bound's plan" and f["choice"] == bound_plan for f in steered)
    if any(all(f["choice"][op] == label for op, label in bound_plan.items()) for f in plans):
        assert not steered
    assert min(f["greedy_cycles"] for f in o["finalists"]) >= doc["total_cycles"]
    assert doc["lower_bound"] <= doc["total_cycles"]
    # over every plan: at most the chosen plan's own (placement-free parts of its bounds)
    assert 0 < doc["program_bound"] <= doc["lower_bound"]
    assert o["program_bound"]["value"] == doc["program_bound"]
    assert o["gap_by_phase"].keys() == {b["phase"] for b in doc["boundaries"]}
    assert run_cli("render", "--program", str(out), "--out", str(tmp_path / "run.png")).returncode == 0
    drawn = [line[0] for line in program_view(doc).lines]  # the picture's lines: end, bounds, baselines
    assert drawn == [doc["total_cycles"], doc["lower_bound"], doc["program_bound"], *o["baselines"].values()]
    assert run_cli("optimize", "mini-mlp", "--k", "0").returncode == 2


def _marked(mark: str) -> list[int]:
    """Processes whose environment holds `mark`."""
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):  # ended meanwhile, or not ours to read
            if proc.name.isdigit() and mark.encode() in (proc / "environ").read_bytes():
                found.append(int(proc.name))
    return found


def test_a_finished_command_leaves_no_process_behind(tmp_path: Path) -> None:
    """The command ends with `os._exit` (no interpreter teardown, which took 14 s past a
    time limit at fragment level): its local Dask cluster and helpers still end with it."""
    mark = f"IPUOPT_TEST_MARK_{os.getpid()}_{time.time_ns()}"
    r = run_cli("optimize", "mini-mlp", "--spec", "test64", "--grain", "box", "--k", "1", "--workers", "2",
                "--time-limit", "15", "--out", str(tmp_path / "run.json"), "--quiet", env={mark: "1"})
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "run.json").read_text())["optimize"]["cells"]["at_once"] == 2
    deadline = time.monotonic() + 10  # helpers see their pipe close and end on their own
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _marked(mark) == []


def test_a_time_limit_too_short_returns_the_compilers_program(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    r = run_cli("optimize", "mini-mlp", "--spec", "test64", "--grain", "box", "--time-limit", "0.5",
                "--out", str(out), "--quiet")
    assert r.returncode == 2
    assert [line for line in r.stderr.splitlines() if line.startswith("error")] == [
        next(line for line in r.stderr.splitlines() if "too short" in line)]
    doc = json.loads(out.read_text())
    assert doc["optimize"]["fallback"] and doc["optimize"]["finalists"] == []
    assert doc["layouts"] == {"gemm1": "4x16x1/1x1/interleaved", "gemm2": "4x4x4/1x4/interleaved"}
    baselines = doc["optimize"]["baselines"]
    assert doc["total_cycles"] == baselines["compiler (default layouts, first-fit, greedy)"]


def test_bad_workloads_and_specs_are_one_line_before_any_work() -> None:
    for args, says in ((["nosuch"], "nosuch"), (["mini-mlp", "--spec", "nosuch"], "--spec"),
                       (["mini-mlp", "--time-limit", "-1"], "--time-limit"),
                       (["mini-mlp", "--grain", "3"], "--grain")):
        r = run_cli("optimize", *args, "--quiet")
        assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def _start(args: list[str], cwd: Path) -> subprocess.Popen:
    return start_cli(*args, cwd=cwd)


def _wait_for_cells(folder: Path, n: int, proc: subprocess.Popen) -> int:
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and len(list(folder.glob("*.pickle"))) < n:
        time.sleep(0.1)
    assert proc.poll() is None, "the run ended before it could be disturbed"
    return len(list(folder.glob("*.pickle")))


ARGS = ["optimize", "mini-mlp", "--spec", "test64", "--grain", "box", "--k", "2", "--time-limit", "20"]


def test_a_worker_lost_mid_run_loses_nothing(tmp_path: Path) -> None:
    from distributed import Client, LocalCluster

    out = tmp_path / "run.json"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        pids = client.run(os.getpid)
        proc = _start([*ARGS, "--cluster", cluster.scheduler_address, "--out", str(out), "--json"], tmp_path)
        _wait_for_cells(tmp_path / "run.json.cells", 1, proc)
        os.kill(pids[sorted(pids)[0]], signal.SIGKILL)  # a worker lost mid-run
        stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-2000:]
    doc = json.loads(stdout)
    assert doc == json.loads(out.read_text()) and not doc.get("interrupted")
    assert all(doc["total_cycles"] <= cycles for cycles in doc["optimize"]["baselines"].values())
    assert doc["optimize"]["cells"]["ran"] >= 3 + 1  # finalists (one shared), placements, phases
    assert not (tmp_path / "run.json.cells").exists()  # complete: nothing left to resume


def test_ctrl_c_keeps_the_finished_cells_and_the_same_command_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    proc = _start([*ARGS, "--workers", "1", "--out", str(out), "--quiet"], tmp_path)
    _wait_for_cells(tmp_path / "run.json.cells", 2, proc)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert json.loads(out.read_text())["interrupted"] is True  # the best program so far, written whole
    kept = len(list((tmp_path / "run.json.cells").glob("*.pickle")))
    assert kept >= 2
    again = run_cli(*ARGS, "--workers", "1", "--out", str(out), "--json", "--quiet", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    cells = json.loads(again.stdout)["optimize"]["cells"]
    assert cells["reused"] >= kept and cells["at_once"] == 1
    assert not (tmp_path / "run.json.cells").exists()


def test_ctrl_c_at_a_terminal_keeps_the_best_program_and_no_worker_prints_a_traceback(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches the Dask workers too: they leave it to the command, which
    stops its stages (the bound runs in the command, not in a cell) and writes the best
    program so far."""
    out = tmp_path / "run.json"
    proc = start_cli(*ARGS, "--workers", "2", "--out", str(out), "--quiet", cwd=tmp_path, group=True)
    _wait_for_cells(tmp_path / "run.json.cells", 2, proc)  # finalists replayed: a program to keep
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr[-2000:]
    assert "interrupted: the program is the best found so far" in stderr
    assert json.loads(out.read_text())["interrupted"] is True


def test_an_unreachable_cluster_is_one_line() -> None:
    r = run_cli(*ARGS, "--cluster", "tcp://127.0.0.1:1", "--quiet")
    assert r.returncode == 2 and "--cluster" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_packed_cells_never_add_up_past_their_stage() -> None:
    """Dealt largest first to the least loaded runner, each runner's shares sum to at most 1."""
    import random

    from ipuopt.program.optimize import packed

    rng = random.Random(0)
    for _ in range(200):
        weights = [rng.randint(1, 50_000) for _ in range(rng.randint(1, 12))]
        at_once = rng.randint(1, 4)
        parts = packed(weights, at_once)
        loads = [0] * at_once  # replay the deal: Dask takes them in this order
        ends = []
        for i in sorted(range(len(weights)), key=lambda i: -weights[i]):
            j = loads.index(min(loads))
            loads[j] += parts[i] * 1_000_000
            ends.append(loads[j])
        assert max(ends) <= 1_000_000 + 1e-6 and all(0 < p <= 1 for p in parts)


def test_a_bound_stopped_by_its_share_keeps_the_program(monkeypatch) -> None:
    """The program bound's share can run out before its first round (its candidates are
    enumerated first); the program found so far must still be returned, not taken for an
    interrupt (it was: SigLIP attention at 900 s wrote nothing after 832 s)."""
    import ipuopt.program.optimize as opt
    from ipuopt.budget import Stopped
    from ipuopt.params import SolveParams
    from ipuopt.spec import load_spec
    from ipuopt.workloads.workload import load_workload

    def stopped(*args, **kwargs):
        raise Stopped

    monkeypatch.setattr(opt, "program_bound", stopped)
    doc = opt.optimize(load_workload("mini-mlp"), load_spec("test64"), "box", 2, SolveParams(20)).to_dict()
    assert "program_bound" not in doc and not doc.get("interrupted")
    assert doc["total_cycles"] <= min(doc["optimize"]["baselines"].values())
    assert doc["optimize"]["schedules"] == "auto"


def test_a_bound_gets_the_time_the_later_stages_cannot_use(monkeypatch) -> None:
    """When one replay took longer than what is left could hold for the placement's replays,
    and no phase's auto fits either, placement and auto are skipped, so the program bound
    gets the time left (not its 20%)."""
    import ipuopt.program.optimize as opt
    from ipuopt.budget import Stopped
    from ipuopt.params import SolveParams
    from ipuopt.spec import load_spec
    from ipuopt.workloads.workload import load_workload

    given: list[float] = []
    finalists = opt._finalists

    def slow(*args, **kwargs):  # replays as if each, and each of their phases, had taken 1,000 s
        return {k: {**v, "seconds": 1000.0, "run": {**v["run"], "boundaries": [
            {**b, "solve_s": 1000.0} for b in v["run"]["boundaries"]]}}
            for k, v in finalists(*args, **kwargs).items()}

    def bound(*args, budget, **kwargs):
        given.append(budget.limit())
        raise Stopped

    monkeypatch.setattr(opt, "_finalists", slow)
    monkeypatch.setattr(opt, "program_bound", bound)
    params = SolveParams(30)
    doc = opt.optimize(load_workload("mini-mlp"), load_spec("test64"), "box", 2, params).to_dict()
    assert given and given[0] > 0.5 * 30  # most of the time, not a 20% share (6 s)
    assert doc["optimize"]["schedules"] == "greedy" and not doc.get("interrupted")


def test_without_the_placement_the_quickest_phases_get_auto(monkeypatch) -> None:
    """Replays too slow for the placement stage (a fragment-level program) and a bound that
    leaves time: the phases whose replay was quickest get auto as generated, the slowest
    keeps the schedule its replay found (carried from the cell compactly, and rebuilt
    exactly), and the program is never worse than the best finalist's."""
    import ipuopt.program.optimize as opt
    from ipuopt.budget import Stopped
    from ipuopt.exchange.validate import validate
    from ipuopt.params import SolveParams
    from ipuopt.spec import load_spec
    from ipuopt.workloads.workload import load_workload

    finalists = opt._finalists
    kept: dict[str, object] = {}

    def slow(*args, **kwargs):  # the replay as if it had taken 1,000 s, its last phase 900 s of it
        out = {}
        for k, v in finalists(*args, **kwargs).items():
            last = len(v["run"]["boundaries"]) - 1
            out[k] = {**v, "seconds": 1000.0, "run": {**v["run"], "boundaries": [
                {**b, "solve_s": 900.0 if i == last else b["solve_s"]}
                for i, b in enumerate(v["run"]["boundaries"])]}}
            kept[k] = v
        return out

    def quick_bound(*args, **kwargs):  # the bound ends early (as on small workloads): time is left
        raise Stopped

    monkeypatch.setattr(opt, "_finalists", slow)
    monkeypatch.setattr(opt, "program_bound", quick_bound)
    spec = load_spec("test64")
    doc = opt.optimize(load_workload("mini-mlp"), spec, "box", 2, SolveParams(15)).to_dict()
    o = doc["optimize"]
    names = [b["phase"] for b in doc["boundaries"]]
    assert o["schedules"] == "auto" and o["auto_phases"] == sorted(o["auto_phases"], key=names.index)
    assert names[-1] not in o["auto_phases"] and len(o["auto_phases"]) == len(names) - 1
    assert doc["total_cycles"] <= min(f["greedy_cycles"] for f in o["finalists"])
    best = next(v for v in kept.values() if v["run"]["total_cycles"] == min(
        f["greedy_cycles"] for f in o["finalists"]))
    assert doc["boundaries"][-1]["horizon"] == best["run"]["boundaries"][-1]["horizon"]
    wl = load_workload("mini-mlp")
    gen = opt._generation("rebuilt", wl, spec, best["run"]["layouts"], "box")
    assert len(best["schedules"]) == len(gen.phases)
    for gp, packed, b in zip(gen.phases, best["schedules"], best["run"]["boundaries"], strict=True):
        res = opt._expanded(gp.phase.transfers, packed)
        report = validate(gp.phase, spec, res.solution)
        assert report.ok and res.value == b["horizon"]


def test_the_quickest_phases_are_those_that_fit_after_generating_the_plan() -> None:
    from ipuopt.program.optimize import AUTO_TIMES, _quickest

    replay = {"greedy": {"boundaries": [{"solve_s": 2.0}, {"solve_s": 1.0}, {"solve_s": 10.0}]},
              "schedules": [(), (), ()], "generate_s": 5.0}
    budget = 5.0 + AUTO_TIMES * 3.0  # generating, then the two quickest phases
    assert _quickest(replay, budget, 1) == [1, 0]
    assert _quickest(replay, budget - 1, 1) == [1]
    assert _quickest(replay, 5.0 + AUTO_TIMES * 13.0 / 2, 2) == [1, 0, 2]
    assert _quickest({**replay, "schedules": None}, 1e9, 2) == []
    assert _quickest({**replay, "generate_s": 1e9}, 1e6, 2) == []


def test_without_the_placement_the_bound_leaves_the_quickest_phases_their_auto(monkeypatch) -> None:
    """Replays too slow for the placement but with quick phases: the bound is given what is
    left less what their auto needs (`_auto_need`), and those phases then get auto."""
    import ipuopt.program.optimize as opt
    from ipuopt.budget import Stopped
    from ipuopt.params import SolveParams
    from ipuopt.spec import load_spec
    from ipuopt.workloads.workload import load_workload

    finalists = opt._finalists
    seen: dict[str, float] = {}

    def slow(*args, **kwargs):  # each replay as if it had taken 1,000 s, its phases 0.3 s each
        out = {}
        for k, v in finalists(*args, **kwargs).items():
            out[k] = {**v, "seconds": 1000.0, "run": {**v["run"], "boundaries": [
                {**b, "solve_s": 0.3} for b in v["run"]["boundaries"]]}}
            seen["need"] = opt._auto_need({**out[k], "greedy": out[k]["run"]}, 1e9, 2)
        return out

    whole = Budget(15)

    def bound(*args, budget, **kwargs):
        seen["given"], seen["left"] = budget.limit(), whole.left()
        raise Stopped

    monkeypatch.setattr(opt, "_finalists", slow)
    monkeypatch.setattr(opt, "program_bound", bound)
    doc = opt.optimize(load_workload("mini-mlp"), load_spec("test64"), "box", 2, SolveParams(15),
                       budget=whole).to_dict()
    assert 0 < seen["need"] < 0.5 * seen["left"]
    assert seen["given"] <= seen["left"] - seen["need"] + 0.5  # not all that is left
    assert doc["optimize"]["auto_phases"]


def test_auto_need_counts_the_generation_and_the_runners() -> None:
    from ipuopt.program.optimize import AUTO_TIMES, _auto_need

    replay = {"greedy": {"boundaries": [{"solve_s": 2.0}, {"solve_s": 1.0}, {"solve_s": 10.0}]},
              "schedules": [(), (), ()], "generate_s": 5.0}
    assert _auto_need(replay, 5.0 + AUTO_TIMES * 3.0, 1) == 5.0 + AUTO_TIMES * 3.0
    assert _auto_need(replay, 1e9, 2) == 5.0 + AUTO_TIMES * 13.0 / 2
    assert _auto_need(replay, 4.0, 1) == 0.0


def test_a_cell_on_a_worker_counts_its_generation_and_ends_by_the_commands_deadline(monkeypatch,
                                                                                   hand_clock) -> None:
    """On Dask a cell gets a grant (seconds, the command's deadline): generating the plan there
    is inside its seconds, and a cell that waited for its runner still ends by the deadline
    (attention's schedule cells ended past a 900 s limit before). On a clock of the test's own."""
    import ipuopt.program.optimize as opt

    seen: dict[str, float] = {}
    monkeypatch.setattr(opt, "_generation", lambda *a: (hand_clock.sleep(0.5), _Gen())[1])
    monkeypatch.setattr(opt, "readdress", lambda gen, gp, offsets: gp)

    def solve(phase, spec, solver, params, budget):
        seen["left"] = budget.left()
        return _Res()

    monkeypatch.setattr(opt, "solve", solve)
    opt._schedule("id", None, None, {}, None, {}, 0, SolveParams(), Grant(10.0, hand_clock.now + 60))
    assert seen["left"] == 9.5  # its 10 s, less the 0.5 s generation
    opt._schedule("id", None, None, {}, None, {}, 0, SolveParams(), Grant(10.0, hand_clock.now + 2))
    assert seen["left"] == 1.5  # the deadline comes before its seconds are up


class _Gen:
    phases = [None]


class _Res:
    interrupted = False


def test_the_final_replay_keeps_the_time_the_finalists_replay_spent_simulating() -> None:
    from ipuopt.program.optimize import CLOSING, REPLAY_MARGIN, REPLAY_RESERVE, _reserve

    assert _reserve({"replay_s": 40.0}, 300.0) == REPLAY_MARGIN * 40.0 + CLOSING  # fragment level
    assert _reserve({"replay_s": 0.1}, 300.0) == REPLAY_RESERVE * 300.0
    assert _reserve({}, 10.0) == max(2.0, CLOSING)


def test_only_the_placements_whose_replays_fit_are_replayed() -> None:
    """Attention's nine placements at ~75 s a replay took its schedules' time: auto ran on
    no phase and the answer was the greedy's (148,441 against 140,256 without them)."""
    from ipuopt.program.optimize import AUTO_TIMES, _replays_that_fit, _reserve

    finalist = {"seconds": 80.0, "replay_s": 10.0, "generate_s": 20.0, "schedules": [(), ()],
                "greedy": {"boundaries": [{"solve_s": 30.0}, {"solve_s": 20.0}]}}
    left = 500.0  # less the reserve and auto's need on every phase: 4 rounds of 80 s
    auto = 20.0 + AUTO_TIMES * 50.0 / 2
    assert (left - _reserve(finalist, left) - auto) // 80.0 == 4
    assert _replays_that_fit(finalist, 2, left) == 8
    assert _replays_that_fit(finalist, 2, 150.0) == 0
    assert _replays_that_fit(finalist, 2, None) is None


def test_the_api_function_is_not_hidden_by_a_module_of_its_name() -> None:
    """`ipuopt.optimize` stays the function once the module that runs it has been imported
    (it was `ipuopt/optimize.py`, whose import replaced the function on the package)."""
    import ipuopt
    import ipuopt.program.optimize  # noqa: F401

    assert callable(ipuopt.optimize) and callable(ipuopt.run) and callable(ipuopt.solve)


def _halve(x: int) -> int:
    if x % 2:
        raise ValueError(f"{x} is odd")
    return x // 2


def test_the_cell_engine_keeps_answers_and_lists_failures(tmp_path: Path) -> None:
    """The one engine of optimize and sweeps: answers kept by the store as they finish and
    reused by the next run; a cell that raises ends the run, or is listed with `failed` while
    the others go on, and nothing of it is kept."""
    import pytest

    from ipuopt.program.cells import Cell, Cells

    cells = [Cell(f"k{x}", _halve, (x,)) for x in (4, 3, 8)]
    failed: list = []
    with Cells(tmp_path / "c") as engine:
        assert engine.run("t", cells, failed) == [2, None, 4]
    assert [(i, str(e)) for i, e in failed] == [(1, "3 is odd")]
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["k4.pickle", "k8.pickle"]
    with Cells(tmp_path / "c") as engine:
        assert engine.run("t", cells[::2]) == [2, 4] and (engine.reused, engine.ran) == (2, 0)
        with pytest.raises(ValueError, match="3 is odd"):
            engine.run("t", cells)


def test_a_workers_heartbeat_after_the_scheduler_closed_prints_nothing() -> None:
    """Ctrl-C at a terminal closes the local cluster; a worker whose heartbeat meets the
    scheduler already gone logged a traceback (Dask's own), which once failed the test above.
    The worker's preload drops that record, and only that one."""
    import logging

    from ipuopt.sweeps.worker_setup import dask_setup

    before = signal.getsignal(signal.SIGINT)
    try:
        dask_setup(None)
    finally:
        signal.signal(signal.SIGINT, before)
    logger = logging.getLogger("distributed.worker")

    def shown(message: str) -> bool:
        record = logger.makeRecord(logger.name, logging.ERROR, "worker.py", 1, message, (), None)
        return bool(logger.filter(record))

    assert not shown("Failed to communicate with scheduler during heartbeat.")
    assert shown("Compute Failed")


def test_the_bound_steers_a_finalist_only_when_no_finalist_has_its_plan() -> None:
    from ipuopt.layout.program_bound import ProgramBound
    from ipuopt.program.optimize import _bound_plan

    def bound(plan: dict[str, str]) -> ProgramBound:
        return ProgramBound(100, 100, None, False, plan, [], {}, {})

    finalists = [{"choice": {"gemm1": "a", "gelu": "gemm1:a", "gemm2": "b"}}]
    assert _bound_plan(bound({"gemm1": "a", "gemm2": "b"}), finalists) is None
    assert _bound_plan(bound({"gemm1": "a", "gemm2": "c"}), finalists) == {"gemm1": "a", "gemm2": "c"}
    assert _bound_plan(bound({}), finalists) is None and _bound_plan(None, finalists) is None
