"""Workloads: candidate enumeration, phase construction and coverage."""

from __future__ import annotations

import gc
import math
import random

import numpy as np
import pytest

from ipuopt.errors import InputError
from ipuopt.exchange.phase import check_phase
from ipuopt.heap import bulk
from ipuopt.spec import load_spec, spec_names
from ipuopt.workloads.boxes import View, intersect, volume
from ipuopt.workloads.gemm import GemmLayout, enumerate_candidates, price
from ipuopt.workloads.phases import generate
from ipuopt.workloads.workload import load_workload


def test_enumeration_matches_independent_count() -> None:
    spec = load_spec("test64")
    wl = load_workload("mini-mlp")
    op = wl.operators[0]
    batch, m, k, n = wl.gemm_dims(op)
    cands = enumerate_candidates(wl, op, spec, min_utilisation=0.0)
    expected = 0
    for r in range(1, m + 1):
        for c in range(1, n + 1):
            for p in range(1, k + 1):
                if r * c * p > spec.tiles:
                    continue
                mb, nb = math.ceil(m / r), math.ceil(n / c)
                for a in (a for a in range(1, p + 1) if p % a == 0):
                    if a <= mb and p // a <= nb:
                        expected += len(spec.regions)  # mini-mlp blocks fit either region
    assert len(cands) == expected
    for cand in cands:
        lay = cand.layout
        assert cand.tiles_used == cand.groups * lay.rows * lay.cols * lay.parts <= spec.tiles
        assert lay.rows <= m and lay.cols <= n and lay.parts <= k
        assert lay.sub_a * lay.sub_b == lay.parts
        for region in spec.regions:
            assert cand.memory.get(region.name, 0) <= region.size


def test_enumeration_prices_each_layout_as_price_does() -> None:
    """The enumeration prices every layout in one pass; each must be what `price` says of it
    alone, and the collector is on again after the bulk pass, even when it raised."""
    spec = load_spec("gc200")
    wl = load_workload("siglip-attention")
    op = next(o for o in wl.operators if o.name == "scores")  # batched: groups and batches per group
    cands = enumerate_candidates(wl, op, spec)
    for cand in random.Random(0).sample(cands, 200):
        assert price(wl, op, cand.layout, spec) == cand
    assert gc.isenabled()
    with pytest.raises(RuntimeError), bulk():
        assert not gc.isenabled()
        raise RuntimeError
    assert gc.isenabled()


def test_utilisation_filter_and_memory_limit() -> None:
    spec = load_spec("gc200")
    wl = load_workload("siglip-mlp")
    gemm1 = wl.operators[0]
    assert all(c.tiles_used >= 0.5 * spec.tiles for c in enumerate_candidates(wl, gemm1, spec))
    # one tile cannot hold x, w1 and the result: 729*1152 + 1152*4304 + ... f16 words
    assert price(wl, gemm1, GemmLayout.parse("1x1x1", spec), spec) is None
    fits = price(wl, gemm1, GemmLayout.parse("4x92x4/4x1", spec), spec)
    assert fits is not None and fits.tiles_used == 1472
    with pytest.raises(InputError, match="more pieces than the 4 partials"):
        GemmLayout.parse("4x92x4/3x2", spec)
    assert GemmLayout.parse("4x92x4/1x1", spec).sub_a == 1  # all four partials onto one tile a block


def test_batched_groups() -> None:
    spec = load_spec("test64")
    wl = load_workload("mini-attention")
    scores = next(o for o in wl.operators if o.name == "scores")
    cand = price(wl, scores, GemmLayout.parse("2x2x2/2x1", spec), spec)
    assert cand is not None and cand.groups == 4 and cand.batches_per_group == 1


def _coverage(gen) -> None:
    """Every needed box reaches every tile that needs it exactly once (delivered + local)."""
    for gp in gen.phases:
        by_tile: dict[tuple[str, int, int | None], list] = {}  # partial sums: per partial
        for d in gp.deliveries:
            for t in d.dst:
                by_tile.setdefault((d.tensor, t, d.partial), []).append(d.box)
        for tensor, needs in gp.needs.items():
            delivered = 0
            for need in needs:
                for tile in need.tiles:
                    got = sum(volume(b2) for b in by_tile.get((tensor, tile, need.partial), ())
                              if (b2 := intersect(b, need.box)))
                    local = sum(volume(b2) for p in gp.sources[tensor] if p.tile == tile
                                and p.partial == need.partial if (b2 := intersect(p.box, need.box)))
                    assert got + local == volume(need.box), (gp.phase.name, tensor, tile)
                    delivered += got
            total = sum(volume(b) for (name, _, _), boxes in by_tile.items() if name == tensor
                        for b in boxes)
            assert total == delivered  # nothing arrives that no need asked for


def _pieces_partition(gen) -> None:
    wl = gen.workload
    for gp in gen.phases:
        for tensor, pieces in gp.sources.items():
            if tensor not in wl.tensors:
                continue
            count = np.zeros(wl.tensors[tensor].shape, dtype=np.int32)
            for p in pieces:
                (b0, b1), (r0, r1), (c0, c1) = p.box
                count[b0:b1, r0:r1, c0:c1] += 1
            assert (count == 1).all(), tensor


@pytest.mark.parametrize("workload", ["mini-mlp", "mini-attention"])
@pytest.mark.parametrize("layouts", [{}, {"gemm1": "3x8x2/2x1", "gemm2": "3x4x5/5x1",
                                          "qproj": "2x4x4/2x2", "scores": "2x2x3/3x1",
                                          "context": "5x2x2/1x2/non-interleaved"}])
def test_phases_valid_and_cover(workload: str, layouts: dict) -> None:
    spec = load_spec("test64")
    wl = load_workload(workload)
    names = {o.name for o in wl.operators}
    chosen = {k: GemmLayout.parse(v, spec) for k, v in layouts.items() if k in names}
    gen = generate(wl, spec, chosen)
    assert gen.phases
    for gp in gen.phases:
        assert check_phase(gp.phase, spec) == []
    _coverage(gen)
    _pieces_partition(gen)
    again = generate(wl, spec, chosen)
    assert [g.phase.to_dict() for g in again.phases] == [g.phase.to_dict() for g in gen.phases]


@pytest.mark.parametrize("spec_name", [s for s in spec_names() if s != "openshop"])
def test_every_spec_generates(spec_name: str) -> None:
    """Valid phases on every shipped spec, with given layouts (choosing defaults on a full chip
    takes seconds; they are chosen on test64 elsewhere)."""
    spec = load_spec(spec_name)
    chosen = {"gemm1": GemmLayout.parse("3x8x2/2x1", spec), "gemm2": GemmLayout.parse("3x4x5/5x1", spec)}
    gen = generate(load_workload("mini-mlp"), spec, chosen)
    assert gen.phases
    for gp in gen.phases:
        assert check_phase(gp.phase, spec) == []


def test_views() -> None:
    v = View("q", heads=4, transpose=True)
    assert v.shape((1, 20, 32)) == (4, 8, 20)
    assert v.to_stored(((1, 3), (0, 8), (0, 20)), (1, 20, 32)) == [((0, 1), (0, 20), (8, 24))]


def test_fixtures_are_current_and_valid() -> None:
    """The committed small phases are what the generator makes today, and they validate."""
    from conftest import ROOT

    from ipuopt.exchange.phase import load_phase

    fixtures = sorted((ROOT / "benchmarks" / "fixtures").glob("*.json"))
    assert fixtures
    spec = load_spec("test64")
    made = {}
    for name in ("mini-mlp", "mini-attention"):
        for gp in generate(load_workload(name), spec).phases:
            made[f"{name}-test64-{gp.phase.name}.json"] = gp.phase.to_dict()
    for f in fixtures:
        phase, sp = load_phase(f)
        assert sp.name == "test64"
        assert phase.to_dict() == made[f.name]


def test_arena_export_and_readdress() -> None:
    from ipuopt.arena.problem import arena_from_dict
    from ipuopt.arena.validate import validate_placement
    from ipuopt.workloads.arena_export import arena_document, default_offsets, readdress

    spec = load_spec("test64")
    gen = generate(load_workload("mini-mlp"), spec)
    arena = arena_from_dict(arena_document(gen))
    default = default_offsets(gen)
    report = validate_placement(arena, default)
    assert report.ok  # the generator's own allocation is a valid placement
    assert arena.conflicts and all(c.weight > 0 for c in arena.conflicts)
    for gp in gen.phases:  # re-addressing to the same offsets changes nothing
        assert readdress(gen, gp, default).to_dict() == gp.phase.to_dict()
    moved = {k: v + 4096 for k, v in default.items()}
    if validate_placement(arena, moved).ok:
        gp = gen.phases[-1]
        phase = readdress(gen, gp, moved)
        assert check_phase(phase, spec) == []
        shifted = [t.src_addr for t in phase.transfers if t.src_addr is not None]
        assert shifted != [t.src_addr for t in gp.phase.transfers if t.src_addr is not None]


def _replicated_mini_mlp() -> dict:
    import yaml
    from conftest import ROOT
    doc = yaml.safe_load((ROOT / "models" / "mini-mlp.yaml").read_text())
    doc["tensors"]["x"]["input"] = "host-replicated"
    return doc


def test_a_host_replicated_input_moves_nothing_on_chip() -> None:
    """The host writes each tile's block of it where its GEMM reads it: the first phase
    carries the weights only, word for word, and the layout problem moves no input."""
    from ipuopt.workloads.workload import workload_from_dict

    spec = load_spec("test64")
    wl = workload_from_dict(_replicated_mini_mlp(), "replicated")
    split = generate(load_workload("mini-mlp"), spec, grain="box")
    hosted = generate(wl, spec, grain="box")
    first, before = hosted.phases[0], split.phases[0]
    assert {d.tensor for d in first.deliveries} == {"w1"} and set(first.needs) == {"w1"}
    assert {d.tensor for d in before.deliveries} == {"x", "w1"}
    wb = spec.exchange.word_bytes
    w1_words = sum(-(-sum(d.nbytes) // wb) for d in before.deliveries if d.tensor == "w1")
    assert sum(t.words for t in first.phase.transfers) == w1_words
    assert not check_phase(first.phase, spec)
    assert [gp.phase.name for gp in hosted.phases] == [gp.phase.name for gp in split.phases]
    assert all(b["id"] != "x" for b in hosted.buffers)  # no home for it on chip


def test_a_layout_problem_does_not_move_a_host_replicated_input(tmp_path) -> None:
    import yaml
    from conftest import run_cli

    (tmp_path / "wl.yaml").write_text(yaml.safe_dump(_replicated_mini_mlp()))
    r = run_cli("layout-problem", "wl.yaml", "--spec", "test64", "--out", "p.yaml", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    ops = yaml.safe_load((tmp_path / "p.yaml").read_text())["operators"]
    assert ops["gemm1"]["inputs"] == [] and ops["gemm2"]["inputs"] == ["g"]
    assert run_cli("layout", "p.yaml", "--out", "plan.json", "--quiet", cwd=tmp_path).returncode == 0
    r = run_cli("run", "wl.yaml", "--spec", "test64", "--plan", "plan.json", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(("change", "said"), [
    ({"input": "from-disk"}, "tensors.x.input"),
    ({"input": "host-replicated", "weight": True}, "a weight is not a graph input"),
])
def test_a_graph_inputs_arrival_is_checked(change: dict, said: str) -> None:
    from ipuopt.workloads.workload import workload_from_dict

    doc = _replicated_mini_mlp()
    doc["tensors"]["x"].update(change)
    with pytest.raises(InputError, match=said):
        workload_from_dict(doc, "bad")


def test_only_a_gemm_reads_a_host_replicated_input() -> None:
    from ipuopt.workloads.workload import workload_from_dict

    doc = _replicated_mini_mlp()
    doc["operators"].insert(0, {"name": "scale", "kind": "elementwise", "in": "x", "out": "y"})
    with pytest.raises(InputError, match="host-replicated input: only a GEMM"):
        workload_from_dict(doc, "bad")


def test_siglip_mlp_on_the_references_layouts_moves_and_adds_as_it_measured() -> None:
    """On the reference compiler's layouts its first exchange moves |w1|: 807 sends of 3,072
    words (its log); so does ours, whatever the fragments."""
    spec = load_spec("gc200")
    wl = load_workload("siglip-mlp")
    layouts = {"gemm1": GemmLayout.parse("4x92x4/4x1", spec), "gemm2": GemmLayout.parse("4x24x15/15x1", spec)}
    gen = generate(wl, spec, layouts, grain="box")
    assert sum(t.words for t in gen.phases[0].phase.transfers) == 807 * 3072
    # and its final reduction's adds take what the reference measured, 8,094 cycles, within 1%
    adds = next(c for c in gen.compute if c.label == "gemm2 (reduce)")
    assert abs(max(adds.cycles.values()) - 8094) <= 81


def _prepared_mini_attention() -> dict:
    """mini-attention with q, k and v prepared before the batched GEMMs, as the bundled SigLIP
    attention's are (the reference compiler's Q/K/V preparation phases)."""
    import yaml
    from conftest import ROOT
    doc = yaml.safe_load((ROOT / "models" / "mini-attention.yaml").read_text())
    for op in doc["operators"]:
        for key in ("a", "b"):
            if isinstance(op.get(key), dict) and op[key]["tensor"] in ("q", "k", "v"):
                op[key]["prepare"] = True
    return doc


@pytest.mark.parametrize("layouts", [{}, {"scores": "2x2x3/3x1", "context": "5x2x2/1x2/non-interleaved"}])
def test_prepared_operands_move_into_their_homes_in_phases_of_their_own(layouts: dict) -> None:
    """Each prepared operand: a unicast phase that moves it into its homes (one tile a block),
    just before the GEMM's own input phase, which then multicasts it from those homes alone."""
    from ipuopt.workloads.workload import workload_from_dict

    spec = load_spec("test64")
    wl = workload_from_dict(_prepared_mini_attention(), "prepared")
    chosen = {k: GemmLayout.parse(v, spec) for k, v in layouts.items()}
    gen = generate(wl, spec, chosen)
    names = [gp.phase.name for gp in gen.phases]
    for gemm, tensors in (("scores", ("q", "k")), ("context", ("v",))):
        at = names.index(f"{gemm}-redistribution")
        assert names[at - len(tensors):at] == [f"{gemm}-{t}-preparation" for t in tensors]
        moving = gen.phases[at]
        for t in tensors:
            prep = gen.phases[names.index(f"{gemm}-{t}-preparation")]
            assert prep.phase.transfers and all(len(x.dst) == 1 for x in prep.phase.transfers)
            homes = {p.tile for p in moving.sources[t]}
            assert [n.tiles for n in prep.needs[t]] == [(p.tile,) for p in moving.sources[t]]
            assert {d.src for d in moving.deliveries if d.tensor == t} <= homes
    for gp in gen.phases:
        assert check_phase(gp.phase, spec) == []
    _coverage(gen)
    assert len(gen.phases) == len(generate(load_workload("mini-attention"), spec, chosen).phases) + 3


@pytest.mark.parametrize(("where", "said"), [
    (("qproj", "b"), "prepares wq: only a GEMM's operand that is moved"),
    (("softmax", "in"), "prepares s"),
    (("scores", "out"), "prepare is said of an operand, not of out"),
])
def test_only_a_gemms_moved_operand_can_be_prepared(where: tuple, said: str) -> None:
    from ipuopt.workloads.workload import workload_from_dict

    doc = _prepared_mini_attention()
    op = next(o for o in doc["operators"] if o["name"] == where[0])
    view = op[where[1]]
    op[where[1]] = {**(view if isinstance(view, dict) else {"tensor": view}), "prepare": True}
    with pytest.raises(InputError, match=said):
        workload_from_dict(doc, "bad")


def test_generation_routes_only_the_phases_asked_and_stops_when_asked() -> None:
    """`only`: the phases named are routed as in the whole program, the others left empty
    (the program bound prices a plan's input phases so); `check` is asked as each need is
    routed, and what it raises ends the generation."""
    from ipuopt.budget import Stopped

    wl, spec = load_workload("mini-mlp"), load_spec("test64")
    whole = generate(wl, spec, None, "box")
    name = whole.phases[1].phase.name
    one = generate(wl, spec, None, "box", only=frozenset({name}))
    assert [gp.phase.transfers for gp in one.phases] == [
        gp.phase.transfers if gp.phase.name == name else [] for gp in whole.phases]
    assert one.phases[1].phase.transfers
    calls = []

    def check() -> None:
        calls.append(1)
        if len(calls) == 4:
            raise Stopped

    with pytest.raises(Stopped):
        generate(wl, spec, None, "box", check=check)
    assert len(calls) == 4
