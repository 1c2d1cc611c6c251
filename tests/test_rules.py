"""One hand-made phase per rule, each with the optimal horizon worked out by hand
(spec `hand` of conftest: tx_overhead 1, latency 2, rx_lead 1, format_switch 3,
write_hazard 2, rates 1 and 2 words/cycle). Greedy, validator, CP-SAT and MILP
must all agree with the hand figure."""

from __future__ import annotations

import pytest
from conftest import make_phase, make_spec

from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.solve import solve
from ipuopt.exchange.validate import validate

NEVER = "never"
CASES = {
    # d=10, arrival 1+2=3: 13.
    "single": (dict(), [dict(id="a", src=0, dst=[2], words=10, paired=NEVER)], 13),
    # paired halves the payload: 3 + 5.
    "paired-width": (dict(), [dict(id="a", src=0, dst=[2], words=10)], 8),
    # one transmit lane: second send starts at 11, arrives 14, ends 24.
    "tx-lane": (dict(), [dict(id="a", src=0, dst=[2], words=10, paired=NEVER),
                         dict(id="b", src=0, dst=[4], words=10, paired=NEVER)], 24),
    # one receive lane: second receive is reserved from 13, arrives 14, ends 24.
    "rx-lane": (dict(), [dict(id="a", src=0, dst=[4], words=10, paired=NEVER),
                         dict(id="b", src=2, dst=[4], words=10, paired=NEVER)], 24),
    # a paired send of tile 0 borrows tile 1's lane: 24 with paired required...
    "borrowed-required": (dict(), [dict(id="a", src=0, dst=[4], words=20, paired="required"),
                                   dict(id="b", src=1, dst=[6], words=10, paired=NEVER)], 24),
    # ...but 23 when `a` may go ordinary (20 cycles on its own lane, in parallel with b).
    "borrowed-allowed": (dict(), [dict(id="a", src=0, dst=[4], words=20),
                                  dict(id="b", src=1, dst=[6], words=10, paired=NEVER)], 23),
    # the multicast's receive on 4 collides with b's: 24.
    "multicast": (dict(), [dict(id="a", src=0, dst=[2, 4], words=10, paired=NEVER),
                           dict(id="b", src=6, dst=[4], words=10, paired=NEVER)], 24),
    # latency 2 + floor(0.5 * 6) = 5: 1 + 5 + 10 = 16.
    "route-latency": (dict(route_latency={"base": 2, "per_tile": 0.5}),
                      [dict(id="a", src=0, dst=[6], words=10, paired=NEVER)], 16),
    # tile 2 reads element 0 while a write into element 0 arrives: read first
    # ([1,11)), write from 11 (send at 8): 8 + 3 + 10 = 21.
    "memory-hazard": (dict(), [
        dict(id="w", src=0, dst=[2], words=10, dst_addr=0x100, paired=NEVER),
        dict(id="r", src=2, dst=[4], words=10, src_addr=0x0, paired=NEVER)], 21),
    # the same in different elements: no hazard, 13.
    "no-hazard": (dict(), [
        dict(id="w", src=0, dst=[2], words=10, dst_addr=0x1000, paired=NEVER),
        dict(id="r", src=2, dst=[4], words=10, src_addr=0x0, paired=NEVER)], 13),
    # paired receive [2,13), then ordinary needs 3 cycles more: reserved 16, arrives 17
    # (send 14), ends 27.
    "format-switch": (dict(), [dict(id="a", src=0, dst=[4], words=20, paired="required"),
                               dict(id="b", src=2, dst=[4], words=10, paired=NEVER)], 27),
    # with a zero format switch the same is 24.
    "format-switch-off": (dict(format_switch=0), [
        dict(id="a", src=0, dst=[4], words=20, paired="required"),
        dict(id="b", src=2, dst=[4], words=10, paired=NEVER)], 24),
    # b may start at 13 when a has completed: 13 + 3 + 5 = 21.
    "dependency": (dict(), [dict(id="a", src=0, dst=[2], words=10, paired=NEVER),
                            dict(id="b", src=4, dst=[6], words=5, paired=NEVER, after=["a"])], 21),
    # rx_lead 6 > overhead + latency: the receive lane is reserved before cycle 0 and the
    # second receive waits for it: a=[−3,13), b reserved from 13 arrives 19, ends 29.
    "rx-lead": (dict(rx_lead=6), [dict(id="a", src=0, dst=[4], words=10, paired=NEVER),
                                  dict(id="b", src=2, dst=[4], words=10, paired=NEVER)], 29),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("backend", ["greedy", "cpsat", "milp"])
def test_rule_optimum(case: str, backend: str) -> None:
    overrides, transfers, optimum = CASES[case]
    spec = make_spec(**overrides)
    phase = make_phase(spec, *transfers)
    res = solve(phase, spec, backend, {"time_limit": 20, "workers": 1, "seed": 0})
    assert validate(phase, spec, res.solution).ok
    assert res.value == optimum
    assert res.lower_bound <= optimum
    if backend != "greedy":
        assert res.status == "optimal"


def test_validator_rejects_hazard_and_reports_rule() -> None:
    spec = make_spec()
    phase = make_phase(spec, *CASES["memory-hazard"][1])
    bad = Schedule(starts={"w": 0, "r": 0}, widths={"w": "ordinary", "r": "ordinary"})
    report = validate(phase, spec, bad)
    assert [v.rule for v in report.violations] == ["memory-hazard"]
    v = report.violations[0]
    assert set(v.transfers) == {"w", "r"} and v.tile == 2
    good = Schedule(starts={"w": 8, "r": 0}, widths={"w": "ordinary", "r": "ordinary"})
    assert validate(phase, spec, good).ok


def test_validator_rejects_format_switch_and_width() -> None:
    spec = make_spec()
    phase = make_phase(spec, *CASES["format-switch"][1])
    tight = Schedule(starts={"a": 0, "b": 11}, widths={"a": "paired", "b": "ordinary"})
    assert [v.rule for v in validate(phase, spec, tight).violations] == ["format-switch"]
    ok = Schedule(starts={"a": 0, "b": 14}, widths={"a": "paired", "b": "ordinary"})
    assert validate(phase, spec, ok).ok
    wrong = Schedule(starts={"a": 0, "b": 14}, widths={"a": "ordinary", "b": "paired"})
    rules = [v.rule for v in validate(phase, spec, wrong).violations]
    assert rules.count("width") == 2


def test_validator_rejects_borrowed_lane_and_dependency() -> None:
    spec = make_spec()
    phase = make_phase(spec, *CASES["borrowed-required"][1])
    clash = Schedule(starts={"a": 0, "b": 5}, widths={"a": "paired", "b": "ordinary"})
    v = validate(phase, spec, clash).violations
    assert [x.rule for x in v] == ["tx-lane"] and v[0].tile == 1
    dep = make_phase(spec, *CASES["dependency"][1])
    early = Schedule(starts={"a": 0, "b": 12}, widths={"a": "ordinary", "b": "ordinary"})
    assert [x.rule for x in validate(dep, spec, early).violations] == ["dependency"]


def test_validator_recomputes_horizon() -> None:
    spec = make_spec()
    phase = make_phase(spec, *CASES["single"][1])
    wrong = Schedule(starts={"a": 0}, widths={"a": "ordinary"}, horizon=12)
    report = validate(phase, spec, wrong)
    assert report.horizon == 13 and [v.rule for v in report.violations] == ["horizon"]
