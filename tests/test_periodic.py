"""The periodic solver: a reduction's rounds in one repeating pattern."""

from __future__ import annotations

from ipuopt.budget import Budget
from ipuopt.exchange.bounds import all_bounds, best_bound
from ipuopt.exchange.greedy import best_greedy
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.periodic import _least_pattern, _streams, solve_periodic
from ipuopt.exchange.phase import Phase, Transfer
from ipuopt.exchange.random_phase import random_phase
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.validate import validate
from ipuopt.params import SolveParams
from ipuopt.spec import load_spec

PARAMS = {"time_limit": 20, "workers": 1, "seed": 0}


def reduce_scatter(tiles: tuple[int, ...], parts: int, words: int = 64) -> Phase:
    """Every tile sends `parts` fragments to every other, read from and written to one 32 KiB
    memory element per tile (so sends and receives of a tile serialize), as the reference's
    partial sums do."""
    out = []
    for a in tiles:
        for b in tiles:
            for k in range(parts if a != b else 0):
                slot = (tiles.index(b) * parts + k) * words * 4
                into = (tiles.index(a) * parts + k) * words * 4
                out.append(Transfer(id=f"{a}-{b}.{k}", src=a, dst=(b,), words=words,
                                    src_addr=0x88000 + slot, dst_addr=0x8c000 + into))
    return Phase(spec_ref="gc200", transfers=out, name="reduce-scatter")


def _instance(phase: Phase) -> Instance:
    inst = Instance(phase, load_spec("gc200"))
    inst.bound = best_bound(all_bounds(inst, None)).value
    return inst


def test_a_pattern_repeated_over_every_round_is_a_schedule() -> None:
    """The pattern holds for the rounds that can meet, so for all of them: every round at
    r * P with the pattern's starts and widths passes the validator."""
    inst = _instance(reduce_scatter((0, 30, 60), 8))
    kinds = _streams(inst.timings)
    assert len(kinds) == 6 and {len(k) for k in kinds} == {8}
    (starts, widths), period = _least_pattern(inst.spec, kinds, 8, SolveParams.of(PARAMS), Budget(), 20, None)
    schedule = Schedule({tm.transfer.id: starts[c] + r * period for c, kind in enumerate(kinds)
                         for r, tm in enumerate(kind)},
                        {tm.transfer.id: widths[c] for c, kind in enumerate(kinds) for tm in kind})
    report = validate(inst.phase, inst.spec, schedule)
    assert report.ok, report.violations[:3]


def test_periodic_beats_the_greedy_on_a_reduction() -> None:
    one, other = reduce_scatter((0, 30, 60), 8), reduce_scatter((1, 31, 61), 8)
    inst = _instance(Phase(spec_ref="gc200", transfers=[*one.transfers, *other.transfers]))  # linked by pairs
    hint = best_greedy(inst)[:2]
    res = solve_periodic(inst, hint, SolveParams.of(PARAMS), Budget(5))  # found in 2 s, kept at 20
    assert validate(inst.phase, inst.spec, Schedule(*res.solution)).ok
    assert res.value < inst.horizon(hint), (res.value, inst.horizon(hint))
    assert res.extras["patterned_groups"] == res.extras["groups"] == 1


def test_no_streams_no_pattern() -> None:
    """Transfers that are each of their own kind (random sizes, dependencies) have no rounds:
    the schedule handed is returned, saying why."""
    spec = load_spec("gc200")
    inst = Instance(random_phase(spec, 40, seed=2, tiles=6, p_dep=0.3), spec)
    hint = best_greedy(inst)[:2]
    res = solve_periodic(inst, hint, SolveParams.of(PARAMS), Budget(20))
    assert res.status == "fallback" and res.solution == hint and "pattern" in res.extras["reason"]
