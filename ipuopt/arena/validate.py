"""Independent placement validator: every rule of the arena model, rechecked from offsets."""

from __future__ import annotations

from dataclasses import dataclass

from ipuopt.arena.problem import Arena


@dataclass(frozen=True)
class PlacementViolation:
    rule: str
    buffers: tuple[str, ...]
    detail: str

    def __str__(self) -> str:
        return f"{self.rule}: {', '.join(self.buffers)}: {self.detail}"

    def to_dict(self) -> dict:
        return {"rule": self.rule, "buffers": list(self.buffers), "detail": self.detail}


@dataclass
class PlacementReport:
    violations: list[PlacementViolation]
    peak: int
    conflicts: int

    @property
    def ok(self) -> bool:
        return not self.violations


def _elements(off: int, size: int, eb: int) -> tuple[int, int]:
    return off // eb, (off + size - 1) // eb


def _together(a, b) -> bool:
    return a.first < b.end and b.first < a.end


def validate_placement(arena: Arena, offsets: dict[str, int]) -> PlacementReport:
    out: list[PlacementViolation] = []
    eb = arena.element_bytes
    by_id = {b.id: b for b in arena.buffers}
    for bid in offsets:
        if bid not in by_id:
            out.append(PlacementViolation("unknown-buffer", (bid,), "not in the arena"))
    # an alias shares its owner's storage: follow alias_of to the root
    def root(bid: str) -> str:
        seen = set()
        while by_id[bid].alias_of is not None and bid not in seen:
            seen.add(bid)
            bid = by_id[bid].alias_of  # type: ignore[assignment]
        return bid

    placed = []
    for b in arena.buffers:
        if b.id not in offsets:
            out.append(PlacementViolation("missing", (b.id,), "no offset"))
            continue
        off = offsets[b.id]
        placed.append(b)
        if off < 0 or off + b.size > arena.capacity:
            out.append(PlacementViolation("capacity", (b.id,),
                                          f"[{off}, {off + b.size}) outside [0, {arena.capacity})"))
        if off % b.align:
            out.append(PlacementViolation("align", (b.id,), f"{off} not a multiple of {b.align}"))
        if b.offset is not None and off != b.offset:
            out.append(PlacementViolation("fixed", (b.id,), f"must be at {b.offset}, is at {off}"))
        if b.alias_of is not None and b.alias_of in offsets and off != offsets[b.alias_of]:
            out.append(PlacementViolation("alias", (b.id, b.alias_of), "an alias has its owner's offset"))
    placed.sort(key=lambda b: b.first)
    conflicts = 0
    weights: dict[frozenset, int] = {}
    for c in arena.conflicts:
        key = frozenset((c.a, c.b))
        weights[key] = weights.get(key, 0) + c.weight
    distinct = {(b.id, d) for b in arena.buffers for d in b.distinct_elements_from}
    active: list = []
    for b in placed:
        active = [a for a in active if a.end > b.first]
        ob = offsets[b.id]
        for a in active:
            oa = offsets[a.id]
            if root(a.id) != root(b.id) and oa < ob + b.size and ob < oa + a.size:
                out.append(PlacementViolation("overlap", (a.id, b.id),
                                              f"live together and [{oa}, {oa + a.size}) meets "
                                              f"[{ob}, {ob + b.size})"))
        active.append(b)
    for a_id, b_id in distinct:
        if a_id in offsets and b_id in offsets:
            ea = _elements(offsets[a_id], by_id[a_id].size, eb)
            eb_ = _elements(offsets[b_id], by_id[b_id].size, eb)
            if ea[0] <= eb_[1] and eb_[0] <= ea[1]:
                out.append(PlacementViolation("distinct-elements", (a_id, b_id),
                                              f"elements {ea} and {eb_} share an element"))
    for key, w in weights.items():
        ids = sorted(key)
        a_id, b_id = (ids[0], ids[0]) if len(ids) == 1 else ids
        if a_id not in offsets or b_id not in offsets:
            continue
        a, b = by_id[a_id], by_id[b_id]
        ea = _elements(offsets[a_id], a.size, eb)
        eb_ = _elements(offsets[b_id], b.size, eb)
        if _together(a, b) and ea[0] <= eb_[1] and eb_[0] <= ea[1]:
            conflicts += w
    peak = max((offsets[b.id] + b.size for b in placed), default=0)
    return PlacementReport(out, peak, conflicts)
