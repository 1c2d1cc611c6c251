"""The CP-SAT proof stage: the time-reversal symmetry break and the decision questions."""

from __future__ import annotations

import random

from conftest import ROOT
from ortools.sat.python import cp_model

from ipuopt.exchange.cpsat import _Probes, build_model, mirrored, time_symmetric
from ipuopt.exchange.greedy import greedy_schedule
from ipuopt.exchange.openshop import openshop_phase, read_openshop
from ipuopt.exchange.phase import Phase, Transfer, load_phase
from ipuopt.exchange.random_phase import random_phase
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.solve import solve
from ipuopt.exchange.timing import phase_timings
from ipuopt.exchange.validate import validate
from ipuopt.spec import load_spec


def _optimum(spec, phase: Phase, break_mirror: bool) -> int:
    timings = phase_timings(phase, spec)
    em = build_model(spec, timings, upper=sum(tm.end_offset(tm.widths[0]) for tm in timings),
                     break_mirror=break_mirror)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 30
    assert solver.solve(em.model) == cp_model.OPTIMAL
    return int(solver.objective_value)


def _random_openshop(rng: random.Random, n: int, m: int) -> Phase:
    return openshop_phase([[rng.randint(1, 30) for _ in range(m)] for _ in range(n)], "r")


def test_symmetry_holds_only_where_time_runs_both_ways() -> None:
    spec = load_spec("openshop")
    phase = _random_openshop(random.Random(0), 3, 3)
    assert time_symmetric(spec, phase_timings(phase, spec))
    with_dep = Phase(spec_ref="openshop", transfers=[
        Transfer(id="a", src=0, dst=(2,), words=3), Transfer(id="b", src=1, dst=(2,), words=4, after=("a",))])
    assert not time_symmetric(spec, phase_timings(with_dep, spec))
    gc200 = load_spec("gc200")  # overhead, latency, lead and hazards break the symmetry
    assert not time_symmetric(gc200, phase_timings(random_phase(gc200, 20, seed=1), gc200))
    assert "mirror_broken" not in build_model(gc200, phase_timings(random_phase(gc200, 20, seed=1), gc200),
                                              upper=10_000).stats


def test_mirror_break_keeps_the_optimum() -> None:
    """On random open shops the optimum with one of each mirror pair kept is the optimum."""
    spec = load_spec("openshop")
    rng = random.Random(4)
    for _ in range(12):
        phase = _random_openshop(rng, rng.randint(2, 4), rng.randint(2, 4))
        assert _optimum(spec, phase, True) == _optimum(spec, phase, False)


def test_a_mirrored_schedule_is_a_schedule() -> None:
    spec = load_spec("openshop")
    phase = openshop_phase(read_openshop(ROOT / "tests" / "data" / "openshop" / "ta4x4_1os.txt"))
    timings = phase_timings(phase, spec)
    starts, widths = greedy_schedule(phase, spec)
    back = mirrored(timings, (starts, widths))
    assert back[0] != starts
    for s in ((starts, widths), back):
        assert validate(phase, spec, Schedule(*s)).ok


def test_probes_ask_the_bound_first_then_bisect() -> None:
    p = _Probes(100, 120)
    assert p.next(10.0) == (100, 10.0 * _Probes.FIRST_SHARE)
    p.answer(100, cp_model.INFEASIBLE, None)
    assert p.lo == 101
    target, _ = p.next(10.0)
    assert target == (101 + 119) // 2
    p.answer(target, cp_model.OPTIMAL, 108)  # a schedule below the question
    assert p.hi == 108
    opened, _ = p.next(10.0)
    p.answer(opened, cp_model.UNKNOWN, None)  # left open: the next question is nearer hi
    again, _ = p.next(10.0)
    assert opened < again <= 107
    p.answer(again, cp_model.INFEASIBLE, None)
    while p.lo < p.hi:
        target, share = p.next(10.0)
        if target == p.hi - 1:
            assert share == 10.0  # the last question gets all the time left
        p.answer(target, cp_model.INFEASIBLE, None)
    assert p.lo == p.hi == 108
    assert [q for q, a in p.log if a == "open"] == [opened]
    assert p.refuted == len(p.log) - 2


def test_decision_questions_prove_what_optimising_left_open() -> None:
    """With almost no time to optimise, the decision questions find and prove the optimum
    (Brucker et al. j5-per0-0: 1,042 above its load bound 1,000): the bound asked first,
    refuted, then bisection; the schedule kept is valid."""
    spec = load_spec("openshop")
    phase = openshop_phase(read_openshop(ROOT / "tests" / "data" / "openshop" / "j5-per0-0.txt"))
    for workers in (1, 2):
        r = solve(phase, spec, "cpsat", {"time_limit": 30, "workers": workers, "seed": 0,
                                         "prove_split": 0.001})
        assert r.status == "optimal" and r.value == r.bound == 1042
        assert r.extras["probes"][0] == [1000, "none"]
        assert r.extras["probes"][-1] in ([1042, 1042], [1041, "none"])
        assert validate(phase, spec, r.solution).ok


def test_open_shops_optimise_a_fifth_of_the_time_other_phases_half() -> None:
    """Where the mirror is broken (an open shop) the questions get 80% of the time by default;
    any other phase, and a given `prove_split`, as before."""
    shop = openshop_phase(read_openshop(ROOT / "tests" / "data" / "openshop" / "ta4x4_1os.txt"))
    assert solve(shop, load_spec("openshop"), "cpsat", {"time_limit": 5}).extras["prove_split"] == 0.2
    assert solve(shop, load_spec("openshop"), "cpsat", {"time_limit": 5, "prove_split": 0.7}
                 ).extras["prove_split"] == 0.7
    tiny, spec = load_phase(ROOT / "models" / "examples" / "tiny.yaml")
    assert solve(tiny, spec, "cpsat", {"time_limit": 5}).extras["prove_split"] == 0.5


def test_probes_end_when_the_last_question_stays_open() -> None:
    p = _Probes(10, 12)
    p.answer(10, cp_model.INFEASIBLE, None)
    assert p.next(5.0) == (11, 5.0) and not p.done
    p.answer(11, cp_model.UNKNOWN, None)
    assert p.done and (p.lo, p.hi) == (11, 12)


def test_milp_lane_chains_keep_the_optimum() -> None:
    """The lane-chain rows are valid: on dense phases (4 tiles, multicast, pairs, addresses,
    dependencies; and an open shop) the MILP with them proves CP-SAT's optimum, and the rows
    are there."""
    from ipuopt.exchange.milp import build_milp

    cases = [(load_spec("gc200"), random_phase(load_spec("gc200"), 9, seed=s, tiles=4, max_words=80,
                                               max_fanout=2, p_dep=0.15)) for s in range(4)]
    cases.append((load_spec("openshop"), _random_openshop(random.Random(2), 3, 4)))
    for spec, phase in cases:
        params = {"time_limit": 30, "workers": 1, "seed": 0}
        cp = solve(phase, spec, "cpsat", params)
        for backend in ("highs", "cbc"):
            mi = solve(phase, spec, "milp", {**params, "milp_solver": backend})
            assert cp.status == mi.status == "optimal" and cp.value == mi.value
            assert validate(phase, spec, mi.solution).ok
        prob = build_milp(spec, phase_timings(phase, spec), cp.extras["greedy_horizon"], 0)[0]
        rows = prob.constraints() if callable(prob.constraints) else prob.constraints  # PuLP 3 or 2
        assert any((getattr(row, "name", row) or "").startswith("chain_") for row in rows)


def test_milp_warm_start_is_the_hint_and_meets_every_row() -> None:
    """The greedy schedule handed to HiGHS and CBC as a start satisfies every row of the
    model (big-M pairs, lane chains, dependencies, horizon), so the solvers take it as their
    first incumbent; with it the MILP still proves CP-SAT's optimum."""
    from ipuopt.exchange.greedy import best_greedy
    from ipuopt.exchange.instance import Instance
    from ipuopt.exchange.milp import build_milp, warm_start

    spec = load_spec("gc200")
    for seed in range(3):
        phase = random_phase(spec, 9, seed=seed, tiles=4, max_words=80, max_fanout=2, p_dep=0.15)
        inst = Instance(phase, spec)
        hint = best_greedy(inst)[:2]
        upper = inst.horizon(hint)
        prob, starts, paired, horizon, order = build_milp(spec, inst.timings, upper, 0)
        warm_start(spec, inst.timings, hint, starts, paired, horizon, order)
        assert horizon.varValue == upper and all(starts[t.id].varValue == hint[0][t.id]
                                                 for t in phase.transfers)
        assert prob.valid(eps=1e-6), f"seed {seed}: the hint breaks a row"
        at_once = {t.id: 0 for t in phase.transfers}  # sends of one tile overlap: rows object
        warm_start(spec, inst.timings, (at_once, hint[1]), starts, paired, horizon, order)
        assert not prob.valid(eps=1e-6)


def test_probes_end_when_the_last_question_stays_open_after_the_incumbent_fell() -> None:
    p = _Probes(0, 10)
    p.answer(0, cp_model.INFEASIBLE, None)
    p.answer(8, cp_model.UNKNOWN, None)
    p.answer(9, cp_model.OPTIMAL, 7)  # the incumbent falls below the question left open
    target, share = p.next(3.0)
    assert (target, share) == (6, 3.0) and not p.done
    p.answer(target, cp_model.UNKNOWN, None)
    assert p.done


def test_a_race_keeps_to_the_wall_clock() -> None:
    """Single-worker searches with seeds would take a deterministic limit (slower than the
    clock here); raced for a caller that did not ask for reproducibility they keep to seconds."""
    import time

    from ipuopt.backends.cpsat import race
    from ipuopt.budget import Budget
    from ipuopt.params import SolveParams

    spec = load_spec("openshop")
    phase = openshop_phase(read_openshop(ROOT / "tests" / "data" / "openshop" / "j5-per0-0.txt"))
    em = build_model(spec, phase_timings(phase, spec), upper=1041, lower=1000)
    em.model.clear_objective()
    t0 = time.perf_counter()
    _, code, solver = race([em.model], SolveParams(workers=2, seed=0), Budget(), 0.3)
    assert time.perf_counter() - t0 < 2.0
    assert solver.parameters.max_time_in_seconds <= 0.3 + 1e-9


def test_a_stop_asked_before_the_search_began_is_heard() -> None:
    """CP-SAT ignores stop_search() called before solve(): a Ctrl-C that lands between making
    a solver and starting it must still end that search at once."""
    import time

    from ipuopt.backends.cpsat import new_solver
    from ipuopt.backends.cpsat import solve as cpsat_solve
    from ipuopt.budget import Budget
    from ipuopt.params import SolveParams

    spec = load_spec("openshop")
    phase = openshop_phase(read_openshop(ROOT / "tests" / "data" / "openshop" / "j5-per0-0.txt"))
    em = build_model(spec, phase_timings(phase, spec), upper=1041, lower=1000)
    budget = Budget()
    solver = new_solver(SolveParams(workers=1), budget, 20.0)
    budget.request()
    t0 = time.perf_counter()
    assert cpsat_solve(em.model, solver) == cp_model.UNKNOWN
    assert time.perf_counter() - t0 < 1.0
