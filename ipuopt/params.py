"""One parameter type for every solver, and the stop signal a user's Ctrl-C raises."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ipuopt.errors import InputError

GENERIC = ("time_limit", "workers", "seed", "verbose")
Progress = Callable[[dict[str, Any]], None]  # hears {"incumbent": ..., "bound": ..., ...}


class Stop:
    """Asked once (Ctrl-C), heard by every running solver: each registers how to end its
    search early and keeps its best answer so far."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._hooks: list[Callable[[], None]] = []

    def request(self) -> None:
        with self._lock:
            self._event.set()
            hooks = list(self._hooks)
        for hook in hooks:
            hook()

    def is_set(self) -> bool:
        return self._event.is_set()

    def on_request(self, hook: Callable[[], None]) -> None:
        """Call `hook` when stop is asked (at once if it already was)."""
        with self._lock:
            self._hooks.append(hook)
            now = self._event.is_set()
        if now:
            hook()


@dataclass
class SolveParams:
    """Time limit (seconds, None: no limit), workers, seed and the solver's log switch;
    `options` passes anything else through to the backend by its own name."""

    time_limit: float | None = None
    workers: int | None = None
    seed: int | None = None
    verbose: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    stop: Stop = field(default_factory=Stop, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.time_limit is not None and not float(self.time_limit) >= 0:
            raise InputError.one("", "--time-limit", f"must be >= 0 seconds, got {self.time_limit:g}")
        if self.workers is not None and int(self.workers) < 1:
            raise InputError.one("", "--workers", f"must be >= 1, got {self.workers}")
        if self.seed is not None and int(self.seed) < 0:
            raise InputError.one("", "--seed", f"must be >= 0, got {self.seed}")

    @classmethod
    def of(cls, params: SolveParams | dict[str, Any] | None) -> SolveParams:
        """From a profile's or caller's dict (generic names, the rest are options)."""
        if isinstance(params, SolveParams):
            return params
        p = dict(params or {})
        try:
            return cls(time_limit=None if p.get("time_limit") is None else float(p.pop("time_limit")),
                       workers=None if p.get("workers") is None else int(p.pop("workers")),
                       seed=None if p.get("seed") is None else int(p.pop("seed")),
                       verbose=bool(p.pop("verbose", False)),
                       options={k: v for k, v in p.items() if k not in GENERIC})
        except (TypeError, ValueError) as exc:
            raise InputError.one("", "params", f"time_limit, workers and seed must be numbers: {exc}",
                                 ) from None

    def with_(self, **changes: Any) -> SolveParams:
        """A copy with some fields changed, sharing the stop signal."""
        fields = {"time_limit": self.time_limit, "workers": self.workers, "seed": self.seed,
                  "verbose": self.verbose, "options": dict(self.options), "stop": self.stop}
        fields.update(changes)
        return SolveParams(**fields)

    @property
    def reproducible(self) -> bool:
        """One worker and a seed: the same input gives the same answer."""
        return self.workers == 1 and self.seed is not None


def run_interruptible(work: Callable[[], Any], stop: Stop, grace: float = 3.0) -> tuple[Any, bool]:
    """(work's answer, interrupted). The work runs in a thread so that Ctrl-C reaches the main
    thread mid-solve; it then asks `stop` and waits up to `grace` seconds for the work to
    return its best answer so far (None when it does not come in time, e.g. a MILP)."""
    if threading.current_thread() is not threading.main_thread():
        return work(), False  # signals reach only the main thread: nothing to catch here
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    interrupted = False
    try:
        # Polled with sleep, not Thread.join: a join cut short by KeyboardInterrupt leaves the
        # thread looking finished on CPython 3.11 (a known bug), and the answer would be lost.
        while not done.is_set():
            time.sleep(0.05)
    except KeyboardInterrupt:
        interrupted = True
        stop.request()
        done.wait(grace)
    if "error" in box:
        raise box["error"]
    return box.get("value"), interrupted
