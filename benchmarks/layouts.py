"""Layout selection at full size: the problem built from a workload (every GEMM layout priced),
then the beam baseline and the exact plans, with their times.

    .venv/bin/python benchmarks/layouts.py [--spec gc200] [--time-limit 60] [WORKLOAD ...]
"""

from __future__ import annotations

import argparse
import time

from ipuopt.layout.build import build_problem
from ipuopt.layout.solve import plan
from ipuopt.spec import load_spec
from ipuopt.workloads.workload import load_workload


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workloads", nargs="*", default=["siglip-mlp", "siglip-attention"])
    ap.add_argument("--spec", default="gc200")
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    spec = load_spec(args.spec)
    params = {"time_limit": args.time_limit, "workers": 1, "seed": 0}
    print(f"{'workload':<18} {'spec':<8} {'candidates':>10} {'kept':>6} {'rows':>6} {'build':>7} "
          f"{'beam':>8} {'milp':>8} {'status':<8} {'time':>6} {'cpsat':>8} {'status':<8} {'time':>6} "
          f"{'beam gap':>8}")
    for name in args.workloads:
        t0 = time.perf_counter()
        problem, doc = build_problem(load_workload(name), spec)
        built = time.perf_counter() - t0
        kept = doc["kept"]
        m = plan(problem, "milp", params).to_dict()
        c = plan(problem, "cpsat", params).to_dict()
        beam = m["beam"]["cycles"]
        gap = (beam - m["cycles"]) / m["cycles"] if m["cycles"] else float("nan")
        print(f"{name:<18} {spec.name:<8} {sum(kept['enumerated'].values()):>10} "
              f"{sum(kept['kept'].values()):>6} {kept['redistribution_rows']:>6} {built:>6.1f}s "
              f"{beam:>8} {m['cycles']:>8} {m['status']:<8} {m['runtime_s']:>5.1f}s "
              f"{c['cycles']:>8} {c['status']:<8} {c['runtime_s']:>5.1f}s {100 * gap:>7.2f}%", flush=True)


if __name__ == "__main__":
    main()
