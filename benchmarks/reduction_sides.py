"""Which side of a reduction's gap is weak: proofs on its binding group's first rounds.

    .venv/bin/python benchmarks/reduction_sides.py PHASE [--rounds 1,2,3] [--time-limit 60] [--tile N]
        [--paired]

A reduction's tiles fall into groups that exchange partials among themselves (`tile_groups`).
Take the group of the tile the phase's best bound names, and in it the first k fragments
of every stream (one tile's fragments to another): a sub-phase, so its optimum is a lower
bound on the phase's, and small enough for CP-SAT to prove. Per k: the sub-phase's best
bound of ours, CP-SAT's horizon and proven bound (one worker, seed 0). Then the whole
group: its bound, the greedy, CP-SAT and `periodic` in the same time. When the proven
optimum per round grows faster than our bound per round, the bound is weak on this group;
when the group's schedules stay above what the rounds' optimum extrapolates to, so is the
schedule. With `--paired`, the group also holds the groups its tiles' pair partners are in
(a paired send borrows the partner's lane: what one group sends slows the other).
"""

from __future__ import annotations

import argparse
import re
import time
from collections import defaultdict

from ipuopt.budget import Budget
from ipuopt.exchange.bounds import all_bounds, best_bound, receive_lane_bounds
from ipuopt.exchange.colour import tile_groups
from ipuopt.exchange.cpsat import solve_cpsat
from ipuopt.exchange.greedy import best_greedy
from ipuopt.exchange.instance import Instance
from ipuopt.exchange.periodic import solve_periodic
from ipuopt.exchange.phase import Phase, load_phase
from ipuopt.params import SolveParams


def _instance(phase: Phase, spec, transfers: list) -> Instance:
    inst = Instance(Phase(spec_ref=spec.name, transfers=transfers, name=phase.name), spec)
    inst.bound = best_bound(all_bounds(inst, None)).value
    return inst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("phase")
    ap.add_argument("--rounds", default="1,2,3", help="comma-separated k values")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--tile", type=int, help="a tile of the group (default: the one the best bound names)")
    ap.add_argument("--paired", action="store_true", help="with the groups the pair partners' lanes link")
    args = ap.parse_args()
    phase, spec = load_phase(args.phase)
    whole = Instance(phase, spec)
    named = best_bound(all_bounds(whole, None))
    named_tile = re.search(r"tiles? (\d+)", named.where)
    lanes = receive_lane_bounds(whole.timings, spec)
    tile = args.tile if args.tile is not None else int(named_tile.group(1)) if named_tile else max(
        lanes, key=lambda x: (lanes[x], -x))  # a bound that names no tile: the busiest receive lane
    group = next(g for g in tile_groups(whole.timings, paired=args.paired) if any(
        tile == x for i in g for x in (whole.timings[i].transfer.src, *whole.timings[i].transfer.dst)))
    transfers = [whole.timings[i].transfer for i in group]
    tiles = sorted({t.src for t in transfers})
    print(f"{phase.name}: bound {named.value} ({named.name}, {named.where}); group of tiles "
          f"{tiles[:8]}{'...' if len(tiles) > 8 else ''}: {len(transfers)} transfers")
    params = SolveParams.of({"time_limit": args.time_limit, "workers": 1, "seed": 0})
    print(f"{'k':>5} {'transfers':>9} {'bound':>6} {'cpsat':>6} {'proven':>7} {'status':>9} {'time':>6}")
    for k in (int(x) for x in args.rounds.split(",")):
        seen: dict[tuple, int] = defaultdict(int)
        first = []
        for t in transfers:
            seen[t.src, t.dst] += 1
            if seen[t.src, t.dst] <= k:
                first.append(t)
        sub = _instance(phase, spec, first)
        t0 = time.perf_counter()
        res = solve_cpsat(sub, best_greedy(sub)[:2], params, Budget(params.time_limit))
        print(f"{k:>5} {len(first):>9} {sub.bound:>6} {res.value:>6} {res.bound or '-':>7} {res.status:>9} "
              f"{time.perf_counter() - t0:>5.1f}s", flush=True)
    inst = _instance(phase, spec, transfers)
    hint = best_greedy(inst)[:2]
    cp = solve_cpsat(inst, hint, params, Budget(params.time_limit))
    per = solve_periodic(inst, hint, params, Budget(params.time_limit))
    print(f"whole group: bound {inst.bound}, greedy {inst.horizon(hint)}, cpsat {cp.value} (proven "
          f"{cp.bound}), periodic {per.value} (periods {per.extras.get('periods')})")


if __name__ == "__main__":
    main()
