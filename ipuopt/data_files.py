"""Where the YAML shipped with ipuopt lives, in a source checkout and in an installed package."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(kind: str) -> Path:
    """`kind` is specs, solvers or models: installed under ipuopt/data, at the repo top otherwise."""
    installed = _PACKAGE / "data" / kind
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / kind
