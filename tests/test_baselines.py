"""The reference compiler's scheduling habits as greedy options: each does what it says, the
validator accepts the result, and the default greedy uses none of them."""

from __future__ import annotations

import pytest
from conftest import run_cli

from ipuopt.exchange.greedy import greedy_schedule
from ipuopt.exchange.instance import horizon_of
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.solve import solve
from ipuopt.exchange.timing import PAIRED, phase_timings
from ipuopt.exchange.validate import validate
from ipuopt.registry import HABITS
from ipuopt.spec import load_spec
from ipuopt.workloads.phases import generate
from ipuopt.workloads.workload import load_workload


@pytest.fixture(scope="module")
def phases():
    spec = load_spec("test64")
    gen = generate(load_workload("mini-mlp"), spec)
    return spec, {gp.phase.name: gp.phase for gp in gen.phases}


def _receives(timings, starts, widths):
    """(tile, arrival, end) of every receive, per transfer id."""
    out = {}
    for tm in timings:
        t, w = tm.transfer, widths[tm.transfer.id]
        out[t.id] = [(x, starts[t.id] + a, starts[t.id] + a + tm.duration[w]) for x, a in tm.arrival.items()]
    return out


@pytest.mark.parametrize("name", ["gemm2-reduction", "gemm1-input"])
def test_each_habit_holds_and_is_valid(phases, name):
    spec, by_name = phases
    phase = by_name[name]
    timings = phase_timings(phase, spec)
    order = list(range(len(timings)))[::-1]  # any order: the habits hold whatever it is
    for habit in HABITS:
        starts, widths = greedy_schedule(phase, spec, timings=timings, order=order,
                                         habits=frozenset({habit}))
        sched = Schedule(starts, widths, horizon_of(timings, starts, widths), phase.name, spec.name)
        assert validate(phase, spec, sched).ok, habit
        got = _receives(timings, starts, widths)
        if habit == "release_after_receives":
            done: dict[int, int] = {}
            for i in order:
                t = timings[i].transfer
                assert starts[t.id] >= max(done.get(d, 0) for d in t.dst), t.id  # the receivers' last
                for x, _, end in got[t.id]:
                    done[x] = max(done.get(x, 0), end)
        elif habit == "paired_reserves_partner":
            ex = spec.exchange
            for tm in timings:
                t = tm.transfer
                if widths[t.id] != PAIRED:
                    continue
                s, e = starts[t.id], starts[t.id] + ex.tx_overhead + tm.duration[PAIRED]
                for other in timings:  # its own receive at its partner is what the lane carries
                    if other is tm:
                        continue
                    for x, a, b in got[other.transfer.id]:  # receive lane busy from a - rx_lead
                        assert x != tm.partner or b <= s or e <= a - ex.rx_lead, (t.id, other.transfer.id)
        else:
            eligible = [tm.transfer.id for tm in timings if PAIRED in tm.widths]
            assert eligible and all(widths[t] == PAIRED for t in eligible)


def test_habits_are_named_options_of_the_greedy_only(tmp_path, phases):
    spec, by_name = phases
    phase = by_name["gemm2-reduction"]
    plain = solve(phase, spec)
    held = solve(phase, spec, "greedy", {"release_after_receives": True})
    assert "habits" not in plain.extras
    assert held.extras["habits"] == ["release_after_receives"]
    assert validate(phase, spec, held.solution).ok
    r = run_cli("solve", "tiny", "--param", "release_after_receives=maybe", cwd=tmp_path)
    assert r.returncode == 2 and "true or false" in r.stderr
    r = run_cli("solve", "tiny", "--solver", "cpsat", "--param", "release_after_receives=true", cwd=tmp_path)
    assert r.returncode == 2 and "release_after_receives" in r.stderr
