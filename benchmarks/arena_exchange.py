"""What buffer placement does to an exchange phase's horizon.

    .venv/bin/python benchmarks/arena_exchange.py [--workload siglip-mlp] [--phase gemm2-redistribution]
                                                  [--time-limit 60] [--exact-time 0]

Generates the workload's phases (gc200, the issue's layouts for the MLP), builds its
arena with conflict weights, places it three ways (the generator's first-fit
default, the 4 KiB shift baseline, and CP-SAT minimising conflict weight), and
schedules the re-addressed phase with greedy (and CP-SAT when --exact-time > 0).
"""

from __future__ import annotations

import argparse

from ipuopt.arena.greedy import shift_baseline
from ipuopt.arena.problem import arena_from_dict
from ipuopt.arena.solve import place
from ipuopt.arena.validate import validate_placement
from ipuopt.exchange.solve import solve
from ipuopt.spec import load_spec
from ipuopt.workloads.arena_export import arena_document, default_offsets, readdress
from ipuopt.workloads.gemm import GemmLayout
from ipuopt.workloads.phases import generate
from ipuopt.workloads.workload import load_workload

LAYOUTS = {"siglip-mlp": {"gemm1": "4x92x4/4x1", "gemm2": "4x24x15/15x1"}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="siglip-mlp")
    ap.add_argument("--spec", default="gc200")
    ap.add_argument("--phase", default="gemm2-redistribution")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds for the placement")
    ap.add_argument("--exact-time", type=float, default=0.0, help="seconds of CP-SAT per schedule")
    args = ap.parse_args()
    spec = load_spec(args.spec)
    wl = load_workload(args.workload)
    chosen = {k: GemmLayout.parse(v, spec) for k, v in LAYOUTS.get(wl.name, {}).items()}
    gen = generate(wl, spec, chosen)
    gp = next(p for p in gen.phases if p.phase.name == args.phase)
    arena = arena_from_dict(arena_document(gen))
    default = default_offsets(gen)
    shifted, _ = shift_baseline(arena, default)
    aware = place(arena, "conflicts", "cpsat", {"time_limit": args.time_limit})
    print(f"{wl.name} on {spec.name}: arena of {len(arena.buffers)} buffers, "
          f"{len(arena.conflicts)} conflict pairs; phase {gp.phase.name}: "
          f"{len(gp.phase.transfers)} transfers")
    print(f"{'placement':<16} {'conflicts':>10} {'peak':>8} {'greedy':>8} {'exact':>8}")
    for name, offsets in (("default", default), ("4KiB-shift", shifted),
                          ("conflict-aware", aware.solution.offsets)):
        if offsets is None:
            print(f"{name:<16} no placement ({aware.reason})")
            continue
        rep = validate_placement(arena, offsets)
        phase = readdress(gen, gp, offsets)
        g = solve(phase, spec, "greedy").value
        x = (solve(phase, spec, "cpsat", {"time_limit": args.exact_time}).value
             if args.exact_time else "-")
        print(f"{name:<16} {rep.conflicts:>10} {rep.peak:>8} {g:>8} {x:>8}"
              + ("" if rep.ok else f"  INVALID: {rep.violations[:2]}"))


if __name__ == "__main__":
    main()
