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
MAX_WORKERS = 1024  # threads or processes one command may ask for
MAX_SEED = 2**31 - 1  # the solvers' seeds are 32-bit (CP-SAT's random_seed, HiGHS's random_seed)
POLL = 0.1  # seconds between a main thread's looks at a pending Ctrl-C while it waits
DEFAULT_TIME_LIMIT = 60.0  # seconds, wall-clock: every method but the plain greedy, unless told


ASKED = threading.Event()  # some stop of this process was asked (Ctrl-C): what a held stage waits for


class Stopped(Exception):  # noqa: N818 (a signal, not an error)
    """A stage cut short by Ctrl-C or the deadline before it had an answer to hand back."""


class Interrupted(Exception):  # noqa: N818 (not KeyboardInterrupt: click would swallow it)
    """Ctrl-C before any answer was found: there is nothing to keep or write."""


class Stop:
    """Asked once (Ctrl-C), heard by every running solver: each registers how to end its
    search early and keeps its best answer so far. It also holds the command's wall-clock
    deadline: past it, `is_set` holds too, so every loop that listens for Ctrl-C also ends
    in time."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._hooks: list[Callable[[], None]] = []
        self.deadline: float | None = None  # time.monotonic() by which the work must end
        self.wall_cut = False  # a search ended by the clock, not by its own (deterministic) end

    def until(self, deadline: float) -> None:
        """End the work by `deadline` (time.monotonic()), or by the earlier one already set."""
        self.deadline = deadline if self.deadline is None else min(self.deadline, deadline)

    def left(self) -> float | None:
        """Seconds to the deadline (>= 0), None without one."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    @property
    def interrupted(self) -> bool:
        """The user asked to stop (Ctrl-C)."""
        return self._event.is_set()

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def request(self) -> None:
        ASKED.set()
        with self._lock:
            if self._event.is_set():  # asked already (stops linked both ways ask each other once)
                return
            self._event.set()
            hooks = list(self._hooks)
        for hook in hooks:
            hook()

    def is_set(self) -> bool:
        """Stop now: asked to, or past the deadline."""
        return self._event.is_set() or self.expired()

    def check(self, deadline: bool = True) -> None:
        """Raise `Stopped` when asked to stop (or, with `deadline`, past it): for a stage that
        has no partial answer to hand back."""
        if self._event.is_set() or (deadline and self.expired()):
            raise Stopped

    def forget(self, hook: Callable[[], None]) -> None:
        """No longer call `hook` (its solver is done)."""
        with self._lock:
            if hook in self._hooks:
                self._hooks.remove(hook)

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
        if self.workers is not None and not 1 <= int(self.workers) <= MAX_WORKERS:
            raise InputError.one("", "--workers", f"must be in 1..{MAX_WORKERS}, got {self.workers}")
        if self.seed is not None and not 0 <= int(self.seed) <= MAX_SEED:
            raise InputError.one("", "--seed", f"must be in 0..{MAX_SEED}, got {self.seed}")

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

    def limit(self, default: float | None = DEFAULT_TIME_LIMIT) -> float | None:
        """The time limit given, or `default` when none was."""
        return default if self.time_limit is None else float(self.time_limit)

    def budget(self, default: float | None = DEFAULT_TIME_LIMIT) -> float | None:
        """Seconds this stage may take: its time limit (`default` when none), and never past
        the command's deadline."""
        limit = self.limit(default)
        left = self.stop.left()
        if left is None:
            return limit
        return left if limit is None else min(limit, left)

    def start_clock(self, default: float | None = DEFAULT_TIME_LIMIT, since: float | None = None) -> None:
        """Arm the wall-clock deadline `since` a moment (time.monotonic(); default now), the
        earlier one kept if one is armed already (the CLI arms it from the command's start)."""
        limit = self.limit(default)
        if limit is not None:
            self.stop.until((time.monotonic() if since is None else since) + limit)

    def share(self, seconds: float | None) -> SolveParams:
        """A part of this budget for one call that arms its own clock (`solve`, `run_program`,
        `place`): a deadline of its own, `seconds` from now and never past this one, so that
        arming it does not move this one's; Ctrl-C reaches both ways."""
        stop = Stop()
        stop.deadline = self.stop.deadline
        if seconds is not None:
            seconds = max(0.0, seconds)  # a share computed on a slow machine may come out below 0
            stop.until(time.monotonic() + seconds)
        self.stop.on_request(stop.request)
        stop.on_request(self.stop.request)
        return self.with_(time_limit=seconds, stop=stop)

    def sooner(self, seconds: float) -> SolveParams:
        """These parameters for a stage that must end `seconds` before the deadline, to leave
        time for what follows it (validation, writing); Ctrl-C still reaches it."""
        stop = Stop()
        if self.stop.deadline is not None:
            stop.deadline = self.stop.deadline - seconds
        self.stop.on_request(stop.request)
        return self.with_(stop=stop)

    @property
    def reproducible(self) -> bool:
        """One worker and a seed: the same input gives the same answer."""
        return self.workers == 1 and self.seed is not None


def run_interruptible(work: Callable[[], Any], stop: Stop, grace: float = 3.0) -> tuple[Any, bool]:
    """(work's answer, interrupted). The work runs in a thread so that Ctrl-C reaches the main
    thread mid-solve; it then asks `stop` and waits up to `grace` seconds for the work to
    return its best answer so far (None when it does not come in time, e.g. a MILP)."""
    if threading.current_thread() is not threading.main_thread():
        try:  # signals reach only the main thread: nothing to catch here
            return work(), False
        except Stopped:
            return None, stop.interrupted
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = work()
        except Stopped:
            pass  # cut short with nothing to hand back: the caller keeps what it has
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc
        finally:
            done.set()

    interrupted = False
    try:  # started inside: a Ctrl-C just after the start (the work may already report its
        # stage, and a test interrupt on it) would otherwise escape before the wait below
        threading.Thread(target=run, daemon=True).start()
        # An event, not Thread.join: a join cut short by KeyboardInterrupt leaves the thread
        # looking finished on CPython 3.11 (a known bug), and the answer would be lost. And
        # never one wait without a timeout: the kernel may hand SIGINT to any thread (a
        # solver's), and then nothing wakes a main thread blocked on a lock: Python runs its
        # handler only when the main thread next runs, which was at the time limit (auto's
        # coarse stage ignored Ctrl-C for 113 s). Waking every POLL seconds, it runs at once.
        while not done.is_set():
            done.wait(POLL)
    except KeyboardInterrupt:
        interrupted = True
        stop.request()
        done.wait(grace)
    if "error" in box:
        raise box["error"]
    return box.get("value"), interrupted or stop.interrupted
