"""Scaling benchmark: greedy, bounds and validator on a large random phase; optionally
the monolithic CP-SAT model's size and build cost, and LNS horizon over time.

    .venv/bin/python benchmarks/scale.py [--transfers 60000] [--spec gc200] [--fanout 4]
                                         [--monolithic] [--lns SECONDS]
"""

from __future__ import annotations

import argparse
import resource
import time

from ipuopt.exchange.bounds import all_bounds, best_bound
from ipuopt.exchange.greedy import greedy_schedule
from ipuopt.exchange.instance import Instance, horizon_of
from ipuopt.exchange.random_phase import random_phase
from ipuopt.exchange.schedule import Schedule
from ipuopt.exchange.simulate import simulate
from ipuopt.exchange.solve import solve
from ipuopt.exchange.timing import phase_timings
from ipuopt.exchange.validate import validate
from ipuopt.spec import load_spec


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transfers", type=int, default=60000)
    ap.add_argument("--spec", default="gc200")
    ap.add_argument("--fanout", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--monolithic", action="store_true", help="build the full CP-SAT model")
    ap.add_argument("--lns", type=float, default=0.0, help="seconds of LNS after greedy")
    args = ap.parse_args()
    spec = load_spec(args.spec)
    t = time.perf_counter()
    phase = random_phase(spec, args.transfers, seed=args.seed, max_fanout=args.fanout,
                         max_words=256, p_dep=0.0005)
    endpoints = sum(len(x.dst) for x in phase.transfers)
    print(f"phase: {len(phase.transfers)} transfers, {endpoints} destination endpoints on "
          f"{spec.name} (generated in {time.perf_counter() - t:.1f}s)")
    t = time.perf_counter()
    timings = phase_timings(phase, spec)
    bounds = all_bounds(Instance(phase, spec, timings), None)
    tb = time.perf_counter() - t
    t = time.perf_counter()
    starts, widths = greedy_schedule(phase, spec, "load", timings)
    tg = time.perf_counter() - t
    h = horizon_of(timings, starts, widths)
    t = time.perf_counter()
    report = validate(phase, spec, Schedule(starts, widths))
    tv = time.perf_counter() - t
    t = time.perf_counter()
    sim = simulate(phase, spec, Schedule(starts, widths))
    ts = time.perf_counter() - t
    lb = best_bound(bounds)
    print(f"{'step':<12} {'time':>8}  result")
    print(f"{'bounds':<12} {tb:>7.2f}s  " + ", ".join(f"{b.name} {b.value}" for b in bounds))
    print(f"{'greedy':<12} {tg:>7.2f}s  horizon {h}, gap {(h - lb.value) / h:.1%} to {lb.value}")
    print(f"{'validator':<12} {tv:>7.2f}s  {'ok' if report.ok else report.violations[:3]}")
    print(f"{'simulator':<12} {ts:>7.2f}s  {'ok' if sim.ok else sim.breach}, horizon {sim.horizon}, "
          f"critical chain {len(sim.chain)} steps")
    print(f"peak memory {rss_mib():.0f} MiB")
    if args.monolithic:
        from ipuopt.exchange.cpsat import build_model
        t = time.perf_counter()
        em = build_model(spec, timings, h, lb.value)
        tm = time.perf_counter() - t
        proto = em.model.proto
        print(f"monolithic CP-SAT: {len(proto.variables)} variables, {len(proto.constraints)} "
              f"constraints ({em.stats}), built in {tm:.1f}s, peak memory {rss_mib():.0f} MiB")
        del em, proto
    if args.lns:
        res = solve(phase, spec, "lns", {"time_limit": args.lns, "workers": 2, "seed": args.seed})
        s = res
        print(f"lns {args.lns:g}s: horizon {s.value} (greedy {s.extras['greedy_horizon']}, "
              f"bound {s.lower_bound}), {s.extras['lns_steps']} steps, "
              f"{s.extras['lns_improvements']} improvements, peak memory {rss_mib():.0f} MiB")
        print("horizon over time (s, horizon): "
              + ", ".join(f"({x}, {y})" for x, y in s.extras["lns_history"]))


if __name__ == "__main__":
    main()
