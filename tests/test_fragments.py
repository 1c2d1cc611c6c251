"""Fragment-level phases: every byte of every box arrives where the consumer's buffer wants it,
runs are maximal, grains cut them, multicast stays multicast, and bad grains are refused."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_cli

from ipuopt.exchange.phase import Phase, check_phase
from ipuopt.exchange.solve import solve
from ipuopt.exchange.validate import validate
from ipuopt.spec import load_spec
from ipuopt.workloads.boxes import volume
from ipuopt.workloads.phases import generate
from ipuopt.workloads.workload import load_workload

GRAINS = ["box", None, 64, 32]


@pytest.fixture(scope="module")
def gens():
    spec = load_spec("test64")
    return {(name, g): generate(load_workload(name), spec, grain=g)
            for name in ("mini-mlp", "mini-attention") for g in GRAINS}


def _addresses(outer, box, base, elem):
    """Byte address of every element of `box` in a buffer holding `outer` row-major at `base`
    (written out element by element, independently of the generator's run arithmetic)."""
    (b0, _), (r0, r1), (c0, c1) = outer
    pts = np.stack(np.meshgrid(*(np.arange(lo, hi) for lo, hi in box), indexing="ij"), -1).reshape(-1, 3)
    return base + (((pts[:, 0] - b0) * (r1 - r0) + pts[:, 1] - r0) * (c1 - c0) + pts[:, 2] - c0) * elem


def _holder(items, tiles, box):
    inside = [x for x in items if set(tiles) <= set(x[0]) and all(
        lo <= a and b <= hi for (a, b), (lo, hi) in zip(box, x[1], strict=True))]
    assert len(inside) == 1
    return inside[0]


@pytest.mark.parametrize("name", ["mini-mlp", "mini-attention"])
@pytest.mark.parametrize("grain", [None, 64, 32])
def test_every_byte_lands_where_the_consumer_reads_it(gens, name, grain):
    """Per box: its fragments read every byte of it once from the source buffer and write each
    to the consumer's buffer at that element's address; runs are maximal (no fragment continues
    the previous one on both sides) unless a grain cut them; none is longer than the grain."""
    spec = load_spec("test64")
    gen = gens[(name, grain)]
    wb = spec.exchange.word_bytes
    for gp in gen.phases:
        by_id = {t.id: t for t in gp.phase.transfers}
        assert check_phase(gp.phase, spec) == []
        for d in gp.deliveries:
            elem = 4 if d.tensor.endswith(".partial") else gen.workload.elem_bytes
            pieces = [((p.tile,), p.box, p.addr) for p in gp.sources[d.tensor] if p.partial == d.partial]
            needs = [(n.tiles, n.box, n.addr) for n in gp.needs[d.tensor] if n.partial == d.partial]
            _, s_outer, s_base = _holder(pieces, (d.src,), d.box)
            _, d_outer, d_base = _holder(needs, d.dst, d.box)
            want = dict(zip(_addresses(s_outer, d.box, s_base, elem).tolist(),
                            _addresses(d_outer, d.box, d_base, elem).tolist(), strict=True))
            seen: set[int] = set()
            ends = None
            for tid, n in zip(d.transfers, d.nbytes, strict=True):
                t = by_id[tid]
                assert t.src == d.src and t.dst == d.dst and t.words == -(-n // wb)
                assert grain is None or n <= grain
                offsets = range(0, n, elem)
                assert all(want[t.src_addr + k] == t.dst_addr + k for k in offsets), (gp.phase.name, tid)
                seen.update(t.src_addr + k for k in offsets)
                if grain is None and ends is not None:
                    assert (t.src_addr, t.dst_addr) != ends  # it would have been one run
                ends = (t.src_addr + n, t.dst_addr + n)
            assert seen == set(want) and sum(d.nbytes) == volume(d.box) * elem


@pytest.mark.parametrize("name", ["mini-mlp", "mini-attention"])
def test_fragments_move_the_boxes_of_the_box_level_phase(gens, name):
    """Whatever the grain, the same boxes go from the same tile to the same destinations (one
    multicast per box and fan-out chunk, its fragments multicast alike); words add up to the
    box-level phase's, exactly where every run is a whole number of words."""
    whole = gens[(name, "box")]
    for grain in GRAINS[1:]:
        cut = gens[(name, grain)]
        for a, b in zip(whole.phases, cut.phases, strict=True):
            assert [(d.tensor, d.box, d.src, d.dst) for d in a.deliveries] == \
                   [(d.tensor, d.box, d.src, d.dst) for d in b.deliveries]
            made = len(b.phase.transfers)
            assert made == sum(len(d.transfers) for d in b.deliveries) >= len(a.phase.transfers)
            if all(n % 4 == 0 for d in b.deliveries for n in d.nbytes):
                assert sum(t.words for t in b.phase.transfers) == sum(t.words for t in a.phase.transfers)


def test_runs_and_grains_make_more_and_smaller_transfers(gens):
    counts = {g: sum(len(gp.phase.transfers) for gp in gens[("mini-mlp", g)].phases) for g in GRAINS}
    assert counts["box"] < counts[None] < counts[64] < counts[32]


@pytest.mark.parametrize("solver", ["greedy", "cpsat", "milp", "lns", "justify", "iterated", "colour",
                                    "periodic", "auto"])
def test_every_solver_schedules_a_fragment_phase(gens, solver):
    """A fragment-level phase with multicast and addresses (hazards): every solver's schedule
    passes the validator."""
    spec = load_spec("test64")
    gp = next(g for g in gens[("mini-mlp", 32)].phases if g.phase.name == "gemm1-input")
    phase = Phase(spec_ref="test64", transfers=gp.phase.transfers, name=gp.phase.name)
    assert any(len(t.dst) > 1 for t in phase.transfers)
    res = solve(phase, spec, solver, {"time_limit": 1, "workers": 1, "seed": 0})
    assert validate(phase, spec, res.solution).ok


@pytest.mark.parametrize("grain,reason", [("3", "positive multiple"), ("0", "positive multiple"),
                                          ("-8", "positive multiple"), ("1048576", "larger than region"),
                                          ("lots", "not a number")])
def test_bad_grains_are_refused_before_any_work(tmp_path, grain, reason):
    for cmd in (["gen", "mini-mlp", "--spec", "test64", "--out-dir", "g"],
                ["run", "mini-mlp", "--spec", "test64"],
                ["layout-problem", "mini-mlp", "--spec", "test64", "--out", "p.yaml"]):
        r = run_cli(*cmd, "--grain", grain, cwd=tmp_path)
        assert r.returncode == 2 and "--grain" in r.stderr and reason in r.stderr, (cmd, r.stderr)
        assert "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_gen_reports_fragments_beside_boxes(tmp_path):
    r = run_cli("gen", "mini-mlp", "--spec", "test64", "--grain", "64", "--json", "--out-dir", "g",
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["grain"] == 64
    for row in doc["phases"]:
        assert row["transfers"] >= row["box"]["transfers"] and row["receives"] >= row["box"]["receives"]
        assert 0 < row["median_payload_cycles"] <= 16  # 64 bytes: 16 words at one word a cycle
        phase = json.loads((tmp_path / row["file"]).read_text())
        assert len(phase["transfers"]) == row["transfers"]
    r = run_cli("layout", "toy", "--grain", "64", cwd=tmp_path)
    assert r.returncode == 2 and "--grain" in r.stderr


def test_runs_merge_the_dimensions_both_buffers_span():
    from ipuopt.workloads.fragments import fragments

    box = ((0, 2), (0, 3), (0, 4))
    src, dst, n = fragments(box, box, box, 2, None)
    assert (src.tolist(), dst.tolist(), n.tolist()) == ([0], [0], [48])  # one run, batches too
    src, dst, n = fragments(box, box, ((0, 2), (0, 3), (0, 8)), 2, None)  # destination rows wider
    assert n.tolist() == [8] * 6 and dst.tolist() == [0, 16, 32, 48, 64, 80] and src.tolist()[1] == 8
    src, dst, n = fragments(((0, 2), (1, 3), (0, 4)), box, box, 2, None)
    assert (src.tolist(), n.tolist()) == ([8, 32], [16, 16])
    src, dst, n = fragments(((0, 2), (1, 3), (0, 4)), box, box, 2, 12)
    assert (src.tolist(), n.tolist()) == ([8, 20, 32, 44], [12, 4, 12, 4])


def test_element_bound_counts_the_gaps_between_small_transfers_and_stays_below_the_optimum():
    """Two tiles swap a few short fragments through one memory element each (as a reduction's
    fragments do): the element bound counts the lead and overhead between transfers, so it
    is above the plain sum of payloads, and never above CP-SAT's proven optimum."""
    import random

    from ipuopt.exchange.bounds import element_bound
    from ipuopt.exchange.phase import Transfer
    from ipuopt.exchange.timing import phase_timings

    spec = load_spec("test64")
    rng = random.Random(3)
    above_sum = 0
    for case in range(12):
        ts = []
        for k in range(rng.randint(2, 4)):
            ts.append(Transfer(f"a{k}", 0, (16,), rng.randint(1, 12), 0x80000 + 64 * k, 0x81000 + 64 * k))
        for k in range(rng.randint(1, 4)):
            ts.append(Transfer(f"b{k}", 16, (0,), rng.randint(1, 12), 0x80000 + 64 * k, 0x81000 + 64 * k,
                               paired=rng.choice(["allowed", "never"])))
        phase = Phase(spec_ref="test64", transfers=ts, name=f"swap{case}")
        timings = phase_timings(phase, spec)
        bound = element_bound(timings, spec).value
        res = solve(phase, spec, "cpsat", {"time_limit": 20, "workers": 1, "seed": 0})
        assert res.status == "optimal" and bound <= res.value, case
        plain = max(spec.exchange.tx_overhead + sum(min(tm.duration.values()) for tm in timings
                                                    if x in (tm.transfer.src, *tm.transfer.dst))
                    for x in (0, 16))
        above_sum += bound > plain
    assert above_sum  # the gaps count somewhere


def test_element_gaps_are_the_least_over_every_order_of_reads_and_writes():
    """Every row of reads and writes on one element, small enough to list: the gaps
    `element_bound` counts are the least any row has (a row that begins and ends with writes
    saves a lead for the hazard, as a spec whose hazard is shorter than the lead allows: the
    bound was once above such a phase's optimum, a fuzzed spec with hazard 0 and lead 1)."""
    import itertools

    from ipuopt.exchange.bounds import _element_gaps

    for reads, writes in itertools.product(range(1, 5), repeat=2):
        rows = set(itertools.permutations("r" * reads + "w" * writes))
        for o, lead, hazard in itertools.product(range(3), range(3), range(6)):
            gap = {"rr": o, "ww": lead, "wr": hazard, "rw": 0}
            least = min(sum(gap[a + b] for a, b in itertools.pairwise(row)) for row in rows)
            assert _element_gaps(reads, writes, o, lead, hazard) == least, (reads, writes, o, lead, hazard)


@pytest.mark.parametrize("elem", [1, 2, 4])
def test_paired_runs_count_the_fragments_that_start_aligned_at_both_ends(elem, monkeypatch):
    """`paired_runs` (in closed form, for prices) against `fragments` (every fragment built):
    random boxes in random buffers whose starts are off alignment by random bytes, at every
    kind of grain; with a grain that is not a multiple of the alignment every run counts. All
    boxes at once, in chunks, count as each alone."""
    import random

    from ipuopt.workloads import fragments as module
    from ipuopt.workloads.fragments import fragments, paired_runs, runs_of

    rng = random.Random(elem)
    counted = some = not_all = 0
    rows: dict = {}  # grain -> (arrays of each box, its count alone)
    for _ in range(1500):
        outer = [tuple((a, a + rng.randint(1, 9)) for a in (rng.randint(0, 3) for _ in range(3)))
                 for _ in range(2)]
        lo = [max(s[0], d[0]) for s, d in zip(*outer, strict=True)]
        hi = [min(s[1], d[1]) for s, d in zip(*outer, strict=True)]
        if any(a >= b for a, b in zip(lo, hi, strict=True)):
            continue
        box = tuple((a, rng.randint(a + 1, b)) for a, b in
                    ((rng.randint(a, b - 1), b) for a, b in zip(lo, hi, strict=True)))
        grain = rng.choice([None, "box", 8, 16, 12])
        starts = [rng.choice([0, 0, rng.randrange(8)]) for _ in range(2)]
        src, dst, _ = fragments(box, outer[0], outer[1], elem, grain)
        want = int(np.sum(((starts[0] + src) % 8 == 0) & ((starts[1] + dst) % 8 == 0)))
        arr = [np.array([[r[i] for r in b]]) for b in (box, *outer) for i in (0, 1)]
        ends = [(arr[2 + 2 * k], arr[3 + 2 * k], np.array([starts[k]])) for k in (0, 1)]
        got = int(paired_runs(arr[0], arr[1], *ends, elem, grain, 8)[0])
        rows.setdefault(grain, []).append(([arr[0], arr[1], *(x for e in ends for x in e)], got))
        runs, run_bytes = runs_of(arr[0], arr[1], ends[0][:2], ends[1][:2], elem, grain)
        if grain in (None, "box"):
            assert got == want
        elif grain % 8 == 0:  # every fragment of a run starts as aligned as the run
            assert got * -(-int(run_bytes[0]) // grain) == want
        else:
            assert got == runs[0]
        counted += 1
        some += want > 0
        not_all += want < len(src)
    assert counted >= 600 and some >= 25 and not_all >= 300, (counted, some, not_all)
    monkeypatch.setattr(module, "_CHUNK", 7)
    for grain, found in rows.items():
        a = [np.concatenate(col) for col in zip(*(r for r, _ in found), strict=True)]
        together = paired_runs(a[0], a[1], tuple(a[2:5]), tuple(a[5:8]), elem, grain, 8)
        assert together.tolist() == [g for _, g in found]
