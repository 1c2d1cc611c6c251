"""Lower bounds on the optimal horizon of a phase, each valid under every rule of the model.

Each bound relaxes the problem to one resource (or one chain) and takes every
transfer at its cheapest width, so it never exceeds the optimum.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable
from functools import cache, cached_property

import numpy as np

from ipuopt.exchange.conflicts import CLASHES, Conflicts, held_resources, resource, root
from ipuopt.exchange.instance import Instance, successors, topological_by
from ipuopt.exchange.phase import Phase
from ipuopt.exchange.timing import Timing
from ipuopt.result import Bound
from ipuopt.spec import Spec


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def receive_lane_bounds(timings: list[Timing], spec: Spec) -> dict[int, int]:
    """Per receiving tile: its receive-lane work after the earliest possible arrival."""
    ex = spec.exchange
    work: dict[int, int] = defaultdict(int)
    first: dict[int, int] = {}
    for tm in timings:
        d = min(tm.duration.values())
        for x, a in tm.arrival.items():
            work[x] += ex.rx_lead + d
            first[x] = min(first.get(x, a - ex.rx_lead), a - ex.rx_lead)
    return {x: first[x] + w for x, w in work.items()}


def endpoint_bound(timings: list[Timing], spec: Spec) -> Bound:
    """Per tile: receive-lane work after the earliest possible arrival, and transmit-lane
    work followed by the shortest latency; the receive lanes are disjoint intervals, as are
    the transmit lanes."""
    ex = spec.exchange
    tx_work: dict[int, int] = defaultdict(int)
    tx_tail: dict[int, int] = {}
    for tm in timings:
        t = tm.transfer
        d = min(tm.duration.values())
        tx_work[t.src] += ex.tx_overhead + d
        lat = min(tm.arrival.values()) - ex.tx_overhead
        tx_tail[t.src] = min(tx_tail.get(t.src, lat), lat)
    best = Bound("endpoint", 0, "")
    for x, v in receive_lane_bounds(timings, spec).items():
        if v > best.value:
            best = Bound("endpoint", v, f"receive lane of tile {x}")
    for s, work in tx_work.items():
        v = work + tx_tail[s]
        if v > best.value:
            best = Bound("endpoint", v, f"transmit lane of tile {s}")
    return best


def pair_bound(timings: list[Timing], spec: Spec) -> Bound:
    """A pair of tiles has two transmit lanes; each send costs them o+d (ordinary) or
    2(o+d) (paired, borrowing the partner's lane), so their total over 2 bounds the horizon."""
    ex = spec.exchange
    work: dict[tuple[int, int], int] = defaultdict(int)
    tail: dict[tuple[int, int], int] = {}
    for tm in timings:
        t = tm.transfer
        partner = spec.partner(t.src)
        if partner is None:
            continue
        key = (min(t.src, partner), max(t.src, partner))
        work[key] += min((2 if w == "paired" else 1) * (ex.tx_overhead + d)
                         for w, d in tm.duration.items())
        lat = min(tm.arrival.values()) - ex.tx_overhead
        tail[key] = min(tail.get(key, lat), lat)
    best = Bound("pair", 0, "")
    for key, w in work.items():
        v = _ceil_div(w, 2) + tail[key]
        if v > best.value:
            best = Bound("pair", v, f"transmit lanes of tiles {key[0]} and {key[1]}")
    return best


def element_bound(timings: list[Timing], spec: Spec) -> Bound:
    """On one tile and memory element, the reads (serial on the transmit lane), the writes'
    payload windows (serial on the receive lane) and reads against writes (the hazard) are
    pairwise disjoint; reads cannot start before tx_overhead. Between two reads in a row lie
    at least tx_overhead cycles (the next send's source selection on the same lane), between
    two writes rx_lead (the next receive's pointer write), between a write and a read the
    write hazard, between a read and a write nothing: `_element_gaps` is the least these add
    in whatever order they come."""
    ex = spec.exchange
    o, lead, hazard = ex.tx_overhead, ex.rx_lead, ex.write_hazard
    work: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # read, write cycles; counts
    first: dict[tuple, int] = {}
    for tm in timings:
        t = tm.transfer
        d = min(tm.duration.values())
        for el in tm.read_elements:
            key = (t.src, *el)
            work[key][0] += d
            work[key][2] += 1
            first[key] = min(first.get(key, o), o)
        for x, a in tm.arrival.items():
            for el in tm.write_elements:
                key = (x, *el)
                work[key][1] += d
                work[key][3] += 1
                first[key] = min(first.get(key, a), a)
    best = Bound("element", 0, "")
    for key, (r, w, reads, writes) in work.items():
        if not (r and w):
            continue  # reads alone or writes alone are covered by the endpoint bound
        v = first[key] + r + w + _element_gaps(reads, writes, o, lead, hazard)
        if v > best.value:
            region = spec.regions[key[1]].name
            best = Bound("element", v, f"tile {key[0]} element {key[2]} of {region}")
    return best


def _element_gaps(reads: int, writes: int, o: int, lead: int, hazard: int) -> int:
    """The least total gap on an element used by `reads` reads and `writes` writes (both at
    least one) in a row: o between two reads, lead between two writes, the hazard from a write
    to a read, none from a read to a write. A row of p read runs and q write runs (|p - q| <= 1)
    has reads - p read-read gaps, writes - q write-write gaps and a write-read gap per write run
    followed by reads; each shape is linear in its runs, so its least is at either end. (A row
    that begins and ends with writes saves a lead for the hazard: less when the hazard is
    shorter than the lead, which the sum of the first two terms alone missed.)"""
    step = hazard - o - lead  # one more read run and write run each
    base = o * reads + lead * writes
    shapes = [(base - hazard, min(reads, writes)),  # read ... write
              (base, min(reads, writes))]  # write ... read
    if writes > 1:
        shapes.append((base - lead, min(reads, writes - 1)))  # write ... write
    if reads > 1:
        shapes.append((base - o, min(writes, reads - 1)))  # read ... read
    return min(v + step * (1 if step >= 0 else most) for v, most in shapes)


MATCHING_SET = 25  # most memory elements in one odd set (`matching_bound`)


def matching_bound(timings: list[Timing], spec: Spec) -> Bound:
    """A transfer that reads one memory element and writes one other holds both at once from
    its payload's arrival to the end of its read (its core: d - latency cycles). On one
    element, reads (serial on the transmit lane), writes' payload windows (serial on the
    receive lane) and the two against each other (the hazard) are disjoint, so the transfers
    in their cores at any moment hold disjoint pairs of elements: among an odd number k of
    elements, at most (k - 1) / 2 at once, and one element idles. A reduction's group of an
    odd number of partials whose sends and receives share one element per tile is such a
    set: its cores' total over (k - 1) / 2, after the first core can begin and before the
    last write ends, bounds the horizon (5 tiles: up to 5/4 of what one element sees). The
    sets tried: each group of elements linked by such transfers (up to `MATCHING_SET`), less
    its least-linked element when even."""
    o = spec.exchange.tx_overhead
    weight: dict[tuple, int] = defaultdict(int)  # (element, element) -> cores between them
    latency: dict[tuple, int] = {}  # ... and the least latency among them
    parent: dict[tuple, tuple] = {}  # union-find of the elements such transfers link
    for tm in timings:
        if len(tm.read_elements) != 1 or len(tm.arrival) != 1 or len(tm.write_elements) != 1:
            continue
        (x, a), = tm.arrival.items()
        core = min(tm.duration.values()) - (a - o)
        if core <= 0:
            continue
        edge = ((tm.transfer.src, *tm.read_elements[0]), (x, *tm.write_elements[0]))
        weight[edge] += core
        latency[edge] = min(latency.get(edge, a - o), a - o)
        parent[root(parent, edge[0])] = root(parent, edge[1])
    groups: dict[tuple, list[tuple]] = defaultdict(list)  # root -> its edges
    for edge in weight:
        groups[root(parent, edge[0])].append(edge)
    best = Bound("matching", 0, "")
    for edges in groups.values():
        inside = {u for e in edges for u in e}
        if len(inside) > MATCHING_SET or len(inside) < 3:
            continue
        if len(inside) % 2 == 0:
            linked: dict[tuple, int] = defaultdict(int)
            for u, v in edges:
                linked[u] += weight[(u, v)]
                linked[v] += weight[(u, v)]
            inside.discard(min(sorted(inside), key=lambda u: linked[u]))
            edges = [e for e in edges if e[0] in inside and e[1] in inside]
        if not edges:
            continue
        total = sum(weight[e] for e in edges)
        value = o + 2 * min(latency[e] for e in edges) + _ceil_div(total, (len(inside) - 1) // 2)
        if value > best.value:
            tiles = ", ".join(map(str, sorted({u[0] for u in inside})))
            most = (len(inside) - 1) // 2
            best = Bound("matching", value, f"{len(inside)} memory elements on tiles {tiles}: at most {most} "
                                            f"transfer{'s' if most > 1 else ''} between them at once")
    return best


def dependency_bound(timings: list[Timing], phase: Phase) -> Bound:
    """Longest chain through `after`, each transfer at its cheapest width and latency."""
    order, heads, _ = _dependency_heads(timings)
    best = Bound("dependency", 0, "")
    for i in order:
        tm = timings[i]
        done = heads[i] + min(tm.end_offset(w) for w in tm.widths)
        if done > best.value:
            where = f"chain ending at transfer {tm.transfer.id}" if tm.transfer.after else \
                f"transfer {tm.transfer.id} alone"
            best = Bound("dependency", done, where)
    return best


def heads_tails_bound(timings: list[Timing], spec: Spec) -> Bound:
    """Each lane as one machine whose jobs have heads and tails: a transfer cannot hold a lane
    before its `after` chain lets it start (its head), and after it leaves the lane the
    horizon is still at least its own later receives plus the chain of what waits for it
    (its tail). The best preemptive one-machine schedule with heads and tails (Jackson's:
    at every moment the ready job with the longest tail) bounds the lane's part; it sees
    where the endpoint bound (loads) and the dependency bound (chains) each see half.
    Without dependencies it adds only route skews to the endpoint bound, and is skipped
    (0): on multi-million-receive phases it takes seconds."""
    ex = spec.exchange
    if not any(tm.transfer.after for tm in timings):
        return Bound("heads-tails", 0, "no dependencies: the endpoint bound covers the lanes")
    order, heads, succ = _dependency_heads(timings)
    after = [0] * len(timings)  # the longest chain that waits for a transfer to complete
    for i in reversed(order):
        after[i] = max((min(timings[k].end_offset(w) for w in timings[k].widths) + after[k]
                        for k in succ[i]), default=0)
    lanes: dict[tuple, list[tuple[int, int, int]]] = defaultdict(list)  # (head, length, tail)
    for i, tm in enumerate(timings):
        d = min(tm.duration.values())
        last = max(tm.arrival.values())
        lanes["transmit", tm.transfer.src].append((heads[i], ex.tx_overhead + d,
                                                   last - ex.tx_overhead + after[i]))
        for x, a in tm.arrival.items():
            lanes["receive", x].append((heads[i] + a - ex.rx_lead, ex.rx_lead + d, last - a + after[i]))
    best = Bound("heads-tails", 0, "")
    for (kind, tile), jobs in lanes.items():
        v = _jackson(jobs)
        if v > best.value:
            best = Bound("heads-tails", v, f"{kind} lane of tile {tile}")
    return best


def _jackson(jobs: list[tuple[int, int, int]]) -> int:
    """The least makespan of (head, length, tail) jobs on one machine with preemption (a head
    may be negative: a receive lane is held `rx_lead` cycles before the phase's first word)."""
    jobs = sorted(jobs)
    ready: list[list[int]] = []  # [-tail, length left]
    now, best, k = jobs[0][0], 0, 0
    while k < len(jobs) or ready:
        if not ready:
            now = max(now, jobs[k][0])
        while k < len(jobs) and jobs[k][0] <= now:
            heapq.heappush(ready, [-jobs[k][2], jobs[k][1]])
            k += 1
        job = ready[0]
        nxt = jobs[k][0] if k < len(jobs) else None
        if nxt is not None and now + job[1] > nxt:  # runs until the next head, then the longest tail
            job[1] -= nxt - now
            now = nxt
        else:
            heapq.heappop(ready)
            now += job[1]
            best = max(best, now - job[0])
    return best


def _dependency_heads(timings: list[Timing]) -> tuple[list[int], list[int], list[list[int]]]:
    """A topological order of the transfers (Kahn's; phases are validated acyclic before
    bounds are computed), each one's earliest start through its `after` chain, every
    transfer at its cheapest width, and the transfers that wait for each."""
    succ, _ = successors(timings)
    order = topological_by(timings, [0] * len(timings))
    heads = [0] * len(timings)
    for i in order:
        done = heads[i] + min(timings[i].end_offset(w) for w in timings[i].widths)
        for s in succ[i]:
            heads[s] = max(heads[s], done)
    return order, heads, succ


def group_bound(timings: list[Timing], spec: Spec, groups: int = 300,
                enough: Callable[[], bool] | None = None) -> Bound:
    """A multicast's receives exclude, on its tiles, everything else that arrives there. For
    a set R of tiles that some multicast reaches, the transfers reaching all of R (A) each
    hold every receive lane of R over their core [S + max a - lead, S + min a + d) (a over
    R, d at the cheapest width): the cores are disjoint. Every other transfer reaching a tile
    x of R (B) holds x's lane over its window [S + a_x - lead, S + a_x + d) (x its tile of R
    with the least arrival), which avoids every core. So the horizon is at least the least
    head, plus A's core lengths, plus a length the union of B's windows cannot be below
    (`_Receives.union`): the lanes behind the multicast, e.g. a tile pair that feeds the
    columns crossing a row, add to the row's own load where every single lane sees one or
    the other. The same holds on R's memory (`_Receives.reads`): where every transfer of A
    writes an element that R's own sends read, those reads avoid A's writes. The sets tried
    are the `groups` heaviest destination sets of multicasts, best first by what each could
    reach at most; `enough()` may end the search."""
    load: dict[tuple[int, ...], int] = defaultdict(int)
    for tm in timings:
        if len(tm.arrival) > 1:
            load[tuple(sorted(tm.arrival))] += spec.exchange.rx_lead + min(tm.duration.values())
    if not load:
        return Bound("group", 0, "no multicasts")
    rc = _Receives(timings, spec)
    tried = []  # (what it can reach at most, R, the least head, A's cores, the others, ...)
    for r, _ in sorted(load.items(), key=lambda kv: (-kv[1], kv[0]))[:groups]:
        into = rc.into(np.array(r))
        for head, total, b_set, s, extra, what in (rc.split(into), rc.reads(r, into)):
            if extra is not None:
                tried.append((head + total + int(rc.most[b_set].max(initial=0)), r, head, total, b_set, s,
                              extra, what))
    best = Bound("group", 0, "")
    for reach, r, head, total, b_set, s, extra, what in sorted(tried, key=lambda t: (-t[0], t[1], t[-1])):
        if reach <= best.value or (enough is not None and enough()):
            break
        v = head + total + rc.union(b_set, s, extra)
        if v > best.value:
            best = Bound("group", v, f"multicasts into {len(r)} tiles ({r[0]}..{r[-1]}) and "
                                     f"{len(b_set)} {what}")
    return best


class _Receives:
    """The phase's receives as arrays, for `group_bound`: by transfer and by tile."""

    def __init__(self, timings: list[Timing], spec: Spec) -> None:
        ex = spec.exchange
        self.o, self.lead = ex.tx_overhead, ex.rx_lead
        n = len(timings)
        big = 1 << 40  # a width the transfer does not have never is the cheaper one
        self.src = np.array([tm.transfer.src for tm in timings], dtype=np.int64)
        self.pair = np.array([-1 if tm.partner is None else min(tm.transfer.src, tm.partner)
                              for tm in timings], dtype=np.int64)
        self.d_ord = np.array([tm.duration.get("ordinary", big) for tm in timings], dtype=np.int64)
        self.d_pair = np.array([tm.duration.get("paired", big) for tm in timings], dtype=np.int64)
        self.dmin = np.minimum(self.d_ord, self.d_pair)
        fan = np.array([len(tm.arrival) for tm in timings], dtype=np.int64)
        self.ptr = np.concatenate(([0], np.cumsum(fan)))
        self.who = np.repeat(np.arange(n, dtype=np.int64), fan)
        self.tile = np.array([x for tm in timings for x in tm.arrival], dtype=np.int64)
        self.arr = np.array([a for tm in timings for a in tm.arrival.values()], dtype=np.int64)
        self.by_tile = np.argsort(self.tile, kind="stable")
        self.tile_ptr = np.searchsorted(self.tile[self.by_tile], np.arange(int(self.tile.max()) + 2))
        self.most = self._lane_loads()
        self.hazard = min(spec.exchange.write_hazard, self.lead)
        self.timings = timings

    @cached_property
    def reading(self) -> dict[int, list[int]]:
        """Per tile, its sends that read memory (`reads`)."""
        out: dict[int, list[int]] = defaultdict(list)
        for i, tm in enumerate(self.timings):
            if tm.read_elements:
                out[tm.transfer.src].append(i)
        return out

    def _lane_loads(self) -> np.ndarray:
        """Per transfer, the most any lane it holds carries in all (cheapest widths; a pair's
        two transmit lanes together, halved): what `union` can give at most."""
        o, lead = self.o, self.lead
        tx = np.bincount(self.src, weights=o + self.dmin)
        rx = np.bincount(self.tile, weights=lead + self.dmin[self.who])
        most = tx[self.src]
        np.maximum.at(most, self.who, rx[self.tile])
        has = self.pair >= 0
        if has.any():
            pw = np.minimum(o + self.d_ord, 2 * (o + self.d_pair))
            pairs = np.bincount(self.pair[has], weights=pw[has])
            most[has] = np.maximum(most[has], -(-pairs[self.pair[has]] // 2))
        return most.astype(np.int64)

    def split(self, into: tuple[np.ndarray, ...]) -> tuple[int, int, np.ndarray, np.ndarray, int | None, str]:
        """For a tile set r (`into(r)`): the least head, A's total core length, B (transfer
        indices), each B transfer's window offset s (least arrival into r, less lead), the
        windows' length beyond the payload (the lead) and what B is."""
        ids, amax, amin, a = into
        core = np.maximum(0, self.dmin[ids[a]] + self.lead - (amax[a] - amin[a]))
        heads = np.concatenate((amax[a], amin[~a])) - self.lead
        return (int(heads.min()), int(core.sum()), ids[~a], amin[~a] - self.lead, self.lead,
                "other transfers received there")

    def reads(self, r: tuple[int, ...], into: tuple[np.ndarray, ...]
              ) -> tuple[int, int, np.ndarray, np.ndarray, int | None, str]:
        """As `split`, on memory: A's writes of an element all of them write hold it on each
        tile x of r over [S + a_x, S + a_x + d + hazard), those of one tile as far apart as its
        lane keeps them, so over [S + max a, S + min a + d + min(hazard, lead)) they are
        disjoint on all of r. Sends from r (C) that read such an element on their own tile
        read [S + o, S + o + d) outside them. The last write may reach min(hazard, lead) past
        the horizon: the head is less that. None when no send from r reads what A writes."""
        ids, amax, amin, a = into
        written = set.intersection(*(set(self.timings[i].write_elements) for i in ids[a]))
        c = sorted(j for x in r for j in self.reading.get(x, ())
                   if written.intersection(self.timings[j].read_elements))
        if not c:
            return 0, 0, ids[:0], ids[:0], None, ""
        core = np.maximum(0, self.dmin[ids[a]] + self.hazard - (amax[a] - amin[a]))
        head = min(int(amax[a].min()), self.o) - self.hazard
        return (head, int(core.sum()), np.array(c, dtype=np.int64), np.full(len(c), self.o), 0,
                "sends from there reading what they write")

    def into(self, r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The transfers received on r, each one's latest and earliest arrival there, and
        whether it reaches all of r (A)."""
        lo, hi = self.tile_ptr[r], self.tile_ptr[r + 1]
        idx = self.by_tile[np.concatenate([np.arange(a, b) for a, b in zip(lo, hi, strict=True)])]
        who, arr = self.who[idx], self.arr[idx]
        order = np.argsort(who, kind="stable")
        who, arr = who[order], arr[order]
        first = np.flatnonzero(np.concatenate(([True], who[1:] != who[:-1])))
        ids = who[first]
        count = np.diff(np.concatenate((first, [len(who)])))
        amax, amin = np.maximum.reduceat(arr, first), np.minimum.reduceat(arr, first)
        return ids, amax, amin, count == len(r)

    def union(self, b_set: np.ndarray, s: np.ndarray, extra: int) -> int:
        """A length the union of the windows [S + s, S + s + extra + d) of `b_set` cannot be
        below. On each lane the transfers hold (a transmit lane from S for o + d, a receive
        lane from S + a_x - lead for lead + d, a tile pair's two transmit lanes with a paired
        send holding both) their lane windows are disjoint; each window, shortened by the
        spread of (s - lane offset) over the lane's transfers and moved by the largest, lies
        inside its lane window, so what they add up to on one lane (a pair's over 2) is
        covered by the union."""
        if not len(b_set):
            return 0
        o, lead = self.o, self.lead
        fan = self.ptr[b_set + 1] - self.ptr[b_set]
        first = self.ptr[b_set] - np.cumsum(np.concatenate(([0], fan[:-1])))
        rows = np.repeat(first, fan) + np.arange(fan.sum())  # their receives, in order
        rep = np.repeat(np.arange(len(b_set)), fan)
        best = int(extra + self.dmin[b_set].max())
        has = self.pair[b_set] >= 0
        for lane, at, shift, base, paired in (
                (self.src[b_set], slice(None), s, o, False),
                (self.pair[b_set][has], has, s[has], o, True),
                (self.tile[rows], rep, s[rep] - self.arr[rows] + lead, lead, False)):
            if not len(lane):
                continue
            top = np.full(int(lane.max()) + 1, np.iinfo(np.int64).min)
            np.maximum.at(top, lane, shift)
            room = extra + shift - top[lane]
            do, dp = self.d_ord[b_set][at], self.d_pair[b_set][at]
            m_ord = np.maximum(0, np.minimum(base + do, do + room))
            m_pair = np.maximum(0, np.minimum(base + dp, dp + room))
            work = np.bincount(lane, weights=np.minimum(m_ord, (2 if paired else 1) * m_pair))
            best = max(best, int(-(-work.max() // 2)) if paired else int(work.max()))
        return best


def clique_bound(timings: list[Timing], spec: Spec, seeds: int = 300,
                 enough: Callable[[], bool] | None = None) -> Bound:
    """Transfers that pairwise conflict (`Conflicts`) run one at a time, even when no single
    lane or element carries them all (a multicast into a group, the sends from that group
    that hazard with it, ...). On each resource two conflicting transfers share, their
    windows are disjoint; a transfer's windows on the resources it shares with the others
    all contain its core [S + o + hi, S + o + lo + d), d at its cheapest width (`_spans`:
    only the resources some pair needs to be told apart count). Cores are disjoint across
    the clique: the horizon is at least the least head, plus their total length, plus the
    least tail (what of the transfer follows its core).

    The transfers that conflict with every member (the rest) need not conflict with each
    other, yet their cores avoid the clique's: add what of them must run at once at least
    (`_rest_union`), e.g. two sends of one tile pair that are paired (one after the other)
    or ordinary (twice as long). Cliques are grown greedily from the transfers with the
    heaviest neighbourhoods (each resource's users' weight summed over its resources) and
    weighed with their rest at every step; and among the transfers that conflict with both
    heaviest sends of each of the busiest tile pairs, those two kept as the rest. Any clique
    is a proof, so the search may end when `enough()` says so (Ctrl-C, the time limit)."""
    if not timings:
        return Bound("clique", 0, "")
    o = spec.exchange.tx_overhead
    held = [held_resources(tm, o) for tm in timings]
    nb = Conflicts(timings, held)
    kinds: dict[tuple, int] = {}  # transfers alike in resources, roles and offsets: one kind
    kind = [kinds.setdefault(tuple(h.items()), len(kinds)) for h in held]
    ex = spec.exchange
    window = {"tx": lambda off: (-o, 0), "rd": lambda off: (0, 0),  # (start, end - d) after S + o
              "rx": lambda off: (off - ex.rx_lead, off), "wr": lambda off: (off, off + ex.write_hazard)}
    # per kind: resource (an element read or written: one), role, its window's start and end - d
    uses = [tuple((resource(k), k[0], *window[k[0]](off)) for k, off in alike) for alike in kinds]
    heads = _dependency_heads(timings)[1]
    w = [max(0, min(tm.duration.values()) - (max(tm.arrival.values()) - o)) for tm in timings]
    weight = {key: sum(w[j] for j in users) for key, users in nb.users.items()}
    heft = [w[i] + sum(weight.get(nb.against(key), 0) for key in h)  # ~ neighbourhood weight
            for i, h in enumerate(held)]
    order = sorted(range(len(timings)), key=lambda i: (-heft[i], i))
    heaviest: dict[int, int] = {}  # per tile, its heaviest send
    for i, tm in enumerate(timings):
        src = tm.transfer.src
        if src not in heaviest or w[i] > w[heaviest[src]]:
            heaviest[src] = i
    pairs = sorted(((min(w[heaviest[a]], w[heaviest[b]]), a, b) for a in heaviest
                    if (b := spec.partner(a)) is not None and a < b and b in heaviest), reverse=True)
    # (clique, its candidates, the rest kept whatever joins, what it was grown from, whether a
    # member is chosen by its weight among the candidates): the pairs' twice, once each way
    around = [([], nb.of(heaviest[a]) & nb.of(heaviest[b]), (heaviest[a], heaviest[b]),
               f"around the heaviest sends of tiles {a} and {b}") for _, a, b in pairs[:_PAIR_SEEDS]]
    starts = [(*s, False) for s in around]
    starts += [([seed], None, (), f"from {timings[seed].transfer.id}", False) for seed in order[:seeds]]
    starts += [(*s, True) for s in around]
    best = Bound("clique", 0, "")
    budget, spent, skipped = _REST_WORK, {False: 0, True: 0}, 0
    opposite = cache(lambda j: tuple(map(nb.against, held[j])))  # what conflicts with j, per resource
    paths: dict[frozenset, int] = {}  # `_sequence_value`'s, per clique as its nodes see it
    gaps: dict[tuple, int] = {}  # `_gap`'s, per pair of (kind, payload)
    longest: tuple[int, list[int], str] = (0, [], "")  # the final clique longest as a sequence
    for tried, (clique, cand, fixed, label, near_first) in enumerate(starts):
        if enough is not None and enough():
            skipped += len(starts) - tried
            break
        if spent[near_first] > (_NEAR_WORK if near_first else _SEARCH_WORK):
            skipped += 1
            continue
        clique = list(clique)  # the pairs' starts are tried twice: each grows its own
        cand = set(nb.of(clique[0]) if cand is None else cand)
        near: dict[tuple, int] | None = None  # per resource, the candidates' weight there
        while True:
            if clique and (not cand or (len(cand) <= _REST_MAX and budget > 0 and not fixed)):
                budget -= sum(len(held[i]) for i in clique) + sum(len(held[i]) for i in cand)
                rest = sorted(cand.union(fixed))
                v = _clique_value(timings, uses, kind, clique, rest, heads, spec, nb.deps)
                if not cand:  # a final clique: also as a sequence
                    path = _sequence_value(timings, uses, kind, clique, heads, paths, gaps)
                    if path > longest[0]:
                        longest = (path, list(clique), label)
                    v = max(v, path)
                if v > best.value:
                    more = f" and {len(rest)} more" if rest else ""
                    best = Bound("clique", v, f"{len(clique)} pairwise conflicting transfers"
                                              f"{more} {label}")
            if not cand:
                break
            if len(cand) > 64 and near_first:  # each one's weight of conflicts among the
                # candidates, resource by resource (not pair by pair: |cand|^2)
                if near is None:  # then kept as the candidates shrink
                    near = defaultdict(int)
                    for k in cand:
                        for key in held[k]:
                            near[key] += w[k]
                j = max(cand, key=lambda j: (w[j] + sum(map(near.__getitem__, opposite(j))), -j))
                spent[near_first] += 2 * sum(len(held[k]) for k in cand)
            elif len(cand) > 64:  # weighing every candidate's neighbourhood costs |cand|^2
                j = max(cand, key=lambda j: (w[j], -j))
                spent[near_first] += len(cand)
            else:
                j = max(cand, key=lambda j: (w[j] + sum(w[k] for k in cand & nb.of(j)), -j))
                spent[near_first] += len(cand) ** 2
            clique.append(j)
            spent[near_first] += len(nb.of(j))
            kept = cand & nb.of(j)
            for k in cand - kept if near is not None else ():
                for key in held[k]:
                    near[key] -= w[k]
            cand = kept
    if skipped:
        cut = f"search cut short: {len(starts) - skipped} of {len(starts)} starts tried"
        best = Bound("clique", best.value, f"{best.where} ({cut})" if best.where else cut)
    value, members, label = longest
    while members and not (enough is not None and enough()):  # fewer can be longer: drop what
        # shortcuts the path (a short send between a read and a write of one element), alike at once
        alike: dict[tuple, list[int]] = defaultdict(list)
        for i in members:
            alike[kind[i], min(timings[i].duration.values())].append(i)
        trials = ([i for i in members if i not in gone] for gone in map(set, alike.values())
                  if len(gone) < len(members) - 1)  # two members at least: one is a chain
        found = next(((v, t) for t in trials
                      if (v := _sequence_value(timings, uses, kind, t, heads, paths, gaps)) > value), None)
        if found is None:
            break
        value, members = found
        if value > best.value:
            best = Bound("clique", value, f"{len(members)} pairwise conflicting transfers {label}, "
                                          "as a sequence")
    return best


# Weighing a clique with its rest costs the resources of both: only while the rest is this
# small, and until this many resources have been weighed (then final cliques only).
_REST_MAX = 64
_REST_WORK = 5_000_000
_PAIR_SEEDS = 20  # cliques grown around the heaviest sends of this many tile pairs
# Candidates looked at over the whole search, beyond which no new start is tried: on phases
# of hundreds of thousands of multicast fragments one start can weigh millions (deterministic,
# unlike a clock: the same phase gets the same bound).
_SEARCH_WORK = 40_000_000
_NEAR_WORK = 4_000_000  # the same for the pairs' starts grown by weight among the candidates


def _clique_value(timings: list[Timing], uses: list[tuple[tuple[tuple, str, int, int], ...]], kind: list[int],
                  clique: list[int], rest: list[int], heads: list[int], spec: Spec,
                  deps: dict[int, set[int]]) -> int:
    """Least head + total core length of the clique + what of the rest's cores runs apart
    at least + least tail (see `clique_bound`). Where two members depend on each other, one
    ends before the other starts: then every core lies between its transfer's start and
    its completion (not in a receive lane's lead before it, nor a write's hazard after)."""
    o = spec.exchange.tx_overhead
    units: dict[tuple[int, bool], int] = defaultdict(int)
    for i in clique:
        units[kind[i], False] += 1
    for i in rest:
        units[kind[i], True] += 1
    at = _spans(uses, units)
    members = {*clique, *rest}
    if any(deps.get(i, set()) & members for i in members):
        at = {u: (max(hi, -o), min(lo, max(end for _, role, _, end in uses[u[0]] if role == "rx")))
              for u, (hi, lo) in at.items()}
    spans = {i: at[kind[i], r] for r, who in ((False, clique), (True, rest)) for i in who}
    total = sum(max(0, min(timings[i].duration.values()) - (spans[i][0] - spans[i][1])) for i in clique)
    head = min(heads[i] + o + hi for i, (hi, _) in spans.items())
    tail = min(max(timings[i].arrival.values()) - o - lo for i, (_, lo) in spans.items())
    return head + total + _rest_union(timings, {i: spans[i] for i in rest}, spec) + tail


def _sequence_value(timings: list[Timing], uses: list[tuple[tuple[tuple, str, int, int], ...]],
                    kind: list[int], clique: list[int], heads: list[int],
                    memo: dict[frozenset, int] | None = None, gaps: dict[tuple, int] | None = None) -> int:
    """The clique in the order of its starts: two members that follow each other are apart by
    at least what keeps their windows apart on every resource they conflict on, one way or
    the other (`_gap`: a write's hazard after a read, but a read may end a route latency
    after the write that follows it begins), so the horizon is at least the least such path's
    length through every member plus its last member's completion. Cores lose what windows
    overlap; a path counts each pair as it must be. Members alike (kind, cheapest payload,
    completion) are one node with a count, and the least path is bounded by its transportation
    relaxation (each member's successor chosen apart, a min-cost flow: exact when the counts
    are large, never above the path)."""
    import networkx as nx

    nodes: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    for i in clique:
        tm = timings[i]
        d = min(tm.duration.values())
        nodes[kind[i], d, max(tm.arrival.values()) + d].append(i)
    if len(nodes) > SEQUENCE_NODES:
        return 0
    seen = frozenset((key, len(who), min(heads[i] for i in who)) for key, who in nodes.items())
    if memo is not None and seen in memo:
        return memo[seen]
    keys = list(nodes)
    gaps = {} if gaps is None else gaps
    g = nx.DiGraph()
    g.add_node("first", demand=-1)
    g.add_node("last", demand=1)
    for n, (k, d, tail) in enumerate(keys):
        g.add_node(("out", n), demand=-len(nodes[k, d, tail]))
        g.add_node(("in", n), demand=len(nodes[k, d, tail]))
        g.add_edge("first", ("in", n), weight=min(heads[i] for i in nodes[k, d, tail]), capacity=1)
        g.add_edge(("out", n), "last", weight=tail, capacity=1)
        for m, (k2, d2, _) in enumerate(keys):
            if m != n or len(nodes[k, d, tail]) > 1:
                if (k, d, k2, d2) not in gaps:
                    gaps[k, d, k2, d2] = _gap(uses[k], d, uses[k2], d2)
                g.add_edge(("out", n), ("in", m), weight=gaps[k, d, k2, d2])
    value = int(nx.network_simplex(g)[0])
    if memo is not None:
        memo[seen] = value
    return value


SEQUENCE_NODES = 40  # most kinds of member a clique is valued as a sequence with (arcs: their square)


def _gap(first: tuple[tuple[tuple, str, int, int], ...], d1: int,
         second: tuple[tuple[tuple, str, int, int], ...], d2: int) -> int:
    """The least S2 - S1 >= 0 of two conflicting transfers (their uses and payloads) that start
    in that order: on each resource they conflict on, the first's window ends before the
    second's begins, or the second's before the first's."""
    mine = {(key, role): (a, b) for key, role, a, b in second}
    apart = []  # per resource: (how far the second starts after the first, or the first after it)
    for key, role, a1, b1 in first:
        if (key, CLASHES[role]) in mine:
            a2, b2 = mine[key, CLASHES[role]]
            apart.append((b1 + d1 - a2, b2 + d2 - a1))
    return next(x for x in sorted({0, *(ahead for ahead, _ in apart)})
                if all(x >= ahead or x <= -behind for ahead, behind in apart))


def _spans(uses: list[tuple[tuple[tuple, str, int, int], ...]], units: dict[tuple[int, bool], int]
           ) -> dict[tuple[int, bool], tuple[int, int]]:
    """Per unit of the clique and its rest (a kind of transfer and whether of the rest, with
    how many members), (hi, lo): its members' cores are [S + o + hi, S + o + lo + d), the
    part of d that lies in every window of the resources they must lie in (`uses`: per kind,
    each resource it holds, an element read or written as one, its role there and its
    window [S + o + start, S + o + end + d): a transmit lane from S, a receive lane from
    rx_lead before the payload, a read over the payload, a write over it and the write
    hazard). Two members' cores are disjoint when both lie in their windows on one resource
    they conflict on, so each keeps the resources it conflicts on with another (a rest
    member: with a clique member) and then, one resource at a time, the whole clique lets go
    of a resource where every pair that conflicts on it also conflicts on one kept: a stream
    of sends from one tile into a tile pair, whose lanes and written elements all lie a route
    latency after the source, then keeps its receive side only, and each core is its whole
    payload."""
    roles: dict[tuple, int] = defaultdict(int)  # (resource, role, of the rest) -> members
    for (k, r), n in units.items():
        for key, role, _, _ in uses[k]:
            roles[key, role, r] += n
    kept: dict[tuple[int, bool], dict[tuple, tuple[str, int, int]]] = {}
    holders: dict[tuple, list[tuple[int, bool]]] = defaultdict(list)
    for u in units:
        k, r = u
        mine = kept[u] = {}
        for key, role, start, end in uses[k]:
            other = CLASHES[role]
            if roles[key, other, False] + (0 if r else roles[key, other, True]) > (other == role and not r):
                mine[key] = (role, start, end)
                holders[key].append(u)
    gain: dict[tuple, int] = defaultdict(int)  # how much the spreads shrink, each resource let go alone
    for u, ks in kept.items():
        if len(ks) > 1:
            starts = sorted((a for _, a, _ in ks.values()), reverse=True)
            ends = sorted(b for _, _, b in ks.values())
            for key, (_, a, b) in ks.items():
                gain[key] += units[u] * ((starts[0] - starts[1] if a == starts[0] else 0)
                                         + (ends[1] - ends[0] if b == ends[0] else 0))
    for key in sorted((k for k, g in gain.items() if g > 0), key=lambda k: (-gain[k], k)):
        alike: dict[tuple, int] = defaultdict(int)  # (of the rest, kept resources and roles) -> members
        for u in holders[key]:
            if key in kept[u]:
                alike[u[1], frozenset((k, role) for k, (role, _, _) in kept[u].items())] += units[u]
        sigs = list(alike)
        if all(len(sig) > 1 for _, sig in sigs) and all(
                _covered(a, b, key) for n, a in enumerate(sigs) for b in sigs[n:]
                if (a != b or alike[a] > 1) and not (a[0] and b[0])):
            for u in holders[key]:
                kept[u].pop(key, None)
    return {u: (max(a for _, a, _ in ks.values()), min(b for _, _, b in ks.values())) if ks else (0, 0)
            for u, ks in kept.items()}


def _covered(a: tuple[bool, frozenset], b: tuple[bool, frozenset], key: tuple) -> bool:
    """Members of kinds a and b (of the rest?, their kept resources and roles) that conflict
    on `key` (a lane: always; an element: one reads where the other writes) also conflict on
    another resource both keep."""
    ra, rb = dict(a[1]), dict(b[1])
    clash = lambda k: CLASHES[ra[k]] == rb[k]  # noqa: E731
    return not clash(key) or any(k != key and k in rb and clash(k) for k in ra)


def _rest_union(timings: list[Timing], cores: dict[int, tuple[int, int]], spec: Spec) -> int:
    """A length the union of these cores [S + o + hi, S + o + lo + d) cannot be below. Each
    core holds the part of the transfer's transmit window after o + hi (a core that starts
    with a receive lane's lead may start before the send: the whole window) and of its
    receive window on a tile x after max(a_x - lead, o + hi): those parts are disjoint per
    lane, and a pair's two transmit lanes carry at most two at any time, a paired send
    counting twice."""
    ex = spec.exchange
    o = ex.tx_overhead
    lane: dict[tuple, int] = defaultdict(int)
    pair: dict[tuple[int, int], int] = defaultdict(int)
    single = 0
    for i, (hi, lo) in cores.items():
        tm = timings[i]
        t = tm.transfer
        d = min(tm.duration.values())
        single = max(single, d + lo - hi)
        hi = max(hi, -o)  # the transmit window starts at S
        lane[("tx", t.src)] += max(0, d - hi)
        for x, a in tm.arrival.items():
            lane[("rx", x)] += max(0, min(a, o + lo) + d - max(a - ex.rx_lead, o + hi))
        if tm.partner is not None:
            key = (min(t.src, tm.partner), max(t.src, tm.partner))
            pair[key] += min((2 if w == "paired" else 1) * max(0, dw - hi)
                             for w, dw in tm.duration.items())
    return max([single, *lane.values(), *(_ceil_div(v, 2) for v in pair.values())])


def all_bounds(inst: Instance, enough: Callable[[], bool] | None) -> list[Bound]:
    """Every named bound; the group and clique searches, the slow ones, end early when
    `enough()`. No default: a solver's stage passes its budget's (`budget.is_set`), or
    Ctrl-C would wait for the searches (split's parts did, 3.5 s a part); None runs them whole."""
    phase, spec, timings = inst.phase, inst.spec, inst.timings
    return [endpoint_bound(timings, spec), pair_bound(timings, spec),
            element_bound(timings, spec), matching_bound(timings, spec), dependency_bound(timings, phase),
            heads_tails_bound(timings, spec), group_bound(timings, spec, enough=enough),
            clique_bound(timings, spec, enough=enough)]


def best_bound(bounds: list[Bound]) -> Bound:
    return max(bounds, key=lambda b: b.value, default=Bound("none", 0, ""))
