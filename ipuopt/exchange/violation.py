"""A rule a schedule breaks: which, between which transfers, where, when. The one record the
validator (every violation) and the simulator (the first one it meets) report; each finds them
on its own."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    rule: str
    transfers: tuple[str, ...]
    tile: int | None
    cycles: tuple[int, int] | None
    detail: str = ""

    def __str__(self) -> str:
        tile = f" tile {self.tile}" if self.tile is not None else ""
        cyc = f" cycles [{self.cycles[0]}, {self.cycles[1]})" if self.cycles else ""
        extra = f": {self.detail}" if self.detail else ""
        return f"{self.rule}: {', '.join(self.transfers)}{tile}{cyc}{extra}"

    def to_dict(self) -> dict:
        return {"rule": self.rule, "transfers": list(self.transfers), "tile": self.tile,
                "cycles": list(self.cycles) if self.cycles else None, "detail": self.detail}
