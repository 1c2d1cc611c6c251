"""The one solve kernel, on a made-up problem: its steps in order, whatever the problem."""

from __future__ import annotations

import pytest

from ipuopt import kernel
from ipuopt.budget import Budget
from ipuopt.errors import InputError
from ipuopt.params import SolveParams
from ipuopt.registry import COUNT, Method
from ipuopt.result import Result, Status


class _Door(kernel.Door):
    """A problem whose baseline is worth `greedy`, bounded by `bound`; it records what ran."""

    instance = "the instance"

    def __init__(self, greedy: int, bound: int, status: Status = Status.FEASIBLE) -> None:
        self.greedy, self.least, self.status, self.ran = greedy, bound, status, []

    def baseline(self, budget, progress):  # noqa: ANN001, ANN201
        self.ran.append("baseline")
        return Result(self.status, "base", self.greedy, solver="greedy")

    def bound(self, baseline, budget, progress):  # noqa: ANN001, ANN201
        self.ran.append("bound")
        baseline.bound = self.least

    def answer(self, baseline, found, interrupted):  # noqa: ANN001, ANN201
        self.ran.append("answer")
        best = min((r for r in (baseline, found) if r is not None and r.value is not None),
                   key=lambda r: r.value)  # never worse than the baseline
        return Result(best.status, best.solution, best.value, interrupted=interrupted,
                      reason=(found.extras.get("reason", "") if found is not None else ""))


def _method(door: _Door, value: int, *, stop: Budget | None = None, baseline: bool = False) -> Method:
    def run(inst, hint, params, budget, progress):  # noqa: ANN001, ANN202
        door.ran.append(f"method from {hint} on {inst}")
        if stop is not None:
            stop.request()  # Ctrl-C while the method runs
        return Result(Status.FEASIBLE, "found", value)

    return Method("exchange", "made-up", "heuristic", run, "", {"rounds": COUNT}, baseline=baseline)


def test_the_steps_in_order_and_the_answer_never_worse_than_the_baseline() -> None:
    door = _Door(greedy=10, bound=5)
    got = kernel.solve(door, _method(door, 7), SolveParams(5))
    assert door.ran == ["baseline", "bound", "method from base on the instance", "answer"]
    assert got.value == 7
    door = _Door(greedy=10, bound=5)
    assert kernel.solve(door, _method(door, 12), SolveParams(5)).value == 10  # the method did worse


def test_a_baseline_that_meets_its_bound_or_settles_the_problem_is_the_answer() -> None:
    door = _Door(greedy=5, bound=5)
    assert kernel.solve(door, _method(door, 4), SolveParams(5)).value == 5
    assert door.ran == ["baseline", "bound", "answer"]  # the method never ran
    door = _Door(greedy=9, bound=0, status=Status.INFEASIBLE)
    kernel.solve(door, _method(door, 4), SolveParams(5))
    assert door.ran == ["baseline", "answer"]  # nor the bounds, after a proof
    door = _Door(greedy=9, bound=0)
    kernel.solve(door, _method(door, 4, baseline=True), SolveParams(5))
    assert door.ran == ["baseline", "bound", "answer"]  # the baseline asked for is not run twice


def test_options_are_checked_before_any_work_and_no_time_means_no_method() -> None:
    door = _Door(greedy=10, bound=5)
    with pytest.raises(InputError, match="rounds"):
        kernel.solve(door, _method(door, 7), SolveParams(5, options={"rounds": -1}))
    assert door.ran == []
    got = kernel.solve(door, _method(door, 7), SolveParams(5), budget=Budget(0))
    assert door.ran == ["baseline", "bound", "answer"] and got.value == 10
    assert "no time left for made-up" in got.reason


def test_ctrl_c_in_the_method_is_carried_to_the_answer() -> None:
    door, budget = _Door(greedy=10, bound=5), Budget(60)
    got = kernel.solve(door, _method(door, 7, stop=budget), SolveParams(60), budget=budget)
    assert got.interrupted and got.value == 7
