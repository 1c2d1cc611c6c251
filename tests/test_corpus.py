"""A corpus of malformed inputs of every kind, each refused with the file, the field and the
reason (never a crash), and odd but valid inputs that every solver handles."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli

from ipuopt.arena.problem import load_arena, load_csv
from ipuopt.arena.solve import place
from ipuopt.arena.validate import validate_placement
from ipuopt.errors import InputError
from ipuopt.exchange.phase import load_phase
from ipuopt.exchange.schedule import load_schedule
from ipuopt.exchange.solve import solve
from ipuopt.exchange.validate import validate
from ipuopt.profiles import load_profile
from ipuopt.registry import names
from ipuopt.spec import load_spec
from ipuopt.workloads.workload import load_workload

T = "spec: test64\ntransfers:\n"
GOOD_PHASE = T + "  - {id: a, src: 0, dst: [1, 2], words: 8, src_addr: 0x80000, dst_addr: 0x80000}\n"
A = "spec: test64\nregion: interleaved\nbuffers:\n"
W = "name: w\ndtype: f16\ntensors:\n  x: {shape: [4, 8], input: true}\n  w: {shape: [8, 4], weight: true}\n" \
    "  y: {shape: [4, 4]}\noperators:\n"


def _phase(path: Path) -> object:
    return load_phase(path)


def _arena(path: Path) -> object:
    return load_arena(path)


def _csv(path: Path) -> object:
    return load_csv(path, 1 << 20)


def _spec(path: Path) -> object:
    return load_spec(path)


def _schedule(path: Path) -> object:
    return load_schedule(path)


def _workload(path: Path) -> object:
    return load_workload(path)


def _profile(path: Path) -> object:
    return load_profile(str(path))


BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe" * 8

# (loader, file name, content, text the error must contain)
CORPUS: list[tuple[Callable[[Path], object], str, str | bytes, str]] = [
    (_phase, "trunc.yaml", GOOD_PHASE[:-20], "invalid YAML"),
    (_phase, "trunc.json", json.dumps({"spec": "test64", "transfers": []})[:-3], "invalid JSON"),
    (_phase, "bin.yaml", BINARY, "not UTF-8"),
    (_phase, "empty.yaml", "", "file is empty"),
    (_phase, "blank.yaml", "\n  \n", "file is empty"),
    (_phase, "list.yaml", "- 1\n- 2\n", "mapping"),
    (_phase, "notlist.yaml", "spec: test64\ntransfers: 5\n", "transfers"),
    (_phase, "nospec.yaml", "transfers: []\n", "spec"),
    (_phase, "wstr.yaml", T + "  - {id: a, src: 0, dst: [1], words: abc}\n", "transfer a.words"),
    (_phase, "wfloat.yaml", T + "  - {id: a, src: 0, dst: [1], words: 1.5}\n", "transfer a.words"),
    (_phase, "wbool.yaml", T + "  - {id: a, src: 0, dst: [1], words: true}\n", "transfer a.words"),
    (_phase, "wneg.yaml", T + "  - {id: a, src: 0, dst: [1], words: -4}\n", "transfer a.words"),
    (_phase, "wbig.yaml", T + "  - {id: a, src: 0, dst: [1], words: 100000000000000000000}\n",
     "transfer a.words"),
    (_phase, "srcstr.yaml", T + "  - {id: a, src: one, dst: [1], words: 4}\n", "transfer a.src"),
    (_phase, "srcbig.yaml", T + "  - {id: a, src: 1000000000000000000000000000000, dst: [1], words: 4}\n",
     "transfer a.src"),
    (_phase, "dstempty.yaml", T + "  - {id: a, src: 0, dst: [], words: 4}\n", "transfer a.dst"),
    (_phase, "dstself.yaml", T + "  - {id: a, src: 0, dst: [0], words: 4}\n", "transfer a.dst"),
    (_phase, "addrbig.yaml", T + "  - {id: a, src: 0, dst: [1], words: 4, src_addr: 0x1000000000000000}\n",
     "transfer a.src_addr"),
    (_phase, "addrstr.yaml", T + "  - {id: a, src: 0, dst: [1], words: 4, dst_addr: here}\n",
     "transfer a.dst_addr"),
    (_phase, "dup.yaml", T + "  - {id: a, src: 0, dst: [1], words: 4}\n  - {id: a, src: 1, dst: [2], words: 4}\n",
     "duplicate id"),
    (_phase, "cycle.yaml", T + "  - {id: a, src: 0, dst: [1], words: 4, after: [b]}\n"
                               "  - {id: b, src: 1, dst: [2], words: 4, after: [a]}\n", "dependency cycle"),
    (_phase, "afterunk.yaml", T + "  - {id: a, src: 0, dst: [1], words: 4, after: [zz]}\n", "transfer a.after"),
    (_phase, "paired.yaml", T + "  - {id: a, src: 0, dst: [1], words: 4, paired: sometimes}\n",
     "transfer a.paired"),
    (_phase, "unkkey.yaml", T + "  - {id: a, src: 0, dst: [1], words: 4, colour: red}\n", "colour"),
    (_spec, "s-trunc.yaml", "name: x\nextends: gc200\nmemory: {size: 0x9c000", "invalid YAML"),
    (_spec, "s-bin.yaml", BINARY, "not UTF-8"),
    (_spec, "s-empty.yaml", "", "file is empty"),
    (_spec, "s-tiles0.yaml", "extends: gc200\nname: x\ntiles: 0\n", "tiles"),
    (_spec, "s-tileshuge.yaml", "extends: gc200\nname: x\ntiles: 1000000000000\n", "tiles"),
    (_spec, "s-memhuge.yaml", "extends: gc200\nname: x\nmemory: {size: 0x10000000000000}\n", "memory.size"),
    (_spec, "s-lat.yaml", "extends: gc200\nname: x\nexchange: {route_latency: fast}\n", "route_latency"),
    (_spec, "s-pertile.yaml", "extends: gc200\nname: x\nexchange: {route_latency: {base: 8, per_tile: 1.0e300}}\n",
     "per_tile"),
    (_spec, "s-type.yaml", "extends: gc200\nname: x\nexchange: {word_bytes: four}\n", "exchange.word_bytes"),
    (_spec, "s-overlap.yaml", "extends: gc200\nname: x\nmemory: {regions: [{name: a, start: 0x4c000, size: 0x20000, "
                              "element_bytes: 0x8000}, {name: b, start: 0x5c000, size: 0x20000, "
                              "element_bytes: 0x8000}]}\n", "overlaps"),
    (_arena, "a-trunc.yaml", A + "  - {id: a, size: 8, live: [0,", "invalid YAML"),
    (_arena, "a-bin.yaml", BINARY, "not UTF-8"),
    (_arena, "a-empty.yaml", "", "file is empty"),
    (_arena, "a-notlist.yaml", A.replace("buffers:\n", "buffers: 3\n"), "buffers"),
    (_arena, "a-size.yaml", A + "  - {id: a, size: big, live: [0, 1]}\n", "buffer a.size"),
    (_arena, "a-sizehuge.yaml", A + "  - {id: a, size: 100000000000000000000, live: [0, 1]}\n", "buffer a.size"),
    (_arena, "a-live.yaml", A + "  - {id: a, size: 8, live: [3, 1]}\n", "buffer a.live"),
    (_arena, "a-liveneg.yaml", A + "  - {id: a, size: 8, live: [-1, 1]}\n", "buffer a.live"),
    (_arena, "a-livehuge.yaml", A + "  - {id: a, size: 8, live: [0, 100000000000000000000]}\n", "buffer a.live"),
    (_arena, "a-dup.yaml", A + "  - {id: a, size: 8, live: [0, 1]}\n  - {id: a, size: 8, live: [0, 1]}\n",
     "duplicate"),
    (_arena, "a-align.yaml", A + "  - {id: a, size: 8, live: [0, 1], align: 0}\n", "buffer a.align"),
    (_arena, "a-alias.yaml", A + "  - {id: a, size: 8, live: [0, 1], alias_of: b}\n"
                                 "  - {id: b, size: 8, live: [0, 1], alias_of: a}\n", "alias"),
    (_arena, "a-conf.yaml", A + "  - {id: a, size: 8, live: [0, 1]}\nconflicts: [{a: a, b: zz, weight: 1}]\n",
     "conflicts"),
    (_csv, "c-empty.csv", "", "missing columns"),
    (_csv, "c-bin.csv", BINARY, "not UTF-8"),
    (_csv, "c-cols.csv", "id,size\na,8\n", "missing columns"),
    (_csv, "c-int.csv", "id,lower,upper,size\na,0,x,8\n", "line 2"),
    (_csv, "c-huge.csv", "id,lower,upper,size\na,0,100000000000000000000,8\n", "line 2"),
    (_csv, "c-dup.csv", "id,lower,upper,size\na,0,1,8\na,0,1,8\n", "duplicate"),
    (_schedule, "sch-empty.json", "", "file is empty"),
    (_schedule, "sch-list.json", "[]", "transfers"),
    (_schedule, "sch-start.json", json.dumps({"transfers": [{"id": "a", "start": "soon"}]}), "transfer a.start"),
    (_schedule, "sch-width.json", json.dumps({"transfers": [{"id": "a", "start": 0, "width": "wide"}]}),
     "transfer a.width"),
    (_schedule, "sch-dup.json", json.dumps({"transfers": [{"id": "a", "start": 0}, {"id": "a", "start": 1}]}),
     "appears twice"),
    (_workload, "w-empty.yaml", "", "file is empty"),
    (_workload, "w-bin.yaml", BINARY, "not UTF-8"),
    (_workload, "w-dtype.yaml", W.replace("f16", "f8") + "  - {name: g, kind: gemm, a: x, b: w, out: y}\n",
     "dtype"),
    (_workload, "w-tensor.yaml", W + "  - {name: g, kind: gemm, a: nope, b: w, out: y}\n", "nope"),
    (_workload, "w-kind.yaml", W + "  - {name: g, kind: conv, a: x, b: w, out: y}\n", "kind"),
    (_workload, "w-key.yaml", W.replace("dtype", "dtyp") + "  - {name: g, kind: gemm, a: x, b: w, out: y}\n",
     "dtyp: unknown key"),
    (_workload, "w-tkey.yaml", W.replace("weight: true", "wieght: true") + "  - {name: g, kind: gemm, a: x, b: w, "
     "out: y}\n", "tensors.w.wieght: unknown key"),
    (_workload, "w-opkey.yaml", W + "  - {name: g, kind: gemm, a: x, b: w, out: y, in: x}\n",
     "operators[0].in: unknown key"),
    (_workload, "w-opnot.yaml", W + "  - gemm\n", "operators[0]: must be a mapping"),
    (_workload, "w-batch.yaml", W + "  - {name: g, kind: gemm, a: x, b: w, out: y, batch: two}\n",
     "operators[0].batch"),
    (_workload, "w-heads.yaml", W + "  - {name: g, kind: gemm, a: {tensor: x, heads: h}, b: w, out: y}\n",
     "operators[0].a.heads"),
    (_phase, "dupkey.yaml", "spec: test64\nspec: gc200\ntransfers: []\n", "key 'spec' appears twice"),
    (_phase, "dupkey.json", '{"spec": "test64", "spec": "gc200", "transfers": []}', "key 'spec' appears twice"),
    (_phase, "dupid.yaml", T + "  - {id: a, src: 0, src: 1, dst: [1], words: 4}\n", "key 'src' appears twice"),
    (load_schedule, "s-huge.json", json.dumps({"transfers": [{"id": "a", "start": 2**63, "width": "ordinary"}]}),
     "transfer a.start"),
    (_profile, "p-empty.yaml", "", "file is empty"),
    (_profile, "p-list.yaml", "[1]", "backend"),
    (_profile, "p-params.yaml", "backend: cpsat\nparams: 3\n", "params"),
]


@pytest.mark.parametrize("case", CORPUS, ids=[c[1] for c in CORPUS])
def test_malformed_input_is_refused_with_file_and_field(case, tmp_path: Path) -> None:
    loader, name, content, expected = case
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(InputError) as err:
        loader(path)
    text = str(err.value)
    assert name in text and expected in text, text


def test_malformed_input_through_the_cli(tmp_path: Path) -> None:
    """A few of the corpus as a user meets them: exit 2, one error line each, no traceback."""
    for name, content in (("wbig.yaml", CORPUS[12][2]), ("bin.yaml", BINARY), ("cycle.yaml", CORPUS[20][2])):
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        for solver in ("greedy", "cpsat", "milp"):
            r = run_cli("solve", str(path), "--solver", solver)
            assert r.returncode == 2 and r.stderr.startswith(f"error: {path}") and "Traceback" not in r.stderr


ODD = {
    "unicode ids": T + "  - {id: 'trånsfer-ü', src: 0, dst: [1], words: 4}\n"
                       "  - {id: '传输', src: 1, dst: [2], words: 4, after: ['trånsfer-ü']}\n",
    "one-word transfers": T + "".join(f"  - {{id: t{i}, src: {i}, dst: [{i + 1}], words: 1}}\n" for i in range(4)),
    "empty phase": "spec: test64\ntransfers: []\n",
    "largest transfer": T + "  - {id: a, src: 0, dst: [1], words: 159744}\n",
}


@pytest.mark.parametrize("solver", names("exchange"))
@pytest.mark.parametrize("name", list(ODD))
def test_odd_but_valid_phases_solve(name: str, solver: str, tmp_path: Path) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text(ODD[name], encoding="utf-8")
    phase, spec = load_phase(path)
    res = solve(phase, spec, solver, {"time_limit": 5, "workers": 1, "seed": 0})
    assert validate(phase, spec, res.solution).ok
    assert res.value >= res.bound
    if name == "empty phase":
        assert res.value == 0 and res.status == "optimal"


def test_unicode_ids_round_trip_through_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text(ODD["unicode ids"], encoding="utf-8")
    out = tmp_path / "s.json"
    assert run_cli("solve", str(path), "--out", str(out)).returncode == 0
    assert run_cli("validate", str(path), str(out)).returncode == 0


def test_odd_arenas_place(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(A + "  - {id: 'bü', size: 1, live: [0, 1]}\n  - {id: c, size: 1, live: [0, 1], alias_of: 'bü'}\n",
                    encoding="utf-8")
    arena = load_arena(path)
    for solver in ("greedy", "search", "cpsat", "milp", "auto"):
        res = place(arena, "peak", solver, {"time_limit": 5})
        assert res.solution.offsets is not None and validate_placement(arena, res.solution.offsets).ok
