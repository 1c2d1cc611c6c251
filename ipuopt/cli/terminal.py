"""What the command line prints: progress lines, figures, and the way out after Ctrl-C."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ipuopt.budget import ASKED
from ipuopt.result import Result


def err(msg: str) -> None:
    print(msg, file=sys.stderr)


def pct(g: float | None) -> str:
    return "n/a" if g is None else f"{100 * g:.2f}%"


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def num(v: int | None) -> str:
    return "n/a" if v is None else str(v)


HOLD_FOR = 120.0  # seconds a held stage waits for Ctrl-C at most


class ProgressLines:
    """Progress on stderr for long commands: a line every `every` seconds after the first 2 s
    (what runs, elapsed, the best figures so far), and at once when the stage changes or (at
    most one a second) a solver reports a better incumbent. Solvers call it with what they
    know. IPUOPT_PROGRESS_AFTER sets the quiet start (seconds; tests use 0); a stage whose
    name holds IPUOPT_HOLD_STAGE waits at its start for Ctrl-C (tests interrupt it there
    whatever the machine's speed)."""

    def __init__(self, quiet: bool, task: str, every: float = 3.0) -> None:
        self.quiet, self.every = quiet, every
        self.after = float(os.environ.get("IPUOPT_PROGRESS_AFTER", 2.0))
        self.hold = os.environ.get("IPUOPT_HOLD_STAGE", "")
        self.info: dict[str, Any] = {"task": task}
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.done = threading.Event()
        self.lock = threading.Lock()

    def start(self, task: str) -> None:
        """A new task: forget the figures of the last one."""
        with self.lock:
            self.info = {"task": task}

    def __call__(self, info: dict[str, Any]) -> None:
        with self.lock:
            if info.get("task") not in (None, self.info.get("task")):  # another task: its own figures
                self.info = {}
            better = info.get("incumbent") not in (None, self.info.get("incumbent"))
            moved = info.get("stage") not in (None, self.info.get("stage"))
            self.info.update({k: v for k, v in info.items() if v is not None})
        if moved or (better and time.perf_counter() - self.t0 - self.last >= 1.0):
            self._line()
        if moved and self.hold and self.hold in str(info["stage"]) \
                and threading.current_thread() is not threading.main_thread():
            ASKED.wait(HOLD_FOR)  # tests: Ctrl-C comes while this stage is surely running

    def _line(self) -> None:
        now = time.perf_counter() - self.t0
        if self.quiet or now < self.after:
            return
        self.last = now
        with self.lock:
            info = dict(self.info)
        parts = [f"[{now:7.1f}s] {info.pop('task')}"]
        inc, bnd = info.pop("incumbent", None), info.pop("bound", None)
        if inc is not None and bnd is not None:
            parts.append(f"incumbent {inc}  bound {bnd}  gap {pct((inc - bnd) / inc if inc else 0.0)}")
        elif inc is not None:
            parts.append(f"incumbent {inc}")
        info.pop("elapsed", None)  # the line starts with it
        if (done_at := info.pop("done_at", None)) is not None:  # an estimate that counts down
            parts.append(f"eta {max(0.0, done_at - time.time()):.0f}s")
        parts += [f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in info.items()]
        err("  ".join(parts))

    def __enter__(self) -> ProgressLines:
        def tick() -> None:
            while not self.done.wait(0.25):
                if time.perf_counter() - self.t0 - self.last >= self.every:
                    self._line()

        threading.Thread(target=tick, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()


@contextmanager
def solver_log(verbose: bool) -> Iterator[None]:
    """With --verbose, the solvers' own logs (written by C++ to file descriptor 1) go to stderr,
    so stdout keeps only ipuopt's output (and --json stays parseable)."""
    if not verbose:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def interrupted(what: str | None, status: str, out: Path | None) -> None:
    """After Ctrl-C: say that the answer is the best so far and where it went, then exit 130
    at once: a solver that did not stop in time (HiGHS) may still be running in C++, and
    the interpreter's shutdown would abort on it. Every output is already written whole."""
    where = f", written to {out}" if out else ""
    if what is None:
        err(f"interrupted: nothing found before the interrupt (status {status}); no file written")
    else:
        err(f"interrupted: {what} is the best found so far (status {status}){where}")
    exit_now(130)


STDOUT: list[int] = []  # a copy of file descriptor 1 made at start (main)


def reclaim_stdout() -> None:
    """A solver still running after Ctrl-C (HiGHS) may hold fd 1 silenced: take it back, so
    the answer printed now reaches the user."""
    if STDOUT:
        sys.stdout.flush()
        os.dup2(STDOUT[0], 1)


def exit_now(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def json_doc(res: Result, out: Path | None) -> dict[str, Any]:
    """What `--json` prints: the result's document; with `--out`, the solution's per-item list
    (a schedule's transfers, a placement's offsets) is in that file only."""
    doc = res.to_dict()
    if out is not None:
        for key in ("transfers", "offsets"):
            if key in doc:
                doc[key] = f"{len(doc[key])} in {out}"
    return doc
