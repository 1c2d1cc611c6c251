"""What every arena method works on: the arena, its objective and live-bytes bound, and the
placements found so far (kept for the answer, and for Ctrl-C: a method cut short loses
nothing it had added)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ipuopt.arena.problem import Arena
from ipuopt.arena.validate import validate_placement


def score(arena: Arena, objective: str, offsets: dict[str, int]) -> tuple[int, int, bool]:
    """(objective value, peak, valid) of a placement."""
    rep = validate_placement(arena, offsets)
    value = {"fit": 0, "peak": rep.peak, "conflicts": rep.conflicts}[objective]
    return value, rep.peak, rep.ok


@dataclass
class Instance:
    arena: Arena
    objective: str
    live: int  # the most bytes live at once (at step `live_step`): no placement's peak is lower
    live_step: int
    greedy: dict[str, int] = field(default_factory=dict)  # the best-fit placement, valid or not
    candidates: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)  # what the methods report (search nodes, ...)

    def add(self, name: str, offsets: dict[str, int] | None) -> None:
        if offsets is not None:
            self.candidates.append((name, offsets))
