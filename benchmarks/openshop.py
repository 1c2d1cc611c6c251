"""Open-shop benchmark: every instance of ../shared/data/openshop as an exchange phase.

    .venv/bin/python benchmarks/openshop.py [--time-limit 60] [--workers 2] [--only ta]
                                            [--prove-split 1]   # the plain CP-SAT model
                                            [--questions]  # the decision questions asked, in order
                                            [--decide T [--no-mirror]]  # one question per instance

Prints one row per instance (bound, greedy, exact, best known, status, time)
and a summary: reached best known, proved optimal, median time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from ortools.sat.python import cp_model
from public_data import DEFAULT_ROOT, index_rows

from ipuopt.backends.cpsat import race
from ipuopt.budget import Budget
from ipuopt.exchange.cpsat import build_model
from ipuopt.exchange.openshop import openshop_phase, read_openshop
from ipuopt.exchange.solve import solve
from ipuopt.exchange.timing import phase_timings
from ipuopt.params import SolveParams
from ipuopt.spec import load_spec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", default="", help="substring of instance names to keep")
    ap.add_argument("--data", type=Path, default=DEFAULT_ROOT / "openshop",
                    help="folder with the instances and INDEX.tsv (default: %(default)s)")
    ap.add_argument("--prove-split", type=float, default=None,
                    help="share of the time for optimising before refuting shorter horizons "
                         "(default: cpsat's, 0.2 on open shops); 1 gives the plain CP-SAT model")
    ap.add_argument("--questions", action="store_true",
                    help="print each instance's decision questions (T: refuted 'none', 'open', "
                         "or the horizon found)")
    ap.add_argument("--decide", type=int, default=None,
                    help="ask only 'a schedule of horizon at most T?' of each instance (raced over "
                         "--workers seeds, as the proof stage asks it)")
    ap.add_argument("--no-mirror", action="store_true", help="with --decide: keep mirror pairs")
    args = ap.parse_args()
    spec = load_spec("openshop")
    rows = index_rows(args.data, "openshop")
    rows = [r for r in rows if args.only in r["name"]]
    if args.decide is not None:
        decide(args, spec, rows)
        return
    print(f"{'instance':<16} {'set':<9} {'n x m':>6} {'bound':>6} {'greedy':>7} {'exact':>6} "
          f"{'best':>6} {'status':<9} {'time':>7}", flush=True)
    out = []
    for r in rows:
        path = args.data / r["set"] / f"{r['name']}.txt"
        phase = openshop_phase(read_openshop(path), r["name"])
        t0 = time.perf_counter()
        split = {} if args.prove_split is None else {"prove_split": args.prove_split}
        res = solve(phase, spec, "cpsat", {"time_limit": args.time_limit, "workers": args.workers, **split})
        dt = time.perf_counter() - t0
        s = res
        best = int(r["best_known"])
        out.append((r, s, dt))
        print(f"{r['name']:<16} {r['set']:<9} {r['jobs'] + 'x' + r['machines']:>6} "
              f"{s.lower_bound:>6} {s.extras['greedy_horizon']:>7} {s.value:>6} {best:>6} "
              f"{s.status:<9} {dt:>6.1f}s", flush=True)
        if args.questions and s.extras.get("probes"):
            print("    questions: " + ", ".join(f"{t}: {a}" for t, a in s.extras["probes"]), flush=True)
    n = len(out)
    reached = sum(s.value <= int(r["best_known"]) for r, s, _ in out)
    better = [r["name"] for r, s, _ in out if s.value < int(r["best_known"])]
    optimal = sum(s.status == "optimal" for _, s, _ in out)
    print(f"\n{n} instances, time limit {args.time_limit:g}s, {args.workers} workers")
    print(f"reached best known: {reached}/{n}; proved optimal: {optimal}/{n} "
          f"({100 * optimal / max(n, 1):.1f}%); median time "
          f"{statistics.median(dt for *_, dt in out) if out else 0:.2f}s")
    for group in sorted({r["set"] for r, _, _ in out}):
        g = [(r, s) for r, s, _ in out if r["set"] == group]
        print(f"  {group:<9} optimal {sum(s.status == 'optimal' for _, s in g)}/{len(g)}, "
              f"best known reached {sum(s.value <= int(r['best_known']) for r, s in g)}/{len(g)}")
    if better:
        print(f"below the listed best known: {', '.join(better)}")
    sys.exit(0)


def decide(args: argparse.Namespace, spec, rows: list[dict[str, str]]) -> None:
    """One decision question per instance: refuted, a schedule found, or open at the limit."""
    for r in rows:
        phase = openshop_phase(read_openshop(args.data / r["set"] / f"{r['name']}.txt"), r["name"])
        em = build_model(spec, phase_timings(phase, spec), args.decide, break_mirror=not args.no_mirror)
        em.model.clear_objective()
        t0 = time.perf_counter()
        _, code, _ = race([em.model], SolveParams(workers=args.workers), Budget(), args.time_limit)
        answer = {cp_model.INFEASIBLE: "refuted", cp_model.OPTIMAL: "schedule found",
                  cp_model.FEASIBLE: "schedule found"}.get(code, "open")
        print(f"{r['name']:<16} T = {args.decide}: {answer} in {time.perf_counter() - t0:.1f}s "
              f"({args.workers} seeds{', mirror pairs kept' if args.no_mirror else ''})", flush=True)


if __name__ == "__main__":
    main()
