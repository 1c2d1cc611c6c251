"""What a sweep found, and what changed between two sweeps."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path
from typing import Any

from ipuopt.errors import InputError
from ipuopt.result import gap


def load_results(out: Path) -> list[dict[str, Any]]:
    results = out / "results.csv"
    if not results.is_file():
        raise InputError.one(str(out), "results.csv", "not a sweep folder (ipuopt sweep SWEEP --out DIR)")
    with results.open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r.get("cell") and r.get("horizon") not in (None, "")]
    for r in rows:
        r["horizon"] = int(r["horizon"])
        r["lower_bound"] = int(r["lower_bound"] or 0)
        r["seconds"] = float(r["seconds"] or 0)
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per phase and spec: the greedy horizon, the best horizon (and who found it), the best
    bound and the gap between them; per solver: cells, proved optimal, total horizon, mean
    gap, total seconds."""
    cases: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        cases[(r["phase"], r["spec"])].append(r)
    per_case = []
    for (phase, spec), rs in sorted(cases.items()):
        best = min(rs, key=lambda r: (r["horizon"], r["solver"]))
        greedy = [r["horizon"] for r in rs if r["solver"].startswith("greedy")]
        bound = max(r["lower_bound"] for r in rs)
        per_case.append({"phase": phase, "spec": spec, "greedy": min(greedy) if greedy else None,
                         "best": best["horizon"], "best_solver": best["solver"], "bound": bound,
                         "gap": round(gap(best["horizon"], bound) or 0.0, 4)})
    solvers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        solvers[r["solver"]].append(r)
    per_solver = []
    for name, rs in sorted(solvers.items()):
        gaps = [gap(r["horizon"], r["lower_bound"]) or 0.0 for r in rs]
        per_solver.append({"solver": name, "cells": len(rs),
                           "optimal": sum(r["status"] == "optimal" for r in rs),
                           "total_horizon": sum(r["horizon"] for r in rs),
                           "mean_gap": round(sum(gaps) / len(rs), 4),
                           "seconds": round(sum(r["seconds"] for r in rs), 1)})
    return {"cases": per_case, "solvers": per_solver}


def compare(new: list[dict[str, Any]], old: list[dict[str, Any]]) -> dict[str, Any]:
    """Per phase, spec and solver found in both: the horizon before and after; and the cells
    found in only one of them."""
    def key(r: dict[str, Any]) -> tuple[str, str, str]:
        return r["phase"], r["spec"], r["solver"]

    before = {key(r): r for r in old}
    after = {key(r): r for r in new}
    changes = []
    for k in sorted(set(before) & set(after)):
        b, a = before[k], after[k]
        delta = a["horizon"] - b["horizon"]
        changes.append({"phase": k[0], "spec": k[1], "solver": k[2], "before": b["horizon"],
                        "after": a["horizon"], "change": delta,
                        "percent": round(100 * delta / b["horizon"], 2) if b["horizon"] else 0.0,
                        "status_before": b["status"], "status_after": a["status"],
                        "bound_before": b["lower_bound"], "bound_after": a["lower_bound"]})
    return {"better": sum(c["change"] < 0 for c in changes), "worse": sum(c["change"] > 0 for c in changes),
            "same": sum(c["change"] == 0 for c in changes), "changes": changes,
            "only_new": [list(k) for k in sorted(set(after) - set(before))],
            "only_old": [list(k) for k in sorted(set(before) - set(after))]}


def report_png(summary: dict[str, Any], diff: dict[str, Any] | None = None) -> bytes:
    """Gap to the best bound per phase and spec; with a diff, the horizon change per cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 2 if diff else 1
    fig, axes = plt.subplots(panels, 1, figsize=(12, 4 * panels + 1), squeeze=False)
    cases = summary["cases"]
    names = [f"{Path(c['phase']).stem} @ {c['spec']}" for c in cases]
    greedy_gap = [gap(c["greedy"], c["bound"]) or 0.0 if c["greedy"] else 0.0 for c in cases]
    ax = axes[0][0]
    xs = range(len(cases))
    ax.bar([x - 0.2 for x in xs], [100 * g for g in greedy_gap], 0.4, label="greedy", color="#f58518")
    ax.bar([x + 0.2 for x in xs], [100 * c["gap"] for c in cases], 0.4, label="best", color="#4c78a8")
    ax.set_xticks(list(xs), names, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("gap to the best bound (%)")
    ax.legend()
    ax.set_title("sweep: greedy and best against the bound")
    if diff:
        ax = axes[1][0]
        ch = [c for c in diff["changes"] if c["change"]]  # the cells that moved
        ax.bar(range(len(ch)), [c["percent"] for c in ch],
               color=["#54a24b" if c["change"] < 0 else "#e45756" for c in ch])
        ax.set_xticks(range(len(ch)), [f"{Path(c['phase']).stem} @ {c['spec']}\n{c['solver']}" for c in ch],
                      rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("horizon change (%)")
        ax.axhline(0, color="#333", linewidth=0.8)
        ax.set_title(f"against the old sweep: {diff['better']} better, {diff['worse']} worse, "
                     f"{diff['same']} same")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()
