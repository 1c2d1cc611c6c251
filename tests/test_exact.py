"""Exact backends beyond the hand cases: reproducibility, LNS validity, fallback."""

from __future__ import annotations

from conftest import ROOT

from ipuopt.exchange.phase import load_phase
from ipuopt.exchange.random_phase import random_phase
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.solve import solve
from ipuopt.exchange.validate import validate
from ipuopt.spec import load_spec


def test_one_worker_and_seed_reproduce() -> None:
    """A deterministic budget well within the wall-clock limit: the same schedule twice; a
    wall-clock limit that ends the search first says the run is not reproducible."""
    phase, spec = load_phase(ROOT / "models" / "examples" / "small.yaml")
    params = {"time_limit": 60, "workers": 1, "seed": 7, "max_deterministic_time": 0.1}
    a = solve(phase, spec, "cpsat", params)
    b = solve(phase, spec, "cpsat", params)
    assert a.solution == b.solution
    assert "not_reproducible" not in a.extras
    medium, spec = load_phase(ROOT / "models" / "examples" / "medium.yaml")
    cut = solve(medium, spec, "cpsat", {"time_limit": 1, "workers": 1, "seed": 7})
    assert cut.status != "optimal" and "wall-clock" in cut.extras["not_reproducible"]


def test_lns_valid_and_no_worse_than_greedy() -> None:
    spec = load_spec("test64")
    phase = random_phase(spec, 300, seed=3, max_fanout=3, p_dep=0.05)
    # a count of steps, not a time, ends it: on a slow or busy machine the greedy and the
    # bounds could take all of a short limit, and no step would run
    s = solve(phase, spec, "lns", {"time_limit": 120, "workers": 1, "seed": 0, "free": 40,
                                   "sub_time_limit": 0.5, "steps": 4})
    assert validate(phase, spec, s.solution).ok
    assert s.value <= s.extras["greedy_horizon"]
    assert s.extras["lns_steps"] > 0
    assert [h for _, h in s.extras["lns_history"]] == sorted(
        (h for _, h in s.extras["lns_history"]), reverse=True)
    fixed = {"time_limit": 30, "workers": 1, "seed": 0, "free": 40, "sub_time_limit": 0.2, "steps": 3}
    a, b = (solve(phase, spec, "lns", fixed) for _ in range(2))  # a fixed number of steps: reproducible
    assert a.extras["lns_steps"] == 3 and a.solution == b.solution


def test_milp_cbc_backend_agrees_with_highs() -> None:
    spec = load_spec("test64")
    phase = random_phase(spec, 4, seed=11, tiles=5, max_words=16)
    h = solve(phase, spec, "milp", {"milp_solver": "highs", "time_limit": 30})
    c = solve(phase, spec, "milp", {"milp_solver": "cbc", "time_limit": 30})
    assert h.status == c.status == "optimal" and h.value == c.value


def test_milp_highs_survives_changing_workers() -> None:
    spec = load_spec("test64")
    phase = random_phase(spec, 3, seed=5, tiles=5, max_words=12)
    for workers in (1, 2, 1):
        res = solve(phase, spec, "milp", {"time_limit": 10, "workers": workers})
        assert res.status == "optimal"


def _half_duplex_reduction(spec, groups: int = 8, parts: int = 4, words: int = 64):
    """All-to-all among `parts` tiles per group, each tile sending from and receiving into
    one memory element (the shape of a GEMM's reduction): the optimum interleaves them."""
    from ipuopt.exchange.phase import Phase, Transfer

    base = spec.regions[0].start
    ts = []
    for g in range(groups):
        tiles = [g * parts + p for p in range(parts)]
        for a in tiles:
            for b in tiles:
                if a != b:
                    ts.append(Transfer(f"t{len(ts)}", a, (b,), words, base, base + 4096))
    return Phase(spec_ref=spec.name, transfers=ts, name="reduction")


def test_iterated_and_auto_valid_and_no_worse_than_greedy() -> None:
    """Every schedule `solve` returns is validated there; here: never worse than the greedy,
    a fixed number of rounds reproducible with one worker and a seed, and the non-delay rule
    beats the list rules on half-duplex all-to-all groups."""
    from ipuopt.exchange.greedy import QUICK_RULES, greedy_schedule, horizon_of
    from ipuopt.exchange.timing import phase_timings

    spec = load_spec("test64")
    phase = random_phase(spec, 400, seed=5, max_fanout=3, p_dep=0.05)
    params = {"time_limit": 1.5, "workers": 1, "seed": 0}
    for backend, extra in (("iterated", {}), ("auto", {}), ("auto", {"rounds": 3})):
        s = solve(phase, spec, backend, {**params, **extra})
        assert validate(phase, spec, s.solution).ok and s.value <= s.extras["greedy_horizon"]
    fixed = {**params, "time_limit": 60, "rounds": 6}
    a, b = (solve(phase, spec, "iterated", fixed) for _ in range(2))
    assert a.extras["rounds"] == 6 and a.solution == b.solution
    red = _half_duplex_reduction(spec)
    tms = phase_timings(red, spec)
    timed = horizon_of(tms, *greedy_schedule(red, spec, "time", tms))
    listed = min(horizon_of(tms, *greedy_schedule(red, spec, r, tms)) for r in QUICK_RULES)
    assert validate(red, spec, Schedule(*greedy_schedule(red, spec, "time", tms))).ok
    assert timed < listed
    # eight alike groups: CP-SAT proves one at once (the whole phase: 263, unproven in 60 s)
    small = solve(red, spec, "auto", {"time_limit": 60, "workers": 1, "seed": 0})
    assert small.extras["methods"] == ["split"] and small.status == "optimal" and small.value <= timed


def test_large_phases_run_the_rules_their_time_allows() -> None:
    """Above QUICK_UP_TO transfers: one rule without a time limit; with one, every large rule
    that fits (the best kept), and no rule started that the slowest so far shows would end
    after `until`."""
    import time

    from ipuopt.budget import Budget
    from ipuopt.exchange.greedy import LARGE_RULES, QUICK_UP_TO, best_greedy, greedy_schedule
    from ipuopt.exchange.instance import Instance

    spec = load_spec("gc200")
    phase = random_phase(spec, QUICK_UP_TO + 1000, seed=2, p_dep=0.02)
    inst = Instance(phase, spec)
    horizon = {r: inst.horizon(greedy_schedule(phase, spec, r, inst.timings)) for r in LARGE_RULES}
    assert len(set(horizon.values())) > 1  # the rules differ here, so picking one matters
    *_, alone = best_greedy(inst)
    assert alone == LARGE_RULES[0]
    stop = Budget()
    *found, rule = best_greedy(inst, stop=stop, until=time.monotonic() + 600)
    assert inst.horizon(found) == min(horizon.values()) and horizon[rule] == min(horizon.values())
    assert not stop.wall_cut
    stop = Budget()
    *_, first = best_greedy(inst, stop=stop, until=time.monotonic() + 0.01)
    assert first == LARGE_RULES[0] and stop.wall_cut
    *_, quick = best_greedy(inst, stop=Budget(), until=time.monotonic() + 600, quick=True)
    assert quick == LARGE_RULES[0]
    s = solve(phase, spec, "greedy", {"time_limit": 600, "quick": True})
    assert s.extras["greedy_rule"] == LARGE_RULES[0]


def test_rotate_sends_an_all_to_all_in_waves() -> None:
    """Every tile sending one payload to every other: taken in waves (each tile's k-th send
    to the tile k+1 further on) the lanes stay busy back to back and the greedy meets the
    endpoint bound, where the other list rules queue receives and end a third later; the
    default greedy, which runs every rule, finds it."""
    from ipuopt.exchange.bounds import all_bounds, best_bound
    from ipuopt.exchange.greedy import QUICK_RULES, best_greedy, greedy_schedule
    from ipuopt.exchange.instance import Instance
    from ipuopt.exchange.phase import Phase, Transfer

    spec = load_spec("test64")
    for k in (6, 12):
        phase = Phase(spec_ref=spec.name, name="all-to-all", transfers=[
            Transfer(id=f"t{a}-{b}", src=a, dst=(b,), words=32, paired="never")
            for a in range(k) for b in range(k) if a != b])
        inst = Instance(phase, spec)
        bound = best_bound(all_bounds(inst, None)).value
        horizon = {r: inst.horizon(greedy_schedule(phase, spec, r, inst.timings)) for r in QUICK_RULES}
        assert horizon["rotate"] == bound
        assert min(h for r, h in horizon.items() if r != "rotate") > bound
        *found, rule = best_greedy(inst)
        assert inst.horizon(found) == bound and rule.startswith("rotate")


def test_the_compiled_greedy_decides_as_the_python_greedy() -> None:
    """Every list rule, width policy and habit it runs: the same start and width for every
    transfer, on every shipped spec (ties included), from the three engines: the compiled one,
    its Python twin on the same packed arrays (what runs without a C compiler) and the list
    greedy."""
    import itertools

    import numpy as np

    from ipuopt.exchange import packed
    from ipuopt.exchange.greedy import QUICK_RULES, greedy_schedule, priority_order
    from ipuopt.exchange.instance import Instance
    from ipuopt.spec import spec_names

    assert packed.compiled(), "the package was built without its compiled greedy"
    habits = (frozenset(), frozenset({"paired_reserves_partner"}), frozenset({"pair_whenever_possible"}))
    for name in spec_names():
        spec = load_spec(name)
        phase = random_phase(spec, 120, seed=len(name), tiles=min(spec.tiles, 10), p_dep=0.2)
        tms = Instance(phase, spec).timings
        for rule, aware, credit, habit in itertools.product(QUICK_RULES, (False, True), (0.0, 0.5), habits):
            kw = {"borrow_aware": aware, "paired_credit": credit, "habits": habit}
            compiled = greedy_schedule(phase, spec, rule, tms, **kw)
            assert compiled == greedy_schedule(phase, spec, rule, tms, compiled=False, **kw), (name, rule, kw)
            pk = packed.packed(tms, spec, habit)
            keys = np.empty(len(tms))
            keys[priority_order(tms, spec, rule)] = np.arange(len(tms))
            twin = pk.solution(*pk.place(keys, aware, credit, compiled=False), tms)
            assert twin == compiled, (name, rule, kw)


def test_a_phase_mirrored_in_time_schedules_it_backwards() -> None:
    """A list schedule of the mirrored phase, read from its end, passes the validator with the
    same horizon; the compiled and Python engines agree on the mirror too."""
    import numpy as np

    from ipuopt.exchange.instance import Instance
    from ipuopt.exchange.packed import packed

    for name, n in (("gc200", 600), ("test64", 300)):
        spec = load_spec(name)
        phase = random_phase(spec, n, seed=3, tiles=24, p_dep=0.2)
        inst = Instance(phase, spec)
        mirror = packed(inst.timings, spec).mirrored()
        keys = np.random.default_rng(0).random(n)
        rs, slots = mirror.place(keys)
        assert all(np.array_equal(a, b) for a, b in zip((rs, slots), mirror.place(keys, compiled=False),
                                                        strict=True))
        rend = rs + mirror.end(slots)
        schedule = mirror.solution(rend.max() - rend, slots, inst.timings)
        report = validate(phase, spec, Schedule(*schedule))
        assert report.ok and report.horizon == rend.max(), report.violations[:3]


def test_justify_improves_a_list_schedule_and_repeats_itself() -> None:
    """Forward-backward passes: valid, never worse than the greedy they start from, better on
    a dense random phase (where list schedules leave slack), and the same schedule for the
    same number of passes. Six passes are asked of the method as auto asks it (through
    `solve` the phase's bounds come first: 17 s of clique search on this phase)."""
    from ipuopt.budget import Budget
    from ipuopt.exchange.greedy import best_greedy
    from ipuopt.exchange.instance import Instance
    from ipuopt.exchange.justify import solve_justify
    from ipuopt.params import SolveParams

    spec = load_spec("gc200")
    phase = random_phase(spec, 500, seed=0, tiles=12)
    inst = Instance(phase, spec)
    hint = best_greedy(inst)[:2]
    six = SolveParams.of({"workers": 1, "passes": 6})  # the passes end it, not the clock
    a, b = (solve_justify(inst, hint, six, Budget(120)) for _ in range(2))
    assert validate(phase, spec, Schedule(*a.solution)).ok and a.extras["passes"] == 6
    assert a.value < inst.horizon(hint) and a.solution == b.solution
    settled = solve(phase, spec, "justify", {"time_limit": 3, "workers": 1})  # until it settles
    assert validate(phase, spec, settled.solution).ok and settled.value <= a.value
