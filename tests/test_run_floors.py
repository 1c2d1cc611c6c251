"""Run floors (`layout.run_floors`) and tie floors (`layout.ties`): never above the price of the
move they floor, whatever the producer's layout, need label, grain and spec; the same values
asked for a subset of labels; and strong enough to matter (above the floor that sees volume
alone on most pairs)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ipuopt.layout.candidates import Catalogue
from ipuopt.layout.moves import Moves
from ipuopt.layout.pricing import move_bounds
from ipuopt.layout.run_floors import Probes, grid_of, receive_floors
from ipuopt.layout.ties import edges
from ipuopt.spec import load_spec
from ipuopt.workloads.fragments import parse_grain
from ipuopt.workloads.workload import load_workload


def _edges(cat: Catalogue):
    """(tensor, producer GEMM, consumer GEMM) of every move between GEMM layouts."""
    for op in cat.ops:
        for _, t in cat.inputs(op) if op.kind == "gemm" else ():
            src = cat.producer.get(t)
            while src is not None and src.kind != "gemm":
                src = cat.producer.get(src.inputs[0].tensor)
            if src is not None:
                yield t, src.name, op.name


CASES = pytest.mark.parametrize("workload, chip, grain", [
    ("mini-mlp", "test64", None), ("mini-mlp", "test64", "256"), ("mini-mlp", "test64", "box"),
    ("mini-mlp", "gc200", None), ("mini-attention", "test64", None), ("mini-attention", "test64", "12")])


def _catalogue(workload: str, chip: str, grain):
    """(workload, spec, grain, catalogue, moves with every candidate's floors)."""
    wl, spec = load_workload(workload), load_spec(chip)
    g = parse_grain(grain, spec)
    cat = Catalogue(wl, spec, 0.5, g, lambda _m: None, lambda: None)
    moves = Moves(cat)
    moves.refresh(cat.cands, exact=False)
    return wl, spec, g, cat, moves


@CASES
def test_a_run_floor_is_never_above_the_move_price(workload: str, chip: str, grain) -> None:
    wl, spec, g, cat, moves = _catalogue(workload, chip, grain)
    rng = random.Random(0)
    checked = stronger = 0
    for t, src, dst in _edges(cat):
        outs = sorted({c.doc["output"] for c in cat.cands[src]})
        floor = {c.doc["needs"][t]: c.moves[t] for c in cat.cands[dst]}
        needs = rng.sample(sorted(floor), min(40, len(floor)))
        probes = Probes.of([moves.needs_of(n) for n in needs], [moves.probe_needs(n, 8) for n in needs])
        for o in rng.sample(outs, min(8, len(outs))):
            held = moves.held_of(t, o)
            grid = grid_of(held, spec, wl.elem_bytes)
            if grid is None:
                continue
            floors = receive_floors(grid, probes, spec, wl.elem_bytes, g)
            prices = move_bounds(held, [moves.needs_of(n) for n in needs], wl.elem_bytes, spec, g)
            assert all(f <= p for f, p in zip(floors, prices, strict=True)), (o, needs, floors, prices)
            some = np.array(sorted(rng.sample(range(len(needs)), 7)))
            assert (receive_floors(grid, probes.subset(some), spec, wl.elem_bytes, g) == floors[some]).all()
            checked += len(needs)
            stronger += sum(f > floor[n] for f, n in zip(floors, needs, strict=True))
    _strong_enough(checked, stronger, grain, 3)


def test_a_layout_that_is_not_a_grid_has_no_run_floor() -> None:
    from ipuopt.layout.pricing import Held

    spec = load_spec("test64")
    lo = np.array([[0, 0, 0], [0, 0, 4], [0, 2, 0]])
    hi = np.array([[1, 2, 4], [1, 2, 8], [1, 4, 8]])  # the last piece spans two columns of cells
    assert grid_of(Held(np.array([0, 1, 2]), lo, hi, np.zeros(3, dtype=np.int64)), spec, 2) is None
    grid = grid_of(Held(np.array([0, 1]), lo[:2], hi[:2], np.zeros(2, dtype=np.int64)), spec, 2)
    assert grid is not None and [len(b) - 1 for b in grid.bounds] == [1, 1, 2]
    two = grid_of(Held(np.array([0, 0]), lo[:2], hi[:2], np.zeros(2, dtype=np.int64)), spec, 2)
    assert two is None  # a tile holding two cells: its own part of a box is not one cell's


@CASES
def test_a_tie_floor_is_never_above_the_move_price(workload: str, chip: str, grain) -> None:
    """`layout.ties`: a move's floor from the producer's class to a need label."""
    wl, spec, g, cat, moves = _catalogue(workload, chip, grain)
    rng = random.Random(0)
    checked = stronger = 0
    for e in edges(cat, cat.cands):
        volume = {c.doc["needs"][e.tensor]: c.moves[e.tensor] for c in cat.cands[e.consumer]}
        needs = rng.sample(sorted(e.label_of), min(30, len(e.label_of)))
        for o in rng.sample(sorted(e.class_of), min(8, len(e.class_of))):
            prices = move_bounds(moves.held_of(e.tensor, o), [moves.needs_of(n) for n in needs],
                                 wl.elem_bytes, spec, g)
            floors = [int(e.floor[e.class_of[o], e.label_of[n]]) for n in needs]
            assert all(f <= p for f, p in zip(floors, prices, strict=True)), (o, needs, floors, prices)
            checked += len(needs)
            stronger += sum(f > volume[n] for f, n in zip(floors, needs, strict=True))
    _strong_enough(checked, stronger, grain, 4)


def _strong_enough(checked: int, stronger: int, grain, share: int) -> None:
    """Enough pairs looked at, and more than 1/`share` of them above the volume floor (none at
    grain box: a whole overlap is one transfer, rows are not runs, nothing counted)."""
    assert checked >= 200
    assert stronger == 0 if grain == "box" else stronger > checked // share, (stronger, checked)

