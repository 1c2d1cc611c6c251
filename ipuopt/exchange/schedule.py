"""A schedule: start and width per transfer, in the JSON format of the model doc."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipuopt.display import count, html
from ipuopt.errors import InputError, Problem
from ipuopt.io import read_document
from ipuopt.limits import MAX_CYCLES, too_big
from ipuopt.result import Status

STATUSES = (Status.OPTIMAL, Status.FEASIBLE, Status.FALLBACK, Status.INFEASIBLE)

WIDTH_NAMES = ("ordinary", "paired")


@dataclass
class Schedule:
    """The solution of an exchange phase: a start and a width per transfer (in the phase's
    order). `note` says who made a schedule read from a file ("cpsat optimal"); a solver's
    verdict on the schedules it makes is the `Result` around them."""

    starts: dict[str, int]
    widths: dict[str, str]
    horizon: int | None = None
    phase: str = ""
    spec: str = ""
    note: str = ""
    # (Phase, Spec) it was made for, when known (`ipuopt.solve` sets it): what a notebook draws
    drawn_on: tuple[Any, Any] | None = field(default=None, repr=False, compare=False)

    def __repr__(self) -> str:
        transfers = count(len(self.starts), "transfer")
        return f"Schedule(phase {self.phase!r}: {transfers}, horizon {self.horizon})"

    def _repr_html_(self) -> str | None:
        return html("schedule", self)

    def to_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "spec": self.spec, "horizon": self.horizon,
                "transfers": [{"id": i, "start": s, "width": self.widths[i]} for i, s in self.starts.items()]}


def schedule_from_dict(doc: Any, file: str = "") -> Schedule:
    """Parse a schedule; only id/start/width are needed, the rest is informative."""
    if not isinstance(doc, dict) or not isinstance(doc.get("transfers"), list):
        raise InputError.one(file, "transfers", "a schedule needs a list of transfers")
    problems: list[Problem] = []
    starts: dict[str, int] = {}
    widths: dict[str, str] = {}
    for i, entry in enumerate(doc["transfers"]):
        if not isinstance(entry, dict) or "id" not in entry:
            problems.append(Problem(file, f"transfers[{i}]", "needs id, start and width"))
            continue
        tid = str(entry["id"])
        start, width = entry.get("start"), entry.get("width", "ordinary")
        if not isinstance(start, int) or isinstance(start, bool):
            problems.append(Problem(file, f"transfer {tid}.start", f"not an integer: {start!r}"))
            continue
        if abs(start) > MAX_CYCLES:  # a negative start is the validator's to report
            problems.append(Problem(file, f"transfer {tid}.start", too_big(abs(start), MAX_CYCLES)))
            continue
        if width not in WIDTH_NAMES:
            problems.append(Problem(file, f"transfer {tid}.width",
                                    f"must be ordinary or paired, got {width!r}"))
            continue
        if tid in starts:
            problems.append(Problem(file, f"transfer {tid}.id", "appears twice"))
        starts[tid] = start
        widths[tid] = width
    status = doc.get("status", "feasible")
    if status not in STATUSES:
        problems.append(Problem(file, "status", f"must be one of {', '.join(STATUSES)}"))
    if problems:
        raise InputError(problems)
    horizon = doc.get("horizon")
    return Schedule(starts=starts, widths=widths, horizon=horizon if isinstance(horizon, int) else None,
                    phase=str(doc.get("phase") or ""), spec=str(doc.get("spec") or ""),
                    note=" ".join(str(doc[k]) for k in ("solver", "status") if doc.get(k)))


def schedule_for(schedule: Schedule, phase: Any, file: str = "") -> Schedule:
    """`schedule`, checked to be made for `phase`: one made for another is reported as that,
    in one line, not as every transfer unknown and missing."""
    if schedule.phase and phase.name and schedule.phase != phase.name:
        raise InputError.one(file, "phase", f"a schedule for phase {schedule.phase!r}, not {phase.name!r}")
    if phase.transfers and schedule.starts and not any(t.id in schedule.starts for t in phase.transfers):
        raise InputError.one(file, "transfers", f"none of its {len(schedule.starts)} transfers is in phase "
                                                f"{phase.name or phase.source!r}")
    return schedule


def load_schedule(path: str | Path) -> Schedule:
    return schedule_from_dict(read_document(path), str(path))
