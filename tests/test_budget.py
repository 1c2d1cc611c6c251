"""The one clock: shares, reserves, grants for cells (here or on a worker), the wall cut, Ctrl-C."""

from __future__ import annotations

import time

from conftest import row_and_columns

from ipuopt.budget import DEFAULT_TIME_LIMIT, Budget, Grant


def test_a_share_ends_by_its_seconds_and_never_past_its_parent() -> None:
    parent = Budget(10)
    child = parent.share(1)
    assert parent.left() > 8 and child.left() <= 1 and child.seconds <= 1
    assert parent.share(60).left() <= 10  # never past the parent
    assert parent.share(None).end == parent.end
    assert Budget().left() is None and Budget().limit() == DEFAULT_TIME_LIMIT
    assert Budget(0).is_set() and not Budget(100).is_set()


def test_ctrl_c_reaches_every_share_both_ways_and_a_reserve_one_way() -> None:
    parent = Budget(10)
    child, reserved = parent.share(1), parent.reserve(2)
    child.request()  # Ctrl-C in the child's solve reaches the parent, and back to its shares
    assert parent.interrupted and reserved.interrupted
    other = Budget(10)
    kept = other.reserve(2)
    kept.request()
    assert not other.interrupted


def test_a_firm_share_is_a_hard_end_and_a_soft_one_leaves_the_parents() -> None:
    """CP-SAT with one worker and a seed counts deterministic time and may outrun its share in
    wall time up to the hard end: auto's stages (soft) may, split's parts (firm) may not."""
    parent = Budget(100)
    firm, soft = parent.share(5), parent.share(5, firm=False)
    assert firm.hard_left() <= 5 and soft.hard_left() > 90 and soft.left() <= 5
    reserved = parent.reserve(30)
    assert 69 < reserved.left() <= 70 and 69 < reserved.hard_left() <= 70


def test_a_wall_cut_is_reported_to_every_budget_above() -> None:
    parent = Budget(10)
    child = parent.reserve(1).share(2)
    child.cut()
    assert parent.wall_cut and child.wall_cut
    assert not Budget(10).wall_cut


def test_a_grant_on_a_worker_ends_before_the_time_kept_for_the_replay() -> None:
    budget = Budget(100.0)
    remote = budget.grant(80.0, keep=30.0, local=False)
    assert remote.seconds == 80.0 and 68.0 < remote.deadline - time.time() <= 70.0  # 100 s less 30 kept
    assert budget.grant(80.0, local=False).deadline - time.time() > 99.0
    assert remote.parent is None and budget.grant(5.0).parent is not None  # only a local one hears Ctrl-C
    assert Grant(10.0, time.time() + 2).start().left() <= 2.0  # the deadline before its seconds


def test_a_local_grant_counts_its_seconds_from_its_own_start(hand_clock) -> None:
    """One runner runs its cells one after another: a cell's seconds start when it does, not
    when it was queued (with --workers 1 every phase after the first got no time for auto),
    and it still ends the time kept before the command's end."""
    budget = Budget(100.0)
    queued = budget.grant(5.0)
    hand_clock.sleep(10.0)  # behind another cell
    assert queued.start().left() == 5.0  # 0 if counted from the queueing
    assert budget.grant(5.0, keep=88.0).start().left() == 2.0  # 90 left, 88 kept
    budget.request()  # Ctrl-C reaches a queued cell
    assert budget.grant(5.0).start().is_set()


def test_a_stage_left_less_than_nothing_gets_no_time_instead_of_an_error() -> None:
    """On a slow machine the time left can fall below what a stage keeps for later: its share
    comes out negative and must mean "no time" (it once ended the command with "--time-limit:
    must be >= 0"), locally and on a worker."""
    budget = Budget(100.0)
    assert budget.grant(-14.6).start().left() == 0.0
    assert budget.grant(-14.6, keep=30.0, local=False).start().left() == 0.0
    assert budget.share(-3.0).left() == 0.0


def test_a_method_with_no_time_left_is_not_run(swap_method) -> None:
    """When the greedy and the bounds have used the whole limit (the command's imports took it
    on a loaded machine), the method is not run: the greedy's schedule is the answer, marked
    fallback with the reason."""
    from ipuopt.api import load_phase
    from ipuopt.exchange.solve import solve

    def not_run(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("cpsat ran with no time left")

    swap_method("exchange", "cpsat", not_run)
    phase, spec = load_phase("medium")
    got = solve(phase, spec, "cpsat", {"workers": 1, "seed": 0}, budget=Budget(0))
    assert got.status == "fallback" and got.value == got.extras["greedy_horizon"]
    assert "no time left for cpsat" in got.reason


def test_a_greedy_past_its_share_leaves_the_bounds_theirs(monkeypatch) -> None:
    """The greedy's first rule always completes, even past its share of the time limit; the
    bounds then still get theirs, counted from when they start: the group bound is found
    (on this phase it is above every other bound) where it used to be cut before it began."""
    from ipuopt.exchange import greedy as greedy_module
    from ipuopt.exchange import solve as stages
    from ipuopt.exchange.bounds import all_bounds
    from ipuopt.exchange.instance import Instance
    from ipuopt.params import SolveParams
    from ipuopt.spec import load_spec

    spec, limit, phase = load_spec("gc200"), 4.0, row_and_columns()
    found = {b.name: b.value for b in all_bounds(Instance(phase, spec), None)}
    assert found["group"] > max(v for k, v in found.items() if k != "group")
    greedy = greedy_module.best_greedy

    def slow(*args, **kwargs):  # as on a loaded machine: past the greedy's and the bounds' shares
        out = greedy(*args, **kwargs)
        until = time.monotonic() + (stages.GREEDY_SHARE + stages.BOUND_SHARE) * limit
        while time.monotonic() < until:
            time.sleep(0.01)
        return out

    monkeypatch.setattr(greedy_module, "best_greedy", slow)
    res = stages.solve(phase, spec, "greedy", SolveParams(limit, workers=1, seed=0))
    assert res.bound >= found["group"], (res.bound, found)
