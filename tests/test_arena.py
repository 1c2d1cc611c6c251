"""Arena placement: validator acceptance, solver agreement, infeasibility, bad input."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest
from conftest import DATA, run_cli

from ipuopt.arena import search
from ipuopt.arena.cpsat import grain
from ipuopt.arena.greedy import best_fit, shift_baseline
from ipuopt.arena.problem import Arena, Buffer, Conflict, arena_from_dict, load_csv
from ipuopt.arena.search import search_fit
from ipuopt.arena.solve import place
from ipuopt.arena.validate import validate_placement
from ipuopt.result import Status
from ipuopt.spec import load_spec
from ipuopt.workloads.arena_export import arena_document
from ipuopt.workloads.phases import generate
from ipuopt.workloads.workload import load_workload


def random_arena(seed: int, n: int = 6, tight: bool = True) -> Arena:
    rng = random.Random(seed)
    bufs = []
    for i in range(n):
        a = rng.randrange(0, 6)
        bufs.append(Buffer(f"b{i}", rng.choice([1, 2, 3, 4]) * 8, a, a + rng.randint(1, 4),
                           align=rng.choice([1, 8])))
    arena = Arena(bufs, 10_000, 16)
    cap = arena.peak_live()[0] + (0 if tight else 8)
    conflicts = [Conflict(f"b{i}", f"b{j}", rng.randint(1, 9))
                 for i in range(n) for j in range(i + 1, n) if rng.random() < 0.4]
    return Arena(bufs, cap, 16, conflicts)


@pytest.mark.parametrize("seed", range(12))
def test_search_cpsat_milp_agree_on_fit(seed: int) -> None:
    arena = random_arena(seed)
    s = search_fit(arena, time_limit=20)
    cp = place(arena, "fit", "cpsat", {"time_limit": 20, "workers": 1})
    mi = place(arena, "fit", "milp", {"time_limit": 20})
    assert s.status != Status.UNKNOWN  # finished: placed, or proved that nothing fits
    assert (s.solution is not None) == (cp.solution.offsets is not None) == (mi.solution.offsets is not None)
    for offs in (s.solution, cp.solution.offsets, mi.solution.offsets):
        if offs is not None:
            assert validate_placement(arena, offs).ok


@pytest.mark.parametrize("seed", range(40))
def test_the_compiled_dive_decides_as_the_numpy_dive(seed: int) -> None:
    """Same answer, same status, same node count: every decision alike (ties included)."""
    rng = random.Random(seed)
    arena = random_arena(1000 + seed, n=rng.randint(3, 24), tight=seed % 3 > 0)
    if seed % 5 == 0:  # below the peak of live bytes: exhausted, nothing fits
        arena = Arena(arena.buffers, arena.capacity - 8, 16)
    assert search._compiled is not None, "the package was built without its compiled dive"
    runs = [search_fit(arena, time_limit=30, compiled=c) for c in (False, True)]
    numpy, compiled = ((r.status, r.solution, r.extras["nodes"]) for r in runs)
    assert numpy == compiled
    assert runs[1].status != Status.UNKNOWN
    assert runs[1].solution is None or validate_placement(arena, runs[1].solution).ok


@pytest.mark.parametrize("name", ["A", "I", "K"])
def test_the_compiled_dive_decides_as_the_numpy_dive_on_minimalloc(name: str) -> None:
    """A few thousand nodes of one dive per rank order and branching rule on the challenging
    instances (splits into parts, raised skylines, failed states): the same nodes."""
    arena = load_csv(DATA / "minimalloc" / f"{name}.1048576.csv", 1048576)
    sh = search._shape(arena, arena.capacity)
    for order, longest, sweep, buffers in (("WAT", False, True, False), ("TAW", True, True, False),
                                           ("TWA", False, False, False), ("WAT", False, False, True),
                                           ("TWA", False, False, True)):
        rank = search._rank(order, sh.size, sh.span if buffers else sh.width, sh.max_total, sh.area)
        plan = search._Plan(rank, longest, sweep, 1500, buffers)
        dives = [kind(sh, plan, lambda: False) for kind in (search._Dive, search._CompiledDive)]
        (found, exhausted), (found_c, exhausted_c) = (d.run() for d in dives)
        assert dives[0].nodes == dives[1].nodes and exhausted == exhausted_c
        assert (found is None and found_c is None) or (found == found_c).all()


def test_the_search_places_minimalloc_k_without_cpsat() -> None:
    """K's skyline dives fail; buffer branching (MiniMalloc's own) places it, in one of its
    first dives (2,016 nodes of its own): rounds that began at 2 n nodes a dive took 28,000
    nodes over all three kinds of dive."""
    arena = load_csv(DATA / "minimalloc" / "K.1048576.csv", 1048576)
    for threads in (1, 2):
        res = search_fit(arena, time_limit=60, threads=threads)
        assert res.status == Status.FEASIBLE and validate_placement(arena, res.solution).ok
        assert res.extras["nodes"] <= 10_000


@pytest.mark.parametrize("seed", range(12))
def test_dives_on_two_cores_reach_the_same_verdict(seed: int) -> None:
    """Two dives at once, each taking the next plan: placed where one at a time places (the
    placement may differ, and passes the validator), nothing fits where nothing fits."""
    rng = random.Random(seed)
    arena = random_arena(2000 + seed, n=rng.randint(8, 24), tight=True)
    if seed % 4 == 0:
        arena = Arena(arena.buffers, arena.capacity - 8, 16)
    one, two = (search_fit(arena, time_limit=30, threads=t) for t in (1, 2))
    assert one.status == two.status != Status.UNKNOWN
    assert two.solution is None or validate_placement(arena, two.solution).ok


def test_the_compiled_dive_stops_when_told_and_at_its_time_limit() -> None:
    """I, which the search places after some 80,000 nodes: a stop heard at once, a time limit
    (a tenth of what it needs) kept."""
    arena = load_csv(DATA / "minimalloc" / "I.1048576.csv", 1048576)
    res = search_fit(arena, time_limit=60, stop=lambda: True)
    assert res.status == Status.UNKNOWN and res.extras["nodes"] <= 128  # a dive asks every 128 nodes
    t0 = time.perf_counter()
    res = search_fit(arena, time_limit=0.1)
    assert res.status == Status.UNKNOWN and time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize("seed", range(8))
def test_cpsat_milp_agree_on_peak_and_conflicts(seed: int) -> None:
    arena = random_arena(100 + seed, n=5, tight=False)
    for objective in ("peak", "conflicts"):
        cp = place(arena, objective, "cpsat", {"time_limit": 20, "workers": 1})
        mi = place(arena, objective, "milp", {"time_limit": 20})
        assert cp.status == mi.status == "optimal"
        assert (cp.value, cp.solution.peak if objective == "conflicts" else 0) == (
            mi.value, mi.solution.peak if objective == "conflicts" else 0)
        assert all(validate_placement(arena, r.solution.offsets).ok for r in (cp, mi))
        assert cp.lower_bound <= cp.value


def test_greedy_and_baseline_valid() -> None:
    for seed in range(20):
        arena = random_arena(200 + seed, n=8, tight=False)
        offs = best_fit(arena)
        rep = validate_placement(arena, offs)
        assert not [v for v in rep.violations if v.rule not in ("capacity",)]
        assert rep.peak <= sum(b.size for b in arena.buffers)  # never further up than stacking
        if rep.ok:
            shifted, score = shift_baseline(arena, offs)
            assert validate_placement(arena, shifted).ok
            assert score <= rep.conflicts


def test_validator_rules() -> None:
    bufs = [Buffer("a", 16, 0, 2, align=8), Buffer("b", 16, 1, 3), Buffer("c", 16, 1, 3, alias_of="b"),
            Buffer("d", 8, 0, 3, offset=48, distinct_elements_from=("a",))]
    arena = Arena(bufs, 64, 32)
    ok = {"a": 0, "b": 16, "c": 16, "d": 48}
    assert validate_placement(arena, ok).ok
    rules = lambda offs: sorted(v.rule for v in validate_placement(arena, offs).violations)  # noqa: E731
    assert rules({**ok, "b": 8, "c": 8}) == ["overlap", "overlap"]
    assert rules({**ok, "a": 4}) == ["align", "overlap", "overlap"]
    assert rules({**ok, "c": 20}) == ["alias"]
    assert rules({**ok, "d": 40}) == ["fixed"]
    assert rules({**ok, "a": 32}) == ["distinct-elements"]
    assert rules({**ok, "b": 56, "c": 56}) == ["capacity", "capacity"]


def test_minimalloc_example_and_infeasible_cli(tmp_path) -> None:
    src = DATA / "minimalloc" / "input.12.csv"
    out = tmp_path / "o.csv"
    r = run_cli("place", "--csv", str(src), "--capacity", "12", "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = out.read_text().splitlines()
    assert rows[0] == "id,lower,upper,size,offset" and len(rows) == 6
    arena = load_csv(src, 12)
    offs = {line.split(",")[0]: int(line.split(",")[4]) for line in rows[1:]}
    assert validate_placement(arena, offs).ok
    r = run_cli("place", "--csv", str(src), "--capacity", "11")
    assert r.returncode == 1 and "at step 0 live bytes 12 exceed capacity 11" in r.stdout


def test_minimalloc_challenging_a_places() -> None:
    arena = load_csv(DATA / "minimalloc" / "A.1048576.csv", 1048576)
    res = search_fit(arena, time_limit=120)
    assert res.solution is not None and validate_placement(arena, res.solution).ok


ARENA_ERRORS = {
    "unknown region": ({"region": "nope"}, "region", "unknown region"),
    "bad size": ({"buffers": [{"id": "a", "size": 0, "live": [0, 1]}]}, "buffer a.size", "> 0"),
    "bad live": ({"buffers": [{"id": "a", "size": 8, "live": [2, 1]}]}, "buffer a.live", "first < end"),
    "unknown alias": ({"buffers": [{"id": "a", "size": 8, "live": [0, 1], "alias_of": "z"}]},
                      "buffer a.alias_of", "unknown buffer"),
    "duplicate": ({"buffers": [{"id": "a", "size": 8, "live": [0, 1]},
                               {"id": "a", "size": 8, "live": [0, 1]}]}, "buffer a.id", "duplicate"),
}


@pytest.mark.parametrize("case", sorted(ARENA_ERRORS))
def test_arena_bad_input(case, write_yaml) -> None:
    change, field, reason = ARENA_ERRORS[case]
    doc = {"spec": "test64", "region": "interleaved",
           "buffers": [{"id": "a", "size": 8, "live": [0, 1]}], **change}
    path = write_yaml("arena.yaml", doc)
    r = run_cli("place", str(path))
    assert r.returncode == 2 and f"{path}: {field}: " in r.stderr and reason in r.stderr


def test_csv_bad_input(tmp_path) -> None:
    bad = tmp_path / "b.csv"
    bad.write_text("id,lower,size\n1,0,4\n")
    r = run_cli("place", "--csv", str(bad), "--capacity", "8")
    assert r.returncode == 2 and "missing columns: upper" in r.stderr
    bad.write_text("id,lower,upper,size\n1,3,2,4\n")
    r = run_cli("place", "--csv", str(bad), "--capacity", "8")
    assert r.returncode == 2 and "line 2 (buffer 1)" in r.stderr
    r = run_cli("place", "--csv", str(bad))
    assert r.returncode == 2 and "--capacity" in r.stderr


def test_place_arena_file_json(write_yaml, tmp_path) -> None:
    doc = {"spec": "test64", "region": "interleaved", "capacity": 131072,
           "buffers": [{"id": "a", "size": 32768, "live": [0, 2]},
                       {"id": "b", "size": 32768, "live": [1, 3]},
                       {"id": "c", "size": 4096, "live": [0, 3], "align": 4096}],
           "conflicts": [{"a": "a", "b": "c", "weight": 5}]}
    path = write_yaml("arena.yaml", doc)
    out = tmp_path / "p.json"
    r = run_cli("place", str(path), "--objective", "peak", "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["status"] == "optimal" and res["peak"] == 69632 == res["lower_bound"]


def test_grain_counts_only_what_survives_push_down() -> None:
    kib = [Buffer("a", 2048, 0, 2), Buffer("b", 3072, 1, 3)]
    assert grain(Arena(kib, 8192, 16), "fit") == 1024
    assert grain(Arena([*kib, Buffer("c", 1024, 0, 1, align=512)], 8192, 16), "peak") == 512
    assert grain(Arena([*kib, Buffer("d", 1024, 0, 1, offset=256)], 8192, 16), "fit") == 256
    assert grain(Arena(kib, 8192, 16), "conflicts") == 1  # elements do not survive push-down
    assert grain(Arena([kib[0], Buffer("e", 1024, 0, 1, distinct_elements_from=("a",))], 8192, 16),
                 "fit") == 1


def test_auto_races_search_and_cpsat_on_minimalloc_k() -> None:
    """K: the search places it by buffer branching, CP-SAT counting in KiB as well; auto
    returns whichever comes first, valid."""
    arena = load_csv(DATA / "minimalloc" / "K.1048576.csv", 1048576)
    res = place(arena, "fit", "auto", {"time_limit": 60})
    assert res.status == "optimal" and validate_placement(arena, res.solution.offsets).ok


def test_auto_with_one_worker_is_reproducible() -> None:
    arena = load_csv(DATA / "minimalloc" / "A.1048576.csv", 1048576)
    runs = [place(arena, "fit", "auto", {"time_limit": 60, "workers": 1, "seed": 0}) for _ in range(2)]
    assert runs[0].solution.offsets is not None and runs[0].solution.offsets == runs[1].solution.offsets


def test_auto_reports_a_cpsat_infeasibility_proof() -> None:
    """Live bytes fit, but the fixed buffer splits the space so that c has no room."""
    arena = Arena([Buffer("f", 1024, 0, 2, offset=1024), Buffer("c", 3072, 0, 2)], 4096, 4096)
    res = place(arena, "fit", "auto", {"time_limit": 20})
    assert res.status == "infeasible" and res.solution.offsets is None


def test_csv_accepts_minimalloc_column_names(tmp_path) -> None:
    src = tmp_path / "m.csv"
    src.write_text("buffer,start,end,size\n0,0,2,4\n1,1,3,4\n")
    out = tmp_path / "placed.csv"
    r = run_cli("place", "--csv", str(src), "--capacity", "8", "--out", str(out))
    assert r.returncode == 0, r.stderr
    rows = out.read_text().splitlines()
    assert rows[0] == "id,lower,upper,size,offset"
    assert sorted(int(row.split(",")[4]) for row in rows[1:]) == [0, 4]


def test_auto_peak_above_live_bytes_is_left_to_cpsat() -> None:
    """The search proves the live-bytes peak unreachable; CP-SAT must still find the optimum."""
    arena = Arena([Buffer("f", 1024, 0, 2, offset=1024), Buffer("c", 3072, 0, 2),
                   Buffer("d", 1024, 2, 3)], 8192, 4096)
    res = place(arena, "peak", "auto", {"time_limit": 20})
    assert arena.peak_live()[0] == 4096
    assert res.status == "optimal" and res.solution.peak == res.lower_bound == 5120


def test_auto_race_keeps_to_the_time_limit_with_a_seed() -> None:
    """One CP-SAT worker plus a seed would turn its limit into deterministic time; the race
    must still end on the wall clock."""
    arena = load_csv(DATA / "minimalloc" / "I.1048576.csv", 1048576)
    res = place(arena, "fit", "auto", {"time_limit": 2, "seed": 1})
    assert res.runtime < 15
    assert res.solution.offsets is None or validate_placement(arena, res.solution.offsets).ok


def test_reschedule_keeps_a_placement_only_when_the_phases_get_shorter(tmp_path: Path) -> None:
    """The offset search and the conflict-aware placement on a generated program: every
    candidate's phases rescheduled; the one kept is never slower than the generator's own."""
    out = tmp_path / "kept.json"
    r = run_cli("place", "mini-mlp", "--reschedule", "--spec", "test64", "--grain", "64",
                "--time-limit", "30", "--out", str(out), "--json", "--quiet")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc == json.loads(out.read_text())
    cands = {c["name"]: c for c in doc["candidates"]}
    first = doc["candidates"][0]
    assert first["name"].startswith("first-fit") and doc["before"] == first["total"]
    gen = generate(load_workload("mini-mlp"), load_spec("test64"), grain=64)
    assert any(name.startswith("start +4 KiB") for name in cands)
    assert len(first["horizons"]) == len(gen.phases)
    assert doc["after"] == cands[doc["kept"]]["total"] <= doc["before"]
    assert doc["kept"] == first["name"] or doc["after"] < doc["before"]
    assert doc["after"] == min(c["total"] for c in doc["candidates"])
    arena = arena_from_dict(arena_document(gen))
    assert validate_placement(arena, doc["offsets"]).ok


def test_an_arena_the_search_places_never_imports_cpsat() -> None:
    """Importing OR-Tools costs more than the search needs on many arenas; auto's race starts
    CP-SAT only after the search's head start, so on A (placed by the search at once) the
    command must never load it (the head start is raised here so that a slow machine cannot
    make the search miss it)."""
    import subprocess
    import sys

    code = ("import sys; from ipuopt.arena.problem import load_csv; from ipuopt.arena import methods, solve; "
            "methods.HEAD_START = 10; place = solve.place; "
            f"a = load_csv({str(DATA / 'minimalloc' / 'A.1048576.csv')!r}, 1048576); "
            "r = place(a, 'fit', 'auto', {'time_limit': 60}); "
            "print(r.method, 'ortools' in ' '.join(sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["search", "False"]
