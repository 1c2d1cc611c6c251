"""Fragment counts: each phase of a workload at box level, as contiguous runs and cut at
grains, beside what the reference compiler emitted for SigLIP.

    .venv/bin/python benchmarks/fragments.py [--workloads siglip-mlp,siglip-attention]
                                             [--spec gc200] [--grains box,runs,256,32]

Per phase and grain: sends (transfers; a multicast is one), receives and the median payload
cycles of a receive (ordinary width). Deterministic: anyone gets the same table.
"""

from __future__ import annotations

import argparse
import statistics

from ipuopt.exchange.timing import payload_cycles
from ipuopt.spec import load_spec
from ipuopt.workloads.fragments import parse_grain
from ipuopt.workloads.phases import generate
from ipuopt.workloads.workload import load_workload

# The reference compiler's counts for SigLIP (public figures from its research log).
REFERENCE = {
    ("siglip-mlp", "gemm1-input"): "807 sends / 1,614 receives",
    ("siglip-mlp", "gemm1-reduction"): "6,456",
    ("siglip-mlp", "gemm2-redistribution"): "3,931 sends / 55,116 receives",
    ("siglip-mlp", "gemm2-reduction"): "155,880 (median receive 64 cycles)",
    **{("siglip-attention", f"{p}proj-{k}"): "58,508-62,342 per Q/K/V preparation phase"
       for p in "qkv" for k in ("input", "reduction")},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="siglip-mlp,siglip-attention")
    ap.add_argument("--spec", default="gc200")
    ap.add_argument("--grains", default="box,runs,256,32")
    args = ap.parse_args()
    spec = load_spec(args.spec)
    grains = args.grains.split(",")
    heads = " | ".join(f"{g}: sends / receives / median d" for g in grains)
    print(f"| workload | phase | {heads} | reference |")
    print("|---|---|" + "---:|" * len(grains) + "---|")
    for name in args.workloads.split(","):
        wl = load_workload(name)
        cells: dict[str, list[str]] = {}
        for g in grains:
            for gp in generate(wl, spec, grain=parse_grain(g, spec)).phases:
                ts = gp.phase.transfers
                ds = [payload_cycles(t.words, spec.exchange.ordinary_words_per_cycle)
                      for t in ts for _ in t.dst]
                cells.setdefault(gp.phase.name, []).append(
                    f"{len(ts):,} / {len(ds):,} / {statistics.median(ds) if ds else 0:g}")
        for phase, row in cells.items():
            print(f"| {name} | {phase} | {' | '.join(row)} | {REFERENCE.get((name, phase), '')} |",
                  flush=True)


if __name__ == "__main__":
    main()
