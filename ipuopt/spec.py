"""Hardware spec: load YAML, resolve `extends` (deep merge), validate every field."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipuopt.data_files import data_dir
from ipuopt.errors import InputError, Problem, unknown_keys
from ipuopt.io import read_document
from ipuopt.limits import MAX_BYTES, MAX_TILES, too_big

# Schema: key -> (type, required). Nested dicts are sub-schemas. "pos" = positive int,
# "nonneg" = int >= 0, "posnum" = positive number, "nonnegnum" = number >= 0.
_LATENCY = {"base": ("nonneg", True), "per_tile": ("nonnegnum", False)}
_REGION = {
    "name": ("str", True),
    "start": ("nonneg", True),
    "size": ("pos", True),
    "element_bytes": ("pos", True),
}
_SCHEMA: dict[str, Any] = {
    "name": ("str", True),
    "description": ("str", False),
    "extends": ("str", False),
    "clock_hz": ("posnum", True),
    "tiles": ("pos", True),
    "pairs": ("pairs", True),
    "memory": (
        {"base": ("nonneg", True), "size": ("pos", True), "regions": ("regions", True)},
        True,
    ),
    # ipuopt extension (not in the exchange model doc): kernel rates for workload pricing.
    "compute": (
        {
            "f16_macs_per_cycle": ("posnum", False),
            "f32_macs_per_cycle": ("posnum", False),
            "elementwise_bytes_per_cycle": ("posnum", False),
            "partial_add_bytes_per_cycle": ("posnum", False),
        },
        False,
    ),
    "exchange": (
        {
            "word_bytes": ("pos", True),
            "ordinary_words_per_cycle": ("posnum", True),
            "paired_words_per_cycle": ("posnum", True),
            "paired_alignment": ("pos", True),
            "tx_overhead": ("nonneg", True),
            "route_latency": ("latency", True),
            "rx_lead": ("nonneg", True),
            "format_switch": ("nonneg", True),
            "write_hazard": ("nonneg", True),
            "max_fanout": ("pos", True),
            "sync_cycles": ("nonneg", False),
        },
        True,
    ),
}


# Assumed when a spec gives no `compute` section: the GC200 figures below.
DEFAULT_COMPUTE = {"f16_macs_per_cycle": 64, "f32_macs_per_cycle": 16,
                   "elementwise_bytes_per_cycle": 16, "partial_add_bytes_per_cycle": 4.32}


@dataclass(frozen=True)
class Region:
    name: str
    start: int
    size: int
    element_bytes: int

    @property
    def end(self) -> int:
        return self.start + self.size


@dataclass(frozen=True)
class Exchange:
    word_bytes: int
    ordinary_words_per_cycle: float
    paired_words_per_cycle: float
    paired_alignment: int
    tx_overhead: int
    latency_base: int
    latency_per_tile: float
    rx_lead: int
    format_switch: int
    write_hazard: int
    max_fanout: int
    sync_cycles: int


@dataclass(frozen=True)
class Spec:
    """A resolved, validated hardware variant (after `extends`)."""

    name: str
    description: str
    clock_hz: float
    tiles: int
    pairs: tuple[tuple[int, int], ...]
    memory_base: int
    memory_size: int
    regions: tuple[Region, ...]
    exchange: Exchange
    compute: dict[str, float] | None = None
    source: str = ""
    raw: dict | None = None  # the merged document, for `specs show`

    def __post_init__(self) -> None:
        partner: dict[int, int] = {}
        for a, b in self.pairs:
            partner[a] = b
            partner[b] = a
        object.__setattr__(self, "_partner", partner)

    def partner(self, tile: int) -> int | None:
        return self._partner.get(tile)  # type: ignore[attr-defined]

    def latency(self, src: int, dst: int) -> int:
        """Route latency: base plus per_tile times the tile-id distance, floored."""
        ex = self.exchange
        return ex.latency_base + math.floor(ex.latency_per_tile * abs(src - dst))

    def aligned(self, nbytes: int) -> int:
        """`nbytes` rounded up to the paired alignment, so a buffer can take part in paired sends."""
        a = self.exchange.paired_alignment
        return -(-nbytes // a) * a

    @property
    def memory_end(self) -> int:
        return self.memory_base + self.memory_size

    def elements(self, addr: int, nbytes: int) -> tuple[tuple[int, int], ...]:
        """Memory elements (region index, element index) touched by [addr, addr+nbytes).

        Bytes outside every region belong to no element and so take part in no hazard.
        """
        out: list[tuple[int, int]] = []
        end = addr + nbytes
        for r_index, region in enumerate(self.regions):
            lo, hi = max(addr, region.start), min(end, region.end)
            if lo >= hi:
                continue
            first = (lo - region.start) // region.element_bytes
            last = (hi - 1 - region.start) // region.element_bytes
            out.extend((r_index, e) for e in range(first, last + 1))
        return tuple(out)


def spec_names() -> list[str]:
    return sorted(p.stem for p in data_dir("specs").glob("*.yaml"))


def _locate(ref: str, relative_to: Path | None, referrer: str, field: str) -> Path:
    """A spec reference is a shipped name or a path: relative to the referring file's folder
    when there is one (never also to the current folder, which would change the answer with
    where the command is run), else to the current folder."""
    c = Path(ref) if relative_to is None else relative_to / ref
    if c.is_file() and (c.suffix in (".yaml", ".yml", ".json") or "/" in ref):
        return c
    shipped = data_dir("specs") / f"{ref}.yaml"
    if shipped.is_file():
        return shipped
    if "/" in ref or Path(ref).suffix in (".yaml", ".yml", ".json"):
        where = "" if relative_to is None else f" (paths start from the folder of {referrer})"
        raise InputError.one(referrer, field, f"spec file not found: {c}{where}")
    known = ", ".join(spec_names())
    raise InputError.one(referrer, field, f"unknown spec {ref!r} (known: {known}; or give a path)")


def _deep_merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _resolve(path: Path, chain: tuple[Path, ...]) -> dict:
    doc = read_document(path)
    if not isinstance(doc, dict):
        raise InputError.one(str(path), "", "a spec must be a mapping of fields")
    parent_ref = doc.get("extends")
    if parent_ref is None:
        return doc
    if not isinstance(parent_ref, str):
        raise InputError.one(str(path), "extends", "must be a spec name or path")
    parent_path = _locate(parent_ref, path.parent, str(path), "extends").resolve()
    if parent_path in chain or parent_path == path.resolve():
        cycle = " -> ".join(p.stem for p in (*chain, path.resolve(), parent_path))
        raise InputError.one(str(path), "extends", f"cycle in extends: {cycle}")
    parent = _resolve(parent_path, (*chain, path.resolve()))
    merged = _deep_merge(parent, {k: v for k, v in doc.items() if k != "extends"})
    return merged


def _check_value(kind: str, value: Any) -> str | None:
    """The reason `value` is not of `kind`, or None when it is."""
    is_num = isinstance(value, int | float) and not isinstance(value, bool)
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if kind == "str":
        return None if isinstance(value, str) else "must be a string"
    if is_num and kind != "str" and value == value and (big := too_big(value, MAX_BYTES)):
        return big
    if kind == "pos":
        return None if is_int and value > 0 else "must be a positive integer"
    if kind == "nonneg":
        return None if is_int and value >= 0 else "must be an integer >= 0"
    if kind == "posnum":
        return None if is_num and value > 0 else "must be a positive number"
    if kind == "nonnegnum":
        return None if is_num and value >= 0 else "must be a number >= 0"
    raise AssertionError(kind)


def _walk(doc: Any, schema: dict, path: str, file: str, problems: list[Problem]) -> None:
    if not isinstance(doc, dict):
        problems.append(Problem(file, path or "(top)", "must be a mapping"))
        return
    problems.extend(unknown_keys(doc, schema, file, path))
    for key, (kind, required) in schema.items():
        where = f"{path}{key}"
        if key not in doc:
            if required:
                problems.append(Problem(file, where, "missing required field"))
            continue
        value = doc[key]
        if isinstance(kind, dict):
            _walk(value, kind, where + ".", file, problems)
        elif kind == "latency":
            if isinstance(value, dict):
                _walk(value, _LATENCY, where + ".", file, problems)
            elif reason := _check_value("nonneg", value):
                problems.append(Problem(file, where, f"{reason} or a mapping with base/per_tile"))
        elif kind == "regions":
            if not isinstance(value, list) or not value:
                problems.append(Problem(file, where, "must be a non-empty list of regions"))
                continue
            for i, region in enumerate(value):
                _walk(region, _REGION, f"{where}[{i}].", file, problems)
        elif kind == "pairs":
            if value in ("adjacent", "none") or value is None:
                continue
            ok = isinstance(value, list) and all(
                isinstance(p, list | tuple) and len(p) == 2 and all(
                    isinstance(t, int) and not isinstance(t, bool) for t in p) for p in value)
            if not ok:
                problems.append(Problem(file, where,
                                        "must be 'adjacent', 'none' or a list of [a, b] tile pairs"))
        elif reason := _check_value(kind, value):
            problems.append(Problem(file, where, reason))


def _pairs(value: Any, tiles: int, file: str, problems: list[Problem]) -> tuple:
    if value in (None, "none"):
        return ()
    if value == "adjacent":
        return tuple((2 * k, 2 * k + 1) for k in range(tiles // 2))
    seen: dict[int, int] = {}
    out = []
    for i, (a, b) in enumerate(value):
        for t in (a, b):
            if not 0 <= t < tiles:
                problems.append(Problem(file, f"pairs[{i}]", f"tile {t} does not exist (0..{tiles - 1})"))
            elif t in seen:
                problems.append(Problem(file, f"pairs[{i}]", f"tile {t} already paired in pairs[{seen[t]}]"))
            else:
                seen[t] = i
        if a == b:
            problems.append(Problem(file, f"pairs[{i}]", "a tile cannot pair with itself"))
        out.append((int(a), int(b)))
    return tuple(out)


def spec_from_dict(doc: dict, file: str = "") -> Spec:
    """Validate a resolved spec document and build the Spec, reporting every problem."""
    problems: list[Problem] = []
    _walk(doc, _SCHEMA, "", file, problems)
    if problems:
        raise InputError(problems)
    mem = doc["memory"]
    regions = tuple(Region(**r) for r in mem["regions"])
    base, end = mem["base"], mem["base"] + mem["size"]
    for i, r in enumerate(regions):
        if r.start < base or r.end > end:
            problems.append(Problem(file, f"memory.regions[{i}]",
                                    f"[{r.start:#x}, {r.end:#x}) lies outside memory [{base:#x}, {end:#x})"))
        for j in range(i):
            o = regions[j]
            if r.start < o.end and o.start < r.end:
                problems.append(Problem(file, f"memory.regions[{i}]",
                                        f"overlaps memory.regions[{j}] ({o.name})"))
    ex = doc["exchange"]
    lat = ex["route_latency"]
    lat = lat if isinstance(lat, dict) else {"base": lat}
    if ex["paired_words_per_cycle"] < ex["ordinary_words_per_cycle"]:
        problems.append(Problem(file, "exchange.paired_words_per_cycle",
                                "must be at least ordinary_words_per_cycle"))
    if reason := too_big(doc["tiles"], MAX_TILES):
        raise InputError([*problems, Problem(file, "tiles", reason)])
    pairs = _pairs(doc.get("pairs"), doc["tiles"], file, problems)
    if problems:
        raise InputError(problems)
    exchange = Exchange(
        word_bytes=ex["word_bytes"],
        ordinary_words_per_cycle=ex["ordinary_words_per_cycle"],
        paired_words_per_cycle=ex["paired_words_per_cycle"],
        paired_alignment=ex["paired_alignment"],
        tx_overhead=ex["tx_overhead"],
        latency_base=lat["base"],
        latency_per_tile=lat.get("per_tile", 0),
        rx_lead=ex["rx_lead"],
        format_switch=ex["format_switch"],
        write_hazard=ex["write_hazard"],
        max_fanout=ex["max_fanout"],
        sync_cycles=ex.get("sync_cycles", 0),
    )
    return Spec(
        name=doc["name"], description=doc.get("description", ""), clock_hz=doc["clock_hz"],
        tiles=doc["tiles"], pairs=pairs, memory_base=base, memory_size=mem["size"],
        regions=regions, exchange=exchange, source=file, raw=doc,
        compute={**DEFAULT_COMPUTE, **(doc.get("compute") or {})},
    )


def load_spec(ref: str | Path, relative_to: Path | None = None, referrer: str = "",
              field: str = "spec") -> Spec:
    """Load a spec by shipped name or path, with `extends` resolved and every field checked.

    `referrer` is the file that names the spec (relative paths start from `relative_to`),
    so an unknown name is reported against that file and `field`."""
    path = _locate(str(ref), relative_to, referrer, field)
    doc = _resolve(path, ())
    return spec_from_dict(doc, str(path))


def diff_specs(a: Spec, b: Spec) -> list[tuple[str, Any, Any]]:
    """Fields (dotted paths) whose resolved values differ between two specs."""
    out: list[tuple[str, Any, Any]] = []

    def walk(x: Any, y: Any, path: str) -> None:
        if isinstance(x, dict) and isinstance(y, dict):
            for key in sorted(set(x) | set(y), key=str):
                walk(x.get(key), y.get(key), f"{path}.{key}" if path else str(key))
        elif x != y:
            out.append((path, x, y))

    walk(a.raw or {}, b.raw or {}, "")
    return out
