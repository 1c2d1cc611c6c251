"""Row-pair floors with the producer's cells known (`layout.row_pairs`): never above the
exact row-pair bound of the same pair of layouts (`pricing.row_pair_bound`, itself below every
generated input phase: tests/test_program_bound.py), the same for a candidate asked alone, and
the same for every candidate of one class."""

from __future__ import annotations

import random

import pytest

from ipuopt.layout.candidates import Catalogue
from ipuopt.layout.moves import Moves
from ipuopt.layout.pricing import row_pair_bound
from ipuopt.layout.row_pairs import RowPairFloors
from ipuopt.spec import load_spec
from ipuopt.workloads.fragments import parse_grain
from ipuopt.workloads.workload import load_workload


@pytest.mark.parametrize("workload, chip, grain", [
    ("mini-mlp", "test64", None), ("mini-mlp", "test64", "256"), ("mini-mlp", "gc200", None),
    ("mini-mlp", "test64", "box")])
def test_a_row_pair_floor_is_never_above_the_exact_row_pair_bound(workload: str, chip: str, grain) -> None:
    wl, spec = load_workload(workload), load_spec(chip)
    g = parse_grain(grain, spec)
    cat = Catalogue(wl, spec, 0.5, g, lambda _m: None, lambda: None)
    moves = Moves(cat)
    op = next(o for o in cat.ops if o.name == "gemm2")
    a = op.inputs[0].tensor
    cands = cat.cands["gemm2"]
    floors = RowPairFloors(wl, op, [c.source for c in cands], [c.doc["needs"][a] for c in cands],
                           moves.needs_of, spec, g)
    rng = random.Random(0)
    outs = sorted({c.doc["output"] for c in cat.cands["gemm1"]})
    checked = positive = 0
    for label in rng.sample(outs, min(12, len(outs))):
        held = moves.held_of(a, label)
        values = floors.against(held)
        some = sorted(rng.sample(range(len(cands)), min(25, len(cands))))
        assert (floors.against(held, some) == values[some]).all()
        for i in some:
            exact = row_pair_bound(wl, op, cands[i].source, spec, g, held)
            assert values[i] <= exact, (label, cands[i].doc["id"], values[i], exact)
            checked += 1
            positive += values[i] > 0
        for i in some:  # one class, one floor
            alike = [j for j in range(len(cands)) if floors.alike[j] == floors.alike[i]]
            assert (values[alike] == values[i]).all()
    assert checked >= 200
    if grain == "box":  # a whole overlap is one transfer: rows are not runs, nothing counted
        assert positive == 0
    else:
        assert positive > checked // 3, (positive, checked)
