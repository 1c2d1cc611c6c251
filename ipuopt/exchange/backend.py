"""What an exact exchange backend hands back to `solve`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SolverOutput:
    starts: dict[str, int]
    widths: dict[str, str]
    status: str
    bound: int | None
    info: dict[str, Any] = field(default_factory=dict)


# Generic parameter names every backend understands; anything else passes through as-is.
GENERIC = ("time_limit", "workers", "seed")
