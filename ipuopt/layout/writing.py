"""The layout problem's document (the problem file's content) from kept candidates and rows."""

from __future__ import annotations

from typing import Any

from ipuopt.layout.candidates import INPUT_LAYOUT, Cand, Catalogue


def document(cat: Catalogue, cands: dict[str, list[Cand]], rows: list[dict[str, Any]]) -> dict[str, Any]:
    wl = cat.wl
    tensors: dict[str, Any] = {}
    for op in cat.ops:
        for _, t in cat.inputs(op):
            if t not in cat.producer:
                tensors[t] = {"layout": INPUT_LAYOUT}
        tensors[op.out.tensor] = {"producer": op.name}
    capacity = {r.name: r.size for r in cat.spec.regions}
    return {"name": f"{wl.name}-{cat.spec.name}", "workload": wl.name, "spec": cat.spec.name,
            "capacity": capacity, "order": [op.name for op in cat.ops], "tensors": tensors,
            "operators": {op.name: {"inputs": [t for _, t in cat.inputs(op)] if op.kind == "gemm"
                                    else [op.inputs[0].tensor],
                                    "output": op.out.tensor,
                                    "candidates": [c.doc for c in cands[op.name]]}
                          for op in cat.ops},
            "redistribution": rows}
