"""How a box of a tensor becomes transfers: whole, as contiguous runs, or cut at a grain.

A box moves from a source buffer to a destination buffer, each holding a (larger) box
row-major. The bytes of the box are contiguous in both only along the innermost
dimensions it spans completely in both; elsewhere a compiler emits one transfer per
contiguous run, each with its own addresses; cut at a grain, every fragment is short (256
bytes, 32 for packed linear moves, is what the reference compiler's cost estimator assumes,
not how its lowering cuts transfers).

`Grain`: `"box"` (one transfer per box, addressed at its first element: the coarse phases
ipuopt generated before fragments), `None` (contiguous runs, the default), or a positive
number of bytes, a multiple of the word (runs cut every that many bytes from their start).
"""

from __future__ import annotations

import math

import numpy as np

from ipuopt.errors import InputError
from ipuopt.spec import Spec
from ipuopt.workloads.boxes import Box, linear_index, volume

BOX = "box"
Grain = int | str | None


def parse_grain(value: str | int | None, spec: Spec, where: str = "--grain") -> Grain:
    """A grain from the command line or the API, refused unless the spec can honour it."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in (BOX, "run", "runs"):
        return BOX if text == BOX else None
    try:
        grain = int(text, 0)
    except ValueError:
        raise InputError.one("", where, f"{value!r} is not a number of bytes, 'box' or 'runs'") from None
    wb = spec.exchange.word_bytes
    if grain <= 0 or grain % wb:
        raise InputError.one("", where, f"{grain} is not a positive multiple of {spec.name}'s "
                                        f"word ({wb} bytes)")
    smallest = min(spec.regions, key=lambda r: r.size)
    if grain > smallest.size:
        raise InputError.one("", where, f"{grain} bytes is larger than region {smallest.name} "
                                        f"({smallest.size} bytes) of {spec.name}")
    return grain


def grain_name(grain: Grain) -> int | str:
    """How a grain is written in output (and read back by `parse_grain`)."""
    return "runs" if grain is None else grain


def fragments(box: Box, src_outer: Box, dst_outer: Box, elem: int, grain: Grain,
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source offsets, destination offsets, bytes) of the fragments that move `box`, the
    offsets in bytes from the start of the buffers holding `src_outer` and `dst_outer`."""
    if grain == BOX:
        first = tuple(lo for lo, _ in box)
        return tuple(np.array([v], dtype=np.int64) for v in (  # type: ignore[return-value]
            linear_index(src_outer, first) * elem, linear_index(dst_outer, first) * elem,
            volume(box) * elem))
    # runs: the innermost dimensions the box spans in both buffers merge with the next one out
    level = 2
    while level > 0 and box[level] == src_outer[level] == dst_outer[level]:
        level -= 1
    run = volume(box[level:]) * elem  # type: ignore[arg-type]
    axes = [np.arange(lo, hi, dtype=np.int64) if d < level else np.array([lo], dtype=np.int64)
            for d, (lo, hi) in enumerate(box)]
    grid = tuple(np.meshgrid(*axes, indexing="ij"))
    src = linear_index(src_outer, grid).ravel() * elem
    dst = linear_index(dst_outer, grid).ravel() * elem
    size = np.full(src.shape, run, dtype=np.int64)
    if grain is None or grain >= run:
        return src, dst, size
    cuts = -(-run // grain)
    step = np.arange(cuts, dtype=np.int64) * grain
    last = run - step[-1]
    src = (src[:, None] + step).ravel()
    dst = (dst[:, None] + step).ravel()
    size = np.tile(np.append(np.full(cuts - 1, grain, dtype=np.int64), last), len(size))
    return src, dst, size



def runs_of(lo: np.ndarray, hi: np.ndarray, src: tuple[np.ndarray, np.ndarray],
            dst: tuple[np.ndarray, np.ndarray], elem: int, grain: Grain) -> tuple[np.ndarray, np.ndarray]:
    """(runs, bytes per run) of boxes [lo, hi) (rows of (n, 3) arrays) held row-major in
    buffers of boxes `src` and `dst` ((lo, hi) pairs of arrays that broadcast): the counts
    `fragments` gives, for prices that never build the transfers. A box moved whole is one run."""
    ext = hi - lo
    vol = np.prod(ext, axis=1)
    if grain == BOX:
        return np.ones_like(vol), vol * elem
    full = np.all([(lo == s_lo) & (hi == s_hi) for s_lo, s_hi in (src, dst)], axis=0)  # (n, 3)
    run = ext[:, 2].copy()
    merge = full[:, 2]
    run[merge] *= ext[merge, 1]
    merge &= full[:, 1]
    run[merge] *= ext[merge, 0]
    return vol // run, run * elem


def lane_work(runs: np.ndarray, run_bytes: np.ndarray, grain: Grain, cost, word_bytes: int,
              ) -> np.ndarray:
    """Lane cycles of moving `runs` runs of `run_bytes` each cut at `grain`, where
    `cost(words)` is what one transfer of that many words costs the lane."""
    if grain is None or grain == BOX:
        return runs * cost(-(-run_bytes // word_bytes))
    whole, rest = np.divmod(run_bytes, grain)
    tail = np.where(rest > 0, cost(np.maximum(-(-rest // word_bytes), 1)), 0)
    return runs * (whole * cost(np.full_like(run_bytes, grain // word_bytes)) + tail)


def cuts_keep_alignment(grain: Grain, align: int) -> bool:
    """Every fragment of a run starts as aligned as the run: no cuts, or cuts at a multiple of
    `align`."""
    return grain in (None, BOX) or int(grain) % align == 0  # type: ignore[call-overload]


def paired_runs(lo: np.ndarray, hi: np.ndarray, src: tuple[np.ndarray, np.ndarray, np.ndarray],
                dst: tuple[np.ndarray, np.ndarray, np.ndarray], elem: int, grain: Grain,
                align: int) -> np.ndarray:
    """Of `runs_of`'s runs, how many start at a multiple of `align` bytes in both buffers:
    the ones that may be paired. `src`, `dst`: (lo, hi, start) of the buffers, arrays that
    broadcast, start being the box's byte address modulo `align` (a buffer starts at a
    multiple of it under any placement, so this is the box's offset in its buffer). Cut at a
    grain, a run's fragments start where it does plus multiples of the grain: with a grain
    that is not a multiple of `align`, every run counts (no smaller than the truth)."""
    if not cuts_keep_alignment(grain, align):
        return runs_of(lo, hi, src[:2], dst[:2], elem, grain)[0]
    q = align // math.gcd(align, elem)  # element offsets matter modulo q
    if grain == BOX:
        level = np.zeros(len(lo), dtype=np.int64)  # one run, at the box's first element
    else:  # as `runs_of`: runs start along the outer dimensions not merged into them
        full = np.all([(lo == b_lo) & (hi == b_hi) for b_lo, b_hi, _ in (src, dst)], axis=0)
        level = np.where(~full[:, 2], 2, np.where(~full[:, 1], 1, 0))
    res = np.arange(q, dtype=np.int64)
    # a run at index (i0, i1, lo2) starts at byte a0 * i0 + a1 * i1 + c of each buffer: all
    # that matters is (a0, a1, c) modulo `align`, so each box's (residue, residue) table is
    # looked up by that key among the few keys the boxes have
    keys = []
    for b_lo, b_hi, start in (src, dst):
        ext = np.broadcast_to(b_hi - b_lo, lo.shape)
        first = np.broadcast_to(b_lo, lo.shape)
        a1 = ext[:, 2] * elem
        a0 = ext[:, 1] * a1
        c = np.broadcast_to(start, lo.shape[:1]) + (lo[:, 2] - first[:, 2]) * elem - first[:, 0] * a0 \
            - first[:, 1] * a1
        keys.append(((a0 % align) * align + a1 % align) * align + c % align)
    pair, key_of = np.unique(keys[0] * align ** 3 + keys[1], return_inverse=True)
    coef = [np.stack([k // align ** 2, k // align % align, k % align]) for k in (pair // align ** 3,
                                                                                 pair % align ** 3)]
    ok = np.ones((len(pair), q, q), dtype=np.int64)  # (key, residue along 0, along 1)
    for a0, a1, c in coef:
        ok &= (a0[:, None, None] * res[None, :, None] + a1[:, None, None] * res[None, None, :]
               + c[:, None, None]) % align == 0

    def starts(d: int) -> np.ndarray:  # (n, q): indices along d where runs start, by residue
        top = np.where(level > d, hi[:, d], lo[:, d] + 1)[:, None]
        return (top - 1 - res) // q - (lo[:, d, None] - 1 - res) // q

    along0, along1 = starts(0), starts(1)
    out = np.empty(len(lo), dtype=np.int64)
    for at in range(0, len(lo), _CHUNK):
        part = slice(at, at + _CHUNK)
        out[part] = np.einsum("na,nab,nb->n", along0[part], ok[key_of.ravel()[part]], along1[part])
    return out


_CHUNK = 1 << 16  # boxes at a time: bounds the tables' memory on phases of millions of runs
