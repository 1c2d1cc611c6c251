"""One parameter type for every solver: what the user asked for (the clock is a `Budget`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ipuopt.budget import DEFAULT_TIME_LIMIT
from ipuopt.errors import InputError

GENERIC = ("time_limit", "workers", "seed", "verbose")
Progress = Callable[[dict[str, Any]], None]  # hears {"incumbent": ..., "bound": ..., ...}
MAX_WORKERS = 1024  # threads or processes one command may ask for
MAX_SEED = 2**31 - 1  # the solvers' seeds are 32-bit (CP-SAT's random_seed, HiGHS's random_seed)


@dataclass
class SolveParams:
    """Time limit asked for (seconds, None: no limit; the command's `Budget` is started from
    it), workers, seed and the solver's log switch; `options` passes anything else through to
    the backend by its own name."""

    time_limit: float | None = None
    workers: int | None = None
    seed: int | None = None
    verbose: bool = False
    options: dict[str, Any] = field(default_factory=dict)

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
        """A copy with some fields changed."""
        fields = {"time_limit": self.time_limit, "workers": self.workers, "seed": self.seed,
                  "verbose": self.verbose, "options": dict(self.options)}
        fields.update(changes)
        return SolveParams(**fields)

    def limit(self, default: float | None = DEFAULT_TIME_LIMIT) -> float | None:
        """The time limit given, or `default` when none was."""
        return default if self.time_limit is None else float(self.time_limit)

    @property
    def reproducible(self) -> bool:
        """One worker and a seed: the same input gives the same answer."""
        return self.workers == 1 and self.seed is not None
