"""One input-error type: every message names the file, the field path and the reason."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where it is and why it is wrong."""

    file: str
    field: str
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}: " if self.file else ""
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.reason}"


class InputError(ValueError):
    """Raised for bad user input; carries every problem found, not just the first."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def one(cls, file: str, field: str, reason: str) -> InputError:
        return cls([Problem(str(file), field, reason)])


def unknown_keys(doc: dict, known: tuple[str, ...] | dict, file: str, prefix: str = "",
                 reason: str = "") -> list[Problem]:
    """A problem for every key of `doc` that is not among `known`."""
    why = reason or f"unknown key (known: {', '.join(known)})"
    return [Problem(file, f"{prefix}{key}", why) for key in doc if key not in known]
