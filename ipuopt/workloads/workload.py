"""A workload: tensors and a chain of operators (GEMMs and elementwise ops), from YAML."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipuopt.data_files import bundled_hint, bundled_path
from ipuopt.errors import InputError, Problem, unknown_keys
from ipuopt.io import read_document
from ipuopt.workloads.boxes import View

DTYPE_BYTES = {"f16": 2, "f32": 4}


ARRIVALS = ("host-split", "host-replicated")  # how a graph input reaches the chip (`input:`)
_KEYS = ("name", "description", "dtype", "tensors", "operators")
_TENSOR_KEYS = ("shape", "input", "weight")
_OP_KEYS = {"gemm": ("name", "kind", "a", "b", "out", "batch"),
            "elementwise": ("name", "kind", "in", "out", "batch")}


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, int, int]  # stored as [batch, rows, cols]; matrices have batch 1
    input: bool = False  # a graph input: the host writes it before the program
    weight: bool = False
    # host-replicated: the host writes each tile's block where the tile's operator reads it,
    # so reading it moves nothing on chip; else (host-split) it arrives split by rows over
    # the first tiles and is moved to where it is read
    replicated: bool = False


@dataclass(frozen=True)
class Operator:
    name: str
    kind: str  # gemm | elementwise
    inputs: tuple[View, ...]  # gemm: (a, b); elementwise: (in,)
    out: View
    batch: int = 1


@dataclass
class Workload:
    name: str
    dtype: str
    tensors: dict[str, Tensor]
    operators: list[Operator]
    source: str = ""
    consumers: dict[str, list[str]] = field(default_factory=dict)

    @property
    def elem_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    def gemm_dims(self, op: Operator) -> tuple[int, int, int, int]:
        """(batch, M, K, N) of a GEMM from its operand views."""
        a, b = op.inputs
        _, m, k = a.shape(self.tensors[a.tensor].shape)
        _, _, n = b.shape(self.tensors[b.tensor].shape)
        return op.batch, m, k, n


def _view(raw: Any, where: str, tensors: dict, file: str, problems: list[Problem]) -> View | None:
    if isinstance(raw, str):
        raw = {"tensor": raw}
    if not isinstance(raw, dict) or not isinstance(raw.get("tensor"), str) or raw["tensor"] not in tensors:
        problems.append(Problem(file, where, f"unknown tensor {raw!r}"))
        return None
    unknown = set(raw) - {"tensor", "heads", "transpose", "prepare"}
    if unknown:
        problems.append(Problem(file, f"{where}.{sorted(unknown)[0]}", "unknown key"))
    heads = raw.get("heads", 0)
    if not isinstance(heads, int) or isinstance(heads, bool) or heads < 0:
        problems.append(Problem(file, f"{where}.heads", f"must be an integer >= 0, got {heads!r}"))
        return None
    for key in ("transpose", "prepare"):
        if not isinstance(raw.get(key, False), bool):
            problems.append(Problem(file, f"{where}.{key}", "true or false"))
            return None
    if heads:
        shape = tensors[raw["tensor"]].shape
        if shape[0] != 1 or shape[2] % heads:
            problems.append(Problem(file, f"{where}.heads",
                                    f"{heads} heads do not divide the columns of {shape}"))
    return View(raw["tensor"], int(heads), bool(raw.get("transpose", False)), bool(raw.get("prepare", False)))


def workload_from_dict(doc: Any, file: str = "") -> Workload:
    if not isinstance(doc, dict):
        raise InputError.one(file, "", "a workload must be a mapping")
    problems = unknown_keys(doc, _KEYS, file)
    dtype = doc.get("dtype", "f16")
    if dtype not in DTYPE_BYTES:
        problems.append(Problem(file, "dtype", f"one of {', '.join(DTYPE_BYTES)}"))
    raw_tensors = doc.get("tensors") or {}
    if not isinstance(raw_tensors, dict):
        problems.append(Problem(file, "tensors", "must map tensor names to {shape, input, weight}"))
        raw_tensors = {}
    tensors: dict[str, Tensor] = {}
    for name, t in raw_tensors.items():
        shape = t.get("shape") if isinstance(t, dict) else None
        if not (isinstance(shape, list) and len(shape) in (2, 3)
                and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in shape)):
            problems.append(Problem(file, f"tensors.{name}.shape", "2 or 3 positive integers"))
            continue
        problems.extend(unknown_keys(t, _TENSOR_KEYS, file, f"tensors.{name}."))
        shape3 = tuple([1, *shape]) if len(shape) == 2 else tuple(shape)
        arrives = t.get("input", False)
        if arrives is True:
            arrives = "host-split"
        if arrives not in (False, None, *ARRIVALS):
            problems.append(Problem(file, f"tensors.{name}.input", f"true, {' or '.join(ARRIVALS)}, "
                                                                   f"got {arrives!r}"))
            continue
        if not isinstance(t.get("weight", False), bool):
            problems.append(Problem(file, f"tensors.{name}.weight", "true or false"))
            continue
        if arrives and t.get("weight"):
            problems.append(Problem(file, f"tensors.{name}", "a weight is not a graph input: give one"))
            continue
        tensors[name] = Tensor(name, shape3, bool(arrives), bool(t.get("weight")),
                               arrives == "host-replicated")
    raw_ops = doc.get("operators") or []
    if not isinstance(raw_ops, list):
        problems.append(Problem(file, "operators", "must list the operators in program order"))
        raw_ops = []
    ops: list[Operator] = []
    for i, o in enumerate(raw_ops):
        where = f"operators[{i}]"
        if not isinstance(o, dict):
            problems.append(Problem(file, where, "must be a mapping with name, kind and its tensors"))
            continue
        kind = o.get("kind")
        if kind not in _OP_KEYS:
            problems.append(Problem(file, f"{where}.kind", "gemm or elementwise"))
            continue
        problems.extend(unknown_keys(o, _OP_KEYS[kind], file, f"{where}."))
        batch = o.get("batch", 1)
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
            problems.append(Problem(file, f"{where}.batch", f"must be an integer >= 1, got {batch!r}"))
            continue
        if kind == "gemm":
            ins = (_view(o.get("a"), f"{where}.a", tensors, file, problems),
                   _view(o.get("b"), f"{where}.b", tensors, file, problems))
        else:
            ins = (_view(o.get("in"), f"{where}.in", tensors, file, problems),)
        out = _view(o.get("out"), f"{where}.out", tensors, file, problems)
        if None in ins or out is None:
            continue
        op = Operator(str(o.get("name", f"op{i}")), kind, ins, out, batch)  # type: ignore[arg-type]
        ops.append(op)
    wl = Workload(str(doc.get("name", "")), dtype, tensors, ops, file)
    for op in ops:
        if op.kind == "gemm":
            a, b = op.inputs
            sa = a.shape(tensors[a.tensor].shape)
            sb = b.shape(tensors[b.tensor].shape)
            so = op.out.shape(tensors[op.out.tensor].shape)
            if sa[2] != sb[1] or so != (op.batch, sa[1], sb[2]) or sa[0] != op.batch or sb[0] != op.batch:
                problems.append(Problem(file, f"operator {op.name}",
                                        f"shapes do not chain: a {sa} x b {sb} -> out {so}, "
                                        f"batch {op.batch}"))
        elif tensors[op.inputs[0].tensor].shape != tensors[op.out.tensor].shape:
            problems.append(Problem(file, f"operator {op.name}", "elementwise in and out differ in shape"))
        if op.out.prepare:
            problems.append(Problem(file, f"operator {op.name}", "prepare is said of an operand, not of out"))
        for v in op.inputs:
            wl.consumers.setdefault(v.tensor, []).append(op.name)
            if v.prepare and (op.kind != "gemm" or tensors[v.tensor].weight or tensors[v.tensor].replicated):
                problems.append(Problem(file, f"operator {op.name}", f"prepares {v.tensor}: only a GEMM's "
                                        "operand that is moved (not a weight, nor host-replicated) can be"))
            if tensors[v.tensor].replicated and op.kind != "gemm":
                problems.append(Problem(file, f"operator {op.name}", f"reads {v.tensor}, a host-replicated "
                                        "input: only a GEMM can (the host writes the blocks it reads)"))
    if problems:
        raise InputError(problems)
    return wl


def load_workload(ref: str | Path) -> Workload:
    """A workload by path or by name under models/."""
    path = bundled_path(ref, "models")
    hint = bundled_hint("models", "workloads")
    return workload_from_dict(read_document(path, hint), str(path))
