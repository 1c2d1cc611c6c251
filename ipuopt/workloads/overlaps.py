"""Which boxes of one set overlap which of another, without the full table of pairs.

Layouts cut tensors on a grid, so along each dimension the boxes of a set take few distinct
ranges: pairs are drawn from the dimension whose ranges rule out the most pairs (counted on
the distinct ranges alone), then checked on every dimension. A phase of a few thousand
pieces and needs compares tens of thousands of pairs instead of millions."""

from __future__ import annotations

import numpy as np

DENSE = 1 << 14  # pairs up to which the full table is the quicker way (fewer numpy calls)


def overlapping(alo: np.ndarray, ahi: np.ndarray, blo: np.ndarray, bhi: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) of every box i of a and j of b ((n, k) arrays of half-open [lo, hi)) whose
    interiors overlap, grouped by i (in no particular order within a group)."""
    empty = np.zeros(0, dtype=np.int64)
    if not len(alo) or not len(blo):
        return empty, empty
    if len(alo) * len(blo) <= DENSE:
        return np.nonzero(np.all(np.maximum(alo[:, None], blo[None]) < np.minimum(ahi[:, None], bhi[None]),
                                 axis=2))
    dims = []  # per dimension: which distinct range of a meets which of b, each box's range
    for d in range(alo.shape[1]):
        a_ranges, a_of = _distinct(alo[:, d], ahi[:, d])
        b_ranges, b_of = _distinct(blo[:, d], bhi[:, d])
        hit = np.maximum(a_ranges[:, None, 0], b_ranges[None, :, 0]) < np.minimum(a_ranges[:, None, 1],
                                                                                b_ranges[None, :, 1])
        b_count = np.bincount(b_of, minlength=len(b_ranges))
        dims.append((int((hit @ b_count)[a_of].sum()), hit, a_of, b_of, b_count))
    best = min(range(len(dims)), key=lambda d: dims[d][0])
    _, hit, a_of, b_of, b_count = dims[best]
    b_sorted = np.argsort(b_of, kind="stable")  # b's boxes grouped by their range
    b_first = np.cumsum(b_count) - b_count
    ra, rb = np.nonzero(hit)  # (a range, b range) pairs that overlap, grouped by a range
    per_a = np.bincount(ra, minlength=hit.shape[0])
    a_first = np.cumsum(per_a) - per_a
    i = np.repeat(np.arange(len(alo)), per_a[a_of])
    rj = rb[_ranges(a_first[a_of], per_a[a_of])]  # b ranges each a box meets
    i = np.repeat(i, b_count[rj])
    j = b_sorted[_ranges(b_first[rj], b_count[rj])]
    for d, (_, hit, a_of, b_of, _) in enumerate(dims):  # the other dimensions, on their ranges
        if d != best and not hit.all():
            keep = hit[a_of[i], b_of[j]]
            i, j = i[keep], j[keep]
    return i, j


def _distinct(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct [lo, hi) ranges ((r, 2) array) and each box's index among them."""
    span = int(hi.max()) + 1
    keys, of = np.unique(lo.astype(np.int64) * span + hi, return_inverse=True)
    return np.stack([keys // span, keys % span], axis=1), of.ravel()


def _ranges(first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """first[0] .. first[0] + count[0] - 1, then the same for every next pair, concatenated."""
    total = int(count.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    shift = np.repeat(first - (np.cumsum(count) - count), count)
    return shift + np.arange(total, dtype=np.int64)
