"""A sweep file and the cells it names: phase x spec x solver, each with a content id."""

from __future__ import annotations

import glob
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipuopt.errors import InputError, Problem, unknown_keys
from ipuopt.exchange.phase import Phase, load_phase
from ipuopt.io import read_document
from ipuopt.registry import resolve
from ipuopt.spec import Spec

_KEYS = ("name", "phases", "specs", "solvers", "description")
_SOLVE_KEYS = ("solver", "profile", "time_limit", "workers", "seed", "params")
_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Solve:
    """One solve of a sweep. `id` hashes what decides its answer: the phase file's content,
    the resolved spec and the solver options; a rerun finds finished cells by it."""

    id: str
    phase_file: str  # relative to the sweep file
    phase: Phase
    spec: Spec
    label: str  # the solver as named in reports: "greedy", "cpsat 30s", "profile cpsat-repro"
    backend: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Sweep:
    name: str
    source: Path
    cells: list[Solve]


def _phase_files(patterns: list[Any], base: Path, file: str, problems: list[Problem]) -> list[Path]:
    found: list[Path] = []
    for i, pattern in enumerate(patterns):
        if not isinstance(pattern, str):
            problems.append(Problem(file, f"phases[{i}]", "must be a file, folder or glob"))
            continue
        path = base / pattern
        if path.is_dir():
            matches = sorted(p for p in path.iterdir() if p.suffix in _SUFFIXES)
        else:
            matches = sorted(Path(p) for p in glob.glob(str(path), recursive=True) if Path(p).is_file())
        if not matches:
            problems.append(Problem(file, f"phases[{i}]", f"{pattern!r} matches no phase file"))
        found += [m for m in matches if m not in found]
    return found


def _solver(entry: Any, i: int, file: str) -> tuple[str, str, dict[str, Any]]:
    """(label, backend, params) of one `solvers` entry."""
    where = f"solvers[{i}]"
    if not isinstance(entry, dict):
        raise InputError.one(file, where, "must be a mapping such as {solver: cpsat, time_limit: 30}")
    if problems := unknown_keys(entry, _SOLVE_KEYS, file, f"{where}."):
        raise InputError(problems)
    if ("solver" in entry) == ("profile" in entry):
        raise InputError.one(file, where, "name a solver or a profile")
    extra = entry.get("params") or {}
    if not isinstance(extra, dict):
        raise InputError.one(file, f"{where}.params", "must be a mapping of backend parameters")
    try:  # the same policy as the command line's: `cpsat` brings the cpsat profile's settings
        chosen, params = resolve("exchange", None if "profile" in entry else str(entry["solver"]),
                                 profile=entry.get("profile"), time_limit=entry.get("time_limit"),
                                 workers=entry.get("workers"), seed=entry.get("seed"), options=extra,
                                 field=f"{where}.solver")
    except InputError as exc:  # named by the entry (its solver when that is what is wrong)
        raise InputError([Problem(file, p.field if p.field == f"{where}.solver" else where, p.reason)
                          for p in exc.problems]) from None
    label = f"profile {entry['profile']}" if "profile" in entry else chosen.name
    if "time_limit" in entry:
        label += f" {entry['time_limit']:g}s"
    settings = {k: v for k, v in (("time_limit", params.time_limit), ("workers", params.workers),
                                  ("seed", params.seed)) if v is not None}
    return label, chosen.name, {**settings, **params.options}


def load_sweep(path: str | Path) -> Sweep:
    """Every cell of the sweep, each phase loaded and checked against its spec before any work."""
    source = Path(path)
    file = str(source)
    doc = read_document(source)
    if not isinstance(doc, dict):
        raise InputError.one(file, "", "a sweep must be a mapping with phases and solvers")
    problems = unknown_keys(doc, _KEYS, file)
    phases = doc.get("phases")
    if isinstance(phases, str):
        phases = [phases]
    if not isinstance(phases, list) or not phases:
        problems.append(Problem(file, "phases", "must list phase files, folders or globs"))
        phases = []
    specs = doc.get("specs") or [None]
    if not isinstance(specs, list):
        problems.append(Problem(file, "specs", "must be a list of spec names or files"))
        specs = []
    entries = doc.get("solvers")
    if not isinstance(entries, list) or not entries:
        problems.append(Problem(file, "solvers", "must list the solvers to run, e.g. [{solver: greedy}, "
                                                 "{solver: cpsat, time_limit: 30}]"))
        entries = []
    solvers = []
    for i, e in enumerate(entries):
        try:
            solvers.append(_solver(e, i, file))
        except InputError as exc:
            problems += exc.problems
    labels = [s[0] for s in solvers]
    for label in sorted({x for x in labels if labels.count(x) > 1}):
        problems.append(Problem(file, "solvers", f"two entries have the same options ({label})"))
    base = source.parent
    cells = []
    for phase_path in _phase_files(phases, base, file, problems):
        content = hashlib.sha256(phase_path.read_bytes()).hexdigest()
        rel = str(phase_path.relative_to(base)) if phase_path.is_relative_to(base) else str(phase_path)
        for spec_ref in specs:
            try:
                phase, spec = load_phase(phase_path, None if spec_ref is None else str(spec_ref))
            except InputError as exc:
                problems += [p for p in exc.problems if p not in problems]
                continue
            for label, backend, params in solvers:
                key = json.dumps([content, spec.raw, backend, params], sort_keys=True, default=str)
                cells.append(Solve(hashlib.sha256(key.encode()).hexdigest()[:16], rel, phase, spec, label,
                                  backend, params))
    if problems:
        raise InputError(problems)
    return Sweep(str(doc.get("name") or source.stem), source, cells)
