"""The program bound (`layout.program_bound`): below every plan's program, whatever the
placement and the schedules. Checked per plan, on plans drawn at random from every
candidate, against the generated program's own floor worked out here from the generation:
per boundary the slowest tile's compute, sync, and the phase's endpoint or pair bound (each
at most the phase's optimum, so a stronger check than the optimum itself). Exact programs
are out of reach even here: CP-SAT does not prove a 27-transfer multicast phase of mini-mlp
on test64 in 10 s."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from ipuopt.exchange.bounds import endpoint_bound, pair_bound
from ipuopt.exchange.timing import phase_timings
from ipuopt.layout.candidates import Catalogue
from ipuopt.layout.program_bound import program_bound
from ipuopt.params import SolveParams
from ipuopt.spec import load_spec
from ipuopt.workloads.gemm import enumerate_candidates
from ipuopt.workloads.phases import generate
from ipuopt.workloads.records import Generation
from ipuopt.workloads.workload import load_workload

SPEC = load_spec("test64")


def _plans(wl, n: int) -> list[dict]:
    rng = random.Random(0)
    cands = {op.name: enumerate_candidates(wl, op, SPEC) for op in wl.operators if op.kind == "gemm"}
    return [{op: rng.choice(cs) for op, cs in cands.items()} for _ in range(n)]


def _floor(gen: Generation) -> int:
    total = 0
    for i in range(len(gen.phases) + 1):
        work: Counter[int] = Counter()
        for c in gen.compute:
            if c.before_phase == i:
                work.update(c.cycles)
        total += max(work.values(), default=0)
        if i < len(gen.phases):
            tm = phase_timings(gen.phases[i].phase, SPEC)
            total += SPEC.exchange.sync_cycles + max(endpoint_bound(tm, SPEC).value,
                                                     pair_bound(tm, SPEC).value)
    return total


@pytest.mark.parametrize("workload", ["mini-mlp", "mini-attention"])
def test_the_bound_is_below_every_sampled_plans_program(workload: str) -> None:
    wl = load_workload(workload)
    cat = Catalogue(wl, SPEC, 0.5, "box", lambda _m: None, lambda: None)
    everything = program_bound(wl, SPEC, "box", params=SolveParams(time_limit=5, workers=1, seed=0),
                               catalogue=cat)
    assert everything.value > 0 and everything.terms
    tested = 0
    for plan in _plans(wl, 10):
        labels = {op: c.layout.label for op, c in plan.items()}
        try:
            one = program_bound(wl, SPEC, "box", fixed=labels, catalogue=cat,
                                params=SolveParams(time_limit=8, workers=1, seed=0))
        except Exception as exc:  # a plan that does not fit memory is no plan
            assert "fits" in str(exc)
            continue
        assert one.proven and one.plan == labels  # one plan: every move priced
        floor = _floor(generate(wl, SPEC, {op: c.layout for op, c in plan.items()}, "box"))
        assert everything.value <= one.value <= floor, (labels, one.terms)
        tested += 1
    assert tested >= 6
