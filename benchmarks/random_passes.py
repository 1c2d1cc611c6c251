"""Forward-backward passes (`justify`) on the random phase: where they settle from each list
rule's schedule and from a random order, with and without the dependencies, and what holds
the critical path of the result.

    .venv/bin/python benchmarks/random_passes.py [--transfers 60000] [--passes 40] [--no-trace]
        [--format-switch N] [--only-first] [--profile]

Prints per start: the first schedule's horizon, the best after `--passes` passes, seconds;
then the same from `longest` on the phase without dependencies; then the critical path of
the phase's last schedule, traced back from its last transfer through what held each step
(a dependency, a lane or memory element, a receive lane's format switch), in cycles.
`--format-switch N` runs it on gc200 with that format switch (0: none); `--only-first`
keeps the first start (`longest`) of each variant; `--profile` prints, for the first
start's last schedule, how busy the receive lanes are over time, what starts when, and the
lanes that end last beside their own bounds (is the horizon held by the heaviest lanes, or
by all of them at once?).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict
from dataclasses import replace

import numpy as np

from ipuopt.exchange.bounds import receive_lane_bounds
from ipuopt.exchange.greedy import priority_order
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.justify import one_pass
from ipuopt.exchange.packed import Packed, packed
from ipuopt.exchange.random_phase import random_phase
from ipuopt.spec import load_spec


def passes(pk: Packed, mirror: Packed, keys: np.ndarray, n: int) -> tuple[int, int, np.ndarray, np.ndarray]:
    """The first schedule's horizon, the best after n passes, and the last schedule."""
    starts, slots = pk.place(keys)
    end = starts + pk.end(slots)
    first = best = int(end.max())
    for _ in range(n):
        back, (h, starts, slots), end = one_pass(pk, mirror, end)
        best = min(best, h, back[0])
    return first, best, starts, slots


def rule_keys(inst: Instance, rule: str) -> np.ndarray:
    n = len(inst.timings)
    if rule == "random":
        return np.random.default_rng(0).random(n)
    keys = np.empty(n)
    keys[priority_order(inst.timings, inst.spec, rule)] = np.arange(n)
    return keys


def critical_path(pk: Packed, starts: np.ndarray, slots: np.ndarray) -> tuple[int, Counter]:
    """Steps and cycles by what held each step, from the transfer that ends last back to 0."""
    a = pk.arrays
    end = starts + pk.end(slots)
    holders: dict[int, list[tuple[int, int]]] = defaultdict(list)  # set -> (interval end, transfer)
    for i in range(len(starts)):
        o = 2 * i + slots[i]
        for c in range(a["cm_ptr"][o], a["cm_ptr"][o + 1]):
            holders[int(a["cm_set"][c])].append((int(starts[i] + a["cm_off"][c] + a["cm_len"][c]), i))
    held: Counter = Counter()
    t, steps = int(np.argmax(end)), 0
    while starts[t] > 0:
        s, o = int(starts[t]), 2 * t + slots[t]
        preds = a["pred"][a["pred_ptr"][t]:a["pred_ptr"][t + 1]]
        if len(preds) and int(end[preds].max()) == s:
            p = int(preds[np.argmax(end[preds])])
            held["dependency"] += s - int(starts[p])
        else:
            by = None
            for c in range(a["ck_ptr"][o], a["ck_ptr"][o + 1]):
                at = s + int(a["ck_off"][c]) - int(a["ck_margin"][c])
                for e, j in holders[int(a["ck_set"][c])]:
                    if j != t and e == at and (by is None or starts[j] > starts[by[0]]):
                        by = (j, "format switch" if a["ck_margin"][c] else "lane or element")
            if by is None:
                held["nothing (idle)"] += 1
                break
            p = by[0]
            held[by[1]] += s - int(starts[p])
        t, steps = p, steps + 1
    return steps, held


def profile(inst: Instance, pk: Packed, starts: np.ndarray, slots: np.ndarray, bucket: int = 200) -> None:
    """Receive lanes' busy share and the mean fanout of what starts, per `bucket` cycles;
    the ten lanes that end last."""
    lead = inst.spec.exchange.rx_lead
    busy: Counter = Counter()
    fanout: dict[int, list[int]] = defaultdict(list)  # bucket of the start -> destinations
    ends: dict[int, int] = defaultdict(int)
    for i, tm in enumerate(inst.timings):
        d = tm.duration[pk.widths[i][slots[i]]]
        fanout[int(starts[i]) // bucket].append(len(tm.arrival))
        for x, a in tm.arrival.items():
            lo, hi = int(starts[i]) + a - lead, int(starts[i]) + a + d
            ends[x] = max(ends[x], hi)
            for b in range(max(lo, 0) // bucket, (hi - 1) // bucket + 1):
                busy[b] += min(hi, (b + 1) * bucket) - max(lo, b * bucket)
    lanes = inst.spec.tiles * bucket
    print(f"receive lanes busy per {bucket} cycles (% of all tiles'): "
          + " ".join(f"{100 * busy[b] // lanes}" for b in range(max(busy) + 1)))
    print(f"mean fanout of the transfers starting in each {bucket} cycles: "
          + " ".join(f"{np.mean(fanout[b]):.1f}" for b in sorted(fanout)))
    bound = receive_lane_bounds(inst.timings, inst.spec)
    last = sorted(ends, key=lambda x: -ends[x])[:10]
    print("lanes that end last (tile: end / its own bound): "
          + ", ".join(f"{x}: {ends[x]} / {bound[x]}" for x in last)
          + f"; the heaviest lane's bound: {max(bound.values())}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transfers", type=int, default=60000)
    ap.add_argument("--passes", type=int, default=40)
    ap.add_argument("--no-trace", action="store_true", help="skip the critical path")
    ap.add_argument("--format-switch", type=int, default=None, help="gc200 with this format switch")
    ap.add_argument("--only-first", action="store_true", help="one start per variant: longest")
    ap.add_argument("--profile", action="store_true", help="receive lanes over time, last lanes")
    args = ap.parse_args()
    spec = load_spec("gc200")
    if args.format_switch is not None:
        spec = replace(spec, exchange=replace(spec.exchange, format_switch=args.format_switch))
    print(f"{'phase':<18} {'start':<8} {'first':>6} {'passes':>6} {'best':>6} {'time':>6}", flush=True)
    last = None
    for variant, p_dep in (("as is", 0.1), ("no dependencies", 0.0)):
        inst = Instance(random_phase(spec, args.transfers, seed=0, p_dep=p_dep), spec)
        pk = packed(inst.timings, spec)
        mirror = pk.mirrored()
        rules = ("longest", "load", "input", "reverse", "random")
        rules = rules if variant == "as is" and not args.only_first else rules[:1]
        for rule in rules:
            t0 = time.perf_counter()
            first, best, starts, slots = passes(pk, mirror, rule_keys(inst, rule), args.passes)
            print(f"{variant:<18} {rule:<8} {first:>6} {args.passes:>6} {best:>6} "
                  f"{time.perf_counter() - t0:>5.0f}s", flush=True)
            if last is None:
                last = (pk, starts, slots)
                if args.profile:
                    profile(inst, pk, starts, slots)
    if not args.no_trace and last is not None:
        steps, held = critical_path(*last)
        print(f"critical path of the first schedule above: {steps} steps; cycles held by "
              + ", ".join(f"{k} {v}" for k, v in held.most_common()))


if __name__ == "__main__":
    main()
