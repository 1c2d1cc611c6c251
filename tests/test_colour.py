"""The round colouring engine (`--solver colour`): rounds that share no lane and no
hazard, groups of tiles coloured apart and alike groups alike, never worse than greedy."""

from __future__ import annotations

import random
from collections import defaultdict

from conftest import make_phase, make_spec

from ipuopt.budget import Budget
from ipuopt.exchange.colour import _slots, round_colours, tile_groups
from ipuopt.exchange.greedy import best_greedy
from ipuopt.exchange.instance import Instance, horizon_of
from ipuopt.exchange.solve import solve
from ipuopt.exchange.timing import phase_timings
from ipuopt.params import SolveParams


def all_to_all(groups: list[list[int]], words: int = 40, base: int = 0,
               element: int = 0x1000) -> list[dict]:
    """Every tile of a group sends to every other; a send to a higher tile reads the first
    element, a receive from a lower tile writes it: a tile cannot do both at once."""
    out = []
    for group in groups:
        for s in group:
            for d in group:
                if d != s:
                    out.append({"id": f"t{s}_{d}", "src": s, "dst": [d], "words": words,
                                "src_addr": base + (0 if d > s else 2 * element),
                                "dst_addr": base + (element // 2 if s < d else 3 * element)})
    return out


def test_rounds_share_no_lane_and_no_hazard_and_alike_groups_match() -> None:
    spec = make_spec()
    phase = make_phase(spec, *all_to_all([[0, 1, 2, 3], [4, 5, 6, 7]]))
    timings = phase_timings(phase, spec)
    assert sorted(len(g) for g in tile_groups(timings)) == [12, 12]
    colours = round_colours(timings, SolveParams.of({"workers": 1, "seed": 0}), Budget(), 30)
    assert colours is not None
    held: dict[tuple, list[str]] = defaultdict(list)
    for tm, c in zip(timings, colours, strict=True):
        t = tm.transfer
        held["tx", t.src, c].append(t.id)
        held["rx", t.dst[0], c].append(t.id)
        for el in tm.read_elements:
            held["el", t.src, el, c].append("read")
        for el in tm.write_elements:
            held["el", t.dst[0], el, c].append("write")
    for key, users in held.items():
        assert len(users) == 1 or (key[0] == "el" and "write" not in users), (key, users)
    assert 3 <= max(colours) + 1 <= 5  # three sends a tile: three rounds, two more at most
    first = {tm.transfer.id: c for tm, c in zip(timings, colours, strict=True)}
    for s in range(4):  # the second group is the first one's shape four tiles on
        for d in range(4):
            if d != s:
                assert first[f"t{s}_{d}"] == first[f"t{s + 4}_{d + 4}"]


def test_all_to_all_in_rounds_beats_greedy_and_nears_the_bound() -> None:
    spec = make_spec()
    phase = make_phase(spec, *all_to_all([[0, 1, 2, 3, 4, 5, 6, 7]], words=100))
    r = solve(phase, spec, "colour", {"time_limit": 30, "workers": 1, "seed": 0})
    s = r  # solve() raises on a schedule the validator rejects
    assert s.extras["colours"] >= 7  # seven sends a tile
    assert s.status == "feasible" and s.method == "colour"
    assert s.value == s.extras["colour_horizon"] < s.extras["greedy_horizon"]
    assert s.value <= s.lower_bound * 1.02  # every lane busy round after round


def test_dependencies_come_in_later_rounds() -> None:
    spec = make_spec()
    transfers = all_to_all([[0, 1, 2]])
    transfers[0]["after"] = [transfers[-1]["id"]]
    phase = make_phase(spec, *transfers)
    timings = phase_timings(phase, spec)
    colours = round_colours(timings, SolveParams.of({"workers": 1, "seed": 0}), Budget(), 30)
    assert colours is not None and colours[0] > colours[-1]


def test_payloads_of_different_lengths_fall_back_to_greedy() -> None:
    spec = make_spec()
    phase = make_phase(spec, *[{"id": f"t{i}", "src": i % 4, "dst": [4 + i % 4], "words": 4 + 100 * i}
                               for i in range(8)])
    timings = phase_timings(phase, spec)
    assert round_colours(timings, SolveParams.of({}), Budget(), 30) is None
    r = solve(phase, spec, "colour", {"time_limit": 5})
    greedy = best_greedy(Instance(phase, spec))
    assert r.status == "fallback"
    assert r.value == horizon_of(timings, greedy[0], greedy[1])


def test_a_group_too_large_to_colour_gives_up(monkeypatch) -> None:
    from ipuopt.exchange import colour

    spec = make_spec()
    timings = phase_timings(make_phase(spec, *all_to_all([[0, 1, 2, 3]])), spec)
    params = SolveParams.of({"workers": 1, "seed": 0})
    assert round_colours(timings, params, Budget(), 30) is not None
    monkeypatch.setattr(colour, "MAX_CELLS", 12 * 3 - 1)  # 12 transfers x 3 rounds
    assert round_colours(timings, params, Budget(), 30) is None


def test_auto_colours_large_phases_and_credits_colour_only_when_it_helped() -> None:
    from ipuopt.exchange.random_phase import random_phase
    from ipuopt.spec import load_spec

    spec = load_spec("gc200")
    # four in five sends of ten all-to-all groups (325 transfers: past CP-SAT's size); a whole
    # all-to-all the greedy's `rotate` rule already sends in rounds, a thinned one it does not
    groups = [[g + 20 * k for k in range(7)] for g in range(10)]
    rng = random.Random(0)
    kept = [t for t in all_to_all(groups, 200, spec.regions[1].start, 0x8000) if rng.random() < 0.8]
    # and a one-word send from each group to the next: one part, not ten (auto would split it)
    links = [{"id": f"link{g}", "src": groups[g][0], "dst": [groups[g + 1][0]], "words": 1} for g in range(9)]
    phase = make_phase(spec, *kept, *links)
    # colour has a fifth of the limit: 2.4 s, room for a busy machine (at 4 s it had 0.8);
    # below 30 s auto starts with it (the non-delay greedy comes first from 30 s on)
    params = {"time_limit": 12, "workers": 1, "seed": 0}
    s = solve(phase, spec, "auto", params)
    assert s.extras["methods"][0] == "colour"
    assert s.value <= s.extras["colour_horizon"] < s.extras["greedy_horizon"]
    uneven = random_phase(spec, 400, seed=1, max_words=400)  # payloads 1..400 words: no rounds
    s = solve(uneven, spec, "auto", {**params, "time_limit": 4})
    assert "colour_horizon" not in s.extras and s.method != "auto/colour"


def test_paired_rounds_let_a_pairs_tiles_take_turns() -> None:
    """Coloured with pairs, a send that may go paired holds its partner's lane in its round:
    groups linked by a pair become one, and the pair's sends never share a round; a send
    that cannot go paired (a misaligned address) takes two rounds, twice as long."""
    spec = make_spec()  # pairs (0, 1), (2, 3), (4, 5)
    transfers = all_to_all([[0, 2, 4], [1, 3, 5]])
    transfers[0]["src_addr"] += 4  # t0_2: ordinary only
    timings = phase_timings(make_phase(spec, *transfers), spec)
    assert len(tile_groups(timings)) == 2 and len(tile_groups(timings, paired=True)) == 1
    params = SolveParams.of({"workers": 1, "seed": 0})
    colours = round_colours(timings, params, Budget(), 30, paired=True)
    assert colours is not None
    rounds = defaultdict(set)
    for tm, c in zip(timings, colours, strict=True):
        pair = tm.transfer.src // 2
        for r in (c, c + 1) if tm.transfer.id == "t0_2" else (c,):
            assert pair not in rounds[r], "two sends of one pair in a round"
            rounds[r].add(pair)
    group = list(range(len(timings)))
    slots = dict(zip((tm.transfer.id for tm in timings), _slots(timings, group, True), strict=True))
    assert slots["t0_2"] == 2 and set(slots.values()) == {1, 2}
    assert set(_slots(timings, group, False)) == {1}
