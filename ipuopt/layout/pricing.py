"""Cycle prices of GEMM layouts and of the redistributions between them, for layout problems.

Every exchange is priced by its *load bound*: per tile, the receive lane carries
rx_lead + d per transfer received and the transmit lane tx_overhead + d per transfer
sent, d being the payload at the fastest width; the phase cannot end before the busiest
lane's work plus the shortest route (the endpoint bound with each transfer at its
cheapest width and the shortest latency, so never above it, nor above the optimum).

The transfers priced are exactly those `ipuopt gen` emits (`workloads.phases`): pieces
held, boxes needed, one multicast per overlap and fragment (at the generator's grain),
split at the fan-out. A GEMM's own
exchange is its weight broadcast (row 0 of the grid to the other rows) and its reduction,
each priced as a phase of its own, in closed form; moving an activation (or a graph
input) into the layout a consumer needs is priced from its boxes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ipuopt.exchange.timing import payload_cycles
from ipuopt.spec import Spec
from ipuopt.workloads.allocation import SpmdAllocator
from ipuopt.workloads.boxes import Range, View, nth, split, volume, widths
from ipuopt.workloads.fragments import Grain, cuts_keep_alignment, lane_work, paired_runs, runs_of
from ipuopt.workloads.gemm import PARTIAL_BYTES, Candidate, GemmLayout
from ipuopt.workloads.geometry import (
    default_input_layout,
    grid_tile,
    homed,
    operand_needs,
    splits,
)
from ipuopt.workloads.overlaps import overlapping
from ipuopt.workloads.records import Need, Piece
from ipuopt.workloads.workload import Operator, Workload


@dataclass(frozen=True)
class Held:
    """Where a tensor is: one entry per piece (tile, stored box)."""

    tiles: np.ndarray  # (n,)
    lo: np.ndarray  # (n, 3)
    hi: np.ndarray  # (n, 3)
    addr: np.ndarray  # (n,) byte address of each piece's box (its buffer's start may be moved)

    @classmethod
    def of(cls, pieces: list[Piece]) -> Held:
        boxes = np.array([p.box for p in pieces], dtype=np.int64).reshape(-1, 3, 2)
        return cls(np.array([p.tile for p in pieces], dtype=np.int64), boxes[:, :, 0].copy(),
                   boxes[:, :, 1].copy(), np.array([p.addr for p in pieces], dtype=np.int64))

    def largest(self) -> int:
        """Elements of the largest piece on one tile."""
        if not len(self.tiles):
            return 0
        per = np.prod(self.hi - self.lo, axis=1)
        return int(np.bincount(self.tiles, weights=per).max())


def fastest(words: int, spec: Spec) -> int:
    """Payload cycles at the fastest width: no transfer of `words` takes less."""
    ex = spec.exchange
    return payload_cycles(words, max(ex.ordinary_words_per_cycle, ex.paired_words_per_cycle))


def fastest_of(words: np.ndarray, spec: Spec) -> np.ndarray:
    """`fastest` of each element."""
    ex = spec.exchange
    return payload_of(words, max(ex.ordinary_words_per_cycle, ex.paired_words_per_cycle))


def unpaired_of(words: np.ndarray, spec: Spec) -> np.ndarray:
    """Payload cycles of each element at ordinary width (a transfer that cannot be paired)."""
    return payload_of(words, spec.exchange.ordinary_words_per_cycle)


def payload_of(words: np.ndarray, rate: float) -> np.ndarray:
    if float(rate).is_integer():
        return -(-words // int(rate))
    return np.array([payload_cycles(int(w), rate) for w in words], dtype=np.int64)


_PARTNERS: dict[int, tuple[Spec, np.ndarray]] = {}


def partners(spec: Spec) -> np.ndarray:
    """Each tile's pair partner (-1: none), built once per spec."""
    hit = _PARTNERS.get(id(spec))
    if hit is None or hit[0] is not spec:
        hit = _PARTNERS[id(spec)] = (spec, np.array(
            [-1 if (p := spec.partner(t)) is None else p for t in range(spec.tiles)], dtype=np.int64))
    return hit[1]


def pair_cost(words: np.ndarray, spec: Spec, overhead: int | None = None) -> np.ndarray:
    """One send's cost to its tile pair's two transmit lanes, at its cheaper width, with
    `overhead` cycles a send (default: the transmit overhead)."""
    ex = spec.exchange
    o = ex.tx_overhead if overhead is None else overhead

    def at(rate: float) -> np.ndarray:
        if float(rate).is_integer():
            return -(-words // int(rate))
        return np.vectorize(lambda w: payload_cycles(int(w), rate), otypes=[np.int64])(words)

    return np.minimum(o + at(ex.ordinary_words_per_cycle), 2 * (o + at(ex.paired_words_per_cycle)))


def box_work(nbytes: list[int], spec: Spec, grain: Grain,
             per_send: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Lane cycles of moving each of `nbytes` as one run (a whole stored box), cut at `grain`,
    where `per_send(words)` is what one transfer costs the lane."""
    sizes = np.asarray(nbytes, dtype=np.int64)
    return lane_work(np.ones_like(sizes), sizes, grain, per_send, spec.exchange.word_bytes)


class Lanes:
    """Per-tile lane work of one phase, and its load bound. With `pairs`, also each tile's
    sends as the pair bound counts them (`exchange.bounds.pair_bound`: ordinary on its own
    lane or paired on both, whichever costs the pair less), so the bound sees that two
    partner tiles share two transmit lanes. With `sets` > 1, the lanes of that many phases
    side by side (phase s's tile t at s * tiles + t), priced in one pass (`move_bounds`)."""

    def __init__(self, spec: Spec, pairs: bool = False, lead: int | None = None, sets: int = 1) -> None:
        self.spec, self.sets = spec, sets
        ex = spec.exchange
        self.lead = ex.rx_lead if lead is None else lead  # a receive's cycles besides its payload
        self.rx = np.zeros(sets * spec.tiles, dtype=np.int64)
        self.tx = np.zeros(sets * spec.tiles, dtype=np.int64)
        self.pair = np.zeros(sets * spec.tiles, dtype=np.int64) if pairs else None
        self.partner = partners(spec) if pairs else None

    def bound(self) -> int:
        return max(self.bounds())

    def bounds(self) -> list[int]:
        """Each phase's load bound."""
        ex = self.spec.exchange
        lat0 = self.spec.latency(0, 1)
        rx, tx = (a.reshape(self.sets, -1).max(axis=1) for a in (self.rx, self.tx))
        out = np.maximum(np.where(rx > 0, rx + ex.tx_overhead + lat0 - ex.rx_lead, 0),
                         np.where(tx > 0, tx + lat0, 0))
        if self.pair is not None and self.partner is not None:
            has = self.partner >= 0
            pair = self.pair.reshape(self.sets, -1)
            if has.any():
                both = (pair[:, has] + pair[:, self.partner[has]]).max(axis=1)
                out = np.where(pair.any(axis=1), np.maximum(out, -(-both // 2) + lat0), out)
        return [int(v) for v in out]


def move_bound(held: Held, needs: list[Need], elem: int, spec: Spec, grain: Grain = None) -> int:
    """Load bound of the phase that routes `needs` from `held` (as `ipuopt gen` would at
    `grain`)."""
    return move_bounds(held, [needs], elem, spec, grain)[0]


def move_bounds(held: Held, phases: list[list[Need]], elem: int, spec: Spec, grain: Grain = None
                ) -> list[int]:
    """`move_bound` of each list of needs, all from `held`, in one pass: on small layouts the
    numpy calls, not the data, cost the time, and one pass makes as many calls as one move."""
    lanes = Lanes(spec, sets=len(phases))
    needs = [need for phase in phases for need in phase]
    which = np.repeat(np.arange(len(phases)), [len(phase) for phase in phases])
    return move_lanes(held, needs, elem, spec, grain, lanes, which).bounds()


def move_lanes(held: Held, needs: list[Need], elem: int, spec: Spec, grain: Grain = None,
               lanes: Lanes | None = None, which: np.ndarray | None = None) -> Lanes:
    """The lane work of routing `needs` from `held`, added to `lanes` (a phase moving several
    tensors loads the same lanes; `which`: each need's phase when `lanes` holds several):
    every (need, piece) overlap at once (`overlapping`), a block of needs at a time."""
    ex = spec.exchange
    lanes = lanes or Lanes(spec)
    which = np.zeros(len(needs), dtype=np.int64) if which is None else which
    block = max(1, 2_000_000 // max(1, len(held.tiles)))
    for first in range(0, len(needs), block):
        part = needs[first:first + block]
        base = which[first:first + block] * spec.tiles  # each need's phase's first lane
        nlo = np.array([[r[0] for r in need.box] for need in part], dtype=np.int64).reshape(-1, 3)
        nhi = np.array([[r[1] for r in need.box] for need in part], dtype=np.int64).reshape(-1, 3)
        naddr = np.array([need.addr for need in part], dtype=np.int64)
        n, p = overlapping(nlo, nhi, held.lo, held.hi)
        if not len(n):
            continue
        ilo, ihi = np.maximum(held.lo[p], nlo[n]), np.minimum(held.hi[p], nhi[n])
        runs, run_bytes = runs_of(ilo, ihi, (held.lo[p], held.hi[p]), (nlo[n], nhi[n]), elem, grain)
        paired = paired_runs(ilo, ihi, (held.lo[p], held.hi[p], held.addr[p]),
                             (nlo[n], nhi[n], naddr[n]), elem, grain, ex.paired_alignment
                             ) if regions_aligned(spec) else runs.copy()
        paired[partners(spec)[held.tiles[p]] < 0] = 0  # a tile without a partner sends ordinary
        split_runs = (runs, paired, run_bytes, grain, spec)
        tx_work = _runs_work(*split_runs, lambda w: ex.tx_overhead + fastest_of(w, spec), ex.tx_overhead)
        rx_work = _runs_work(*split_runs, lambda w: lanes.lead + fastest_of(w, spec), lanes.lead)
        sizes = np.array([len(need.tiles) for need in part], dtype=np.int64)
        owner = np.repeat(np.arange(len(part)), sizes)  # need of each (need, tile) entry
        tiles = np.array([t for need in part for t in need.tiles], dtype=np.int64)
        src = held.tiles[p]
        inside = np.isin(n * spec.tiles + src, owner * spec.tiles + tiles)
        dst = sizes[n] - inside
        sent = dst > 0
        at = base[n] + src  # the source's lane in its need's phase
        np.add.at(lanes.tx, at, -(-dst // ex.max_fanout) * tx_work)
        if lanes.pair is not None:
            pair_work = _runs_work(*split_runs, lambda w: pair_cost(w, spec), ex.tx_overhead)
            np.add.at(lanes.pair, at[sent], (-(-dst // ex.max_fanout) * pair_work)[sent])
        per_need = np.bincount(n[sent], weights=rx_work[sent], minlength=len(part)).astype(np.int64)
        np.add.at(lanes.rx, base[owner] + tiles, per_need[owner])
        back = inside & sent  # a holder that needs the block does not receive its own piece
        np.add.at(lanes.rx, at[back], -rx_work[back])
    return lanes


def _runs_work(runs: np.ndarray, paired: np.ndarray, run_bytes: np.ndarray, grain: Grain, spec: Spec,
               paired_cost: Callable[[np.ndarray], np.ndarray], per: int) -> np.ndarray:
    """Lane cycles of `runs` runs of `run_bytes` each, of which `paired` may be paired (at
    `paired_cost(words)` a transfer) and the rest cost `per` plus their ordinary payload."""
    wb = spec.exchange.word_bytes
    return (lane_work(paired, run_bytes, grain, paired_cost, wb)
            + lane_work(runs - paired, run_bytes, grain, lambda w: per + unpaired_of(w, spec), wb))


def _aligned(offset: np.ndarray, grain: Grain, spec: Spec) -> np.ndarray:
    """1 where a whole box at byte `offset` from an aligned address (sent to an aligned one)
    may be paired: aligned, or cut at a grain that is not a multiple of the alignment (then
    some of its fragments may be, and all count, as `paired_runs` counts them)."""
    align = spec.exchange.paired_alignment
    if not (cuts_keep_alignment(grain, align) and regions_aligned(spec)):
        return np.ones_like(offset)
    return (offset % align == 0).astype(np.int64)


def regions_aligned(spec: Spec) -> bool:
    """Every region starts at a multiple of the paired alignment, so a buffer's start is one
    wherever it is placed, and an offset in it says whether an address is (else offsets say
    nothing, and every run counts as one that may be paired)."""
    return all(r.start % spec.exchange.paired_alignment == 0 for r in spec.regions)


def unicast_lanes(src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray, spec: Spec, grain: Grain,
                  lanes: Lanes, offset: np.ndarray | None = None) -> Lanes:
    """The lane work of whole boxes each sent from tile `src` to tile `dst` (one run at both
    ends, cut only at a grain), added to `lanes`: what `move_lanes` counts for such sends,
    without its overlap search. `offset`: each box's byte offset from an aligned address at
    the source (the destination's being aligned); None: all aligned."""
    ex = spec.exchange
    runs = np.ones_like(nbytes)
    paired = (partners(spec)[src] >= 0) * (runs if offset is None else _aligned(offset, grain, spec))
    split_runs = (runs, paired, nbytes, grain, spec)
    np.add.at(lanes.tx, src, _runs_work(*split_runs, lambda w: ex.tx_overhead + fastest_of(w, spec),
                                        ex.tx_overhead))
    np.add.at(lanes.rx, dst, _runs_work(*split_runs, lambda w: ex.rx_lead + fastest_of(w, spec), ex.rx_lead))
    if lanes.pair is not None:
        np.add.at(lanes.pair, src, _runs_work(*split_runs, lambda w: pair_cost(w, spec), ex.tx_overhead))
    return lanes


def move_floor(block_elems: int, tiles: int, held_elems: int, elem: int, spec: Spec) -> int:
    """A lower bound on `move_bound` whatever the producer's layout: `tiles` tiles need the
    same block of `block_elems`; one holding at most `held_elems` of it receives the rest, and
    since the producer's pieces are disjoint, together they hold at most one block, so the
    busiest receives at least (tiles - 1) / tiles of it."""
    ex = spec.exchange
    rest = max(block_elems - held_elems, -(-block_elems * (tiles - 1) // tiles))
    if rest <= 0:
        return 0
    return fastest(math.ceil(rest * elem / ex.word_bytes), spec) + ex.tx_overhead + spec.latency(0, 1)


def output_held(wl: Workload, op: Operator, c: Candidate) -> Held:
    """Where the GEMM leaves its output (as `ipuopt gen` does: `output_pieces`, in its order),
    built in numpy: thousands of layouts are held."""
    bsplit, msplit, _, nsplit = splits(wl, op, c)
    lay = c.layout
    sub_a, sub_b = (lay.sub_a, lay.sub_b) if lay.parts > 1 else (1, 1)
    rows = np.array([(lo + a, lo + b) for lo, hi in msplit for a, b in split(hi - lo, sub_a)]).reshape(
        len(msplit), sub_a, 2)
    cols = np.array([(lo + a, lo + b) for lo, hi in nsplit for a, b in split(hi - lo, sub_b)]).reshape(
        len(nsplit), sub_b, 2)
    batch = np.array(bsplit).reshape(-1, 2)
    g, r, col, i, j = np.indices((len(batch), len(msplit), len(nsplit), sub_a, sub_b)).reshape(5, -1)
    owner = i * sub_b + j
    tiles = grid_tile(lay, g, r, col, owner).astype(np.int64)
    box = [batch[g], rows[r, i], cols[col, j]]
    if op.out.transpose:
        box[1], box[2] = box[2], box[1]
    if op.out.heads:
        return _stored_heads(wl, op, tiles, *box)
    lo = np.stack([b[:, 0] for b in box], axis=1)
    hi = np.stack([b[:, 1] for b in box], axis=1)
    return Held(tiles, lo.astype(np.int64), hi.astype(np.int64),
                np.zeros(len(tiles), dtype=np.int64))


def _stored_heads(wl: Workload, op: Operator, tiles: np.ndarray, bb: np.ndarray, rr: np.ndarray,
                  cc: np.ndarray) -> Held:
    """`View.to_stored` of each piece's view box (heads as batches, `bb`), in numpy: one
    stored box where the piece holds whole heads, else one per head, each after the last in
    the piece's memory."""
    d = wl.tensors[op.out.tensor].shape[2] // op.out.heads
    whole = (cc[:, 0] == 0) & (cc[:, 1] == d)
    count = np.where(whole, 1, bb[:, 1] - bb[:, 0])
    at = np.repeat(np.arange(len(tiles)), count)
    within = np.arange(len(at)) - np.repeat(np.cumsum(count) - count, count)
    head = bb[at, 0] + within
    col_lo = np.where(whole[at], bb[at, 0] * d, head * d + cc[at, 0])
    col_hi = np.where(whole[at], bb[at, 1] * d, head * d + cc[at, 1])
    rows = rr[at]
    lo = np.stack([np.zeros(len(at), dtype=np.int64), rows[:, 0], col_lo], axis=1)
    hi = np.stack([np.ones(len(at), dtype=np.int64), rows[:, 1], col_hi], axis=1)
    addr = within * (rows[:, 1] - rows[:, 0]) * (cc[at, 1] - cc[at, 0]) * wl.elem_bytes
    return Held(tiles[at], lo.astype(np.int64), hi.astype(np.int64), addr.astype(np.int64))


def input_held(wl: Workload, tensor: str, spec: Spec) -> Held:
    """Where a graph input arrives (as `ipuopt gen` assumes: split by rows over the first tiles)."""
    return Held.of(default_input_layout(wl, spec, tensor, SpmdAllocator(spec), 0))


def own_exchange(wl: Workload, op: Operator, c: Candidate, spec: Spec, grain: Grain = None,
                 memo: dict[tuple, int] | None = None) -> dict[str, int]:
    """Load bounds of the GEMM's own phases, in closed form: the weight broadcast (when B is
    a weight), the broadcast of prepared operands from their homes (`prepared`, the most of
    them: they share the input phase) and the reduction (when P > 1). The largest block
    holds the busiest lanes.
    Both move whole stored boxes (one run each), so only a grain cuts them. `memo` (one per
    workload, spec and grain) keeps each figure for the candidates that share its inputs:
    the weight region, say, changes neither."""
    lay = c.layout
    batch, m, k, n = wl.gemm_dims(op)
    memo = {} if memo is None else memo
    out = {"weights": 0, "prepared": 0, "reduction": 0}
    a_block = (c.batches_per_group, math.ceil(m / lay.rows), math.ceil(k / lay.parts))
    b_block = (c.batches_per_group, math.ceil(k / lay.parts), math.ceil(n / lay.cols))
    for which, (block, receivers) in enumerate(((a_block, lay.cols), (b_block, lay.rows))):
        view = op.inputs[which]
        if not homed(wl, op, which) or receivers < 2:
            continue
        kind = "prepared" if view.prepare else "weights"
        key = ("broadcast", op.name, which, *block, receivers)
        if key not in memo:
            memo[key] = _broadcast_bound(wl, view, spec, grain, block, receivers)
        out[kind] = max(out[kind], memo[key])
    if lay.parts > 1:
        # the block shapes decide the lane work (grids share them), the partials only scale it;
        # the last group may hold fewer batches
        bb = c.batches_per_group
        key = ("reduction", tuple(sorted({min(batch, bb), batch - (c.groups - 1) * bb})),
               tuple(sorted(widths(m, lay.rows))), tuple(sorted(widths(n, lay.cols))), lay.sub_a, lay.sub_b)
        if key not in memo:
            memo[key] = _reduction_work(spec, grain, *key[1:])
        tx, rx = memo[key]
        ex, lat0 = spec.exchange, spec.latency(0, 1)
        out["reduction"] = max(tx + lat0, (lay.parts - 1) * rx + ex.tx_overhead + lat0 - ex.rx_lead)
    return out


def _broadcast_bound(wl: Workload, view: View, spec: Spec, grain: Grain, block: tuple[int, int, int],
                     receivers: int) -> int:
    """A home's block (weights on row 0, a prepared operand on its row or column's first
    tile) multicast to the other `receivers` - 1 tiles that need it."""
    ex = spec.exchange
    boxes = view.to_stored(tuple((0, x) for x in block), wl.tensors[view.tensor].shape)  # type: ignore[arg-type]
    nbytes = [volume(b) * wl.elem_bytes for b in boxes]
    chunks = math.ceil((receivers - 1) / ex.max_fanout)
    tx = chunks * int(box_work(nbytes, spec, grain, lambda w: ex.tx_overhead + fastest_of(w, spec)).sum())
    rx = int(box_work(nbytes, spec, grain, lambda w: ex.rx_lead + fastest_of(w, spec)).sum())
    return max(tx + spec.latency(0, 1), rx + ex.tx_overhead + spec.latency(0, 1) - ex.rx_lead)


def _reduction_work(spec: Spec, grain: Grain, batches: tuple[int, ...], rows: tuple[int, ...],
                    cols: tuple[int, ...], sub_a: int, sub_b: int) -> tuple[int, int]:
    """The busiest transmit lane of a reduction (each partial's pieces sent to the partials
    that reduce them, all but its own) and the costliest piece one receive lane takes, over
    every block shape (`batches` x `rows` x `cols` wide). A piece pairs only from an aligned
    offset in its partial's block, so the widest block need not be the busiest."""
    ex = spec.exchange
    shapes = itertools.product(batches, rows, cols)
    blocks = [np.outer([hi - lo for lo, hi in split(mw, sub_a)], [hi - lo for lo, hi in split(nw, sub_b)]
                       ).ravel() * (bw * PARTIAL_BYTES) for bw, mw, nw in shapes]
    nbytes = np.concatenate(blocks).astype(np.int64)
    offset = np.concatenate([np.cumsum(b) - b for b in blocks])
    first = np.cumsum([0] + [len(b) for b in blocks[:-1]])
    split_runs = (np.ones_like(nbytes), _aligned(offset, grain, spec), nbytes, grain, spec)
    sends = _runs_work(*split_runs, lambda w: ex.tx_overhead + fastest_of(w, spec), ex.tx_overhead)
    tx = int((np.add.reduceat(sends, first) - np.minimum.reduceat(sends, first)).max())
    rx = int(_runs_work(*split_runs, lambda w: ex.rx_lead + fastest_of(w, spec), ex.rx_lead).max())
    return tx, rx


def inflow_floor(wl: Workload, op: Operator, c: Candidate, spec: Spec, grain: Grain,
                 largest: dict[str, int]) -> int:
    """A floor of the load bound of the GEMM's input phase, whatever its producers leave: one
    tile's receive lane carries its weight block (a row off the home row receives it whole,
    a run per stored box) and, of each moved operand, its block less the most any tile holds
    of that tensor (`largest`, elements), one run at least; of a prepared operand, its whole
    block from its home, on a tile off its home row (B) or column (A) where there is one.
    `move_floor` and the weights' bound count each part alone; on one receive lane they add up."""
    ex = spec.exchange
    lay = c.layout
    # the tile: row 0 holds B's homes, column 0 a prepared A's
    bl, rr, kk, cc = _widest(wl, op, c, 1 if homed(wl, op, 1) and lay.rows > 1 else 0,
                             1 if homed(wl, op, 0) and lay.cols > 1 else 0)
    rx = 0

    def receive(nbytes: list[int]) -> int:
        return int(box_work([b for b in nbytes if b > 0], spec, grain,
                            lambda w: ex.rx_lead + fastest_of(w, spec)).sum())

    for which, box in ((0, (bl, rr, kk)), (1, (bl, kk, cc))):
        view = op.inputs[which]
        if wl.tensors[view.tensor].replicated:
            continue  # the host writes it where it is read: nothing of it arrives on chip
        if homed(wl, op, which):  # whole from its home, a run per stored box, off the home
            if (lay.cols if which == 0 else lay.rows) > 1:
                boxes = view.to_stored(box, wl.tensors[view.tensor].shape)
                rx += receive([volume(b) * wl.elem_bytes for b in boxes])
        elif not wl.tensors[view.tensor].weight:
            rest = volume(box) - largest.get(view.tensor, 0)
            rx += receive([rest * wl.elem_bytes])
    return rx + ex.tx_overhead + spec.latency(0, 1) - ex.rx_lead if rx else 0


def row_pair_floor(wl: Workload, op: Operator, c: Candidate, spec: Spec, grain: Grain,
                   largest: dict[str, int]) -> int:
    """A floor of the input phase's horizon, whatever its producers leave, by the group
    bound's argument (`exchange.bounds.group_bound`) on two adjacent tiles x, y of a grid row
    off the home row whose weight homes are partners: the multicasts of the row's A block from
    tiles other than x and y reach both, so their cores exclude every other receive on x and
    y, among them the weight blocks, which the homes' shared transmit lanes send no faster than
    their pair work allows. Some such pair holds at most its share of the A block (the
    pieces are disjoint), the rest arrives by those multicasts. B's homes are row 0's tiles,
    a weight's or a prepared operand's alike. 0 where it does not apply (B not multicast from
    homes, A a weight, one row, no partner homes)."""
    if not row_pairs_apply(wl, op, c):
        return 0
    pairs = _home_pair_work(wl, op, c, spec, grain)
    if not pairs:
        return 0
    both = min(pairs)
    bl, rr, kk, _ = _widest(wl, op, c, 1)
    block = volume((bl, rr, kk))
    rest = block - min(2 * largest.get(op.inputs[0].tensor, 0), block // len(pairs))
    lead = core_lead(spec)
    cores = int(box_work([rest * wl.elem_bytes], spec, grain, lambda w: lead + fastest_of(w, spec))[0]
                ) if rest > 0 else 0
    return phase_head(spec) + cores + -(-both // 2)


def home_pair_floor(wl: Workload, op: Operator, c: Candidate, spec: Spec, grain: Grain,
                    largest: dict[str, int]) -> int:
    """A floor of the input phase's horizon by the pair bound on the weight homes: two partner
    homes of row 0 share two transmit lanes and each sends its block at least once, so the
    pair's work over two lanes, whatever else the phase moves (the row-pair argument, which
    needs a moved A, takes the lightest pair; this one the heaviest). 0 where B is not broadcast
    from homes to other rows or no homes are partners. `largest` is not used (one signature
    with the other floors)."""
    if not homed(wl, op, 1) or c.layout.rows < 2:
        return 0
    pairs = _home_pair_work(wl, op, c, spec, grain)
    return phase_head(spec) + -(-max(pairs) // 2) if pairs else 0


def _home_pair_work(wl: Workload, op: Operator, c: Candidate, spec: Spec, grain: Grain) -> list[int]:
    """Per pair of partner weight homes (group 0, partial 0, row 0: the widest blocks), the
    two homes' sends of their blocks on the pair's transmit lanes (one per distinct pair)."""
    work = PairWork(wl, op, c, spec, grain)
    return [work(0, 0, col) + work(0, 0, col + 1) for col in work.distinct(home_pairs(spec, c.layout, 0, 0))]


def row_pair_bound(wl: Workload, op: Operator, c: Candidate, spec: Spec, grain: Grain, held: Held) -> int:
    """`row_pair_floor`'s argument with the producer known (A is in `held`): on every pair
    x, y of a row off the home row, partner homes, neither holding any of the row's A block,
    every A run into x reaches y too; their cores are x's receive work of A, each receive's
    lead less the arrival spread between neighbours."""
    if not row_pairs_apply(wl, op, c):
        return 0
    lay = c.layout
    needs = operand_needs(wl, op, c, 0, 0)
    cores = move_lanes(held, needs, wl.elem_bytes, spec, grain, Lanes(spec, lead=core_lead(spec))).rx
    holders: dict[tuple[int, ...], set[int]] = {}
    for need in needs:
        lo = np.array([b[0] for b in need.box])
        hi = np.array([b[1] for b in need.box])
        hit = np.all(np.maximum(held.lo, lo) < np.minimum(held.hi, hi), axis=1)
        holders.setdefault(need.tiles, set()).update(held.tiles[hit].tolist())
    work = PairWork(wl, op, c, spec, grain)
    best = 0
    for tiles, held_by in holders.items():
        gpr, _ = divmod(tiles[0], lay.cols)  # tiles[0] = grid_tile(g, r, 0, p)
        gp, r = divmod(gpr, lay.rows)
        g, p = divmod(gp, lay.parts)
        if r == 0:
            continue
        for col in home_pairs(spec, lay, g, p):
            if tiles[col] in held_by or tiles[col + 1] in held_by:
                continue
            both = work(g, p, col) + work(g, p, col + 1)
            best = max(best, int(cores[tiles[col]]) + -(-both // 2))
    return phase_head(spec) + best if best else 0


def row_pairs_apply(wl: Workload, op: Operator, c: Candidate) -> bool:
    """A moved A (not a weight, nor written by the host where it is read), a B broadcast
    from its homes on row 0 to other rows (a weight, or an operand the workload prepares)."""
    a = wl.tensors[op.inputs[0].tensor]
    return not (a.weight or a.replicated) and homed(wl, op, 1) and c.layout.rows > 1


def home_pairs(spec: Spec, lay: GemmLayout, g: int, p: int) -> list[int]:
    """Columns col whose weight homes (row 0) col and col + 1 are partners, both within the
    first fan-out of a row's multicast whichever tile of the row sends it."""
    base = grid_tile(lay, g, 0, 0, p)
    homes = np.arange(base, base + min(lay.cols, spec.exchange.max_fanout))
    return np.flatnonzero(partners(spec)[homes[:-1]] == homes[1:]).tolist()


def _widest(wl: Workload, op: Operator, c: Candidate, row: int, col: int = 0
            ) -> tuple[Range, Range, Range, Range]:
    """The batch, M, K and N ranges of group 0, grid row `row`, partial 0, column `col`
    (`splits`' first ranges are its widest)."""
    batch, m, k, n = wl.gemm_dims(op)
    lay = c.layout
    return ((0, min(batch, c.batches_per_group)), nth(m, lay.rows, row), nth(k, lay.parts, 0),
            nth(n, lay.cols, col))


def core_lead(spec: Spec) -> int:
    """A receive's cycles besides its payload in a multicast's core on two neighbours."""
    ex = spec.exchange
    return max(0, ex.rx_lead - math.ceil(ex.latency_per_tile))


def phase_head(spec: Spec) -> int:
    """The earliest a receive can begin after the phase starts."""
    ex = spec.exchange
    return ex.tx_overhead + ex.latency_base - ex.rx_lead


class PairWork:
    """A weight home's sends of its block as windows on its tile pair's two transmit lanes."""

    def __init__(self, wl: Workload, op: Operator, c: Candidate, spec: Spec, grain: Grain) -> None:
        self.wl, self.view, self.spec, self.grain = wl, op.inputs[1], spec, grain
        batch, _, self.k, self.n = wl.gemm_dims(op)
        self.lay, self.bpg, self.batch = c.layout, c.batches_per_group, batch
        self.memo: dict[tuple[int, int, int], int] = {}

    def distinct(self, cols: list[int]) -> list[int]:
        """Of pairs (col, col + 1), one per pair of widths where a block's position cannot
        change its stored boxes (a view without heads), else all."""
        if self.view.heads:
            return cols
        width = {col: (nth(self.n, self.lay.cols, col), nth(self.n, self.lay.cols, col + 1)) for col in cols}
        seen: dict[tuple[int, int], int] = {}
        for col in cols:
            seen.setdefault(tuple(hi - lo for lo, hi in width[col]), col)  # type: ignore[arg-type]
        return list(seen.values())

    def __call__(self, g: int, p: int, col: int) -> int:
        if (g, p, col) not in self.memo:
            wl, ex = self.wl, self.spec.exchange
            shape = wl.tensors[self.view.tensor].shape
            bl = (g * self.bpg, min(self.batch, (g + 1) * self.bpg))
            box = (bl, nth(self.k, self.lay.parts, p), nth(self.n, self.lay.cols, col))
            boxes = self.view.to_stored(box, shape)
            self.memo[(g, p, col)] = int(box_work(
                [volume(b) * wl.elem_bytes for b in boxes], self.spec, self.grain,
                lambda w: pair_cost(w, self.spec, min(ex.tx_overhead, ex.rx_lead))).sum())
        return self.memo[(g, p, col)]
