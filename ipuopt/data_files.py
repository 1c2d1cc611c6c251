"""Where the YAML shipped with ipuopt lives, in a source checkout and in an installed package,
and how a bundled file is found by name."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_SUFFIXES = (".yaml", ".yml", ".json")


def data_dir(kind: str) -> Path:
    """`kind` is specs, solvers or models: installed under ipuopt/data, at the repo top otherwise."""
    installed = _PACKAGE / "data" / kind
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / kind


def bundled_names(kind: str) -> list[str]:
    """Names of the files shipped under `kind` (e.g. "models/examples")."""
    folder = data_dir(kind.split("/")[0]).joinpath(*kind.split("/")[1:])
    return sorted(p.stem for p in folder.glob("*") if p.suffix in _SUFFIXES)


def resolve(ref: str | Path, kind: str) -> Path:
    """A path as given when it exists, else the bundled file of that name under `kind`;
    the path as given when neither exists (so the caller's error names what the user wrote)."""
    path = Path(ref)
    if path.exists() or path.suffix in _SUFFIXES or "/" in str(ref):
        return path
    folder = data_dir(kind.split("/")[0]).joinpath(*kind.split("/")[1:])
    for suffix in _SUFFIXES:
        if (folder / f"{ref}{suffix}").is_file():
            return folder / f"{ref}{suffix}"
    return path
