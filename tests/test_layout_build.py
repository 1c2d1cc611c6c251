"""Layout problems built from workloads: prices equal the phases `ipuopt gen` emits, floors
are floors, and pruning keeps the optimum."""

from __future__ import annotations

import json
import math
import random
from collections import defaultdict

import pytest
from conftest import run_cli

from ipuopt.exchange.bounds import endpoint_bound
from ipuopt.exchange.phase import paired_possible
from ipuopt.exchange.timing import phase_timings
from ipuopt.layout import pricing
from ipuopt.layout.build import build_problem
from ipuopt.layout.solve import plan
from ipuopt.spec import load_spec
from ipuopt.workloads.gemm import GemmLayout, enumerate_candidates
from ipuopt.workloads.geometry import operand_needs
from ipuopt.workloads.phases import generate
from ipuopt.workloads.workload import load_workload


def lanes_bound(transfers, spec) -> int:
    """The load bound recomputed from generated transfers (independently of `pricing`)."""
    ex = spec.exchange
    rx: dict[int, int] = defaultdict(int)
    tx: dict[int, int] = defaultdict(int)
    for t in transfers:
        paired = ex.paired_words_per_cycle if paired_possible(t, spec) else 0
        d = math.ceil(t.words / max(ex.ordinary_words_per_cycle, paired))
        tx[t.src] += ex.tx_overhead + d
        for x in t.dst:
            rx[x] += ex.rx_lead + d
    lat = spec.latency(0, 1)
    return max(max(rx.values(), default=0) + ex.tx_overhead + lat - ex.rx_lead if rx else 0,
               max(tx.values(), default=0) + lat if tx else 0)


def _source(wl, gen, tensor):
    """Where a GEMM operand comes from in a generated program: its producing GEMM's output
    (through elementwise operators, which run in place) or the graph input's rows."""
    producer = {op.out.tensor: op for op in wl.operators}
    while tensor in producer and producer[tensor].kind == "elementwise":
        tensor = producer[tensor].inputs[0].tensor
    if tensor in producer:
        op = producer[tensor]
        return pricing.output_held(wl, op, gen.layouts[op.name])
    return pricing.input_held(wl, tensor, gen.spec)


@pytest.mark.parametrize("workload,spec_name,grain", [
    ("mini-mlp", "test64", "box"), ("mini-mlp", "test64", None), ("mini-mlp", "test64", 64),
    ("mini-attention", "test64", None), ("mini-attention", "test64", 64)])
def test_prices_are_the_generated_phases(workload, spec_name, grain):
    """For random layouts and each grain: the weight broadcast, reduction and every operand
    move priced in closed form or from boxes equal the load bound of exactly the transfers
    `gen` emits for them, which never exceeds the phase's endpoint bound; each move's floor
    is below it."""
    wl, spec = load_workload(workload), load_spec(spec_name)
    rng = random.Random(7)
    gemms = [op for op in wl.operators if op.kind == "gemm"]
    pools = {op.name: enumerate_candidates(wl, op, spec) for op in gemms}
    largest = {op.out.tensor: max(pricing.output_held(wl, op, c).largest() for c in pools[op.name])
               for op in gemms}
    for _ in range(6 if grain == "box" else 3):
        chosen = {name: rng.choice(pool).layout for name, pool in pools.items()}
        gen = generate(wl, spec, chosen, grain)
        for gp in gen.phases:
            assert lanes_bound(gp.phase.transfers, spec) <= endpoint_bound(
                phase_timings(gp.phase, spec), spec).value
        by_phase = {gp.phase.name: gp for gp in gen.phases}
        for op in gemms:
            cand = gen.layouts[op.name]
            own = pricing.own_exchange(wl, op, cand, spec, grain)
            if cand.layout.parts > 1:
                red = by_phase[f"{op.name}-reduction"].phase.transfers
                assert own["reduction"] == lanes_bound(red, spec)
            first = next(gp for gp in gen.phases if gp.phase.name.startswith(f"{op.name}-")
                         and not gp.phase.name.endswith("reduction"))
            carried = {t: d.tensor for d in first.deliveries for t in d.transfers}
            for which, view in enumerate(op.inputs):
                mine = [t for t in first.phase.transfers if carried[t.id] == view.tensor]
                if wl.tensors[view.tensor].weight:
                    assert own["weights"] == lanes_bound(mine, spec)
                    continue
                needs = operand_needs(wl, op, cand, which, 0)
                priced = pricing.move_bound(_source(wl, gen, view.tensor), needs, wl.elem_bytes, spec,
                                            grain)
                assert priced == lanes_bound(mine, spec), (op.name, view.tensor)
                src = view.tensor
                held = largest.get(src) or _source(wl, gen, src).largest()
                lay = cand.layout
                bb, m, k, n = wl.gemm_dims(op)
                mb, kb, nb = math.ceil(m / lay.rows), math.ceil(k / lay.parts), math.ceil(n / lay.cols)
                block = cand.batches_per_group * (mb * kb if which == 0 else kb * nb)
                group = lay.cols if which == 0 else lay.rows
                if src in largest or not wl.tensors[src].input:
                    assert pricing.move_floor(block, group, held, wl.elem_bytes, spec) <= priced


@pytest.mark.parametrize("workload,within,utilisation",
                         [("mini-mlp", 0.2, 0.9), ("mini-attention", 0.01, 1.0)])
def test_pruning_keeps_the_optimum(workload, within, utilisation):
    """The kept problem has the optimum of a far less pruned one, and its plan is priced as
    the problem says (attention on full grids only: its problem builds in seconds, not minutes)."""
    wl, spec = load_workload(workload), load_spec("test64")
    grain = "box" if workload == "mini-attention" else None  # runs triple its build time
    tight, doc = build_problem(wl, spec, within=0.0, min_utilisation=utilisation, grain=grain)
    loose, loose_doc = build_problem(wl, spec, within=within, min_utilisation=utilisation, grain=grain)
    assert sum(loose_doc["kept"]["kept"].values()) > sum(doc["kept"]["kept"].values())
    a = plan(tight, "milp", {"workers": 1, "seed": 0}).to_dict()
    b = plan(loose, "milp", {"workers": 1, "seed": 0}).to_dict()
    c = plan(loose, "cpsat", {"workers": 1, "seed": 0}).to_dict()
    assert a["status"] == b["status"] == c["status"] == "optimal"
    assert a["cycles"] == b["cycles"] == c["cycles"] <= doc["kept"]["reference_cycles"]
    assert a["cycles"] <= a["beam"]["cycles"]
    for name, n in doc["kept"]["kept"].items():
        assert 0 < n <= doc["kept"]["enumerated"][name]


def _greedy_horizon(transfers, spec, name="p") -> int:
    """The greedy's horizon (as `solve` would give it, without the bounds it computes too)."""
    from ipuopt.exchange.greedy import best_greedy
    from ipuopt.exchange.instance import Instance
    from ipuopt.exchange.phase import Phase

    if not transfers:
        return 0
    inst = Instance(Phase(spec_ref=spec.name, transfers=list(transfers), name=name), spec)
    return inst.horizon(best_greedy(inst)[:2])


def test_greedy_prices_are_the_scheduled_phases():
    """`--exchange greedy`: the first operator's own exchange and input move are the greedy
    horizons of exactly the transfers `gen` emits for them in the whole program (same
    buffers), never below the load bounds; the plan is feasible, not optimal, when plans left
    out of the problem may be cheaper, with the bound they cannot go below. (Whole boxes:
    runs are ten times as many transfers to schedule, and grains are priced alike.)"""
    wl, spec = load_workload("mini-mlp"), load_spec("test64")
    problem, doc = build_problem(wl, spec, min_utilisation=0.95, exchange="greedy", grain="box")
    _, bound_doc = build_problem(wl, spec, min_utilisation=0.95, grain="box")
    assert doc["kept"]["exchange"] == "greedy" and doc["kept"]["phases_scheduled"] > 0
    first = doc["operators"]["gemm1"]["candidates"]
    x_rows = {r["to"]: r["cycles"] for r in doc["redistribution"] if r["tensor"] == "x"}
    checked = 0
    for cand in first[:6]:
        why = cand["why"]
        assert why["weights"] >= why["bound"]["weights"] and why["reduction"] >= why["bound"]["reduction"]
        assert cand["exchange"] == why["weights"] + why["reduction"]
        gen = generate(wl, spec, {"gemm1": GemmLayout.parse(cand["id"], spec)}, "box")
        by_name = {gp.phase.name: gp for gp in gen.phases}
        inp = by_name["gemm1-input"]
        carried = {t: d.tensor for d in inp.deliveries for t in d.transfers}
        assert why["weights"] == _greedy_horizon(
            [t for t in inp.phase.transfers if carried[t.id] == "w1"], spec)
        red = by_name.get("gemm1-reduction")
        assert why["reduction"] == (_greedy_horizon(red.phase.transfers, spec) if red else 0)
        if cand["needs"]["x"] in x_rows:
            checked += 1
            assert x_rows[cand["needs"]["x"]] == _greedy_horizon(
                [t for t in inp.phase.transfers if carried[t.id] == "x"], spec)
    assert checked
    bound_rows = {(r["tensor"], r["from"], r["to"]): r["cycles"] for r in bound_doc["redistribution"]}
    shared = [r for r in doc["redistribution"] if (r["tensor"], r["from"], r["to"]) in bound_rows]
    assert shared and all(r["cycles"] >= bound_rows[(r["tensor"], r["from"], r["to"])] for r in shared)
    result = plan(problem, "milp", {"workers": 1, "seed": 0}).to_dict()
    above = doc["kept"]["excluded_above"]
    assert above == doc["kept"]["reference_cycles"] and result["cycles"] > above
    assert result["status"] == "feasible" and result["lower_bound"] == above + 1
    assert "--within" in result["reason"]


def _ipuopt(*args, cwd):
    return run_cli(*args, cwd=cwd)


def test_layout_problem_and_plan_from_the_command_line(tmp_path):
    r = _ipuopt("layout-problem", "mini-mlp", "--spec", "test64", "--out", "p.yaml", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["kept"]["gemm1"] < info["enumerated"]["gemm1"]
    solved = _ipuopt("layout", "p.yaml", "--json", cwd=tmp_path)
    direct = _ipuopt("layout", "mini-mlp", "--spec", "test64", "--json", "--out", "plan.json", cwd=tmp_path)
    assert solved.returncode == 0 and direct.returncode == 0, solved.stderr + direct.stderr
    a, b = json.loads(solved.stdout), json.loads(direct.stdout)
    assert a["status"] == b["status"] == "optimal" and a["cycles"] == b["cycles"]
    assert b["workload"] == "mini-mlp" and b["spec"] == "test64"
    gen = _ipuopt("gen", "mini-mlp", "--spec", "test64", "--plan", "plan.json", "--json", cwd=tmp_path)
    assert gen.returncode == 0, gen.stderr
    layouts = json.loads(gen.stdout)["layouts"]
    assert {op: layouts[op]["layout"] for op in layouts} == {
        op: cid for op, cid in b["choice"].items() if op in layouts}


def test_rerank_schedules_every_finalist(tmp_path):
    r = _ipuopt("layout", "mini-mlp", "--spec", "test64", "--k", "3", "--rerank", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rows = doc["rerank"]
    assert [x["rank"] for x in rows] == [1, 2, 3]
    assert sorted(x["scheduled_rank"] for x in rows) == [1, 2, 3]
    # the scheduled figure is the program replay's own total
    with open(tmp_path / "plan.json", "w") as f:
        json.dump({"choice": rows[0]["choice"]}, f)
    run = _ipuopt("run", "mini-mlp", "--spec", "test64", "--plan", "plan.json", "--json", cwd=tmp_path)
    assert json.loads(run.stdout)["total_cycles"] == rows[0]["scheduled"]


def test_layout_problem_mistakes(tmp_path):
    for args, field in ((("layout-problem", "nope", "--out", "p.yaml"), "nope"),
                        (("layout-problem", "mini-mlp", "--out", "p.yaml", "--within", "-1"), "--within"),
                        (("layout-problem", "mini-mlp", "--out", "p.yaml", "--spec", "nope"), "--spec"),
                        (("layout", "mini-mlp", "--spec", "nope"), "--spec"),
                        (("layout-problem", "mini-mlp", "--out", "p.yaml", "--exchange", "x"), "--exchange"),
                        (("layout", "beam-loses", "--exchange", "greedy"), "--exchange")):
        r = _ipuopt(*args, cwd=tmp_path)
        assert r.returncode == 2 and "Traceback" not in r.stderr and field in r.stderr, r.stderr
    assert not (tmp_path / "p.yaml").exists()


def test_a_stopped_build_hands_back_the_reference_problem():
    """Stopped after its reference plan, a `partial` build returns that plan's small problem:
    its plan is the reference's, feasible (not optimal: plans left out are not priced), and
    without `partial` the same stop raises."""
    from ipuopt.budget import Stopped

    wl, spec = load_workload("mini-mlp"), load_spec("test64")
    seen: list[str] = []

    def check() -> None:
        if any(m.startswith("reference plan") for m in seen):
            raise Stopped

    problem, doc = build_problem(wl, spec, within=0.2, progress=seen.append, check=check, partial=True)
    kept = doc["kept"]
    assert kept["partial"] >= 1 and all(1 <= n <= kept["partial"] for n in kept["kept"].values())
    res = plan(problem, "milp", {"workers": 1, "seed": 0})
    assert res.status == "feasible" and res.bound is None and "most promising" in res.reason
    assert res.value == kept["reference_cycles"]
    full, _ = build_problem(wl, spec, within=0.0)
    assert plan(full, "milp", {"workers": 1, "seed": 0}).value <= res.value
    seen.clear()
    with pytest.raises(Stopped):
        build_problem(wl, spec, within=0.2, progress=seen.append, check=check)


def test_a_wider_reference_keeps_less_and_the_same_optimum():
    """The reference of the 6 and then the 48 most promising candidates per operator is never
    above the one of the 6 alone; its lower limit keeps fewer candidates and rows, and the
    kept problem's optimum is the same."""
    wl, spec = load_workload("mini-attention"), load_spec("test64")
    narrow, narrow_doc = build_problem(wl, spec, grain="box", reference_widths=(6,))
    wide, wide_doc = build_problem(wl, spec, grain="box")
    assert wide_doc["kept"]["reference_cycles"] < narrow_doc["kept"]["reference_cycles"]
    assert len(wide_doc["redistribution"]) < len(narrow_doc["redistribution"])
    assert sum(wide_doc["kept"]["kept"].values()) < sum(narrow_doc["kept"]["kept"].values())
    a, b = (plan(p, "milp", {"workers": 1, "seed": 0}) for p in (narrow, wide))
    assert a.status == b.status == "optimal" and a.value == b.value <= wide_doc["kept"]["reference_cycles"]


def test_a_pricing_that_cannot_end_in_time_stops_at_once():
    """Given the seconds left, the pricing of moves stops after its first pairs when their pace
    shows the rest will not fit (not when the time is gone); its pairs are priced in full when
    they fit."""
    import time

    from ipuopt.budget import Stopped

    wl, spec = load_workload("mini-mlp"), load_spec("test64")
    seen: list[str] = []
    t0 = time.perf_counter()
    problem, doc = build_problem(wl, spec, within=0.2, progress=seen.append, partial=True,
                                 left=lambda: 1e-4)
    assert doc["kept"]["partial"] and any(" moves to p" in m for m in seen)  # to probe, or to price
    assert time.perf_counter() - t0 < 30
    with pytest.raises(Stopped):
        build_problem(wl, spec, within=0.2, left=lambda: 1e-4)
    whole, roomy = build_problem(wl, spec, within=0.2, left=lambda: 1e6)
    assert roomy["kept"]["pairs_probed"] > 64 and "partial" not in roomy["kept"]
    # stopped after the ties: the partial problem's plan comes with the ties' bound on every plan
    least = doc["kept"]["least_plan"]
    optimum = plan(whole, "milp", {"workers": 1, "seed": 0}).value
    assert 0 < least <= optimum
    res = plan(problem, "milp", {"workers": 1, "seed": 0})
    assert res.status == "feasible" and res.bound == least <= optimum <= res.value
    assert f"no plan of the whole problem costs less than {least}" in res.reason


def test_listing_the_pairs_to_price_asks_the_clock(monkeypatch):
    """The pairs a plan could use are listed before any is priced: millions on an attention
    block, so the listing itself asks the clock (it did not: an optimize of SigLIP attention
    was still listing at 675 s of a 600 s limit)."""
    import math

    import ipuopt.layout.moves as moves_module
    from ipuopt.budget import Stopped
    from ipuopt.layout.candidates import Catalogue
    from ipuopt.layout.moves import Moves

    wl, spec = load_workload("mini-mlp"), load_spec("test64")
    cat = Catalogue(wl, spec, 0.5, None, lambda _m: None, lambda: None)
    moves = Moves(cat)
    moves.refresh(cat.cands, exact=False)
    monkeypatch.setattr(moves_module, "CHECK_EVERY", 64)
    assert len(list(moves._pairs(cat.cands, math.inf))) > 64

    def late() -> None:
        raise Stopped

    cat.check = late
    with pytest.raises(Stopped):
        list(moves._pairs(cat.cands, math.inf))
    # and pricing them makes each held layout when it comes to it, asking the clock first
    # (all of them were made first: minutes on an attention block, the clock not asked)
    monkeypatch.setattr(moves_module, "CHECK_EVERY", 1 << 16)
    cat.check = lambda: None
    todo = list(moves._pairs(cat.cands, math.inf))
    made: list[tuple] = []
    monkeypatch.setattr(moves, "held_of", lambda *key: made.append(key))
    cat.check = late
    with pytest.raises(Stopped):
        moves._bounds(todo, list(range(len(todo))), lambda row: moves.needs_of(row[2]), None, "price")
    assert made == []


def test_regions_off_alignment_price_every_run_as_one_that_may_pair():
    """Offsets in a buffer say whether its addresses are aligned only when every region starts
    aligned; a region 4 bytes off must not make a price exceed the generated phase's load
    bound (every run counts as one that may be paired)."""
    from dataclasses import replace

    wl, base = load_workload("mini-mlp"), load_spec("test64")
    spec = replace(base, regions=tuple(replace(r, start=r.start + 4, size=r.size - 4) for r in base.regions))
    rng = random.Random(3)
    gemms = [op for op in wl.operators if op.kind == "gemm"]
    pools = {op.name: enumerate_candidates(wl, op, spec) for op in gemms}
    checked = 0
    for _ in range(4):
        gen = generate(wl, spec, {name: rng.choice(pool).layout for name, pool in pools.items()}, None)
        first = {gp.phase.name.split("-")[0]: gp for gp in gen.phases
                 if not gp.phase.name.endswith("reduction")}
        for op in gemms:
            gp, cand = first[op.name], gen.layouts[op.name]
            carried = {t: d.tensor for d in gp.deliveries for t in d.transfers}
            own = pricing.own_exchange(wl, op, cand, spec, None)
            red = [gp2.phase.transfers for gp2 in gen.phases if gp2.phase.name == f"{op.name}-reduction"]
            assert not red or own["reduction"] <= lanes_bound(red[0], spec)
            view = op.inputs[0]
            if wl.tensors[view.tensor].weight:
                continue
            mine = [t for t in gp.phase.transfers if carried[t.id] == view.tensor]
            priced = pricing.move_bound(_source(wl, gen, view.tensor), operand_needs(wl, op, cand, 0, 0),
                                        wl.elem_bytes, spec, None)
            assert priced <= lanes_bound(mine, spec)
            checked += 1
    assert checked >= 4


def test_overlapping_boxes_are_those_of_the_full_table():
    """`overlapping` finds exactly the pairs the full (i, j) table finds, on random boxes
    (empty and touching ones among them) and on grid cuts like a layout's."""
    import numpy as np

    from ipuopt.workloads.overlaps import DENSE, overlapping

    rng = np.random.default_rng(0)

    def full(alo, ahi, blo, bhi):
        hit = np.all(np.maximum(alo[:, None], blo[None]) < np.minimum(ahi[:, None], bhi[None]), axis=2)
        return set(zip(*np.nonzero(hit), strict=True)) if hit.size else set()

    def grid(n, parts):
        cuts = [np.linspace(0, n, k + 1).astype(int) for k in parts]
        lo = np.array([[a[i], b[j], c[k]] for i in range(parts[0]) for j in range(parts[1])
                       for k in range(parts[2]) for a, b, c in [cuts]])
        hi = np.array([[a[i + 1], b[j + 1], c[k + 1]] for i in range(parts[0]) for j in range(parts[1])
                       for k in range(parts[2]) for a, b, c in [cuts]])
        return lo, hi

    cases = []
    for _ in range(200):
        na, nb = rng.integers(0, 25, 2)
        lo_a, lo_b = rng.integers(0, 8, (na, 3)), rng.integers(0, 8, (nb, 3))
        cases.append((lo_a, lo_a + rng.integers(0, 4, (na, 3)), lo_b, lo_b + rng.integers(0, 4, (nb, 3))))
    for _ in range(20):  # past `DENSE` pairs: the search by distinct ranges
        na, nb = rng.integers(130, 300, 2)
        lo_a, lo_b = rng.integers(0, 30, (na, 3)), rng.integers(0, 30, (nb, 3))
        cases.append((lo_a, lo_a + rng.integers(0, 6, (na, 3)), lo_b, lo_b + rng.integers(0, 6, (nb, 3))))
    cases.append((*grid(60, (1, 4, 3)), *grid(60, (5, 2, 1))))
    cases.append((*grid(36, (2, 3, 6)), *grid(36, (3, 3, 2))))
    cases.append((*grid(240, (8, 20, 3)), *grid(240, (12, 5, 4))))
    assert sum(len(a) * len(b) > DENSE for a, _, b, _ in cases) > 20
    for alo, ahi, blo, bhi in cases:
        i, j = overlapping(alo, ahi, blo, bhi)
        got = list(zip(i.tolist(), j.tolist(), strict=True))
        assert len(got) == len(set(got)) and set(got) == full(alo, ahi, blo, bhi)


def test_plans_round_trip_on_a_workload_file_named_otherwise(tmp_path):
    """A workload file whose file name is not its `name:`: the problem, the plan and the run
    name the workload `mini-mlp` (the problem also records the file), and `run --plan` takes
    the plan of `layout` (from the problem file or the workload) and the run of `optimize`."""
    import shutil

    from ipuopt.data_files import bundled_path

    shutil.copy(bundled_path("mini-mlp", "models"), tmp_path / "wl.yaml")
    assert _ipuopt("layout-problem", "wl.yaml", "--spec", "test64", "--out", "lp.yaml", "--quiet",
                   cwd=tmp_path).returncode == 0
    text = (tmp_path / "lp.yaml").read_text()
    assert "workload: mini-mlp" in text and "workload_file: wl.yaml" in text
    for source, out in (("lp.yaml", "plan.json"), ("wl.yaml", "plan2.json")):
        r = _ipuopt("layout", source, "--spec", "test64", "--out", out, "--json", "--quiet", cwd=tmp_path)
        assert r.returncode == 0 and json.loads(r.stdout)["workload"] == "mini-mlp", r.stderr
    rr = _ipuopt("layout", "lp.yaml", "--rerank", "--json", "--quiet", cwd=tmp_path)
    assert rr.returncode == 0 and json.loads(rr.stdout)["rerank"], rr.stderr
    o = _ipuopt("optimize", "wl.yaml", "--spec", "test64", "--time-limit", "4", "--workers", "1",
                "--out", "run.json", "--quiet", cwd=tmp_path)
    assert o.returncode == 0, o.stderr
    chosen = json.loads((tmp_path / "run.json").read_text())["layouts"]
    for name in ("plan.json", "plan2.json", "run.json"):
        r = _ipuopt("run", "wl.yaml", "--spec", "test64", "--plan", name, "--grain", "box", "--json",
                    "--quiet", cwd=tmp_path)
        assert r.returncode == 0, (name, r.stderr)
        if name == "run.json":
            assert json.loads(r.stdout)["layouts"] == chosen
    other = _ipuopt("run", "mini-attention", "--spec", "test64", "--plan", "plan.json", cwd=tmp_path)
    assert other.returncode == 2 and "a plan for workload 'mini-mlp', not 'mini-attention'" in other.stderr

    # the API takes the same files, and the plan it returned itself
    import ipuopt

    via_file = ipuopt.run(tmp_path / "wl.yaml", "test64", plan=tmp_path / "run.json", grain="box")
    assert via_file["layouts"] == chosen
    plan = ipuopt.select_layouts(str(tmp_path / "lp.yaml"))
    gen = ipuopt.generate(tmp_path / "wl.yaml", "test64", plan=plan)
    assert {op: c.to_dict()["layout"] for op, c in gen.layouts.items()} == {
        op: plan.solution.choice[op] for op in ("gemm1", "gemm2")}
    try:
        ipuopt.generate("mini-attention", "test64", plan=tmp_path / "plan.json")
    except ipuopt.InputError as exc:
        assert "a plan for workload 'mini-mlp', not 'mini-attention'" in str(exc.problems[0])
    else:
        raise AssertionError("a plan for another workload accepted")


def test_a_layout_build_cut_short_answers_with_the_best_plan_it_has():
    """Under a time limit a workload's plan is always an answer: stopped before the
    reference plan, the compiler's layouts (status fallback, with the reason); after it, the
    reference's candidates solved (feasible); given the time, the proven plan."""
    from ipuopt.budget import Budget
    from ipuopt.layout.select import plan_of
    from ipuopt.params import SolveParams
    from ipuopt.workloads.gemm import compiler_layouts

    wl, spec = load_workload("mini-mlp"), load_spec("test64")
    # gone before the build's first look at the clock
    early = plan_of(wl, spec, "milp", SolveParams(time_limit=1e-3))
    assert early.status == "fallback" and "compiler's layouts" in early.reason and early.value is None
    assert early.solution.choice == {op: c.layout.label for op, c in compiler_layouts(wl, spec).items()}
    assert not early.interrupted
    params, budget = SolveParams(time_limit=600), Budget(600)

    def progress(info):  # Ctrl-C once the reference plan is made
        if info.get("task", "").startswith("reference plan"):
            budget.request()
    late = plan_of(wl, spec, "milp", params, progress=progress, budget=budget)
    assert late.interrupted and late.status in ("feasible", "fallback") and late.value is not None
    assert late.solution.choice and "most promising" in (late.reason + str(late.solution.kept))
    full = plan_of(wl, spec, "milp", params)
    assert full.status == "optimal" and full.value <= late.value and not full.interrupted


@pytest.mark.parametrize("workload,grain", [("mini-mlp", None), ("mini-attention", "box"), ("mini-mlp", 64)])
def test_a_probe_is_never_above_the_price(workload, grain):
    """A move probed on a few receiving tiles is part of the whole move: never priced above it;
    on the tiles that receive the most it is often the whole price."""
    from ipuopt.layout.candidates import Catalogue
    from ipuopt.layout.moves import Moves

    wl, spec = load_workload(workload), load_spec("test64")
    cat = Catalogue(wl, spec, 1.0, grain, lambda _m: None, lambda: None)
    moves = Moves(cat)
    moves.refresh(cat.cands)
    pairs = list(moves._pairs(cat.cands, math.inf))
    ids = random.Random(0).sample([i for i, p in enumerate(pairs) if p[4] is None], 300)
    priced = moves._bounds(pairs, ids, lambda row: moves.needs_of(row[2]), None, "price")
    for tiles in (1, 2, 16):
        probed = moves._bounds(pairs, ids, lambda row, k=tiles: moves.probe_needs(row[2], k), None, "p", 16)
        fitted = moves._bounds(pairs, ids, lambda row, k=tiles: moves.busiest(row, k), None, "p", 16)
        assert all(fitted[i] <= priced[i] for i in ids)
        assert all(probed[i] <= priced[i] for i in ids)
        assert sum(probed[i] == priced[i] for i in ids) > 0 if tiles == 16 else True


@pytest.mark.parametrize("grain", [None, 256])
def test_floors_and_probes_change_no_problem(monkeypatch, grain):
    """The problem built with run floors and probes is the one built by pricing every pair,
    and the one built with probes alone."""
    from ipuopt.layout import moves

    wl, spec = load_workload("mini-mlp"), load_spec("test64")
    _, floored = build_problem(wl, spec, within=0.3, min_utilisation=0.25, grain=grain)
    monkeypatch.setattr(moves.Moves, "run_floors", lambda self, todo, ids: {})
    _, probed = build_problem(wl, spec, within=0.3, min_utilisation=0.25, grain=grain)
    monkeypatch.setattr(moves, "PROBES", ())
    _, plain = build_problem(wl, spec, within=0.3, min_utilisation=0.25, grain=grain)
    assert floored["kept"]["pairs_floored"] > probed["kept"]["pairs_priced"] > 0
    assert floored["kept"]["pairs_probed"] < probed["kept"]["pairs_probed"]  # the floors ruled pairs out
    assert floored["kept"]["pairs_priced"] <= probed["kept"]["pairs_priced"]
    assert probed["kept"]["pairs_probed"] > probed["kept"]["pairs_priced"]
    assert plain["kept"]["pairs_probed"] == plain["kept"]["pairs_floored"] == 0
    for doc in (floored, probed, plain):
        for key in ("seconds", "pairs_floored", "pairs_probed", "pairs_priced"):
            doc["kept"].pop(key)
    assert floored == probed == plain


def test_output_held_in_numpy_is_where_gen_leaves_the_output():
    from ipuopt.layout.pricing import Held, output_held
    from ipuopt.workloads.geometry import output_pieces
    from ipuopt.workloads.workload import workload_from_dict

    spec = load_spec("test64")
    transposed = workload_from_dict({  # an output stored transposed
        "name": "t", "tensors": {"x": {"shape": [24, 40], "input": True},
                                 "w": {"shape": [40, 32], "weight": True}, "y": {"shape": [32, 24]}},
        "operators": [{"name": "g", "kind": "gemm", "a": "x", "b": "w",
                       "out": {"tensor": "y", "transpose": True}}]})
    per_head = workload_from_dict({  # an output stored per head, and per head transposed
        "name": "h", "tensors": {"a": {"shape": [4, 24, 16], "input": True},
                                 "b": {"shape": [4, 16, 40], "input": True},
                                 "y": {"shape": [24, 160]}, "z": {"shape": [40, 96]}},
        "operators": [{"name": "g", "kind": "gemm", "batch": 4, "a": "a", "b": "b",
                       "out": {"tensor": "y", "heads": 4}},
                      {"name": "t", "kind": "gemm", "batch": 4, "a": "a", "b": "b",
                       "out": {"tensor": "z", "heads": 4, "transpose": True}}]})
    for wl in (load_workload("mini-mlp"), load_workload("mini-attention"), transposed, per_head):
        name = wl.name
        for op in (o for o in wl.operators if o.kind == "gemm"):
            cands = enumerate_candidates(wl, op, spec, 0.25)
            for c in random.Random(1).sample(cands, min(40, len(cands))):
                fast, slow = output_held(wl, op, c), Held.of(output_pieces(wl, op, c, 0))
                for f in ("tiles", "lo", "hi", "addr"):
                    assert (getattr(fast, f) == getattr(slow, f)).all(), (name, op.name, c.layout, f)
