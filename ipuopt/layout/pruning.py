"""Pruning: which candidates can be part of a plan within a limit (own cycles, input-move
floors, every other group's least), the most promising ones for the reference plan, and
dominance among candidates alike on every edge."""

from __future__ import annotations

import math

from ipuopt.layout.candidates import Cand, Catalogue
from ipuopt.workloads.workload import Operator


def groups_of(cat: Catalogue) -> dict[str, list[Operator]]:
    head: dict[str, str] = {}
    groups: dict[str, list[Operator]] = {}
    for op in cat.ops:
        src = cat.producer.get(op.inputs[0].tensor)
        h = head[src.name] if op.kind == "elementwise" and src is not None else op.name
        head[op.name] = h
        groups.setdefault(h, []).append(op)
    return groups

def group_floor(members: list[Operator], cands: dict[str, list[Cand]]) -> dict[int, int]:
    """Per candidate index of the group's head: its floor plus its followers' cycles."""
    first, *rest = members
    follow = [{c.doc["id"]: c.doc["compute"] for c in cands[m.name]} for m in rest]
    out = {}
    for i, c in enumerate(cands[first.name]):
        extra = [f.get(c.doc["output"]) for f in follow]
        if None not in extra:
            out[i] = c.floor + sum(extra)  # type: ignore[arg-type]
    return out

def floors_of(cat: Catalogue, cands: dict[str, list[Cand]]):
    """Groups, each head candidate's group floor, each group's least and their sum."""
    groups = groups_of(cat)
    floors = {h: group_floor(m, cands) for h, m in groups.items()}
    least = {h: min(f.values(), default=math.inf) for h, f in floors.items()}
    return groups, floors, least, sum(least.values())

def prune(cat: Catalogue, limit: float, cands: dict[str, list[Cand]]) -> dict[str, list[Cand]]:
    """Candidates that can be part of a plan of at most `limit` cycles."""
    groups, floors, least, total = floors_of(cat, cands)
    out: dict[str, list[Cand]] = {}
    for h, members in groups.items():
        rest = total - least[h]
        keep = [cands[h][i] for i, f in floors[h].items() if f + rest <= limit]
        out[h] = keep
        labels = {c.doc["output"] for c in keep}
        for m in members[1:]:
            out[m.name] = [c for c in cands[m.name] if c.doc["id"] in labels]
    return out

def top(cat: Catalogue, n: int) -> dict[str, list[Cand]]:
    """The `n` most promising candidates of every group (by floor), for the reference."""
    out: dict[str, list[Cand]] = {}
    for h, members in groups_of(cat).items():
        floors = group_floor(members, cat.cands)
        best = sorted(floors, key=lambda i: (floors[i], i))[:n]
        out[h] = [cat.cands[h][i] for i in best]
        labels = {c.doc["output"] for c in out[h]}
        for m in members[1:]:
            out[m.name] = [c for c in cat.cands[m.name] if c.doc["id"] in labels]
    return out


def undominated(cands: list[Cand]) -> list[Cand]:
    """Drop a candidate when another alike on every edge is at least as good in cycles,
    memory and held bytes (of equals, the first stays)."""
    by_key: dict[tuple, list[int]] = {}
    for i, c in enumerate(cands):
        by_key.setdefault(c.key, []).append(i)
    out = []
    for i, c in enumerate(cands):
        if not any(_covers(cands[j].doc, c.doc) and (j < i or not _covers(c.doc, cands[j].doc))
                   for j in by_key[c.key] if j != i):
            out.append(c)
    return out


def _covers(a: dict, b: dict) -> bool:
    """a is at least as good as b in cycles and in every region's memory and held bytes."""
    return (a["compute"] + a["exchange"] <= b["compute"] + b["exchange"]
            and all(a[f].get(r, 0) <= b[f].get(r, 0) for f in ("memory", "holds")
                    for r in set(a[f]) | set(b[f])))
