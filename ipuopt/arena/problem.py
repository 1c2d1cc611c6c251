"""An arena: buffers with sizes and live step ranges in one memory region, from YAML or CSV."""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipuopt.data_files import bundled_hint, bundled_path
from ipuopt.errors import InputError, Problem, unknown_keys
from ipuopt.io import note_input, parse_int, read_document
from ipuopt.limits import MAX_BYTES, MAX_STEPS, too_big
from ipuopt.spec import Spec, load_spec

OBJECTIVES = ("fit", "peak", "conflicts")
_BUFFER_KEYS = ("id", "size", "live", "align", "offset", "alias_of", "distinct_elements_from")
_ARENA_KEYS = ("spec", "region", "capacity", "buffers", "conflicts", "name")


@dataclass(frozen=True)
class Buffer:
    id: str
    size: int
    first: int  # live over steps [first, end)
    end: int
    align: int = 1
    offset: int | None = None
    alias_of: str | None = None
    distinct_elements_from: tuple[str, ...] = ()

    def live_with(self, other: Buffer) -> bool:
        return self.first < other.end and other.first < self.end

    def to_dict(self) -> dict[str, Any]:
        """As in an arena file (defaults left out)."""
        doc: dict[str, Any] = {"id": self.id, "size": self.size, "live": [self.first, self.end]}
        if self.align != 1:
            doc["align"] = self.align
        for key in ("offset", "alias_of"):
            if getattr(self, key) is not None:
                doc[key] = getattr(self, key)
        if self.distinct_elements_from:
            doc["distinct_elements_from"] = list(self.distinct_elements_from)
        return doc


@dataclass(frozen=True)
class Conflict:
    a: str
    b: str
    weight: int


@dataclass
class Arena:
    buffers: list[Buffer]
    capacity: int
    element_bytes: int
    conflicts: list[Conflict] = field(default_factory=list)
    spec_name: str = ""
    region: str = ""
    name: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        self.index = {b.id: i for i, b in enumerate(self.buffers)}

    def roots(self) -> dict[str, str]:
        """Each buffer's storage owner: itself, or the end of its alias_of chain."""
        out: dict[str, str] = {}
        for b in self.buffers:
            seen, cur = set(), b
            while cur.alias_of is not None and cur.id not in seen:
                seen.add(cur.id)
                cur = self.buffers[self.index[cur.alias_of]]
            out[b.id] = cur.id
        return out

    def storage(self) -> dict[str, tuple[int, int, int]]:
        """Per storage root: (size, first, end) of the storage the placers reserve, which
        holds the root's largest alias over the hull of their live ranges."""
        roots = self.roots()
        out: dict[str, tuple[int, int, int]] = {}
        for b in self.buffers:
            r = roots[b.id]
            size, first, end = out.get(r, (b.size, b.first, b.end))
            out[r] = (max(size, b.size), min(first, b.first), max(end, b.end))
        return out

    def peak_live(self) -> tuple[int, int]:
        """(largest total size live at one step, that step), aliases counted once."""
        roots = self.roots()
        events: dict[int, int] = {}
        for b in self.buffers:
            if roots[b.id] != b.id:
                continue
            events[b.first] = events.get(b.first, 0) + b.size
            events[b.end] = events.get(b.end, 0) - b.size
        best, at, cur = 0, 0, 0
        for t in sorted(events):
            cur += events[t]
            if cur > best:
                best, at = cur, t
        return best, at


def arena_from_dict(doc: Any, file: str = "", relative_to: Path | None = None) -> Arena:
    if not isinstance(doc, dict):
        raise InputError.one(file, "", "an arena must be a mapping with spec, region, buffers")
    problems = unknown_keys(doc, _ARENA_KEYS, file)
    spec: Spec | None = None
    if not doc.get("spec"):
        problems.append(Problem(file, "spec", "missing: name a spec"))
    else:
        try:
            spec = load_spec(str(doc["spec"]), relative_to, file)
        except InputError as exc:
            problems += exc.problems
    region = None
    if spec is not None:
        regions = {r.name: r for r in spec.regions}
        region = regions.get(str(doc.get("region")))
        if region is None:
            problems.append(Problem(file, "region", f"unknown region {doc.get('region')!r} "
                                                    f"(spec {spec.name} has {', '.join(regions)})"))
    size = region.size if region is not None else MAX_BYTES  # without one, the buffers are still checked
    capacity = parse_int(doc.get("capacity", size))
    if capacity is None or capacity <= 0 or capacity > size:
        problems.append(Problem(file, "capacity", f"must be in 1..{size} (region size)"))
        capacity = size
    lists = {}
    for key in ("buffers", "conflicts"):
        lists[key] = doc.get(key) or []
        if not isinstance(lists[key], list):
            problems.append(Problem(file, key, "must be a list"))
            lists[key] = []
    buffers: list[Buffer] = []
    for i, raw in enumerate(lists["buffers"]):
        b = _buffer(raw, i, file, problems)
        if b:
            buffers.append(b)
    conflicts = []
    for i, c in enumerate(lists["conflicts"]):
        w = parse_int(c.get("weight")) if isinstance(c, dict) else None
        if not isinstance(c, dict) or w is None or w < 0:
            problems.append(Problem(file, f"conflicts[{i}]", "needs a, b and a weight >= 0"))
            continue
        conflicts.append(Conflict(str(c.get("a")), str(c.get("b")), w))
    arena = Arena(buffers, capacity, region.element_bytes if region else capacity, conflicts,
                  spec.name if spec else "", region.name if region else "", str(doc.get("name") or ""), file)
    raw_ids = [str(r["id"]) for r in lists["buffers"] if isinstance(r, dict) and "id" in r]
    problems += check_arena(arena, raw_ids)
    if problems:
        raise InputError(problems)
    return arena


def _buffer(raw: Any, i: int, file: str, problems: list[Problem]) -> Buffer | None:
    if not isinstance(raw, dict) or "id" not in raw:
        problems.append(Problem(file, f"buffers[{i}]", "needs an id"))
        return None
    bid = str(raw["id"])
    w = f"buffer {bid}"
    before = len(problems)
    problems.extend(unknown_keys(raw, _BUFFER_KEYS, file, f"{w}.", "unknown field"))
    size = parse_int(raw.get("size"))
    if size is None or size <= 0:
        problems.append(Problem(file, f"{w}.size", f"must be an integer > 0, got {raw.get('size')!r}"))
    live = raw.get("live")
    if not (isinstance(live, list) and len(live) == 2 and all(parse_int(x) is not None for x in live)
            and 0 <= parse_int(live[0]) < parse_int(live[1])):  # type: ignore[operator]
        problems.append(Problem(file, f"{w}.live", f"must be [first, end), 0 <= first < end, got {live!r}"))
    elif reason := too_big(parse_int(live[1]), MAX_STEPS):  # type: ignore[arg-type]
        problems.append(Problem(file, f"{w}.live", reason))
    align = parse_int(raw.get("align", 1))
    if align is None or not 0 < align <= MAX_BYTES:
        problems.append(Problem(file, f"{w}.align", f"must be an integer in 1..{MAX_BYTES}"))
    offset = raw.get("offset")
    if offset is not None and (parse_int(offset) is None or parse_int(offset) < 0):  # type: ignore[operator]
        problems.append(Problem(file, f"{w}.offset", "must be an integer >= 0"))
    distinct = raw.get("distinct_elements_from") or []
    if not isinstance(distinct, list):
        problems.append(Problem(file, f"{w}.distinct_elements_from", "must be a list of ids"))
        distinct = []
    if len(problems) > before:
        return None
    return Buffer(bid, size, parse_int(live[0]), parse_int(live[1]), align,  # type: ignore[arg-type]
                  parse_int(offset) if offset is not None else None,
                  str(raw["alias_of"]) if raw.get("alias_of") is not None else None,
                  tuple(str(x) for x in distinct))


def check_arena(arena: Arena, all_ids: list[str] | None = None) -> list[Problem]:
    """Cross-buffer checks: duplicate ids (among `all_ids`, the malformed buffers' too),
    unknown references, fixed offsets that break rules."""
    file = arena.source
    all_ids = all_ids if all_ids is not None else [b.id for b in arena.buffers]
    counts = Counter(all_ids)
    problems = [Problem(file, f"buffer {d}.id", f"duplicate id ({n} buffers)")
                for d, n in sorted(counts.items()) if n > 1]
    ids = set(all_ids)
    for b in arena.buffers:
        w = f"buffer {b.id}"
        if b.alias_of is not None:
            if b.alias_of not in ids:
                problems.append(Problem(file, f"{w}.alias_of", f"unknown buffer {b.alias_of!r}"))
            elif b.alias_of == b.id:
                problems.append(Problem(file, f"{w}.alias_of", "a buffer cannot alias itself"))
        for d in b.distinct_elements_from:
            if d not in ids:
                problems.append(Problem(file, f"{w}.distinct_elements_from", f"unknown buffer {d!r}"))
        if b.size > arena.capacity:
            problems.append(Problem(file, f"{w}.size", f"{b.size} exceeds capacity {arena.capacity}"))
        if b.offset is not None:
            if b.offset % b.align:
                problems.append(Problem(file, f"{w}.offset", f"not a multiple of align {b.align}"))
            if b.offset + b.size > arena.capacity:
                problems.append(Problem(file, f"{w}.offset", "fixed offset + size exceeds capacity"))
    for i, c in enumerate(arena.conflicts):
        for x in (c.a, c.b):
            if x not in ids:
                problems.append(Problem(file, f"conflicts[{i}]", f"unknown buffer {x!r}"))
    if not problems:
        roots = arena.roots()
        for b in arena.buffers:
            if b.alias_of is not None and roots[b.id] == b.id:
                problems.append(Problem(file, f"buffer {b.id}.alias_of", "alias cycle"))
    return problems


def checked_arena(arena: Arena) -> Arena:
    """An arena built in code, checked as a file is: every buffer's fields, capacity and
    element size, then the checks across buffers; every problem at once."""
    file = arena.source or "(arena built in code)"
    problems: list[Problem] = []
    for name in ("capacity", "element_bytes"):
        value = getattr(arena, name)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_BYTES:
            problems.append(Problem(file, name, f"must be an integer in 1..{MAX_BYTES}, got {value!r}"))
    for i, b in enumerate(arena.buffers):
        if not isinstance(b, Buffer):
            problems.append(Problem(file, f"buffers[{i}]", f"not a Buffer: {b!r}"))
        else:
            _buffer(b.to_dict(), i, file, problems)
    for i, c in enumerate(arena.conflicts):
        if not isinstance(c, Conflict) or not isinstance(c.weight, int) or c.weight < 0:
            problems.append(Problem(file, f"conflicts[{i}]", "needs a, b and a weight >= 0"))
    if not problems:
        problems = [Problem(file, p.field, p.reason) for p in check_arena(arena)]
    if problems:
        raise InputError(problems)
    return arena


def load_arena(path: str | Path) -> Arena:
    """An arena by path or by bundled name (models/arenas/)."""
    p = bundled_path(path, "models/arenas")
    hint = bundled_hint("models/arenas", "arenas")
    return arena_from_dict(read_document(p, hint), str(p), p.parent)


# MiniMalloc's later benchmark files name the columns buffer,start,end,size
_CSV_ALIASES = {"buffer": "id", "start": "lower", "begin": "lower", "end": "upper"}


def _csv_rows(p: Path, needed: set[str]) -> list[dict[str, str]]:
    """The rows of an allocator CSV, its columns named as ipuopt names them (`_CSV_ALIASES`)."""
    try:
        text = note_input(p).read_text()
    except UnicodeDecodeError:
        raise InputError.one(str(p), "", "not UTF-8 text (a binary file?)") from None
    with io.StringIO(text, newline="") as handle:
        reader = csv.DictReader(handle)
        header = [_CSV_ALIASES.get(h.strip(), h.strip()) for h in reader.fieldnames or []]
        missing = needed - set(header)
        if missing:
            raise InputError.one(str(p), "header", f"missing columns: {', '.join(sorted(missing))}")
        reader.fieldnames = header
        return list(reader)


def load_csv(path: str | Path, capacity: int, element_bytes: int | None = None) -> Arena:
    """The public allocator CSV: id,lower,upper,size (live over [lower, upper)); the
    names buffer, start (or begin) and end are accepted for id, lower and upper."""
    p = Path(path)
    if not p.is_file():
        raise InputError.one(str(p), "", "file not found")
    if capacity <= 0 or capacity > MAX_BYTES:
        raise InputError.one(str(p), "--capacity", f"must be in 1..{MAX_BYTES}")
    problems: list[Problem] = []
    buffers, raw_ids = [], []
    for n, row in enumerate(_csv_rows(p, {"id", "lower", "upper", "size"}), start=2):
        raw_ids.append(str(row.get("id")))
        vals = {k: parse_int(row.get(k)) for k in ("lower", "upper", "size")}
        bad = [k for k, v in vals.items() if v is None]
        if bad or vals["size"] <= 0 or not 0 <= vals["lower"] < vals["upper"] <= MAX_STEPS:  # type: ignore[operator]
            problems.append(Problem(str(p), f"line {n} (buffer {row.get('id')})",
                                    f"needs integers 0 <= lower < upper <= {MAX_STEPS} and size > 0"))
            continue
        buffers.append(Buffer(str(row["id"]), vals["size"], vals["lower"], vals["upper"]))  # type: ignore[arg-type]
    arena = Arena(buffers, capacity, element_bytes or capacity, [], "", "", p.stem, str(p))
    problems += check_arena(arena, raw_ids)
    if problems:
        raise InputError(problems)
    return arena


def offsets_csv(arena: Arena, offsets: dict[str, int]) -> str:
    """A placement as the allocator CSV with an `offset` column, as MiniMalloc writes it."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["id", "lower", "upper", "size", "offset"])
    for b in arena.buffers:
        writer.writerow([b.id, b.first, b.end, b.size, offsets[b.id]])
    return buf.getvalue()


def load_offsets(path: str | Path, arena: Arena) -> dict[str, int]:
    """A placement of `arena`: `ipuopt place --out` JSON/YAML (`offsets`), or an allocator CSV
    with an `offset` column. Every buffer without an integer offset, every id the arena does
    not have, and a placement made for another arena are reported at once."""
    p = Path(path)
    file = str(p)
    if p.suffix.lower() == ".csv":
        if not p.is_file():
            raise InputError.one(file, "", "file not found")
        raw: Any = {r["id"]: r["offset"] for r in _csv_rows(p, {"id", "offset"})}
    else:
        doc = read_document(p)
        if not isinstance(doc, dict) or not isinstance(doc.get("offsets"), dict):
            raise InputError.one(file, "offsets", "a placement needs a mapping buffer id -> offset")
        named = doc.get("arena")
        if named and arena.name and named != arena.name:
            raise InputError.one(file, "arena", f"a placement for arena {named!r}, not {arena.name!r}")
        raw = doc["offsets"]
    offsets: dict[str, int] = {}
    problems = []
    for bid, value in raw.items():
        if bid not in arena.index:
            problems.append(Problem(file, f"offsets.{bid}", f"no buffer {bid!r} in the arena"))
        elif (n := parse_int(value)) is None:
            problems.append(Problem(file, f"offsets.{bid}", f"not an integer offset: {value!r}"))
        else:
            offsets[str(bid)] = n
    if len(problems) == len(raw) and raw:
        raise InputError.one(file, "offsets", f"none of its {len(raw)} buffers is in arena "
                                              f"{arena.name or arena.source!r}")
    missing = [b.id for b in arena.buffers if str(b.id) not in raw]
    if missing:
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        problems.append(Problem(file, "offsets", f"no offset for {', '.join(missing[:10])}{more}"))
    if problems:
        raise InputError(problems)
    return offsets
