"""Coarsen, solve, refine: fragment-level phases scheduled as their boxes' blocks."""

from __future__ import annotations

import pytest

from ipuopt.budget import Budget
from ipuopt.exchange.auto import solve_auto
from ipuopt.exchange.coarse import block_timing, blocks, solve_coarse, unrolled
from ipuopt.exchange.greedy import best_greedy
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.validate import validate
from ipuopt.params import SolveParams
from ipuopt.result import Result, Status
from ipuopt.spec import load_spec
from ipuopt.workloads.gemm import GemmLayout
from ipuopt.workloads.phases import generate
from ipuopt.workloads.workload import load_workload


@pytest.fixture(scope="module")
def phases():
    spec = load_spec("test64")
    # layouts with partials on both GEMMs: a reduction of many fragments to coarsen
    layouts = {"gemm1": GemmLayout.parse("2x16x2/1x2", spec), "gemm2": GemmLayout.parse("2x4x8/2x4", spec)}
    gen = generate(load_workload("mini-mlp"), spec, layouts, grain=32)
    return spec, [g.phase for g in gen.phases]


def _valid(phase, spec, solution) -> int:
    starts, widths = solution
    report = validate(phase, spec, Schedule(starts, widths))
    assert report.ok, report.violations[:3]
    return report.horizon


def test_a_block_schedule_unrolled_is_valid_with_the_same_horizon(phases) -> None:
    """Every phase of mini-mlp at 32 B: fragments of a box go as one block (several per
    block), and any schedule of the blocks, unrolled, passes the validator (which knows
    nothing of blocks) with the blocks' horizon."""
    spec, found = phases
    for phase in found:
        inst = Instance(phase, spec)
        groups = blocks(inst.timings)
        assert sorted(i for g in groups for i in g) == list(range(len(inst.timings)))
        assert len(groups) * 3 <= len(inst.timings)
        coarse = [block_timing(inst.timings, g, spec) for g in groups]
        cinst = Instance.of(spec, coarse)
        for rule in ("load", "time"):
            block_solution = best_greedy(cinst, rules=(rule,))[:2]
            fine = unrolled(inst.timings, groups, coarse, block_solution, spec)
            assert _valid(phase, spec, fine) == cinst.horizon(block_solution)


def test_coarse_beats_the_fragment_greedy_and_keeps_the_phase_bound(phases) -> None:
    """On the reduction the blocks' search ends below the greedy of the fragments, the
    schedule is valid, and the bound reported is the phase's, not the blocks'."""
    spec, found = phases
    phase = next(p for p in found if p.name == "gemm2-reduction")
    inst = Instance(phase, spec, bound=7)
    hint = best_greedy(inst)[:2]
    told: list[dict] = []
    r = solve_coarse(inst, hint, SolveParams(workers=1, seed=0), Budget(10), told.append)
    assert r.status == Status.FEASIBLE and r.solver.startswith("coarse/")
    assert r.value < inst.horizon(hint) and r.bound == 7
    # the progress lines of the stages inside say the phase's bound too (they said 0, the blocks')
    bounds = [e["bound"] for e in told if "bound" in e]
    assert bounds and set(bounds) == {7}
    assert _valid(phase, spec, r.solution) == r.value


def test_coarse_leaves_phases_without_fragments_alone() -> None:
    """Box-level phases (one transfer a box) are not coarsened: the hint comes back."""
    spec = load_spec("test64")
    phase = generate(load_workload("mini-mlp"), spec, grain="box").phases[-1].phase
    inst = Instance(phase, spec)
    hint = best_greedy(inst)[:2]
    r = solve_coarse(inst, hint, SolveParams(), Budget(5))
    assert r.status == Status.FALLBACK and r.solution == hint


def test_auto_justifies_a_fragmented_phase_before_its_boxes(phases) -> None:
    """On a fragment-level phase auto justifies the greedy's schedule (seconds, the start
    every later stage improves on) before it solves the boxes (after `split`, where the
    phase falls apart); the answer is valid and never worse than the greedy's."""
    spec, found = phases
    phase = next(p for p in found if p.name == "gemm2-reduction")
    inst = Instance(phase, spec)
    assert len(inst.timings) > 300
    hint = best_greedy(inst)[:2]
    r = solve_auto(inst, hint, SolveParams(workers=1, seed=0), Budget(4))
    methods = r.extras["methods"]
    assert methods.index("justify") + 1 == methods.index("coarse"), methods
    assert _valid(phase, spec, r.solution) == r.value <= inst.horizon(hint)


def test_auto_never_reports_an_incumbent_worse_than_its_best(phases, monkeypatch) -> None:
    """A stage searching from elsewhere (coarse's blocks start from their own greedy) may
    report schedules worse than auto's best: the progress lines show auto's best instead."""
    import ipuopt.exchange.auto as auto
    from ipuopt.exchange.auto import Stage

    spec, found = phases
    inst = Instance(next(p for p in found if p.name == "gemm2-reduction"), spec)
    hint = best_greedy(inst)[:2]
    best = inst.horizon(hint)

    def worse(inst, hint, params, budget, progress):
        progress({"incumbent": best + 100, "bound": 0})
        return Result(Status.FALLBACK, hint, best, 0, solver="worse")

    monkeypatch.setattr(Stage, "method", lambda self: worse)
    monkeypatch.setattr(auto, "pipeline", lambda inst, limit, part=False: (Stage("worse", 1.0),))
    heard: list[dict] = []
    solve_auto(inst, hint, SolveParams(), Budget(5), heard.append)
    assert [e["incumbent"] for e in heard if "incumbent" in e] == [best]


def test_auto_reports_a_better_schedule_that_a_stage_hands_back_silently(phases, monkeypatch) -> None:
    """`split` reports nothing of its own: the progress lines kept the greedy's horizon (4,100
    on siglip-attention's qproj-reduction for 300 s) after it had handed back 2,966."""
    import ipuopt.exchange.auto as auto
    from ipuopt.exchange.auto import Stage

    spec, found = phases
    inst = Instance(next(p for p in found if p.name == "gemm2-reduction"), spec)
    hint = best_greedy(inst)[:2]
    better = inst.horizon(hint) - 1
    quiet = lambda inst, hint, params, budget, progress: Result(  # noqa: E731
        Status.FEASIBLE, hint, better, 0, solver="quiet")
    monkeypatch.setattr(Stage, "method", lambda self: quiet)
    monkeypatch.setattr(auto, "pipeline", lambda inst, limit, part=False: (Stage("quiet", 1.0),))
    heard: list[dict] = []
    solve_auto(inst, hint, SolveParams(), Budget(5), heard.append)
    assert [e["incumbent"] for e in heard if "incumbent" in e] == [better]
