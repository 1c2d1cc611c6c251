"""A phase that falls apart, solved part by part (`split`): the parts share nothing, copies of
one part take one schedule, every schedule passes the validator, and the bound a part proves
stays below the whole phase's proven optimum."""

from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import run_cli

from ipuopt import api
from ipuopt.budget import Budget
from ipuopt.exchange.auto import pipeline, solve_auto
from ipuopt.exchange.bounds import all_bounds, best_bound
from ipuopt.exchange.conflicts import parts
from ipuopt.exchange.cpsat import solve_cpsat
from ipuopt.exchange.greedy import best_greedy
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.phase import Phase
from ipuopt.exchange.random_phase import random_phase
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.split import part_bound, solve_split
from ipuopt.exchange.validate import validate
from ipuopt.params import SolveParams
from ipuopt.result import Status
from ipuopt.spec import load_spec

SPEC = load_spec("test64")


def _copies(seed: int, n: int, copies: int, tiles: int = 4, p_dep: float = 0.2, kinds: int = 1) -> Phase:
    """`copies` copies of each of `kinds` random phases of `n` transfers among `tiles` tiles
    (seeds from `seed`), each copy on tiles of its own (shifted by an even number: the pairs
    stay pairs)."""
    out = []
    for c in range(copies * kinds):
        one = random_phase(SPEC, n, seed=seed + c % kinds, tiles=tiles, p_dep=p_dep)
        shift = c * 2 * tiles
        out += [dataclasses.replace(t, id=f"c{c}.{t.id}", src=t.src + shift,
                                    dst=tuple(x + shift for x in t.dst),
                                    after=tuple(f"c{c}.{a}" for a in t.after)) for t in one.transfers]
    return Phase(spec_ref=SPEC.name, transfers=out, name=f"copies-{seed}")


def _keys(inst: Instance, i: int) -> set[tuple]:
    tm = inst.timings[i]
    return {("el", *o.key) if o.kind in ("rd", "wr") else (o.kind, *o.key)
            for w in tm.widths for o in tm.occupancies(w, SPEC)}


def test_parts_share_no_lane_element_or_dependency() -> None:
    for seed in range(3):
        inst = Instance(random_phase(SPEC, 60, seed=seed, tiles=24, p_dep=0.1), SPEC)
        found = parts(inst.timings)
        assert sorted(i for p in found for i in p) == list(range(len(inst.timings)))
        held = [set().union(*(_keys(inst, i) for i in p)) for p in found]
        where = {inst.timings[i].transfer.id: k for k, p in enumerate(found) for i in p}
        for a in range(len(found)):
            for b in range(a + 1, len(found)):
                assert not held[a] & held[b], (seed, held[a] & held[b])
        for tm in inst.timings:
            assert all(where[d] == where[tm.transfer.id] for d in tm.transfer.after)
    # copies on disjoint tiles fall apart, one part each
    inst = Instance(_copies(0, 8, 5), SPEC)
    assert len(inst.parts) >= 5


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_split_is_valid_and_its_bound_below_the_proven_optimum(seed: int) -> None:
    phase = _copies(seed, 7, 4)
    inst = Instance(phase, SPEC)
    inst.bound = best_bound(all_bounds(inst, None)).value
    greedy = best_greedy(inst)[:2]
    params = SolveParams(workers=1, seed=0)
    found = solve_split(inst, greedy, params, Budget(20))
    assert found.value <= inst.horizon(greedy)
    assert validate(phase, SPEC, Schedule(*found.solution)).horizon == found.value
    whole = solve_cpsat(inst, greedy, SolveParams(workers=1, seed=0), Budget(60))
    assert whole.status == Status.OPTIMAL, "the whole phase is small enough to prove"
    assert found.bound <= whole.value
    if found.status == Status.OPTIMAL:
        assert found.value == whole.value


def test_alike_parts_are_solved_once_and_take_one_schedule() -> None:
    phase = _copies(3, 8, 3, kinds=2)  # six parts of two kinds
    inst = Instance(phase, SPEC)
    greedy = best_greedy(inst)[:2]
    calls = []

    def inner(sub, hint, params, budget, progress):
        calls.append(len(sub.timings))
        return solve_auto(sub, hint, params, budget, progress)

    found = solve_split(inst, greedy, SolveParams(workers=1, seed=0), Budget(20), inner=inner)
    assert (found.extras["parts"], found.extras["kinds"]) == (6, 2) and len(calls) <= 2
    assert found.status != Status.FALLBACK  # the greedy's schedule was improved upon
    starts, widths = found.solution  # the copies of a kind solved: one schedule for all three

    def alike(k: int) -> bool:
        return len({tuple((starts[t.id], widths[t.id]) for t in phase.transfers if t.id.startswith(f"c{c}."))
                    for c in range(k, 6, 2)}) == 1

    assert found.extras["kinds_solved"] >= 1 and sum(map(alike, (0, 1))) >= found.extras["kinds_solved"]


@pytest.mark.parametrize("seed", [0, 1])
def test_a_parts_proven_bound_bounds_the_phase(seed: int, tmp_path) -> None:
    """`part`: CP-SAT on one part of the kind that ends last in its greedy schedule, never
    above the whole phase's proven optimum (a part is a sub-phase); `ipuopt bounds --parts`
    and the API give it with the named bounds."""
    phase = _copies(seed, 7, 4, kinds=2)
    inst = Instance(phase, SPEC)
    params = SolveParams(workers=1, seed=0)
    part = part_bound(inst, params, Budget(20))
    whole = solve_cpsat(inst, best_greedy(inst)[:2], params, Budget(60))
    assert whole.status == Status.OPTIMAL, "the whole phase is small enough to prove"
    assert 0 < part.value <= whole.value
    path = tmp_path / "copies.json"
    path.write_text(json.dumps(phase.to_dict()))
    r = run_cli("bounds", str(path), "--parts", "--time-limit", "20", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    by_name = {b["name"]: b["value"] for b in out["bounds"]}
    assert 0 < by_name["part"] <= whole.value and out["best"] == max(by_name.values())
    from_api = {b.name: b.value for b in api.bounds((phase, SPEC), parts=20)}
    assert 0 < from_api["part"] <= whole.value


def test_a_phase_of_one_part_has_no_part_bound() -> None:
    inst = Instance(random_phase(SPEC, 12, seed=0, tiles=4), SPEC)
    assert len(inst.parts) == 1
    assert part_bound(inst, SolveParams(), Budget(5)).value == 0


def test_auto_splits_a_large_phase_that_falls_apart_first() -> None:
    inst = Instance(_copies(0, 8, 40, p_dep=0.0), SPEC)
    assert len(inst.timings) > 300 and len(inst.parts) > 1
    assert pipeline(inst, 60.0)[0].name == "split"
    whole = Instance(random_phase(SPEC, 400, seed=0, tiles=64), SPEC)
    assert len(whole.parts) == 1 and all(s.name != "split" for s in pipeline(whole, 60.0))


def test_one_part_is_left_to_the_other_stages() -> None:
    inst = Instance(random_phase(SPEC, 40, seed=0, tiles=4), SPEC)
    greedy = best_greedy(inst)[:2]
    found = solve_split(inst, greedy, SolveParams(), Budget(5))
    assert found.status == Status.FALLBACK and found.extras["reason"] == "one part"


def test_a_parts_bounds_end_when_the_stop_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while split prices a part: the part's slow bound searches hear it (they did not,
    and a part's clique search held the exit 3.5 s on a 100,000-fragment reduction), and no
    part starts after it."""
    import ipuopt.exchange.split as split_module

    budget = Budget(20)
    heard = []

    def bounds(sub: Instance, enough):  # noqa: ANN001, ANN202 (Ctrl-C comes while a part is priced)
        before = enough is not None and enough()
        budget.request()
        heard.append((before, enough is not None and enough()))
        return all_bounds(sub, enough)

    monkeypatch.setattr(split_module, "all_bounds", bounds)
    inst = Instance(_copies(0, 7, 4, kinds=2), SPEC)
    inst.bound = 0
    solve_split(inst, best_greedy(inst)[:2], SolveParams(workers=1, seed=0), budget)
    assert heard == [(False, True)]
