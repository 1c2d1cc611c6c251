"""Run a sweep's cells on Dask (a local cluster on this machine's cores, or an existing
scheduler), on the engine `optimize` uses (`program.cells`), and record each as it finishes:
DIR/results.csv and DIR/schedules/CELL.json.

Rows are appended and flushed one by one, each after its schedule file is written whole,
so a crash loses nothing finished and a rerun into the same folder solves only the cells
missing from it. Dask reruns the cells of a worker that is lost; each finished cell is
recorded once, when the client hears of it."""

from __future__ import annotations

import csv
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipuopt.exchange.solve import solve
from ipuopt.io import write_atomic, write_json
from ipuopt.params import Progress
from ipuopt.program.cells import Cell, Cells
from ipuopt.sweeps.plan import Solve, Sweep

COLUMNS = ("phase", "spec", "solver", "status", "horizon", "lower_bound", "gap", "seconds", "worker",
           "schedule", "cell")


def solve_cell(cell: Solve) -> dict[str, Any]:
    """One cell, on whichever worker runs it: its results row and its schedule."""
    res = solve(cell.phase, cell.spec, cell.backend, cell.params)
    try:
        from distributed import get_worker

        worker = get_worker().address
    except (ImportError, ValueError):
        worker = "local"
    row = {"phase": cell.phase_file, "spec": cell.spec.name, "solver": cell.label, "status": str(res.status),
           "horizon": res.value, "lower_bound": res.bound,
           "gap": "" if res.gap is None else round(res.gap, 4), "seconds": round(res.runtime, 3),
           "worker": worker, "schedule": f"schedules/{cell.id}.json", "cell": cell.id}
    return {"row": row, "schedule": res.to_dict()}


@dataclass
class SweepRun:
    total: int
    skipped: int  # finished in an earlier run
    solved: int = 0
    failed: list[str] = field(default_factory=list)  # cells whose solve raised (rerun next time)
    seconds: float = 0.0


def finished_cells(out: Path) -> set[str]:
    """Cells with a complete row and their schedule on disk. A line cut short by a crash is
    removed first, so appending stays well-formed."""
    results = out / "results.csv"
    if not results.exists():
        return set()
    data = results.read_bytes()
    if data and not data.endswith(b"\n"):
        write_atomic(results, data[: data.rfind(b"\n") + 1])
    with results.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {r["cell"] for r in rows
            if r.get("cell") and r.get("schedule") and (out / r["schedule"]).is_file()}


def _append(results: Path, row: dict[str, Any]) -> None:
    new = not results.exists() or results.stat().st_size == 0
    with results.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS)
        if new:
            writer.writeheader()
        writer.writerow(row)
        handle.flush()
        os.fsync(handle.fileno())


class _Recorded:
    """The sweep's store: a cell is finished when its row and its schedule are on disk; one that
    finishes gets its schedule written whole, then its row appended."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.done = finished_cells(out)

    def read(self, key: str) -> Any:
        return True if key in self.done else None

    def keep(self, key: str, answer: dict[str, Any]) -> None:
        write_json(self.out / answer["row"]["schedule"], answer["schedule"])
        _append(self.out / "results.csv", answer["row"])


def run_sweep(sweep: Sweep, out: Path, cluster: str | None = None, workers: int | None = None,
              progress: Progress | None = None) -> SweepRun:
    """Solve the cells of `sweep` not yet in `out`, on Dask; see the module docstring."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "schedules").mkdir(exist_ok=True)
    store = _Recorded(out)
    run = SweepRun(len(sweep.cells), sum(c.id in store.done for c in sweep.cells))
    t0 = time.perf_counter()
    failed: list[tuple[int, Exception]] = []
    if run.skipped < run.total:
        with Cells(store, cluster, workers or os.cpu_count() or 1, progress=progress, dask=True) as cells:
            cells.run(f"sweep {sweep.name}", [Cell(c.id, solve_cell, (c,)) for c in sweep.cells], failed,
                      last=lambda a: f"{a['row']['phase']} {a['row']['spec']} {a['row']['solver']}: "
                                     f"{a['row']['status']} {a['row']['horizon']}")
            run.solved = cells.ran
    for i, exc in failed:
        c = sweep.cells[i]
        run.failed.append(f"{c.phase_file} {c.spec.name} {c.label}: {type(exc).__name__}: {exc}")
    run.seconds = time.perf_counter() - t0
    return run
