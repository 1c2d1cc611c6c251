"""The program bound (`layout.program_bound`): below every plan's program, whatever the
placement and the schedules. Checked per plan, on plans drawn at random from every
candidate, against the generated program's own floor worked out here from the generation:
per boundary the slowest tile's compute, sync, and the phase's endpoint, pair or group bound (each
at most the phase's optimum, so a stronger check than the optimum itself); and against the
exhaustive optimum, on micro workloads and chips (tests/data/program) small enough that
every plan's phases are solved to optimality (on test64, CP-SAT does not prove a
27-transfer multicast phase of mini-mlp in 10 s, and mini-mlp has 4 million plans)."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ipuopt.errors import InputError
from ipuopt.exchange.bounds import endpoint_bound, group_bound, pair_bound
from ipuopt.exchange.phase import Phase, paired_possible
from ipuopt.exchange.solve import solve
from ipuopt.exchange.timing import phase_timings
from ipuopt.layout.candidates import Catalogue
from ipuopt.layout.program_bound import program_bound, table_row
from ipuopt.params import SolveParams
from ipuopt.spec import load_spec
from ipuopt.workloads.gemm import enumerate_candidates
from ipuopt.workloads.phases import generate
from ipuopt.workloads.records import Generation
from ipuopt.workloads.workload import load_workload

SPEC = load_spec("test64")
MICRO = Path(__file__).parent / "data" / "program"
PREPARED = str(MICRO / "mini-attention-prepared.yaml")  # mini-attention with q, k and v prepared


def _plans(wl, n: int) -> list[dict]:
    rng = random.Random(0)
    cands = {op.name: enumerate_candidates(wl, op, SPEC) for op in wl.operators if op.kind == "gemm"}
    return [{op: rng.choice(cs) for op, cs in cands.items()} for _ in range(n)]


def _program(gen: Generation, exchange) -> int:
    """Per boundary the slowest tile's compute, sync and `exchange(phase)`; the final compute."""
    total = 0
    for i in range(len(gen.phases) + 1):
        work: Counter[int] = Counter()
        for c in gen.compute:
            if c.before_phase == i:
                work.update(c.cycles)
        total += max(work.values(), default=0)
        if i < len(gen.phases):
            total += gen.spec.exchange.sync_cycles + exchange(gen.phases[i].phase)
    return total


def widths_only(phase: Phase, spec=SPEC) -> Phase:
    """The phase without addresses (no memory element can clash, as under some placement) but
    with the widths they allow: buffers start aligned under any placement, so a transfer that
    cannot be paired here cannot under any, and is marked `never`."""
    return replace(phase, transfers=[
        replace(t, src_addr=None, dst_addr=None, paired=t.paired if paired_possible(t, spec) else "never")
        for t in phase.transfers])


def _phase_floor(phase: Phase) -> int:
    tm = phase_timings(widths_only(phase), SPEC)
    return max(endpoint_bound(tm, SPEC).value, pair_bound(tm, SPEC).value, group_bound(tm, SPEC).value)


def _floor(gen: Generation) -> int:
    return _program(gen, _phase_floor)


def _check_terms(terms: list[dict], gen: Generation) -> None:
    """A plan's bound, boundary by boundary, against its generated program: the compute at most
    the slowest tile's (exact), and the exchange at most the phase's endpoint, pair or group
    bound, or where above them (a lane argument those do not make), at most a schedule of the
    phase (`widths_only`: at least its optimum under any placement)."""
    by_name = {gp.phase.name: gp.phase for gp in gen.phases}
    assert [t["phase"] for t in terms] == [*by_name, "(final compute)"]
    for i, term in enumerate(terms):
        work: Counter[int] = Counter()
        for c in gen.compute:
            if c.before_phase == i:
                work.update(c.cycles)
        assert term["compute"] <= max(work.values(), default=0), term
        phase = by_name.get(term["phase"])
        if phase is not None and term["exchange"] > _phase_floor(phase):
            found = solve(widths_only(phase), SPEC, "cpsat", SolveParams(time_limit=5, workers=1, seed=0))
            assert term["exchange"] <= found.value, (term, found.value)


@pytest.mark.parametrize("workload", ["mini-mlp", "mini-attention", "hosted", "prepared"])
def test_the_bound_is_below_every_sampled_plans_program(workload: str, tmp_path: Path) -> None:
    wl = load_workload(_variant(workload, tmp_path))
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
        _check_terms(one.terms, generate(wl, SPEC, {op: c.layout for op, c in plan.items()}, "box"))
        assert everything.value <= one.value, (labels, one.terms)
        tested += 1
    assert tested >= 6


@pytest.mark.parametrize("workload, chip, utilisation", [("micro-mlp", "test4", 0.5),
                                                         ("micro-attention", "test2", 1.0),
                                                         ("micro-attention-prepared", "test2", 1.0)])
def test_the_bound_is_below_the_exhaustive_optimum(workload: str, chip: str, utilisation: float) -> None:
    """Every plan (a layout per GEMM; memory classes alike once addresses are gone), each phase
    solved to optimality with its addresses dropped but their widths kept (`widths_only`): no
    element can clash, so this optimum is below the plan's under any placement, and the
    program bound must be below the least."""
    wl, spec = load_workload(str(MICRO / f"{workload}.yaml")), load_spec(str(MICRO / f"{chip}.yaml"))
    layouts = {op.name: list({c.layout.label.rsplit("/", 1)[0]: c.layout
                              for c in enumerate_candidates(wl, op, spec, utilisation)}.values())
               for op in wl.operators if op.kind == "gemm"}
    optimum: dict[tuple, int] = {}  # phases alike in everything but ids and addresses

    def exact(phase: Phase) -> int:
        key = tuple((t.src, t.dst, t.words, paired_possible(t, spec), t.after) for t in phase.transfers)
        if key not in optimum:
            res = solve(widths_only(phase, spec), spec, "cpsat",
                        SolveParams(time_limit=30, workers=1, seed=0))
            assert res.status == "optimal", (phase.name, res.status)
            optimum[key] = res.value
        return optimum[key]

    best = min(_program(generate(wl, spec, dict(zip(layouts, plan, strict=True)), "box"), exact)
               for plan in itertools.product(*layouts.values()))
    bound = program_bound(wl, spec, "box", min_utilisation=utilisation,
                          params=SolveParams(time_limit=20, workers=1, seed=0))
    assert bound.proven and 0 < bound.value <= best, (bound.value, best, bound.plan)
    # prepared operands reach the batched GEMMs' grids from homes: fewer distinct phases
    assert len(optimum) >= (15 if "prepared" in workload else 20)
    assert math.prod(map(len, layouts.values())) >= 100


@pytest.mark.parametrize("grain", [None, 256])
def test_a_reduction_loads_the_lanes_the_overlap_search_finds_on_its_routes(grain) -> None:
    """`reduction_lanes` counts each partial piece as one send from its partial to its owner;
    the general overlap search over the same routes (each partial's copy of a block moved
    apart so that a need meets only its own partial's piece) must load every lane alike, and
    the price stays below the generated reduction phase's endpoint and pair bounds."""
    from ipuopt.layout.pricing import Held, Lanes, move_lanes
    from ipuopt.layout.program_bound import reduction_lanes
    from ipuopt.workloads.gemm import PARTIAL_BYTES
    from ipuopt.workloads.geometry import reduction_routes
    from ipuopt.workloads.records import Need, Piece

    wl = load_workload("mini-mlp")
    cat = Catalogue(wl, SPEC, 0.5, grain, lambda _m: None, lambda: None)

    def apart(box, partial):
        (b0, b1), *rest = box
        return ((b0 + partial * 10**6, b1 + partial * 10**6), *rest)

    checked = 0
    for op in (o for o in wl.operators if o.kind == "gemm"):
        cands = [c.source for c in cat.cands[op.name] if c.source.layout.parts > 1]
        for c in cands[::max(1, len(cands) // 6)]:
            pieces, needs = reduction_routes(wl, op, c, 0, 0, 0)
            want = move_lanes(Held.of([Piece(p.tile, apart(p.box, p.partial), p.addr) for p in pieces]),
                              [Need(n.tiles, apart(n.box, n.partial), 0) for n in needs],
                              PARTIAL_BYTES, SPEC, grain, Lanes(SPEC, pairs=True))
            got = reduction_lanes(cat, op, c)
            for lane in ("rx", "tx", "pair"):
                assert (getattr(got, lane) == getattr(want, lane)).all(), (op.name, c.layout.label, lane)
            phase = next(gp.phase for gp in generate(wl, SPEC, {op.name: c.layout}, grain).phases
                         if gp.phase.name == f"{op.name}-reduction")
            tm = phase_timings(phase, SPEC)
            assert 0 < got.bound() <= max(endpoint_bound(tm, SPEC).value, pair_bound(tm, SPEC).value)
            checked += 1
    assert checked >= 8


def _variant(workload: str, tmp_path: Path) -> str:
    """A bundled workload, or one changed as the bundled SigLIP workloads are: `hosted`,
    mini-mlp with its graph input written by the host where it is read (nothing of it moves on
    chip); `prepared`, mini-attention with q, k and v moved into their homes in phases of
    their own before the batched GEMMs multicast them (the reference's Q/K/V preparation)."""
    if workload not in ("hosted", "prepared"):
        return workload
    models = Path(__file__).parent.parent / "models"
    if workload == "hosted":
        text = (models / "mini-mlp.yaml").read_text()
        changed = text.replace("input: true", "input: host-replicated")
    else:
        text = (models / "mini-attention.yaml").read_text()
        changed = text.replace("{tensor: q, heads: 4}", "{tensor: q, heads: 4, prepare: true}").replace(
            "transpose: true}", "transpose: true, prepare: true}").replace(
            "{tensor: v, heads: 4}", "{tensor: v, heads: 4, prepare: true}")
        assert changed.count("prepare") == 3
    assert changed != text
    (tmp_path / f"{workload}.yaml").write_text(changed)
    return str(tmp_path / f"{workload}.yaml")


@pytest.mark.parametrize("workload, grain", [("mini-mlp", None), ("mini-mlp", 256),
                                             ("mini-attention", "box"), ("hosted", None),
                                             ("prepared", None)])
def test_an_input_phase_takes_at_least_its_floors(workload: str, grain, tmp_path: Path) -> None:
    """`inflow_floor` (a tile's weight block and the rest of its moved blocks on one receive
    lane), `row_pair_floor` (the group bound's argument on two tiles of a grid row) and
    `home_pair_floor` (two partner weight homes' sends), all whatever the producers leave,
    and `row_pair_bound` (the row pairs with the producer known): below the endpoint, pair and
    group bounds of every input phase generated for plans drawn from the catalogue, with its
    addresses dropped but their widths kept (`widths_only`)."""
    from ipuopt.layout.candidates import INPUT_LAYOUT
    from ipuopt.layout.moves import Moves
    from ipuopt.layout.pricing import Held, home_pair_floor, inflow_floor, row_pair_bound, row_pair_floor
    from ipuopt.workloads.geometry import operand_home, operand_needs

    wl = load_workload(_variant(workload, tmp_path))
    cat = Catalogue(wl, SPEC, 0.5, grain, lambda _m: None, lambda: None)
    moves = Moves(cat)
    moves.refresh(cat.cands, exact=False)
    rng = random.Random(1)
    gemms = [op for op in wl.operators if op.kind == "gemm"]

    def have(plan: dict, tensor: str) -> str:  # the layout its producing GEMM leaves it in
        src = cat.producer.get(tensor)
        while src is not None and src.kind != "gemm":
            src = cat.producer.get(src.inputs[0].tensor)
        return INPUT_LAYOUT if src is None else plan[src.name].doc["output"]

    positive: Counter[str] = Counter()
    for _ in range(8):
        plan = {op.name: rng.choice(cat.cands[op.name]) for op in gemms}
        phases = {gp.phase.name: gp.phase for gp in generate(
            wl, SPEC, {g: c.source.layout for g, c in plan.items()}, grain).phases}
        for op in gemms:
            name = next(n for n in phases if n in (f"{op.name}-input", f"{op.name}-redistribution"))
            bare = widths_only(phases[name])
            tm = phase_timings(bare, SPEC)
            best = max(b(tm, SPEC).value for b in (endpoint_bound, pair_bound, group_bound))
            a, c = op.inputs[0].tensor, plan[op.name].source
            homes = Held.of(operand_home(operand_needs(wl, op, c, 0, 0)))
            held = homes if op.inputs[0].prepare else moves.held_of(a, have(plan, a))
            for floor, value in (
                    ("inflow_floor", inflow_floor(wl, op, c, SPEC, grain, moves.largest)),
                    ("row_pair_floor", row_pair_floor(wl, op, c, SPEC, grain, moves.largest)),
                    ("home_pair_floor", home_pair_floor(wl, op, c, SPEC, grain, moves.largest)),
                    ("row_pair_bound", row_pair_bound(wl, op, c, SPEC, grain, held))):
                assert value <= best, (floor, op.name, c.layout.label, value, best)
                positive[floor] += value > 0
    # with a hosted input only the second GEMM's input phase has row pairs to count
    least = 3 if workload == "hosted" else 5
    assert positive["inflow_floor"] >= 12 and min(positive.values()) >= least, positive


@pytest.mark.parametrize("label", ["2x4x4/1x1", "2x4x4/2x1", "3x2x6/1x2", "2x2x3/1x1"])
def test_fewer_pieces_than_partials_reduce_onto_fewer_tiles_and_price_below_the_phase(label: str) -> None:
    """A*B < P (the reference reduces nine partials onto one tile a block): the first A*B
    partials reduce, the others send their whole block; the reduction's prices (the load
    bound `reduction_lanes`, the candidate's own `reduction`, the closed-form pair bound)
    stay below the generated phase's endpoint and pair bounds, and each owner receives
    P - 1 pieces."""
    from ipuopt.layout.candidates import Cand
    from ipuopt.layout.pricing import own_exchange
    from ipuopt.layout.program_bound import _pair_reduction, reduction_lanes
    from ipuopt.workloads.gemm import GemmLayout, price

    wl = load_workload("mini-mlp")
    cat = Catalogue(wl, SPEC, 0.5, None, lambda _m: None, lambda: None)
    op = next(o for o in wl.operators if o.name == "gemm1")
    lay = GemmLayout.parse(label, SPEC)
    c = price(wl, op, lay, SPEC)
    assert c is not None and lay.sub_a * lay.sub_b < lay.parts
    gen = generate(wl, SPEC, {"gemm1": lay})
    phase = next(gp for gp in gen.phases if gp.phase.name == "gemm1-reduction")
    owners = Counter(t for need in phase.needs["gemm1.partial"] for t in need.tiles)
    pieces = lay.sub_a * lay.sub_b
    assert len(owners) == c.groups * lay.rows * lay.cols * pieces  # one tile per piece of each block
    assert set(owners.values()) == {lay.parts - 1}
    tm = phase_timings(phase.phase, SPEC)
    endpoint, pair = endpoint_bound(tm, SPEC).value, pair_bound(tm, SPEC).value
    own = own_exchange(wl, op, c, SPEC)["reduction"]
    assert 0 < reduction_lanes(cat, op, c).bound() <= max(endpoint, pair)
    assert 0 < own <= max(endpoint, pair)
    assert _pair_reduction(cat, op, Cand({}, 0, c)) <= pair
    with pytest.raises(InputError, match="more pieces than the 4 partials"):
        GemmLayout.parse("2x4x4/3x2", SPEC)


@pytest.mark.parametrize("workload", ["mini-mlp", PREPARED])
def test_the_bound_with_pair_cuts_is_below_every_sampled_plans_program(workload: str) -> None:
    """At the default grain the producer's cells floor an input phase (the second GEMM's of
    mini-mlp, attention's last two) and a preparation move (attention's) for every pair of layouts
    (`program_bound._PairCuts`, and rows of those tables where the model's best plans value
    them lower): the bound over every plan stays below each sampled plan's, whose terms are
    checked against its generated phases at that grain."""
    wl = load_workload(workload)
    cat = Catalogue(wl, SPEC, 0.5, None, lambda _m: None, lambda: None)
    lines: list[str] = []
    everything = program_bound(wl, SPEC, None, params=SolveParams(time_limit=10, workers=1, seed=0),
                               catalogue=cat, say=lines.append)
    assert any("input phase floored for" in m for m in lines), lines  # then the moves', if time is left
    tested = 0
    for plan in _plans(wl, 10):
        labels = {op: c.layout.label for op, c in plan.items()}
        try:
            one = program_bound(wl, SPEC, None, fixed=labels, catalogue=cat,
                                params=SolveParams(time_limit=8, workers=1, seed=0))
        except Exception as exc:  # a plan that does not fit memory is no plan
            assert "fits" in str(exc)
            continue
        _check_terms(one.terms, generate(wl, SPEC, {op: c.layout for op, c in plan.items()}, None))
        assert everything.value <= one.value, (labels, one.terms)
        tested += 1
    assert tested >= 6


def test_a_rounds_model_has_a_share_of_the_time_left(monkeypatch) -> None:
    """No round's model may take more than `ROUND_SHARE` of the time left (a model with the
    tables' rows can take minutes: its bound and best plan so far then stand)."""
    from ipuopt.layout import program_bound as pb

    asked: list[float] = []
    solve = pb._BoundModel.solve
    monkeypatch.setattr(pb._BoundModel, "solve", lambda self, params, budget, hint=None, seconds=None: (
        asked.append(seconds), solve(self, params, budget, hint, seconds))[1])
    wl = load_workload("mini-mlp")
    program_bound(wl, SPEC, None, params=SolveParams(time_limit=4, workers=1, seed=0))
    assert asked and all(s is not None and s <= max(pb.AHEAD_S, pb.ROUND_SHARE * 4) for s in asked), asked


def test_a_table_row_holds_for_every_pair_and_is_the_table_on_its_own_column() -> None:
    """`table_row`: a[r] + b[k] never above the table, equal to it on the column it is made for
    (a model's row then holds for every plan and is exact for that class), and b the same
    value but on the columns kept (one term in the model for all of them)."""
    rng = np.random.default_rng(0)
    for _ in range(40):
        table = rng.integers(0, 1000, size=(int(rng.integers(1, 7)), int(rng.integers(1, 7))))
        for c, keep in itertools.product(range(table.shape[1]), (1, 3, 8)):
            a, b = table_row(table, c, keep)
            total = a[:, None] + b[None, :]
            assert (total <= table).all()
            assert (total[:, c] == table[:, c]).all()
            assert len(set(b.tolist()) - {-table[:, c].max()}) <= keep


def test_a_bound_capped_by_the_candidates_left_out_holds_more_and_stays_below_every_plan(monkeypatch) -> None:
    """Held 4 per GEMM at first, the model's bound soon reaches the least floor of those left
    out: the model is made again holding twice as many (the prices found carried over), and
    the bound it reports stays below every sampled plan's floor."""
    from ipuopt.layout import program_bound as pb

    wl = load_workload("mini-mlp")
    cat = Catalogue(wl, SPEC, 0.5, "box", lambda _m: None, lambda: None)
    monkeypatch.setattr(pb, "MAX_CANDIDATES", 4)
    said: list[str] = []
    grown = program_bound(wl, SPEC, "box", params=SolveParams(time_limit=20, workers=1, seed=0),
                          catalogue=cat, say=said.append)
    assert any("held per GEMM" in m for m in said), said
    assert max(grown.candidates.values()) > 4
    for plan in _plans(wl, 10):
        floor = _floor(generate(wl, SPEC, {op: c.layout for op, c in plan.items()}, "box"))
        assert grown.value <= floor, {op: c.layout.label for op, c in plan.items()}


def _cut_model(workload: str) -> tuple:
    """The program bound's model of `workload` at the default grain on test64, every candidate
    held, and its pair cuts with every table whole."""
    from ipuopt.layout import program_bound as pb

    wl = load_workload(workload)
    cat = Catalogue(wl, SPEC, 0.5, None, lambda _m: None, lambda: None)
    prog, moves, terms, floors = pb._start(cat)
    chosen, _out, _truncated = pb._hold(cat, prog, floors, {g: min(f) for g, f in floors.items()},
                                        None, None, 0.5, pb.MAX_CANDIDATES)
    held, model = pb._model(cat, prog, moves, terms, chosen)
    cuts = pb._PairCuts(moves, model)
    cuts.add(math.inf)
    return wl, moves, held, model, cuts.cuts


def test_each_plans_floors_add_up_below_its_generated_program() -> None:
    """The candidates' floors (`program_bound._start`: what each GEMM adds to any program, its
    preparation phases each with their sync and move) add up, over a plan's GEMMs, to at most
    the plan's floor from its generated phases: what `_hold` orders candidates by and what
    caps the bound (`outside`) rests on it."""
    from ipuopt.layout import program_bound as pb

    wl = load_workload(PREPARED)
    cat = Catalogue(wl, SPEC, 0.5, None, lambda _m: None, lambda: None)
    _prog, _moves, _terms, floors = pb._start(cat)
    rng = random.Random(0)
    for _ in range(12):
        plan = {g: rng.randrange(len(f)) for g, f in floors.items()}
        gen = generate(wl, SPEC, {g: cat.cands[g][i].source.layout for g, i in plan.items()})
        assert sum(floors[g][i] for g, i in plan.items()) <= _floor(gen), plan


def test_a_preparation_moves_table_is_below_its_price() -> None:
    """Each preparation phase's move gets a table per (producer layout, need layout) whatever
    else the plan is (`_PairCuts._moves`), and each entry is at most the move's price with
    that producer's layout, 0 where the two layouts are one; most entries are above 0."""
    _wl, moves, _held, model, cuts = _cut_model(PREPARED)
    made = {cut.key: cut for cut in cuts if len(cut.key) == 3}
    assert set(made) == {("qproj", "scores", "q"), ("kproj", "scores", "k"), ("vproj", "context", "v")}
    rng = random.Random(0)
    for (_src, g, t), cut in made.items():
        labels = {row: label for label, row in cut.at.items()}
        needs = {int(k): c.doc["needs"][t] for k, c in zip(cut.cls, model.held[g], strict=True)}
        above = 0
        for _ in range(60):
            r, k = rng.randrange(cut.table.shape[0]), rng.randrange(cut.table.shape[1])
            price = 0 if labels[r] == needs[k] else moves.price(t, labels[r], needs[k])
            assert cut.table[r, k] <= price, (t, labels[r], needs[k])
            above += cut.table[r, k] > 0
        assert above > 30


@pytest.mark.parametrize("workload, key", [("mini-mlp", ("gemm2", False)), (PREPARED, ("oproj", False)),
                                           (PREPARED, "a move")])
def test_a_row_of_the_pair_table_holds_its_pair_at_the_tables_floor(workload: str, key: tuple | str) -> None:
    """With the pair of the highest floor in an input phase's (or a preparation move's) table
    fixed, the model values that phase below the floor (its cuts hold the total, not the
    phase); the pair's row (`_BoundModel.table_rows`) lifts it to the floor and the bound with
    it, still below the floor of the plan it then finds, from that plan's generated phases."""
    from ipuopt.budget import Budget

    wl, _moves, held, model, cuts = _cut_model(workload)
    if key == "a move":  # the preparation move whose table holds the highest floor
        key = max((c for c in cuts if c.tensor is not None), key=lambda c: c.table.max()).key
    cut = next(c for c in cuts if c.key == key)
    table = cut.table[cut.lab[:, None], cut.cls[None, :]]
    j, i = (int(k) for k in np.unravel_index(np.argmax(table), table.shape))
    model.m.add(model.x[cut.src][j] == 1)
    model.m.add(model.x[cut.g][i] == 1)
    params = SolveParams(workers=1, seed=0)
    before, proven, _plan = model.solve(params, Budget())
    assert proven and model.valued[key] < table[j, i]
    model.table_rows(cut, j, i)
    after, proven, plan = model.solve(params, Budget())
    assert proven and model.valued[key] >= table[j, i] and after > before
    assert after <= _floor(generate(wl, SPEC, {g: held[g][k].source.layout for g, k in plan.items()}))


def test_the_model_holds_more_of_the_gemm_whose_floors_climb_slowest() -> None:
    """`cap` per GEMM on average, the cheapest plans first: every held candidate's least plan
    is below every one left out, and the least left out (the bound's cap) is above what an
    even split holds back."""
    from types import SimpleNamespace

    from ipuopt.layout.program_bound import _hold

    floors = {"slow": [5 + i for i in range(60)], "fast": [7 + 10 * i for i in range(60)],
              "few": [3, 4, 400]}  # "few": above `upper` but its cheapest two
    least = {g: min(f) for g, f in floors.items()}
    cat = SimpleNamespace(cands={g: [None] * len(f) for g, f in floors.items()})
    prog = SimpleNamespace(heads=[SimpleNamespace(name=g) for g in floors])
    upper = sum(least.values()) + 300
    chosen, outside, truncated = _hold(cat, prog, floors, least, upper, None, 0.5, 10)  # type: ignore[arg-type]
    plan = {g: [f - least[g] + sum(least.values()) for f in floors[g]] for g in floors}
    held = [plan[g][i] for g in floors for i in chosen[g]]
    out = [plan[g][i] for g in floors for i in range(len(floors[g])) if i not in chosen[g]]
    assert len(held) == 30 and truncated and max(held) <= min(out) == outside
    assert len(chosen["slow"]) > 10 > len(chosen["fast"]) and len(chosen["few"]) == 2
    even = min(sorted(plan[g])[min(10, len(plan[g]) - 1)] for g in ("slow", "fast"))
    assert outside > even


def test_a_plans_bound_counts_its_generated_phases_and_one_layouts_steps_together() -> None:
    """Priced for one plan, each input phase is at least the group bound of its generated
    transfers without their memory elements (the multicast argument the lane loads miss:
    gemm2's redistribution here), and a GEMM's multiply or reduce-add and the elementwise pass
    over its output add up on the tiles they share (the slowest tile's compute, exactly, on
    this plan)."""
    wl = load_workload("mini-mlp")
    cat = Catalogue(wl, SPEC, 0.5, "box", lambda _m: None, lambda: None)
    labels = {"gemm1": "5x9x1/1x1/interleaved", "gemm2": "7x2x3/3x1/interleaved"}
    one = program_bound(wl, SPEC, "box", fixed=labels, catalogue=cat,
                        params=SolveParams(time_limit=8, workers=1, seed=0))
    gen = generate(wl, SPEC, {g: next(c.source.layout for c in cat.cands[g] if c.doc["id"] == label)
                              for g, label in labels.items()}, "box")
    terms = {t["phase"]: t for t in one.terms}
    for gp in gen.phases:
        free = group_bound(phase_timings(widths_only(gp.phase), SPEC), SPEC).value
        assert terms[gp.phase.name]["exchange"] >= free, (gp.phase.name, free)
    assert terms["gemm2-redistribution"]["exchange"] == 768  # the group bound; the lanes say 760
    # gemm1's multiply (81) then gelu (14) on gemm1's tiles, before gemm2's redistribution
    assert terms["gemm2-redistribution"]["compute"] == 95
    _check_terms(one.terms, gen)
