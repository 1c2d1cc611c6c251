"""Named solver profiles (solvers/*.yaml): a backend and the parameters passed to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ipuopt.data_files import data_dir
from ipuopt.errors import InputError
from ipuopt.io import read_document


def profile_names() -> list[str]:
    return sorted(p.stem for p in data_dir("solvers").glob("*.yaml"))


def load_profile(ref: str) -> tuple[str, dict[str, Any]]:
    """(backend, params) of a profile given by name or path."""
    path = Path(ref)
    if not path.is_file():
        path = data_dir("solvers") / f"{ref}.yaml"
        if not path.is_file():
            raise InputError.one(ref, "--profile",
                                 f"unknown solver profile (known: {', '.join(profile_names())})")
    doc = read_document(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("backend"), str):
        raise InputError.one(str(path), "backend", "a profile needs a backend name")
    unknown = set(doc) - {"backend", "params", "description"}
    if unknown:
        raise InputError.one(str(path), sorted(unknown)[0], "unknown key (backend, params, description)")
    params = doc.get("params") or {}
    if not isinstance(params, dict):
        raise InputError.one(str(path), "params", "must be a mapping of parameter: value")
    return doc["backend"], dict(params)
