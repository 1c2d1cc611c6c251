"""Greedy placers: best-fit (warm start and fallback) and the 4 KiB shift baseline."""

from __future__ import annotations

from ipuopt.arena.problem import Arena
from ipuopt.arena.validate import validate_placement

ORDERS = ("size", "area")
SHIFT_STEP = 4096


def best_fit(arena: Arena, order: str = "size") -> dict[str, int]:
    """Each buffer (largest first, or largest size x lifetime first with order='area') goes
    into the smallest gap that holds it among the buffers already placed that are live at the
    same time; above them all when no gap fits. Aliases take their owner's offset; fixed
    offsets are kept; distinct_elements_from partners' elements count as occupied."""
    roots = arena.roots()
    by_id = {b.id: b for b in arena.buffers}
    eb = arena.element_bytes
    span = arena.storage()  # a root reserves its storage while any alias is live
    distinct: dict[str, set[str]] = {}
    for b in arena.buffers:
        for d in b.distinct_elements_from:
            distinct.setdefault(roots[b.id], set()).add(roots[d])
            distinct.setdefault(roots[d], set()).add(roots[b.id])
    key = {"size": lambda r: (-span[r][0], -(span[r][2] - span[r][1]), r),
           "area": lambda r: (-span[r][0] * (span[r][2] - span[r][1]), -span[r][0], r)}[order]
    todo = sorted(span, key=lambda r: (by_id[r].offset is None, key(r)))
    placed: dict[str, int] = {}
    for r in todo:
        size, first, end = span[r]
        b = by_id[r]
        if b.offset is not None:
            placed[r] = b.offset
            continue
        busy = []
        for o, off in placed.items():
            so, fo, eo = span[o]
            if fo < end and first < eo:
                busy.append((off, off + so))
            if o in distinct.get(r, ()):
                busy.append(((off // eb) * eb, ((off + so - 1) // eb + 1) * eb))
        busy.sort()
        best, at = None, 0
        for lo, hi in busy:
            at += -at % b.align
            gap = lo - at
            if gap >= size and (best is None or gap < best[0]):
                best = (gap, at)
            at = max(at, hi)
        at += -at % b.align
        if at + size <= arena.capacity and (best is None or arena.capacity - at < best[0]):
            best = (arena.capacity - at, at)
        placed[r] = best[1] if best is not None else at
    return {b.id: placed[roots[b.id]] for b in arena.buffers}


def best_greedy(arena: Arena) -> tuple[dict[str, int], str]:
    """The best-fit placement with the lower peak over both orders."""
    results = []
    for order in ORDERS:
        offsets = best_fit(arena, order)
        results.append((validate_placement(arena, offsets).peak, order, offsets))
    peak, order, offsets = min(results, key=lambda x: (x[0], x[1]))
    return offsets, order


def shift_baseline(arena: Arena, offsets: dict[str, int]) -> tuple[dict[str, int], int]:
    """Today's compiler baseline: move the whole arena by 0, 4 KiB, 8 KiB, ... within one
    memory element and keep the shift with the lowest conflict score that still fits."""
    peak = validate_placement(arena, offsets).peak
    best = None
    for shift in range(0, max(arena.element_bytes, 1), SHIFT_STEP):
        if peak + shift > arena.capacity:
            break
        moved = {k: (v if _fixed(arena, k) else v + shift) for k, v in offsets.items()}
        report = validate_placement(arena, moved)
        if report.ok and (best is None or report.conflicts < best[1]):
            best = (moved, report.conflicts)
    if best is None:
        return offsets, validate_placement(arena, offsets).conflicts
    return best


def _fixed(arena: Arena, bid: str) -> bool:
    return arena.buffers[arena.index[bid]].offset is not None
