"""The program bound (`ipuopt.layout.program_bound`) of a workload: over every plan, or for
the plans named, with the time it took and how far its pricing got.

    .venv/bin/python benchmarks/program_bound.py siglip-mlp [--spec gc200] [--grain G]
        [--upper CYCLES] [--time-limit 120] [--plan gemm1=LABEL,gemm2=LABEL ...]

Prints one row per bound: plan (every, or the one named), bound, the least floor of the
candidates left out of the model (`outside`, which caps the bound), proven, rounds, phases and
moves priced, candidates held, seconds; and for a named plan the boundaries as the bound
counts them.
"""

from __future__ import annotations

import argparse

from ipuopt.cli.terminal import ProgressLines
from ipuopt.layout.program_bound import program_bound
from ipuopt.params import SolveParams
from ipuopt.spec import load_spec
from ipuopt.workloads.fragments import parse_grain
from ipuopt.workloads.workload import load_workload


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload")
    ap.add_argument("--spec", default="gc200")
    ap.add_argument("--grain", default=None)
    ap.add_argument("--upper", type=int, default=None, help="a program already found (cycles)")
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--plan", action="append", default=[], help="op=LABEL,op=LABEL (repeatable)")
    ap.add_argument("--verbose", action="store_true", help="the bound's progress lines on stderr, timed")
    args = ap.parse_args()
    wl, spec = load_workload(args.workload), load_spec(args.spec)
    grain = parse_grain(args.grain, spec)
    plans = [None, *({k: v for k, v in (x.split("=", 1) for x in p.split(","))} for p in args.plan)]
    print(f"{'plan':<60} {'bound':>9} {'outside':>8} {'proven':>6} {'rounds':>6} {'priced':>6} {'held':>12} "
          f"{'seconds':>8}")
    for plan in plans:
        with ProgressLines(not args.verbose, "program bound") as lines:  # the command line's own lines
            pb = program_bound(wl, spec, grain, args.upper if plan is None else None,
                               params=SolveParams(args.time_limit, workers=2, seed=0), fixed=plan,
                               say=lambda m: lines({"task": m}))
        name = "every plan" if plan is None else ",".join(f"{k}={v}" for k, v in plan.items())
        held = "/".join(str(v) for v in pb.candidates.values())
        print(f"{name:<60} {pb.value:>9} {str(pb.outside or '-'):>8} {str(pb.proven):>6} {pb.rounds:>6} "
              f"{pb.moves_priced:>6} {held:>12} {pb.seconds:>8.1f}")
        if plan is not None:
            for t in pb.terms:
                print(f"    {t['phase']:<28} compute {t['compute']:>7} sync {t['sync']:>4} "
                      f"exchange {t['exchange']:>7}")


if __name__ == "__main__":
    main()
