"""The one clock of a command: a `Budget` says how long a stage may take and when to stop.

A command's budget is started once, where the user's time limit is read (the command line,
`ipuopt.api`, or a library entry point called without one: `Budget.of`), and handed down;
each stage takes a `share` of it or `reserve`s time for what follows. Everything counts on
`time.monotonic()`; a `Grant` is the one form that crosses to another process (a Dask
worker), as a deadline on the shared wall clock. Ctrl-C (`request`) reaches every budget of the
command, so that every loop that listens for the clock also hears the user.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

DEFAULT_TIME_LIMIT = 60.0  # seconds, wall-clock: every method but the plain greedy, unless told
POLL = 0.1  # seconds between a main thread's looks at a pending Ctrl-C while it waits

ASKED = threading.Event()  # some stop of this process was asked (Ctrl-C): what a held stage waits for


class Stopped(Exception):  # noqa: N818 (a signal, not an error)
    """A stage cut short by Ctrl-C or its budget before it had an answer to hand back."""


class Interrupted(Exception):  # noqa: N818 (not KeyboardInterrupt: click would swallow it)
    """Ctrl-C before any answer was found: there is nothing to keep or write."""


class Budget:
    """Seconds a stage may take, and the user's stop.

    `end` is when this stage's share runs out (what `left`, `expired` and `check` count to);
    `hard` is when the command's own limit does, less what was reserved for later stages:
    a deterministic search (CP-SAT with one worker and a seed) may outrun its share in wall
    time but never this. Both are None without a limit."""

    def __init__(self, seconds: float | None = None, since: float | None = None) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._hooks: list[Callable[[], None]] = []
        self._parent: Budget | None = None
        start = time.monotonic() if since is None else since
        self.seconds = None if seconds is None else max(0.0, float(seconds))  # as given
        self.end = None if seconds is None else start + self.seconds
        self.hard = self.end
        self.wall_cut = False  # a search ended by the clock, not by its own (deterministic) end

    @classmethod
    def of(cls, seconds: float | None, budget: Budget | None) -> Budget:
        """`budget` when one was handed down, else a new one of `seconds` from now: how a
        library entry point called on its own starts the clock."""
        return budget if budget is not None else cls(seconds)

    # -- the clock

    def left(self) -> float | None:
        """Seconds left of this share (>= 0), None without a limit."""
        return None if self.end is None else max(0.0, self.end - time.monotonic())

    def limit(self) -> float:
        """Seconds this stage may still take: what is left, or `DEFAULT_TIME_LIMIT` without a
        limit (every method but the plain greedy ends, however it was called)."""
        left = self.left()
        return DEFAULT_TIME_LIMIT if left is None else left

    def hard_left(self) -> float | None:
        """Seconds to the command's limit, less what later stages reserved (>= 0)."""
        return None if self.hard is None else max(0.0, self.hard - time.monotonic())

    def expired(self) -> bool:
        return self.end is not None and time.monotonic() >= self.end

    def share(self, seconds: float | None, firm: bool = True) -> Budget:
        """A part of this budget for one stage: `seconds` from now (none: all that is left),
        never past this one's end; Ctrl-C reaches both ways, and a wall cut is reported here.
        `firm`: its end is a hard end too; otherwise a deterministic search may outrun it up
        to this one's hard end (auto's stages: the later ones get what is left)."""
        child = self._child()
        child.end, child.hard = self.end, self.hard
        if seconds is not None:
            end = time.monotonic() + max(0.0, seconds)  # a share computed on a slow machine may be < 0
            child.end = end if child.end is None else min(child.end, end)
            if firm:
                child.hard = child.end if child.hard is None else min(child.hard, child.end)
        child.seconds = child.left()
        self.on_request(child.request)
        child.on_request(self.request)
        return child

    def reserve(self, seconds: float) -> Budget:
        """This budget for a stage that must end `seconds` sooner, to leave time for what
        follows it (validation, writing); Ctrl-C still reaches it."""
        child = self._child()
        child.end = None if self.end is None else self.end - seconds
        child.hard = None if self.hard is None else self.hard - seconds
        child.seconds = self.seconds
        self.on_request(child.request)
        return child

    def _child(self) -> Budget:
        child = Budget()
        child._parent = self
        return child

    def cut(self) -> None:
        """Say that the clock, not a search's own end, ended it (read by whoever asked for
        one worker and a seed: the answer may not reproduce)."""
        budget: Budget | None = self
        while budget is not None:
            budget.wall_cut = True
            budget = budget._parent

    def grant(self, seconds: float, keep: float = 0.0, local: bool = True) -> Grant:
        """`seconds` for a stage that starts later (a cell, queued), ending at least `keep`
        seconds before this budget; `local`: in this process (Ctrl-C reaches it)."""
        if local:
            return Grant(max(0.0, seconds), parent=self.reserve(keep))
        left = self.left()
        return Grant(max(0.0, seconds), None if left is None else time.time() + max(0.0, left - keep))

    # -- the user's stop

    @property
    def interrupted(self) -> bool:
        """The user asked to stop (Ctrl-C)."""
        return self._event.is_set()

    def request(self) -> None:
        ASKED.set()
        with self._lock:
            if self._event.is_set():  # asked already (budgets linked both ways ask each other once)
                return
            self._event.set()
            hooks = list(self._hooks)
        for hook in hooks:
            hook()

    def is_set(self) -> bool:
        """Stop now: asked to, or past this share's end."""
        return self._event.is_set() or self.expired()

    def check(self, deadline: bool = True) -> None:
        """Raise `Stopped` when asked to stop (or, with `deadline`, past the end): for a stage
        that has no partial answer to hand back."""
        if self._event.is_set() or (deadline and self.expired()):
            raise Stopped

    def on_request(self, hook: Callable[[], None]) -> None:
        """Call `hook` when stop is asked (at once if it already was)."""
        with self._lock:
            self._hooks.append(hook)
            now = self._event.is_set()
        if now:
            hook()

    def forget(self, hook: Callable[[], None]) -> None:
        """No longer call `hook` (its solver is done)."""
        with self._lock:
            if hook in self._hooks:
                self._hooks.remove(hook)


@dataclass(frozen=True)
class Grant:
    """Seconds for a stage that starts later, here or in another process: its clock starts
    when the stage does (`start`: a cell queued behind a slow one still gets its seconds),
    never past `deadline` (on `time.time()`: another process's monotonic clock is not this
    one's). With `parent` (this process), a share of it that Ctrl-C reaches."""

    seconds: float
    deadline: float | None = None
    parent: Budget | None = field(default=None, compare=False)

    def start(self) -> Budget:
        if self.parent is not None:
            return self.parent.share(self.seconds)
        seconds = self.seconds if self.deadline is None else min(self.seconds, self.deadline - time.time())
        return Budget(seconds)


def run_interruptible(work: Callable[[], Any], budget: Budget, grace: float = 3.0) -> tuple[Any, bool]:
    """(work's answer, interrupted). The work runs in a thread so that Ctrl-C reaches the main
    thread mid-solve; it then asks `budget` to stop and waits up to `grace` seconds for the
    work to return its best answer so far (None when it does not come in time, e.g. a MILP)."""
    if threading.current_thread() is not threading.main_thread():
        try:  # signals reach only the main thread: nothing to catch here
            return work(), False
        except Stopped:
            return None, budget.interrupted
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
        budget.request()
        done.wait(grace)
    if "error" in box:
        raise box["error"]
    return box.get("value"), interrupted or budget.interrupted
