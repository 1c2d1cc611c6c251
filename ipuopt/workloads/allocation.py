"""SPMD allocation: one first-fit offset per buffer serves every tile of a region."""

from __future__ import annotations

from ipuopt.errors import InputError
from ipuopt.spec import Spec


class SpmdAllocator:
    """First-fit SPMD allocation per region: one offset serves every tile."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.regions = {r.name: r for r in spec.regions}
        self.live: dict[str, list[tuple[int, int, str]]] = {r: [] for r in self.regions}
        self.log: list[dict] = []

    def alloc(self, region: str, size: int, tag: str, step: int) -> int:
        # rounded up, plus one alignment unit of slack for word rounding
        size = self.spec.aligned(max(size, 1)) + self.spec.exchange.paired_alignment
        reg = self.regions[region]
        at = 0
        for off, sz, _ in sorted(self.live[region]):
            if at + size <= off:
                break
            at = max(at, off + sz)
        if at + size > reg.size:
            used = sum(sz for _, sz, _ in self.live[region])
            raise InputError.one("", "layout", f"buffer {tag} ({size} B) does not fit region "
                                               f"{region} ({reg.size} B, {used} B live)")
        self.live[region].append((at, size, tag))
        self.log.append({"id": tag, "region": region, "offset": at, "size": size,
                         "first": step, "end": None})
        return reg.start + at

    def free(self, tag: str, step: int) -> None:
        for region, items in self.live.items():
            self.live[region] = [x for x in items if x[2] != tag]
        for entry in self.log:
            if entry["id"] == tag and entry["end"] is None:
                entry["end"] = step


