"""Exact backends beyond the hand cases: reproducibility, LNS validity, fallback."""

from __future__ import annotations

from conftest import ROOT

from ipuopt.exchange.phase import load_phase
from ipuopt.exchange.random_phase import random_phase
from ipuopt.exchange.solve import solve
from ipuopt.exchange.validate import validate
from ipuopt.spec import load_spec


def test_one_worker_and_seed_reproduce() -> None:
    phase, spec = load_phase(ROOT / "models" / "examples" / "small.yaml")
    params = {"time_limit": 0.5, "workers": 1, "seed": 7}
    a = solve(phase, spec, "cpsat", params).schedule
    b = solve(phase, spec, "cpsat", params).schedule
    assert (a.starts, a.widths, a.horizon) == (b.starts, b.widths, b.horizon)


def test_lns_valid_and_no_worse_than_greedy() -> None:
    spec = load_spec("test64")
    phase = random_phase(spec, 300, seed=3, max_fanout=3, p_dep=0.05)
    res = solve(phase, spec, "lns", {"time_limit": 4, "workers": 1, "seed": 0, "free": 40,
                                     "sub_time_limit": 0.5})
    s = res.schedule
    assert validate(phase, spec, s).ok
    assert s.horizon <= s.extra["greedy_horizon"]
    assert s.extra["lns_steps"] > 0
    assert [h for _, h in s.extra["lns_history"]] == sorted(
        (h for _, h in s.extra["lns_history"]), reverse=True)


def test_milp_cbc_backend_agrees_with_highs() -> None:
    spec = load_spec("test64")
    phase = random_phase(spec, 4, seed=11, tiles=5, max_words=16)
    h = solve(phase, spec, "milp", {"milp_solver": "highs", "time_limit": 30}).schedule
    c = solve(phase, spec, "milp", {"milp_solver": "cbc", "time_limit": 30}).schedule
    assert h.status == c.status == "optimal" and h.horizon == c.horizon


def test_milp_highs_survives_changing_workers() -> None:
    spec = load_spec("test64")
    phase = random_phase(spec, 3, seed=5, tiles=5, max_words=12)
    for workers in (1, 2, 1):
        res = solve(phase, spec, "milp", {"time_limit": 10, "workers": workers})
        assert res.schedule.status == "optimal"
