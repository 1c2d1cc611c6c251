"""What a new user meets on day one: no input is ever overwritten, options that conflict or do
nothing are refused, output files are written in the format their names say, every problem of
an input is reported at once, and a file made for another phase, arena or workload says so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, run_cli

SPECS = ROOT / "specs"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A folder with a spec file, a phase on it, a profile and an arena on that spec."""
    shutil.copy(SPECS / "test64.yaml", tmp_path / "my.yaml")
    phase = yaml.safe_load((ROOT / "models" / "examples" / "tiny.yaml").read_text())
    (tmp_path / "phase.yaml").write_text(yaml.safe_dump({**phase, "spec": "my.yaml"}))
    (tmp_path / "prof.yaml").write_text("backend: cpsat\nparams: {time_limit: 5}\n")
    arena = yaml.safe_load((ROOT / "models" / "arenas" / "mini-mlp.yaml").read_text())
    (tmp_path / "arena.yaml").write_text(yaml.safe_dump({**arena, "spec": "my.yaml"}))
    return tmp_path


def _unchanged_after(path: Path, *args: str) -> str:
    before = path.read_bytes()
    r = run_cli(*args)
    assert r.returncode == 2, (args, r.returncode, r.stderr)
    assert path.read_bytes() == before, args
    return r.stderr


def test_no_command_overwrites_a_file_it_reads(work: Path) -> None:
    spec, prof, phase = str(work / "my.yaml"), str(work / "prof.yaml"), str(work / "phase.yaml")
    (work / "link.yaml").symlink_to(work / "my.yaml")
    cases = [
        ("solve", "tiny", "--spec", spec, "--out", spec),
        ("solve", "tiny", "--profile", prof, "--out", prof),
        ("solve", "tiny", "--spec", spec, "--out", str(work / "link.yaml")),  # a symlink to it
        ("run", "mini-mlp", "--spec", spec, "--out", spec),
        ("layout-problem", "mini-mlp", "--spec", spec, "--out", spec),
        ("layout", "mini-mlp", "--spec", spec, "--out", spec),
    ]
    shutil.copy(ROOT / "tests/data/minimalloc/input.12.csv", work / "in.csv")
    cases.append(("place", "--csv", str(work / "in.csv"), "--capacity", "64", "--out", str(work / "in.csv")))
    for args in cases:
        err = _unchanged_after(work / "my.yaml" if spec in args or "link.yaml" in args[-1]
                               else Path(args[args.index("--out") + 1]), *args)
        assert "refusing to overwrite an input file" in err, (args, err)
    # a file the input refers to (the arena's spec) is known only once it is read: still safe
    err = _unchanged_after(work / "my.yaml", "place", str(work / "arena.yaml"), "--out", spec)
    assert "refusing to overwrite an input file" in err
    err = _unchanged_after(work / "my.yaml", "solve", phase, "--out", spec)
    assert "refusing to overwrite an input file" in err


def test_a_plan_and_a_schedule_are_inputs_too(work: Path) -> None:
    plan = work / "plan.json"
    assert run_cli("layout", "mini-mlp", "--spec", "test64", "--out", str(plan)).returncode == 0
    err = _unchanged_after(plan, "run", "mini-mlp", "--spec", "test64", "--plan", str(plan),
                           "--out", str(plan))
    assert "refusing" in err


def test_outputs_are_checked_before_any_work(work: Path) -> None:
    r = run_cli("solve", "medium", "--solver", "cpsat", "--time-limit", "60", "--out", "/proc/x.json")
    assert r.returncode == 2 and "cannot write in folder /proc" in r.stderr and ".tmp" not in r.stderr
    r = run_cli("solve", "tiny", "--out", str(work / "s.txt"))
    assert r.returncode == 2 and "unknown file type '.txt'" in r.stderr
    r = run_cli("render", "tiny", "x.json", "--out", str(work / "t.svg"))
    assert r.returncode == 2 and "--out" in r.stderr and ".svg" in r.stderr
    r = run_cli("place", "--csv", str(ROOT / "tests/data/minimalloc/input.12.csv"), "--capacity", "64",
                "--out", str(work / "p.json"))
    assert r.returncode == 2 and "name it .csv" in r.stderr


def test_every_output_is_written_in_the_format_its_name_says(work: Path, tmp_path: Path) -> None:
    inst = tmp_path / "os.txt"
    inst.write_text("2 2\n1 2\n3 4\n")
    for name in ("os.json", "os.yaml"):
        r = run_cli("import", "openshop", str(inst), "--out", str(work / name))
        assert r.returncode == 0, r.stderr
        text = (work / name).read_text()
        doc = json.loads(text) if name.endswith(".json") else yaml.safe_load(text)
        assert len(doc["transfers"]) == 4
        assert run_cli("solve", str(work / name)).returncode == 0
    r = run_cli("solve", "tiny", "--out", str(work / "s.yaml"))
    assert r.returncode == 0 and yaml.safe_load((work / "s.yaml").read_text())["horizon"] == 130
    assert run_cli("validate", "tiny", str(work / "s.yaml")).returncode == 0
    r = run_cli("layout-problem", "mini-mlp", "--spec", "test64", "--out", str(work / "lp.json"), "--quiet")
    assert r.returncode == 0 and "operators" in json.loads((work / "lp.json").read_text())


@pytest.mark.parametrize(("args", "expected"), [
    (["solve", "tiny", "--profile", "cpsat", "--solver", "milp"], "milp conflicts with --profile cpsat"),
    (["solve", "tiny", "--param", "rounds=3"], "--param rounds: not a parameter of greedy"),
    (["solve", "tiny", "--solver", "milp", "--param", "num_workers=2"], "not a parameter of milp"),
    (["solve", "tiny", "--solver", "iterated", "--param", "free=3"], "not a parameter of iterated"),
    (["compare", "tiny", "--json", "--csv"], "give one output format"),
    (["validate", "tiny", "x.json", "--capacity", "5"], None),  # x.json missing: said first
])
def test_options_that_conflict_or_do_nothing_are_refused(args: list[str], expected: str | None) -> None:
    r = run_cli(*args)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr
    if expected:
        assert expected in r.stderr, r.stderr


def test_quiet_means_no_progress_and_all_results_on_every_command(tmp_path: Path) -> None:
    for args in (["solve", "medium", "--solver", "cpsat", "--time-limit", "3", "--quiet", "--json"],
                 ["place", "mini-mlp", "--quiet", "--json"],
                 ["compare", "tiny", "--solvers", "greedy", "--quiet", "--json"]):
        r = run_cli(*args, env={"IPUOPT_PROGRESS_AFTER": "0"})
        assert r.returncode == 0 and r.stderr == "", (args, r.stderr)
        assert json.loads(r.stdout), args
    r = run_cli("solve", "medium", "--solver", "cpsat", "--time-limit", "3", "--json",
                env={"IPUOPT_PROGRESS_AFTER": "0"})
    assert "stage greedy" in r.stderr  # the same command without --quiet shows its stages


def test_a_sweep_must_name_its_solvers(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(f"phases: [{ROOT / 'models/examples/tiny.yaml'}]\n")
    r = run_cli("sweep", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "solvers: must list the solvers to run" in r.stderr


def _errors(r) -> list[str]:  # noqa: ANN001
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert all(line.startswith("error: ") for line in lines), lines
    return lines


def test_every_problem_of_a_phase_at_once(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "spec: nosuch\ncolour: red\ntransfers:\n"
        "  - {id: a, src: 0, dst: [0, 1, 1], words: 4}\n"  # source among destinations, repeated
        "  - {id: b, src: 1, dst: [2], words: x, after: [zz]}\n"  # bad words, unknown dependency
        "  - {id: a, src: 2, dst: [3], words: 4}\n")  # duplicate id
    lines = _errors(run_cli("solve", str(tmp_path / "p.yaml")))
    text = "\n".join(lines)
    for part in ("colour: unknown key", "spec: unknown spec", "transfer a.dst: source tile 0",
                 "repeated destination [1]", "transfer b.words", "transfer a.id: duplicate id"):
        assert part in text, (part, text)


def test_every_problem_of_a_layout_problem_at_once(tmp_path: Path) -> None:
    doc = {"capacity": {"r": 100}, "order": ["a", "zz", "a"], "tensors": {"x": {"layout": "L"},
                                                                           "y": {"producer": "a"}},
           "operators": {"a": {"inputs": ["x"], "output": "y", "candidates": [
               {"id": "c", "compute": -1, "needs": {"x": "L"}, "output": "L"}]},
               "b": {"inputs": ["nope"], "output": "y", "candidates": [{"id": "d", "output": "L"}]}}}
    (tmp_path / "lp.yaml").write_text(yaml.safe_dump(doc))
    text = "\n".join(_errors(run_cli("layout", str(tmp_path / "lp.yaml"))))
    for part in ("order: a is listed 2 times", "order: zz is not among the operators",
                 "order: operator b is missing", "candidate c.compute", ):
        assert part in text, (part, text)


def test_every_problem_of_an_arena_a_sweep_and_arrivals_at_once(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        "spec: test64\nregion: nowhere\nbuffers:\n  - {id: x, size: -1, live: [0, 1]}\n"
        "  - {id: x, size: 8, live: [0, 1]}\n")
    text = "\n".join(_errors(run_cli("place", str(tmp_path / "a.yaml"))))
    assert "region: unknown region" in text and "buffer x.size" in text and "duplicate id (2 buffers)" in text
    (tmp_path / "s.yaml").write_text("phases: [nothing/*.yaml]\nsolvers: [{solver: magic}, {solver: cpsat, "
                                     "time_limit: -1}, {solver: greedy, params: {rounds: 2}}]\n")
    text = "\n".join(_errors(run_cli("sweep", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o"))))
    for part in ("phases[0]", "solvers[0].solver", "solvers[1]", "solvers[2]: not a parameter of greedy"):
        assert part in text, (part, text)
    sched = tmp_path / "t.json"
    assert run_cli("solve", "tiny", "--out", str(sched)).returncode == 0
    (tmp_path / "arr.json").write_text('{"9999": 5, "3": -2, "x": 1}')
    lines = _errors(run_cli("simulate", "tiny", str(sched), "--arrivals", str(tmp_path / "arr.json")))
    assert len(lines) == 3, lines


def test_a_file_made_for_something_else_says_so_in_one_line(tmp_path: Path) -> None:
    tiny = tmp_path / "tiny.json"
    assert run_cli("solve", "tiny", "--out", str(tiny)).returncode == 0
    for cmd in (["validate", "small", str(tiny)], ["simulate", "small", str(tiny)],
                ["render", "small", str(tiny), "--out", str(tmp_path / "x.html")]):
        lines = _errors(run_cli(*cmd))
        assert lines == [f"error: {tiny}: phase: a schedule for phase 'tiny', not 'small'"], lines
    plan = tmp_path / "plan.json"
    assert run_cli("layout", "mini-mlp", "--spec", "test64", "--out", str(plan)).returncode == 0
    lines = _errors(run_cli("run", "mini-attention", "--spec", "test64", "--plan", str(plan)))
    assert lines == [f"error: {plan}: workload: a plan for workload 'mini-mlp', not 'mini-attention'"]


def test_validate_checks_placements(tmp_path: Path) -> None:
    good = tmp_path / "p.json"
    assert run_cli("place", "mini-mlp", "--out", str(good), "--quiet").returncode == 0
    r = run_cli("validate", "mini-mlp", str(good))
    assert r.returncode == 0 and r.stdout.startswith("ok: 12 buffers, peak")
    doc = json.loads(good.read_text())
    ids = list(doc["offsets"])
    doc["offsets"][ids[1]] = doc["offsets"][ids[0]]  # two buffers live together at one address
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    r = run_cli("validate", "mini-mlp", str(tmp_path / "bad.json"), "--json")
    report = json.loads(r.stdout)
    assert r.returncode == 1 and not report["ok"]
    assert {"rule": "overlap", "buffers": ids[:2]} in [{k: v[k] for k in ("rule", "buffers")}
                                                       for v in report["violations"]]
    doc["offsets"][ids[2]] = "high"
    del doc["offsets"][ids[3]]
    doc["arena"] = "another"
    (tmp_path / "other.json").write_text(json.dumps(doc))
    assert _errors(run_cli("validate", "mini-mlp", str(tmp_path / "other.json"))) == [
        f"error: {tmp_path / 'other.json'}: arena: a placement for arena 'another', not 'mini-mlp-arena'"]
    del doc["arena"]
    (tmp_path / "other.json").write_text(json.dumps(doc))
    text = "\n".join(_errors(run_cli("validate", "mini-mlp", str(tmp_path / "other.json"))))
    assert "not an integer offset: 'high'" in text and f"no offset for {ids[3]}" in text
    # an allocator CSV and its placed copy, as MiniMalloc's checker takes them
    src = ROOT / "tests/data/minimalloc/input.12.csv"
    placed = tmp_path / "placed.csv"
    assert run_cli("place", "--csv", str(src), "--capacity", "64", "--out", str(placed)).returncode == 0
    r = run_cli("validate", str(src), str(placed), "--capacity", "64")
    assert r.returncode == 0 and r.stdout.startswith("ok: ")
