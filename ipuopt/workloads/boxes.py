"""Boxes of tensor elements ([batch, row, col] half-open ranges) and operand views."""

from __future__ import annotations

from dataclasses import dataclass

Range = tuple[int, int]
Box = tuple[Range, Range, Range]


def split(n: int, parts: int) -> list[Range]:
    """n items in `parts` contiguous ranges whose sizes differ by at most one."""
    q, r = divmod(n, parts)
    out, lo = [], 0
    for i in range(parts):
        hi = lo + q + (1 if i < r else 0)
        out.append((lo, hi))
        lo = hi
    return out


def nth(n: int, parts: int, i: int) -> Range:
    """The `i`-th range of `split(n, parts)`."""
    q, r = divmod(n, parts)
    lo = i * q + min(i, r)
    return lo, lo + q + (1 if i < r else 0)


def widths(n: int, parts: int) -> set[int]:
    """The sizes of `split(n, parts)`'s ranges (two at most)."""
    q, r = divmod(n, parts)
    return ({q + 1} if r else set()) | ({q} if r < parts else set())


def volume(box: Box) -> int:
    v = 1
    for lo, hi in box:
        v *= max(0, hi - lo)
    return v


def intersect(a: Box, b: Box) -> Box | None:
    out = tuple((max(x[0], y[0]), min(x[1], y[1])) for x, y in zip(a, b, strict=True))
    return out if all(lo < hi for lo, hi in out) else None  # type: ignore[return-value]


def linear_index(outer: Box, point):
    """Row-major index of `point` (integers, or numpy arrays of them) inside the buffer that
    stores `outer`."""
    (b0, _), (r0, r1), (c0, c1) = outer
    b, r, c = point
    return ((b - b0) * (r1 - r0) + (r - r0)) * (c1 - c0) + (c - c0)


@dataclass(frozen=True)
class View:
    """How an operator sees a stored tensor: per-head split and/or transpose.

    Stored tensors are 3-D ([1, rows, cols] for matrices). `heads` views a
    [1, T, H*D] tensor as [H, T, D]; `transpose` swaps the last two view dims. `prepare`
    (a GEMM's operand): moved first into its home, one tile per block of the GEMM's grid, in a
    phase of its own, then multicast from there as weights are (the reference compiler's
    Q/K/V preparation before its batched attention GEMMs).
    """

    tensor: str
    heads: int = 0
    transpose: bool = False
    prepare: bool = False

    def shape(self, stored: tuple[int, int, int]) -> tuple[int, int, int]:
        b, r, c = stored
        if self.heads:
            b, r, c = self.heads, r, c // self.heads
        return (b, c, r) if self.transpose else (b, r, c)

    def to_stored(self, box: Box, stored: tuple[int, int, int]) -> list[Box]:
        """The stored boxes that hold a view box (several when it spans heads partially)."""
        bb, rr, cc = box
        if self.transpose:
            rr, cc = cc, rr
        if not self.heads:
            return [(bb, rr, cc)]
        d = stored[2] // self.heads
        if cc == (0, d):
            return [((0, 1), rr, (bb[0] * d, bb[1] * d))]
        return [((0, 1), rr, (h * d + cc[0], h * d + cc[1])) for h in range(*bb)]
