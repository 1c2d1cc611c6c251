"""JSON Schemas (draft 2020-12) of every file ipuopt reads or writes, so that a compiler written in
another language can check its files before handing them over. They describe the document after
YAML/JSON parsing and say what the loaders check field by field (types, ranges, unknown keys);
what needs the whole file (unique ids, known references, fitting the spec) stays the loaders'."""

from __future__ import annotations

import copy
from typing import Any

from ipuopt.errors import InputError
from ipuopt.limits import MAX_BYTES, MAX_CYCLES, MAX_STEPS, MAX_TILES
from ipuopt.result import Status

DIALECT = "https://json-schema.org/draft/2020-12/schema"
# An integer may also be written as a string Python's int(s, 0) reads: "0x80000", "1_024".
_INT_TEXT = r"^\s*[+-]?(0[xX](_?[0-9a-fA-F])+|0[oO](_?[0-7])+|0[bB](_?[01])+|0(_?0)*|[1-9](_?[0-9])*)\s*$"
_NAT_TEXT = _INT_TEXT.replace("[+-]?", r"\+?")


def _obj(props: dict[str, Any], required: tuple[str, ...] = (), extra: bool = False, **more: Any) -> dict:
    """An object with these properties; unknown keys refused unless `extra`."""
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = list(required)
    if not extra:
        out["additionalProperties"] = False
    return {**out, **more}


def _int(lo: int | None = None, hi: int | None = None, text: bool = False) -> dict:
    """An integer in [lo, hi]; with `text`, also written as a string such as "0x80000" (the range is
    then checked by the loader only)."""
    num: dict[str, Any] = {"type": "integer"}
    if lo is not None:
        num["minimum"] = lo
    if hi is not None:
        num["maximum"] = hi
    if not text:
        return num
    return {"anyOf": [num, {"type": "string", "pattern": _NAT_TEXT if lo is not None and lo >= 0
                            else _INT_TEXT}]}


def _num(positive: bool = False) -> dict:
    return {"type": "number", "exclusiveMinimum": 0} if positive else {"type": "number", "minimum": 0}


_STR = {"type": "string"}
_ID = {"anyOf": [{"type": "string", "minLength": 1}, {"type": "integer"}]}
_NAME_MAP = {"type": "object", "additionalProperties": _STR}


# ---- inputs -------------------------------------------------------------------------------------

def _spec() -> dict:
    region = _obj({"name": _STR, "start": _int(0, MAX_BYTES), "size": _int(1, MAX_BYTES),
                   "element_bytes": _int(1, MAX_BYTES)}, ("name", "start", "size", "element_bytes"))
    latency = {"anyOf": [_int(0, MAX_BYTES),
                         _obj({"base": _int(0, MAX_BYTES), "per_tile": _num()}, ("base",))]}
    pair = {"type": "array", "prefixItems": [_int(), _int()], "minItems": 2, "maxItems": 2}
    ex = {"word_bytes": _int(1, MAX_BYTES), "ordinary_words_per_cycle": _num(True),
          "paired_words_per_cycle": _num(True), "paired_alignment": _int(1, MAX_BYTES),
          "tx_overhead": _int(0, MAX_BYTES), "route_latency": latency, "rx_lead": _int(0, MAX_BYTES),
          "format_switch": _int(0, MAX_BYTES), "write_hazard": _int(0, MAX_BYTES),
          "max_fanout": _int(1, MAX_BYTES), "sync_cycles": _int(0, MAX_BYTES)}
    full = _obj({
        "name": _STR, "description": _STR, "extends": _STR, "clock_hz": _num(True),
        "tiles": _int(1, MAX_TILES),
        "pairs": {"anyOf": [{"enum": ["adjacent", "none", None]}, {"type": "array", "items": pair}]},
        "memory": _obj({"base": _int(0, MAX_BYTES), "size": _int(1, MAX_BYTES),
                        "regions": {"type": "array", "items": region, "minItems": 1}},
                       ("base", "size", "regions")),
        "compute": _obj({k: _num(True) for k in ("f16_macs_per_cycle", "f32_macs_per_cycle",
                                                 "elementwise_bytes_per_cycle",
                                                 "partial_add_bytes_per_cycle")}),
        "exchange": _obj(ex, tuple(k for k in ex if k != "sync_cycles")),
    }, ("name", "clock_hz", "tiles", "pairs", "memory", "exchange"))
    partial = _without_required(full)  # a what-if: the fields it changes, merged over `extends`
    return {**_head("spec", "A hardware spec; with `extends`, only the fields that differ."),
            "if": {"required": ["extends"]}, "then": partial, "else": full}


def _without_required(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_required(v) for k, v in schema.items() if k != "required"}
    if isinstance(schema, list):
        return [_without_required(v) for v in schema]
    return schema


def _phase() -> dict:
    tile = _int(0, MAX_TILES, text=True)
    ids = {"anyOf": [_ID, {"type": "array", "items": _ID}]}
    transfer = _obj({
        "id": _ID, "src": tile, "dst": {"anyOf": [tile, {"type": "array", "items": tile, "minItems": 1}]},
        "words": _int(1, MAX_BYTES), "src_addr": {"anyOf": [{"type": "null"}, _int(0, MAX_BYTES, text=True)]},
        "dst_addr": {"anyOf": [{"type": "null"}, _int(0, MAX_BYTES, text=True)]},
        "paired": {"enum": ["allowed", "never", "required"]}, "after": ids,
    }, ("id", "src", "dst", "words"))
    return {**_head("phase", "One exchange phase: transfers to schedule on a spec."),
            **_obj({"spec": _STR, "name": _STR, "description": _STR,
                    "transfers": {"type": ["array", "null"], "items": transfer}}, ("spec",))}


def _arena() -> dict:
    size = _int(1, MAX_BYTES, text=True)
    step = _int(0, MAX_STEPS, text=True)
    buffer = _obj({"id": _ID, "size": size, "live": {"type": "array", "prefixItems": [step, step],
                                                      "minItems": 2, "maxItems": 2},
                   "align": size, "offset": _int(0, MAX_BYTES, text=True),
                   "alias_of": {"anyOf": [_ID, {"type": "null"}]},
                   "distinct_elements_from": {"type": ["array", "null"], "items": _ID}},
                  ("id", "size", "live"))
    conflict = _obj({"a": _ID, "b": _ID, "weight": _int(0, None, text=True)}, ("a", "b", "weight"),
                    extra=True)
    return {**_head("arena", "Buffers of one tile's memory region to place."),
            **_obj({"spec": {"type": "string", "minLength": 1}, "region": _STR, "capacity": size,
                    "name": _STR, "buffers": {"type": ["array", "null"], "items": buffer},
                    "conflicts": {"type": ["array", "null"], "items": conflict}}, ("spec", "region"))}


def _workload() -> dict:
    view = {"anyOf": [_STR, _obj({"tensor": _STR, "heads": _int(0), "transpose": {"type": "boolean"},
                                      "prepare": {"type": "boolean"}},
                                 ("tensor",))]}
    tensor = _obj({"shape": {"type": "array", "items": _int(1), "minItems": 2, "maxItems": 3},
                   "input": {"enum": [True, False, "host-split", "host-replicated"]},
                   "weight": {"type": "boolean"}}, ("shape",))
    common = {"name": _STR, "kind": _STR, "out": view, "batch": _int(1)}
    gemm = _obj({**common, "kind": {"const": "gemm"}, "a": view, "b": view}, ("kind", "a", "b", "out"))
    elementwise = _obj({**common, "kind": {"const": "elementwise"}, "in": view}, ("kind", "in", "out"))
    return {**_head("workload", "A model's tensors and operators, in program order."),
            **_obj({"name": _STR, "description": _STR, "dtype": {"enum": ["f16", "f32"]},
                    "tensors": {"type": "object", "additionalProperties": tensor},
                    "operators": {"type": "array", "items": {"oneOf": [gemm, elementwise]}}},
                   ("tensors", "operators"))}


def _layout_problem() -> dict:
    cycles = _int(0, 1 << 50, text=True)
    nbytes = {"type": "object", "additionalProperties": _int(0, MAX_BYTES, text=True)}
    label = {"anyOf": [_STR, {"type": "integer"}]}
    candidate = _obj({"id": label, "compute": cycles, "exchange": cycles, "memory": nbytes,
                      "needs": {"type": ["object", "null"], "additionalProperties": label}, "output": label,
                      "holds": nbytes, "why": {}}, ("id", "output"))
    operator = _obj({"inputs": {"type": ["array", "null"], "items": _STR, "uniqueItems": True},
                     "output": _STR, "candidates": {"type": "array", "items": candidate, "minItems": 1},
                     "why": {}},
                    ("output", "candidates"))
    tensor = {"oneOf": [_obj({"layout": label}, ("layout",)), _obj({"producer": _STR}, ("producer",))]}
    row = _obj({"tensor": _STR, "from": label, "to": label, "cycles": cycles, "why": {}},
               ("tensor", "from", "to", "cycles"))
    return {**_head("layout-problem", "Operators' candidate implementations and the cost of moving "
                                      "tensors between their layouts."),
            **_obj({"name": _STR, "description": _STR, "capacity": {**nbytes, "minProperties": 1},
                    "order": {"type": "array", "items": _STR, "uniqueItems": True},
                    "tensors": {"type": "object", "additionalProperties": tensor},
                    "operators": {"type": "object", "additionalProperties": operator, "minProperties": 1},
                    "redistribution": {"type": ["array", "null"], "items": row},
                    "workload": _STR, "workload_file": _STR, "spec": _STR, "kept": {"type": "object"}},
                   ("capacity", "order", "tensors", "operators"))}


def _sweep() -> dict:
    entry = _obj({"solver": _STR, "profile": _STR, "time_limit": _num(), "workers": _int(1),
                  "seed": _int(0), "params": {"type": ["object", "null"]}},
                 oneOf=[{"required": ["solver"], "not": {"required": ["profile"]}},
                        {"required": ["profile"], "not": {"required": ["solver"]}}])
    return {**_head("sweep", "Phases x specs x solvers, solved as cells."),
            **_obj({"name": _STR, "description": _STR,
                    "phases": {"anyOf": [_STR, {"type": "array", "items": _STR, "minItems": 1}]},
                    "specs": {"type": ["array", "null"], "items": _STR},
                    "solvers": {"type": "array", "items": entry, "minItems": 1}}, ("phases", "solvers"))}


def _profile() -> dict:
    return {**_head("profile", "A solver profile: a backend and its parameters (`--profile FILE`)."),
            **_obj({"description": _STR, "backend": _STR, "params": {"type": ["object", "null"]}},
                   ("backend",))}


# ---- outputs: the Result document every solve writes, with its solution's keys -----------------

_BOUND = _obj({"name": _STR, "value": {"type": ["integer", "null"]}, "where": _STR})
_NUMBER_OR_NULL = {"type": ["number", "null"]}


def _result(kind: str, about: str, names: dict[str, Any], solution: dict[str, Any],
            required: tuple[str, ...]) -> dict:
    """A Result document: the problem's names, the answer's figures, then the solution's keys."""
    props = {**names, "solver": _STR, "method": _STR, "status": {"enum": [str(s) for s in Status]},
             "value": {"type": ["integer", "null"]}, "lower_bound": {"type": ["integer", "null"]},
             "gap": _NUMBER_OR_NULL, "runtime_s": _num(), "interrupted": {"type": "boolean"},
             "reason": _STR, "bounds": {"type": "array", "items": _BOUND}, "extras": {"type": "object"},
             **solution}
    return {**_head(kind, about), **_obj(props, ("status", *required))}


def _schedule() -> dict:
    entry = _obj({"id": _ID, "start": _int(-MAX_CYCLES, MAX_CYCLES),
                  "width": {"enum": ["ordinary", "paired"]}}, ("id", "start"), extra=True)
    return _result("schedule", "A phase's schedule (`solve --out`); `validate` reads only transfers' id, "
                               "start and width.",
                   {"phase": _STR, "spec": _STR, "horizon": {"type": ["integer", "null"]}},
                   {"transfers": {"type": "array", "items": entry}}, ("transfers",))


def _placement() -> dict:
    return _result("placement", "An arena's placement (`place --out`): offsets from the region start.",
                   {"arena": _STR, "spec": _STR, "region": _STR,
                    "objective": {"enum": ["fit", "peak", "conflicts"]},
                    "peak": {"type": ["integer", "null"]}},
                   {"offsets": {"type": "object", "additionalProperties": _int(0)}}, ("offsets",))


def _plan() -> dict:
    choice = {"type": ["object", "null"], "additionalProperties": _STR}
    return _result("plan", "A layout plan (`layout --out`): one candidate per operator.",
                   {"workload": _STR, "spec": _STR, "cycles": {"type": ["integer", "null"]}},
                   {"choice": choice, "beam": {"type": ["object", "null"]}, "plans": {"type": "array"},
                    "kept": {"type": "object"}, "rerank": {"type": "array"}}, ("choice",))


def _run() -> dict:
    count = _int(0)
    boundary = _obj({
        "phase": _STR, "transfers": count, "compute": {"type": "array", "items": _STR}, "compute_max": count,
        "compute_min": count, "first_arrival": count, "last_arrival": count,
        "last_tile": {"type": ["integer", "null"]}, "spread": count, "sync": count, "exchange_start": count,
        "horizon": count, "end": count,
        "after_last_arrival": count, "status": _STR, "lower_bound": {"type": ["integer", "null"]},
        "gap_cycles": {"type": ["integer", "null"]}, "solve_s": _num(), "time_limit_s": _NUMBER_OR_NULL,
    }, ("phase", "transfers", "compute_max", "compute_min", "first_arrival", "last_arrival", "last_tile",
        "spread", "exchange_start", "horizon", "end", "lower_bound"))
    return {**_head("run", "A program run (`run --out`, `optimize --out`): each exchange boundary in order."),
            **_obj({"workload": _STR, "spec": _STR, "solver": _STR, "layouts": _NAME_MAP,
                    "total_cycles": count, "lower_bound": {"type": ["integer", "null"]},
                    "gap": _NUMBER_OR_NULL,
                    "exchange_cycles": count, "sync_cycles": count, "compute_cycles": count,
                    "arrival_spread_cycles": count, "final_compute": count,
                    "boundaries": {"type": "array", "items": boundary}, "interrupted": {"type": "boolean"},
                    "program_bound": {"type": ["integer", "null"]}, "program_gap": _NUMBER_OR_NULL,
                    "optimize": {"type": "object"}},
                   ("workload", "spec", "layouts", "total_cycles", "compute_cycles", "exchange_cycles",
                    "sync_cycles", "final_compute", "boundaries"))}


def _head(kind: str, about: str) -> dict:
    return {"$schema": DIALECT, "$id": f"https://ipuopt.dev/schemas/{kind}.schema.json",
            "title": f"ipuopt {kind}", "description": about}


_BUILDERS = {"phase": _phase, "spec": _spec, "arena": _arena, "layout-problem": _layout_problem,
             "workload": _workload, "sweep": _sweep, "profile": _profile, "schedule": _schedule,
             "placement": _placement, "plan": _plan, "run": _run}
KINDS = tuple(_BUILDERS)


def schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of one file kind (a fresh copy: callers may change it)."""
    if kind not in _BUILDERS:
        raise InputError.one("", "kind", f"unknown file kind {kind!r} (known: {', '.join(KINDS)})")
    return copy.deepcopy(_BUILDERS[kind]())
