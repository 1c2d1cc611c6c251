"""Reading YAML/JSON inputs with clear errors, and writing outputs whole or not at all."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from ipuopt.errors import InputError


def parse_int(value: Any) -> int | None:
    """Integers, also written as strings such as "0x80000"; None when not an integer."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            return None
    return None


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser: ~10x faster on big files


def read_document(path: str | Path, hint: str = "") -> Any:
    """Parse a YAML or JSON file (chosen by suffix; YAML also reads JSON); `hint` follows
    "file not found" (e.g. the bundled names the user may have meant)."""
    p = Path(path)
    if not p.exists():
        raise InputError.one(str(p), "", f"file not found{hint}")
    if p.is_dir():
        raise InputError.one(str(p), "", "is a directory, expected a file")
    try:
        text = p.read_text()
    except UnicodeDecodeError:
        raise InputError.one(str(p), "", "not UTF-8 text (a binary file?)") from None
    except OSError as exc:
        raise InputError.one(str(p), "", f"cannot read: {exc.strerror or exc}") from None
    if not text.strip():
        raise InputError.one(str(p), "", "file is empty")
    try:
        if p.suffix.lower() == ".json":
            return json.loads(text)
        return yaml.load(text, Loader=_LOADER)  # noqa: S506 (a safe loader)
    except json.JSONDecodeError as exc:
        raise InputError.one(str(p), f"line {exc.lineno}", f"invalid JSON: {exc.msg}") from None
    except yaml.YAMLError as exc:  # one line: where, and the parser's short reason
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError.one(str(p), where, f"invalid YAML: {reason}") from None


def write_atomic(path: str | Path, text: str | bytes, protect: tuple[Path, ...] = ()) -> None:
    """Write a file (text or bytes) whole or not at all; refuse to overwrite any of the
    `protect` inputs."""
    target = Path(path)
    for other in protect:
        if other.exists() and target.exists() and target.resolve() == Path(other).resolve():
            raise InputError.one(str(target), "--out", "refusing to overwrite an input file")
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InputError.one(str(target), "--out", f"directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as a plain open() would have made it, not mkstemp's 0600
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: str | Path, data: Any, protect: tuple[Path, ...] = ()) -> None:
    write_atomic(path, json.dumps(data, indent=1) + "\n", protect)
