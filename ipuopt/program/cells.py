"""The one engine of independent cells: a long command's (a finalist's program, a placement
candidate's phases, one phase's schedule) and a sweep's, run in this process or on Dask (a
local cluster, or a running scheduler), each answer kept by a store as it finishes so that the
same command run again after a crash or Ctrl-C takes the finished cells from there and runs
only the rest.

A cell is a picklable function and its arguments under a key naming what it computes (its
inputs, not when it ran). `optimize` keeps answers pickled in a folder (ipuopt's own cache,
not a format for users), written whole; a sweep keeps its results table and schedule files
(`sweeps.run`). Dask reruns the cells of a worker that is lost."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import re
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ipuopt.budget import Budget
from ipuopt.errors import InputError
from ipuopt.io import write_atomic
from ipuopt.params import Progress


def cell_key(*parts: Any) -> str:
    """A short stable name for what a cell computes."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class Cell:
    key: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]


class Store(Protocol):
    """Where answers are kept: `read` gives a finished cell's answer (None: not finished), `keep`
    records one as it finishes."""

    def read(self, key: str) -> Any: ...

    def keep(self, key: str, answer: Any) -> None: ...


class Folder:
    """Answers pickled in a folder, one file a cell, written whole."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self, key: str) -> Any:
        path = self.path / f"{key}.pickle"
        if not path.is_file():
            return None
        try:
            return pickle.loads(path.read_bytes())
        except Exception:  # a cache file from another version: run the cell again
            return None

    def keep(self, key: str, answer: Any) -> None:
        if answer is not None:  # the folder is made when the cells start (`Cells.__enter__`)
            write_atomic(self.path / f"{key}.pickle", pickle.dumps(answer))


class Cells:
    """Where cells run and where their answers are kept (see the module's docstring): `store`
    (a folder for pickles, or a store of its own; None keeps nothing). `workers` 1 without a
    cluster runs them here, one after the other, unless `dask` asks for a cluster anyway."""

    def __init__(self, store: Store | Path | None = None, cluster: str | None = None, workers: int = 1,
                 stop: Budget | None = None, progress: Progress | None = None, dask: bool = False) -> None:
        self.store = Folder(store) if isinstance(store, Path) else store
        self.cluster, self.workers, self.dask = cluster, max(1, workers), dask
        self.stop = stop or Budget()
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
        if isinstance(self.store, Folder):
            self.store.path.mkdir(parents=True, exist_ok=True)
        if self.cluster or self.workers > 1 or self.dask:  # reach the cluster before any work
            self._client = self._stack.enter_context(dask_client(self.cluster, self.workers))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def run(self, label: str, cells: list[Cell], failed: list[tuple[int, Exception]] | None = None,
            last: Callable[[Any], str] | None = None) -> list[Any]:
        """Each cell's answer in order (None for one Ctrl-C cut short). A cell that raises ends
        the run, or with `failed` is listed there (its index and the error) and the others go
        on. `last(answer)` describes each answer on the progress line."""
        answers = [self.store.read(c.key) if self.store is not None else None for c in cells]
        self.reused += sum(a is not None for a in answers)
        todo = [i for i, a in enumerate(answers) if a is None]
        t0, done = time.perf_counter(), len(cells) - len(todo)

        def finished(i: int, answer: Any = None, error: Exception | None = None) -> None:
            nonlocal done
            if error is not None and failed is not None:  # `outcome` raised it otherwise
                failed.append((i, error))
            else:
                answers[i] = answer
                if self.store is not None:
                    self.store.keep(cells[i].key, answer)
                self.ran += 1
            done += 1
            per = (time.perf_counter() - t0) / max(1, done - (len(cells) - len(todo)))
            self.tell({"task": f"{label}: {done}/{len(cells)} cells",
                       "done_at": time.time() + per * (len(cells) - done) / self.parallel,
                       **({"last": last(answer)} if last is not None and error is None else {})})

        def outcome(call: Callable[..., Any], *args: Any) -> tuple[Any, Exception | None]:
            try:
                return call(*args), None
            except Exception as exc:  # a solver error, or a cell that killed its workers
                if failed is None:
                    raise
                return None, exc

        if self._client is None:
            for i in todo:
                if self.stop.interrupted:
                    break
                finished(i, *outcome(cells[i].fn, *cells[i].args))
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
                finished(futures[future], *outcome(future.result))
        for future in remaining:
            future.cancel()
        return answers


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
def dask_client(cluster: str | None, workers: int | None) -> Iterator[Any]:
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
