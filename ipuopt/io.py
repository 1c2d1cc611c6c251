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


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader (libyaml's parser, ~10x faster on big files) that refuses a key given
    twice in one mapping: YAML would keep the last silently (`spec: test64` then `spec:
    gc200` solved on gc200)."""


def _mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict:
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool):
            continue  # an unhashable key is the constructor's to refuse
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"key {key!r} appears twice",
                                                    key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_LOADER = _Loader
# libyaml's emitter where PyYAML was built with it: the same text, 5x faster on a
# fragment-level layout problem (tens of MB)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _json_object(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object, refusing a key given twice (json keeps the last)."""
    out = dict(pairs)
    if len(out) < len(pairs):
        twice = next(k for i, (k, _) in enumerate(pairs) if any(k == j for j, _ in pairs[:i]))
        raise ValueError(f"key {twice!r} appears twice")
    return out
_INPUTS: set[Path] = set()  # every file this process has read: never a target for an output


def note_input(path: str | Path) -> Path:
    """Remember `path` as an input (symlinks followed), so no output of this process replaces
    it, whatever option named it (`--spec`, `--plan`, a file a sweep or arena refers to)."""
    p = Path(path)
    _INPUTS.add(p.resolve())
    return p


def is_input(path: str | Path) -> bool:
    return Path(path).resolve() in _INPUTS


# What each output kind may be written as, by suffix.
FORMATS = {".json": "JSON", ".yaml": "YAML", ".yml": "YAML"}


def read_document(path: str | Path, hint: str = "") -> Any:
    """Parse a YAML or JSON file (chosen by suffix; YAML also reads JSON); `hint` follows
    "file not found" (e.g. the bundled names the user may have meant)."""
    p = Path(path)
    if not p.exists():
        raise InputError.one(str(p), "", f"file not found{hint}")
    note_input(p)
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
            return json.loads(text, object_pairs_hook=_json_object)
        return yaml.load(text, Loader=_LOADER)  # noqa: S506 (a safe loader)
    except json.JSONDecodeError as exc:
        raise InputError.one(str(p), f"line {exc.lineno}", f"invalid JSON: {exc.msg}") from None
    except ValueError as exc:  # `_json_object`'s
        raise InputError.one(str(p), "", f"invalid JSON: {exc}") from None
    except yaml.YAMLError as exc:  # one line: where, and the parser's short reason
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError.one(str(p), where, f"invalid YAML: {reason}") from None


def write_atomic(path: str | Path, text: str | bytes, protect: tuple[Path, ...] = ()) -> None:
    """Write a file (text or bytes) whole or not at all; refuse to overwrite any input file:
    the `protect` ones and every file this process has read."""
    target = Path(path)
    for other in protect:
        note_input(other)
    if is_input(target):
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


def yaml_text(data: Any) -> str:
    """`data` (JSON's types) as block-style YAML, as `yaml.dump` writes it, but in a few lines
    of Python: PyYAML's representer took 5 s to write a test64 attention block's layout
    problem (89,131 rows), this 0.4 s. Each distinct scalar is written once by PyYAML itself,
    so quoting is PyYAML's."""
    memo: dict[Any, str] = {}

    def scalar(value: Any) -> str:
        key = (type(value), value)
        if key not in memo:
            text = yaml.dump(value, Dumper=_DUMPER, width=1000)
            text = text[:-5] if text.endswith("\n...\n") else text.rstrip("\n")
            memo[key] = text if "\n" not in text else json.dumps(value)
        return memo[key]

    lines: list[str] = []

    def emit(value: Any, pad: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, dict | list) and v:
                    lines.append(f"{pad}{scalar(k)}:")
                    emit(v, pad + "  " if isinstance(v, dict) else pad)
                else:
                    lines.append(f"{pad}{scalar(k)}: {nested(v)}")
        else:
            for v in value:
                if isinstance(v, dict | list) and v:
                    first = len(lines)
                    emit(v, pad + "  ")
                    lines[first] = f"{pad}- {lines[first][len(pad) + 2:]}"
                else:
                    lines.append(f"{pad}- {nested(v)}")

    def nested(value: Any) -> str:
        return "{}" if isinstance(value, dict) else "[]" if isinstance(value, list) else scalar(value)

    if isinstance(data, dict | list) and data:
        emit(data, "")
        return "\n".join(lines) + "\n"
    return yaml.dump(data, Dumper=_DUMPER, width=1000)


def write_document(path: str | Path, data: Any, protect: tuple[Path, ...] = ()) -> None:
    """Write `data` as its suffix names it: JSON (.json) or YAML (.yaml, .yml)."""
    if FORMATS.get(Path(path).suffix.lower()) == "YAML":  # through JSON: enums and tuples as JSON has them
        write_atomic(path, yaml_text(json.loads(json.dumps(data))), protect)
    else:
        write_json(path, data, protect)


def check_output(path: Path, option: str = "--out", suffixes: tuple[str, ...] | None = tuple(FORMATS),
                 inputs: tuple[Path | str | None, ...] = ()) -> None:
    """Before any work: `path` can be written (its folder exists and takes a new file, it is
    not a folder), in a format its suffix names (`suffixes`, None: any), and it is none of the
    `inputs` nor any file read so far."""
    if path.is_dir():
        raise InputError.one(str(path), option, "is a directory; give a file name")
    if suffixes is not None and path.suffix.lower() not in suffixes:
        raise InputError.one(str(path), option, f"unknown file type {path.suffix or '(none)'!r}: "
                                                f"name it {' or '.join(suffixes)}")
    for other in inputs:
        if other is not None and Path(other).exists():
            note_input(other)
    if is_input(path):
        raise InputError.one(str(path), option, "refusing to overwrite an input file")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError.one(str(path), option, f"folder {folder} does not exist")
    try:  # os.access says yes on read-only and virtual file systems (/proc) for root
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise InputError.one(str(path), option, f"cannot write in folder {folder}: "
                                                f"{exc.strerror or exc}") from None
