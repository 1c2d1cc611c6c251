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


def _folder(kind: str) -> Path:
    """The shipped folder `kind` ("models/examples", ...)."""
    top, *rest = kind.split("/")
    return data_dir(top).joinpath(*rest)


def bundled_names(kind: str) -> list[str]:
    """Names of the files shipped under `kind` (e.g. "models/examples")."""
    return sorted(p.stem for p in _folder(kind).glob("*") if p.suffix in _SUFFIXES)


def bundled_hint(kind: str, what: str) -> str:
    """What follows "file not found": the bundled names the user may have meant."""
    return f" (bundled {what}: {', '.join(bundled_names(kind))})"


def bundled_path(ref: str | Path, kind: str) -> Path:
    """A path as given when it exists, else the bundled file of that name under `kind`;
    the path as given when neither exists (so the caller's error names what the user wrote)."""
    path = Path(ref)
    if path.exists() or path.suffix in _SUFFIXES or "/" in str(ref):
        return path
    folder = _folder(kind)
    for suffix in _SUFFIXES:
        if (folder / f"{ref}{suffix}").is_file():
            return folder / f"{ref}{suffix}"
    return path
