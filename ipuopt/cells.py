"""Independent cells of a long command (a finalist's program, a placement candidate's phases,
one phase's schedule), run in this process or on Dask (a local cluster, or a running
scheduler), each answer kept in a folder as it finishes so that the same command run again
after a crash or Ctrl-C takes the finished cells from there and runs only the rest.

A cell is a picklable function and its arguments under a key naming what it computes (its
inputs, not when it ran); answers are pickled (this folder is ipuopt's own cache, not a
format for users) and written whole. Dask reruns the cells of a worker that is lost."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipuopt.io import write_atomic
from ipuopt.params import Progress, Stop


def cell_key(*parts: Any) -> str:
    """A short stable name for what a cell computes."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class Cell:
    key: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]


class Cells:
    """Where cells run and where their answers are kept (see the module's docstring).
    `workers` 1 without a cluster runs them here, one after the other."""

    def __init__(self, folder: Path | None = None, cluster: str | None = None, workers: int = 1,
                 stop: Stop | None = None, progress: Progress | None = None) -> None:
        self.folder, self.cluster, self.workers = folder, cluster, max(1, workers)
        self.stop = stop or Stop()
        self.tell = progress or (lambda info: None)
        self.ran = self.reused = 0
        self._stack = ExitStack()
        self._client: Any = None

    @property
    def local(self) -> bool:
        """Cells run in this process (they may share its clock and hear its Ctrl-C)."""
        return self._client is None

    @property
    def parallel(self) -> int:
        """How many cells run at once (a remote cluster counts as its workers, once known)."""
        if self.cluster and self._client is not None:
            return max(1, len(self._client.scheduler_info().get("workers", {})))
        return self.workers

    def __enter__(self) -> Cells:
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
        if self.cluster or self.workers > 1:  # reach the cluster before any work
            from ipuopt.sweeps.run import dask_client

            self._client = self._stack.enter_context(dask_client(self.cluster, self.workers))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _path(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / f"{key}.pickle"

    def _read(self, key: str) -> Any:
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            return pickle.loads(path.read_bytes())
        except Exception:  # a cache file from another version: run the cell again
            return None

    def _keep(self, key: str, answer: Any) -> None:
        path = self._path(key)
        if path is not None and answer is not None:
            write_atomic(path, pickle.dumps(answer))

    def run(self, label: str, cells: list[Cell]) -> list[Any]:
        """Each cell's answer in order (None for one Ctrl-C cut short)."""
        answers = [self._read(c.key) for c in cells]
        self.reused += sum(a is not None for a in answers)
        todo = [i for i, a in enumerate(answers) if a is None]
        t0, done = time.perf_counter(), len(cells) - len(todo)

        def finished(i: int, answer: Any) -> None:
            nonlocal done
            answers[i] = answer
            self._keep(cells[i].key, answer)
            self.ran += 1
            done += 1
            per = (time.perf_counter() - t0) / max(1, done - (len(cells) - len(todo)))
            self.tell({"task": f"{label}: {done}/{len(cells)} cells",
                       "done_at": time.time() + per * (len(cells) - done) / self.parallel})

        if self._client is None:
            for i in todo:
                if self.stop.interrupted:
                    break
                finished(i, cells[i].fn(*cells[i].args))
            return answers
        from distributed import wait

        futures = {self._client.submit(cells[i].fn, *cells[i].args, pure=False,
                                       key=f"ipuopt-{cells[i].key}-{os.getpid()}-{time.time_ns()}"): i
                   for i in todo}
        remaining = set(futures)
        while remaining and not self.stop.interrupted:  # a short wait: Ctrl-C is heard at once
            try:
                ready, remaining = wait(remaining, timeout=0.5, return_when="FIRST_COMPLETED")
            except TimeoutError:
                continue
            for future in ready:
                finished(futures[future], future.result())
        for future in remaining:
            future.cancel()
        return answers
