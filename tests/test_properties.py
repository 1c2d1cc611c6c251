"""Property tests on random small phases over random specs."""

from __future__ import annotations

import copy
import importlib.util
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import DATA, HAND_SPEC, row_and_columns
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ipuopt.budget import Budget
from ipuopt.exchange.bounds import all_bounds, best_bound, clique_bound
from ipuopt.exchange.cpsat import identical_groups, in_order, solve_cpsat
from ipuopt.exchange.greedy import RULES, best_greedy, greedy_schedule
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.phase import Phase, Transfer, load_phase
from ipuopt.exchange.random_phase import random_phase
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.solve import solve
from ipuopt.exchange.timing import phase_timings
from ipuopt.exchange.validate import validate
from ipuopt.params import SolveParams
from ipuopt.result import Status
from ipuopt.spec import Spec, load_spec, spec_from_dict


def proven_optimum(phase: Phase, spec: Spec, time_limit: float = 30, required: bool = True) -> int | None:
    """CP-SAT's proven optimum with no bound of ours as its floor (`solve` hands it the best
    bound, so a wrong bound could pass unnoticed there). The limit is deterministic time (one
    worker, a seed, no wall-clock end), so whether it proves does not turn on the machine's
    speed: a 30 s wall limit failed a random phase on a busy machine that proves in 52 s
    alone. Not proven: None unless `required`."""
    inst = Instance(phase, spec)
    params = SolveParams.of({"time_limit": time_limit, "workers": 1, "seed": 0})
    r = solve_cpsat(inst, best_greedy(inst)[:2], params, Budget().share(time_limit, firm=False))
    assert r.status == Status.OPTIMAL or not required
    return r.value if r.status == Status.OPTIMAL else None


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    doc = copy.deepcopy(HAND_SPEC)
    doc["pairs"] = draw(st.sampled_from(["adjacent", "none", [[0, 3], [1, 2]]]))
    doc["memory"]["regions"][0]["element_bytes"] = draw(st.sampled_from([64, 0x1000, 0x4000]))
    doc["exchange"].update(
        tx_overhead=draw(st.integers(0, 3)),
        route_latency={"base": draw(st.integers(0, 4)),
                       "per_tile": draw(st.sampled_from([0, 0.5, 1]))},
        rx_lead=draw(st.integers(0, 6)),
        format_switch=draw(st.integers(0, 4)),
        write_hazard=draw(st.integers(0, 5)),
        paired_words_per_cycle=draw(st.sampled_from([1, 2, 4])),
    )
    return spec_from_dict(doc, "random")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs(), n=st.integers(1, 14), seed=st.integers(0, 10**6),
       rule=st.sampled_from(RULES), aware=st.booleans(), credit=st.sampled_from([0, 0.25, 1.0]),
       window=st.sampled_from([1, 16]))
def test_greedy_valid_and_bounds_below(spec: Spec, n: int, seed: int, rule: str,
                                       aware: bool, credit: float, window: int) -> None:
    phase = random_phase(spec, n, seed=seed, tiles=6, max_words=24, p_dep=0.2)
    starts, widths = greedy_schedule(phase, spec, rule, borrow_aware=aware, paired_credit=credit,
                                     window=window)
    report = validate(phase, spec, Schedule(starts, widths))
    assert report.ok, report.violations
    for b in all_bounds(Instance(phase, spec), None):
        assert b.value <= report.horizon, b


@settings(max_examples=80, deadline=None)
@given(spec=specs(), n=st.integers(2, 14), seed=st.integers(0, 10**6))
def test_moved_start_is_rejected(spec: Spec, n: int, seed: int) -> None:
    """Moving one send onto another send of the same tile must break the transmit lane."""
    phase = random_phase(spec, n, seed=seed, tiles=3, max_words=24)
    starts, widths = greedy_schedule(phase, spec)
    by_src: dict[int, list[str]] = {}
    for t in phase.transfers:
        by_src.setdefault(t.src, []).append(t.id)
    clash = next((ids for ids in by_src.values() if len(ids) > 1), None)
    if clash is None:
        return
    moved = dict(starts)
    moved[clash[1]] = starts[clash[0]]
    report = validate(phase, spec, Schedule(moved, widths))
    assert any(v.rule == "tx-lane" for v in report.violations)


@settings(max_examples=12, deadline=None)
@given(spec=specs(), n=st.integers(1, 5), seed=st.integers(0, 10**6))
def test_cpsat_and_milp_agree_and_bounds_hold(spec: Spec, n: int, seed: int) -> None:
    phase = random_phase(spec, n, seed=seed, tiles=5, max_words=12, p_dep=0.2)
    params = {"time_limit": 30, "workers": 1, "seed": 0}
    cp = solve(phase, spec, "cpsat", params)
    mi = solve(phase, spec, "milp", params)
    assert cp.status == "optimal" and mi.status == "optimal"
    assert cp.value == mi.value
    assert best_bound(cp.bounds).value <= cp.value
    assert cp.value <= cp.extras["greedy_horizon"]


def test_property_run_share() -> None:
    """A bounded share of benchmarks/properties.py (which runs 10,000 phases): every spec,
    every solver, validated schedules, CP-SAT never worse than its hint, zero limit = fallback."""
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "properties.py"
    spec = importlib.util.spec_from_file_location("properties_benchmark", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    solves, failures = module.run_share(48, seed=7, time_limit=0.2)
    assert failures == [] and solves >= 96


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs(), n=st.integers(2, 10), seed=st.integers(0, 10**6))
def test_every_bound_is_below_the_proven_optimum(spec: Spec, n: int, seed: int) -> None:
    """Dense phases (6 tiles, multicast up to 4, addresses in a 64 KiB memory, pairs,
    latencies, dependencies): no bound, the clique bound included, exceeds the optimum."""
    phase = random_phase(spec, n, seed=seed, tiles=6, max_words=40, p_dep=0.2, p_addr=0.9)
    optimum = proven_optimum(phase, spec, required=False)
    assume(optimum is not None)  # the same phases are left out on any machine
    for b in all_bounds(Instance(phase, spec), None):
        assert b.value <= optimum, b


def test_clique_bound_sees_what_single_resources_do_not() -> None:
    """On dense 12-transfer gc200 phases the clique bound is a proof (below CP-SAT's proven
    optimum) and beats every single-resource bound on several of them."""
    spec = load_spec("gc200")
    better = 0
    for seed in range(6):
        phase = random_phase(spec, 12, seed=seed, tiles=6, max_words=200, max_fanout=3)
        by_name = {b.name: b.value for b in all_bounds(Instance(phase, spec), None)}
        assert by_name["clique"] <= proven_optimum(phase, spec, 60)
        better += by_name["clique"] > max(v for k, v in by_name.items() if k != "clique")
    assert better >= 3


def test_clique_rest_counts_a_pairs_sends() -> None:
    """Multicasts into tiles 8-11 and one send each from tiles 0 and 1 (a pair) into 8 and 9:
    the two sends need not conflict (both ordinary may overlap), but paired they borrow each
    other's lane and ordinary they take twice as long, so 300 cycles of them avoid the
    multicasts either way. The clique bound sees that, no single resource does, and it is
    still below the proven optimum, also grown around the pair's sends alone (the group
    bound, which sees the same from the multicasts' side, is too)."""
    spec = load_spec("gc200")
    group = [Transfer(f"g{i}", src, (8, 9, 10, 11), 100) for i, src in enumerate((2, 4, 12))]
    sends = [Transfer("s0", 0, (8,), 300), Transfer("s1", 1, (9,), 300)]
    phase = Phase("gc200", group + sends, name="pair-sends")
    by_name = {b.name: b.value for b in all_bounds(Instance(phase, spec), None)}
    others = max(v for k, v in by_name.items() if k not in ("clique", "group"))
    assert by_name["clique"] >= others + 100  # most of the second send's 150 cycles
    assert max(by_name["clique"], by_name["group"]) <= proven_optimum(phase, spec)
    around = clique_bound(phase_timings(phase, spec), spec, seeds=0)  # the pair's seeds alone
    assert around.value == by_name["clique"] and "tiles 0 and 1" in around.where


def test_a_clique_grown_by_its_candidates_conflicts_finds_a_tiles_sends_and_its_pairs_writes() -> None:
    """Every transfer touching tiles 18 and 19 in one part of siglip-attention's
    context-redistribution (gc200, default grain): the pair 0, 1 multicasts a long block into
    every even and every odd tile, and ~290 short two-way multicasts alike in weight conflict
    with both. Grown by weight alone (the lowest index among equals) the clique around the pair
    came to 12,035; grown by each candidate's weight of conflicts among the candidates, it is
    the writes into 18 and 19 with tile 19's sends from the element written (12,910; the
    group bound sees 10,336). Never above a schedule the validator accepts."""
    phase, spec = load_phase(DATA / "phases" / "context-redistribution-tiles-18-19.json")
    inst = Instance(phase, spec)
    around = clique_bound(inst.timings, spec, seeds=0)  # the pairs' seeds alone
    assert around.value >= 12_900 and "tiles 0 and 1" in around.where
    others = [b.value for b in all_bounds(inst, None) if b.name != "clique"]
    assert around.value >= max(others) + 2_000
    starts, widths = best_greedy(inst)[:2]
    report = validate(phase, spec, Schedule(starts, widths))
    assert report.ok and around.value <= inst.horizon((starts, widths))


@pytest.mark.parametrize("seed", range(3))
def test_cliques_grown_among_hundreds_of_candidates_stay_below_a_schedule(seed: int) -> None:
    """400 random transfers among 10-12 tiles: the pairs' cliques grow among hundreds of
    candidates, a path the small phases above never take; never above a schedule the
    validator accepts."""
    spec = load_spec("gc200")
    phase = random_phase(spec, 400, seed=seed, tiles=10 + seed, max_fanout=6, p_dep=0.0)
    inst = Instance(phase, spec)
    around = clique_bound(inst.timings, spec, seeds=0)
    starts, widths = best_greedy(inst)[:2]
    report = validate(phase, spec, Schedule(starts, widths))
    assert report.ok and 0 < around.value <= report.horizon and "more around" in around.where


def test_clique_cores_of_a_stream_keep_its_whole_payload() -> None:
    """Four sends from tile 8 into tiles 4 and 5 writing the element that 4 and 5 each read
    for a send into 6 and 7: six transfers that pairwise conflict. The stream's members
    conflict with each other on the receive lanes too, so their cores need not start at the
    source (a route latency earlier): each core is the whole payload and the clique bound
    is above every other (the element's work among them) and below the proven optimum."""
    spec = load_spec("gc200")
    base, el = spec.regions[0].start, spec.regions[0].element_bytes
    stream = [Transfer(f"s{k}", 8, (4, 5), 20, src_addr=base + 3 * el, dst_addr=base + 80 * k, paired="never")
              for k in range(4)]
    reads = [Transfer(f"r{x}", x, (6, 7), 20, src_addr=base + 400, dst_addr=base + 2 * el, paired="never")
             for x in (4, 5)]
    phase = Phase("gc200", stream + reads, name="stream")
    by_name = {b.name: b.value for b in all_bounds(Instance(phase, spec), None)}
    assert by_name["clique"] >= 4 * 20 + 2 * (20 - 8)
    assert by_name["clique"] > max(v for k, v in by_name.items() if k != "clique")
    assert by_name["clique"] <= proven_optimum(phase, spec)


def test_a_clique_in_the_order_of_its_starts_counts_what_its_windows_overlap() -> None:
    """Three tiles of a three-partial reduction on gc200 (from siglip-mlp's gemm1-reduction at
    256 B), each partial read from and written into element 4 of its tile: the ten sends
    pairwise conflict (a lane, or an element one reads and another writes), but a read may
    end a route latency after the write that follows it begins, so their cores lose most of
    their payload. In the order of their starts each two that follow each other are apart by
    what keeps their windows apart: that path is above every other bound, the element's work
    among them, and below the proven optimum."""
    spec = load_spec("gc200")
    sends = [(0, 490, 656712, 673656), (0, 490, 656968, 673912), (0, 980, 665180, 673656),
             (0, 980, 665436, 673912), (490, 0, 655376, 681080), (490, 0, 655632, 681336),
             (490, 980, 665180, 682416), (490, 980, 665436, 682672), (980, 490, 656712, 682416),
             (980, 490, 656968, 682672)]
    partials = [Transfer(f"t{k}", src, (dst,), 64, src_addr=a, dst_addr=b)
                for k, (src, dst, a, b) in enumerate(sends)]
    # and with a short send among them (a partial's tail), which shortcuts the path: the
    # clique is thinned while its path grows
    tail = Transfer("tail", 0, (980,), 3, src_addr=665692, dst_addr=674168)
    for transfers in (partials, [*partials, tail]):
        phase = Phase("gc200", transfers, name="three partials")
        by_name = {b.name: b for b in all_bounds(Instance(phase, spec), None)}
        clique = by_name.pop("clique")
        assert clique.value > max(b.value for b in by_name.values())
        assert clique.value <= proven_optimum(phase, spec)
    assert "as a sequence" in clique.where and clique.where.startswith("9 ")


def test_heads_tails_bound_sees_a_lane_behind_a_chain() -> None:
    """Four receives into tile 9 that all wait for one long transfer: the endpoint bound
    counts them from the first possible arrival, the dependency bound one of them after the
    long one; heads and tails count all four after it, which is the optimum here (so does the
    clique bound as a sequence, from the least head of its clique; its cores alone came within
    24 cycles)."""
    spec = load_spec("gc200")
    first = Transfer("long", 0, (1,), 400, paired="never")
    waiting = [Transfer(f"w{i}", 2 + 2 * i, (9,), 50, paired="never", after=("long",)) for i in range(4)]
    phase = Phase("gc200", [first, *waiting], name="behind-a-chain")
    by_name = {b.name: b.value for b in all_bounds(Instance(phase, spec), None)}
    optimum = proven_optimum(phase, spec)
    assert max(by_name["endpoint"], by_name["dependency"]) + 100 <= by_name["heads-tails"] == optimum
    assert by_name["heads-tails"] > max(v for k, v in by_name.items() if k not in ("heads-tails", "clique"))
    assert by_name["clique"] <= optimum
    plain = Phase("gc200", [first, *(replace(t, after=()) for t in waiting)], name="no-chain")
    assert {b.name: b.value for b in all_bounds(Instance(plain, spec), None)}["heads-tails"] == 0


def test_group_bound_sees_the_lanes_behind_a_multicast() -> None:
    """Two multicasts into tiles 20 and 21 (ordinary only) and two columns crossing them,
    20-30 fed by tile 0 and 21-31 by its partner 1: the columns are either paired (one at a
    time) or ordinary (twice as long), and the multicasts can run only when neither is at
    20 or 21. Every single lane, the pair's two lanes and the clique bound see one side; the
    group bound adds the row's windows to the pair's and is the optimum."""
    spec, phase = load_spec("gc200"), row_and_columns()
    by_name = {b.name: b.value for b in all_bounds(Instance(phase, spec), None)}
    assert by_name["group"] == proven_optimum(phase, spec)
    assert by_name["group"] >= max(v for k, v in by_name.items() if k != "group") + 25


def _all_to_all(spec: Spec, tiles: tuple[int, ...], words: list[int], paired: str) -> Phase:
    """Every tile of `tiles` sending to every other, each tile's sends and receives in its
    memory's first element (a reduction's group whose buffers share one element)."""
    n, base = len(tiles), spec.regions[0].start
    return Phase(spec.name, [
        Transfer(f"t{a}-{b}", a, (b,), words[(i * n + j) % len(words)], src_addr=base + 8 * j,
                 dst_addr=base + 8 * (n + i), paired=paired)
        for i, a in enumerate(tiles) for j, b in enumerate(tiles) if a != b], name="all-to-all")


def test_matching_bound_sees_an_odd_group_sharing_one_element_per_tile() -> None:
    """Three tiles sending to each other, each tile's buffers in one memory element: a
    transfer in its core holds two of the three elements, so only one runs at a time. The
    matching bound sees it (above every single element's work) and stays below CP-SAT's
    proven optimum; with four tiles it says nothing the element bound does not."""
    spec = load_spec("gc200")
    phase = _all_to_all(spec, (0, 18, 36), [64], "never")
    by_name = {b.name: b.value for b in all_bounds(Instance(phase, spec), None)}
    assert by_name["matching"] >= by_name["element"] + 80
    assert by_name["matching"] <= proven_optimum(phase, spec)
    even = {b.name: b.value for b in all_bounds(Instance(_all_to_all(spec, (0, 18, 36, 54), [64], "never"),
                                                         spec), None)}
    assert even["matching"] < even["element"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs(), k=st.sampled_from([3, 5]), words=st.lists(st.integers(1, 40), min_size=1, max_size=6),
       paired=st.sampled_from(["allowed", "never"]))
def test_matching_bound_is_below_every_schedule_of_an_odd_group(spec: Spec, k: int, words: list[int],
                                                                 paired: str) -> None:
    """Odd all-to-all groups on random specs (latencies, leads, hazards, element sizes, pairs),
    where the matching bound has most to say: never above CP-SAT's answer (its proven optimum
    or, when 2 s do not prove it, the schedule it found)."""
    phase = _all_to_all(spec, tuple(range(k)), words, paired)
    inst = Instance(phase, spec)
    found = solve_cpsat(inst, best_greedy(inst)[:2], SolveParams(workers=1, seed=0), Budget(2))
    bound = next(b for b in all_bounds(inst, None) if b.name == "matching")
    assert bound.value <= found.value, (bound, found.status)


GROUPS = [(4, 5), (6, 7), (4, 6), (5, 7), (4, 5, 6), (4, 5, 6, 7)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs(), picks=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(GROUPS),
                                              st.integers(1, 60), st.booleans()),
                                    min_size=2, max_size=8))
def test_group_bound_is_below_every_schedule_of_rows_and_columns(spec: Spec, picks: list) -> None:
    """Multicasts into a few overlapping tile sets (rows, columns, both) from tiles 0-3,
    where the group bound has most to say: never above CP-SAT's answer (its proven optimum
    or, when 20 s do not prove it, the schedule it found)."""
    transfers = [Transfer(f"t{k}", src, dst, words, paired="allowed" if pair else "never")
                 for k, (src, dst, words, pair) in enumerate(picks)]
    _group_below_cpsat(Phase(spec.name, transfers, name="rows-and-columns"), spec)


def test_group_bound_sees_sends_that_read_what_the_multicasts_write() -> None:
    """Three multicasts into tiles 20 and 21 write the element that each of those tiles sends
    from, and the two sends (to 30 and 31) must be paired, so they take the pair's lanes one
    after the other: neither send conflicts with the other's tile, so no clique holds both,
    yet the group sees the multicasts' writes and the sends' reads as one timeline."""
    spec = load_spec("gc200")
    base = spec.regions[0].start
    into = [Transfer(f"a{k}", 40 + 2 * k, (20, 21), 30, dst_addr=base + 256 * k, paired="never")
            for k in range(3)]
    out = [Transfer(f"c{j}", 20 + j, (30 + j,), 100, src_addr=base + 2048, paired="required")
           for j in range(2)]
    phase = Phase("gc200", into + out, name="reads-and-writes")
    by_name = {b.name: b for b in all_bounds(Instance(phase, spec), None)}
    group = by_name.pop("group")
    assert "sends from there" in group.where
    assert group.value >= max(b.value for b in by_name.values()) + 4
    assert group.value <= proven_optimum(phase, spec)


WIDTHS = st.sampled_from(["allowed", "never", "required"])
TARGETS = [(0,), (1,), (0, 1), (2, 3), (4,), (5,), (6, 7)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs(), group=st.sampled_from(GROUPS),
       into=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 30), WIDTHS, st.integers(0, 1)), min_size=1,
                     max_size=4),
       out=st.lists(st.tuples(st.integers(4, 7), st.sampled_from(TARGETS), st.integers(1, 40), WIDTHS,
                              st.integers(0, 1)), min_size=1, max_size=4))
def test_group_bound_is_below_every_schedule_of_multicasts_and_sends_sharing_memory(
        spec: Spec, group: tuple[int, ...], into: list, out: list) -> None:
    """Multicasts from tiles 0-3 into a set of tiles 4-7 and sends from tiles 4-7, every
    buffer in one of two slots of memory (one element or two, by the spec's element size),
    where the group bound's memory side has most to say: never above CP-SAT's answer."""
    base = spec.regions[0].start
    width = lambda src, paired: paired if spec.partner(src) is not None else "never"  # noqa: E731
    transfers = [Transfer(f"a{k}", src, group, words, dst_addr=base + 64 * slot, paired=width(src, paired))
                 for k, (src, words, paired, slot) in enumerate(into)]
    transfers += [Transfer(f"c{k}", src, tuple(x for x in dst if x != src) or (0,), words,
                           src_addr=base + 64 * slot, paired=width(src, paired))
                  for k, (src, dst, words, paired, slot) in enumerate(out)]
    _group_below_cpsat(Phase(spec.name, transfers, name="multicasts-and-sends"), spec)


def _group_below_cpsat(phase: Phase, spec: Spec) -> None:
    inst = Instance(phase, spec)
    found = solve_cpsat(inst, best_greedy(inst)[:2], SolveParams(workers=1, seed=0), Budget(20))
    bound = next(b for b in all_bounds(inst, None) if b.name == "group")
    assert bound.value <= found.value, (bound, found.status)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs(), n=st.integers(2, 4), seed=st.integers(0, 10**6), copies=st.integers(1, 2))
def test_identical_transfers_in_one_order_keep_the_optimum(spec: Spec, n: int, seed: int,
                                                           copies: int) -> None:
    """CP-SAT keeps one order of transfers alike in every respect (and, where the write
    hazard is at most tx_overhead + rx_lead, one no-overlap per element): its proven optimum
    is still the MILP's, which has neither, and `in_order` of a schedule is a schedule."""
    phase = random_phase(spec, n, seed=seed, tiles=4, max_words=12, p_dep=0.2, p_addr=0.9)
    twins = [replace(t, id=f"{t.id}.copy{k}") for t in phase.transfers if not t.after
             for k in range(copies)]
    phase = Phase(spec_ref=phase.spec_ref, transfers=[*phase.transfers, *twins][:6], name="twins")
    inst = Instance(phase, spec)
    groups = identical_groups(inst.timings)
    starts, widths = greedy_schedule(phase, spec, "reverse")
    again = Schedule(*in_order(groups, (starts, widths)))
    assert validate(phase, spec, again).ok and inst.horizon((again.starts, again.widths)) == inst.horizon(
        (starts, widths))
    params = {"time_limit": 30, "workers": 1, "seed": 0}
    cp, mi = solve(phase, spec, "cpsat", params), solve(phase, spec, "milp", params)
    assert cp.status == mi.status == "optimal" and cp.value == mi.value
    assert validate(phase, spec, cp.solution).ok
