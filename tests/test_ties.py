"""Ties (`layout.ties`): the shapes and classes they read without listing boxes are those of the
boxes, and pruning with them leaves out no plan within the limit (every plan of the untied
problem checked, on small workloads). Their floors against the prices: tests/test_run_floors.py."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import ROOT

from ipuopt.layout import build
from ipuopt.layout.candidates import Catalogue
from ipuopt.layout.pricing import Held, output_held
from ipuopt.layout.problem import layout_problem_from_dict
from ipuopt.layout.pruning import groups_of, prune
from ipuopt.layout.ties import NONE, Ties, output_class
from ipuopt.spec import load_spec
from ipuopt.workloads.geometry import operand_needs, operand_shapes
from ipuopt.workloads.workload import load_workload

PROGRAMS = ROOT / "tests" / "data" / "program"
MICRO, MICRO_MLP, TEST2, TEST4 = (str(PROGRAMS / f"{f}.yaml") for f in (
    "micro-attention-prepared", "micro-mlp", "test2", "test4"))


def layout_class(held: Held) -> tuple[int, int, int]:
    """From the pieces: (widest piece, most rows on a tile, most elements on a tile) when each
    tile holds one piece at most, else NONE."""
    if not len(held.tiles) or len(np.unique(held.tiles)) != len(held.tiles):
        return NONE
    ext = held.hi - held.lo
    return int(ext[:, 2].max()), int((ext[:, 0] * ext[:, 1]).max()), int(np.prod(ext, axis=1).max())


@pytest.mark.parametrize("workload, chip", [("mini-mlp", "test64"), ("mini-attention", "test64"),
                                            (MICRO, TEST2)])
def test_shapes_and_classes_are_those_of_the_boxes(workload: str, chip: str) -> None:
    """`operand_shapes` are the shapes of `operand_needs`' boxes, and `output_class` is the class
    of the pieces `output_held` lists (outputs stored per head: none)."""
    wl, spec = load_workload(workload), load_spec(chip)
    cat = Catalogue(wl, spec, 0.5, None, lambda _m: None, lambda: None)
    looked = 0
    for op in cat.ops:
        if op.kind != "gemm":
            continue
        for c in cat.cands[op.name][::max(1, len(cat.cands[op.name]) // 60)]:
            for which in (0, 1):
                boxes = [n.box for n in operand_needs(wl, op, c.source, which, 0)]
                assert operand_shapes(wl, op, c.source, which) == {
                    ((b1 - b0) * (r1 - r0), c1 - c0) for (b0, b1), (r0, r1), (c0, c1) in boxes}
            held = layout_class(output_held(wl, op, c.source))
            assert output_class(wl, op, c.source) == (NONE if op.out.heads else held)
            looked += 1
    assert looked >= 10


def _untied(cat, limit, cands):
    return prune(cat, limit, cands), Ties(0.0, 0.0, {}, {}, {})  # no move tied


@pytest.mark.parametrize("workload, chip, within, utilisation", [
    ("mini-mlp", "test64", 0.15, 0.5), (MICRO, TEST2, 0.3, 0.25), (MICRO_MLP, TEST4, 0.5, 0.25)])
def test_tied_pruning_leaves_out_no_plan_within_the_limit(monkeypatch, workload, chip, within,
                                                           utilisation) -> None:
    """Every plan of the problem built without ties that costs at most the limit is a plan of
    the tied problem, at the same cycles; and the ties leave candidates out."""
    wl, spec = load_workload(workload), load_spec(chip)
    tied_problem, tied_doc = build.build_problem(wl, spec, within=within, min_utilisation=utilisation)
    monkeypatch.setattr(build, "tied", _untied)
    loose, loose_doc = build.build_problem(wl, spec, within=within, min_utilisation=utilisation)
    limit = loose_doc["kept"]["excluded_above"]
    assert tied_doc["kept"]["excluded_above"] == limit
    assert sum(tied_doc["kept"]["kept"].values()) < sum(loose_doc["kept"]["kept"].values())
    tight = layout_problem_from_dict(tied_doc, "tied")
    within_limit = 0
    heads = list(groups_of(loose.catalogue))  # in-place operators follow their input's layout
    for combo in itertools.product(*(loose.operators[h].candidates for h in heads)):
        choice = dict(zip(heads, combo, strict=True))
        for name, op in loose.operators.items():
            if name not in choice:
                layout = loose.layout_of(op.inputs[0], choice)
                choice[name] = next((o for o in op.candidates if o.id == layout), None)
        if None in choice.values():
            continue
        cycles = loose.cycles(choice)
        if cycles is None or cycles > limit:
            continue
        within_limit += 1
        mine = {name: next((o for o in tight.operators[name].candidates if o.id == c.id), None)
                for name, c in choice.items()}
        assert None not in mine.values(), choice
        assert tight.cycles(mine) == cycles
    assert within_limit > 0
