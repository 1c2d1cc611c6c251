"""The fidelity table: each mechanism of the reference compiler beside ipuopt's figure, every
ipuopt figure measured here, now, by the command named in its row (or its library twin).

    .venv/bin/python benchmarks/fidelity.py [--place-limit 600] [--skip SLOW,...]

Rows (gc200): memory elements (tile 368 as placed and shifted, CP-SAT), the write hazard and
the boundary overhead (the spec), fragments at 256 B and the greedy at that size (SigLIP
MLP's final reduction), the two scheduling habits (that reduction whole and at 256 B), the
arena shift (`place --reschedule` on the reference's layouts, whole boxes, against the whole
program as `run` gives it), and the Q/K/V preparation (SigLIP attention with and without).
The reference's figures are the ones its log gave (issue 47). `--skip place,attention`
leaves out the two slow rows (~3 and ~4 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ipuopt.exchange.greedy import best_greedy
from ipuopt.exchange.instance import Instance, horizon_of
from ipuopt.exchange.timing import phase_timings
from ipuopt.spec import load_spec
from ipuopt.workloads.phases import generate, phase_stats
from ipuopt.workloads.workload import load_workload

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "from ipuopt.entry import main; main()"]
REFERENCE_LAYOUTS = {"gemm1": "4x92x4/4x1", "gemm2": "4x24x15/15x1"}
RELEASE = frozenset({"release_after_receives"})
RESERVE = frozenset({"pair_whenever_possible", "paired_reserves_partner"})


def cli(*args: str, cwd: Path) -> dict:
    """`ipuopt ARGS --json` (its document)."""
    done = subprocess.run([*CLI, *args, "--json"], cwd=cwd, capture_output=True, text=True)
    if done.returncode not in (0, 2):
        raise SystemExit(f"ipuopt {' '.join(args)} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def row(mechanism: str, reference: str, ours: str, command: str) -> None:
    print(f"| {mechanism} | {reference} | {ours} | `{command}` |", flush=True)


def greedy(phase, spec, habits=frozenset()) -> tuple[int, float]:
    t0 = time.perf_counter()
    timings = phase_timings(phase, spec)
    starts, widths, _ = best_greedy(Instance(phase, spec, timings), habits=habits)
    return horizon_of(timings, starts, widths), time.perf_counter() - t0


def elements(tmp: Path) -> None:
    got = {name: cli("solve", name, "--solver", "cpsat", "--time-limit", "60", cwd=tmp)
           for name in ("tile368", "tile368-shifted")}
    ours = ", ".join(f"{name}: {d['horizon']:,} ({d['status']})" for name, d in got.items())
    row("memory elements cut at 0x80000 + k x 32 KiB", "tile 368: outgoing at 0x80000 and incoming at "
        "0x87d40 share an element and serialise; shifted by 4 KiB they overlap", ours,
        "ipuopt solve tile368 --solver cpsat; ipuopt solve tile368-shifted --solver cpsat")


def constants() -> None:
    ex = load_spec("gc200").exchange
    row("write hazard", "last word at 21,020, element busy until 21,025 (5 cycles)",
        f"write_hazard: {ex.write_hazard}", "ipuopt specs show gc200")
    row("boundary overhead", "237-260 cycles per phase", f"sync_cycles: {ex.sync_cycles}",
        "ipuopt specs show gc200")


def final_reduction() -> None:
    spec, wl = load_spec("gc200"), load_workload("siglip-mlp")
    phases = {}
    for grain in ("box", 256):
        gen = generate(wl, spec, grain=grain)
        phases[grain] = next(gp for gp in gen.phases if gp.phase.name == "gemm2-reduction")
    stats = phase_stats(phases[256], spec)
    row("fragments at 256 B", "final reduction 155,880, median receive 64 cycles",
        f"{stats['transfers']:,}, median {stats['median_payload_cycles']:.0f}",
        "ipuopt gen siglip-mlp --spec gc200 --grain 256")
    base = {grain: greedy(gp.phase, spec) for grain, gp in phases.items()}
    row("greedy at that size", "148 s on 181,666 transfers",
        f"{base[256][1]:.0f} s on {stats['transfers']:,} fragments (one rule)",
        "ipuopt solve gemm2-reduction.json --solver greedy")
    for name, habits, reference in (("release after receives (a send waits for its receivers' "
                                     "previous payloads)", RELEASE, "+57% on a 63,720-transfer reduction"),
                                    ("paired send reserving both partner lanes, pairing every "
                                     "eligible transfer", RESERVE, "+75% (57,741 vs 33,081)")):
        cells = []
        for grain, gp in phases.items():
            h, _ = greedy(gp.phase, spec, habits)
            cells.append(f"{h / base[grain][0] - 1:+.0%} ({len(gp.phase.transfers):,} "
                         f"{'boxes' if grain == 'box' else 'fragments at 256 B'})")
        flags = " ".join(f"--param {h}=true" for h in sorted(habits))
        row(name, reference, "final reduction " + ", ".join(cells),
            f"ipuopt solve gemm2-reduction.json --solver greedy {flags}")


def arena_shift(tmp: Path, limit: float) -> None:
    plan = tmp / "reference-plan.json"
    plan.write_text(json.dumps({"workload": "siglip-mlp", "choice": REFERENCE_LAYOUTS}))
    placed = cli("place", "siglip-mlp", "--spec", "gc200", "--reschedule", "--grain", "box", "--plan",
                 str(plan), "--time-limit", str(limit), cwd=tmp)
    program = cli("run", "siglip-mlp", "--spec", "gc200", "--grain", "box", "--plan", str(plan), cwd=tmp)
    trials = {c["name"]: c for c in placed["candidates"]}
    first = trials["first-fit (as generated)"]
    shifts = [c for name, c in trials.items() if name.startswith("start +")]
    best = min(shifts, key=lambda c: (c["total"], c["name"]))
    redistribution = next(p for p in first["horizons"] if p.endswith("-redistribution"))
    red = min(c["horizons"][redistribution] for c in shifts)
    aware = trials.get("conflict-aware (CP-SAT)")
    whole = program["total_cycles"]

    def change(after: int, before: int) -> str:
        return f"{after / before - 1:+.1%}"

    ours = (f"box level, greedy schedules: {redistribution} {first['horizons'][redistribution]:,} -> "
            f"{red:,} ({change(red, first['horizons'][redistribution])}) at the best shift for it; "
            f"the exchange phases {first['total']:,} -> {best['total']:,} "
            f"({change(best['total'], first['total'])}) at {best['name']}, the whole program "
            f"{whole:,} -> {whole - first['total'] + best['total']:,} "
            f"({change(whole - first['total'] + best['total'], whole)})")
    if aware is not None:
        ours += (f"; conflict-aware {aware['total']:,} ({change(aware['total'], first['total'])} of the "
                 f"phases, {change(whole - first['total'] + aware['total'], whole)} of the program)")
    ours += f"; kept: {placed['kept']}"
    row("arena start moved by 4 KiB steps, kept when the rescheduled phases get shorter",
        "redistribution -20%, whole MLP -4.0%", ours,
        f"ipuopt place siglip-mlp --reschedule --grain box --plan P --time-limit {limit:g}; "
        "ipuopt run siglip-mlp --grain box --plan P")


def preparation(tmp: Path) -> None:
    spec = load_spec("gc200")
    gen = generate(load_workload("siglip-attention"), spec)
    counts = [f"{len(gp.phase.transfers):,}" for gp in gen.phases if gp.phase.name.endswith("-preparation")]
    plain = tmp / "siglip-attention-unprepared.yaml"
    plain.write_text((ROOT / "models" / "siglip-attention.yaml").read_text().replace(", prepare: true", ""))
    with_, without = (cli("run", str(w), "--spec", "gc200", cwd=tmp)["total_cycles"]
                      for w in (ROOT / "models" / "siglip-attention.yaml", plain))
    row("Q/K/V preparation before the batched GEMMs", "three unicast phases, 58,508-62,342 transfers each",
        f"{len(counts)} unicast phases (`prepare: true`), {' / '.join(counts)} transfers at the default "
        f"grain; program {with_:,} cycles, {without:,} without them",
        "ipuopt gen siglip-attention --spec gc200; ipuopt run siglip-attention --spec gc200")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--place-limit", type=float, default=600.0, help="seconds for `place --reschedule`")
    ap.add_argument("--skip", default="", help="rows to leave out: place, attention")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    print("| mechanism | the reference's figure | ipuopt's figure | command |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        elements(Path(tmp))
        constants()
        final_reduction()
        if "place" not in skip:
            arena_shift(Path(tmp), args.place_limit)
        if "attention" not in skip:
            preparation(Path(tmp))


if __name__ == "__main__":
    main()
