"""The published JSON Schemas: each is a valid schema, the copies in docs/ are current, every
bundled file and every file ipuopt writes validates, and the schemas refuse what the loaders refuse
(the malformed-input corpus), apart from the checks that need the whole file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, run_cli
from jsonschema import Draft202012Validator

import ipuopt
from ipuopt.io import read_document
from ipuopt.schemas import KINDS, schema

sys.path.insert(0, str(Path(__file__).parent))
import test_corpus as corpus  # noqa: E402  (its corpus, by loader)

BUNDLED = {"spec": "specs/*.yaml", "phase": "models/examples/*.yaml", "arena": "models/arenas/*.yaml",
           "workload": "models/*.yaml", "layout-problem": "models/layouts/*.yaml",
           "profile": "solvers/*.yaml"}


def _errors(kind: str, doc: object) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in Draft202012Validator(schema(kind)).iter_errors(doc)]


def test_every_kind_is_a_valid_schema_printed_by_the_command() -> None:
    listing = run_cli("schema")
    assert listing.returncode == 0
    assert [line.split()[0] for line in listing.stdout.splitlines()] == list(KINDS)
    for kind in KINDS:
        r = run_cli("schema", kind)
        assert r.returncode == 0, r.stderr
        printed = json.loads(r.stdout)
        Draft202012Validator.check_schema(printed)
        assert printed == schema(kind)
    bad = run_cli("schema", "phases")
    assert bad.returncode == 2 and "unknown file kind 'phases'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_the_schemas_in_docs_are_the_ones_the_command_prints(tmp_path: Path) -> None:
    assert run_cli("schema", "--out-dir", str(tmp_path / "s")).returncode == 0
    published = ROOT / "docs" / "schemas"
    for kind in KINDS:
        doc = published / f"{kind}.schema.json"
        assert doc.is_file(), f"{doc} missing: run `ipuopt schema --out-dir docs/schemas`"
        assert json.loads(doc.read_text()) == schema(kind), f"{doc} is stale: rerun `ipuopt schema --out-dir`"
        assert (tmp_path / "s" / doc.name).read_text() == doc.read_text()
    assert sorted(p.name for p in published.glob("*.json")) == sorted(f"{k}.schema.json" for k in KINDS)


@pytest.mark.parametrize("kind", sorted(BUNDLED))
def test_every_bundled_file_validates(kind: str) -> None:
    files = sorted(ROOT.glob(BUNDLED[kind]))
    assert files
    for f in files:
        assert not _errors(kind, read_document(f)), f


def test_every_file_ipuopt_writes_validates(tmp_path: Path) -> None:
    phases = tmp_path / "phases"
    phases.mkdir()
    for name in ("tiny", "small"):
        (phases / f"{name}.yaml").write_text((ROOT / "models" / "examples" / f"{name}.yaml").read_text())
    (tmp_path / "sweep.yaml").write_text("name: t\nphases: [phases/]\nsolvers:\n  - {solver: greedy}\n")
    written = {  # command -> (kind, file it writes)
        ("solve", "small", "--out", "s.json"): ("schedule", "s.json"),
        ("solve", "tiny", "--solver", "cpsat", "--time-limit", "5", "--out", "c.json"):
            ("schedule", "c.json"),
        ("solve", "tiny", "--time-limit", "0", "--solver", "auto", "--out", "z.json"): ("schedule", "z.json"),
        ("place", "mini-mlp", "--out", "p.json"): ("placement", "p.json"),
        ("place", "mini-mlp", "--objective", "conflicts", "--out", "pc.json"): ("placement", "pc.json"),
        ("layout", "toy", "--k", "2", "--out", "l.json"): ("plan", "l.json"),
        ("layout-problem", "mini-mlp", "--spec", "test64", "--out", "lp.yaml"): ("layout-problem", "lp.yaml"),
        ("layout", "mini-mlp", "--spec", "test64", "--rerank", "--out", "lw.json"): ("plan", "lw.json"),
        ("run", "mini-mlp", "--spec", "test64", "--grain", "box", "--out", "r.json"): ("run", "r.json"),
        ("optimize", "mini-mlp", "--spec", "test64", "--time-limit", "4", "--workers", "1",
         "--out", "o.json"):
            ("run", "o.json"),
        ("gen", "mini-mlp", "--spec", "test64", "--arena", "--out-dir", "g"):
            ("arena", "g/mini-mlp-arena.yaml"),
        ("import", "openshop", str(ROOT / "tests/data/openshop/ta4x4_1os.txt"), "--out", "os.yaml"):
            ("phase", "os.yaml"),
        ("sweep", "sweep.yaml", "--out", "sw", "--workers", "1"): ("sweep", "sweep.yaml"),
    }
    for args, (kind, out) in written.items():
        r = run_cli(*args, cwd=tmp_path)
        assert r.returncode == 0, (args, r.stderr)
        errors = _errors(kind, read_document(tmp_path / out))
        assert not errors, (args, errors)
    for f in [*(tmp_path / "g").glob("*.json"), *phases.glob("*.yaml")]:
        assert not _errors("phase", read_document(f)), f
    schedules = list((tmp_path / "sw" / "schedules").glob("*.json"))
    assert schedules
    for f in schedules:
        assert not _errors("schedule", read_document(f)), f


# Refused by the loaders for reasons a schema cannot see: they need the whole file, the spec, or
# the parser (a key given twice is gone before any schema looks).
WHOLE_FILE = {"dstself.yaml": "dst never the src", "dup.yaml": "unique ids",
              "cycle.yaml": "no dependency cycle",
              "afterunk.yaml": "known ids", "s-overlap.yaml": "regions apart", "a-live.yaml": "first < end",
              "a-dup.yaml": "unique ids", "a-alias.yaml": "alias chains", "a-conf.yaml": "known ids",
              "w-tensor.yaml": "known tensors", "dupkey.yaml": "parser", "dupkey.json": "parser",
              "dupid.yaml": "parser"}
LOADER_KIND = {corpus._phase: "phase", corpus._arena: "arena", corpus._spec: "spec",
               corpus._schedule: "schedule", corpus._workload: "workload", corpus._profile: "profile"}


def _parsed(name: str, content: str | bytes) -> object:
    if isinstance(content, bytes):
        return None
    try:
        doc = json.loads(content) if name.endswith(".json") else yaml.safe_load(content)
    except (ValueError, yaml.YAMLError):
        return None
    return doc if isinstance(doc, dict) else None  # empty or not a mapping: refused by type


def test_the_schemas_refuse_what_the_loaders_refuse() -> None:
    checked = 0
    for loader, name, content, _ in corpus.CORPUS:
        kind = LOADER_KIND.get(loader)
        doc = _parsed(name, content)
        if kind is None or doc is None:
            continue
        checked += 1
        errors = _errors(kind, doc)
        assert bool(errors) != (name in WHOLE_FILE), (name, kind, errors)
    assert checked >= 40


@pytest.mark.parametrize(("kind", "doc"), [
    ("layout-problem", {"capacity": {}, "order": [], "tensors": {}, "operators": {}}),
    ("layout-problem", {"capacity": {"a": 1}, "order": ["g"],
                        "tensors": {"x": {"layout": "r", "producer": "g"}},
                        "operators": {"g": {"output": "y", "candidates": [{"id": "c", "output": "o"}]}}}),
    ("layout-problem", {"capacity": {"a": -1}, "order": ["g"], "tensors": {},
                        "operators": {"g": {"output": "y", "candidates": []}}}),
    ("sweep", {"phases": [], "solvers": [{"solver": "greedy"}]}),
    ("sweep", {"phases": ["p/"], "solvers": [{"solver": "greedy", "profile": "cpsat"}]}),
    ("sweep", {"phases": ["p/"], "solvers": [{"solver": "greedy", "timelimit": 3}]}),
    ("workload", {"tensors": {"x": {"shape": [4, 8], "colour": "red"}}, "operators": []}),
    ("workload", {"tensors": {}, "operators": [{"kind": "gemm", "in": "x", "out": "y"}]}),
    ("schedule", {"transfers": [{"id": "a", "start": 1.5}]}),
    ("plan", {"status": "optimal"}),
])
def test_the_schemas_refuse_malformed_files_of_the_other_kinds(kind: str, doc: dict, tmp_path: Path) -> None:
    assert _errors(kind, doc)
    loaders = {"layout-problem": ("layout", "p.json"), "sweep": ("sweep", "s.json", "--out", "o"),
               "workload": ("gen", "w.json", "--spec", "test64", "--out-dir", "g"),
               "schedule": ("validate", "tiny", "p.json")}
    if kind in loaders:  # the loader refuses it too, with its field and no traceback
        (tmp_path / loaders[kind][1 if kind != "schedule" else 2]).write_text(json.dumps(doc))
        r = run_cli(*loaders[kind], cwd=tmp_path)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr


def test_the_example_in_docs_formats_runs_and_finds_the_mistake() -> None:
    text = (ROOT / "docs" / "formats.md").read_text()
    block = text[text.index("## JSON Schemas"):text.index("## Hardware spec")]
    code = block[block.index("```python\n") + 10:block.index("```", block.index("```python\n") + 10)]
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("transfers/0/words 0 is less than the minimum of 1"), r.stdout
    with pytest.raises(ipuopt.InputError, match="unknown file kind"):
        ipuopt.schema("phases")
