"""Run a sweep's cells on Dask (a local cluster on this machine's cores, or an existing
scheduler) and record each as it finishes: DIR/results.csv and DIR/schedules/CELL.json.

Rows are appended and flushed one by one, each after its schedule file is written whole,
so a crash loses nothing finished and a rerun into the same folder solves only the cells
missing from it. Dask reruns the cells of a worker that is lost; each finished cell is
recorded once, when the client hears of it."""

from __future__ import annotations

import csv
import logging
import os
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipuopt.errors import InputError
from ipuopt.exchange.solve import solve
from ipuopt.io import write_atomic, write_json
from ipuopt.params import Progress
from ipuopt.sweeps.plan import Cell, Sweep

COLUMNS = ("phase", "spec", "solver", "status", "horizon", "lower_bound", "gap", "seconds", "worker",
           "schedule", "cell")


def solve_cell(cell: Cell) -> dict[str, Any]:
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


CLUSTER = re.compile(r"(tcp|tls|ucx|ws|wss)://(\[[0-9a-fA-F:.]+\]|[^\s:/\[\]]+):(\d{1,5})")


def check_cluster(cluster: str | None, field: str = "--cluster") -> None:
    """A scheduler's address as Dask takes it (PROTOCOL://HOST:PORT), refused before any work."""
    if cluster is None:
        return
    m = CLUSTER.fullmatch(cluster)
    if m is None or not 0 < int(m.group(3)) < 65536:
        raise InputError.one("", field, f"{cluster!r} is not a Dask scheduler address (tcp://HOST:PORT, "
                                        "a port in 1..65535)")


@contextmanager
def dask_client(cluster: str | None, workers: int | None):  # noqa: ANN202 (a distributed Client)
    """A client of the scheduler at `cluster`, or of a local cluster of `workers` single-threaded
    processes (default: one per core)."""
    from distributed import Client, LocalCluster

    if cluster:
        check_cluster(cluster)
        try:
            client = Client(cluster, timeout="5s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError.one("", "--cluster",
                                 f"cannot reach a Dask scheduler at {cluster}: {exc}") from None
        try:
            yield client
        finally:
            client.close()
        return
    with LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=logging.ERROR,
                      preload=["ipuopt.sweeps.worker_setup"]) as local, Client(local) as client:
        yield client


def run_sweep(sweep: Sweep, out: Path, cluster: str | None = None, workers: int | None = None,
              progress: Progress | None = None) -> SweepRun:
    """Solve the cells of `sweep` not yet in `out`; see the module docstring."""
    from distributed import as_completed

    out.mkdir(parents=True, exist_ok=True)
    (out / "schedules").mkdir(exist_ok=True)
    done = finished_cells(out)
    todo = [c for c in sweep.cells if c.id not in done]
    run = SweepRun(len(sweep.cells), len(sweep.cells) - len(todo))
    t0 = time.perf_counter()
    tell = progress or (lambda info: None)
    if todo:
        with dask_client(cluster, workers) as client:
            futures = {client.submit(solve_cell, c, key=f"ipuopt-cell-{c.id}", pure=False): c for c in todo}
            for future in as_completed(futures):
                cell = futures[future]
                try:
                    answer = future.result()
                except Exception as exc:  # a solver error or a cell that killed its workers
                    run.failed.append(f"{cell.phase_file} {cell.spec.name} {cell.label}: "
                                      f"{type(exc).__name__}: {exc}")
                    continue
                write_json(out / answer["row"]["schedule"], answer["schedule"])
                _append(out / "results.csv", answer["row"])
                run.solved += 1
                finished = run.skipped + run.solved + len(run.failed)
                elapsed = time.perf_counter() - t0
                eta = elapsed / (run.solved + len(run.failed)) * (run.total - finished)
                tell({"task": f"sweep {finished}/{run.total} cells", "done_at": time.time() + eta,
                      "last": f"{cell.phase_file} {cell.spec.name} {cell.label}: {answer['row']['status']} "
                              f"{answer['row']['horizon']}"})
    run.seconds = time.perf_counter() - t0
    return run
